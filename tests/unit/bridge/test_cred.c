/* test_cred.c - the credentials provider interface and its default provider (the entry
 * itself), on a loop of their own.
 *
 * Covered: answers come from the loop, never from inside ask(); the ${VAR}s of a stdio entry's
 * env and of an HTTP entry's url and headers looked up once and handed back as variables, the
 * headers expanded; a missing variable named in the error with its field; the headers hook
 * asked with force only for UNAUTHORIZED, its error passed on; cancelling before the answer
 * and while the hook asks; cred_lookup, cred_copy/release, headers_equal, the
 * skew. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/secmem.h"

#include "creds/cred.h"
#include "core/loop.h"
#include "tests.h"

struct answer {
    bool done;
    int error;
    char message[256];
    struct credentials c;
};

static void on_done(int error, const struct credentials *c, const char *message, void *userdata)
{
    struct answer *a = userdata;
    a->done = true;
    a->error = error;
    snprintf(a->message, sizeof(a->message), "%s", message ? message : "");
    if (c)
        CHECK_INT(cred_copy(&a->c, c), 0);
}

static int lookups;

static int lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata, (void)e;
    lookups++;
    const char *v = strcmp(name, "TOKEN") == 0  ? "t0k"
                    : strcmp(name, "HOST") == 0 ? "h.test"
                                                : NULL;
    if (!v)
        return -ENOENT;
    *ret = strdup(v);
    return *ret ? 0 : -ENOMEM;
}

static char *empty_v[] = {NULL};

static struct mcp_server entry(enum mcp_transport t, char **env, char **headers)
{
    struct mcp_server s = {
        .name = "x",
        .source = "test",
        .transport = t,
        .command = "true",
        .url = "https://${HOST}/mcp",
        .args = empty_v,
        .env = env ? env : empty_v,
        .headers = headers ? headers : empty_v,
    };
    return s;
}

static void run(struct loop *l)
{
    CHECK_INT(loop_run(l), 0);
}

static const char *var_of(const struct credentials *c, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; c->vars && c->vars[i]; i++)
        if (strncmp(c->vars[i], name, n) == 0 && c->vars[i][n] == '=')
            return c->vars[i] + n + 1;
    return NULL;
}

static void test_entry_stdio(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct cred_provider *p = NULL;
    struct cred_entry_opts o = {.loop = l, .lookup = lookup};
    CHECK_INT(cred_entry_new(&o, &p), 0);
    char *env[] = {"A=${TOKEN}", "B=x${TOKEN}y", NULL};
    struct mcp_server s = entry(MCP_TRANSPORT_STDIO, env, NULL);
    struct cred_query q = {.server = &s, .reason = CRED_REASON_CONNECT};
    struct answer a = {0};
    struct cred_request *r = NULL;
    lookups = 0;
    CHECK_INT(cred_ask(p, &q, on_done, &a, &r), 0);
    CHECK(!a.done); /* from the loop, never from inside ask() */
    CHECK_INT(lookups, 0);
    run(l);
    CHECK(a.done);
    CHECK_INT(a.error, 0);
    CHECK_STR(var_of(&a.c, "TOKEN"), "t0k");
    CHECK(a.c.vars && a.c.vars[1] == NULL); /* once, however often it is used */
    CHECK(!a.c.headers || !a.c.headers[0]); /* stdio: none */
    CHECK(a.c.expires_at == 0);

    char *v = NULL;
    CHECK_INT(cred_lookup(&a.c, "TOKEN", &v, NULL), 0);
    CHECK_STR(v, "t0k");
    secure_free(v);
    CHECK_INT(cred_lookup(&a.c, "TOK", &v, NULL), -ENOENT);
    cred_release(&a.c);

    /* a missing variable: named, with its field */
    char *bad[] = {"A=${NOPE}", NULL};
    s.env = bad;
    struct answer b = {0};
    CHECK_INT(cred_ask(p, &q, on_done, &b, &r), 0);
    run(l);
    CHECK_INT(b.error, -ENOENT);
    CHECK_STR(b.message, "env: 'A': variable 'NOPE' is not set");
    cred_provider_free(p);
    loop_free(l);
}

static void test_entry_http(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct cred_provider *p = NULL;
    struct cred_entry_opts o = {.loop = l, .lookup = lookup};
    CHECK_INT(cred_entry_new(&o, &p), 0);
    char *headers[] = {"Authorization: Bearer ${TOKEN}", "X-Plain: yes", NULL};
    struct mcp_server s = entry(MCP_TRANSPORT_HTTP, NULL, headers);
    struct cred_query q = {.server = &s, .reason = CRED_REASON_RECONNECT};
    struct answer a = {0};
    struct cred_request *r = NULL;
    CHECK_INT(cred_ask(p, &q, on_done, &a, &r), 0);
    run(l);
    CHECK_INT(a.error, 0);
    CHECK_STR(a.c.headers[0], "Authorization: Bearer t0k");
    CHECK_STR(a.c.headers[1], "X-Plain: yes");
    CHECK(a.c.headers[2] == NULL);
    CHECK_STR(var_of(&a.c, "HOST"), "h.test");
    CHECK_STR(var_of(&a.c, "TOKEN"), "t0k");

    char *same[] = {"Authorization: Bearer t0k", "X-Plain: yes", NULL};
    char *other[] = {"Authorization: Bearer t0k", NULL};
    CHECK(cred_headers_equal(a.c.headers, same));
    CHECK(!cred_headers_equal(a.c.headers, other));
    CHECK(cred_headers_equal(NULL, empty_v));
    cred_release(&a.c);
    CHECK(a.c.headers == NULL && a.c.vars == NULL);

    s.url = "https://${NOHOST}/mcp";
    struct answer b = {0};
    CHECK_INT(cred_ask(p, &q, on_done, &b, &r), 0);
    run(l);
    CHECK_INT(b.error, -ENOENT);
    CHECK_STR(b.message, "url: variable 'NOHOST' is not set");

    /* cancelled before the answer: no callback */
    s.url = "https://${HOST}/mcp";
    struct answer c = {0};
    CHECK_INT(cred_ask(p, &q, on_done, &c, &r), 0);
    cred_cancel(r);
    run(l);
    CHECK(!c.done);
    cred_provider_free(p);
    loop_free(l);
}

