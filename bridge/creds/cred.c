/* cred.c - the provider interface of cred.h, and the default provider: the
 * entry's own headers and ${VAR}s, looked up when asked and answered from the loop. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "credkit/challenge.h"
#include "credkit/dpop.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "creds/cred.h"

const char *cred_reason_name(enum cred_reason reason)
{
    switch (reason) {
    case CRED_REASON_CONNECT:
        return "connect";
    case CRED_REASON_RECONNECT:
        return "reconnect";
    case CRED_REASON_UNAUTHORIZED:
        return "unauthorized";
    case CRED_REASON_EXPIRING:
        return "expiring";
    case CRED_REASON_FORBIDDEN:
        return "forbidden";
    }
    return "unknown";
}

int cred_ask(struct cred_provider *p, const struct cred_query *q, cred_done_fn done, void *userdata,
             struct cred_request **ret)
{
    if (!p || !q || !q->server || !done || !ret)
        return -EINVAL;
    return p->ops->ask(p, q, done, userdata, ret);
}

void cred_cancel(struct cred_request *r)
{
    if (r)
        r->provider->ops->cancel(r);
}

char *cred_refused_hint(struct cred_provider *p, const struct mcp_server *srv, int error)
{
    return p && p->ops->refused_hint ? p->ops->refused_hint(p, srv, error) : NULL;
}

void cred_provider_free(struct cred_provider *p)
{
    if (p)
        p->ops->free(p);
}

/* ---- answers ---------------------------------------------------------------------------- */

static int strv_copy(char ***dst, char *const *src)
{
    struct strv sv = STRV_INIT;
    for (size_t i = 0; src && src[i]; i++) {
        if (strv_push(&sv, src[i]) < 0) {
            strv_release_secure(&sv);
            return -ENOMEM;
        }
    }
    if (!src) {
        *dst = NULL;
        return 0;
    }
    *dst = strv_detach(&sv);
    if (!*dst) {
        strv_release_secure(&sv);
        return -ENOMEM;
    }
    return 0;
}

int cred_copy(struct credentials *dst, const struct credentials *src)
{
    struct credentials c = {.expires_at = src->expires_at,
                            .refresh_at = src->refresh_at,
                            .dpop = dpop_key_ref(src->dpop)};
    if (strv_copy(&c.headers, src->headers) < 0 || strv_copy(&c.vars, src->vars) < 0) {
        cred_release(&c);
        return -ENOMEM;
    }
    cred_release(dst);
    *dst = c;
    return 0;
}

void cred_release(struct credentials *c)
{
    strv_free_secure(c->headers);
    strv_free_secure(c->vars);
    c->headers = c->vars = NULL;
    dpop_key_unref(c->dpop);
    c->dpop = NULL;
    c->expires_at = 0;
    c->refresh_at = 0;
}

bool cred_headers_equal(char *const *a, char *const *b)
{
    size_t n = strv_length(a);
    if (n != strv_length(b))
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

int cred_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    const struct credentials *c = userdata;
    /* ${env:NAME}: the environment, never a secret; ${input:ID}: the secret ID */
    if (strncmp(name, MCP_TEMPLATE_ENV, strlen(MCP_TEMPLATE_ENV)) == 0)
        return mcp_lookup_env(NULL, name, ret, e);
    char secret[MCP_TEMPLATE_SECRET_BUF];
    name = mcp_template_secret_name(name, secret);
    if (!name)
        return -ENOENT;
    size_t n = strlen(name);
    for (size_t i = 0; c && c->vars && c->vars[i]; i++) {
        if (strncmp(c->vars[i], name, n) == 0 && c->vars[i][n] == '=') {
            char *v = strdup(c->vars[i] + n + 1);
            if (!v)
                return err_set(e, -ENOMEM, "out of memory");
            *ret = v;
            return 0;
        }
    }
    return -ENOENT;
}

/* Expands "NAME<sep>template" into "NAME<sep>value" (the value in any of the adapter's forms:
 * mcp_value_expand()). */
static int expand_pair(const char *pair, const char *sep, mcp_lookup_fn lookup, void *userdata,
                       char **ret, struct err *e)
{
    const char *at = strstr(pair, sep);
    char *val = NULL;
    if (!at)
        return err_set(e, -EINVAL, "an entry is not of the form NAME%svalue", sep);
    size_t nlen = (size_t)(at - pair) + strlen(sep);
    int r = mcp_value_expand(at + strlen(sep), lookup, userdata, &val, e);
    if (r < 0) {
        err_prefix(e, "'%.*s'", (int)(at - pair), pair);
        return r;
    }
    size_t vlen = strlen(val);
    char *s = malloc(nlen + vlen + 1);
    if (!s) {
        secure_free(val);
        return -ENOMEM;
    }
    memcpy(s, pair, nlen);
    memcpy(s + nlen, val, vlen + 1);
    secure_free(val);
    *ret = s;
    return 0;
}

