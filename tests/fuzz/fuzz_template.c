/* fuzz_template.c - libFuzzer target: the ${...} template expander (common/mcp_template.c).
 *
 * Input: a template (an embedded NUL ends it). It is expanded through a lookup that knows a few
 * names, one of whose values looks like a template itself (a value is never expanded again),
 * and one whose lookup fails. Expansion and collecting expansion agree: the same result when
 * nothing is missing, -ENOENT exactly when something is; a template without '$' expands to
 * itself; a syntax error carries a message; every name the walkers report is one the lookup
 * could be asked for, and the helpers that classify names hold up on it. */
#include <errno.h>

#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "fuzz.h"

static int lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    static const char *const known[][2] = {
        {"A", "alpha"},         {"env:HOME", "/home/u"}, {"input:api-key", "k-123"},
        {"TOKEN", "${A}$${B}"}, /* a value is text, never a template */
        {"EMPTY", ""},
    };
    (void)userdata;
    fuzz_check(name != NULL);
    if (strcmp(name, "BROKEN") == 0)
        return err_set(e, -EIO, "the store cannot be read");
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(name, known[i][0]) == 0) {
            *ret = strdup(known[i][1]);
            return *ret ? 0 : -ENOMEM;
        }
    return -ENOENT;
}

static void on_name(const char *name, void *userdata)
{
    char buf[MCP_TEMPLATE_SECRET_BUF], hint[256];
    (void)userdata;
    fuzz_check(name != NULL);
    (void)mcp_template_env_name(name);
    const char *secret = mcp_template_secret_name(name, buf);
    /* borrowed from name, or made in buf */
    fuzz_check(!secret || (secret >= name && secret <= name + strlen(name)) ||
               (secret == buf && strlen(buf) < MCP_TEMPLATE_SECRET_BUF));
    (void)mcp_template_input_id(name);
    fuzz_check(mcp_template_missing_hint(name, hint, sizeof(hint)) >= 0);
}

static void on_ref(const char *name, bool has_default, void *userdata)
{
    on_name(name, userdata);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *tmpl = fuzz_strndup(data, size), *out = NULL, *collected = NULL;
    struct err e = ERR_INIT, e2 = ERR_INIT;
    struct strv missing = STRV_INIT;

    int r = mcp_expand(tmpl, lookup, NULL, &out, &e);
    int rc = mcp_expand_collect(tmpl, lookup, NULL, &missing, &collected, &e2);
    if (r == 0) {
        fuzz_check(rc == 0 && missing.n == 0 && strcmp(out, collected) == 0);
        if (!strchr(tmpl, '$'))
            fuzz_check(strcmp(out, tmpl) == 0);
    } else if (r == -ENOENT) {
        fuzz_check(e.msg[0] != 0);
        /* the first missing name stops expansion; collecting goes on, unless a later syntax
         * error or a failed lookup ends it */
        fuzz_check((rc == -ENOENT && missing.n > 0) || (rc < 0 && rc != -ENOENT));
    } else {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
        fuzz_check(rc < 0);
    }
    if (rc == -ENOENT)
        fuzz_check(missing.n > 0 && !collected);
    for (size_t i = 0; i < missing.n; i++)
        on_name(missing.v[i], NULL);
    mcp_template_vars(tmpl, on_name, NULL);
    mcp_template_refs(tmpl, on_ref, NULL);
    strv_release(&missing);
    secure_free(collected);
    secure_free(out);
    free(tmpl);
    return 0;
}
