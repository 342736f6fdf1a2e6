/* secret_command.c - a "!command" value of the settings, run by `secrets` (secret_command.h) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/helper_answer.h"
#include "credkit/jsonw.h"
#include "credkit/mcp_template.h"
#include "credkit/path.h"
#include "credkit/secmem.h"

#include "secret_command.h"

#define REQUEST_MAX    (48 * 1024) /* as mcp-bridge: it fits in the pipe whole */
#define ANSWER_MAX     (64 * 1024) /* HELPER_ANSWER_MAX */
#define RUN_TIMEOUT_MS 15000       /* secrets' own 10 s for the command, and its start */

/* {"version":1,"commands":{NAME: cmd}} into out (a secret buffer: the command may hold one). */
static int build_request(const char *name, const char *cmd, struct buf *out)
{
    int r = buf_append_str(out, "{\"version\":1,\"commands\":{");
    if (r >= 0)
        r = jsonw_string(out, name, strlen(name));
    if (r >= 0)
        r = buf_append_char(out, ':');
    if (r >= 0)
        r = jsonw_string(out, cmd, strlen(cmd));
    return r >= 0 ? buf_append_str(out, "}}\n") : r;
}

/* The first line of what secrets said on stderr, for a failed run. */
static void first_line(const struct buf *b, char *line, size_t size)
{
    const char *s = b->data ? b->data : "";
    size_t n = strcspn(s, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(line, s, n);
    line[n] = '\0';
}

/* The value of name in secrets' answer. */
static int take_value(const struct child_result *res, const char *name, const char *what,
                      char **ret, struct err *e)
{
    struct helper_secrets a = {0};
    struct err pe = ERR_INIT;
    char line[256];
    int r;

    if (res->signal || res->exit_code > 1 || !res->out.len) {
        first_line(&res->err, line, sizeof(line));
        return err_set(e, -ENOENT, "%s: 'secrets resolve' failed (%s %d)%s%s", what,
                       res->signal ? "signal" : "exit status",
                       res->signal ? res->signal : res->exit_code, *line ? ": " : "", line);
    }
    r = helper_secrets_parse(res->out.data, res->out.len, &a, &pe);
    if (r < 0)
        return err_set(e, -ENOENT, "%s: the answer of 'secrets resolve' is not usable: %s", what,
                       err_msg(&pe));
    const struct helper_secret *x = helper_secrets_find(&a, name);
    if (!x || !x->value) {
        /* secrets writes "'NAME': reason": the name means nothing to a person */
        const char *why = x && x->error ? x->error : "it answered nothing for it";
        size_t n = strlen(name);
        if (why[0] == '\'' && strncmp(why + 1, name, n) == 0 && strncmp(why + 1 + n, "': ", 3) == 0)
            why += n + 4;
        r = err_set(e, -ENOENT,
                    "%s: its command (the value starts with '!') gave no value: %s; run the "
                    "command yourself to see why and fix it in mcp.json (write \"!!\" for a value "
                    "that starts with a literal '!')",
                    what, why);
    } else {
        char *v = strdup(x->value);
        r = v ? 0 : err_set(e, -ENOMEM, "out of memory");
        if (v)
            *ret = v;
    }
    helper_secrets_release(&a);
    return r;
}

int secret_command_run(const char *cmd, const char *what, char **ret, struct err *e)
{
    char name[MCP_VALUE_COMMAND_NAME_BUF];
    char *prog = NULL;
    struct buf req;
    struct child_result res = {0};
    bool ran = false;
    int r;

    buf_init_secret(&req, REQUEST_MAX);
    (void)mcp_value_command_name(cmd, name);
    r = build_request(name, cmd, &req);
    if (r == -E2BIG)
        r = err_set(e, r, "%s: the command is longer than %d bytes: keep it in a script", what,
                    REQUEST_MAX);
    else if (r < 0)
        r = err_set(e, r, "out of memory");
    if (r >= 0) {
        r = path_find_helper("secrets", "CREDKIT_SECRETS", "secrets", &prog, e);
        if (r < 0)
            (void)err_prefix(e, "%s: its command (the value starts with '!') is run by secrets",
                             what);
    }
    if (r >= 0) {
        const char *argv[] = {prog, "resolve", "--json", "--stdin", NULL};
        struct child_spec spec = {.argv = argv};
        struct child_run_opts opts = {
            .timeout_ms = RUN_TIMEOUT_MS,
            .max_stdout = ANSWER_MAX,
            .stdin_data = buf_str(&req),
            .stdin_len = req.len,
            .secret_output = true,
        };
        r = child_run(&spec, &opts, &res, e);
        if (r < 0)
            (void)err_prefix(e, "%s: cannot run 'secrets resolve'", what);
        ran = r >= 0;
    }
    if (r >= 0)
        r = take_value(&res, name, what, ret, e);
    if (ran)
        child_result_release(&res);
    free(prog);
    buf_release(&req);
    return r;
}

int secret_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    char sbuf[MCP_TEMPLATE_SECRET_BUF];
    char *prog = NULL;
    struct child_result res = {0};
    struct helper_secrets a = {0};
    struct err pe = ERR_INIT;
    int r;

    (void)userdata;
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return mcp_lookup_env(NULL, name, ret, e);
    const char *sn = mcp_template_secret_name(name, sbuf);
    if (!sn)
        return -ENOENT;
    /* without `secrets` installed, a name is what the environment says, as secrets would */
    if (path_find_helper("secrets", "CREDKIT_SECRETS", "secrets", &prog, NULL) < 0)
        return mcp_lookup_env(NULL, name, ret, e);
    const char *argv[] = {prog, "resolve", "--json", sn, NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts opts = {
        .timeout_ms = RUN_TIMEOUT_MS,
        .max_stdout = ANSWER_MAX,
        .secret_output = true,
    };
    r = child_run(&spec, &opts, &res, e);
    free(prog);
    if (r < 0)
        return err_prefix(e, "'%s': cannot run 'secrets resolve'", sn);
    if (res.signal || !res.out.len ||
        helper_secrets_parse(res.out.data, res.out.len, &a, &pe) < 0) {
        r = err_set(e, -ENOENT, "'%s': 'secrets resolve' gave no usable answer", sn);
        goto out;
    }
    const struct helper_secret *x = helper_secrets_find(&a, sn);
    if (!x || !x->value) {
        r = err_set(e, -ENOENT, "%s", x && x->error ? x->error : "'secrets resolve' gave no value");
        goto out;
    }
    char *v = strdup(x->value);
    if (!v) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = v;
    r = 0;
out:
    helper_secrets_release(&a);
    child_result_release(&res);
    return r;
}
