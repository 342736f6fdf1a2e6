/* test_upstream_report.c - what the log says of a server that fails (upstream_connect.c's
 * reports): a crash loop is one warning with the server's last stderr lines (escaped, the
 * exit status named), its retries at debug level; a server that comes back is "working again"
 * at info, and fails anew with a warning again only as a new episode; a server that never
 * answers initialize is one warning with what it said; "debug": true logs the
 * server's stderr at the default level (warn), without it at debug. The scripted server of upstream_fixture.h
 * behind a shell that fails while a flag file is absent. */
#include <fcntl.h>

#include "upstream_fixture.h"

/* A log into a file of its own, read back by log_text(). */
struct flog {
    char path[4200];
    struct log *log;
};

static void flog_open(struct flog *f, const char *name, enum log_level level)
{
    snprintf(f->path, sizeof(f->path), "%s/%s.log", tests_tmpdir(), name);
    int fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    f->log = log_new("bridge", fd);
    CHECK(f->log != NULL);
    log_set_level(f->log, level);
}

/* The whole log so far (static; the next call replaces it). */
static const char *flog_text(struct flog *f)
{
    static char text[1 << 16];
    FILE *fp = fopen(f->path, "r");
    size_t n = fp ? fread(text, 1, sizeof(text) - 1, fp) : 0;
    text[n] = '\0';
    if (fp)
        fclose(fp);
    return text;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* sh -c SCRIPT as the entry's command; raw (borrowed) as its entry as written. */
struct sh_def {
    struct mcp_server s;
    char *args[4];
};

static void sh_def(struct sh_def *d, const char *name, const char *script, struct json_object *raw)
{
    memset(d, 0, sizeof(*d));
    d->args[0] = "-c";
    d->args[1] = (char *)script;
    d->s.name = (char *)name;
    d->s.source = "test";
    d->s.transport = MCP_TRANSPORT_STDIO;
    d->s.command = "/bin/sh";
    d->s.args = d->args;
    d->s.env = empty_v;
    d->s.headers = empty_v;
    d->s.raw = raw;
}

/* The upstream on log f, without a stderr handler of its own (the upstream logs the lines). */
static struct upstream *start_timed(struct rec *r, const struct mcp_server *s, struct flog *f,
                                    int64_t connect_timeout_ms)
{
    static const struct upstream_handler h = {.on_state = on_state};
    struct upstream_opts o = {
        .loop = r->loop,
        .log = f->log,
        .server = s,
        .connect_timeout_ms = connect_timeout_ms,
    };
    struct err e = ERR_INIT;
    struct upstream *u = NULL;
    int k = upstream_new(&o, &h, r, &u, &e);
    CHECK_INT(k, 0);
    if (k < 0)
        exit(2);
    r->u = u;
    return u;
}

static struct upstream *start_logged(struct rec *r, const struct mcp_server *s, struct flog *f)
{
    return start_timed(r, s, f, 0);
}

static void test_crash_loop(void)
{
    struct rec r = {.loop = new_loop()};
    struct flog f;
    struct sh_def d;
    flog_open(&f, "crash", LOG_WARN);
    sh_def(&d, "crashy", "echo 'fatal: KEY is not set' >&2; printf 'a\\033[2Jb\\n' >&2; exit 3",
           NULL);
    struct upstream *u = start_logged(&r, &d.s, &f);
    upstream_connect(u);
    /* four failures: 0.5 + 1 + 2 s of backoff */
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 4, 15000));
    upstream_free(u);
    r.u = NULL;
    const char *t = flog_text(&f);
    CHECK_INT(count(t, "bridge: warning: server 'crashy': the server exited with status 3; "
                       "connecting again in "),
              1);
    CHECK_INT(count(t, "bridge: warning: server 'crashy': stderr (its last lines): fatal: KEY is "
                       "not set\n"),
              1);
    CHECK_INT(count(t, "bridge: warning: server 'crashy': stderr: a\\x1b[2Jb\n"), 1);
    CHECK(strchr(t, '\x1b') == NULL);
    CHECK_INT(count(t, "\n"), 3); /* nothing else at the default level */
    if (count(t, "\n") != 3)
        fprintf(stderr, "--- the log:\n%s", t);
    log_free(f.log);
    rec_release(&r);
}

/* A server that writes lines that are not JSON: a few warnings a window, not one a line, and
 * the server still works. */
static void test_junk_rate_limited(void)
{
    struct rec r = {.loop = new_loop()};
    struct flog f;
    struct sh_def d;
    char script[4400];
    snprintf(script, sizeof(script),
             "i=0; while [ $i -lt 200 ]; do echo \"junk $i\"; i=$((i+1)); done; exec '%s' --server "
             "basic",
             self_exe);
    flog_open(&f, "junk", LOG_WARN);
    sh_def(&d, "noisy", script, NULL);
    struct upstream *u = start_logged(&r, &d.s, &f);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    const char *t = flog_text(&f);
    CHECK_INT(count(t, "warning: server 'noisy': skipped a message that is not JSON"),
              LOG_RATELIMIT_BURST);
    CHECK_INT(count(t, "suppressed"), 0); /* said by the first one of a later window */
    upstream_free(u);
    r.u = NULL;
    /* or, when none comes, at the end of the server */
    t = flog_text(&f);
    CHECK_INT(count(t, "warning: server 'noisy': 195 similar messages suppressed"), 1);
    log_free(f.log);
    rec_release(&r);
}

