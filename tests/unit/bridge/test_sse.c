/* test_sse.c - the SSE parser against the WHATWG examples, line ends, chunking, bounds */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "credkit/buf.h"

#include "core/rblock.h"
#include "core/sse.h"
#include "tests.h"

/* Every event as "type|data|id;" with \n \r \0 \\ | ; escaped, so a whole run compares as a
 * string. */
struct rec {
    struct buf log;
    int n;
    int fail_at; /* return -EPROTO from this event (1-based), 0 never */
};

static void rec_esc(struct buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int r;
        switch (s[i]) {
        case '\n':
            r = buf_append_str(b, "\\n");
            break;
        case '\r':
            r = buf_append_str(b, "\\r");
            break;
        case '\0':
            r = buf_append_str(b, "\\0");
            break;
        case '\\':
            r = buf_append_str(b, "\\\\");
            break;
        case '|':
            r = buf_append_str(b, "\\|");
            break;
        case ';':
            r = buf_append_str(b, "\\;");
            break;
        default:
            r = buf_append_char(b, s[i]);
            break;
        }
        CHECK(r == 0);
    }
}

static int rec_fn(const struct sse_event *ev, void *userdata)
{
    struct rec *rc = userdata;
    rc->n++;
    CHECK(ev->data[ev->data_len] == 0);
    CHECK(ev->type[ev->type_len] == 0);
    rec_esc(&rc->log, ev->type, ev->type_len);
    CHECK(buf_append_char(&rc->log, '|') == 0);
    rec_esc(&rc->log, ev->data, ev->data_len);
    CHECK(buf_append_char(&rc->log, '|') == 0);
    rec_esc(&rc->log, ev->id, strlen(ev->id));
    CHECK(buf_append_char(&rc->log, ';') == 0);
    if (rc->fail_at && rc->n == rc->fail_at)
        return -EPROTO;
    return 0;
}

static void rec_init(struct rec *rc)
{
    *rc = (struct rec){0};
    buf_init(&rc->log, 0);
}

/* Feeds `in` in chunks cut at the sorted offsets `cuts` (ncuts of them), ends the stream,
 * and appends "last=<id> retry=<ms> rc=<r>" to the log. */
static char *run_cuts(const char *in, size_t len, const size_t *cuts, size_t ncuts, size_t max_line,
                      size_t max_event)
{
    struct sse_parser p;
    struct rec rc;
    size_t at = 0;
    int r = 0;

    rec_init(&rc);
    sse_parser_init(&p, max_line, max_event, rec_fn, &rc);
    for (size_t i = 0; i <= ncuts && r >= 0; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        r = sse_feed(&p, in + at, to - at);
        at = to;
    }
    CHECK(buf_printf(&rc.log, "last=%s retry=%lld rc=%d", sse_last_id(&p),
                     (long long)sse_retry_ms(&p), r) == 0);
    sse_end(&p);
    sse_parser_release(&p);
    return buf_detach(&rc.log);
}

static char *run_len(const char *in, size_t len)
{
    return run_cuts(in, len, NULL, 0, 0, 0);
}

static char *run(const char *in)
{
    return run_len(in, strlen(in));
}

static char *run_bytewise(const char *in, size_t len)
{
    size_t *cuts = malloc(len * sizeof(*cuts) + 1);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i;
    char *s = run_cuts(in, len, cuts, len, 0, 0);
    free(cuts);
    return s;
}

#define CHECK_RUN(in, expect)                                                                      \
    do {                                                                                           \
        char *_s = run(in);                                                                        \
        CHECK_STR(_s, expect);                                                                     \
        free(_s);                                                                                  \
    } while (0)

static void test_spec_stock(void)
{
    CHECK_RUN("data: YHOO\ndata: +2\ndata: 10\n\n", "message|YHOO\\n+2\\n10|;last= retry=-1 rc=0");
}

static void test_spec_blocks(void)
{
    /* comment block fires nothing; id "1"; "id" alone resets to ""; " third event" keeps one
     * of its two spaces */
    CHECK_RUN(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
              "data:  third event\n\n",
              "message|first event|1;message|second event|;message| third event|;"
              "last= retry=-1 rc=0");
    /* the end of the stream is not enough to dispatch the last block */
    CHECK_RUN(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
              "data:  third event\n",
              "message|first event|1;message|second event|;last= retry=-1 rc=0");
}