int cred_expand_pairs(char *const *v, const char *sep, mcp_lookup_fn lookup, void *userdata,
                      struct strv *out, struct err *e)
{
    for (size_t i = 0; v && v[i]; i++) {
        char *s = NULL;
        int r = expand_pair(v[i], sep, lookup, userdata, &s, e);
        if (r >= 0)
            r = strv_push_take(out, s);
        if (r < 0)
            return r;
    }
    return 0;
}

int64_t cred_skew_ms(int64_t lifetime_ms)
{
    int64_t skew = lifetime_ms / 4;
    if (skew > CRED_SKEW_MAX_MS)
        skew = CRED_SKEW_MAX_MS;
    return skew < CRED_SKEW_MIN_MS ? CRED_SKEW_MIN_MS : skew;
}

int64_t cred_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the default provider: the entry itself --------------------------------------------- */

struct entry_provider {
    struct cred_provider p;
    struct cred_entry_opts o;
};

enum entry_req_state {
    REQ_QUEUED,    /* its timer will answer */
    REQ_HOOK,      /* the headers hook is asking */
    REQ_ABANDONED, /* cancelled while the hook asks: freed when it answers */
};

struct entry_req {
    struct cred_request r;
    struct entry_provider *ep;
    const struct mcp_server *srv;
    enum cred_reason reason;
    cred_done_fn done;
    void *userdata;
    struct loop_timer *timer;
    enum entry_req_state state;
};

static int env_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata;
    const char *v = getenv(name);
    if (!v)
        return -ENOENT;
    char *c = strdup(v);
    if (!c)
        return err_set(e, -ENOMEM, "out of memory");
    *ret = c;
    return 0;
}

/* A lookup that keeps every value it finds, for the answer's vars. */
struct recorder {
    mcp_lookup_fn lookup;
    void *userdata;
    struct strv *vars;
};

static int record_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    struct recorder *rec = userdata;
    char *v = NULL;
    int r = rec->lookup(rec->userdata, name, &v, e);
    if (r < 0)
        return r;
    size_t n = strlen(name);
    for (size_t i = 0; i < rec->vars->n; i++)
        if (strncmp(rec->vars->v[i], name, n) == 0 && rec->vars->v[i][n] == '=')
            goto out;
    r = strv_pushf(rec->vars, "%s=%s", name, v);
    if (r < 0) {
        secure_free(v);
        return err_set(e, -ENOMEM, "out of memory");
    }
out:
    *ret = v;
    return 0;
}

/* The values of the ${VAR}s of the entry's url or env, and its headers expanded unless the
 * hook gave them. */
static int entry_collect(struct entry_req *q, bool with_headers, struct strv *headers,
                         struct strv *vars, struct err *e)
{
    const struct mcp_server *s = q->srv;
    struct recorder rec = {
        .lookup = q->ep->o.lookup ? q->ep->o.lookup : env_lookup,
        .userdata = q->ep->o.lookup ? q->ep->o.lookup_userdata : NULL,
        .vars = vars,
    };
    char *tmp = NULL;
    int r;
    if (s->transport == MCP_TRANSPORT_STDIO) {
        struct strv env = STRV_INIT;
        r = cred_expand_pairs(s->env, "=", record_lookup, &rec, &env, e);
        strv_release_secure(&env);
        if (r < 0)
            err_prefix(e, "env");
        return r;
    }
    r = mcp_expand(s->url, record_lookup, &rec, &tmp, e);
    secure_free(tmp);
    if (r < 0) {
        err_prefix(e, "url");
        return r;
    }
    if (!with_headers)
        return 0;
    r = cred_expand_pairs(s->headers, ": ", record_lookup, &rec, headers, e);
    if (r < 0)
        err_prefix(e, "headers");
    return r;
}

static void entry_req_free(struct entry_req *q)
{
    loop_timer_cancel(q->timer);
    free(q);
}

/* Answers q (hook_headers: what the hook gave, else the entry's) and frees it. */
static void entry_answer(struct entry_req *q, const char *const *hook_headers)
{
    struct strv headers = STRV_INIT, vars = STRV_INIT;
    struct err e = ERR_INIT;
    int r = entry_collect(q, !hook_headers, &headers, &vars, &e);
    if (r < 0) {
        q->done(r, NULL, e.msg[0] ? e.msg : strerror(-r), q->userdata);
    } else {
        struct credentials c = {
            .headers = hook_headers ? (char **)(uintptr_t)hook_headers : headers.v,
            .vars = vars.v,
        };
        q->done(0, &c, NULL, q->userdata);
    }
    strv_release_secure(&headers);
    strv_release_secure(&vars);
    entry_req_free(q);
}

static void hook_done(void *done_ud, int error, const char *const *headers, const char *message)
{
    struct entry_req *q = done_ud;
    if (q->state == REQ_ABANDONED) {
        entry_req_free(q);
        return;
    }
    if (error < 0) {
        q->done(error, NULL, message ? message : strerror(-error), q->userdata);
        entry_req_free(q);
        return;
    }
    static const char *const none[] = {NULL};
    entry_answer(q, headers ? headers : none);
}

