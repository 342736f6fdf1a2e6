/* test_install_text.c - the text edits of mcp-bridge install (cli/cmd_install_text.h): a
 * server added to and removed from JSON with comments and trailing commas, strict JSON, an
 * empty file, and TOML with comments, sub-tables and a multi-line string that looks like a
 * table; everything else of the text left byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/err.h"

#include "cli/cmd_install_text.h"
#include "tests.h"

static void set(struct buf *b, const char *s)
{
    buf_reset(b);
    CHECK_INT(buf_append_str(b, s), 0);
}

static struct json_object *entry(const char *cmd)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "command", json_object_new_string(cmd));
    return o;
}

static void test_jsonc_add_remove(void)
{
    static const char orig[] = "{\n"
                               "  // mine\n"
                               "  \"servers\": {\n"
                               "    \"a\": { \"command\": \"x\" }, // a\n"
                               "    \"b\": { \"url\": \"https://b.example/mcp\" },\n"
                               "  },\n"
                               "  \"inputs\": [],\n"
                               "}\n";
    struct buf b;
    struct err e = ERR_INIT;
    struct json_object *s = NULL, *v = entry("bridge-cmd");
    buf_init(&b, 1 << 20);
    set(&b, orig);

    CHECK_INT(itext_json_servers(b.data, b.len, true, "servers", &s, &e), 0);
    CHECK_INT((int)json_object_object_length(s), 2);
    json_object_put(s);

    CHECK_INT(itext_json_add(&b, true, "servers", "bridge", v, &e), 0);
    CHECK_CONTAINS(b.data, "// mine");
    CHECK_CONTAINS(b.data, "  \"inputs\": [],\n");
    CHECK_CONTAINS(b.data, "\"b\": { \"url\": \"https://b.example/mcp\" },\n    \"bridge\": {\n"
                           "      \"command\": \"bridge-cmd\"\n    },\n  },");
    CHECK_INT(itext_json_remove(&b, true, "servers", "a", &e), 1);
    CHECK_INT(itext_json_remove(&b, true, "servers", "a", &e), 0);
    CHECK_INT(itext_json_remove(&b, true, "servers", "b", &e), 1);
    CHECK_INT(itext_json_servers(b.data, b.len, true, "servers", &s, &e), 0);
    CHECK_INT((int)json_object_object_length(s), 1);
    CHECK(json_object_object_get_ex(s, "bridge", NULL));
    json_object_put(s);
    /* the last one out leaves an empty object, the rest as it was */
    CHECK_INT(itext_json_remove(&b, true, "servers", "bridge", &e), 1);
    CHECK_STR(b.data, "{\n  // mine\n  \"servers\": {},\n  \"inputs\": [],\n}\n");
    json_object_put(v);
    buf_release(&b);
}

static void test_json_new_key_and_empty(void)
{
    struct buf b;
    struct err e = ERR_INIT;
    struct json_object *v = entry("c");
    buf_init(&b, 1 << 20);

    set(&b, "");
    CHECK_INT(itext_json_add(&b, false, "mcpServers", "bridge", v, &e), 0);
    CHECK_STR(b.data, "{\n  \"mcpServers\": {\n    \"bridge\": {\n      \"command\": \"c\"\n"
                      "    }\n  }\n}\n");

    set(&b, "{\"theme\": \"dark\"}");
    CHECK_INT(itext_json_add(&b, false, "mcpServers", "bridge", v, &e), 0);
    struct json_object *doc = json_tokener_parse(b.data);
    CHECK(doc != NULL);
    CHECK_STR(json_object_get_string(json_object_object_get(doc, "theme")), "dark");
    json_object_put(doc);

    /* not JSON, not an object under the key: refused, the text as it was */
    set(&b, "{\"mcpServers\": [1]}");
    CHECK_INT(itext_json_add(&b, false, "mcpServers", "bridge", v, &e), -EBADMSG);
    CHECK_STR(b.data, "{\"mcpServers\": [1]}");
    set(&b, "{\"mcpServers\": {\"a\": 1,}}");
    CHECK_INT(itext_json_remove(&b, false, "mcpServers", "a", &e), -EBADMSG);
    json_object_put(v);
    buf_release(&b);
}

static const char toml[] = "# settings\n"
                           "model = \"o3\"\n"
                           "notes = \"\"\"\n"
                           "[mcp_servers.fake]\n"
                           "\"\"\"\n"
                           "\n"
                           "# the docs server\n"
                           "[mcp_servers.docs]\n"
                           "command = \"npx\"\n"
                           "\n"
                           "[mcp_servers.docs.tools.x]\n"
                           "enabled = false\n"
                           "matrix = [\n"
                           "  [1, 2],\n"
                           "]\n"
                           "\n"
                           "# fast\n"
                           "[profiles.fast]\n"
                           "model = \"o4-mini\"\n"
                           "[[plugins]]\n"
                           "name = \"p\"\n";

static void test_toml(void)
{
    struct buf b, back;
    static const char *const args[] = {"serve", "--config", "/a \"b\"", NULL};
    buf_init(&b, 1 << 20);
    buf_init(&back, 1 << 20);
    set(&b, toml);

    CHECK(itext_toml_has_table(b.data, b.len, "docs"));
    CHECK(!itext_toml_has_table(b.data, b.len, "fake"));
    CHECK(!itext_toml_has_table(b.data, b.len, "doc"));
    CHECK_INT(itext_toml_remove(&b, "docs"), 1);
    CHECK_STR(b.data, "# settings\nmodel = \"o3\"\nnotes = \"\"\"\n[mcp_servers.fake]\n\"\"\"\n\n"
                      "# fast\n[profiles.fast]\nmodel = \"o4-mini\"\n[[plugins]]\nname = \"p\"\n");
    CHECK_INT(itext_toml_add(&b, "bridge", "/bin/mcp-bridge", args), 0);
    CHECK_CONTAINS(b.data, "name = \"p\"\n\n[mcp_servers.bridge]\n"
                           "command = \"/bin/mcp-bridge\"\n"
                           "args = [\"serve\", \"--config\", \"/a \\\"b\\\"\"]\n");
    /* the server back, as it was written, from the original text */
    CHECK_INT(itext_toml_remove(&b, "bridge"), 1);
    CHECK_INT(itext_toml_append_from(&b, toml, strlen(toml), "docs"), 1);
    CHECK_CONTAINS(b.data, "name = \"p\"\n\n# the docs server\n[mcp_servers.docs]\n"
                           "command = \"npx\"\n\n[mcp_servers.docs.tools.x]\nenabled = false\n"
                           "matrix = [\n  [1, 2],\n]\n");
    CHECK_INT(itext_toml_append_from(&b, toml, strlen(toml), "none"), 0);
    CHECK_INT(itext_toml_remove(&b, "none"), 0);
    buf_release(&b);
    buf_release(&back);
}

TESTS_MAIN(test_jsonc_add_remove, test_json_new_key_and_empty, test_toml)
