/* test_keychain.c - keychain against a real gnome-keyring on a private D-Bus session.
 *
 * The program never touches the keychain of the user who runs it. Started plainly (as ctest
 * does), it is a driver: it runs itself again in child processes, each in the situation it
 * tests, chosen by KEYCHAIN_TEST_MODE:
 *   normal    under tests/tools/with-keyring            (an unlocked login collection)
 *   relock    under tests/tools/with-keyring            (stores, then locks the collection)
 *   locked    under tests/tools/with-keyring --locked
 *   nodaemon  under tests/tools/with-keyring --no-daemon (a session bus, no Secret Service)
 *   nobus     with no session bus at all
 * Every test function returns at once unless it belongs to the current mode, so each process
 * counts only its own checks. with-keyring is $TESTS_DIR/tools/with-keyring, or found next to
 * this source file. */
#include <spawn.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credkit/secmem.h"

#include "keychain.h"
#include "tests.h"

extern char **environ;

static const char *mode(void)
{
    const char *m = getenv("KEYCHAIN_TEST_MODE");
    return m && *m ? m : "driver";
}

static bool in_mode(const char *m)
{
    return strcmp(mode(), m) == 0;
}

/* A child that is about to write to a keychain must be inside with-keyring: never in the
 * keychain of whoever runs the test. */
static void test_guard(void)
{
    if (in_mode("driver") || in_mode("nobus"))
        return;
    CHECK(getenv("WITH_KEYRING_SESSION") != NULL);
    if (!getenv("WITH_KEYRING_SESSION")) {
        fprintf(stderr, "mode %s must run under tests/tools/with-keyring\n", mode());
        exit(2);
    }
}

/* ---- driver ------------------------------------------------------------------------------ */

