/* trace.c - metadata-only protocol tracing (trace.h): records, redaction, the bounded file */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/io.h"
#include "credkit/jsonw.h"
#include "credkit/path.h"

#include "core/trace.h"

#define REDACT_SERVER_MAX 120 /* characters, as the adapter's */
#define REDACT_METHOD_MAX 120
#define RECORD_MAX        2048 /* a record is its envelope: far less, whatever the message */

enum trace_file_state {
    TRACE_FILE_UNOPENED, /* no record yet */
    TRACE_FILE_OPEN,
    TRACE_FILE_STOPPED, /* a bound reached or a failure: no more records */
};

struct trace {
    struct loop *loop;
    struct log *log;
    char *file; /* as configured; NULL: the session's own name */
    char *path; /* once opened */
    int64_t max_bytes, max_events;
    int64_t bytes, events; /* accepted so far, buffered included */
    enum trace_file_state state;
    int fd;
    struct buf pending;
    struct loop_timer *flush_timer;
    bool flush_armed;
};

int trace_new(const struct trace_opts *opts, struct trace **ret, struct err *e)
{
    struct trace *t = calloc(1, sizeof(*t));
    if (!t)
        return err_set(e, -ENOMEM, "out of memory");
    t->loop = opts->loop;
    t->log = opts->log;
    t->fd = -1;
    t->max_bytes = opts->max_bytes > 0 ? opts->max_bytes : TRACE_MAX_BYTES_DEFAULT;
    t->max_events = opts->max_events > 0 ? opts->max_events : TRACE_MAX_EVENTS_DEFAULT;
    /* never more than one flush's worth waits in memory, whatever max_bytes says */
    buf_init(&t->pending, TRACE_FLUSH_BYTES + RECORD_MAX);
    if (opts->file && !(t->file = strdup(opts->file))) {
        free(t);
        return err_set(e, -ENOMEM, "out of memory");
    }
    *ret = t;
    return 0;
}

const char *trace_path(const struct trace *t)
{
    return t && t->state != TRACE_FILE_UNOPENED ? t->path : NULL;
}

bool trace_stopped(const struct trace *t)
{
    return t->state == TRACE_FILE_STOPPED;
}

/* ---- redaction ---------------------------------------------------------------------------- */

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether s holds one of the words that name a credential, as a word of its own. */
static bool names_secret(const char *s)
{
    static const char *const words[] = {"token",   "secret", "password",      "passwd", "api_key",
                                        "api-key", "apikey", "authorization", "cookie", NULL};
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && word_char(s[i - 1]))
            continue;
        for (size_t w = 0; words[w]; w++) {
            size_t k = strlen(words[w]);
            if (i + k <= n && strncasecmp(s + i, words[w], k) == 0 &&
                (i + k == n || !word_char(s[i + k])))
                return true;
        }
    }
    return false;
}

static bool scheme_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '.' || c == '-';
}

/* Where the URL that has its "://" at i starts (its scheme), or i when there is no scheme. */
static size_t url_start(const char *s, size_t i)
{
    size_t b = i;
    while (b > 0 && scheme_char(s[b - 1]))
        b--;
    /* the scheme starts with a letter, at a word's start */
    while (b < i && !((s[b] >= 'a' && s[b] <= 'z') || (s[b] >= 'A' && s[b] <= 'Z')))
        b++;
    return b > 0 && word_char(s[b - 1]) ? i : b;
}

static size_t url_end(const char *s, size_t i)
{
    while (s[i] && !strchr(" \t\r\n\f\v\"'<>", s[i]))
        i++;
    return i;
}

/* s redacted as the adapter's redactTraceText(): a text that names a credential is
 * "[REDACTED]", a URL in it "[REDACTED_URL]", "Bearer x" and "Basic x" "[REDACTED_AUTH]", and
 * it is cut to max characters (an ellipsis last). Into out; -ENOMEM. */
static int redact(const char *s, size_t max, struct buf *out)
{
    if (names_secret(s))
        return buf_append_str(out, "[REDACTED]");
    struct buf b;
    buf_init(&b, 0);
    /* verbatim: where the text b ends with was copied from s as it is (after the last
     * replacement), the part of a scheme that can be taken back */
    size_t n = strlen(s), i = 0, verbatim = 0;
    int r = 0;
    while (r >= 0 && i < n) {
        if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/' && url_start(s, i) < i) {
            size_t st = url_start(s, i);
            b.len -= i - (st > verbatim ? st : verbatim); /* the scheme was copied already */
            r = buf_append_str(&b, "[REDACTED_URL]");
            i = verbatim = url_end(s, i + 3);
            continue;
        }
        if ((i == 0 || !word_char(s[i - 1])) &&
            (strncasecmp(s + i, "bearer", 6) == 0 || strncasecmp(s + i, "basic", 5) == 0)) {
            size_t k = i + (tolower((unsigned char)s[i + 1]) == 'e' ? 6 : 5), sp = k;
            while (s[sp] == ' ' || s[sp] == '\t')
                sp++;
            size_t end = sp;
            while (s[end] && (word_char(s[end]) || strchr(".~+/=-", s[end])))
                end++;
            if (sp > k && end > sp && (k == n || !word_char(s[k]))) {
                r = buf_append_str(&b, "[REDACTED_AUTH]");
                i = verbatim = end;
                continue;
            }
        }
        r = buf_append_char(&b, s[i++]);
    }
    /* cut by characters (UTF-8 sequences whole), as the adapter cuts its strings */
    size_t chars = 0, cut = 0;
    for (size_t j = 0; r >= 0 && j < b.len; j++)
        if (((unsigned char)b.data[j] & 0xc0) != 0x80 && ++chars == max)
            cut = j;
    if (r >= 0 && chars > max) {
        b.len = cut;
        r = buf_append_str(&b, "\xe2\x80\xa6");
    }
    if (r >= 0)
        r = buf_append(out, b.data ? b.data : "", b.len);
    buf_release(&b);
    return r;
}

