/* test_cmd_trust.c - the approvals behind `mcp-bridge trust` (trust.c): the digest binds the
 * name, the file and the content (key order aside), a changed entry is "changed", approvals of
 * one project are revoked alone, the file is private. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tests.h"
#include "credkit/mcp_trust.h"

static struct json_object *parse(const char *j)
{
    struct json_object *o = json_tokener_parse(j);
    CHECK(o != NULL);
    return o;
}

static void test_digest(void)
{
    struct json_object *a = parse("{\"command\": \"x\", \"args\": [\"1\", 2], \"env\": {\"B\": "
                                  "\"b\", \"A\": \"a\"}}");
    struct json_object *b = parse("{\"env\": {\"A\": \"a\", \"B\": \"b\"}, \"args\": [\"1\", 2], "
                                  "\"command\": \"x\"}");
    struct json_object *c = parse("{\"command\": \"x\", \"args\": [\"1\", 3], \"env\": {\"B\": "
                                  "\"b\", \"A\": \"a\"}}");
    char ha[TRUST_HEX], hb[TRUST_HEX], hc[TRUST_HEX], hn[TRUST_HEX], hp[TRUST_HEX];
    CHECK_INT(trust_digest("s", "/p/.mcp.json", a, ha), 0);
    CHECK_INT(trust_digest("s", "/p/.mcp.json", b, hb), 0);
    CHECK_INT(trust_digest("s", "/p/.mcp.json", c, hc), 0);
    CHECK_INT(trust_digest("t", "/p/.mcp.json", a, hn), 0);
    CHECK_INT(trust_digest("s", "/q/.mcp.json", a, hp), 0);
    CHECK_INT(strlen(ha), 64);
    CHECK_STR(ha, hb); /* the order of keys does not count */
    CHECK(strcmp(ha, hc) != 0);
    CHECK(strcmp(ha, hn) != 0);
    CHECK(strcmp(ha, hp) != 0);
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

static void test_store(void)
{
    char dir[] = "/tmp/test_trust.XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/agent/mcp-trust.json", dir);
    struct json_object *e1 = parse("{\"command\": \"one\"}"),
                       *e2 = parse("{\"url\": \"https://x\"}");
    struct json_object *e1b = parse("{\"command\": \"two\"}");
    struct trust_store *t = NULL;
    struct err e = ERR_INIT;

    CHECK_INT(trust_store_load(path, &t, &e), 0); /* missing: nothing approved */
    CHECK_INT(trust_check(t, "a", "/p/.mcp.json", e1), MCP_TRUST_UNTRUSTED);
    trust_store_free(t);

    char h1[TRUST_HEX], h2[TRUST_HEX];
    CHECK_INT(trust_digest("a", "/p/.mcp.json", e1, h1), 0);
    CHECK_INT(trust_digest("b", "/q/.mcp.json", e2, h2), 0);
    struct trust_approval ap1[] = {{"a", "/p/.mcp.json", h1}};
    struct trust_approval ap2[] = {{"b", "/q/.mcp.json", h2}};
    CHECK_INT(trust_approve(path, "/p", ap1, 1, &e), 0);
    CHECK_INT(trust_approve(path, "/q", ap2, 1, &e), 0);
    CHECK_INT(trust_approve(path, "/p", ap1, 1, &e), 0); /* again: replaced, not added */
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

    t = NULL;
    CHECK_INT(trust_store_load(path, &t, &e), 0);
    CHECK_INT(trust_check(t, "a", "/p/.mcp.json", e1), MCP_TRUST_APPROVED);
    CHECK_INT(trust_check(t, "a", "/p/.mcp.json", e1b), MCP_TRUST_CHANGED);
    CHECK_INT(trust_check(t, "a", "/q/.mcp.json", e1), MCP_TRUST_UNTRUSTED);
    CHECK_INT(trust_check(t, "b", "/q/.mcp.json", e2), MCP_TRUST_APPROVED);
    trust_store_free(t);

    size_t n = 99;
    CHECK_INT(trust_revoke(path, "/p", &n, &e), 0);
    CHECK_INT(n, 1);
    t = NULL;
    CHECK_INT(trust_store_load(path, &t, &e), 0);
    CHECK_INT(trust_check(t, "a", "/p/.mcp.json", e1), MCP_TRUST_UNTRUSTED);
    CHECK_INT(trust_check(t, "b", "/q/.mcp.json", e2), MCP_TRUST_APPROVED);
    trust_store_free(t);

    /* not a list of approvals, or open to others: refused, nothing approved */
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"approvals\": [1]}", f);
        fclose(f);
    }
    CHECK(chmod(path, 0600) == 0);
    t = NULL;
    CHECK(trust_store_load(path, &t, &e) < 0);
    CHECK(trust_check(NULL, "b", "/q/.mcp.json", e2) == MCP_TRUST_UNTRUSTED);
    f = fopen(path, "w");
    if (f) {
        fputs("{\"approvals\": []}", f);
        fclose(f);
    }
    CHECK(chmod(path, 0644) == 0);
    CHECK(trust_store_load(path, &t, &e) < 0);

    json_object_put(e1);
    json_object_put(e1b);
    json_object_put(e2);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

TESTS_MAIN(test_digest, test_store)
