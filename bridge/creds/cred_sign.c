/* cred_sign.c - "requestHeadersCommand": a helper run per HTTP request (cred_sign.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "credkit/buf.h"
#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "creds/cred_check.h"
#include "creds/cred_proc.h"
#include "creds/cred_sign.h"

#define KEY "requestHeadersCommand"

extern char **environ;

struct cred_sign {
    struct loop *loop;
    struct log *log;
    char *name;
    struct strv argv; /* the command and its arguments, expanded */
    struct strv envp; /* the bridge's environment with "env" on top */
    int64_t timeout_ms;
    struct cred_dpop dpop;
};

struct cred_sign_run {
    struct cred_proc *proc; /* NULL for a run of DPoP alone */
    struct log *log;
    char *name;
    char *proof;                   /* "DPoP: ..." for this request, NULL */
    struct loop_deferred deferred; /* a run of DPoP alone: its done */
    cred_sign_done_fn done;
    void *userdata;
};

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

/* The parts of the value, unexpanded; *ret_env borrowed from raw. */
static int parse(struct json_object *v, char **ret_cmd, char ***ret_args,
                 struct json_object **ret_env, int64_t *ret_timeout, struct err *e)
{
    char *cmd = NULL, **args = NULL;
    int64_t timeout = CRED_SIGN_TIMEOUT_DEFAULT_MS;
    int r;

    if (!json_object_is_type(v, json_type_object))
        return bad(e, "\"" KEY "\" must be an object with \"command\", not %s", mcp_field_type(v));
    json_object_object_foreach(v, k, val)
    {
        (void)val;
        if (strcmp(k, "command") && strcmp(k, "args") && strcmp(k, "env") && strcmp(k, "timeoutMs"))
            return err_set(e, -EINVAL, "\"" KEY "\" has a key it does not know: '%.64s'", k);
    }
    struct json_object *env = mcp_field_member(v, "env");
    if (env && !json_object_is_type(env, json_type_object))
        return bad(e, "\"" KEY ".env\" must be an object of strings, not %s", mcp_field_type(env));
    if (env) {
        json_object_object_foreach(env, ek, ev)
        {
            if (!ek[0] || strchr(ek, '='))
                return bad(e, "\"" KEY ".env\" has a name that is empty or holds '=': '%.64s'", ek);
            if (!json_object_is_type(ev, json_type_string))
                return bad(e, "\"" KEY ".env\" value '%.64s' must be a string", ek);
        }
    }
    struct json_object *t = mcp_field_member(v, "timeoutMs");
    if (t) {
        if (!json_object_is_type(t, json_type_int) || json_object_get_int64(t) <= 0 ||
            json_object_get_int64(t) > CRED_SIGN_TIMEOUT_MAX_MS)
            return err_set(e, -EINVAL,
                           "\"" KEY ".timeoutMs\" must be a whole number of milliseconds from 1 "
                           "to %d",
                           CRED_SIGN_TIMEOUT_MAX_MS);
        timeout = json_object_get_int64(t);
    }
    r = mcp_field_string(v, "command", KEY ".command", MCP_FIELD_NONBLANK, &cmd, e);
    if (r >= 0 && !cmd)
        r = err_set(e, -EINVAL, "\"" KEY "\" needs \"command\": the program to run");
    if (r >= 0)
        r = mcp_field_strv(v, "args", &args, e);
    if (r < 0) {
        free(cmd);
        strv_free(args);
        if (r != -ENOMEM && !strstr(err_msg(e), KEY))
            err_prefix(e, "\"" KEY "\"");
        return r;
    }
    *ret_cmd = cmd;
    *ret_args = args;
    *ret_env = env;
    *ret_timeout = timeout;
    return 0;
}

int cred_sign_check(struct json_object *raw, struct err *e)
{
    struct json_object *v = mcp_field_member(raw, KEY), *env = NULL;
    char *cmd = NULL, **args = NULL;
    int64_t timeout = 0;
    if (!v)
        return 0;
    int r = parse(v, &cmd, &args, &env, &timeout, e);
    free(cmd);
    strv_free(args);
    return r;
}

