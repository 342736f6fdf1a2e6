/* test_upstream_life.c - an upstream's life against the scripted server (upstream_fixture.h):
 * a server exiting mid-call (-ECONNRESET, reconnect by itself, and at once for a call made in
 * BACKOFF), backoff growth, server requests through on_request and upstream_respond (and
 * -32601 without a handler), pings answered, notifications passed on, pagination (3 pages, a
 * cursor that never ends, -32601), ${VAR} in env (expanded and missing), a command that does
 * not exist, close reaping the child, free from inside callbacks. */
#include "upstream_fixture.h"

static void test_exit_mid_call(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ex", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t first = call_pid(&r);

    struct res s, e;
    call_tool(u, "slow", NULL, NULL, 0, &s);
    call_tool(u, "exit", NULL, NULL, 0, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(e.error, -ECONNRESET);
    CHECK_INT(s.error, -ECONNRESET);
    CHECK_STR(e.message, "server 'ex': the connection was lost before 'tools/call' was "
                         "answered: the server exited with status 0");
    CHECK(state_count(&r, UPSTREAM_BACKOFF) == 1);

    /* reconnects by itself after the first backoff step */
    CHECK(wait_state(&r, UPSTREAM_READY, 2, 10000));
    int b = -1;
    for (int i = 0; i < r.nstates; i++)
        if (r.states[i] == UPSTREAM_BACKOFF)
            b = i;
    CHECK(b >= 0 && b + 1 < r.nstates && r.states[b + 1] == UPSTREAM_CONNECTING);
    if (b >= 0 && b + 1 < r.nstates) {
        int64_t delay = r.at[b + 1] - r.at[b];
        CHECK(delay >= UPSTREAM_BACKOFF_INITIAL_MS);
        CHECK(delay <= UPSTREAM_BACKOFF_INITIAL_MS * 5 / 4 + 20);
    }
    CHECK_INT(upstream_generation(u), 2);
    pid_t second = call_pid(&r);
    CHECK(second > 0 && second != first);

    /* again; now a call made in BACKOFF connects at once (the backoff is 1 s by now) */
    struct res e2, ok;
    call_tool(u, "exit", NULL, NULL, 0, &e2);
    CHECK(wait_res(r.loop, &e2, 5000));
    CHECK_INT(e2.error, -ECONNRESET);
    CHECK_INT(upstream_state(u), UPSTREAM_BACKOFF);
    int64_t t_call = loop_now(r.loop);
    call_tool(u, "echo", "{\"text\":\"back\"}", NULL, 5000, &ok);
    CHECK(wait_res(r.loop, &ok, 5000));
    CHECK_INT(ok.error, 0);
    CHECK_STR(ok.text, "back");
    CHECK(ok.at - t_call < 900); /* well before the 1 s backoff */
    CHECK_INT(upstream_generation(u), 3);
    int c = r.nstates - 2;
    CHECK_INT(r.states[c], UPSTREAM_CONNECTING);
    CHECK(r.at[c] - t_call < 300);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    CHECK(pid_gone(&first));
    CHECK(pid_gone(&second));
    res_release(&s);
    res_release(&e);
    res_release(&e2);
    res_release(&ok);
    rec_release(&r);
}

static void test_backoff_growth(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "dies", "dies", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 4, 20000));
    int64_t delays[3];
    int nd = 0;
    for (int i = 0; i + 1 < r.nstates && nd < 3; i++) {
        if (r.states[i] != UPSTREAM_BACKOFF)
            continue;
        CHECK_INT(r.states[i + 1], UPSTREAM_CONNECTING);
        CHECK_INT(r.errors[i], -ECONNRESET);
        CHECK_CONTAINS(r.msgs[i], "server 'dies'");
        delays[nd++] = r.at[i + 1] - r.at[i];
    }
    CHECK_INT(nd, 3);
    for (int i = 0; i < nd; i++) {
        int64_t base = (int64_t)UPSTREAM_BACKOFF_INITIAL_MS << i;
        if (delays[i] < base || delays[i] > base * 5 / 4 + 20)
            fprintf(stderr, "backoff step %d: %lld ms\n", i, (long long)delays[i]);
        CHECK(delays[i] >= base);
        CHECK(delays[i] <= base * 5 / 4 + 20);
    }
    CHECK_CONTAINS(upstream_last_error(u), "server 'dies'");
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

