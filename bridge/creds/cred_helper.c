/* cred_helper.c - the credentials provider over `secrets`, `mcp-auth` and headersHelper
 * (cred_helper.h). Three slots, one per kind of helper, each holding its last answer and at
 * most one run; requests wait on the slots they need and are answered when the last of them
 * is in. mcp-auth's own steps (header, login, step-up) are in cred_oauth.c. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/dpop.h"
#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/log.h"
#include "credkit/mcp_template.h"
#include "credkit/redact.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

#include "creds/cred_helper_int.h"
#include "creds/cred_path.h"

struct cred_helper_req {
    struct cred_request r; /* first */
    struct cred_helper *h;
    struct list_node node;
    const struct mcp_server *srv;
    enum cred_reason reason;
    unsigned waiting; /* 1 << slot_kind */
    int error;
    char *message;
    cred_done_fn done;
    void *userdata;
    struct loop_deferred answer;
};

static void slot_start(struct slot *s, const struct mcp_server *srv);
static void req_check(struct cred_helper_req *q);

const char *cred_helper_slot_program(enum slot_kind k)
{
    switch (k) {
    case SLOT_SECRETS:
        return "secrets";
    case SLOT_OAUTH:
        return "mcp-auth";
    case SLOT_HELPER:
        return "headersHelper";
    case SLOT_N:
        break;
    }
    return "?";
}

/* ---- what an entry needs -------------------------------------------------------------------- */

/* The names an entry asks `secrets` for: "NAME" as NAME, "input:ID" as ID, never "env:NAME"
 * (the environment only: cred_lookup() reads it there). optional (may be NULL) holds
 * those every reference of which has a default (${NAME:-x}): unset, they are no error. */
struct name_set {
    struct strv *v;
    struct strv required; /* referenced at least once without a default */
    struct strv *optional;
    struct strv *commands; /* "NAME=command" of the "!command" values; NULL: not wanted */
    bool oom;
};

static void push_once(struct strv *v, const char *name, bool *oom)
{
    if (!*oom && !strv_contains(v, name) && strv_push(v, name) < 0)
        *oom = true;
}

static void collect_ref(const char *ref, bool has_default, void *userdata)
{
    struct name_set *ns = userdata;
    char secret[MCP_TEMPLATE_SECRET_BUF];
    const char *name = mcp_template_secret_name(ref, secret);
    /* a name `secrets` would refuse is not asked: it stays missing, with the reason */
    if (!name || !name_is_valid(name))
        return;
    push_once(ns->v, name, &ns->oom);
    if (!has_default)
        push_once(&ns->required, name, &ns->oom);
}

/* One value that may be in the adapter's forms: a command's name and text, or a template's
 * references. */
static void collect_value(const char *v, struct name_set *ns)
{
    const char *cmd = mcp_value_command(v);
    if (!cmd) {
        mcp_template_refs(mcp_value_template(v), collect_ref, ns);
        return;
    }
    char name[MCP_VALUE_COMMAND_NAME_BUF];
    (void)mcp_value_command_name(cmd, name);
    size_t n = strlen(name);
    for (size_t i = 0; ns->commands && i < ns->commands->n; i++)
        if (strncmp(ns->commands->v[i], name, n) == 0 && ns->commands->v[i][n] == '=')
            return;
    if (ns->commands && !ns->oom && strv_pushf(ns->commands, "%s=%s", name, cmd) < 0)
        ns->oom = true;
}

static void collect_pairs(char *const *v, const char *sep, struct name_set *ns)
{
    for (size_t i = 0; v && v[i]; i++) {
        const char *at = strstr(v[i], sep);
        if (at)
            collect_value(at + strlen(sep), ns);
    }
}

/* The names of `secrets` the entry refers to, bearerTokenEnv's name among them, (optional may
 * be NULL) those that may stay unset, and (commands may be NULL) its "!command" values as
 * "NAME=command". -ENOMEM. */
static int needed_names(const struct mcp_server *s, struct strv *names, struct strv *optional,
                        struct strv *commands)
{
    struct name_set ns = {names, STRV_INIT, optional, commands, false};
    if (s->transport == MCP_TRANSPORT_STDIO) {
        collect_pairs(s->env, "=", &ns);
        for (size_t i = 0; s->args && s->args[i]; i++)
            mcp_template_refs(s->args[i], collect_ref, &ns);
        if (s->cwd)
            mcp_template_refs(s->cwd, collect_ref, &ns);
    } else {
        if (s->url)
            mcp_template_refs(s->url, collect_ref, &ns);
        collect_pairs(s->headers, ": ", &ns);
        if (s->bearer_token)
            collect_value(s->bearer_token, &ns);
        if (s->bearer_token_env)
            collect_ref(s->bearer_token_env, false, &ns);
        /* a client key (and its passphrase) may be a secret's value */
        mcp_template_refs(json_get_string(s->raw, "clientKey"), collect_ref, &ns);
        mcp_template_refs(json_get_string(s->raw, "clientKeyPassphrase"), collect_ref, &ns);
    }
    for (size_t i = 0; optional && i < names->n; i++)
        if (!strv_contains(&ns.required, names->v[i]))
            push_once(optional, names->v[i], &ns.oom);
    strv_release(&ns.required);
    if (ns.oom) {
        strv_release(names);
        if (optional)
            strv_release(optional);
        if (commands)
            strv_release_secure(commands);
        return -ENOMEM;
    }
    return 0;
}

