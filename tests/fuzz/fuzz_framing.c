/* fuzz_framing.c - libFuzzer target: newline-delimited JSON-RPC over a pipe (bridge/core/framing.c,
 * bridge/core/jsonrpc.c).
 *
 * Input: byte 0 picks the frame bound, byte 1 a cut position, the rest is the stream a server
 * (or an agent) writes. The stream goes through a pipe in two writes (the loop reads between
 * them), then the writer closes. What the framing delivers must be exactly what splitting the
 * stream on '\n' gives (one trailing '\r' off, empty lines skipped), up to the first line over
 * the bound, which must end the reading with -E2BIG; without one, end of input comes after the
 * last line. Every message is then parsed as JSON-RPC: a message that parses and classifies
 * has an id key when it should, and serialising it gives a text that parses to the same kind. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "credkit/err.h"

#include "core/framing.h"
#include "core/jsonrpc.h"
#include "core/loop.h"

#include "fuzz.h"

struct seen {
    struct loop *loop;
    const char *stream; /* the oracle's cursor into the stream */
    size_t left;
    size_t max_frame;
    size_t messages;
    int error; /* 0, or what on_error got */
    bool eof;
};

/* The next message the stream holds after the cursor (advancing it): 1 and *ret_msg, *ret_len;
 * 0 at the end of the stream, -E2BIG when the next line is over the bound. */
static int oracle_next(struct seen *s, const char **ret_msg, size_t *ret_len)
{
    while (s->left > 0) {
        const char *nl = memchr(s->stream, '\n', s->left);
        size_t raw = nl ? (size_t)(nl - s->stream) : s->left;
        const char *msg = s->stream;
        size_t len = raw;
        if (len > 0 && msg[len - 1] == '\r')
            len--;
        s->stream += raw + (nl ? 1 : 0);
        s->left -= raw + (nl ? 1 : 0);
        if (len > s->max_frame)
            return -E2BIG;
        if (len == 0)
            continue;
        *ret_msg = msg;
        *ret_len = len;
        return 1;
    }
    return 0;
}

static void check_jsonrpc(const char *msg, size_t len)
{
    struct jrpc_msg m = {0}, again = {0};
    struct err e = ERR_INIT;
    char key[JRPC_ID_KEY_MAX + 2];
    if (jrpc_parse(msg, len, len, &m, &e) < 0) {
        fuzz_check(e.msg[0] != 0);
        return;
    }
    if (m.kind == JRPC_REQUEST || m.kind == JRPC_RESPONSE)
        fuzz_check(m.id && jrpc_id_key(m.id, key, sizeof(key)));
    if (m.kind == JRPC_REQUEST || m.kind == JRPC_NOTIFICATION)
        fuzz_check(m.method != NULL);
    if (m.kind == JRPC_RESPONSE)
        fuzz_check(!m.result != !m.error || (!m.error && !m.result));
    if (m.kind != JRPC_INVALID) {
        size_t n = 0;
        const char *text = jrpc_serialize(m.root, &n);
        fuzz_check(text != NULL);
        struct err e2 = ERR_INIT;
        fuzz_check(jrpc_parse(text, n, n + 1, &again, &e2) == 0);
        fuzz_check(again.kind == m.kind);
        jrpc_msg_done(&again);
    }
    jrpc_msg_done(&m);
}

static void on_message(const char *msg, size_t len, void *userdata)
{
    struct seen *s = userdata;
    const char *want = NULL;
    size_t want_len = 0;
    fuzz_check(s->error == 0 && !s->eof);
    fuzz_check(oracle_next(s, &want, &want_len) == 1);
    fuzz_check(len == want_len && memcmp(msg, want, len) == 0);
    s->messages++;
    check_jsonrpc(msg, len);
}

static void on_eof(void *userdata)
{
    struct seen *s = userdata;
    const char *want = NULL;
    size_t want_len = 0;
    fuzz_check(s->error == 0 && !s->eof);
    fuzz_check(oracle_next(s, &want, &want_len) == 0); /* nothing left undelivered */
    s->eof = true;
    loop_quit(s->loop, 0);
}

static void on_error(int error, void *userdata)
{
    struct seen *s = userdata;
    const char *want = NULL;
    size_t want_len = 0;
    fuzz_check(s->error == 0 && !s->eof);
    fuzz_check(error == -E2BIG);
    /* the line over the bound is the next one the stream holds, or, when it ends with "\r"
     * and is one byte over, its "\r" may have counted */
    int next = oracle_next(s, &want, &want_len);
    fuzz_check(next == -E2BIG || (next == 1 && want_len == s->max_frame));
    s->error = error;
    loop_quit(s->loop, 0);
}

static void quit_cb(void *userdata)
{
    loop_quit(userdata, 0);
}

/* One iteration of the loop: the framing reads what the pipe holds now. */
static void run_once(struct loop *l)
{
    fuzz_check(loop_defer(l, quit_cb, l) == 0);
    fuzz_check(loop_run(l) == 0);
}

/* Writes p[0..n) into the pipe, letting the framing read whenever the pipe is full, until all
 * of it is written or the framing has given up. */
static void write_part(struct seen *s, int fd, const char *p, size_t n)
{
    while (n > 0 && !s->error) {
        ssize_t w = write(fd, p, n);
        fuzz_check(w > 0 || (w < 0 && errno == EAGAIN));
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        }
        if (n > 0)
            run_once(s->loop);
    }
}

static const size_t bounds[8] = {1, 2, 3, 8, 16, 64, 1024, FRAMING_MAX_FRAME_DEFAULT};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    signal(SIGPIPE, SIG_IGN); /* as mcp-bridge's main does */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct loop *l = NULL;
    struct framing *f = NULL;
    int fds[2];
    if (size < 2 || size > 1024 * 1024)
        return 0;
    const char *stream = (const char *)data + 2;
    size_t len = size - 2, cut = len ? data[1] % (len + 1) : 0;
    struct seen s = {.stream = stream, .left = len, .max_frame = bounds[data[0] & 7]};
    static const struct framing_handler h = {
        .on_message = on_message, .on_eof = on_eof, .on_error = on_error};
    struct framing_opts opts = {.max_frame = s.max_frame};

    fuzz_check(loop_new(&l) == 0);
    s.loop = l;
    fuzz_check(pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    fuzz_check(framing_new(l, fds[0], -1, &h, &opts, &s, &f) == 0);
    write_part(&s, fds[1], stream, cut);
    run_once(l);
    if (!s.error)
        write_part(&s, fds[1], stream + cut, len - cut);
    (void)close(fds[1]);
    while (!s.error && !s.eof)
        fuzz_check(loop_run(l) == 0);
    framing_free(f);
    (void)close(fds[0]);
    loop_free(l);
    return 0;
}
