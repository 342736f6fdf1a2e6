/* test_path.c - agent directory resolution, display paths, joins */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/path.h"

#include "tests.h"

static void test_agent_dir_override(void)
{
    struct err e = ERR_INIT;
    char *d = NULL;

    setenv("HOME", "/home/user", 1);
    setenv("PI_CODING_AGENT_DIR", "/srv/agent/", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, "/srv/agent");
    free(d);
    d = NULL;

    char *f = NULL;
    CHECK_INT(path_agent_file("secrets.json", &f, &e), 0);
    CHECK_STR(f, "/srv/agent/secrets.json");
    free(f);

    /* "~/x" means what pi makes of it */
    setenv("PI_CODING_AGENT_DIR", "~/other", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, "/home/user/other");
    free(d);
    d = NULL;

    setenv("PI_CODING_AGENT_DIR", "~", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, "/home/user");
    free(d);
    unsetenv("PI_CODING_AGENT_DIR");
}

static void test_agent_dir_home_fallback(void)
{
    struct err e = ERR_INIT;
    char *d = NULL;

    unsetenv("PI_CODING_AGENT_DIR");
    setenv("HOME", "/home/user/", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, "/home/user/.pi/agent");
    free(d);
    d = NULL;

    /* set but empty counts as unset */
    setenv("PI_CODING_AGENT_DIR", "", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, "/home/user/.pi/agent");
    free(d);
    d = NULL;
    unsetenv("PI_CODING_AGENT_DIR");

    /* no usable HOME: the passwd entry */
    struct passwd *pw = getpwuid(geteuid());
    CHECK(pw != NULL);
    if (!pw)
        return;
    char expect[4096];
    snprintf(expect, sizeof(expect), "%s/.pi/agent",
             strcmp(pw->pw_dir, "/") == 0 ? "" : pw->pw_dir);

    setenv("HOME", "relative/home", 1);
    char *h = NULL;
    CHECK_INT(path_home(&h), 0);
    CHECK_STR(h, pw->pw_dir);
    free(h);

    unsetenv("HOME");
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, expect);
    free(d);
    setenv("HOME", "/home/user", 1);
}

static void test_agent_dir_relative(void)
{
    struct err e = ERR_INIT;
    char *d = NULL;
    char old[4096], cwd[4096], expect[8192];

    CHECK(getcwd(old, sizeof(old)) != NULL);
    CHECK_INT(chdir(tests_tmpdir()), 0);
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    snprintf(expect, sizeof(expect), "%s/rel/agent", cwd);

    setenv("PI_CODING_AGENT_DIR", "rel/agent", 1);
    CHECK_INT(path_agent_dir(&d, &e), 0);
    CHECK_STR(d, expect);
    CHECK(d && d[0] == '/');
    free(d);
    unsetenv("PI_CODING_AGENT_DIR");
    CHECK_INT(chdir(old), 0);
}

static void check_display(const char *in, const char *want)
{
    char *s = path_display(in);
    CHECK_STR(s, want);
    free(s);
}

static void test_display(void)
{
    setenv("HOME", "/home/user", 1);
    check_display("/home/user/.pi/agent/secrets.json", "~/.pi/agent/secrets.json");
    check_display("/home/user", "~");
    check_display("/home/user/", "~/");
    check_display("/home/userx", "/home/userx");
    check_display("/home/userx/a", "/home/userx/a");
    check_display("/home/use", "/home/use");
    check_display("/etc/passwd", "/etc/passwd");
    check_display("relative/home/user/x", "relative/home/user/x");

    setenv("HOME", "/home/user/", 1);
    check_display("/home/user/a", "~/a");

    /* HOME=/ would abbreviate everything */
    setenv("HOME", "/", 1);
    check_display("/etc/passwd", "/etc/passwd");

    unsetenv("HOME");
    check_display("/home/user/a", "/home/user/a");
    setenv("HOME", "/home/user", 1);
}

static void check_join(const char *a, const char *b, const char *want)
{
    char *s = path_join(a, b);
    CHECK_STR(s, want);
    free(s);
}

