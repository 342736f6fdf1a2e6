/* test_http_resume.c - the HTTP upstream resuming a POST's answer (2025-11-25 polling)
 * against a server (http_fixture.h) that closes a request's SSE answer early: resumed with
 * Last-Event-ID after the server's retry while ids keep coming, reported at once when there is
 * nothing to resume from or a resumption brought nothing new, not resumed once answered, timed
 * out at the POST's hard deadline, and a resumed GET left open stopped once answered. */
#include "http_fixture.h"
#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */

/* /poll: a 2025-11-25 server that closes a request's SSE answer early (polling) */
struct poll_seen {
    int64_t p10_end;          /* the "resume" POST's answer was sent */
    int64_t g1_at, g1_end;    /* the GET with Last-Event-ID r1 came, was answered */
    int64_t g2_at;            /* the one with r2 */
    int64_t hold_end;         /* the r2 stream (answer, then held open) ended */
    int hold_toe;             /* how */
    int g1s, g2s, x1s, stray; /* GETs by Last-Event-ID; stray: ones that should not come */
    char g1_accept[F], g1_sid[F], g1_proto[F], g1_auth[F];
};
static struct poll_seen poll_;

enum track { TRACK_NONE, TRACK_P10, TRACK_G1, TRACK_HOLD }; /* upload.track */

/* ---- /poll ---------------------------------------------------------------------------- */

static enum MHD_Result poll_post(struct MHD_Connection *c, struct upload *u)
{
    char method[F], tool[F];
    parse_post(u, method, tool);

    if (strcmp(method, "initialize") == 0)
        return httpd_reply(c, 200, "application/json",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "s-poll");
    if (strcmp(method, "tools/call") != 0)
        return httpd_reply(c, 202, NULL, "", NULL);
    const char *body = NULL;
    if (strcmp(tool, "resume") == 0) { /* primed, closed: the answer comes after two resumptions */
        u->track = TRACK_P10;
        body = "id: r1\nretry: 300\ndata: \n\n";
    } else if (strcmp(tool, "noid") == 0) { /* closed without the answer or any id */
        body =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
    } else if (strcmp(tool, "stall") == 0) { /* resumable, but the resumption brings nothing */
        body = "id: x1\nretry: 100\ndata: \n\n";
    } else if (strcmp(tool, "direct") == 0) { /* primed, answered on the POST itself */
        body = "id: a1\nretry: 100\ndata: \n\n"
               "id: a2\ndata: {\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}\n\n";
    } else if (strcmp(tool, "late") == 0) { /* a retry beyond the hard timeout */
        body = "id: l1\nretry: 60000\ndata: \n\n";
    } else {
        return httpd_reply(c, 400, "text/plain", "unknown tool", NULL);
    }
    return httpd_reply(c, 200, "text/event-stream", body, NULL);
}

static enum MHD_Result poll_get(struct MHD_Connection *c, struct upload *u)
{
    const char *lei = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    enum MHD_Result ret;

    pthread_mutex_lock(&fx_mu);
    if (lei && strcmp(lei, "r1") == 0) {
        poll_.g1s++;
        poll_.g1_at = now_ms();
        httpd_header(c, "Accept", poll_.g1_accept, F);
        httpd_header(c, "Mcp-Session-Id", poll_.g1_sid, F);
        httpd_header(c, "MCP-Protocol-Version", poll_.g1_proto, F);
        httpd_header(c, "Authorization", poll_.g1_auth, F);
        u->track = TRACK_G1;
        /* an event with an id, but not the answer: to be resumed again */
        ret = httpd_reply(
            c, 200, "text/event-stream",
            "id: r2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", NULL);
    } else if (lei && strcmp(lei, "r2") == 0) {
        poll_.g2s++;
        poll_.g2_at = now_ms();
        u->track = TRACK_HOLD;
        /* the answer, then the stream stays open: the client must stop it */
        ret = fx_reply_stream(c, "id: r3\ndata: {\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{}}\n\n",
                              NULL, 0, true);
    } else if (lei && strcmp(lei, "x1") == 0) {
        poll_.x1s++;
        ret = httpd_reply(c, 200, "text/event-stream", ": nothing new\n",
                          NULL); /* not even a blank line */
    } else if (lei) {
        poll_.stray++;
        ret = httpd_reply(c, 200, "text/event-stream", "", NULL);
    } else {
        ret = httpd_reply(c, 405, "text/plain", "no stream", NULL);
    }
    pthread_mutex_unlock(&fx_mu);
    return ret;
}

