/* test_meta_cache.c - the metadata cache: the key (canonical JSON, keys sorted at every level,
 * checked against a SHA-256 computed independently with Python; with what the server is offered,
 * so another agent's capabilities miss), MCP_BRIDGE_CACHE=off, the file
 * (0600 in a 0700 directory under PI_CODING_AGENT_DIR, read back), a changed entry's key misses,
 * expiry (7 days, a shorter ttl), the per-server bound, the total bound (the oldest go), two
 * caches saving into one file keep each other's servers, a dropped server goes, a malformed
 * file is an empty cache that the next save replaces. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "credkit/json.h"

#include "downstream/meta_cache.h"
#include "tests.h"

#define DAY_MS (24LL * 60 * 60 * 1000)
#define NOW    1700000000000LL

static char agent_dir[4200], cache_file[4300];

static struct json_object *parse(const char *text)
{
    struct json_object *o = json_tokener_parse(text);
    if (!o) {
        fprintf(stderr, "bad JSON in the test: %s\n", text);
        exit(2);
    }
    return o;
}

static void setup(const char *name)
{
    snprintf(agent_dir, sizeof(agent_dir), "%s/%s/agent", tests_tmpdir(), name);
    snprintf(cache_file, sizeof(cache_file), "%s/%s", agent_dir, META_CACHE_FILE);
    setenv("PI_CODING_AGENT_DIR", agent_dir, 1);
    unsetenv("MCP_BRIDGE_CACHE");
}

static struct meta_cache *open_cache(void)
{
    struct meta_cache *c = NULL;
    struct err e = ERR_INIT;
    int r = meta_cache_open(NULL, &c, &e);
    CHECK_INT(r, 0);
    CHECK(c != NULL);
    if (r < 0)
        fprintf(stderr, "open: %s\n", err_msg(&e));
    return c;
}

static void save(struct meta_cache *c, int64_t now)
{
    struct err e = ERR_INIT;
    int r = meta_cache_save(c, now, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "save: %s\n", err_msg(&e));
}

static void test_key(void)
{
    char k1[META_CACHE_KEY_LEN + 1], k2[META_CACHE_KEY_LEN + 1], k3[META_CACHE_KEY_LEN + 1];
    struct json_object *a = parse("{\"command\":\"npx\",\"args\":[\"-y\",\"srv/x\"],"
                                  "\"env\":{\"TOKEN\":\"${TOKEN}\",\"A\":\"1\"},\"n\":null,"
                                  "\"t\":true,\"f\":1.5}");
    /* the same entry, its keys in another order at every level */
    struct json_object *b = parse("{\"f\":1.5,\"t\":true,\"n\":null,"
                                  "\"env\":{\"A\":\"1\",\"TOKEN\":\"${TOKEN}\"},"
                                  "\"args\":[\"-y\",\"srv/x\"],\"command\":\"npx\"}");
    /* an array's order matters */
    struct json_object *c = parse("{\"f\":1.5,\"t\":true,\"n\":null,"
                                  "\"env\":{\"A\":\"1\",\"TOKEN\":\"${TOKEN}\"},"
                                  "\"args\":[\"srv/x\",\"-y\"],\"command\":\"npx\"}");
    CHECK_INT(meta_cache_key(a, k1), 0);
    CHECK_INT(meta_cache_key(b, k2), 0);
    CHECK_INT(meta_cache_key(c, k3), 0);
    /* python3: json.dumps(o, sort_keys=True, separators=(',', ':')), then hashlib.sha256 */
    CHECK_STR(k1, "2c2d6d3a6ae1dfca7de6936b4543e20bfcfd010d675b92fd1d4562fd8294fb7e");
    CHECK_STR(k2, k1);
    CHECK(strcmp(k3, k1) != 0);
    /* the template stays as written: the key never sees a resolved value */
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

/* The key the bridge files lists under holds what the server is offered: a server may decide
 * its tools from the client's capabilities, so an agent that declares others must miss. */