static void test_spec_two_events(void)
{
    /* spec: "The first block fires events with the data set to the empty string, as would the
     * last block if it was followed by a blank line. The middle block fires an event with the
     * data set to a single newline character. The last block is discarded" */
    CHECK_RUN("data\n\ndata\ndata\n\ndata:", "message||;message|\\n|;last= retry=-1 rc=0");
    CHECK_RUN("data\n\ndata\ndata\n\ndata:\n\n",
              "message||;message|\\n|;message||;last= retry=-1 rc=0");
}

static void test_spec_space(void)
{
    CHECK_RUN("data:test\n\ndata: test\n\n", "message|test|;message|test|;last= retry=-1 rc=0");
    /* only one space goes; tabs are not spaces; the split is at the first colon */
    CHECK_RUN("data:  x\n\ndata:\tx\n\ndata: a:b: c\n\ndata: \n\n",
              "message| x|;message|\tx|;message|a:b: c|;message||;last= retry=-1 rc=0");
}

static void test_fields(void)
{
    /* field names are case-sensitive and exact; unknown fields and comments are ignored */
    CHECK_RUN("Data: a\ndata : b\ndatas: c\nfoo: d\n:data: e\n\n", "last= retry=-1 rc=0");
    CHECK_RUN("foo: bar\n: comment\ndata: x\n:\n\n", "message|x|;last= retry=-1 rc=0");
    /* NUL in data passes through, data_len is the truth */

    {
        static const char in[] = "data: a\0b\n\n";
        char *s = run_len(in, sizeof(in) - 1);
        CHECK_STR(s, "message|a\\0b|;last= retry=-1 rc=0");
        free(s);
    }
}

static void test_line_ends(void)
{
    const char *expect = "ping|a\\nb|7;message||7;message|c|;last= retry=5 rc=0";
    CHECK_RUN("event: ping\ndata: a\ndata: b\nid: 7\n\ndata\n\nid\nretry: 5\ndata: c\n\n", expect);
    CHECK_RUN("event: ping\r\ndata: a\r\ndata: b\r\nid: 7\r\n\r\ndata\r\n\r\nid\r\nretry: 5\r\n"
              "data: c\r\n\r\n",
              expect);
    CHECK_RUN("event: ping\rdata: a\rdata: b\rid: 7\r\rdata\r\rid\rretry: 5\rdata: c\r\r", expect);
    /* mixed; CR CR is two line ends, LF CR too; only CR LF is one */
    CHECK_RUN("event: ping\r\ndata: a\rdata: b\nid: 7\n\rdata\r\r\nid\nretry: 5\rdata: c\r\n\n",
              expect);
    /* CR LF LF: a line end then a blank line */
    CHECK_RUN("data: x\r\n\n", "message|x|;last= retry=-1 rc=0");
    /* a CR inside what looks like a value ends the line */
    CHECK_RUN("data: a\rb\n\n", "message|a|;last= retry=-1 rc=0");
}

/* Long enough to exercise everything at every cut: BOM, all line ends, comments, ids, retry,
 * NUL, an event type, a CR LF straddling cuts. */
static const char chunk_stream[] = "\xEF\xBB\xBF: hello\r\n"
                                   "retry: 1500\r\n"
                                   "event: endpoint\r\ndata: /messages?session=1\r\n\r\n"
                                   "id: 1\rdata: {\"jsonrpc\":\"2.0\",\r\rdata:second\r\n\r"
                                   "id: a\0b\n\nid\n\n"
                                   "data\n\ndata\ndata\n\n"
                                   "id: 2\n\n"
                                   "event: x\n\n"
                                   "data: a\r\ndata:  b\r\ndata:\r\n\r\n"
                                   "retry: 12x\nretry: 99999999999999999999\n"
                                   "data: tail without blank line\r";

