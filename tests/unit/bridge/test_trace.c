/* test_trace.c - the protocol trace's records (the adapter's shape, each kind of message, a
 * canary in params, results, error messages and data never in the file), redaction of names
 * and methods, the file (0600, its directory created 0700, truncated, the session's own name
 * by default), the bounds (events and bytes: the trace stops, as the adapter's), the flush
 * from the loop, and a file that cannot be created. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/log.h"

#include "core/trace.h"
#include "core/loop.h"
#include "tests.h"
#include "loop_wait.h"

#define CANARY "CANARY-7f3e9a"

static struct loop *loop;
static struct log *lg;

/* The path of name in the test's directory; a few at a time (a ring of buffers). */
static const char *path_in(const char *name)
{
    static char ring[4][4200];
    static unsigned next;
    char *p = ring[next++ % 4];
    (void)snprintf(p, sizeof(ring[0]), "%s/%s", tests_tmpdir(), name);
    return p;
}

static struct trace *open_trace(const char *file, int64_t max_bytes, int64_t max_events)
{
    struct trace_opts o = {
        .loop = loop, .log = lg, .file = file, .max_bytes = max_bytes, .max_events = max_events};
    struct trace *t = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(trace_new(&o, &t, &e), 0);
    return t;
}

static void record(struct trace *t, const char *server, enum trace_direction d,
                   enum trace_status st, const char *json, int64_t ms)
{
    struct json_object *msg = json_tokener_parse(json);
    CHECK(msg != NULL);
    struct trace_message m = {.server = server,
                              .transport = "stdio",
                              .direction = d,
                              .status = st,
                              .msg = msg,
                              .bytes = strlen(json),
                              .duration_ms = ms};
    trace_record(t, &m);
    json_object_put(msg);
}