/* Pushes template t expanded from the environment (its name for a message: what). */
static int push_expanded(struct strv *sv, const char *prefix, const char *t, const char *what,
                         struct err *e)
{
    char *x = NULL;
    int r = mcp_expand(t, NULL, NULL, &x, e);
    if (r < 0)
        return err_prefix(e, "\"" KEY "\" %s", what);
    r = strv_pushf(sv, "%s%s", prefix, x);
    free(x);
    return r < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
}

/* The bridge's environment, the names of env left out, then env's. */
static int build_env(struct strv *out, struct json_object *env, struct err *e)
{
    int r = 0;
    for (char **p = environ; p && *p && r >= 0; p++) {
        size_t n = strcspn(*p, "=");
        bool replaced = false;
        if (env) {
            json_object_object_foreach(env, k, v)
            {
                (void)v;
                replaced = replaced || (strlen(k) == n && strncmp(k, *p, n) == 0);
            }
        }
        if (!replaced && strv_push(out, *p) < 0)
            r = err_set(e, -ENOMEM, "out of memory");
    }
    if (!env)
        return r;
    json_object_object_foreach(env, k, v)
    {
        char prefix[80];
        if (r < 0)
            break;
        if (strlen(k) >= sizeof(prefix) - 1) {
            r = bad(e, "\"" KEY ".env\" has a name that is too long: '%.64s'", k);
            break;
        }
        (void)snprintf(prefix, sizeof(prefix), "%s=", k);
        r = push_expanded(out, prefix, json_object_get_string(v), "env value", e);
    }
    return r;
}

int cred_sign_new(struct loop *l, struct log *log, const char *name, struct json_object *raw,
                  struct cred_sign **ret, struct err *e)
{
    struct json_object *v = mcp_field_member(raw, KEY), *env = NULL;
    struct cred_sign *s = NULL;
    char *cmd = NULL, **args = NULL;
    int64_t timeout = 0;
    int r;

    if (!v) {
        *ret = NULL;
        return 0;
    }
    r = parse(v, &cmd, &args, &env, &timeout, e);
    if (r < 0)
        return r;
    s = calloc(1, sizeof(*s));
    if (!s || !(s->name = strdup(name))) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    s->loop = l;
    s->log = log;
    s->timeout_ms = timeout;
    s->argv = (struct strv)STRV_INIT;
    s->envp = (struct strv)STRV_INIT;
    r = push_expanded(&s->argv, "", cmd, "command", e);
    for (size_t i = 0; r >= 0 && args && args[i]; i++)
        r = push_expanded(&s->argv, "", args[i], "argument", e);
    if (r >= 0)
        r = build_env(&s->envp, env, e);
    if (r < 0)
        goto out;
    *ret = s;
    s = NULL;
out:
    cred_sign_free(s);
    free(cmd);
    strv_free(args);
    return r;
}

int cred_sign_new_bare(struct loop *l, struct log *log, const char *name, struct cred_sign **ret)
{
    struct cred_sign *s = calloc(1, sizeof(*s));
    if (!s || !(s->name = strdup(name))) {
        free(s);
        return -ENOMEM;
    }
    s->loop = l;
    s->log = log;
    s->argv = (struct strv)STRV_INIT;
    s->envp = (struct strv)STRV_INIT;
    *ret = s;
    return 0;
}

int cred_sign_set_dpop(struct cred_sign *s, struct dpop_key *key, const char *const *headers)
{
    return cred_dpop_set(&s->dpop, key, headers);
}

bool cred_sign_dpop_nonce(struct cred_sign *s, const char *nonce, size_t len)
{
    return cred_dpop_nonce(&s->dpop, nonce, len);
}

bool cred_sign_wanted(const struct cred_sign *s)
{
    return s && (s->argv.n > 0 || s->dpop.key);
}