/* ---- records ------------------------------------------------------------------------------ */

static const char *kind_of(struct json_object *msg)
{
    if (json_object_object_get_ex(msg, "method", NULL))
        return json_object_object_get_ex(msg, "id", NULL) ? "request" : "notification";
    return "response";
}

static int iso_now(char *out, size_t size)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (!gmtime_r(&ts.tv_sec, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm))
        return -EINVAL;
    size_t n = strlen(out);
    (void)snprintf(out + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return 0;
}

static int kv_redacted(struct buf *b, const char *key, const char *value, size_t max)
{
    struct buf v;
    buf_init(&v, 0);
    int r = redact(value, max, &v);
    if (r >= 0)
        r = buf_printf(b, ",\"%s\":", key);
    if (r >= 0)
        r = jsonw_string(b, v.data ? v.data : "", v.len);
    buf_release(&v);
    return r;
}

/* The id as the adapter writes it: a number as it is, a string hidden, null as null. */
static int kv_id(struct buf *b, struct json_object *msg)
{
    struct json_object *id = NULL;
    if (!json_object_object_get_ex(msg, "id", &id))
        return 0;
    if (json_object_is_type(id, json_type_int))
        return buf_printf(b, ",\"id\":%" PRId64, json_object_get_int64(id));
    if (json_object_is_type(id, json_type_string))
        return buf_append_str(b, ",\"id\":\"[REDACTED_ID]\"");
    return buf_append_str(b, ",\"id\":null");
}

/* The line of one record, metadata only, into out. */
static int format_record(const struct trace_message *m, struct buf *out)
{
    static const char *const dirs[] = {"outbound", "inbound"};
    static const char *const statuses[] = {"sent", "received", "error"};
    struct json_object *method = NULL, *error = NULL, *code = NULL;
    char ts[48];
    int r = iso_now(ts, sizeof(ts));
    if (r < 0)
        return r;
    r = buf_printf(out, "{\"version\":%d,\"timestamp\":\"%s\",\"direction\":\"%s\"", TRACE_VERSION,
                   ts, dirs[m->direction]);
    if (r >= 0)
        r = kv_redacted(out, "server", m->server, REDACT_SERVER_MAX);
    if (r >= 0)
        r = buf_printf(out, ",\"transport\":\"%s\",\"kind\":\"%s\",\"status\":\"%s\"", m->transport,
                       kind_of(m->msg), statuses[m->status]);
    if (r >= 0 && json_object_object_get_ex(m->msg, "method", &method) &&
        json_object_is_type(method, json_type_string))
        r = kv_redacted(out, "method", json_object_get_string(method), REDACT_METHOD_MAX);
    if (r >= 0)
        r = kv_id(out, m->msg);
    if (r >= 0 && json_object_object_get_ex(m->msg, "error", &error) &&
        json_object_object_get_ex(error, "code", &code) && json_object_is_type(code, json_type_int))
        r = buf_printf(out, ",\"errorCode\":%" PRId64, json_object_get_int64(code));
    if (r >= 0)
        r = buf_printf(out, ",\"bytes\":%zu", m->bytes);
    if (r >= 0 && m->duration_ms >= 0)
        r = buf_printf(out, ",\"durationMs\":%" PRId64, m->duration_ms);
    if (r >= 0)
        r = buf_append_str(out, "}\n");
    return r;
}

/* ---- the file ----------------------------------------------------------------------------- */

static void flush(struct trace *t);

/* No more records: at a bound (error 0) what is buffered is written first; on a failure it is
 * dropped, with the one warning. */
static void stop(struct trace *t, int error, const char *what)
{
    if (t->state == TRACE_FILE_STOPPED)
        return;
    if (!error)
        flush(t);
    if (t->state == TRACE_FILE_STOPPED)
        return; /* the flush failed and said so */
    if (error)
        log_warn(t->log, "protocol trace '%s': %s: %s: no more records are written",
                 t->path ? t->path : t->file, what, strerror(-error));
    t->state = TRACE_FILE_STOPPED;
    buf_reset(&t->pending);
    loop_timer_cancel(t->flush_timer);
    t->flush_timer = NULL;
    t->flush_armed = false;
}