static void test_chunking(void)
{
    const size_t len = sizeof(chunk_stream) - 1;
    char *one = run_len(chunk_stream, len);
    CHECK_STR(one, "endpoint|/messages?session=1|;"
                   "message|{\"jsonrpc\":\"2.0\",|1;"
                   "message|second|1;"
                   "message||;"
                   "message|\\n|;"
                   "message|a\\n b\\n|2;"
                   "last=2 retry=1500 rc=0");

    /* every single cut and every pair of cuts: same events, same last id and retry */
    int mismatches = 0;
    for (size_t i = 0; i <= len; i++) {
        for (size_t j = i; j <= len; j++) {
            size_t cuts[2] = {i, j};
            char *s = run_cuts(chunk_stream, len, cuts, 2, 0, 0);
            if (strcmp(s, one) != 0 && mismatches++ < 5)
                fprintf(stderr, "cuts %zu,%zu: %s\n", i, j, s);
            free(s);
        }
    }
    CHECK_INT(mismatches, 0);

    char *bw = run_bytewise(chunk_stream, len);
    CHECK_STR(bw, one);
    free(bw);
    free(one);
}

static void test_crlf_split(void)
{
    /* a CR ending a chunk and the LF starting the next are one line end, not two (two would be
     * a blank line: the event would be dispatched early and "b" would be a second event) */
    const char in[] = "data: a\r\ndata: b\r\n\r\n";
    for (size_t i = 0; i <= sizeof(in) - 1; i++) {
        char *s = run_cuts(in, sizeof(in) - 1, &i, 1, 0, 0);
        CHECK_STR(s, "message|a\\nb|;last= retry=-1 rc=0");
        free(s);
    }
    /* an empty chunk between CR and LF changes nothing */
    size_t cuts[2] = {8, 8};
    char *s = run_cuts(in, sizeof(in) - 1, cuts, 2, 0, 0);
    CHECK_STR(s, "message|a\\nb|;last= retry=-1 rc=0");
    free(s);
}

static void test_bom(void)
{
    CHECK_RUN("\xEF\xBB\xBF"
              "data: a\n\n",
              "message|a|;last= retry=-1 rc=0");
    /* only one BOM is stripped: a second is part of the first field name */
    CHECK_RUN("\xEF\xBB\xBF\xEF\xBB\xBF"
              "data: a\n\n",
              "last= retry=-1 rc=0");
    /* only at the very start */
    CHECK_RUN("data: a\n\n\xEF\xBB\xBF"
              "data: b\n\n",
              "message|a|;last= retry=-1 rc=0");
    CHECK_RUN("\n\xEF\xBB\xBF"
              "data: b\n\n",
              "last= retry=-1 rc=0");
    /* a BOM-like prefix that does not complete is the start of the first line */
    CHECK_RUN("\xEF\xBB"
              "data: a\n\n",
              "last= retry=-1 rc=0");

    /* split BOM at every position, including one byte per chunk */
    const char in[] = "\xEF\xBB\xBF"
                      "data: a\n\n";
    size_t cuts[2];
    for (cuts[0] = 0; cuts[0] <= 3; cuts[0]++)
        for (cuts[1] = cuts[0]; cuts[1] <= 4; cuts[1]++) {
            char *s = run_cuts(in, sizeof(in) - 1, cuts, 2, 0, 0);
            CHECK_STR(s, "message|a|;last= retry=-1 rc=0");
            free(s);
        }
    /* a partial BOM held across chunks is not dropped when the BOM does not complete */
    const char bad[] = "\xEF\xBB"
                       "data: a\n\n";
    for (size_t i = 0; i <= 3; i++) {
        char *s = run_cuts(bad, sizeof(bad) - 1, &i, 1, 0, 0);
        CHECK_STR(s, "last= retry=-1 rc=0");
        free(s);
    }
    const char bad2[] = "\xEF"
                        "data: a\n\n";
    size_t one = 1;
    char *s = run_cuts(bad2, sizeof(bad2) - 1, &one, 1, 0, 0);
    CHECK_STR(s, "last= retry=-1 rc=0");
    free(s);
}