/* Under this name `secrets` answers the token pi-mcp-adapter stored for the entry
 * ("bearerTokenStore"): a name of its own, which no ${NAME} of an entry can ask for. */
#define STORE_NAME "_bearer_store"

static bool wants_store(const struct mcp_server *s)
{
    return s->bearer_token_store && s->transport != MCP_TRANSPORT_STDIO;
}

static bool oauth_applies(const struct cred_helper *h, const struct mcp_server *s)
{
    return cred_oauth_applies(s, h->oauth_found);
}

static unsigned needed_slots(struct cred_helper *h, const struct cred_query *q, bool has_names)
{
    const struct mcp_server *s = q->server;
    if ((q->reason == CRED_REASON_UNAUTHORIZED || q->reason == CRED_REASON_FORBIDDEN) &&
        !h->oauth_found && cred_oauth_use(s) == CRED_OAUTH_CHALLENGE &&
        cred_bearer_challenge(q->challenge)) {
        log_info(h->log,
                 "server '%s': it asks for an OAuth sign-in (a Bearer challenge): asking "
                 "mcp-auth",
                 s->name);
        h->oauth_found = true;
    }
    unsigned need = has_names ? 1u << SLOT_SECRETS : 0;
    if (oauth_applies(h, s))
        need |= 1u << SLOT_OAUTH;
    if (s->headers_helper && s->transport != MCP_TRANSPORT_STDIO)
        need |= 1u << SLOT_HELPER;
    return need;
}

/* When asking the slot's helper again can give something new (ms). `secrets` answers from its
 * own cache until expires_at: asking before it gives the same value. mcp-auth and a
 * headersHelper renew ahead of the expiry (mcp-auth at the same skew, counted in whole
 * seconds): a little after the skew point, so that theirs has passed too. */
static int64_t slot_refresh_at(const struct slot *s)
{
    if (s->kind == SLOT_SECRETS)
        return s->expires_at;
    int64_t at = s->expires_at - cred_skew_ms(s->expires_at - s->got_at) + 100;
    return at < s->expires_at ? at : s->expires_at;
}

/* Whether the slot's answer can serve a request of this reason without asking again. */
static bool slot_fresh(const struct cred_helper *h, const struct slot *s, enum cred_reason reason)
{
    if (!s->have || s->stale)
        return false;
    if (reason == CRED_REASON_UNAUTHORIZED || reason == CRED_REASON_FORBIDDEN)
        return false;
    if (!s->expires_at)
        return reason != CRED_REASON_RECONNECT;
    (void)h;
    return cred_now_ms() < slot_refresh_at(s);
}

/* ---- requests ----------------------------------------------------------------------------- */

static void req_free(struct cred_helper_req *q)
{
    list_remove(&q->node);
    loop_defer_cancel(&q->answer);
    free(q->message);
    free(q);
}

static void req_fail(struct cred_helper_req *q, int error, const char *message)
{
    if (q->error)
        return; /* the first failure is the one reported */
    q->error = error;
    q->message = strdup(message ? message : strerror(-error));
}

