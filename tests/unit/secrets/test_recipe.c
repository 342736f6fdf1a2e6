/* test_recipe.c - every recipe form, and what is wrong with bad ones */
#include <errno.h>

#include "credkit/json.h"

#include "recipe.h"
#include "tests.h"

static struct recipe *parse(const char *name, const char *json, int expect, const char *msg)
{
    struct json_object *v = NULL;
    struct err e = ERR_INIT;
    struct recipe *r = NULL;
    CHECK_INT(json_parse(json, strlen(json), 4096, &v, &e), 0);
    int rc = recipe_parse(name, v, &r, &e);
    CHECK_INT(rc, expect);
    if (msg)
        CHECK_CONTAINS(e.msg, msg);
    json_object_put(v);
    return r;
}

static void test_string_forms(void)
{
    struct recipe *r = parse("GH", "\"!gh auth token\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_COMMAND);
    CHECK_STR(r->arg, "gh auth token");
    CHECK_INT(r->ttl_ms, RECIPE_COMMAND_TTL_DEFAULT);
    CHECK_INT(r->timeout_ms, RECIPE_COMMAND_TIMEOUT_DEFAULT);
    recipe_free(r);

    r = parse("A", "\"env:MY_VAR\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_ENV);
    CHECK_STR(r->arg, "MY_VAR");
    CHECK_INT(r->ttl_ms, RECIPE_TTL_NONE);
    recipe_free(r);

    r = parse("A", "\"MY_VAR\"", 0, NULL); /* the older bare form */
    CHECK_INT(r->kind, RECIPE_ENV);
    CHECK(r->bare);
    recipe_free(r);

    r = parse("A", "\"keychain:work token\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_KEYCHAIN);
    CHECK_STR(r->arg, "work token");
    recipe_free(r);

    r = parse("A", "\"keyring:x\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_KEYCHAIN);
    recipe_free(r);

    r = parse("A", "\"file:/etc/x\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_FILE);
    recipe_free(r);

    r = parse("A", "\"literal:sk-abc\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_LITERAL);
    CHECK_STR(r->arg, "sk-abc");
    recipe_free(r);

    r = parse("A", "\"sk-not-a-name\"", 0, NULL); /* bare non-name: a literal, as pi read it */
    CHECK_INT(r->kind, RECIPE_LITERAL);
    CHECK(r->bare);
    recipe_free(r);
}

static void test_object_forms(void)
{
    struct recipe *r =
        parse("T", "{\"command\": \"op read x\", \"ttl\": \"8h\", \"timeout\": \"30s\"}", 0, NULL);
    CHECK_INT(r->kind, RECIPE_COMMAND);
    CHECK_INT(r->ttl_ms, 8 * 3600000LL);
    CHECK_INT(r->timeout_ms, 30000);
    recipe_free(r);

    r = parse("T", "{\"command\": \"date\", \"ttl\": 0}", 0, NULL);
    CHECK_INT(r->ttl_ms, 0);
    recipe_free(r);

    r = parse("T", "{\"keychain\": \"L\", \"description\": \"work\"}", 0, NULL);
    CHECK_INT(r->kind, RECIPE_KEYCHAIN);
    CHECK_STR(r->description, "work");
    recipe_free(r);

    r = parse("T", "{\"env\": \"HOME\"}", 0, NULL);
    CHECK_INT(r->kind, RECIPE_ENV);
    recipe_free(r);
}

static void test_bad(void)
{
    CHECK(!parse("9BAD", "\"env:X\"", -EINVAL, "not a valid secret name"));
    CHECK(!parse("A", "\"!   \"", -EINVAL, "command is empty"));
    CHECK(!parse("A", "\"env:9X\"", -EINVAL, "not a valid environment variable name"));
    CHECK(!parse("A", "\"keychain:\"", -EINVAL, "label is empty"));
    CHECK(!parse("A", "\"file:relative/path\"", -EINVAL, "relative"));
    CHECK(!parse("A", "42", -EINVAL, "not a number"));
    CHECK(!parse("A", "[\"x\"]", -EINVAL, "not an array"));
    CHECK(!parse("A", "{}", -EINVAL, "names no source"));
    CHECK(!parse("A", "{\"command\": \"x\", \"env\": \"Y\"}", -EINVAL, "keep one"));
    CHECK(!parse("A", "{\"command\": \"x\", \"tll\": \"5m\"}", -EINVAL, "unknown key \"tll\""));
    CHECK(!parse("A", "{\"command\": \"x\", \"ttl\": \"5 minutes\"}", -EINVAL, "not a duration"));
    CHECK(!parse("A", "{\"command\": \"x\", \"ttl\": -1}", -EINVAL, "non-negative"));
    CHECK(!parse("A", "{\"command\": \"x\", \"timeout\": \"0\"}", -EINVAL, "more than 0"));
    CHECK(!parse("A", "{\"command\": \"x\", \"timeout\": \"1h\"}", -EINVAL, "at most 10m"));
    CHECK(!parse("A", "{\"command\": 5}", -EINVAL, "must be a string"));
    /* a literal value is never quoted back in an error */
    struct recipe *r = parse("A", "{\"literal\": \"hunter22\", \"ttl\": true}", -EINVAL, "\"ttl\"");
    CHECK(!r);
}

static void test_roundtrip(void)
{
    const char *forms[] = {
        "\"!gh auth token\"",
        "\"env:X\"",
        "\"X\"",
        "\"keychain:L\"",
        "\"file:/tmp/f\"",
        "{\"command\":\"date\",\"ttl\":\"8h\"}",
        "{\"command\":\"date\",\"timeout\":\"30s\"}",
        "{\"command\":\"date\",\"ttl\":\"0\"}",
        "{\"keychain\":\"L\",\"description\":\"d\"}",
        "\"op:op://Private/GitHub/token\"",
        "\"bw:github\"",
        "{\"bw\":\"github\",\"field\":\"username\"}",
        "\"pass:work/db\"",
        "{\"gopass\":\"a b;c\",\"ttl\":\"1h\"}",
        "{\"keepassxc\":\"/db.kdbx\",\"entry\":\"mail\",\"password\":\"KP\"}",
        "\"vault:secret/gh#token\"",
        "{\"aws\":\"prod/db\",\"field\":\"password\",\"timeout\":\"1m\"}",
        "{\"gcloud\":\"api-key\",\"project\":\"p1\"}",
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        struct recipe *r = parse("N", forms[i], 0, NULL);
        if (!r)
            continue;
        struct json_object *j = recipe_to_json(r);
        const char *out = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
        CHECK_STR(out, forms[i]);
        json_object_put(j);
        recipe_free(r);
    }
}

/* Each manager: its form, its TTL default, the options that go with it and a reference a
 * manager would take for an option. */
static void test_managers(void)
{
    struct recipe *r = parse("A", "\"pass:a b/c;$(x)\"", 0, NULL);
    CHECK_INT(r->kind, RECIPE_PASS);
    CHECK_STR(r->arg, "a b/c;$(x)");
    CHECK_INT(r->ttl_ms, INT64_C(5) * 60 * 1000);
    CHECK_INT(r->timeout_ms, RECIPE_MANAGER_TIMEOUT_DEFAULT);
    recipe_free(r);
    r = parse("A", "{\"op\": \"op://v/i/f\"}", 0, NULL);
    CHECK_INT(r->kind, RECIPE_OP);
    CHECK_INT(r->ttl_ms, INT64_C(60) * 60 * 1000);
    recipe_free(r);
    CHECK(!parse("A", "\"pass:-x\"", -EINVAL, "begins with '-'"));
    CHECK(!parse("A", "\"bw:--session=x\"", -EINVAL, "begins with '-'"));
    CHECK(!parse("A", "\"op:vault/item\"", -EINVAL, "op://"));
    CHECK(!parse("A", "\"vault:secret/x\"", -EINVAL, "PATH#FIELD"));
    CHECK(!parse("A", "\"keepassxc:/db.kdbx\"", -EINVAL, "needs \"entry\""));
    CHECK(!parse("A", "{\"keepassxc\": \"db.kdbx\", \"entry\": \"e\"}", -EINVAL, "relative"));
    CHECK(!parse("A", "{\"keepassxc\": \"/d\", \"entry\": \"-e\"}", -EINVAL, "begins"));
    CHECK(!parse("A", "{\"keepassxc\": \"/d\", \"entry\": \"e\", \"password\": \"A\"}", -EINVAL,
                 "cannot be the secret itself"));
    CHECK(!parse("A", "{\"pass\": \"x\", \"entry\": \"e\"}", -EINVAL, "goes with"));
    CHECK(!parse("A", "{\"bw\": \"x\", \"field\": \"secret\"}", -EINVAL, "one of password"));
    CHECK(!parse("A", "{\"pass\": \"x\", \"project\": \"p\"}", -EINVAL, "goes with"));
    CHECK(!parse("A", "{\"pass\": \"x\", \"pas\": \"x\"}", -EINVAL, "did you mean"));

    /* options change the cache key of a manager */
    struct recipe *a = parse("N", "{\"bw\":\"x\"}", 0, NULL);
    struct recipe *b = parse("N", "{\"bw\":\"x\",\"field\":\"username\"}", 0, NULL);
    char fa[65], fb[65];
    recipe_fingerprint(a, "/agent", fa);
    recipe_fingerprint(b, "/agent", fb);
    CHECK(strcmp(fa, fb) != 0);
    recipe_free(a);
    recipe_free(b);
}

static void test_fingerprint(void)
{
    struct recipe *a = parse("N", "\"!date\"", 0, NULL);
    struct recipe *b = parse("N", "{\"command\":\"date\",\"ttl\":\"1h\"}", 0, NULL);
    char fa[65], fb[65], fc[65];
    recipe_fingerprint(a, "/agent", fa);
    recipe_fingerprint(b, "/agent", fb);
    recipe_fingerprint(a, "/other", fc);
    CHECK_INT(strlen(fa), 64);
    CHECK(strcmp(fa, fb) != 0); /* TTL changed: the cached value must not be reused */
    CHECK(strcmp(fa, fc) != 0); /* another agent directory */
    recipe_fingerprint(a, "/agent", fc);
    CHECK_STR(fa, fc);
    recipe_free(a);
    recipe_free(b);
}

TESTS_MAIN(test_string_forms, test_object_forms, test_bad, test_roundtrip, test_managers,
           test_fingerprint)