static void test_retry(void)
{
    CHECK_RUN("retry: 1000\n", "last= retry=1000 rc=0");
    CHECK_RUN("retry:0\n", "last= retry=0 rc=0");
    CHECK_RUN("retry: 9223372036854775807\n", "last= retry=9223372036854775807 rc=0");
    /* junk is ignored and keeps the previous value */
    CHECK_RUN("retry: 300\nretry: 10a0\nretry:\nretry: -5\nretry:  5\nretry: 5 \nretry: +5\n"
              "retry: 0x10\nretry: 1.5\n",
              "last= retry=300 rc=0");
    /* overflow is ignored */
    CHECK_RUN("retry: 300\nretry: 9223372036854775808\nretry: 99999999999999999999999\n",
              "last= retry=300 rc=0");
    /* no blank line needed, and it does not make an event */
    CHECK_RUN("retry: 7\n\n", "last= retry=7 rc=0");
}

static void test_id(void)
{
    /* an id containing NUL is ignored */
    static const char nul[] = "id: 1\n\nid: a\0b\n\ndata: x\n\n";
    char *s = run_len(nul, sizeof(nul) - 1);
    CHECK_STR(s, "message|x|1;last=1 retry=-1 rc=0");
    free(s);

    /* the last event id persists across events; an id-only event is not dispatched but moves
     * the last id; "id" with no value clears it */
    CHECK_RUN("id: 7\ndata: a\n\ndata: b\n\nid: 8\n\ndata: c\n\nid\n\ndata: d\n\n",
              "message|a|7;message|b|7;message|c|8;message|d|;last= retry=-1 rc=0");
    /* an id counts only at the blank line: the event's id is the one set inside it, wherever */
    CHECK_RUN("data: a\nid: 9\n\n", "message|a|9;last=9 retry=-1 rc=0");
    /* ids with spaces and colons are kept verbatim (one leading space gone) */
    CHECK_RUN("id:  a:b \n\n", "last= a:b  retry=-1 rc=0");
}

static void test_id_commit(void)
{
    struct sse_parser p;
    struct rec rc;

    rec_init(&rc);
    sse_parser_init(&p, 0, 0, rec_fn, &rc);
    CHECK_INT(sse_feed(&p, "id: 5\n\n", 7), 0);
    CHECK_STR(sse_last_id(&p), "5");
    /* the id of an event that never completes is not the last event id */
    CHECK_INT(sse_feed(&p, "id: 6\ndata: x\n", 14), 0);
    CHECK_STR(sse_last_id(&p), "5");
    sse_end(&p);
    CHECK_STR(sse_last_id(&p), "5");
    CHECK_INT(rc.n, 0);
    /* a new stream (reconnection): retry and last id kept; the spec's id buffer starts empty,
     * so the first blank line without an id clears the last id */
    CHECK_INT(sse_feed(&p, "retry: 10\n", 10), 0);
    CHECK_INT(sse_retry_ms(&p), 10);
    CHECK_STR(sse_last_id(&p), "5");
    CHECK_INT(sse_feed(&p, "data: y\n\n", 9), 0);
    CHECK_STR(buf_str(&rc.log), "message|y|;");
    CHECK_STR(sse_last_id(&p), "");
    sse_parser_release(&p);
    buf_release(&rc.log);
}

static void test_types(void)
{
    CHECK_RUN("event: ping\ndata: x\n\ndata: y\n\n", "ping|x|;message|y|;last= retry=-1 rc=0");
    /* a type without data is reset with the undispatched event */
    CHECK_RUN("event: foo\n\ndata: z\n\n", "message|z|;last= retry=-1 rc=0");
    /* the last event field wins; an empty type means "message" */
    CHECK_RUN("event: a\nevent: b\ndata: 1\n\nevent\ndata: 2\n\nevent:\ndata: 3\n\n",
              "b|1|;message|2|;message|3|;last= retry=-1 rc=0");
    /* a type with NUL is not "message", however it reads as a C string */
    static const char nul[] = "event: message\0x\ndata: 1\n\n";
    char *s = run_len(nul, sizeof(nul) - 1);
    CHECK_STR(s, "message\\0x|1|;last= retry=-1 rc=0");
    free(s);
    CHECK_RUN("event: notifications/message\ndata: {}\n\n",
              "notifications/message|{}|;last= retry=-1 rc=0");
}