static void test_key_offered(void)
{
    char k[META_CACHE_KEY_LEN + 1], k2[META_CACHE_KEY_LEN + 1], plain[META_CACHE_KEY_LEN + 1];
    struct json_object *raw = parse("{\"command\":\"npx\",\"args\":[\"-y\",\"srv/x\"]}");
    struct json_object *caps = parse("{\"sampling\":{},\"roots\":{\"listChanged\":true}}");
    struct json_object *caps2 = parse("{\"roots\":{\"listChanged\":true},\"sampling\":{}}");
    struct json_object *empty = parse("{}");
    CHECK_INT(meta_cache_key_offered(raw, caps, "2025-11-25", k), 0);
    /* python3: sha256 of json.dumps({"entry": raw, "offer": {"capabilities": caps,
     * "protocolVersion": "2025-11-25"}}, sort_keys=True, separators=(',', ':')) */
    CHECK_STR(k, "9567b3915372c6a39f310acdc213d5e8a001c4b1b91eaa75135c43ace7eaa8f6");
    /* the capabilities in another order: the same offer */
    CHECK_INT(meta_cache_key_offered(raw, caps2, "2025-11-25", k2), 0);
    CHECK_STR(k2, k);
    /* nothing offered (NULL is {}), no version: null */
    CHECK_INT(meta_cache_key_offered(raw, NULL, NULL, plain), 0);
    CHECK_STR(plain, "cdd6c0a97602fa0b4a0ab581db2b770f904a676b139f2e8c785a8764960f3ec3");
    CHECK_INT(meta_cache_key_offered(raw, empty, NULL, k2), 0);
    CHECK_STR(k2, plain);
    /* another version, or one capability less: another key; neither is the entry's alone */
    CHECK_INT(meta_cache_key_offered(raw, caps, "2025-06-18", k2), 0);
    CHECK(strcmp(k2, k) != 0);
    json_object_object_del(caps, "sampling");
    CHECK_INT(meta_cache_key_offered(raw, caps, "2025-11-25", k2), 0);
    CHECK(strcmp(k2, k) != 0 && strcmp(k2, plain) != 0);
    CHECK_INT(meta_cache_key(raw, k2), 0);
    CHECK(strcmp(k2, plain) != 0);
    json_object_put(raw);
    json_object_put(caps);
    json_object_put(caps2);
    json_object_put(empty);
}

/* Lists filed under one agent's offer are a miss for another's. */
static void test_offer_miss(void)
{
    setup("offer");
    char plain[META_CACHE_KEY_LEN + 1], capable[META_CACHE_KEY_LEN + 1];
    struct json_object *raw = parse("{\"command\":\"srv\"}");
    struct json_object *caps = parse("{\"sampling\":{}}");
    struct json_object *lists = parse("{\"tools\":[{\"name\":\"echo\"}]}");
    CHECK_INT(meta_cache_key_offered(raw, NULL, "2025-11-25", plain), 0);
    CHECK_INT(meta_cache_key_offered(raw, caps, "2025-11-25", capable), 0);
    struct meta_cache *c = open_cache();
    CHECK_INT(meta_cache_put(c, "srv", plain, lists, NOW, 0), 0);
    save(c, NOW);
    meta_cache_free(c);
    c = open_cache();
    CHECK(meta_cache_get(c, "srv", plain, NOW + 1) != NULL);
    CHECK(meta_cache_get(c, "srv", capable, NOW + 1) == NULL);
    meta_cache_free(c);
    json_object_put(raw);
    json_object_put(caps);
    json_object_put(lists);
}

static void test_off(void)
{
    setup("off");
    setenv("MCP_BRIDGE_CACHE", "off", 1);
    struct meta_cache *c = (struct meta_cache *)1;
    CHECK_INT(meta_cache_open(NULL, &c, NULL), 0);
    CHECK(c == NULL);
    /* NULL holds nothing and saves nothing */
    CHECK(meta_cache_get(NULL, "a", "k", NOW) == NULL);
    CHECK_INT(meta_cache_put(NULL, "a", "k", NULL, NOW, 0), 0);
    CHECK(!meta_cache_dirty(NULL));
    CHECK_INT(meta_cache_save(NULL, NOW, NULL), 0);
    struct stat st;
    CHECK(stat(agent_dir, &st) < 0 && errno == ENOENT);
    unsetenv("MCP_BRIDGE_CACHE");
}