static void check_dirname(const char *in, const char *want)
{
    char *s = path_dirname(in);
    CHECK_STR(s, want);
    free(s);
}

static void test_join_dirname(void)
{
    check_join("a", "b", "a/b");
    check_join("a/", "b", "a/b");
    check_join("a//", "/b", "a/b");
    check_join("/", "x", "/x");
    check_join("/", "/x", "/x");
    check_join("", "b", "b");
    check_join("a", "", "a");
    check_join("/home/u", ".pi/agent", "/home/u/.pi/agent");

    check_dirname("/a/b", "/a");
    check_dirname("/a/b/", "/a");
    check_dirname("/a", "/");
    check_dirname("/", "/");
    check_dirname("a", ".");
    check_dirname("", ".");
    check_dirname("a/b", "a");
    check_dirname("a//b", "a");
    check_dirname("//a", "/");
}

/* A file of mode m in dir. */
static void make_file(const char *dir, const char *name, mode_t m)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, m);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_INT(chmod(p, m), 0);
}

static void check_found(const char *prog, const char *cwd, const char *want)
{
    char *got = NULL;
    int r = path_find_program(prog, cwd, &got);
    if (!want) {
        CHECK_INT(r, -ENOENT);
        CHECK(got == NULL);
        return;
    }
    CHECK_INT(r, 0);
    CHECK_STR(got, want);
    free(got);
}

/* the lookup the bridge's spawn (execvp) makes, for `list` to say what is not installed */
static void test_find_program(void)
{
    const char *t = tests_tmpdir();
    char a[4200], b[4200], want[4300], *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    snprintf(a, sizeof(a), "%s/a", t);
    snprintf(b, sizeof(b), "%s/b", t);
    CHECK_INT(mkdir(a, 0700), 0);
    CHECK_INT(mkdir(b, 0700), 0);
    make_file(a, "tool", 0755);
    make_file(b, "tool", 0755);
    make_file(a, "plain", 0644); /* not executable: exec would not run it */
    make_file(b, "plain", 0755);
    char sub[4300];
    snprintf(sub, sizeof(sub), "%s/dir", a); /* a directory is no program */
    CHECK_INT(mkdir(sub, 0700), 0);

    char path[9000];
    snprintf(path, sizeof(path), "%s:%s", a, b);
    setenv("PATH", path, 1);
    snprintf(want, sizeof(want), "%s/tool", a); /* the first directory wins */
    check_found("tool", NULL, want);
    snprintf(want, sizeof(want), "%s/plain", b); /* a non-executable one is passed over */
    check_found("plain", NULL, want);
    check_found("dir", NULL, NULL);
    check_found("no-such-program-xyz", NULL, NULL);
    check_found("", NULL, NULL);

    /* a path is taken as it is, relative ones from cwd */
    snprintf(want, sizeof(want), "%s/tool", b);
    check_found(want, NULL, want);
    snprintf(want, sizeof(want), "%s/plain", a);
    check_found(want, NULL, NULL);
    check_found("./tool", a, "./tool");
    check_found("a/tool", t, "a/tool");
    check_found("./tool", t, NULL);
    check_found("/nonexistent/tool", NULL, NULL);

    /* an empty element of PATH is the directory the program starts in */
    setenv("PATH", "/nonexistent-dir:", 1);
    check_found("plain", a, NULL);
    check_found("tool", a, "./tool");
    snprintf(path, sizeof(path), ":%s", b);
    setenv("PATH", path, 1);
    check_found("tool", a, "./tool");
    snprintf(want, sizeof(want), "%s/plain", b);
    check_found("plain", a, want);
    setenv("PATH", "/nonexistent-dir", 1);
    check_found("sh", NULL, NULL);

    if (old)
        setenv("PATH", old, 1);
    else
        unsetenv("PATH");
    free(old);
}

TESTS_MAIN(test_agent_dir_override, test_agent_dir_home_fallback, test_agent_dir_relative,
           test_display, test_join_dirname, test_find_program)
