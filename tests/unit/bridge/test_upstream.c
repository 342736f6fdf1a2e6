/* test_upstream.c - MCP client sessions against a scripted MCP server over stdio (this very
 * program, re-executed as "test_upstream --server SCENARIO"; upstream_fixture.h).
 *
 * Covered: handshake (version negotiation, capabilities, serverInfo, instructions), a version
 * the bridge does not speak, a connect timeout, an error answer to initialize, messages that
 * are not JSON-RPC, answers out of order, progress tokens mapped both ways and the timeout
 * re-armed up to its hard maximum, a timeout sending notifications/cancelled and a ping, a hung
 * server restarted. The other scenarios: test_upstream_life.c, test_upstream_http.c,
 * test_upstream_fake.c. */
#include "upstream_fixture.h"

/* ---- tests ---- */

static void test_handshake_and_close(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "hs", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);

    CHECK_INT(upstream_state(u), UPSTREAM_IDLE);
    CHECK(upstream_server_capabilities(u) == NULL);
    CHECK_INT(upstream_generation(u), 0);
    CHECK_STR(upstream_server(u)->name, "hs");
    CHECK(upstream_server(u) != &d.s);
    upstream_connect(u);
    CHECK_INT(r.nstates, 0); /* callbacks only from the loop */
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    CHECK_INT(r.states[0], UPSTREAM_CONNECTING);
    CHECK_INT(upstream_generation(u), 1);
    CHECK_STR(upstream_protocol_version(u), "2025-06-18");
    CHECK_STR(upstream_instructions(u), "use the tools");
    CHECK_STR(json_get_string(upstream_server_info(u), "name"), "scripted");
    CHECK(upstream_has_capability(u, "tools"));
    CHECK(upstream_has_capability(u, "logging"));
    CHECK(!upstream_has_capability(u, "prompts"));
    CHECK(wait_line(&r, "initialized", 5000));
    CHECK(find_line(&r, "offered 2025-11-25 by mcp-bridge") != NULL);

    struct res a;
    call_tool(u, "echo", "{\"text\":\"hi\"}", NULL, 0, &a);
    CHECK(wait_res(r.loop, &a, 5000));
    CHECK_INT(a.error, 0);
    CHECK_STR(a.text, "hi");
    CHECK(a.id > 1); /* 1 was initialize */

    pid_t pid = call_pid(&r);
    CHECK(pid > 0);

    /* close: the call in flight fails -ESHUTDOWN, CLOSING then CLOSED, the child reaped */
    struct res slow, after, many[150];
    call_tool(u, "slow", NULL, NULL, 0, &slow);
    for (int i = 0; i < 150; i++) /* the id map grows past its first size */
        call_tool(u, "slow", NULL, NULL, 0, &many[i]);
    CHECK(wait_lines(&r, "slow", 151, 10000));
    upstream_close(u);
    upstream_close(u); /* idempotent */
    CHECK_INT(upstream_state(u), UPSTREAM_CLOSING);
    CHECK(!slow.done);
    call_tool(u, "echo", NULL, NULL, 0, &after);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    CHECK(slow.done);
    CHECK_INT(slow.error, -ESHUTDOWN);
    CHECK_CONTAINS(slow.message, "server 'hs'");
    CHECK(after.done);
    CHECK_INT(after.error, -ESHUTDOWN);
    for (int i = 0; i < 150; i++) {
        CHECK_INT(many[i].error, -ESHUTDOWN);
        res_release(&many[i]);
    }
    CHECK_INT(state_count(&r, UPSTREAM_CLOSING), 1);
    CHECK(pid > 0 && pid_gone(&pid));
    upstream_connect(u); /* a no-op once closed */
    CHECK_INT(upstream_state(u), UPSTREAM_CLOSED);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&slow);
    res_release(&after);
    rec_release(&r);
}