static const char *with_keyring_path(void)
{
    static char path[4096];
    const char *dir = getenv("TESTS_DIR");

    if (dir && *dir) {
        snprintf(path, sizeof(path), "%s/tools/with-keyring", dir);
    } else {
        /* __FILE__ is .../tests/unit/secrets/test_keychain.c */
        char src[4000];
        snprintf(src, sizeof(src), "%s", __FILE__);
        char *slash = strrchr(src, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(src, sizeof(src), ".");
        snprintf(path, sizeof(path), "%s/../../tools/with-keyring", src);
    }
    return path;
}

/* Runs this program again with KEYCHAIN_TEST_MODE=m, through with-keyring (with flag, may be
 * NULL) unless nobus, in which case it runs without any session bus. Returns the exit status,
 * or -1 when it could not run or died of a signal. */
static int run_child(const char *m, bool via_keyring, const char *flag)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n < 0) {
        perror("readlink /proc/self/exe");
        return -1;
    }
    self[n] = 0;

    const char *wk = with_keyring_path();
    if (via_keyring && access(wk, R_OK) != 0) {
        fprintf(stderr, "cannot find '%s': set TESTS_DIR to the tests/ directory\n", wk);
        return -1;
    }

    /* The environment minus what the child must not inherit, plus its mode. */
    size_t count = 0;
    while (environ[count])
        count++;
    char **envp = calloc(count + 4, sizeof(char *));
    char modevar[64], rundir[4200];
    size_t k = 0;
    snprintf(modevar, sizeof(modevar), "KEYCHAIN_TEST_MODE=%s", m);
    for (size_t i = 0; i < count; i++) {
        const char *v = environ[i];
        if (!strncmp(v, "KEYCHAIN_TEST_MODE=", 19))
            continue;
        if (!via_keyring &&
            (!strncmp(v, "DBUS_SESSION_BUS_ADDRESS=", 25) || !strncmp(v, "DISPLAY=", 8) ||
             !strncmp(v, "WAYLAND_DISPLAY=", 16) || !strncmp(v, "XDG_RUNTIME_DIR=", 16)))
            continue;
        envp[k++] = (char *)v;
    }
    envp[k++] = modevar;
    if (!via_keyring) {
        /* An empty runtime dir: GLib would otherwise try $XDG_RUNTIME_DIR/bus. */
        snprintf(rundir, sizeof(rundir), "%s/run-%s", tests_tmpdir(), m);
        if (mkdir(rundir, 0700) != 0 && errno != EEXIST) {
            perror(rundir);
            free(envp);
            return -1;
        }
        memmove(rundir + 16, rundir, strlen(rundir) + 1);
        memcpy(rundir, "XDG_RUNTIME_DIR=", 16);
        envp[k++] = rundir;
    }
    envp[k] = NULL;

    char *argv[6];
    size_t a = 0;
    if (via_keyring) {
        argv[a++] = "bash";
        argv[a++] = (char *)wk;
        if (flag)
            argv[a++] = (char *)flag;
    }
    argv[a++] = self;
    argv[a] = NULL;

    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp);
    free(envp);
    if (r != 0) {
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(r));
        return -1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) {
        perror("waitpid");
        return -1;
    }
    if (!WIFEXITED(status)) {
        fprintf(stderr, "mode %s: child died of signal %d\n", m, WTERMSIG(status));
        return -1;
    }
    if (WEXITSTATUS(status) != 0)
        fprintf(stderr, "mode %s: child exited with %d\n", m, WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

static void test_driver_normal(void)
{
    if (in_mode("driver"))
        CHECK_INT(run_child("normal", true, NULL), 0);
}

static void test_driver_relock(void)
{
    if (in_mode("driver"))
        CHECK_INT(run_child("relock", true, NULL), 0);
}

static void test_driver_locked(void)
{
    if (in_mode("driver"))
        CHECK_INT(run_child("locked", true, "--locked"), 0);
}

static void test_driver_nodaemon(void)
{
    if (in_mode("driver"))
        CHECK_INT(run_child("nodaemon", true, "--no-daemon"), 0);
}

static void test_driver_nobus(void)
{
    if (in_mode("driver"))
        CHECK_INT(run_child("nobus", false, NULL), 0);
}

/* ---- helpers for the children ------------------------------------------------------------ */

/* Runs a shell command (stdout and stderr) and returns its output, malloc'd; NULL on failure. */
static char *run_capture(const char *cmd)
{
    char full[2048];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    if (!f)
        return NULL;
    size_t cap = 65536, len = 0;
    char *out = malloc(cap);
    if (!out) {
        (void)pclose(f);
        return NULL;
    }
    size_t n;
    while (len < cap - 1 && (n = fread(out + len, 1, cap - 1 - len, f)) > 0)
        len += n;
    out[len] = 0;
    (void)pclose(f);
    return out;
}

/* How many items `secret-tool search --all label LABEL` finds. */
static int count_items(const char *label)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "secret-tool search --all label '%s'", label);
    char *out = run_capture(cmd);
    if (!out)
        return -1;
    int n = 0;
    for (char *p = out; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (*p == '[')
            n++;
    }
    free(out);
    return n;
}

static const char *const lock_cmd =
    "gdbus call --session --timeout 10 --dest org.freedesktop.secrets "
    "--object-path /org/freedesktop/secrets --method org.freedesktop.Secret.Service.Lock "
    "\"['/org/freedesktop/secrets/collection/login']\" >/dev/null";

/* ---- normal: an unlocked login collection ------------------------------------------------ */

static void test_store_then_lookup(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_store("t-basic", "hunter2", &e), 0);
    CHECK_INT(keychain_lookup("t-basic", &v, &e), 0);
    CHECK_STR(v, "hunter2");
    CHECK_INT(e.code, 0);
    secure_free(v);
}

static void test_store_replaces(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_store("t-replace", "first", &e), 0);
    CHECK_INT(keychain_store("t-replace", "second", &e), 0);
    CHECK_INT(count_items("t-replace"), 1);
    CHECK_INT(keychain_lookup("t-replace", &v, &e), 0);
    CHECK_STR(v, "second");
    secure_free(v);
}

static void test_delete_then_lookup(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *sentinel = "untouched", *v = sentinel;

    CHECK_INT(keychain_store("t-delete", "gone soon", &e), 0);
    CHECK_INT(keychain_delete("t-delete", &e), 0);
    CHECK_INT(count_items("t-delete"), 0);
    CHECK_INT(keychain_lookup("t-delete", &v, &e), -ENOENT);
    CHECK(v == sentinel); /* outputs are written only on success */
    CHECK_STR(e.msg, "no keychain item 't-delete'");
    CHECK_INT(e.code, -ENOENT);

    err_clear(&e);
    CHECK_INT(keychain_delete("t-delete", &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "'t-delete'");
}

static void test_delete_absent(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_delete("t-never-stored", &e), -ENOENT);
    CHECK_STR(e.msg, "no keychain item 't-never-stored'");
    err_clear(&e);
    CHECK_INT(keychain_lookup("t-never-stored", &v, &e), -ENOENT);
    CHECK(v == NULL);
}