static void test_mcp(void)
{
    /* a priming event with no data line: not dispatched, id and retry recorded */
    CHECK_RUN("id: 0-abc\nretry: 500\n\n", "last=0-abc retry=500 rc=0");
    /* the TS SDK's priming event has "data: ": per the spec an event with empty data, which
     * the transport must skip (data_len 0) */
    CHECK_RUN("id: 1\nretry: 500\ndata: \n\n", "message||1;last=1 retry=500 rc=0");
    /* priming, then a server request, then the response (a message split over data lines) */
    CHECK_RUN("id: s1-0\nretry: 1000\n\n"
              ": keep-alive\n\n"
              "event: message\nid: s1-1\n"
              "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\"}\n\n"
              "id: s1-2\ndata: {\"jsonrpc\":\"2.0\",\n"
              "data: \"id\":1,\"result\":{\"tools\":[]}}\n\n",
              "message|{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\"}|s1-1;"
              "message|{\"jsonrpc\":\"2.0\",\\n\"id\":1,\"result\":{\"tools\":[]}}|s1-2;"
              "last=s1-2 retry=1000 rc=0");
}

static void test_bounds(void)
{
    struct sse_parser p;
    struct rec rc;
    char line[64];

    /* a line of exactly max_line is fine; one byte more is -E2BIG */
    memset(line, 'x', sizeof(line));
    memcpy(line, "data:", 5);
    line[16] = '\n';
    line[17] = '\n';
    char *s = run_cuts(line, 18, NULL, 0, 16, 0);
    CHECK_STR(s, "message|xxxxxxxxxxx|;last= retry=-1 rc=0");
    free(s);
    line[16] = 'x';
    line[17] = '\n';
    line[18] = '\n';
    s = run_cuts(line, 19, NULL, 0, 16, 0);
    CHECK_STR(s, "last= retry=-1 rc=-7");
    free(s);
    /* the same long line split anywhere: still -E2BIG */
    for (size_t i = 0; i <= 19; i++) {
        s = run_cuts(line, 19, &i, 1, 16, 0);
        CHECK_STR(s, "last= retry=-1 rc=-7");
        free(s);
    }
    /* an unterminated long line is refused before its end arrives */
    s = run_cuts(line, 17, NULL, 0, 16, 0);
    CHECK_STR(s, "last= retry=-1 rc=-7");
    free(s);

    /* data: max_event bytes dispatched is fine, the next data byte is not (also across lines) */
    s = run_cuts("data: 12345\n\ndata: 12\ndata: 12\n\n", 32, NULL, 0, 0, 5);
    CHECK_STR(s, "message|12345|;message|12\\n12|;last= retry=-1 rc=0");
    free(s);
    s = run_cuts("data: 123456\n\n", 14, NULL, 0, 0, 5);
    CHECK_STR(s, "last= retry=-1 rc=-7");
    free(s);
    s = run_cuts("data: 12\ndata: 123\n\n", 20, NULL, 0, 0, 5);
    CHECK_STR(s, "last= retry=-1 rc=-7");
    free(s);
    /* the data buffer is per event: many small events under the bound are fine */
    s = run_cuts("data: 1234\n\ndata: 1234\n\ndata: 1234\n\n", 36, NULL, 0, 0, 5);
    CHECK_STR(s, "message|1234|;message|1234|;message|1234|;last= retry=-1 rc=0");
    free(s);

    /* sticky: later feeds fail too, even with harmless input; sse_end clears it */
    rec_init(&rc);
    sse_parser_init(&p, 8, 0, rec_fn, &rc);
    CHECK_INT(sse_feed(&p, "data: 1\n\n", 9), 0);
    CHECK_INT(sse_feed(&p, "data: 123456789\n\n", 17), -E2BIG);
    CHECK_INT(sse_feed(&p, "data: 2\n\n", 9), -E2BIG);
    CHECK_INT(sse_feed(&p, "", 0), -E2BIG);
    CHECK_STR(buf_str(&rc.log), "message|1|;");
    sse_end(&p);
    CHECK_INT(sse_feed(&p, "data: 3\n\n", 9), 0);
    CHECK_STR(buf_str(&rc.log), "message|1|;message|3|;");
    sse_parser_release(&p);
    buf_release(&rc.log);
}