static void entry_fired(struct loop_timer *t, void *userdata)
{
    struct entry_req *q = userdata;
    const struct cred_entry_opts *o = &q->ep->o;
    (void)t;
    loop_timer_cancel(q->timer); /* done with it: a hook may answer after the loop is gone */
    q->timer = NULL;
    if (!o->headers_fn || q->srv->transport == MCP_TRANSPORT_STDIO) {
        entry_answer(q, NULL);
        return;
    }
    q->state = REQ_HOOK;
    int r = o->headers_fn(o->headers_userdata, q->srv, q->reason == CRED_REASON_UNAUTHORIZED,
                          hook_done, q);
    if (r < 0) {
        char m[160];
        snprintf(m, sizeof(m), "cannot get the request headers: %s", strerror(-r));
        q->done(r, NULL, m, q->userdata);
        entry_req_free(q);
    }
}

static int entry_ask(struct cred_provider *p, const struct cred_query *query, cred_done_fn done,
                     void *userdata, struct cred_request **ret)
{
    struct entry_provider *ep = (struct entry_provider *)(void *)p;
    struct entry_req *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->r.provider = p;
    q->ep = ep;
    q->srv = query->server;
    q->reason = query->reason; /* the entry has nothing to do with a challenge */
    q->done = done;
    q->userdata = userdata;
    int r = loop_timer_add(ep->o.loop, 0, entry_fired, q, &q->timer);
    if (r < 0) {
        free(q);
        return r;
    }
    *ret = &q->r;
    return 0;
}

static void entry_cancel(struct cred_request *r)
{
    struct entry_req *q = (struct entry_req *)(void *)r;
    if (q->state == REQ_HOOK) {
        q->state = REQ_ABANDONED; /* the hook answers it, whenever it does */
        return;
    }
    entry_req_free(q);
}

static void entry_free(struct cred_provider *p)
{
    free(p);
}

static const struct cred_provider_ops entry_ops = {
    .name = "entry",
    .ask = entry_ask,
    .cancel = entry_cancel,
    .free = entry_free,
};

int cred_entry_new(const struct cred_entry_opts *opts, struct cred_provider **ret)
{
    if (!opts || !opts->loop || !ret)
        return -EINVAL;
    struct entry_provider *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return -ENOMEM;
    ep->p.ops = &entry_ops;
    ep->o = *opts;
    *ret = &ep->p;
    return 0;
}

bool cred_insufficient_scope(const char *challenge)
{
    struct auth_challenges list = {0};
    if (!challenge || challenges_parse(challenge, &list, NULL) <= 0)
        return false;
    const struct auth_challenge *c = challenges_find(&list, "Bearer");
    if (!c) /* a DPoP token's server challenges with its own scheme (RFC 9449 7.1) */
        c = challenges_find(&list, "DPoP");
    const char *v = c ? challenge_param(c, "error") : NULL;
    bool yes = v && strcmp(v, "insufficient_scope") == 0;
    challenges_release(&list);
    return yes;
}

bool cred_bearer_challenge(const char *challenge)
{
    struct auth_challenges list = {0};
    if (!challenge || challenges_parse(challenge, &list, NULL) <= 0)
        return false;
    /* a DPoP challenge (RFC 9449 7.1) asks for an OAuth token too */
    bool found = challenges_find(&list, "Bearer") || challenges_find(&list, "DPoP");
    challenges_release(&list);
    return found;
}

enum cred_oauth_use cred_oauth_use(const struct mcp_server *s)
{
    if (s->transport == MCP_TRANSPORT_STDIO || !s->url)
        return CRED_OAUTH_NEVER;
    switch (s->auth) {
    case MCP_AUTH_OAUTH:
        return CRED_OAUTH_ALWAYS;
    case MCP_AUTH_NONE:
        /* a sign-in found by a challenge must not silently replace the entry's own */
        if (s->headers_helper || mcp_server_sets_header(s, "Authorization"))
            return CRED_OAUTH_NEVER;
        return CRED_OAUTH_CHALLENGE;
    case MCP_AUTH_BEARER:
    case MCP_AUTH_DISABLED:
        break;
    }
    return CRED_OAUTH_NEVER;
}

bool cred_oauth_applies(const struct mcp_server *s, bool challenged)
{
    enum cred_oauth_use use = cred_oauth_use(s);
    return use == CRED_OAUTH_ALWAYS || (use == CRED_OAUTH_CHALLENGE && challenged);
}

const char *cred_oauth_account(const struct mcp_server *s)
{
    /* "oauth.account", or "account" at the top of the entry (mcp-auth refuses the two when
     * they differ) */
    const char *a = json_get_string(json_get_object(s->raw, "oauth"), "account");
    if (!a || !*a)
        a = json_get_string(s->raw, "account");
    return a && *a ? a : NULL;
}
