/* test_browser.c - launching $BROWSER / xdg-open detached, with a script standing in for the
 * browser that reports what it received and how it was started */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credkit/util.h"

#include "browser.h"
#include "tests.h"

static char script[4096];    /* the stand-in browser */
static char out_path[4096];  /* what it writes */
static char empty_dir[4096]; /* a PATH with nothing on it */
static char old_path[8192];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "we");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0 || chmod(path, mode) < 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

/* The script writes, atomically: its pid, where its fds 0-2 point, its blocked and ignored
 * signal masks, a marker from our environment, then each argument on its own line. With
 * BROWSER_TEST_SLEEP it then stays alive as the same process. */
static void setup(void)
{
    const char *dir = tests_tmpdir();
    (void)snprintf(script, sizeof(script), "%s/fake-browser", dir);
    (void)snprintf(out_path, sizeof(out_path), "%s/browser.out", dir);
    (void)snprintf(empty_dir, sizeof(empty_dir), "%s/empty", dir);
    if (mkdir(empty_dir, 0700) < 0 && errno != EEXIST)
        exit(2);
    write_file(script,
               "#!/bin/sh\n"
               "out=\"$BROWSER_TEST_OUT\"\n"
               "fds=$(for f in 0 1 2; do readlink \"/proc/$$/fd/$f\"; done)\n"
               "{\n"
               "  echo \"$$\"\n"
               "  echo \"$fds\"\n"
               /* read without forking: a shell blocks every signal for a moment around
                * its own fork(), and a forked grep could catch it in that moment */
               "  while IFS= read -r l; do case \"$l\" in SigBlk:*) s1=\"$l\";; "
               "SigIgn:*) s2=\"$l\";; esac; done < /proc/$$/status\n"
               "  printf '%s\\n%s\\n' \"$s1\" \"$s2\"\n"
               "  echo \"marker=$BROWSER_TEST_MARKER\"\n"
               "  for a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
               "} > \"$out.tmp\"\n"
               "mv \"$out.tmp\" \"$out\"\n"
               "if [ -n \"$BROWSER_TEST_SLEEP\" ]; then exec sleep \"$BROWSER_TEST_SLEEP\"; fi\n",
               0755);
    (void)setenv("BROWSER_TEST_OUT", out_path, 1);
    (void)setenv("BROWSER_TEST_MARKER", "passed-through", 1);
    const char *p = getenv("PATH");
    (void)snprintf(old_path, sizeof(old_path), "%s", p ? p : "/usr/bin:/bin");
}

static void reset_out(void)
{
    (void)unlink(out_path);
}

/* Waits (bounded) for the script's report; returns its lines in lines[], their count. */
static int read_out(char lines[][1024], int max, int max_ms)
{
    FILE *f = NULL;
    for (int t = 0; t <= max_ms && !f; t += 20) {
        f = fopen(out_path, "re");
        if (!f)
            sleep_ms(20);
    }
    if (!f)
        return -1;
    int n = 0;
    while (n < max && fgets(lines[n], 1024, f)) {
        lines[n][strcspn(lines[n], "\n")] = 0;
        n++;
    }
    fclose(f);
    return n;
}

static bool out_exists(void)
{
    return access(out_path, F_OK) == 0;
}