static void test_unicode_and_spaces(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    const char *value = "  pässwörd ✓ 🔑 with spaces\tand a tab  ";
    const char *label = "t-ünïcode label";
    char *v = NULL;

    CHECK_INT(keychain_store(label, value, &e), 0);
    CHECK_INT(keychain_lookup(label, &v, &e), 0);
    CHECK_STR(v, value);
    secure_free(v);
}

/* The label is an attribute (public); the value only in the secret. */
static void test_label_is_not_the_value(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    const char *value = "v4lue-only-in-the-secret";

    CHECK_INT(keychain_store("t-attrs", value, &e), 0);
    char *out = run_capture("secret-tool search --all label t-attrs");
    CHECK(out != NULL);
    if (!out)
        return;
    CHECK_CONTAINS(out, "label = credkit secret: t-attrs\n");
    CHECK_CONTAINS(out, "schema = org.credkit.Secret\n");
    CHECK_CONTAINS(out, "attribute.label = t-attrs\n");
    CHECK_CONTAINS(out, "secret = v4lue-only-in-the-secret\n");
    int attr_lines = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "attribute.", 10) != 0 && strncmp(line, "label = ", 8) != 0)
            continue;
        attr_lines++;
        CHECK(strstr(line, value) == NULL);
    }
    CHECK_INT(attr_lines, 2); /* the display label and the one attribute */
    free(out);
}

/* Two items carry the label (one written by another tool, with an extra attribute): lookup
 * returns the most recently modified; store updates one of them (gnome-keyring's replace matches
 * every item whose attributes include ours); delete removes both. Timestamps have 1 s
 * resolution, hence the sleeps. */
static void test_most_recent_wins(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_store("t-dup", "ours-1", &e), 0);
    CHECK_INT(count_items("t-dup"), 1);

    (void)usleep(1100 * 1000);
    free(run_capture("printf %s theirs | secret-tool store --label=other "
                     "xdg:schema org.credkit.Secret label t-dup extra 1"));
    CHECK_INT(count_items("t-dup"), 2);
    CHECK_INT(keychain_lookup("t-dup", &v, &e), 0);
    CHECK_STR(v, "theirs");
    secure_free(v);
    v = NULL;

    (void)usleep(1100 * 1000);
    CHECK_INT(keychain_store("t-dup", "ours-2", &e), 0);
    CHECK_INT(count_items("t-dup"), 2);
    CHECK_INT(keychain_lookup("t-dup", &v, &e), 0);
    CHECK_STR(v, "ours-2");
    secure_free(v);

    CHECK_INT(keychain_delete("t-dup", &e), 0);
    CHECK_INT(count_items("t-dup"), 0);
}

static void test_binary_value(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    free(run_capture("printf 'a\\000b' | secret-tool store --label=bin "
                     "xdg:schema org.credkit.Secret label t-binary"));
    CHECK_INT(count_items("t-binary"), 1);
    CHECK_INT(keychain_lookup("t-binary", &v, &e), -EINVAL);
    CHECK(v == NULL);
    CHECK_STR(e.msg, "keychain item 't-binary' holds binary data");
}

static void test_empty_value(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_store("t-empty", "", &e), 0);
    CHECK_INT(keychain_lookup("t-empty", &v, &e), 0);
    CHECK_STR(v, "");
    secure_free(v);
}