bool cred_sign_reads_body(const struct cred_sign *s)
{
    return s && s->argv.n > 0;
}

void cred_sign_free(struct cred_sign *s)
{
    if (!s)
        return;
    cred_dpop_release(&s->dpop);
    free(s->name);
    strv_release(&s->argv);
    strv_release_secure(&s->envp); /* "env" may carry a key */
    free(s);
}

static void run_free(struct cred_sign_run *run)
{
    loop_defer_cancel(&run->deferred);
    free(run->name);
    secure_free(run->proof);
    free(run);
}

/* Our proof last, instead of any "DPoP" header the command gave. */
static int add_proof(const struct cred_sign_run *run, struct strv *hdrs)
{
    if (!run->proof)
        return 0;
    for (size_t i = 0; i < hdrs->n; i++)
        if (strncasecmp(hdrs->v[i], "DPoP:", 5) == 0) {
            secure_free(hdrs->v[i]);
            memmove(hdrs->v + i, hdrs->v + i + 1, (hdrs->n - i) * sizeof(*hdrs->v));
            hdrs->n--;
            i--;
        }
    return strv_push(hdrs, run->proof);
}

/* A run of DPoP alone: its proof is the answer. */
static void proof_only_done(void *userdata)
{
    struct cred_sign_run *run = userdata;
    const char *hdrs[] = {run->proof, NULL};
    run->done(0, hdrs, run->userdata);
    run_free(run);
}

/* The answer as "Name: value" lines: a JSON object of strings, each header one that may be
 * sent (helper_headers_add()) and added by a helper (helper_header_framing()). */
static int answer_headers(const struct cred_proc_result *res, struct strv *out, char *msg,
                          size_t size)
{
    struct json_object *o = NULL;
    struct helper_headers h = {0};
    struct err e = ERR_INIT;
    int r = json_parse(res->out, res->out_len, HELPER_ANSWER_MAX, &o, &e);
    if (r < 0 || !json_object_is_type(o, json_type_object)) {
        snprintf(msg, size, "its answer is not a JSON object of headers%s%s", r < 0 ? ": " : "",
                 r < 0 ? err_msg(&e) : "");
        r = -EBADMSG;
        goto out;
    }
    json_object_object_foreach(o, k, v)
    {
        const char *why = helper_header_framing(k);
        if (why) {
            snprintf(msg, size, "its header '%.64s' is refused: %s", k, why);
            r = -EINVAL;
            goto out;
        }
        if (!json_object_is_type(v, json_type_string)) {
            snprintf(msg, size, "the value of its header '%.64s' is not a string", k);
            r = -EBADMSG;
            goto out;
        }
        r = helper_headers_add(&h, k, json_object_get_string(v),
                               (size_t)json_object_get_string_len(v), &e);
        if (r < 0) {
            snprintf(msg, size, "%s", err_msg(&e));
            goto out;
        }
    }
    for (size_t i = 0; i < h.n && r >= 0; i++)
        r = strv_pushf(out, "%s: %s", h.v[i].name, h.v[i].value);
    if (r < 0)
        snprintf(msg, size, "out of memory");
out:
    helper_headers_release(&h);
    json_object_put(o); /* json-c's copies of the values are not wiped: as every answer read */
    return r;
}