static void test_fn_error(void)
{
    struct sse_parser p;
    struct rec rc;

    rec_init(&rc);
    rc.fail_at = 2;
    sse_parser_init(&p, 0, 0, rec_fn, &rc);
    CHECK_INT(sse_feed(&p, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 27), -EPROTO);
    CHECK_INT(rc.n, 2);
    CHECK_INT(sse_feed(&p, "data: 4\n\n", 9), -EPROTO);
    CHECK_INT(rc.n, 2);
    CHECK_STR(buf_str(&rc.log), "message|1|;message|2|;");
    sse_parser_release(&p);
    buf_release(&rc.log);
}

static void test_end(void)
{
    struct sse_parser p;
    struct rec rc;

    rec_init(&rc);
    sse_parser_init(&p, 0, 0, rec_fn, &rc);
    /* an unterminated event is discarded, also its type and partial line */
    CHECK_INT(sse_feed(&p, "event: t\ndata: x\ndata: part", 27), 0);
    sse_end(&p);
    CHECK_INT(sse_feed(&p, "ial\n\n", 5), 0);
    CHECK_INT(rc.n, 0);
    /* a pending CR does not carry over into the next stream; its BOM is stripped again */
    CHECK_INT(sse_feed(&p, "data: a\r", 8), 0);
    sse_end(&p);
    CHECK_INT(sse_feed(&p,
                       "\xEF\xBB\xBF"
                       "data: b\n\n",
                       12),
              0);
    CHECK_INT(rc.n, 1);
    CHECK_STR(buf_str(&rc.log), "message|b|;");
    sse_parser_release(&p);
    buf_release(&rc.log);

    /* no fn: only ids and retry are tracked */
    sse_parser_init(&p, 0, 0, NULL, NULL);
    CHECK_INT(sse_feed(&p, "id: 3\nretry: 4\ndata: x\n\n", 24), 0);
    CHECK_STR(sse_last_id(&p), "3");
    CHECK_INT(sse_retry_ms(&p), 4);
    sse_parser_release(&p);
}

static int count_fn(const struct sse_event *ev, void *userdata)
{
    (*(size_t *)userdata) += ev->data_len == 4;
    return 0;
}

