/* test_mcp_template.c - ${VAR} templates: expansion, its errors, the variables named */
#include <errno.h>
#include <stdint.h>

#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "mcp_fixture.h"

static void check_expand(const char *tmpl, const char *want)
{
    static const char *const kv[] = {"A", "alpha", "B", "beta", "E", "", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char *out = NULL;
    CHECK_INT(mcp_expand(tmpl, table_lookup, &t, &out, &e), 0);
    CHECK_STR(out, want);
    secure_free(out);
}

static void check_expand_fails(const char *tmpl, int code, const char *msg)
{
    static const char *const kv[] = {"A", "alpha", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char *sentinel = (char *)(uintptr_t)0x1, *out = sentinel;
    CHECK_INT(mcp_expand(tmpl, table_lookup, &t, &out, &e), code);
    CHECK(out == sentinel);
    CHECK_CONTAINS(e.msg, msg);
}

/* userdata: char[256] */
static void collect(const char *name, void *userdata)
{
    char *s = userdata;
    size_t n = strlen(s);
    snprintf(s + n, 256 - n, "%s,", name);
}

static void test_mcp_expand(void)
{
    check_expand("", "");
    check_expand("plain", "plain");
    check_expand("${A}", "alpha");
    check_expand("x${A}y${B}z", "xalphaybetaz");
    check_expand("[${E}]", "[]");
    check_expand("a$$b", "a$b");
    check_expand("$${A}", "${A}");
    check_expand("$$$${A}", "$${A}");
    check_expand("cost $5, $A, $", "cost $5, $A, $");
    check_expand("$$", "$");
    check_expand("}{$}", "}{$}");

    check_expand_fails("${", -EINVAL, "unterminated \"${\" at character 1");
    check_expand_fails("ab${A", -EINVAL, "unterminated \"${\" at character 3");
    check_expand_fails("${}", -EINVAL, "invalid variable name");
    check_expand_fails("${1A}", -EINVAL, "invalid variable name");
    check_expand_fails("${A-B}", -EINVAL, "invalid variable name");
    check_expand_fails("${A B}", -EINVAL, "invalid variable name");
    check_expand_fails("${A}${NOPE}", -ENOENT, "variable 'NOPE' is not set");
    check_expand_fails("${LOCKED}", -EACCES,
                       "cannot look up variable 'LOCKED': the keyring is locked");

    /* NULL lookup: the process environment */
    struct err e = ERR_INIT;
    char *out = NULL;
    setenv("MCPT_ENV_ONLY", "from-env", 1);
    CHECK_INT(mcp_expand("<${MCPT_ENV_ONLY}>", NULL, NULL, &out, &e), 0);
    CHECK_STR(out, "<from-env>");
    secure_free(out);
    unsetenv("MCPT_ENV_ONLY");
    CHECK_INT(mcp_expand("${MCPT_ENV_ONLY}", NULL, NULL, &out, &e), -ENOENT);

    char names[256] = "";
    mcp_template_vars("${A}x${B}$${C}${A}$D", collect, names);
    CHECK_STR(names, "A,B,A,");
    names[0] = 0;
    mcp_template_vars("${A}${bad-", collect, names); /* stops at the error */
    CHECK_STR(names, "A,");
}

/* the collecting expansion goes on past unset variables, listing each once, in order */
static void test_expand_collect(void)
{
    static const char *const kv[] = {"A", "alpha", NULL};
    struct table t = {kv, 0};
    struct strv missing = STRV_INIT;
    struct err e = ERR_INIT;
    char *sentinel = (char *)(uintptr_t)0x1, *out = sentinel;

    CHECK_INT(mcp_expand_collect("${X}${A}${Y}${X}", table_lookup, &t, &missing, &out, &e),
              -ENOENT);
    CHECK(out == sentinel);
    CHECK_INT(missing.n, 2);
    if (missing.n == 2) {
        CHECK_STR(missing.v[0], "X");
        CHECK_STR(missing.v[1], "Y");
    }
    /* a name already listed is not added again */
    CHECK_INT(mcp_expand_collect("${Y}${Z}", table_lookup, &t, &missing, &out, &e), -ENOENT);
    CHECK_INT(missing.n, 3);
    CHECK(strv_contains(&missing, "Z"));
    strv_release(&missing);

    CHECK_INT(mcp_expand_collect("<${A}>", table_lookup, &t, &missing, &out, &e), 0);
    CHECK_STR(out, "<alpha>");
    CHECK_INT(missing.n, 0);
    secure_free(out);
    out = sentinel;
    /* syntax and lookup errors are errors still */
    CHECK_INT(mcp_expand_collect("${A", table_lookup, &t, &missing, &out, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "unterminated");
    CHECK_INT(mcp_expand_collect("${LOCKED}", table_lookup, &t, &missing, &out, &e), -EACCES);
    CHECK(out == sentinel);
    CHECK_INT(mcp_expand_collect(NULL, table_lookup, &t, &missing, &out, &e), -EINVAL);
    CHECK_INT(mcp_expand_collect("x", table_lookup, &t, NULL, &out, &e), -EINVAL);
    strv_release(&missing);
}

/* userdata: char[256]; "name?" for a reference with a default */
static void collect_refs(const char *name, bool has_default, void *userdata)
{
    char *s = userdata;
    size_t n = strlen(s);
    snprintf(s + n, 256 - n, "%s%s,", name, has_default ? "?" : "");
}

/* ${NAME:-default}, ${env:NAME}, ${input:ID}: the lookup sees the name as written */
static void test_forms(void)
{
    static const char *const kv[] = {"A",           "alpha",     "E",         "",
                                     "env:A",       "env-alpha", "input:key", "the-key",
                                     "input:k-1.x", "k1",        NULL};
    struct table t = {kv, 0};

    check_expand("${A:-x}", "alpha");
    check_expand("${E:-x}", "x"); /* empty: the default, as in sh */
    check_expand("${NOPE:-}", "");
    check_expand("${NOPE:-a b/c:d-e$}", "a b/c:d-e$"); /* literal, up to the first } */
    check_expand("<${NOPE:-${A}>", "<${A>");           /* no nesting */
    check_expand("${NOPE:-x}}", "x}");

    struct err e = ERR_INIT;
    char *out = NULL;
    CHECK_INT(mcp_expand("${env:A}|${input:key}|${input:k-1.x}|${input:NOPE:-d}", table_lookup, &t,
                         &out, &e),
              0);
    CHECK_STR(out, "env-alpha|the-key|k1|d");
    secure_free(out);

    check_expand_fails("${env:}", -EINVAL, "invalid variable name");
    check_expand_fails("${env:1A}", -EINVAL, "invalid variable name");
    check_expand_fails("${input:}", -EINVAL, "invalid variable name");
    check_expand_fails("${input:a b}", -EINVAL, "invalid variable name");
    check_expand_fails("${other:A}", -EINVAL, "the forms are ${NAME}, ${NAME:-default}");
    check_expand_fails("${:-x}", -EINVAL, "invalid variable name");
    check_expand_fails("${A:x}", -EINVAL, "invalid variable name");
    check_expand_fails("${input:tok}", -ENOENT,
                       "variable 'input:tok' is not set: run: secrets configure tok");
    check_expand_fails("${input:api-key}", -ENOENT,
                       "run: secrets configure api_key (the input 'api-key' is read from that "
                       "secret");
    check_expand_fails("${env:NOPE}", -ENOENT, "variable 'env:NOPE' is not set");
    check_expand_fails("${LOCKED:-x}", -EACCES, "the keyring is locked"); /* not a default */

    /* the default lookup: env:NAME is NAME, an input is never the environment's */
    setenv("MCPT_FORM", "v", 1);
    setenv("input:MCPT_FORM", "never", 1);
    CHECK_INT(mcp_expand("${env:MCPT_FORM}${MCPT_FORM}${MCPT_UNSET:-d}", NULL, NULL, &out, &e), 0);
    CHECK_STR(out, "vvd");
    secure_free(out);
    CHECK_INT(mcp_expand("${input:MCPT_FORM}", NULL, NULL, &out, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "run: secrets configure MCPT_FORM");
    unsetenv("input:MCPT_FORM");
    unsetenv("MCPT_FORM");

    /* a missing defaulted reference is not missing */
    struct strv missing = STRV_INIT;
    CHECK_INT(mcp_expand_collect("${NOPE:-d}${input:ID}${env:NOPE2}${NOPE:-e}", table_lookup, &t,
                                 &missing, &out, &e),
              -ENOENT);
    CHECK_INT(missing.n, 2);
    if (missing.n == 2) {
        CHECK_STR(missing.v[0], "input:ID");
        CHECK_STR(missing.v[1], "env:NOPE2");
    }
    strv_release(&missing);

    /* the names as written, without defaults; a defaulted one reported too */
    char names[256] = "";
    mcp_template_vars("${A:-x}${env:B}${input:c-d}${E}", collect, names);
    CHECK_STR(names, "A,env:B,input:c-d,E,");
    names[0] = 0;
    mcp_template_refs("${A:-x}${env:B}${input:c-d}${E}${F:-}", collect_refs, names);
    CHECK_STR(names, "A?,env:B,input:c-d,E,F?,");

    CHECK_STR(mcp_template_env_name("A"), "A");
    CHECK_STR(mcp_template_env_name("env:A"), "A");
    CHECK(mcp_template_env_name("input:A") == NULL);
    char sb[MCP_TEMPLATE_SECRET_BUF];
    CHECK_STR(mcp_template_secret_name("A", sb), "A");
    CHECK_STR(mcp_template_secret_name("input:A", sb), "A");
    CHECK(mcp_template_secret_name("env:A", sb) == NULL);
    /* VS Code ids: what a secret's name cannot hold becomes '_' */
    CHECK_STR(mcp_template_secret_name("input:api-key", sb), "api_key");
    CHECK_STR(mcp_template_secret_name("input:gh.token-2", sb), "gh_token_2");
    CHECK_STR(mcp_template_secret_name("input:1st", sb), "_1st");
    char longid[300] = "input:";
    memset(longid + 6, 'a', 200);
    longid[206] = 0;
    CHECK(mcp_template_secret_name(longid, sb) == longid + 6); /* valid: as it is */
    longid[10] = '-';
    CHECK(mcp_template_secret_name(longid, sb) == NULL); /* made, but too long for a name */
    CHECK_STR(mcp_template_input_id("input:x"), "x");
    CHECK(mcp_template_input_id("x") == NULL);
    char hint[128];
    mcp_template_missing_hint("A", hint, sizeof(hint));
    CHECK_STR(hint, "");
    mcp_template_missing_hint("input:ab", hint, sizeof(hint));
    CHECK_STR(hint, "run: secrets configure ab");
}

/* userdata: char[256]; "NAME=set|default|missing," per reference */
static void tell_fate(void *userdata, const char *name, enum mcp_ref_state state)
{
    static const char *const words[] = {"set", "default", "missing"};
    char *s = userdata;
    size_t n = strlen(s);
    snprintf(s + n, 256 - n, "%s=%s,", name, words[state]);
}

static void check_eval(const char *v, bool value_form, int want, const char *fates)
{
    static const char *const kv[] = {"A", "alpha", "E", "", "env:HOMEY", "/h", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char got[256] = "";
    int r = value_form ? mcp_value_eval(v, table_lookup, &t, tell_fate, got, &e)
                       : mcp_template_eval(v, table_lookup, &t, tell_fate, got, &e);
    CHECK_INT(r, want);
    CHECK_STR(got, fates);
}

/* The one evaluator list and call share: what became of each reference, and the pi adapter's
 * "$env:NAME" */
static void test_eval(void)
{
    check_eval("${A}", false, 0, "A=set,");
    check_eval("${NOPE:-d}", false, 0, "NOPE=default,");
    check_eval("${E:-d}", false, 0, "E=default,"); /* empty, as in sh */
    check_eval("${env:NOPE}", false, -ENOENT, "env:NOPE=missing,");
    check_eval("${env:NOPE:-x}${A}", false, 0, "env:NOPE=default,A=set,");
    check_eval("$env:HOMEY/x", false, 0, "env:HOMEY=set,");
    check_eval("$env:NOPE", false, -ENOENT, "env:NOPE=missing,");
    check_eval("${A", false, -EINVAL, "");
}

static void test_adapter_env(void)
{
    static const char *const kv[] = {"env:V1", "one", "env:_x", "u", NULL};
    struct table t = {kv, 0};
    static const struct {
        const char *tmpl, *want;
    } cases[] = {
        {"$env:V1", "one"},     {"a$env:V1-b", "aone-b"}, {"$env:V1$env:V1", "oneone"},
        {"$env:_x", "u"},       {"$$env:V1", "$env:V1"},  {"$env:", "$env:"},
        {"$env:-x", "$env:-x"}, {"$env:1a", "$env:1a"},   {"$ENV:V1", "$ENV:V1"},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        struct err e = ERR_INIT;
        char *out = NULL;
        CHECK_INT(mcp_expand(cases[i].tmpl, table_lookup, &t, &out, &e), 0);
        CHECK_STR(out, cases[i].want);
        secure_free(out);
    }
    struct err e = ERR_INIT;
    char *out = NULL;
    CHECK_INT(mcp_expand("$env:V2", table_lookup, &t, &out, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "variable 'env:V2' is not set: set V2 in the environment");
}

/* "!command", "!!" and templates, as the adapter reads a value that may hold a secret */
static void test_value_forms(void)
{
    CHECK_STR(mcp_value_command("!gh auth token"), "gh auth token");
    CHECK(mcp_value_command("!!x") == NULL);
    CHECK(mcp_value_command("x!") == NULL);
    CHECK(mcp_value_command(NULL) == NULL);
    CHECK_STR(mcp_value_template("!!x${A}"), "!x${A}");
    CHECK_STR(mcp_value_template("plain"), "plain");
    CHECK(mcp_value_template("!cmd") == NULL);
    CHECK_STR(mcp_value_command("!"), ""); /* an empty command: secrets refuses it */

    char n1[MCP_VALUE_COMMAND_NAME_BUF], n2[MCP_VALUE_COMMAND_NAME_BUF];
    mcp_value_command_name("gh auth token", n1);
    mcp_value_command_name("gh auth token", n2);
    CHECK_STR(n1, n2);
    CHECK(strncmp(n1, MCP_VALUE_COMMAND_PREFIX, 5) == 0 && strlen(n1) == 21);
    CHECK(strstr(n1, "gh") == NULL);
    CHECK(mcp_value_is_command_name(n1));
    CHECK(!mcp_value_is_command_name("_cmd_"));
    CHECK(!mcp_value_is_command_name("GITHUB_TOKEN"));
    mcp_value_command_name("gh auth token ", n2);
    CHECK(strcmp(n1, n2) != 0);

    /* a command's value is the lookup's under its name; unknown there, it has not run */
    const char *kv[] = {n1, "out", "A", "alpha", NULL};
    struct table t = {kv, 0};
    struct err e = ERR_INIT;
    char *out = NULL;
    CHECK_INT(mcp_value_expand("!gh auth token", table_lookup, &t, &out, &e), 0);
    CHECK_STR(out, "out");
    secure_free(out);
    out = NULL;
    CHECK_INT(mcp_value_expand("!!${A}", table_lookup, &t, &out, &e), 0);
    CHECK_STR(out, "!alpha");
    secure_free(out);
    out = NULL;
    CHECK_INT(mcp_value_expand("!other --secret-flag", table_lookup, &t, &out, &e), -ENOENT);
    CHECK(out == NULL);
    CHECK_CONTAINS(e.msg, "has not run");
    CHECK(strstr(e.msg, "secret-flag") == NULL); /* never the command */

    /* list's evaluation never runs nor asks for a command */
    check_eval("!cat key", true, 0, "");
    check_eval("!!${NOPE:-d}", true, 0, "NOPE=default,");
}

TESTS_MAIN(test_mcp_expand, test_expand_collect, test_forms, test_eval, test_adapter_env,
           test_value_forms)