static void run_done(struct cred_proc *p, int error, const struct cred_proc_result *res,
                     void *userdata)
{
    struct cred_sign_run *run = userdata;
    struct strv hdrs = STRV_INIT;
    char msg[512] = "";
    (void)p;
    run->proc = NULL;
    if (error < 0) {
        snprintf(msg, sizeof(msg), "%s",
                 error == -E2BIG ? "its answer is larger than 65536 bytes" : strerror(-error));
    } else if (res->timed_out) {
        error = -ETIMEDOUT;
        snprintf(msg, sizeof(msg), "it did not answer in time");
    } else if (res->exit_code != 0) {
        char first[256];
        cred_proc_first_line(res->err, res->err_len, first, sizeof(first));
        error = -EIO;
        if (res->signal)
            snprintf(msg, sizeof(msg), "killed by signal %d%s%s", res->signal, first[0] ? ": " : "",
                     first);
        else
            snprintf(msg, sizeof(msg), "exit status %d%s%s", res->exit_code, first[0] ? ": " : "",
                     first);
    } else {
        error = answer_headers(res, &hdrs, msg, sizeof(msg));
        if (error >= 0 && add_proof(run, &hdrs) < 0) {
            error = -ENOMEM;
            snprintf(msg, sizeof(msg), "out of memory");
        }
    }
    if (error < 0)
        log_warn(run->log, "server '%s': \"" KEY "\" failed, the request is not sent: %s",
                 run->name, msg);
    run->done(error < 0 ? error : 0, error < 0 ? NULL : (const char *const *)hdrs.v, run->userdata);
    strv_release_secure(&hdrs);
    run_free(run);
}

/* {"version":1,"method":...,"url":...,"bodyBase64":...} into b (a secret buffer). */
static int envelope(struct buf *b, const char *method, const char *url, const char *body,
                    size_t len)
{
    if (len > (size_t)INT32_MAX / 4 * 3 - 3)
        return -E2BIG;
    size_t n64 = 4 * ((len + 2) / 3);
    char *enc = malloc(n64 + 1);
    if (!enc)
        return -ENOMEM;
    if (EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)(body ? body : ""), (int)len) <
        0)
        enc[0] = '\0';
    int r = buf_append_str(b, "{\"version\":1,");
    if (r >= 0)
        r = jsonw_kv_string(b, "method", method);
    if (r >= 0)
        r = buf_append_str(b, ",");
    if (r >= 0)
        r = jsonw_kv_string(b, "url", url);
    if (r >= 0)
        r = buf_append_str(b, ",");
    if (r >= 0)
        r = jsonw_kv_string(b, "bodyBase64", enc);
    if (r >= 0)
        r = buf_append_str(b, "}\n");
    free(enc);
    return r;
}

int cred_sign_start(struct cred_sign *s, const char *method, const char *url, const char *body,
                    size_t len, cred_sign_done_fn done, void *userdata, struct cred_sign_run **ret,
                    struct err *e)
{
    struct cred_sign_run *run = calloc(1, sizeof(*run));
    struct buf in;
    buf_init_secret(&in, len / 3 * 4 + strlen(url) * 6 + 256);
    int r = run && (run->name = strdup(s->name)) ? envelope(&in, method, url, body, len) : -ENOMEM;
    if (r < 0) {
        r = err_set(e, r, r == -E2BIG ? "the request is too large to sign" : "out of memory");
        goto out;
    }
    run->log = s->log;
    run->done = done;
    run->userdata = userdata;
    if (s->dpop.key) {
        r = cred_dpop_header(&s->dpop, method, url, &run->proof);
        if (r < 0) {
            r = err_set(e, r, "cannot sign the DPoP proof");
            goto out;
        }
    }
    if (s->argv.n == 0) {
        loop_defer_queue(s->loop, &run->deferred, proof_only_done, run);
        *ret = run;
        run = NULL;
        goto out;
    }
    struct cred_proc_spec spec = {
        .argv = (const char *const *)s->argv.v,
        .envp = (const char *const *)s->envp.v,
        .timeout_ms = s->timeout_ms,
        .input = in.data,
        .input_len = in.len,
    };
    r = cred_proc_start(s->loop, &spec, run_done, run, &run->proc, e);
    if (r < 0) {
        err_prefix(e, "\"" KEY "\"");
        goto out;
    }
    *ret = run;
    run = NULL;
out:
    if (r < 0 && r != -ENOMEM)
        log_warn(s->log, "server '%s': %s: the request is not sent", s->name, err_msg(e));
    if (run)
        run_free(run);
    buf_release(&in);
    return r;
}

void cred_sign_cancel(struct cred_sign_run *run)
{
    if (!run)
        return;
    cred_proc_cancel(run->proc);
    run_free(run);
}