static void test_large_linear(void)
{
    /* 300k events in one 4.5 MB chunk, per line-end style; a quadratic scan (e.g. a fresh
     * memchr for LF per line on the CR-only stream) would take minutes, not milliseconds */
    static const char *const ev[] = {"data: abcd\n\n", "data: abcd\r\n\r\n", "data: abcd\r\r"};
    const size_t n = 300000;
    for (size_t k = 0; k < ELEMENTSOF(ev); k++) {
        size_t el = strlen(ev[k]), count = 0;
        char *big = malloc(n * el);
        CHECK(big != NULL);
        for (size_t i = 0; i < n; i++)
            memcpy(big + i * el, ev[k], el);
        struct sse_parser p;
        sse_parser_init(&p, 0, 0, count_fn, &count);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_INT(sse_feed(&p, big, n * el), 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        CHECK_INT(count, n);
        CHECK(secs < 5.0);
        sse_parser_release(&p);
        free(big);
    }
}

/* A parser reused for a new stream is a fresh one (no last id, no retry, no partial line, no
 * sticky error, the new callback) that keeps its buffers' storage, unless one grew too large. */
static void test_reuse(void)
{
    struct sse_parser p;
    struct rec a, b;
    const char *first = "retry: 9\nid: 4\nevent: ping\ndata: one\n\ndata: partial";
    const char *second = "data: two\n\n";

    rec_init(&a);
    rec_init(&b);
    sse_parser_init(&p, 64, 64, rec_fn, &a);
    CHECK_INT(sse_feed(&p, first, strlen(first)), 0);
    CHECK_STR(sse_last_id(&p), "4");
    CHECK(sse_retry_ms(&p) == 9);
    const struct rblock *kept = p.data;
    sse_parser_reuse(&p, rec_fn, &b, 1024);
    CHECK(p.data == kept); /* its storage, kept */
    CHECK_STR(sse_last_id(&p), "");
    CHECK(sse_retry_ms(&p) == -1);
    CHECK_INT(sse_feed(&p, second, strlen(second)), 0);
    CHECK_STR(buf_str(&a.log), "ping|one|4;");
    CHECK_STR(buf_str(&b.log), "message|two|;"); /* no "partial" and no type left over */

    /* a line over the bound: the sticky error goes with reuse, and a buffer above keep */
    char big[100];
    memset(big, 'x', sizeof(big));
    CHECK(sse_feed(&p, big, sizeof(big)) < 0);
    CHECK(sse_feed(&p, second, strlen(second)) < 0);
    sse_parser_reuse(&p, rec_fn, &b, 16);
    CHECK(p.line.data == NULL); /* grew above 16 bytes: given back */
    CHECK_INT(sse_feed(&p, second, strlen(second)), 0);
    CHECK_STR(buf_str(&b.log), "message|two|;message|two|;");

    sse_parser_release(&p);
    buf_release(&a.log);
    buf_release(&b.log);
}

/* big events: each one's data in the buffer handed out with it, which the callback may hold */
struct held {
    int n;
    struct rblock *block[4];
    const char *data[4];
    size_t len[4];
};

static int hold_fn(const struct sse_event *ev, void *userdata)
{
    struct held *h = userdata;
    CHECK(rblock_holds(ev->block, ev->data, ev->data_len + 1)); /* and its NUL */
    if (h->n < 4 && ev->block) {
        rblock_get(ev->block);
        h->block[h->n] = ev->block;
        h->data[h->n] = ev->data;
        h->len[h->n] = ev->data_len;
    }
    h->n++;
    return 0;
}

/* A data line of megabytes, split across chunks of every kind (the value goes straight into the
 * event's data once "data:" is seen), then a second data line of the same event, then other
 * events: each event's data whole, in its own buffer, and a held buffer never written again. */
static void test_big_events(void)
{
    const size_t big = 3 * 1024 * 1024 + 5;
    const size_t steps[] = {1, 3, 6, 7, 4096, 16384, 70001};
    char *in = malloc(big + 64), *want = malloc(big + 16);
    CHECK(in && want);
    if (!in || !want)
        exit(2);
    for (size_t i = 0; i < big; i++)
        want[i] = (char)('a' + i % 26);
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        size_t step = steps[k], n = 0;
        n += (size_t)sprintf(in + n, "data: ");
        memcpy(in + n, want, big);
        n += big;
        n += (size_t)sprintf(in + n, "\ndata:tail\n\nid: 2\ndata:x\n\ndata: %.5s\n\n", want);
        struct sse_parser p;
        struct held h = {0};
        sse_parser_init(&p, big + 16, big + 16, hold_fn, &h);
        /* step 1: byte by byte over the first bytes and the end, the middle in one chunk */
        for (size_t off = 0; off < n;) {
            size_t c = step;
            if (step == 1 && off >= 64 && off < n - 64)
                c = n - 64 - off;
            if (c > n - off)
                c = n - off;
            CHECK_INT(sse_feed(&p, in + off, c), 0);
            off += c;
        }
        CHECK_INT(h.n, 3);
        CHECK(h.len[0] == big + 5 && memcmp(h.data[0], want, big) == 0 &&
              memcmp(h.data[0] + big, "\ntail", 5) == 0);
        CHECK(h.len[1] == 1 && h.data[1][0] == 'x');
        CHECK(h.len[2] == 5 && memcmp(h.data[2], want, 5) == 0);
        CHECK(h.block[0] != h.block[1] && h.block[1] != h.block[2] && h.block[0] != h.block[2]);
        for (int i = 0; i < 3; i++)
            rblock_put(h.block[i], false);
        sse_parser_release(&p);
    }
    free(in);
    free(want);
}

TESTS_MAIN(test_spec_stock, test_spec_blocks, test_spec_two_events, test_spec_space, test_fields,
           test_line_ends, test_chunking, test_crlf_split, test_bom, test_retry, test_id,
           test_id_commit, test_types, test_mcp, test_bounds, test_fn_error, test_end,
           test_large_linear, test_reuse, test_big_events)