static void test_bad_labels(void)
{
    if (!in_mode("normal"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_lookup("", &v, &e), -EINVAL);
    CHECK_INT(keychain_store(NULL, "x", &e), -EINVAL);
    CHECK_INT(keychain_delete("bad \xff utf8", &e), -EINVAL);
    CHECK_CONTAINS(e.msg, "UTF-8");
    CHECK_INT(keychain_store("t-null", NULL, &e), -EINVAL);
    CHECK(v == NULL);
}

/* ---- relock: items exist, then the collection is locked ---------------------------------- */

static void test_relocked(void)
{
    if (!in_mode("relock"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;
    const char *value = "locked-away-value";

    CHECK_INT(keychain_store("t-lock", value, &e), 0);
    CHECK_INT(system(lock_cmd), 0);

    CHECK_INT(keychain_lookup("t-lock", &v, &e), -EACCES);
    CHECK(v == NULL);
    CHECK_CONTAINS(e.msg, "locked");
    CHECK(!strstr(e.msg, value));

    err_clear(&e);
    CHECK_INT(keychain_store("t-lock", "another", &e), -EACCES);
    CHECK_CONTAINS(e.msg, "locked");

    err_clear(&e);
    CHECK_INT(keychain_delete("t-lock", &e), -EACCES);
    CHECK_CONTAINS(e.msg, "locked");
    CHECK_INT(count_items("t-lock"), 1); /* nothing was deleted */

    err_clear(&e);
    CHECK_INT(keychain_lookup("t-never-stored", &v, &e), -EACCES);
    CHECK_CONTAINS(e.msg, "locked");
}

/* ---- locked: with-keyring --locked ------------------------------------------------------- */

static void test_locked(void)
{
    if (!in_mode("locked"))
        return;
    struct err e = ERR_INIT;

    char *v = NULL;

    CHECK_INT(keychain_store("t-locked", "value", &e), -EACCES);
    CHECK_CONTAINS(e.msg, "locked");
    CHECK_CONTAINS(e.msg, "unlock");
    CHECK_INT(count_items("t-locked"), 0);

    /* Nothing found, but the collection is locked: "unlock it" is the useful answer. */
    err_clear(&e);
    CHECK_INT(keychain_lookup("t-locked", &v, &e), -EACCES);
    CHECK(v == NULL);
    CHECK_CONTAINS(e.msg, "locked");
    err_clear(&e);
    CHECK_INT(keychain_delete("t-locked", &e), -EACCES);
    CHECK_CONTAINS(e.msg, "locked");
}

/* ---- nodaemon: a session bus without a Secret Service ------------------------------------ */

static void test_no_daemon(void)
{
    if (!in_mode("nodaemon"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL;

    CHECK_INT(keychain_lookup("t-x", &v, &e), -ENOTCONN);
    CHECK(v == NULL);
    CHECK_CONTAINS(e.msg, "Secret Service");
    CHECK_CONTAINS(e.msg, "gnome-keyring-daemon");
    err_clear(&e);
    CHECK_INT(keychain_store("t-x", "value", &e), -ENOTCONN);
    CHECK_CONTAINS(e.msg, "Secret Service");
    err_clear(&e);
    CHECK_INT(keychain_delete("t-x", &e), -ENOTCONN);
    CHECK_CONTAINS(e.msg, "Secret Service");
}

/* ---- nobus: no D-Bus session at all ------------------------------------------------------ */

static void test_no_session_bus(void)
{
    if (!in_mode("nobus"))
        return;
    struct err e = ERR_INIT;
    char *v = NULL, addr[4200];

    CHECK(getenv("DBUS_SESSION_BUS_ADDRESS") == NULL);
    CHECK_INT(keychain_lookup("t-x", &v, &e), -ENOTCONN);
    CHECK(v == NULL);
    CHECK_CONTAINS(e.msg, "Secret Service");
    CHECK_CONTAINS(e.msg, "D-Bus");
    err_clear(&e);
    CHECK_INT(keychain_store("t-x", "value", &e), -ENOTCONN);
    CHECK_CONTAINS(e.msg, "Secret Service");

    /* An address whose socket does not exist. */
    snprintf(addr, sizeof(addr), "unix:path=%s/no-such-bus", tests_tmpdir());
    CHECK_INT(setenv("DBUS_SESSION_BUS_ADDRESS", addr, 1), 0);
    err_clear(&e);
    CHECK_INT(keychain_lookup("t-x", &v, &e), -ENOTCONN);
    CHECK_CONTAINS(e.msg, "Secret Service");
}

TESTS_MAIN(test_guard, test_driver_normal, test_driver_relock, test_driver_locked,
           test_driver_nodaemon, test_driver_nobus, test_store_then_lookup, test_store_replaces,
           test_delete_then_lookup, test_delete_absent, test_unicode_and_spaces,
           test_label_is_not_the_value, test_most_recent_wins, test_binary_value, test_empty_value,
           test_bad_labels, test_relocked, test_locked, test_no_daemon, test_no_session_bus)