static void test_server_requests(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "req", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    /* sampling/createMessage goes to on_request; the answer for another generation is dropped */
    struct res s;
    call_tool(u, "sample", NULL, NULL, 5000, &s);
    struct json_object **req = &r.request;
    CHECK(wait_for(r.loop, request_seen, &r, 5000));
    CHECK_STR(json_get_string(*req, "method"), "sampling/createMessage");
    CHECK_INT(r.request_gen, upstream_generation(u));
    struct json_object *id = NULL;
    CHECK(json_object_object_get_ex(*req, "id", &id));
    struct json_object *stale = json_tokener_parse("{\"model\":\"stale\"}");
    struct json_object *real =
        json_tokener_parse("{\"model\":\"real-model\",\"role\":\"assistant\",\"content\":{\"type\":"
                           "\"text\",\"text\":\"x\"}}");
    CHECK_INT(upstream_respond(u, r.request_gen + 1, id, stale, NULL), 0);
    CHECK_INT(upstream_respond(u, r.request_gen, id, NULL, NULL), -EINVAL);
    CHECK_INT(upstream_respond(u, r.request_gen, id, real, NULL), 0);
    json_object_put(stale);
    json_object_put(real);
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(s.error, 0);
    CHECK_CONTAINS(s.text, "real-model");
    CHECK_CONTAINS(s.text, "\"id\":\"srv-sample\"");
    CHECK(strstr(s.text ? s.text : "", "stale") == NULL);

    /* the server pings us: answered by the upstream */
    struct res p;
    json_object_put(r.request);
    r.request = NULL;
    call_tool(u, "ping_client", NULL, NULL, 5000, &p);
    CHECK(wait_res(r.loop, &p, 5000));
    CHECK_INT(p.error, 0);
    CHECK_CONTAINS(p.text, "\"id\":\"srv-ping\"");
    CHECK_CONTAINS(p.text, "\"result\":{}");
    CHECK(r.request == NULL); /* not passed on */

    /* notifications are passed on, before the answer that followed them */
    struct res n;
    call_tool(u, "notify", NULL, NULL, 5000, &n);
    CHECK(wait_res(r.loop, &n, 5000));
    CHECK_INT(r.nnotes, 2);
    CHECK_STR(r.notes[0], "notifications/message");
    CHECK_STR(r.notes[1], "notifications/tools/list_changed");
    CHECK(r.note_seq[1] < n.seq);

    /* upstream_notify: sent when READY */
    CHECK_INT(upstream_notify(u, "notifications/roots/list_changed", NULL), 0);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    res_release(&p);
    res_release(&n);
    rec_release(&r);

    /* without on_request: -32601 */
    r = (struct rec){0};
    r.loop = new_loop();
    struct upstream_handler bare = {.on_state = on_state, .on_stderr = on_stderr};
    u = start(&r, &d.s, false, &bare);
    upstream_connect(u);
    call_tool(u, "sample", NULL, NULL, 5000, &s);
    CHECK(wait_res(r.loop, &s, 10000));
    CHECK_INT(s.error, 0);
    CHECK_CONTAINS(s.text, "-32601");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    rec_release(&r);
}

struct lres {
    bool done;
    int error;
    char *message;
    struct json_object *items;
};

static void on_list(struct upstream *u, struct json_object *items, int error, const char *message,
                    void *userdata)
{
    struct lres *l = userdata;
    (void)u;
    l->done = true;
    l->error = error;
    l->message = message ? strdup(message) : NULL;
    l->items = items;
}

static bool lres_done(void *ctx)
{
    return ((struct lres *)ctx)->done;
}

static void lres_release(struct lres *l)
{
    free(l->message);
    json_object_put(l->items);
    memset(l, 0, sizeof(*l));
}