static void test_roundtrip(void)
{
    setup("roundtrip");
    struct meta_cache *c = open_cache();
    CHECK_STR(meta_cache_path(c), cache_file);
    CHECK(meta_cache_load_error(c) == NULL); /* missing: not an error */
    struct json_object *lists = parse("{\"tools\":[{\"name\":\"echo\",\"inputSchema\":"
                                      "{\"type\":\"object\"}}],\"prompts\":[],"
                                      "\"resources\":[{\"uri\":\"a://b\",\"name\":\"b\"}]}");
    CHECK(!meta_cache_dirty(c));
    CHECK_INT(meta_cache_put(c, "srv", "k1", lists, NOW, 0), 0);
    CHECK(meta_cache_dirty(c));
    save(c, NOW);
    CHECK(!meta_cache_dirty(c));
    meta_cache_free(c);

    struct stat st;
    CHECK(stat(cache_file, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(stat(agent_dir, &st) == 0 && (st.st_mode & 0777) == 0700);

    c = open_cache();
    struct json_object *got = meta_cache_get(c, "srv", "k1", NOW + 1000);
    CHECK(got != NULL);
    CHECK(json_object_equal(json_get_array(got, "tools"), json_get_array(lists, "tools")));
    CHECK(json_object_equal(json_get_array(got, "resources"), json_get_array(lists, "resources")));
    CHECK(json_get_array(got, "resourceTemplates") == NULL); /* not given: not there */
    /* another key (the entry changed): a miss */
    CHECK(meta_cache_get(c, "srv", "k2", NOW + 1000) == NULL);
    CHECK(meta_cache_get(c, "other", "k1", NOW + 1000) == NULL);
    /* expiry: 7 days */
    CHECK(meta_cache_get(c, "srv", "k1", NOW + 7 * DAY_MS - 1) != NULL);
    CHECK(meta_cache_get(c, "srv", "k1", NOW + 7 * DAY_MS) == NULL);
    /* a shorter ttl wins; a longer one is cut to 7 days */
    CHECK_INT(meta_cache_put(c, "short", "k", lists, NOW, 5000), 0);
    CHECK(meta_cache_get(c, "short", "k", NOW + 4999) != NULL);
    CHECK(meta_cache_get(c, "short", "k", NOW + 5000) == NULL);
    CHECK_INT(meta_cache_put(c, "long", "k", lists, NOW, 30 * DAY_MS), 0);
    CHECK(meta_cache_get(c, "long", "k", NOW + 7 * DAY_MS) == NULL);
    /* expired entries are not written */
    save(c, NOW + 6000);
    meta_cache_free(c);
    c = open_cache();
    CHECK(meta_cache_get(c, "long", "k", NOW + 6000) != NULL);
    CHECK(meta_cache_get(c, "short", "k", NOW + 1000) == NULL);
    /* dropped: gone from the file */
    meta_cache_drop(c, "long");
    save(c, NOW + 6000);
    meta_cache_free(c);
    c = open_cache();
    CHECK(meta_cache_get(c, "long", "k", NOW + 6000) == NULL);
    CHECK(meta_cache_get(c, "srv", "k1", NOW + 6000) != NULL);
    meta_cache_free(c);
    json_object_put(lists);
}

/* A list of n tools whose serialisation takes about bytes. */
static struct json_object *big_lists(size_t bytes)
{
    struct json_object *tools = json_object_new_array();
    size_t chunk = 4000, n = bytes / chunk + 1;
    char *desc = malloc(chunk + 1);
    memset(desc, 'x', chunk);
    desc[chunk] = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *t = json_object_new_object();
        char name[32];
        snprintf(name, sizeof(name), "t%zu", i);
        json_object_object_add(t, "name", json_object_new_string(name));
        json_object_object_add(t, "description", json_object_new_string(desc));
        json_object_array_add(tools, t);
    }
    free(desc);
    struct json_object *lists = json_object_new_object();
    json_object_object_add(lists, "tools", tools);
    return lists;
}

static bool file_has(const char *p, const char *needle)
{
    char buf[65536];
    FILE *fp = fopen(p, "r");
    if (!fp)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* cacheScope: public lists for anyone, private ones only for their authorization context, which
 * is in the file as a digest, never as given */
static void test_scope(void)
{
    setup("scope");
    struct meta_cache *c = open_cache();
    struct json_object *lists = parse("{\"tools\":[{\"name\":\"echo\"}]}");
    CHECK_INT(meta_cache_put_scoped(c, "pub", "k", lists, NOW, 0, META_CACHE_SCOPE_PUBLIC, "tok-a"),
              0);
    CHECK_INT(
        meta_cache_put_scoped(c, "priv", "k", lists, NOW, 0, META_CACHE_SCOPE_PRIVATE, "tok-a"), 0);
    CHECK_INT(meta_cache_put_scoped(c, "local", "k", lists, NOW, 0, META_CACHE_SCOPE_PRIVATE, NULL),
              0);
    save(c, NOW);
    meta_cache_free(c);
    CHECK(!file_has(cache_file, "tok-a"));
    c = open_cache();
    CHECK(meta_cache_get_scoped(c, "pub", "k", NOW + 1, "tok-b") != NULL);
    CHECK(meta_cache_get(c, "pub", "k", NOW + 1) != NULL);
    CHECK(meta_cache_get_scoped(c, "priv", "k", NOW + 1, "tok-a") != NULL);
    CHECK_STR(
        json_get_string(meta_cache_get_scoped(c, "priv", "k", NOW + 1, "tok-a"), "cacheScope"),
        "private");
    CHECK(meta_cache_get_scoped(c, "priv", "k", NOW + 1, "tok-b") == NULL);
    CHECK(meta_cache_get(c, "priv", "k", NOW + 1) == NULL);
    CHECK(meta_cache_get(c, "local", "k", NOW + 1) != NULL);
    CHECK(meta_cache_get_scoped(c, "local", "k", NOW + 1, "tok-a") == NULL);
    meta_cache_free(c);
    json_object_put(lists);
}

static void test_bounds(void)
{
    setup("bounds");
    struct meta_cache *c = open_cache();
    /* one server over 1 MiB: not cached (an older entry of it goes too) */
    struct json_object *small = parse("{\"tools\":[]}");
    CHECK_INT(meta_cache_put(c, "huge", "k", small, NOW, 0), 0);
    struct json_object *huge = big_lists(META_CACHE_SERVER_MAX + 1000);
    CHECK_INT(meta_cache_put(c, "huge", "k", huge, NOW, 0), -E2BIG);
    CHECK(meta_cache_get(c, "huge", "k", NOW) == NULL);
    json_object_put(huge);

    /* twelve servers of 0.9 MiB each: the file stays under 8 MiB, the newest are kept */
    struct json_object *big = big_lists(900 * 1024);
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%02d", i);
        CHECK_INT(meta_cache_put(c, name, "k", big, NOW + i, 0), 0);
    }
    save(c, NOW + 20);
    meta_cache_free(c);
    struct stat st;
    CHECK(stat(cache_file, &st) == 0);
    CHECK(st.st_size > 0 && (size_t)st.st_size <= META_CACHE_TOTAL_MAX);
    c = open_cache();
    CHECK(meta_cache_get(c, "s11", "k", NOW + 20) != NULL);
    CHECK(meta_cache_get(c, "s00", "k", NOW + 20) == NULL);
    meta_cache_free(c);
    json_object_put(big);
    json_object_put(small);
}

static void test_two_writers(void)
{
    setup("two");
    struct json_object *lists = parse("{\"tools\":[{\"name\":\"x\"}]}");
    struct meta_cache *a = open_cache(), *b = open_cache();
    CHECK_INT(meta_cache_put(a, "from-a", "ka", lists, NOW, 0), 0);
    CHECK_INT(meta_cache_put(b, "from-b", "kb", lists, NOW, 0), 0);
    save(a, NOW);
    save(b, NOW); /* re-reads the file: a's server stays */
    meta_cache_free(a);
    meta_cache_free(b);
    struct meta_cache *c = open_cache();
    CHECK(meta_cache_get(c, "from-a", "ka", NOW) != NULL);
    CHECK(meta_cache_get(c, "from-b", "kb", NOW) != NULL);
    meta_cache_free(c);
    json_object_put(lists);
}

static void test_malformed(void)
{
    setup("malformed");
    struct meta_cache *c = open_cache(); /* makes nothing: the directory comes with a save */
    meta_cache_free(c);
    CHECK(system("mkdir -p \"$PI_CODING_AGENT_DIR\" && chmod 700 \"$PI_CODING_AGENT_DIR\" && "
                 "printf '{not json' > \"$PI_CODING_AGENT_DIR/mcp-bridge-cache.json\"") == 0);
    c = open_cache();
    CHECK(meta_cache_load_error(c) != NULL);
    struct json_object *lists = parse("{\"tools\":[]}");
    CHECK_INT(meta_cache_put(c, "a", "k", lists, NOW, 0), 0);
    save(c, NOW);
    meta_cache_free(c);
    c = open_cache();
    CHECK(meta_cache_load_error(c) == NULL);
    CHECK(meta_cache_get(c, "a", "k", NOW) != NULL);
    meta_cache_free(c);
    /* another program's JSON (not our version): empty, replaced at the next save */
    CHECK(system("printf '{\"servers\":{}}' > \"$PI_CODING_AGENT_DIR/mcp-bridge-cache.json\"") ==
          0);
    c = open_cache();
    CHECK(meta_cache_load_error(c) != NULL);
    CHECK(meta_cache_get(c, "a", "k", NOW) == NULL);
    meta_cache_free(c);
    json_object_put(lists);
}

TESTS_MAIN(test_key, test_key_offered, test_offer_miss, test_off, test_roundtrip, test_scope,
           test_bounds, test_two_writers, test_malformed)