static void check_no_children(void)
{
    errno = 0;
    CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
    CHECK_INT(errno, ECHILD);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* The parent pid, from /proc/PID/stat ("pid (comm) state ppid ..."). */
static long ppid_of(long pid)
{
    char path[64], buf[1024];
    (void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    long ppid = -1;
    if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
        return -1;
    return ppid;
}

#define URL "https://auth.example.com/authorize?response_type=code&state=a;b|c&x=$(id)`id`"

static void test_arguments(void)
{
    struct err e = ERR_INIT;
    char browser[8192], lines[32][1024];
    (void)snprintf(browser, sizeof(browser), " %s  --new-window\t-x ", script);
    (void)setenv("BROWSER", browser, 1);
    reset_out();
    int fds = count_fds();

    CHECK_INT(browser_open(URL, &e), 0);
    int n = read_out(lines, 32, 5000);
    CHECK_INT(n, 10);
    if (n == 10) {
        CHECK_STR(lines[1], "/dev/null");
        CHECK_STR(lines[2], "/dev/null");
        CHECK_STR(lines[3], "/dev/null");
        CHECK_STR(lines[4], "SigBlk:\t0000000000000000");
        CHECK_STR(lines[6], "marker=passed-through"); /* the environment as is */
        CHECK_STR(lines[7], "--new-window");
        CHECK_STR(lines[8], "-x");
        CHECK_STR(lines[9], URL); /* verbatim, last, one argument, no shell */
    }
    check_no_children();
    CHECK_INT(count_fds(), fds);
}

/* Run as the browser itself (BROWSER pointing at this very program): copy our
 * /proc/self/status, as exec'd, to $BROWSER_TEST_SELF and leave before main(). A shell would
 * not do as a witness here: dash clears its signal mask when it starts. */
__attribute__((constructor)) static void fake_browser_main(void)
{
    const char *out = getenv("BROWSER_TEST_SELF");
    if (!out)
        return;
    char tmp[4200], buf[8192];
    (void)snprintf(tmp, sizeof(tmp), "%s.tmp", out);
    int in = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ssize_t n;
    while (in >= 0 && fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(fd, buf, (size_t)n) != n)
            _exit(1);
    (void)close(fd);
    (void)rename(tmp, out);
    _exit(0);
}

/* The value of a "Name:\tHEX" line of a /proc status file, ~0 when missing. */
static unsigned long long status_mask(char lines[][1024], int n, const char *name)
{
    size_t len = strlen(name);
    unsigned long long v = ~0ULL;
    for (int i = 0; i < n; i++)
        if (strncmp(lines[i], name, len) == 0 && lines[i][len] == ':' &&
            sscanf(lines[i] + len + 1, " %llx", &v) == 1)
            return v;
    return ~0ULL;
}

/* The browser starts with default dispositions and an empty mask, whatever ours are. */
static void test_signals_reset(void)
{
    struct err e = ERR_INIT;
    char lines[128][1024], self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    CHECK(len > 0);
    if (len <= 0)
        return;
    self[len] = 0;
    (void)setenv("BROWSER", self, 1);
    (void)setenv("BROWSER_TEST_SELF", out_path, 1);
    reset_out();
    sigset_t usr1, old;
    (void)sigemptyset(&usr1);
    (void)sigaddset(&usr1, SIGUSR1);
    (void)sigprocmask(SIG_BLOCK, &usr1, &old);
    struct sigaction ign = {.sa_handler = SIG_IGN}, prev;
    (void)sigemptyset(&ign.sa_mask);
    (void)sigaction(SIGUSR2, &ign, &prev);

    CHECK_INT(browser_open("http://127.0.0.1:8080/x", &e), 0);

    (void)sigaction(SIGUSR2, &prev, NULL);
    (void)sigprocmask(SIG_SETMASK, &old, NULL);
    (void)unsetenv("BROWSER_TEST_SELF");
    int n = read_out(lines, 128, 5000);
    CHECK(n > 10);
    CHECK_INT(status_mask(lines, n, "SigBlk"), 0);
    CHECK_INT(status_mask(lines, n, "SigIgn"), 0);
    check_no_children();
}

static void test_detached(void)
{
    struct err e = ERR_INIT;
    char lines[32][1024];
    (void)setenv("BROWSER", script, 1);
    (void)setenv("BROWSER_TEST_SLEEP", "5", 1);
    reset_out();

    int64_t t0 = now_mono_ms();
    CHECK_INT(browser_open("https://example.com/", &e), 0);
    CHECK(now_mono_ms() - t0 < 1000); /* not waiting for the browser */
    (void)unsetenv("BROWSER_TEST_SLEEP");

    int n = read_out(lines, 32, 5000);
    CHECK_INT(n, 8);
    long pid = n > 0 ? strtol(lines[0], NULL, 10) : 0;
    CHECK(pid > 1);
    if (pid > 1) {
        pid_t sid = getsid((pid_t)pid);
        CHECK(sid > 0);
        CHECK(sid != getsid(0)); /* its own session */
        CHECK(getpgid((pid_t)pid) != getpgrp());
        CHECK(ppid_of(pid) != getpid()); /* not our child */
        CHECK(ppid_of(pid) > 0);         /* still running, reparented */
        check_no_children();             /* and the intermediate child was reaped */
        (void)kill((pid_t)pid, SIGTERM);
    }
}

static void test_refused(void)
{
    static const char *const bad[] = {
        "file:///etc/passwd",
        "javascript:x",
        "JAVASCRIPT:alert(1)",
        "data:text/html,<script>x</script>",
        "ftp://example.com/",
        "httpx://example.com/",
        "http//example.com/",
        "http:example.com",
        " http://example.com/",
        "http://exa mple.com/",
        "http://example.com/\n",
        "http://example.com/\x7f",
        "http://",
        "",
    };
    struct err e = ERR_INIT;
    (void)setenv("BROWSER", script, 1);
    reset_out();
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        err_clear(&e);
        int r = browser_open(bad[i], &e);
        CHECK_INT(r, -EINVAL);
        CHECK(e.msg[0] != 0);
        if (r != -EINVAL)
            fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
    }
    CHECK_INT(browser_open(NULL, &e), -EINVAL);
    err_clear(&e);
    CHECK_INT(browser_open("javascript:alert(document.cookie)", &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "'javascript'");
    sleep_ms(200);
    CHECK(!out_exists()); /* nothing was started */

    /* schemes are case-insensitive */
    CHECK_INT(browser_open("HTTPS://EXAMPLE.COM/Path", &e), 0);
    char lines[32][1024];
    int n = read_out(lines, 32, 5000);
    CHECK_INT(n, 8);
    if (n == 8)
        CHECK_STR(lines[7], "HTTPS://EXAMPLE.COM/Path");
    check_no_children();
}

static void test_missing_program(void)
{
    struct err e = ERR_INIT;
    (void)setenv("BROWSER", "/nonexistent/dir/my-browser --flag", 1);
    int fds = count_fds();
    CHECK_INT(browser_open("https://example.com/", &e), -ENOENT);
    CHECK_INT(e.code, -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot start the browser '/nonexistent/dir/my-browser'");
    CHECK(strstr(e.msg, "example.com") == NULL); /* the URL is not repeated in errors */
    check_no_children();
    CHECK_INT(count_fds(), fds);

    /* a file that is not executable */
    char path[4200];
    (void)snprintf(path, sizeof(path), "%s/not-executable", tests_tmpdir());
    write_file(path, "#!/bin/sh\nexit 0\n", 0644);
    (void)setenv("BROWSER", path, 1);
    err_clear(&e);
    CHECK_INT(browser_open("https://example.com/", &e), -EACCES);
    CHECK_CONTAINS(e.msg, "not-executable");
    check_no_children();
}

static void test_xdg_open(void)
{
    struct err e = ERR_INIT;
    char lines[32][1024];

    /* BROWSER unset (or blank) means xdg-open; with an empty PATH there is none */
    (void)unsetenv("BROWSER");
    (void)setenv("PATH", empty_dir, 1);
    CHECK_INT(browser_open("https://example.com/", &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "cannot start the browser 'xdg-open'");
    CHECK_CONTAINS(e.msg, "BROWSER");
    (void)setenv("BROWSER", " \t ", 1);
    err_clear(&e);
    CHECK_INT(browser_open("https://example.com/", &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "'xdg-open'");
    check_no_children();

    /* an xdg-open found on PATH gets the URL as its only argument */
    char xdg[4200];
    (void)snprintf(xdg, sizeof(xdg), "%s/xdg-open", empty_dir);
    if (symlink(script, xdg) < 0 && errno != EEXIST)
        exit(2);
    (void)unsetenv("BROWSER");
    reset_out();
    char path[sizeof(empty_dir) + sizeof(old_path) + 2];
    (void)snprintf(path, sizeof(path), "%s:%s", empty_dir, old_path); /* sh, grep, mv */
    (void)setenv("PATH", path, 1);
    err_clear(&e);
    CHECK_INT(browser_open("http://localhost:1234/cb", &e), 0);
    int n = read_out(lines, 32, 5000);
    CHECK_INT(n, 8);
    if (n == 8)
        CHECK_STR(lines[7], "http://localhost:1234/cb");
    (void)unlink(xdg);
    (void)setenv("PATH", old_path, 1);
    check_no_children();
}

static void test_browser_limits(void)
{
    struct err e = ERR_INIT;
    char many[4096] = "";
    for (int i = 0; i < 70; i++)
        strcat(many, "w ");
    (void)setenv("BROWSER", many, 1);
    CHECK_INT(browser_open("https://example.com/", &e), -E2BIG);
    CHECK_CONTAINS(e.msg, "BROWSER");
    check_no_children();
}

TESTS_MAIN(setup, test_arguments, test_signals_reset, test_detached, test_refused,
           test_missing_program, test_xdg_open, test_browser_limits)