/* when the answers were sent (with fx_mu held) */
static void completed(const struct upload *u, enum MHD_RequestTerminationCode toe)
{
    int64_t now = now_ms();
    if (u->track == TRACK_P10)
        poll_.p10_end = now;
    else if (u->track == TRACK_G1)
        poll_.g1_end = now;
    else if (u->track == TRACK_HOLD) {
        poll_.hold_end = now;
        poll_.hold_toe = (int)toe;
    }
}

static enum MHD_Result fx_route(struct MHD_Connection *conn, const char *url, const char *method,
                                struct upload *u)
{
    if (strcmp(url, "/poll") == 0) {
        if (strcmp(method, "POST") == 0)
            return poll_post(conn, u);
        if (strcmp(method, "GET") == 0)
            return poll_get(conn, u);
    }
    return httpd_reply(conn, 405, NULL, "", NULL);
}

/* ---- resuming a request's answer (2025-11-25 polling) ---------------------------------- */

struct pclient {
    struct loop *loop;
    struct http_conn *u;
    struct loop_timer *wait;
    int64_t sent_at, got10_at, err11_at, err12_at, err14_at;
    bool got10, got13;
    int err11, err12, err14;
    int progress, others, other_errors;
};

static void p_send(struct pclient *c, int id, const char *tool)
{
    char msg[160];
    snprintf(
        msg, sizeof(msg),
        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\"}}",
        id, tool);
    CHECK_INT(http_conn_send(c->u, msg, strlen(msg), 0, (uint64_t)id, NULL), 0);
}

/* every answer and error is in: wait (bounded by the guard) for the held stream to end */
static void p_wait(struct loop_timer *t, void *userdata)
{
    struct pclient *c = userdata;
    pthread_mutex_lock(&fx_mu);
    bool ended = poll_.hold_end != 0;
    pthread_mutex_unlock(&fx_mu);
    if (ended)
        loop_quit(c->loop, 0);
    else
        loop_timer_rearm(t, 10);
}

static void p_check(struct pclient *c)
{
    if (c->got10 && c->got13 && c->err11 && c->err12 && c->err14 && !c->wait)
        CHECK_INT(loop_timer_add(c->loop, 0, p_wait, c, &c->wait), 0);
}

static void p_message(const char *msg, size_t len, void *userdata)
{
    struct pclient *c = userdata;
    const char *method = NULL;
    int id = msg_id(msg, len, &method);

    if (id == 1) {
        CHECK_INT(http_conn_set_protocol_version(c->u, "2025-11-25"), 0);
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        CHECK_INT(http_conn_send(c->u, n, strlen(n), 0, 0, NULL), 0);
        c->sent_at = loop_now(c->loop);
        p_send(c, 10, "resume");
        p_send(c, 11, "noid");
        p_send(c, 12, "stall");
        p_send(c, 13, "direct");
        p_send(c, 14, "late");
    } else if (id == 10) {
        c->got10 = true;
        c->got10_at = loop_now(c->loop);
        http_conn_answered(c->u, 10);
    } else if (id == 13) {
        c->got13 = true;
        http_conn_answered(c->u, 13);
    } else if (id < 0 && strcmp(method, "notifications/progress") == 0) {
        c->progress++;
    } else {
        c->others++;
    }
    p_check(c);
}

static void p_error(int error, uint64_t tag, void *userdata)
{
    struct pclient *c = userdata;
    int id = tag ? (int)tag : -1;

    if (id == 11) {
        c->err11 = error;
        c->err11_at = loop_now(c->loop);
    } else if (id == 12) {
        c->err12 = error;
        c->err12_at = loop_now(c->loop);
    } else if (id == 14) {
        c->err14 = error;
        c->err14_at = loop_now(c->loop);
    } else {
        fprintf(stderr, "unexpected error %d for message %d\n", error, id);
        c->other_errors++;
    }
    p_check(c);
}

