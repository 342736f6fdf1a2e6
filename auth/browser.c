/* browser.c - starting the user's browser on the authorization URL, detached.
 *
 * Double fork: the intermediate child starts a new session and forks the browser, then exits
 * at once and is reaped here; the browser is reparented to init (or the nearest subreaper) and
 * never becomes our zombie. Exec failures come back through a CLOEXEC pipe, which reads EOF as
 * soon as the exec succeeded. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "credkit/child.h"
#include "credkit/util.h"

#include "browser.h"

#define BROWSER_CMD_MAX  4096 /* bytes of $BROWSER */
#define BROWSER_ARGS_MAX 64   /* words of $BROWSER */
#define BROWSER_START_MS 5000 /* from fork to exec: anything longer is a hang */

/* Only absolute http(s) URLs with a host, and nothing a URL never contains (spaces, control
 * characters): the string goes verbatim to a program that may interpret it loosely. The
 * prefix check on the raw string and the scheme of the parsed URL must agree, so that no
 * leniency of the parser (a guessed scheme, leading blanks) lets another kind through. */
static int check_url(const char *url, struct err *e)
{
    static const char refused[] = "refusing to open '%s' in a browser: only http and https "
                                  "URLs are opened";
    CURLU *u = NULL;
    char *scheme = NULL, *host = NULL;
    int r;

    if (!url || !*url)
        return err_set(e, -EINVAL, "no URL to open in a browser");
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return err_set(e, -EINVAL, "refusing to open a URL with spaces or control characters");

    bool https = strncasecmp(url, "https://", 8) == 0;
    if (!https && strncasecmp(url, "http://", 7) != 0) {
        /* a refused URL is not the authorization URL we built: naming the scheme is enough */
        const char *colon = strchr(url, ':');
        int n = colon ? (int)(colon - url) : (int)strlen(url);
        if (n > 32)
            n = 32;
        return err_set(e, -EINVAL,
                       "refusing to open a '%.*s' URL in a browser: only http and https URLs "
                       "are opened",
                       n, url);
    }

    u = curl_url();
    if (!u) {
        r = err_set(e, -ENOMEM, "cannot parse the URL: out of memory");
        goto out;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
        r = err_set(e, -EINVAL, "refusing to open a malformed URL in a browser");
        goto out;
    }
    if (strcasecmp(scheme, https ? "https" : "http") != 0) {
        r = err_set(e, -EINVAL, refused, scheme);
        goto out;
    }
    r = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return r;
}

/* argv for the browser: $BROWSER split on ASCII whitespace (no shell, no quoting) when it has
 * any word, else xdg-open; then url. The words point into *ret_words. */