static void test_bad_version(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "bv", "badversion", NULL);
    struct upstream *u = start(&r, &d.s, true, NULL);
    struct res w;
    call_tool(u, "echo", NULL, NULL, 5000, &w); /* waits, and starts the connect */
    CHECK_INT(upstream_state(u), UPSTREAM_CONNECTING);
    CHECK(wait_state(&r, UPSTREAM_FAILED, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.errors[i], -EPROTO);
    CHECK_CONTAINS(r.msgs[i], "server 'bv'");
    CHECK_CONTAINS(r.msgs[i], "'1999-01-01'");
    CHECK_CONTAINS(upstream_last_error(u), "1999-01-01");
    CHECK(wait_res(r.loop, &w, 5000));
    CHECK_INT(w.error, -ENOTCONN);
    CHECK_CONTAINS(w.message, "1999-01-01");
    CHECK_INT(upstream_generation(u), 0);
    upstream_free(u);
    res_release(&w);
    rec_release(&r);

    /* reconnecting: the failed connect goes to BACKOFF */
    r.loop = new_loop();
    u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    CHECK_INT(r.errors[r.nstates - 1], -EPROTO);
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* a server that never answers initialize: the connect times out */
/* initialize answered with a JSON-RPC error: the connect fails (-EPROTO) with the server's
 * message, bounded, and the upstream retries later */
static void test_init_error(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ie", "initerror", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.errors[i], -EPROTO);
    CHECK_CONTAINS(r.msgs[i], "server 'ie': initialize failed: Unsupported protocol version");
    CHECK(r.msgs[i] && strlen(r.msgs[i]) < 1024);
    CHECK_INT(state_count(&r, UPSTREAM_READY), 0);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

static void test_connect_timeout(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "mute", "mute", NULL);
    struct upstream_opts o = {.loop = r.loop, .log = lg, .server = &d.s, .connect_timeout_ms = 300};
    struct upstream *u = NULL;
    CHECK_INT(upstream_new(&o, &handler, &r, &u, NULL), 0);
    r.u = u;
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 1, 10000));
    int i = r.nstates - 1;
    CHECK_INT(r.states[i - 1], UPSTREAM_CONNECTING);
    CHECK(r.at[i] - r.at[i - 1] >= 300);
    CHECK_INT(r.errors[i], -ETIMEDOUT);
    CHECK_STR(r.msgs[i], "server 'mute': connect timed out after 300 ms");
    CHECK(find_line(&r, "not answering") != NULL);
    upstream_close(u);
    CHECK(wait_state(&r, UPSTREAM_CLOSED, 1, 10000));
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    rec_release(&r);
}

/* lines that are not JSON are skipped; an answer that is not JSON-RPC fails its call */
static void test_bad_messages(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "junk", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    struct res g, e;
    call_tool(u, "garbage", NULL, NULL, 5000, &g);
    CHECK(wait_res(r.loop, &g, 10000));
    CHECK_INT(g.error, -EPROTO);
    CHECK_CONTAINS(g.message, "server 'junk' answered 'tools/call' with a message that is not "
                              "JSON-RPC");
    call_tool(u, "echo", "{\"text\":\"still\"}", NULL, 5000, &e);
    CHECK(wait_res(r.loop, &e, 5000));
    CHECK_STR(e.text, "still");
    CHECK_INT(upstream_generation(u), 1);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&g);
    res_release(&e);
    rec_release(&r);
}

static void test_out_of_order(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "ooo", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);

    /* made while connecting: they wait for READY */
    struct res a, b, many[20];
    call_tool(u, "delay", "{\"ms\":300,\"text\":\"A\"}", NULL, 5000, &a);
    call_tool(u, "delay", "{\"ms\":0,\"text\":\"B\"}", NULL, 5000, &b);
    for (int i = 0; i < 20; i++) {
        char args[64];
        snprintf(args, sizeof(args), "{\"ms\":%d,\"text\":\"m%d\"}", (i * 37) % 200, i);
        call_tool(u, "delay", args, NULL, 5000, &many[i]);
    }
    CHECK(wait_res(r.loop, &a, 10000));
    CHECK(b.done);
    CHECK_INT(a.error, 0);
    CHECK_INT(b.error, 0);
    CHECK_STR(a.text, "A");
    CHECK_STR(b.text, "B");
    CHECK(b.seq < a.seq);
    CHECK(a.id != b.id);
    for (int i = 0; i < 20; i++) {
        char want[16];
        snprintf(want, sizeof(want), "m%d", i);
        CHECK(many[i].done);
        CHECK_STR(many[i].text, want);
        res_release(&many[i]);
    }
    CHECK_INT(state_count(&r, UPSTREAM_READY), 1);
    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&a);
    res_release(&b);
    rec_release(&r);
}

static void test_progress(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "prog", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));

    /* 6 progress notifications 150 ms apart, answer at about 975 ms: past the 600 ms timeout,
     * but each progress re-arms it (a server held up to 450 ms between two is still in time,
     * for a loaded machine) */
    struct res p;
    /* from the loop's clock, as the call's timers are: now_mono_ms() here can be a few ms
     * later than the loop_now() the call starts from, and the bounds below would race */
    int64_t t0 = loop_now(r.loop);
    call_tool(u, "progress", "{\"count\":6,\"every\":150}", "tok-1", 600, &p);
    CHECK(wait_res(r.loop, &p, 5000));
    CHECK_INT(p.error, 0);
    CHECK(p.at - t0 >= 900);
    CHECK_INT(p.progress, 6);
    CHECK_STR(p.progress_tok, "\"tok-1\""); /* the caller's token, put back */
    char want[64];
    snprintf(want, sizeof(want), "token:%lld", (long long)p.id);
    CHECK_STR(p.text, want); /* the server saw the call's own id */

    /* endless progress: the hard maximum is 10 x the timeout (progress every 50 ms against a
     * 300 ms timeout: 250 ms of slack for a loaded machine) */
    struct res f;
    t0 = loop_now(r.loop);
    call_tool(u, "progress_forever", "{\"every\":50}", "tok-2", 300, &f);
    CHECK(wait_res(r.loop, &f, 10000));
    CHECK_INT(f.error, -ETIMEDOUT);
    CHECK(f.at - t0 >= 3000);
    CHECK(f.at - t0 < 4500);
    CHECK(f.progress > 10);
    CHECK_CONTAINS(f.message, "server 'prog'");
    CHECK_CONTAINS(f.message, "did not finish");
    CHECK(wait_line(&r, "cancelled", 5000));
    char cl[64];
    CHECK(wait_line(&r, "ping", 5000));
    snprintf(cl, sizeof(cl), "cancelled %lld timed out", (long long)(p.id + 1));
    CHECK(find_line(&r, cl) != NULL);

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&p);
    res_release(&f);
    rec_release(&r);
}