/* "Name: value" pairs of src into out, replacing those of the same name already there. */
static int merge_headers(struct strv *out, const struct strv *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const char *colon = strchr(src->v[i], ':');
        size_t n = colon ? (size_t)(colon - src->v[i]) + 1 : 0;
        for (size_t j = 0; n && j < out->n; j++) {
            if (strncasecmp(out->v[j], src->v[i], n) == 0) {
                secure_free(out->v[j]);
                memmove(&out->v[j], &out->v[j + 1], (out->n - j) * sizeof(char *));
                out->n--;
                j--;
            }
        }
        if (strv_push(out, src->v[i]) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* "Authorization: Bearer <value>" of bearerTokenEnv or bearerToken, when the entry has one. */
static int bearer_header(const struct mcp_server *s, const struct credentials *c, struct strv *out,
                         struct err *e)
{
    char *v = NULL;
    int r;
    if (s->bearer_token_env) {
        r = cred_lookup((void *)(uintptr_t)c, s->bearer_token_env, &v, e);
        if (r == -ENOENT)
            return err_set(e, r, "the bearer token variable '%s' has no value",
                           s->bearer_token_env);
    } else if (s->bearer_token) {
        r = mcp_value_expand(s->bearer_token, cred_lookup, (void *)(uintptr_t)c, &v, e);
        if (r < 0)
            err_prefix(e, "\"bearerToken\"");
    } else if (wants_store(s)) {
        r = cred_lookup((void *)(uintptr_t)c, STORE_NAME, &v, e);
        if (r == -ENOENT)
            return err_set(e, r,
                           "\"bearerTokenStore\": no token was read from pi-mcp-adapter's "
                           "store");
    } else {
        return 0;
    }
    if (r < 0)
        return r;
    const char *why = !*v || !b64token_valid(v, strlen(v))
                          ? "the bearer token is empty or not an RFC 6750 token (letters, digits "
                            "and -._~+/, then '=' only at the end)"
                          : NULL;
    if (why) {
        secure_free(v);
        return err_set(e, -EINVAL,
                       "header 'Authorization' is refused: %s; the server is not "
                       "connected",
                       why);
    }
    r = strv_pushf(out, "Authorization: Bearer %s", v);
    secure_free(v);
    return r < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
}

/* The entry's headers once expanded: a value that came with a CR or LF would add headers of
 * its own to the request (the load-time check saw only the environment, not `secrets`). */
static int check_header_values(const struct strv *headers, struct err *e)
{
    for (size_t i = 0; i < headers->n; i++) {
        const char *h = headers->v[i], *colon = strchr(h, ':');
        const char *v = colon ? colon + 1 + strspn(colon + 1, " ") : h;
        char name[256];
        int n = colon && colon - h < (ptrdiff_t)sizeof(name) &&
                        helper_header_name_valid(h, (size_t)(colon - h))
                    ? (int)(colon - h)
                    : 0;
        memcpy(name, h, (size_t)n);
        name[n] = '\0';
        const char *why = helper_header_refusal(name, v, strlen(v));
        if (why)
            return err_set(e, -EINVAL,
                           "\"headers\": header '%.*s' is refused after expanding variables: %s", n,
                           h, why);
    }
    return 0;
}

/* The answer of the slots q needed, put together; *ret_dpop the key of its Authorization
 * header's DPoP token (borrowed from the slot that gave that header), NULL. */
static int build_answer(struct cred_helper_req *q, struct strv *headers, int64_t *expires_at,
                        int64_t *refresh_at, struct dpop_key **ret_dpop, struct err *e)
{
    struct cred_helper *h = q->h;
    const struct mcp_server *s = q->srv;
    struct slot *sec = &h->slots[SLOT_SECRETS];
    struct credentials vars = {.vars = sec->have ? sec->vals.v : NULL};
    int64_t exp = 0, ref = 0;
    for (int k = 0; k < SLOT_N; k++) {
        struct slot *sl = &h->slots[k];
        if (!sl->have || !sl->expires_at || (k == SLOT_OAUTH && !oauth_applies(h, s)) ||
            (k == SLOT_HELPER && !s->headers_helper))
            continue;
        if (!exp || sl->expires_at < exp)
            exp = sl->expires_at;
        if (!ref || slot_refresh_at(sl) < ref)
            ref = slot_refresh_at(sl);
    }
    *expires_at = exp;
    *refresh_at = ref;
    if (s->transport == MCP_TRANSPORT_STDIO)
        return 0;
    int r = cred_expand_pairs(s->headers, ": ", cred_lookup, &vars, headers, e);
    if (r < 0)
        return err_prefix(e, "\"headers\"");
    r = check_header_values(headers, e);
    if (r < 0)
        return r;
    r = bearer_header(s, &vars, headers, e);
    *ret_dpop = NULL;
    if (r >= 0 && s->headers_helper && h->slots[SLOT_HELPER].have) {
        r = merge_headers(headers, &h->slots[SLOT_HELPER].vals);
        *ret_dpop = h->slots[SLOT_HELPER].dpop;
    }
    if (r >= 0 && oauth_applies(h, s) && h->slots[SLOT_OAUTH].have) {
        r = merge_headers(headers, &h->slots[SLOT_OAUTH].vals);
        *ret_dpop = h->slots[SLOT_OAUTH].dpop; /* its Authorization replaces the helper's */
    }
    if (r == -ENOMEM)
        return err_set(e, r, "out of memory");
    return r;
}

static void req_answer(void *userdata)
{
    struct cred_helper_req *q = userdata;
    struct strv headers = STRV_INIT;
    struct err e = ERR_INIT;
    int64_t exp = 0, ref = 0;
    struct dpop_key *dpop = NULL;
    int r = q->error;
    if (!r) {
        r = build_answer(q, &headers, &exp, &ref, &dpop, &e);
        if (r < 0)
            req_fail(q, r, err_msg(&e));
    }
    cred_done_fn done = q->done;
    void *ud = q->userdata;
    if (q->error) {
        char *m = q->message;
        q->message = NULL;
        int error = q->error;
        req_free(q);
        done(error, NULL, m, ud);
        free(m);
    } else {
        struct slot *sec = &q->h->slots[SLOT_SECRETS];
        struct credentials c = {
            .headers = headers.n ? headers.v : NULL,
            .vars = sec->have && sec->vals.n ? sec->vals.v : NULL,
            .expires_at = exp,
            .refresh_at = ref,
            .dpop = dpop,
        };
        dpop_key_ref(dpop); /* the slot's may go while done runs */
        req_free(q);
        done(0, &c, NULL, ud);
        dpop_key_unref(dpop);
    }
    strv_release_secure(&headers);
}

/* Answers q from the loop once no slot it needs is running. */
static void req_check(struct cred_helper_req *q)
{
    if (q->waiting)
        return;
    loop_defer_queue(q->h->loop, &q->answer, req_answer, q);
}

/* A slot's run is over: every request waiting on it goes on. */
void cred_helper_slot_settled(struct slot *s, int error, const char *message)
{
    struct cred_helper *h = s->h;
    unsigned bit = 1u << s->kind;
    if (s->again) {
        /* its answer predates what a waiting request needs: every waiting one gets the next */
        s->again = false;
        s->refresh = false;
        s->step_up = s->again_step_up;
        s->again_step_up = false;
        slot_start(s, s->srv); /* settles again by itself when it cannot start */
        return;
    }
    struct list_node *n, *next;
    list_for_each_safe (n, next, &h->reqs) {
        struct cred_helper_req *q = list_entry(n, struct cred_helper_req, node);
        if (!(q->waiting & bit))
            continue;
        q->waiting &= ~bit;
        if (error)
            req_fail(q, error, message);
        req_check(q);
    }
}

/* ---- the answers of the helpers --------------------------------------------------------------- */

static void slot_keep(struct slot *s, struct strv *vals, int64_t expires_at)
{
    s->stale = false;
    strv_release_secure(&s->vals);
    s->vals = *vals;
    *vals = (struct strv)STRV_INIT;
    s->have = true;
    s->got_at = cred_now_ms();
    s->expires_at = expires_at;
}

/* The failure of a run, in words: "<program> failed (exit status 3): <first line of stderr>". */
void cred_helper_run_failure(const struct slot *s, const struct cred_proc_result *res, char *buf,
                             size_t size)
{
    char line[400], how[64];
    cred_proc_first_line(res->err, res->err_len, line, sizeof(line));
    if (res->timed_out)
        snprintf(how, sizeof(how), "did not answer in time");
    else if (res->signal)
        snprintf(how, sizeof(how), "was killed by signal %d", res->signal);
    else
        snprintf(how, sizeof(how), "failed (exit status %d)", res->exit_code);
    snprintf(buf, size, "%s %s%s%s", cred_helper_slot_program(s->kind), how, line[0] ? ": " : "",
             line);
}

/* An answer's expires_at (Unix seconds, any positive int64) in milliseconds: a time past the
 * year 9999 counts as then, so that the product cannot overflow. */
static int64_t expires_ms(int64_t seconds)
{
    const int64_t max = INT64_C(253402300799); /* 9999-12-31T23:59:59Z */
    return (seconds > max ? max : seconds) * 1000;
}

/* What names the value whose command goes by name ("\"env\" value 'TOKEN'", "header 'X-Key'",
 * "\"bearerToken\""), into buf; "a \"!command\" value" when none does (the entry changed). */
static void command_key(const struct mcp_server *srv, const char *name, char *buf, size_t size)
{
    char nb[MCP_VALUE_COMMAND_NAME_BUF];
    bool stdio = srv->transport == MCP_TRANSPORT_STDIO;
    char *const *v = stdio ? srv->env : srv->headers;
    const char *sep = stdio ? "=" : ": ";
    snprintf(buf, size, "a \"!command\" value");
    for (size_t i = 0; v && v[i]; i++) {
        const char *at = strstr(v[i], sep), *cmd = at ? mcp_value_command(at + strlen(sep)) : NULL;
        if (cmd && strcmp(mcp_value_command_name(cmd, nb), name) == 0) {
            snprintf(buf, size, stdio ? "\"env\" value '%.*s'" : "header '%.*s'", (int)(at - v[i]),
                     v[i]);
            return;
        }
    }
    const char *cmd = !stdio ? mcp_value_command(srv->bearer_token) : NULL;
    if (cmd && strcmp(mcp_value_command_name(cmd, nb), name) == 0)
        snprintf(buf, size, "\"bearerToken\"");
}

/* A command of the entry's that gave no value: the key and the fix, never the command, its
 * output or its value (secrets' reason says only how it ended: it quotes nothing of a command
 * it was handed). */
static void command_failure(const struct mcp_server *srv, const char *name, const char *why,
                            char *msg, size_t size)
{
    char key[MSG_MAX / 2];
    command_key(srv, name, key, sizeof(key));
    /* secrets writes "'NAME': reason": the name means nothing to a person */
    size_t n = strlen(name);
    if (why[0] == '\'' && strncmp(why + 1, name, n) == 0 && strncmp(why + 1 + n, "': ", 3) == 0)
        why += n + 4;
    snprintf(msg, size,
             "%s: its command (the value starts with '!') gave no value: %s; run the command "
             "yourself to see why and fix it in the entry (write \"!!\" for a value that starts "
             "with a literal '!')",
             key, why);
}

/* A value a helper answered goes into the log's redaction, as those of the environment do
 * (cmd_common.c): a server that quotes its environment or a header on its stderr (logged at
 * -vv), or an error that quotes one, never prints it. A bearer token is also known alone. */
static void redact_answer(struct slot *s, const char *name, const char *value, size_t len)
{
    struct redact *r = log_redact(s->h->log);
    if (redact_add(r, name, value, len) < 0 || (len > 7 && strncasecmp(value, "Bearer ", 7) == 0 &&
                                                redact_add(r, name, value + 7, len - 7) < 0))
        log_debug(s->h->log, "cannot register the value of '%s' for redaction: out of memory",
                  name);
}

static int secrets_answer(struct slot *s, const struct cred_proc_result *res, char *msg,
                          size_t size)
{
    struct helper_secrets a = {0};
    struct err e = ERR_INIT;
    /* its exit status says nothing (1: some names failed), but one killed (at the timeout, or
     * by anything else) said only part of its answer, and past 1 it answered no name at all
     * (its stdout holds the --json error object, docs/json.md: its stderr says it better) */
    if (!res->out_len || res->signal || res->exit_code > 1) {
        cred_helper_run_failure(s, res, msg, size);
        return -EIO;
    }
    int r = helper_secrets_parse(res->out, res->out_len, &a, &e);
    if (r < 0) {
        snprintf(msg, size, "the answer of 'secrets resolve' is not usable: %s", err_msg(&e));
        return r;
    }
    struct strv vals = STRV_INIT, names = STRV_INIT, optional = STRV_INIT;
    int64_t exp = 0;
    bool any_stale = false;
    r = s->srv ? needed_names(s->srv, &names, &optional, NULL) : 0;
    strv_release(&names);
    for (size_t i = 0; i < a.n && r >= 0; i++) {
        const struct helper_secret *x = &a.v[i];
        /* unset, a ${NAME:-default} takes its default */
        if (x->error && strv_contains(&optional, x->name))
            continue;
        if (x->error && strcmp(x->name, STORE_NAME) == 0) {
            snprintf(msg, size, "\"bearerTokenStore\": %s", x->error);
            r = -ENOENT;
            break;
        }
        if (x->error && mcp_value_is_command_name(x->name)) {
            command_failure(s->srv, x->name, x->error, msg, size);
            r = -ENOENT;
            break;
        }
        if (x->error) {
            snprintf(msg, size, "%s", x->error);
            r = -ENOENT;
            break;
        }
        r = strv_pushf(&vals, "%s=%s", x->name, x->value);
        redact_answer(s, x->name, x->value, x->value_len);
        /* one that is stale as it comes (a recipe with a TTL of 0: never cached) serves this
         * connect, and is asked for again at the next: no timer asks every second */
        bool stale = x->expires_at > 0 && expires_ms(x->expires_at) <= cred_now_ms();
        any_stale |= stale;
        if (r >= 0 && x->expires_at > 0 && !stale && (!exp || expires_ms(x->expires_at) < exp))
            exp = expires_ms(x->expires_at);
    }
    helper_secrets_release(&a);
    strv_release(&optional);
    if (r == -ENOMEM)
        snprintf(msg, size, "out of memory");
    if (r >= 0) {
        slot_keep(s, &vals, exp);
        s->stale = any_stale;
    }
    strv_release_secure(&vals);
    return r;
}

int cred_helper_headers_answer(struct slot *s, const struct cred_proc_result *res, char *msg,
                               size_t size)
{
    struct helper_headers a = {0};
    struct err e = ERR_INIT;
    int r = helper_headers_parse(res->out, res->out_len, &a, &e);
    if (r < 0) {
        snprintf(msg, size, "the answer of %s is not usable: %s", cred_helper_slot_program(s->kind),
                 err_msg(&e));
        return r;
    }
    struct strv vals = STRV_INIT;
    for (size_t i = 0; i < a.n && r >= 0; i++) {
        r = strv_pushf(&vals, "%s: %s", a.v[i].name, a.v[i].value);
        redact_answer(s, a.v[i].name, a.v[i].value, a.v[i].value_len);
    }
    int64_t exp = a.expires_at > 0 ? expires_ms(a.expires_at) : 0;
    if (r < 0) {
        helper_headers_release(&a);
        strv_release_secure(&vals);
        snprintf(msg, size, "out of memory");
        return -ENOMEM;
    }
    slot_keep(s, &vals, exp);
    dpop_key_unref(s->dpop); /* the old key goes with the old token */
    s->dpop = a.dpop;
    a.dpop = NULL;
    helper_headers_release(&a);
    return 0;
}

/* ---- runs ------------------------------------------------------------------------------------ */

static void run_done(struct cred_proc *p, int error, const struct cred_proc_result *res,
                     void *userdata)
{
    struct slot *s = userdata;
    char msg[MSG_MAX * 2];
    (void)p;
    s->proc = NULL;
    if (error < 0) {
        snprintf(msg, sizeof(msg), "%s: %s", cred_helper_slot_program(s->kind),
                 error == -E2BIG ? "its answer is larger than 65536 bytes" : strerror(-error));
        cred_helper_slot_settled(s, error, msg);
        return;
    }
    if (s->kind == SLOT_OAUTH) {
        cred_helper_oauth_done(s, res);
        return;
    }
    int r;
    if (s->kind == SLOT_SECRETS) {
        r = secrets_answer(s, res, msg, sizeof(msg));
    } else if (res->exit_code != 0 || !res->out_len) {
        cred_helper_run_failure(s, res, msg, sizeof(msg));
        r = -EIO;
    } else {
        r = cred_helper_headers_answer(s, res, msg, sizeof(msg));
    }
    cred_helper_slot_settled(s, r < 0 ? r : 0, r < 0 ? msg : NULL);
}

int cred_helper_start(struct slot *s, const struct cred_proc_spec *spec, struct err *e)
{
    return cred_proc_start(s->h->loop, spec, run_done, s, &s->proc, e);
}

/* The request of `secrets resolve --json --stdin` up to its closing brace:
 * {"version":1,"commands":{NAME: command} (a secret: a command may hold one). */
static int commands_request(const struct strv *commands, struct buf *out)
{
    int r = buf_append_str(out, "{\"version\":1,\"commands\":{");
    for (size_t i = 0; r >= 0 && i < commands->n; i++) {
        const char *eq = strchr(commands->v[i], '=');
        if (i > 0)
            r = buf_append_char(out, ',');
        if (r >= 0)
            r = jsonw_string(out, commands->v[i], (size_t)(eq - commands->v[i]));
        if (r >= 0)
            r = buf_append_char(out, ':');
        if (r >= 0)
            r = jsonw_string(out, eq + 1, strlen(eq + 1));
    }
    return r >= 0 ? buf_append_char(out, '}') : r;
}

/* The "bearerStores" member of the request: the entry's name, and its URL expanded as the
 * adapter expands it when it binds a stored token (from the environment only). */
static int store_request(const struct mcp_server *srv, struct buf *out, struct err *e)
{
    char *url = NULL;
    int r = mcp_expand(srv->url, NULL, NULL, &url, e);
    if (r < 0)
        return err_prefix(e, "\"bearerTokenStore\": the entry's \"url\"");
    r = buf_append_str(out, ",\"bearerStores\":{\"" STORE_NAME "\":{\"server\":");
    if (r >= 0)
        r = jsonw_string(out, srv->name, strlen(srv->name));
    if (r >= 0)
        r = buf_append_str(out, ",\"url\":");
    if (r >= 0)
        r = jsonw_string(out, url, strlen(url));
    if (r >= 0)
        r = buf_append_str(out, "}}");
    secure_free(url);
    return r < 0 ? err_set(e, r, "out of memory") : 0;
}

/* The request of `secrets resolve --json --stdin`: the commands, and the token of
 * pi-mcp-adapter's store when the entry reads it. */
static int stdin_request(const struct mcp_server *srv, const struct strv *commands, struct buf *out,
                         struct err *e)
{
    int r = commands_request(commands, out);
    if (r == -E2BIG)
        return err_set(e, r,
                       "the \"!command\" values of the entry are longer than %d bytes together: "
                       "keep long commands in a script, or in `secrets` (a command recipe)",
                       CRED_PROC_STDIN_MAX);
    if (r < 0)
        return err_set(e, r, "out of memory");
    if (!wants_store(srv))
        return buf_append_str(out, "}\n") < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
    r = store_request(srv, out, e);
    if (r >= 0 && buf_append_str(out, "}\n") < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    return r;
}

static int secrets_run(struct slot *s, struct err *e)
{
    struct strv names = STRV_INIT, argv = STRV_INIT, commands = STRV_INIT;
    struct buf req;
    char *prog = NULL;
    buf_init_secret(&req, CRED_PROC_STDIN_MAX);
    int r = needed_names(s->srv, &names, NULL, &commands);
    if (r < 0)
        return err_set(e, r, "out of memory");
    bool with_stdin = commands.n > 0 || wants_store(s->srv);
    if (with_stdin) {
        r = stdin_request(s->srv, &commands, &req, e);
    }
    if (r >= 0)
        r = cred_path_find(HELPER_SECRETS, &prog, e);
    if (r >= 0) {
        r = strv_push(&argv, prog) < 0 || strv_push(&argv, "resolve") < 0 ||
                    strv_push(&argv, "--json") < 0 ||
                    (with_stdin && strv_push(&argv, "--stdin") < 0) || strv_push(&argv, "--") < 0
                ? -ENOMEM
                : 0;
        for (size_t i = 0; r >= 0 && i < names.n; i++)
            r = strv_push(&argv, names.v[i]);
        if (r < 0)
            r = err_set(e, -ENOMEM, "out of memory");
    }
    if (r >= 0) {
        struct cred_proc_spec spec = {
            .argv = (const char *const *)argv.v,
            .timeout_ms = s->h->helper_timeout_ms,
            .input = with_stdin ? buf_str(&req) : NULL,
            .input_len = req.len,
        };
        r = cred_helper_start(s, &spec, e);
    }
    free(prog);
    strv_release(&names);
    strv_release(&argv);
    strv_release_secure(&commands);
    buf_release(&req);
    return r;
}

static int headers_helper_run(struct slot *s, struct err *e)
{
    const char *cmd = s->srv->headers_helper;
    struct cred_proc_spec spec = {.timeout_ms = s->h->helper_timeout_ms};
    struct strv argv = STRV_INIT;
    int r;
    if (cmd[0] == '!') {
        spec.shell_command = cmd + 1 + strspn(cmd + 1, " \t");
        return cred_helper_start(s, &spec, e);
    }
    r = helper_cmdline_split(cmd, &argv, e);
    if (r < 0) {
        strv_release(&argv); /* the words before the problem */
        return err_prefix(e, "\"headersHelper\"");
    }
    spec.argv = (const char *const *)argv.v;
    r = cred_helper_start(s, &spec, e);
    strv_release(&argv);
    return r;
}

/* Starts the slot's run for srv (its failure to start settles it). */
static void slot_start(struct slot *s, const struct mcp_server *srv)
{
    struct err e = ERR_INIT;
    char msg[MSG_MAX * 2];
    int r;
    s->srv = srv;
    switch (s->kind) {
    case SLOT_SECRETS:
        r = secrets_run(s, &e);
        break;
    case SLOT_OAUTH:
        r = s->step_up ? cred_helper_oauth_run(s, OAUTH_STATUS, NULL, &e)
                       : cred_helper_oauth_run(s, OAUTH_HEADER, NULL, &e);
        break;
    default:
        r = headers_helper_run(s, &e);
        break;
    }
    if (r < 0) {
        snprintf(msg, sizeof(msg), "%s", err_msg(&e));
        /* from the loop: slot_settled answers the requests through their deferred calls */
        cred_helper_slot_settled(s, r == -ENOMEM ? r : -ENOENT, msg);
    }
}

/* ---- the provider ---------------------------------------------------------------------------- */

static int cred_helper_ask(struct cred_provider *p, const struct cred_query *query,
                           cred_done_fn done, void *userdata, struct cred_request **ret)
{
    struct cred_helper *h = (struct cred_helper *)(void *)p;
    struct strv names = STRV_INIT;
    struct strv commands = STRV_INIT;
    int r = needed_names(query->server, &names, NULL, &commands);
    if (r < 0)
        return r;
    bool has_names = names.n > 0 || commands.n > 0 || wants_store(query->server);
    strv_release(&names);
    strv_release_secure(&commands);

    struct cred_helper_req *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->r.provider = p;
    q->h = h;
    q->srv = query->server;
    q->reason = query->reason;
    q->done = done;
    q->userdata = userdata;
    list_add_tail(&h->reqs, &q->node);

    unsigned need = needed_slots(h, query, has_names);
    bool step_up = query->reason == CRED_REASON_FORBIDDEN;
    for (int k = 0; k < SLOT_N; k++) {
        struct slot *s = &h->slots[k];
        if (!(need & (1u << k)))
            continue;
        if (s->proc) {
            q->waiting |= 1u << k; /* the run under way answers this one too, unless: */
            /* a step-up is a sequence of its own (status, login, header): it follows the run.
             * A 401 takes the run's answer: the upstream asks again if it is the same. */
            if (k == SLOT_OAUTH && step_up && !s->step_up) {
                s->again = true;
                s->again_step_up = true;
                free(s->challenged);
                s->challenged = cred_helper_challenged_scopes(query->challenge);
            }
            continue;
        }
        if (slot_fresh(h, s, query->reason) && !(k == SLOT_OAUTH && step_up))
            continue;
        q->waiting |= 1u << k;
        s->refresh = k == SLOT_OAUTH && query->reason == CRED_REASON_UNAUTHORIZED;
        s->step_up = k == SLOT_OAUTH && step_up;
        if (s->step_up) {
            free(s->challenged);
            s->challenged = cred_helper_challenged_scopes(query->challenge);
        }
    }
    /* started after the request is in the list: a failure to start settles it from the loop */
    for (int k = 0; k < SLOT_N; k++)
        if ((q->waiting & (1u << k)) && !h->slots[k].proc)
            slot_start(&h->slots[k], query->server);
    if (step_up && !(need & (1u << SLOT_OAUTH)))
        req_fail(q, -EPERM,
                 "the server refused the request (403 insufficient_scope), and the entry does "
                 "not sign in with OAuth: widen the token's permissions where it comes from");
    req_check(q);
    *ret = &q->r;
    return 0;
}

static char *cred_helper_refused_hint(struct cred_provider *p, const struct mcp_server *srv,
                                      int error)
{
    struct cred_helper *h = (struct cred_helper *)(void *)p;
    char cmd[MSG_MAX], *m = NULL;
    int r = 0;
    if (!oauth_applies(h, srv))
        return NULL;
    cred_helper_signin_command(h, srv->name, cmd, sizeof(cmd));
    const struct slot *s = &h->slots[SLOT_OAUTH];
    if (error == -EPERM)
        r = asprintf(&m,
                     "the grant was widened to \"%s\" and the server still refuses: it asks for "
                     "more than this sign-in may have; '%s --scope \"...\"' asks for other "
                     "scopes",
                     s->scopes ? s->scopes : "", cmd);
    else
        r = asprintf(&m, "sign in again with '%s'", cmd);
    return r < 0 ? NULL : m;
}

static void cred_helper_cancel(struct cred_request *r)
{
    struct cred_helper_req *q = (struct cred_helper_req *)(void *)r;
    req_free(q); /* the runs go on: their answers are kept for the next request */
}

static void cred_helper_free(struct cred_provider *p)
{
    struct cred_helper *h = (struct cred_helper *)(void *)p;
    struct list_node *n;
    while ((n = list_first(&h->reqs)))
        req_free(list_entry(n, struct cred_helper_req, node));
    for (int k = 0; k < SLOT_N; k++) {
        cred_proc_cancel(h->slots[k].proc);
        strv_release_secure(&h->slots[k].vals);
        dpop_key_unref(h->slots[k].dpop);
        free(h->slots[k].challenged);
        free(h->slots[k].scopes);
    }
    free(h->config_path);
    free(h->auth_target);
    free(h->auth_message);
    free(h);
}

static const struct cred_provider_ops cred_helper_ops = {
    .name = "helpers",
    .ask = cred_helper_ask,
    .cancel = cred_helper_cancel,
    .refused_hint = cred_helper_refused_hint,
    .free = cred_helper_free,
};

static int dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

int cred_helper_new(const struct cred_helper_opts *o, struct cred_provider **ret)
{
    if (!o || !o->loop || !o->log || !ret)
        return -EINVAL;
    struct cred_helper *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->p.ops = &cred_helper_ops;
    h->loop = o->loop;
    h->log = o->log;
    h->auto_auth = o->auto_auth;
    h->helper_timeout_ms =
        o->helper_timeout_ms > 0 ? o->helper_timeout_ms : CRED_PROC_TIMEOUT_DEFAULT_MS;
    h->login_timeout_ms =
        o->login_timeout_ms > 0 ? o->login_timeout_ms : CRED_HELPER_LOGIN_TIMEOUT_DEFAULT_MS;
    list_init(&h->reqs);
    for (int k = 0; k < SLOT_N; k++) {
        h->slots[k].kind = (enum slot_kind)k;
        h->slots[k].h = h;
        h->slots[k].vals = (struct strv)STRV_INIT;
    }
    if (dup_opt(o->config_path, &h->config_path) < 0 ||
        dup_opt(o->auth_target, &h->auth_target) < 0 ||
        dup_opt(o->auth_required_message, &h->auth_message) < 0) {
        cred_helper_free(&h->p);
        return -ENOMEM;
    }
    *ret = &h->p;
    return 0;
}