static int build_argv(const char *url, char ***ret_argv, char **ret_words, struct err *e)
{
    char **argv = NULL, *words = NULL;
    size_t n = 0;
    int r;

    argv = calloc(BROWSER_ARGS_MAX + 2, sizeof(*argv));
    if (!argv) {
        r = err_set(e, -ENOMEM, "cannot start the browser: out of memory");
        goto out;
    }

    const char *env = getenv("BROWSER");
    if (env && strlen(env) > BROWSER_CMD_MAX) {
        r = err_set(e, -E2BIG, "BROWSER is longer than %d bytes", BROWSER_CMD_MAX);
        goto out;
    }
    words = strdup(env ? env : "");
    if (!words) {
        r = err_set(e, -ENOMEM, "cannot start the browser: out of memory");
        goto out;
    }
    for (char *p = words; *p;) {
        while (*p && isspace((unsigned char)*p))
            *p++ = '\0';
        if (!*p)
            break;
        if (n == BROWSER_ARGS_MAX) {
            r = err_set(e, -E2BIG, "BROWSER has more than %d words", BROWSER_ARGS_MAX);
            goto out;
        }
        argv[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
    }
    if (n == 0)
        argv[n++] = (char *)"xdg-open";
    argv[n++] = (char *)url;
    argv[n] = NULL;

    *ret_argv = argv;
    argv = NULL;
    *ret_words = words;
    words = NULL;
    r = 0;
out:
    free(argv);
    free(words);
    return r;
}

/* --- In the forked children: async-signal-safe calls only, then exec or _exit. --- */

static _noreturn_ void report_and_exit(int fd, int errnum)
{
    ssize_t n;
    do
        n = write(fd, &errnum, sizeof(errnum));
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* The browser process: default signal dispositions, empty mask, /dev/null for 0, 1 and 2,
 * the environment as is. */
static _noreturn_ void exec_browser(char *const *argv, int report_fd)
{
    if (child_reset_signals() < 0)
        report_and_exit(report_fd, errno);

    /* keep the report pipe out of the way of the dup2()s below */
    if (report_fd <= STDERR_FILENO) {
        int fd = fcntl(report_fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
        if (fd < 0)
            report_and_exit(report_fd, errno);
        report_fd = fd;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0)
        report_and_exit(report_fd, errno);
    for (int i = 0; i <= STDERR_FILENO; i++)
        if (null_fd != i && dup2(null_fd, i) < 0)
            report_and_exit(report_fd, errno);
    if (null_fd > STDERR_FILENO)
        (void)close(null_fd);
    else
        (void)fcntl(null_fd, F_SETFD, 0); /* it is one of 0/1/2 itself: keep it across exec */

#ifdef CLOSE_RANGE_CLOEXEC
    /* The browser outlives us: it must not keep any descriptor of ours open (the callback
     * listener above all), even one a library forgot to mark O_CLOEXEC. */
    (void)close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
    (void)execvp(argv[0], argv);
    report_and_exit(report_fd, errno);
}

static _noreturn_ void intermediate_child(char *const *argv, int report_fd)
{
    /* a new session: no controlling terminal, no job-control signals from ours */
    if (setsid() < 0)
        report_and_exit(report_fd, errno);
    pid_t pid = fork();
    if (pid < 0)
        report_and_exit(report_fd, errno);
    if (pid == 0)
        exec_browser(argv, report_fd);
    _exit(0); /* our copy of the report pipe closes with us */
}

/* --- The parent side. --- */

/* EOF once the browser has exec'd (or every writer died): *ret_errnum 0; the errno the
 * grandchild wrote when it could not. Bounded: an exec that hangs (a stuck network file system)
 * does not hang us. */
static int read_exec_report(int fd, const char *name, int *ret_errnum, struct err *e)
{
    int errnum = 0;
    int64_t deadline = now_mono_ms() + BROWSER_START_MS;
    for (;;) {
        int64_t left = deadline - now_mono_ms();
        if (left <= 0)
            return err_set(e, -ETIMEDOUT, "the browser '%s' did not start within %ds", name,
                           BROWSER_START_MS / 1000);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return err_set(e, -errno, "cannot start the browser '%s': %s", name, strerror(errno));
        if (pr == 0)
            continue;
        ssize_t n = read(fd, &errnum, sizeof(errnum));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(e, -errno, "cannot start the browser '%s': %s", name, strerror(errno));
        if (n == 0)
            errnum = 0;
        else if (n != (ssize_t)sizeof(errnum) || errnum <= 0)
            return err_set(e, -EIO, "cannot start the browser '%s': it failed before starting",
                           name);
        *ret_errnum = errnum;
        return 0;
    }
}

int browser_open(const char *url, struct err *e)
{
    char **argv = NULL, *words = NULL;
    int rep[2] = {-1, -1};
    sigset_t all, old;
    bool masked = false;
    pid_t pid = -1;
    int r;

    r = check_url(url, e);
    if (r < 0)
        goto out;
    r = build_argv(url, &argv, &words, e);
    if (r < 0)
        goto out;
    const char *name = argv[0];

    /* the grandchild writes errno here when it cannot exec; a successful exec closes it */
    if (pipe2(rep, O_CLOEXEC) < 0) {
        r = err_set(e, -errno, "cannot start the browser '%s': %s", name, strerror(errno));
        goto out;
    }

    /* Block every signal across fork(): no handler of ours may run in the children before
     * the grandchild has reset the dispositions. */
    (void)sigfillset(&all);
    r = -pthread_sigmask(SIG_SETMASK, &all, &old);
    if (r < 0) {
        r = err_set(e, r, "cannot start the browser '%s': %s", name, strerror(-r));
        goto out;
    }
    masked = true;

    pid = fork();
    if (pid < 0) {
        r = err_set(e, -errno, "cannot start the browser '%s': %s", name, strerror(errno));
        goto out;
    }
    if (pid == 0) {
        (void)close(rep[0]);
        intermediate_child(argv, rep[1]);
    }

    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    masked = false;
    (void)close(rep[1]);
    rep[1] = -1;

    /* The intermediate child exits right after its fork: reap it now. */
    int status;
    pid_t w;
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    pid = -1;

    int errnum = 0;
    r = read_exec_report(rep[0], name, &errnum, e);
    if (r < 0)
        goto out;
    if (errnum > 0) {
        r = err_set(e, -errnum, "cannot start the browser '%s': %s%s", name, strerror(errnum),
                    errnum == ENOENT && strcmp(name, "xdg-open") == 0
                        ? " (set BROWSER to the command of a browser, or open the URL yourself)"
                        : "");
        goto out;
    }
    r = 0;
out:
    if (masked)
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rep[0] >= 0)
        (void)close(rep[0]);
    if (rep[1] >= 0)
        (void)close(rep[1]);
    free(argv);
    free(words);
    return r;
}