static void test_working_again(void)
{
    struct rec r = {.loop = new_loop()};
    struct flog f;
    struct sh_def d;
    char flag[4300], script[9000];
    snprintf(flag, sizeof(flag), "%s/flaky-ok", tests_tmpdir());
    unlink(flag);
    snprintf(script, sizeof(script),
             "[ -f '%s' ] && exec '%s' --server basic; echo 'not yet' >&2; exit 1", flag, self_exe);
    flog_open(&f, "again", LOG_INFO);
    sh_def(&d, "flaky", script, NULL);
    struct upstream *u = start_logged(&r, &d.s, &f);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 2, 10000));
    FILE *fp = fopen(flag, "w");
    CHECK(fp != NULL);
    if (fp)
        fclose(fp);
    CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
    const char *t = flog_text(&f);
    CHECK_INT(count(t, "warning: server 'flaky': the server exited with status 1"), 1);
    CHECK_INT(count(t, "warning: server 'flaky': stderr (its last line): not yet\n"), 1);
    CHECK_INT(count(t, "bridge: warning: server 'flaky' is working again\n"), 1);

    /* it fails again at once: the same episode, not a new warning */
    unlink(flag);
    upstream_disconnect(u);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 3, 10000));
    t = flog_text(&f);
    CHECK_INT(count(t, "warning: server 'flaky': the server exited with status 1"), 1);
    upstream_free(u);
    r.u = NULL;
    log_free(f.log);
    rec_release(&r);
}

/* a server that never answers initialize: the timeout, once, with what it said */
static void test_no_answer(void)
{
    struct rec r = {.loop = new_loop()};
    struct flog f;
    struct sh_def d;
    flog_open(&f, "hung", LOG_WARN);
    sh_def(&d, "hung", "echo 'waiting for a licence server' >&2; exec sleep 1000", NULL);
    struct upstream *u = start_timed(&r, &d.s, &f, 300);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 3, 15000));
    upstream_free(u);
    r.u = NULL;
    const char *t = flog_text(&f);
    CHECK_INT(count(t, "warning: server 'hung': connect timed out after 300 ms; connecting again"),
              1);
    CHECK_INT(count(t, "warning: server 'hung': stderr (its last line): waiting for a licence "
                       "server\n"),
              1);
    log_free(f.log);
    rec_release(&r);
}

/* a line over the size bound: the server is dropped, said once at the default level however
 * often it does it again */
static void test_oversize(void)
{
    struct rec r = {.loop = new_loop()};
    struct flog f;
    struct sh_def d;
    flog_open(&f, "big", LOG_WARN);
    sh_def(&d, "big", "head -c 17000000 /dev/zero | tr '\\000' a; echo; exec sleep 1000", NULL);
    struct upstream *u = start_logged(&r, &d.s, &f);
    upstream_connect(u);
    CHECK(wait_state(&r, UPSTREAM_BACKOFF, 3, 30000));
    upstream_free(u);
    r.u = NULL;
    const char *t = flog_text(&f);
    CHECK_INT(count(t, "the server sent a message over the size bound"), 1);
    CHECK_INT(count(t, "warning: server 'big': "), 1);
    log_free(f.log);
    rec_release(&r);
}

/* "debug": true: its stderr at the default level (warn); without it at debug */
static void test_debug_key(void)
{
    for (int debug = 0; debug <= 1; debug++) {
        struct rec r = {.loop = new_loop()};
        struct flog f;
        struct sh_def d;
        char script[9000];
        snprintf(script, sizeof(script),
                 "echo 'hello from\\033 stderr' >&2; exec '%s' --server basic", self_exe);
        struct json_object *raw = json_tokener_parse(debug ? "{\"debug\": true}" : "{}");
        flog_open(&f, debug ? "debug-on" : "debug-off", LOG_WARN);
        sh_def(&d, "talk", script, raw);
        struct upstream *u = start_logged(&r, &d.s, &f);
        upstream_connect(u);
        CHECK(wait_state(&r, UPSTREAM_READY, 1, 10000));
        pid_t pid = call_pid(&r); /* a round trip: the stderr line came before the answer */
        CHECK(pid > 0);
        const char *t = flog_text(&f);
        CHECK_INT(count(t, "bridge: warning: server 'talk' (stderr): hello from\\x1b stderr\n"),
                  debug);
        upstream_free(u);
        r.u = NULL;
        json_object_put(raw);
        log_free(f.log);
        rec_release(&r);
    }
}

UPSTREAM_TEST_MAIN(test_crash_loop, test_junk_rate_limited, test_working_again, test_no_answer,
                   test_oversize, test_debug_key)