static char *slurp(const char *path)
{
    struct buf b;
    struct err e = ERR_INIT;
    buf_init(&b, 0);
    if (file_read(path, 0, &b, &e) < 0) {
        buf_release(&b);
        return strdup("");
    }
    return b.data ? b.data : strdup("");
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_records(void)
{
    const char *file = path_in("new/dir/trace.jsonl");
    struct trace *t = open_trace(file, 0, 0);
    CHECK(trace_path(t) == NULL); /* nothing before the first record */
    CHECK_INT(access(path_in("new"), F_OK), -1);
    record(t, "everything", TRACE_OUTBOUND, TRACE_SENT,
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
           "\"arguments\":{\"message\":\"" CANARY "\"}}}",
           -1);
    record(t, "everything", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
           "\"" CANARY "\"}]}}",
           42);
    record(t, "everything", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":\"" CANARY
           "\",\"data\":\"" CANARY "\"}}",
           7);
    record(
        t, "everything", TRACE_INBOUND, TRACE_RECEIVED,
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" CANARY
        "\"}}",
        -1);
    record(t, "everything", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"id\":\"" CANARY "\",\"method\":\"sampling/createMessage\"}", -1);
    record(t, "everything", TRACE_OUTBOUND, TRACE_ERROR,
           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", -1);
    CHECK_STR(trace_path(t), file);
    trace_free(t);

    char *s = slurp(file);
    CHECK_INT(count_lines(s), 6);
    CHECK(strstr(s, CANARY) == NULL);
    CHECK_CONTAINS(s, "{\"version\":1,\"timestamp\":\"20");
    CHECK_CONTAINS(s, "\",\"direction\":\"outbound\",\"server\":\"everything\",\"transport\":"
                      "\"stdio\",\"kind\":\"request\",\"status\":\"sent\",\"method\":"
                      "\"tools/call\",\"id\":3,\"bytes\":");
    CHECK_CONTAINS(s, "\"direction\":\"inbound\",\"server\":\"everything\",\"transport\":"
                      "\"stdio\",\"kind\":\"response\",\"status\":\"received\",\"id\":3,"
                      "\"bytes\":");
    CHECK_CONTAINS(s, ",\"durationMs\":42}\n");
    CHECK_CONTAINS(s, "\"kind\":\"response\",\"status\":\"received\",\"id\":4,"
                      "\"errorCode\":-32602,\"bytes\":");
    CHECK_CONTAINS(s, "\"kind\":\"notification\",\"status\":\"received\",\"method\":"
                      "\"notifications/message\",\"bytes\":");
    CHECK_CONTAINS(s, "\"kind\":\"request\",\"status\":\"received\",\"method\":"
                      "\"sampling/createMessage\",\"id\":\"[REDACTED_ID]\"");
    CHECK_CONTAINS(s, "\"status\":\"error\",\"method\":\"notifications/initialized\"");
    /* each line is a JSON object */
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct json_object *o = json_tokener_parse(line);
        CHECK(o && json_object_is_type(o, json_type_object));
        json_object_put(o);
    }
    free(s);

    struct stat st;
    CHECK_INT(stat(file, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK_INT(stat(path_in("new/dir"), &st), 0);
    CHECK_INT(st.st_mode & 0777, 0700);
}

static void test_redaction(void)
{
    const char *file = path_in("redact.jsonl");
    struct trace *t = open_trace(file, 0, 0);
    record(t, "my token", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    record(t, "srv", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"method\":\"go https://example.com/" CANARY " now\"}", -1);
    record(t, "srv", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"method\":\"use Bearer " CANARY " please\"}", -1);
    /* a URL right after a token that was replaced: nothing of the replacement taken back */
    record(t, "srv", TRACE_INBOUND, TRACE_RECEIVED,
           "{\"jsonrpc\":\"2.0\",\"method\":\"basic " CANARY CANARY CANARY "://x y\"}", -1);
    char longm[400];
    memset(longm, 'm', sizeof(longm) - 1);
    longm[sizeof(longm) - 1] = '\0';
    char json[600];
    (void)snprintf(json, sizeof(json), "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", longm);
    record(t, "srv", TRACE_INBOUND, TRACE_RECEIVED, json, -1);
    trace_free(t);

    char *s = slurp(file);
    CHECK_INT(count_lines(s), 5);
    CHECK(strstr(s, CANARY) == NULL);
    CHECK_CONTAINS(s, "\"method\":\"[REDACTED_AUTH][REDACTED_URL] y\"");
    CHECK_CONTAINS(s, "\"server\":\"[REDACTED]\"");
    CHECK_CONTAINS(s, "\"method\":\"go [REDACTED_URL] now\"");
    CHECK_CONTAINS(s, "\"method\":\"use [REDACTED_AUTH] please\"");
    char cut[200];
    memset(cut, 'm', 119);
    (void)snprintf(cut + 119, sizeof(cut) - 119, "\xe2\x80\xa6\"");
    CHECK_CONTAINS(s, cut);
    CHECK(strstr(s, "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
                    "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm\"") == NULL);
    free(s);
}

static void test_max_events(void)
{
    const char *file = path_in("events.jsonl");
    struct trace *t = open_trace(file, 0, 3);
    for (int i = 0; i < 10; i++)
        record(t, "s", TRACE_OUTBOUND, TRACE_SENT,
               "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}", -1);
    CHECK(trace_stopped(t));
    trace_free(t);
    char *s = slurp(file);
    CHECK_INT(count_lines(s), 3);
    free(s);
}

static void test_max_bytes(void)
{
    const char *file = path_in("bytes.jsonl");
    struct trace *t = open_trace(file, 1000, 0);
    for (int i = 0; i < 100; i++)
        record(t, "s", TRACE_OUTBOUND, TRACE_SENT,
               "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}", -1);
    CHECK(trace_stopped(t));
    trace_free(t);
    char *s = slurp(file);
    size_t n = strlen(s);
    CHECK(n <= 1000);
    CHECK(n > 700); /* as many whole records as fit */
    CHECK(n > 0 && s[n - 1] == '\n');
    free(s);
}

/* An older file of the same name is truncated and made private. */
static void test_truncates(void)
{
    const char *file = path_in("old.jsonl");
    FILE *fp = fopen(file, "w");
    CHECK(fp != NULL);
    if (fp) {
        fputs("old content\nold content\n", fp);
        fclose(fp);
    }
    CHECK_INT(chmod(file, 0644), 0);
    struct trace *t = open_trace(file, 0, 0);
    record(t, "s", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    trace_free(t);
    char *s = slurp(file);
    CHECK_INT(count_lines(s), 1);
    CHECK(strstr(s, "old content") == NULL);
    free(s);
    struct stat st;
    CHECK_INT(stat(file, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
}

/* Without a file: .pi/mcp-traces/mcp-<time>-<random>.jsonl under the working directory. */
static void test_session_name(void)
{
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK_INT(mkdir(path_in("cwd"), 0755), 0);
    CHECK_INT(chdir(path_in("cwd")), 0);
    struct trace *t = open_trace(NULL, 0, 0);
    record(t, "s", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    const char *p = trace_path(t);
    CHECK(p != NULL);
    if (p) {
        CHECK(strncmp(p, ".pi/mcp-traces/mcp-20", 21) == 0);
        size_t n = strlen(p);
        /* mcp-YYYY-MM-DDTHH-MM-SS-mmmZ-xxxxxxxx.jsonl */
        CHECK_INT(n, strlen(".pi/mcp-traces/mcp-2026-12-06T06-30-24-123Z-abcdefgh.jsonl"));
        CHECK(n > 6 && strcmp(p + n - 6, ".jsonl") == 0);
        CHECK(strchr(p, ':') == NULL);
        CHECK_INT(access(p, F_OK), 0);
    }
    struct stat st;
    CHECK_INT(stat(".pi/mcp-traces", &st), 0);
    CHECK_INT(st.st_mode & 0777, 0700);
    trace_free(t);
    CHECK_INT(chdir(cwd), 0);
}

static bool file_has_line(void *ctx)
{
    char *s = slurp(ctx);
    bool yes = strchr(s, '\n') != NULL;
    free(s);
    return yes;
}

/* Buffered, written from the loop a moment later, without the trace being freed. */
static void test_flush_from_loop(void)
{
    char *file = strdup(path_in("loop.jsonl"));
    CHECK(file != NULL);
    struct trace *t = open_trace(file, 0, 0);
    record(t, "s", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    CHECK(wait_for(loop, file_has_line, file, 5000));
    trace_free(t);
    free(file);
}

/* A file that cannot be created stops the trace with a warning; nothing else fails. */
static void test_cannot_create(void)
{
    const char *file = path_in("afile");
    FILE *fp = fopen(file, "w");
    if (fp)
        fclose(fp);
    char below[4300];
    (void)snprintf(below, sizeof(below), "%s/trace.jsonl", file); /* under a regular file */
    struct trace *t = open_trace(below, 0, 0);
    record(t, "s", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    CHECK(trace_stopped(t));
    record(t, "s", TRACE_OUTBOUND, TRACE_SENT, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", -1);
    trace_free(t);
    CHECK_INT(access(below, F_OK), -1);
}

int main(void)
{
    CHECK_INT(loop_new(&loop), 0);
    lg = log_new("test_trace", STDERR_FILENO);
    int r = TESTS_RUN(test_records, test_redaction, test_max_events, test_max_bytes, test_truncates,
                      test_session_name, test_flush_from_loop, test_cannot_create);
    log_free(lg);
    loop_free(loop);
    return r;
}