static void test_polling(void)
{
    struct pclient c = {0};
    struct loop_timer *t = NULL;
    char url[128];
    const char *headers[] = {"Authorization: Bearer s3cret", NULL};
    const struct http_conn_handler h = {.on_message = p_message, .on_error = p_error};

    fx_on_completed = completed;
    fx_url(url, sizeof(url), "/poll");
    CHECK_INT(loop_new(&c.loop), 0);
    struct http_conn_spec spec = {.url = url, .headers = headers, .timeout_ms = 2000};
    CHECK_INT(http_conn_new(c.loop, &spec, &h, &c, &c.u, NULL), 0);
    CHECK_INT(loop_timer_add(c.loop, 10000, fx_guard, &c, &t), 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}";
    CHECK_INT(http_conn_send(c.u, init, strlen(init), HTTP_CONN_INITIALIZE, 1, NULL), 0);

    CHECK_INT(loop_run(c.loop), 0);

    CHECK(!http_conn_is_legacy(c.u));
    /* resumed twice (ids kept coming), answered on the second resumption */
    CHECK(c.got10);
    CHECK(c.got10_at - c.sent_at >= 600); /* two retries of 300 ms, on the loop clock */
    CHECK_INT(c.progress, 2);             /* one on "noid", one on the first resumption */
    /* no id to resume from: reported at once, not at the hard timeout */
    CHECK_INT(c.err11, -ECONNRESET);
    CHECK(c.err11_at - c.sent_at < 1000);
    /* a resumption that brought nothing new */
    CHECK_INT(c.err12, -ECONNRESET);
    CHECK(c.err12_at - c.sent_at >= 100);
    CHECK(c.err12_at - c.sent_at < 1500);
    /* answered on its POST: not resumed */
    CHECK(c.got13);
    /* retry beyond the hard timeout: -ETIMEDOUT at the timeout (2000 ms after its POST left) */
    CHECK_INT(c.err14, -ETIMEDOUT);
    if (c.err14_at - c.sent_at < 1990 || c.err14_at - c.sent_at > 4000)
        fprintf(stderr, "late: timed out after %lld ms\n", (long long)(c.err14_at - c.sent_at));
    CHECK(c.err14_at - c.sent_at >= 1990);
    CHECK(c.err14_at - c.sent_at <= 4000);
    CHECK_INT(c.others, 0);
    CHECK_INT(c.other_errors, 0);

    pthread_mutex_lock(&fx_mu);
    CHECK_INT(poll_.g1s, 1);
    CHECK_INT(poll_.g2s, 1);
    CHECK_INT(poll_.x1s, 1);
    CHECK_INT(poll_.stray, 0); /* neither "direct" nor "late" was resumed */
    /* the server's times are CLOCK_MONOTONIC like the loop's: each GET came after retry ms
     * (300; 0.9 x 300 is where the conformance test fails a client) and not much later */
    long long d1 = (long long)(poll_.g1_at - poll_.p10_end);
    long long d2 = (long long)(poll_.g2_at - poll_.g1_end);
    if (d1 < 295 || d1 > 1000 || d2 < 295 || d2 > 1000)
        fprintf(stderr, "resumed after %lld and %lld ms\n", d1, d2);
    CHECK(poll_.p10_end > 0 && poll_.g1_end > 0);
    CHECK(d1 >= 295 && d1 <= 1000);
    CHECK(d2 >= 295 && d2 <= 1000);
    CHECK_STR(poll_.g1_accept, "text/event-stream");
    CHECK_STR(poll_.g1_sid, "s-poll");
    CHECK_STR(poll_.g1_proto, "2025-11-25");
    CHECK_STR(poll_.g1_auth, "Bearer s3cret");
    /* the resumed GET that stayed open after the answer was stopped by the client, at once */
    CHECK(poll_.hold_end > 0);
    CHECK(poll_.hold_toe != MHD_REQUEST_TERMINATED_COMPLETED_OK);
    CHECK(poll_.hold_end - c.got10_at < 1000);
    pthread_mutex_unlock(&fx_mu);

    loop_timer_cancel(t);
    loop_timer_cancel(c.wait);
    http_conn_free(c.u);
    loop_free(c.loop);
}

TESTS_MAIN(test_polling)