struct hook {
    struct loop *loop;
    struct loop_timer *t;
    int calls, forced;
    int fail;
    cred_headers_done_fn done;
    void *done_ud;
    bool force;
    struct cred_request **cancel; /* cancelled from inside the hook's start */
};

static void hook_fire(struct loop_timer *t, void *userdata)
{
    struct hook *h = userdata;
    (void)t;
    const char *plain[] = {"X-Test: plain", NULL}, *forced[] = {"X-Test: forced", NULL};
    if (h->fail)
        h->done(h->done_ud, h->fail, NULL, "the hook says no");
    else
        h->done(h->done_ud, 0, h->force ? forced : plain, NULL);
}

static int hook_fn(void *userdata, const struct mcp_server *server, bool force,
                   cred_headers_done_fn done, void *done_ud)
{
    struct hook *h = userdata;
    (void)server;
    h->calls++;
    h->forced += force;
    h->force = force;
    h->done = done;
    h->done_ud = done_ud;
    if (h->cancel) {
        cred_cancel(*h->cancel);
        h->cancel = NULL;
    }
    if (h->t) {
        loop_timer_rearm(h->t, 0);
        return 0;
    }
    return loop_timer_add(h->loop, 0, hook_fire, h, &h->t);
}

static void test_entry_hook(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct hook h = {.loop = l};
    struct cred_provider *p = NULL;
    struct cred_entry_opts o = {
        .loop = l, .lookup = lookup, .headers_fn = hook_fn, .headers_userdata = &h};
    CHECK_INT(cred_entry_new(&o, &p), 0);
    char *headers[] = {"Authorization: Bearer ${TOKEN}", NULL}; /* the hook's replace them */
    struct mcp_server s = entry(MCP_TRANSPORT_HTTP, NULL, headers);
    struct cred_query q = {.server = &s, .reason = CRED_REASON_CONNECT};
    struct answer a = {0}, b = {0}, c = {0}, d = {0};
    struct cred_request *r = NULL;
    CHECK_INT(cred_ask(p, &q, on_done, &a, &r), 0);
    run(l);
    CHECK_INT(a.error, 0);
    CHECK_STR(a.c.headers[0], "X-Test: plain");
    CHECK(a.c.headers[1] == NULL);
    CHECK_STR(var_of(&a.c, "HOST"), "h.test");
    CHECK_INT(h.forced, 0);

    q.reason = CRED_REASON_UNAUTHORIZED;
    CHECK_INT(cred_ask(p, &q, on_done, &b, &r), 0);
    run(l);
    CHECK_STR(b.c.headers[0], "X-Test: forced");
    CHECK_INT(h.forced, 1);

    h.fail = -EIO;
    CHECK_INT(cred_ask(p, &q, on_done, &c, &r), 0);
    run(l);
    CHECK_INT(c.error, -EIO);
    CHECK_STR(c.message, "the hook says no");

    /* cancelled while the hook asks: its answer is dropped */
    h.fail = 0;
    CHECK_INT(cred_ask(p, &q, on_done, &d, &r), 0);
    h.cancel = &r;
    run(l);
    CHECK(!d.done);
    CHECK_INT(h.calls, 4);

    cred_release(&a.c);
    cred_release(&b.c);
    loop_timer_cancel(h.t);
    cred_provider_free(p);
    loop_free(l);
}

static void test_skew(void)
{
    CHECK(cred_skew_ms(8 * 3600 * 1000) == CRED_SKEW_MAX_MS);
    CHECK(cred_skew_ms(40 * 1000) == 10 * 1000);
    CHECK(cred_skew_ms(3000) == CRED_SKEW_MIN_MS);
    CHECK(cred_skew_ms(-5) == CRED_SKEW_MIN_MS);
    CHECK_STR(cred_reason_name(CRED_REASON_EXPIRING), "expiring");
}

/* A 403 is a step-up only when its Bearer challenge says insufficient_scope. */
static void test_insufficient_scope(void)
{
    CHECK(cred_insufficient_scope("Bearer error=\"insufficient_scope\", scope=\"files:write\""));
    CHECK(cred_insufficient_scope(
        "Basic realm=\"x\", bearer error=insufficient_scope, scope=\"a b\""));
    CHECK(!cred_insufficient_scope("Bearer error=\"invalid_token\""));
    CHECK(!cred_insufficient_scope("Basic error=\"insufficient_scope\""));
    CHECK(!cred_insufficient_scope("Bearer error=\"insufficient_scope"));
    CHECK(!cred_insufficient_scope(""));
    CHECK(!cred_insufficient_scope(NULL));
    CHECK_STR(cred_reason_name(CRED_REASON_FORBIDDEN), "forbidden");
}

TESTS_MAIN(test_entry_stdio, test_entry_http, test_entry_hook, test_skew, test_insufficient_scope)