/* The session's own file name under TRACE_DIR_DEFAULT, as the adapter names it. */
static char *session_path(void)
{
    static const char letters[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned char rnd[8];
    char ts[48], name[96];
    if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
        uint64_t x = (uint64_t)getpid() * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)time(NULL);
        memcpy(rnd, &x, sizeof(rnd));
    }
    if (iso_now(ts, sizeof(ts)) < 0)
        return NULL;
    for (char *p = ts; *p; p++)
        if (*p == ':' || *p == '.')
            *p = '-';
    char suffix[9];
    for (size_t i = 0; i < 8; i++)
        suffix[i] = letters[rnd[i] % 36];
    suffix[8] = '\0';
    (void)snprintf(name, sizeof(name), "mcp-%s-%s.jsonl", ts, suffix);
    return path_join(TRACE_DIR_DEFAULT, name);
}

/* Creates (truncates) the file, 0600; its directory 0700 when it has to be created (one that
 * exists is left as it is: it may be the user's or /tmp). */
static int open_file(struct trace *t)
{
    struct stat st;
    struct err e = ERR_INIT;
    t->path = t->file ? strdup(t->file) : session_path();
    char *dir = t->path ? path_dirname(t->path) : NULL;
    int r = -ENOMEM;
    if (!dir)
        goto out;
    if (stat(dir, &st) < 0 && errno == ENOENT && (r = dir_ensure(dir, 0700, &e)) < 0)
        goto out;
    /* O_NONBLOCK: a FIFO in its place must not hang the loop; O_NOFOLLOW: nor a link lead
     * elsewhere */
    t->fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (t->fd < 0) {
        r = -errno;
        goto out;
    }
    r = fstat(t->fd, &st) < 0 ? -errno : 0;
    if (r >= 0 && !S_ISREG(st.st_mode))
        r = -EINVAL;
    /* an older file of the same name may have been more open */
    if (r >= 0 && (st.st_mode & 077) && fchmod(t->fd, 0600) < 0)
        r = -errno;
    if (r >= 0) {
        t->state = TRACE_FILE_OPEN;
        log_info(t->log, "protocol trace: '%s'", t->path);
    }
out:
    err_clear(&e);
    free(dir);
    return r;
}

static void flush(struct trace *t)
{
    size_t off = 0;
    while (t->state == TRACE_FILE_OPEN && off < t->pending.len) {
        ssize_t n = write_nosigpipe(t->fd, t->pending.data + off, t->pending.len - off);
        if (n <= 0) {
            stop(t, n < 0 ? -errno : -EIO, "cannot write");
            return;
        }
        off += (size_t)n;
    }
    buf_reset(&t->pending);
}

static void flush_fired(struct loop_timer *tm, void *userdata)
{
    struct trace *t = userdata;
    (void)tm;
    t->flush_armed = false;
    flush(t);
}

/* A flush a moment from now, unless one is due already: steady traffic is written every
 * TRACE_FLUSH_DELAY_MS, not put off. */
static void flush_later(struct trace *t)
{
    if (t->flush_armed)
        return;
    if (t->flush_timer)
        loop_timer_rearm(t->flush_timer, TRACE_FLUSH_DELAY_MS);
    else if (loop_timer_add(t->loop, TRACE_FLUSH_DELAY_MS, flush_fired, t, &t->flush_timer) < 0) {
        flush(t);
        return;
    }
    t->flush_armed = true;
}

void trace_record(struct trace *t, const struct trace_message *m)
{
    if (!t || t->state == TRACE_FILE_STOPPED)
        return;
    if (t->events >= t->max_events) {
        stop(t, 0, NULL);
        return;
    }
    struct buf line;
    buf_init(&line, RECORD_MAX);
    int r = format_record(m, &line);
    if (r < 0) {
        buf_release(&line);
        return; /* out of memory: this record is lost, not the trace */
    }
    if ((int64_t)line.len > t->max_bytes - t->bytes) {
        buf_release(&line);
        stop(t, 0, NULL); /* as the adapter: the record that would not fit ends the trace */
        return;
    }
    if (t->state == TRACE_FILE_UNOPENED && (r = open_file(t)) < 0) {
        buf_release(&line);
        stop(t, r, "cannot create the file");
        return;
    }
    if (t->pending.len + line.len > TRACE_FLUSH_BYTES)
        flush(t);
    if (t->state == TRACE_FILE_OPEN && buf_append(&t->pending, line.data, line.len) >= 0) {
        t->bytes += (int64_t)line.len;
        t->events++;
        flush_later(t);
    }
    buf_release(&line);
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    flush(t);
    loop_timer_cancel(t->flush_timer);
    if (t->fd >= 0)
        (void)close(t->fd);
    buf_release(&t->pending);
    free(t->path);
    free(t->file);
    free(t);
}
