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

TESTS_MAIN(test_mcp_expand, test_expand_collect)