static void test_pagination(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "pages", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    struct lres a = {0}, b = {0}, c = {0}, x = {0};
    struct upstream_list *l = NULL;
    CHECK_INT(upstream_list(u, "tools/list", "tools", on_list, &a, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &a, 10000));
    CHECK_INT(a.error, 0);
    CHECK(a.items != NULL);
    CHECK_INT(a.items ? json_object_array_length(a.items) : 0, 5);
    for (size_t i = 0; a.items && i < json_object_array_length(a.items); i++) {
        char want[32];
        snprintf(want, sizeof(want), "t%zu", i + 1);
        CHECK_STR(json_get_string(json_object_array_get_idx(a.items, i), "name"), want);
    }

    /* a cursor that never ends: bounded */
    CHECK_INT(upstream_list(u, "resources/list", "resources", on_list, &b, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &b, 30000));
    CHECK_INT(b.error, 0);
    CHECK_INT(b.items ? json_object_array_length(b.items) : 0, UPSTREAM_LIST_MAX_PAGES);

    /* the same cursor again: a loop, ended at once */
    struct lres t = {0};
    CHECK_INT(upstream_list(u, "resources/templates/list", "resourceTemplates", on_list, &t, &l),
              0);
    CHECK(wait_for(r.loop, lres_done, &t, 10000));
    CHECK_INT(t.error, 0);
    CHECK_INT(t.items ? json_object_array_length(t.items) : 0, 2);
    lres_release(&t);

    /* method not found */
    CHECK_INT(upstream_list(u, "prompts/list", "prompts", on_list, &c, &l), 0);
    CHECK(wait_for(r.loop, lres_done, &c, 10000));
    CHECK_INT(c.error, -ENOSYS);
    CHECK(c.items == NULL);
    CHECK_CONTAINS(c.message, "server 'pages'");
    CHECK_CONTAINS(c.message, "Method not found");

    /* cancelled: no callback */
    CHECK_INT(upstream_list(u, "tools/list", "tools", on_list, &x, &l), 0);
    upstream_list_cancel(l);
    struct res e;
    call_tool(u, "echo", NULL, NULL, 0, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK(!x.done);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    lres_release(&a);
    lres_release(&b);
    lres_release(&c);
    res_release(&e);
    rec_release(&r);
}

static void test_env_and_failures(void)
{
    /* ${VAR} in env, expanded through the lookup at connect */
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    char *env[] = {"GREETING=hello ${WHO}", NULL};
    stdio_def(&d, "env", "basic", env);
    struct upstream *u = start(&r, &d.s, false, NULL);
    struct res g;
    call_tool(u, "env", "{\"name\":\"GREETING\"}", NULL, 5000, &g); /* IDLE: connects */
    CHECK(wait_res(r.loop, &g, 10000));
    CHECK_INT(g.error, 0);
    CHECK_STR(g.text, "hello world");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&g);
    rec_release(&r);

    /* a missing variable: FAILED, naming it; waiting calls fail, later ones too */
    r = (struct rec){0};
    r.loop = new_loop();
    char *env2[] = {"TOKEN_VALUE=${UPSTREAM_TEST_MISSING}", NULL};
    stdio_def(&d, "envfail", "basic", env2);
    u = start(&r, &d.s, false, NULL);
    struct res w, later_call;
    call_tool(u, "echo", NULL, NULL, 5000, &w);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOENT);
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'envfail'");
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "UPSTREAM_TEST_MISSING");
    CHECK_INT(state_count(&r, UPSTREAM_BACKOFF), 0);
    CHECK(wait_res(r.loop, &w, 5000));
    CHECK_INT(w.error, -ENOTCONN);
    CHECK_CONTAINS(w.message, "UPSTREAM_TEST_MISSING");
    call_tool(u, "echo", NULL, NULL, 5000, &later_call);
    CHECK(!later_call.done);
    CHECK(wait_res(r.loop, &later_call, 5000));
    CHECK_INT(later_call.error, -ESHUTDOWN);
    CHECK_CONTAINS(later_call.message, "UPSTREAM_TEST_MISSING");
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&w);
    res_release(&later_call);
    rec_release(&r);

    /* a command that does not exist: FAILED, no retry */
    r = (struct rec){0};
    r.loop = new_loop();
    stdio_def(&d, "nocmd", "basic", NULL);
    d.s.command = "/nonexistent/mcp-server-xyz";
    u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -ENOENT);
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "server 'nocmd'");
    CHECK_CONTAINS(r.msgs[r.nstates - 1], "cannot run");
    /* connect again: tried again (and fails again) */
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 2, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);

    /* an entry with an error is refused */
    struct mcp_server bad = d.s;
    bad.error = "'test': server 'nocmd': \"command\" is blank";
    struct loop *l = new_loop();
    struct upstream_opts o = {.loop = l, .log = lg, .server = &bad};
    struct err e = ERR_INIT;
    u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "is blank");
    CHECK(u == NULL);
    loop_free(l);
}

/* upstream_free from inside callbacks */
static void free_in_resp(struct upstream_call *c, struct json_object *resp, int error,
                         const char *message, void *userdata)
{
    struct rec *r = userdata;
    (void)c, (void)resp, (void)error, (void)message;
    upstream_free(r->u);
    r->u = NULL;
}

static void test_free_in_callbacks(void)
{
    struct rec r = {.loop = new_loop(), .free_on_ready = true};
    struct srv_def d;
    stdio_def(&d, "fr", "basic", NULL);
    start(&r, &d.s, false, NULL);
    upstream_connect(r.u);
    struct upstream_call *c = NULL;
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c), 0);
    CHECK(loop_drained(r.loop));
    CHECK(r.u == NULL);
    rec_release(&r);

    r = (struct rec){0};
    r.loop = new_loop();
    start(&r, &d.s, false, NULL);
    upstream_connect(r.u);
    struct upstream_call *c2 = NULL, *c3 = NULL;
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c), 0);
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c2), 0);
    CHECK_INT(upstream_call(r.u, "tools/list", NULL, 0, free_in_resp, NULL, &r, &c3), 0);
    CHECK(loop_drained(r.loop));
    CHECK(r.u == NULL);
    rec_release(&r);
}

UPSTREAM_TEST_MAIN(test_exit_mid_call, test_backoff_growth, test_server_requests, test_pagination,
                   test_env_and_failures, test_free_in_callbacks)