static void test_timeout_cancels(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "to", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t pid = call_pid(&r);

    struct res s;
    int64_t t0 = now_mono_ms();
    call_tool(u, "slow", NULL, NULL, 200, &s);
    CHECK(wait_res(r.loop, &s, 5000));
    CHECK_INT(s.error, -ETIMEDOUT);
    CHECK(s.at - t0 >= 190);
    CHECK_CONTAINS(s.message, "server 'to' did not answer 'tools/call' within 200 ms");
    /* the server got notifications/cancelled for that id, then a ping, which it answered */
    CHECK(wait_line(&r, "ping", 5000));
    const char *slow = find_line(&r, "slow ");
    CHECK(slow != NULL);
    char want[64];
    snprintf(want, sizeof(want), "cancelled %s timed out", slow ? slow + 5 : "?");
    CHECK(find_line(&r, want) != NULL);

    struct res c;
    call_tool(u, "cancels", NULL, NULL, 0, &c);
    CHECK(wait_res(r.loop, &c, 5000));
    snprintf(want, sizeof(want), "%s:timed out;", slow ? slow + 5 : "?");
    CHECK_STR(c.text, want);
    /* not treated as hung */
    CHECK_INT(upstream_generation(u), 1);
    CHECK_INT(call_pid(&r), pid);

    /* a cancelled call: notifications/cancelled with its id and reason, no callback */
    struct res x;
    call_tool(u, "slow", NULL, NULL, 0, &x);
    CHECK(wait_lines(&r, "slow ", 2, 5000));
    upstream_call_cancel(x.call, "user gave up");
    struct res c2;
    call_tool(u, "cancels", NULL, NULL, 0, &c2);
    CHECK(wait_res(r.loop, &c2, 5000));
    CHECK_CONTAINS(c2.text, ":user gave up;");
    CHECK(!x.done);
    CHECK(wait_lines(&r, "cancelled", 2, 5000));

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&s);
    res_release(&c);
    res_release(&c2);
    res_release(&x);
    rec_release(&r);
}

static void test_hung_server_restarted(void)
{
    struct rec r = {.loop = new_loop()};
    struct srv_def d;
    stdio_def(&d, "hung", "basic", NULL);
    struct upstream *u = start(&r, &d.s, false, NULL);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    pid_t old = call_pid(&r);

    struct res h, inflight;
    /* the call's timeout and the ping's both start from the loop's clock, which can only be
     * behind the clock read here: a lower bound for the restart that holds on a loaded machine
     * (the moment the test saw the timeout can be late by any amount) */
    int64_t t_call = loop_now(r.loop);
    call_tool(u, "hang", NULL, NULL, 200, &h);
    CHECK(wait_line(&r, "hanging", 5000));
    call_tool(u, "echo", NULL, NULL, 30000, &inflight); /* never read by the hung server */
    CHECK(wait_res(r.loop, &h, 5000));
    CHECK_INT(h.error, -ETIMEDOUT);
    /* the ping goes unanswered for UPSTREAM_PING_TIMEOUT_MS: restarted */
    CHECK(wait_state(&r, UPSTREAM_READY, 2, UPSTREAM_PING_TIMEOUT_MS + 10000));
    int i = r.nstates - 2;
    CHECK_INT(r.states[i], UPSTREAM_CONNECTING);
    CHECK(r.at[i] - t_call >= 200 + UPSTREAM_PING_TIMEOUT_MS);
    CHECK(inflight.done);
    CHECK_INT(inflight.error, -ECONNRESET);
    CHECK_INT(upstream_generation(u), 2);
    pid_t now_pid = call_pid(&r);
    CHECK(now_pid > 0 && now_pid != old);
    /* the hung one is shut down (SIGTERM after the stdin grace) and reaped */
    CHECK(wait_for(r.loop, pid_gone, &old, 10000));

    upstream_free(u);
    CHECK(loop_drained(r.loop));
    res_release(&h);
    res_release(&inflight);
    rec_release(&r);
}

UPSTREAM_TEST_MAIN(test_handshake_and_close, test_bad_version, test_connect_timeout,
                   test_init_error, test_bad_messages, test_out_of_order, test_progress,
                   test_timeout_cancels, test_hung_server_restarted)
