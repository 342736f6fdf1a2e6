/* test_redact.c - the redaction registry and the log that uses it */
#include <fcntl.h>
#include <unistd.h>

#include "credkit/log.h"
#include "credkit/redact.h"

#include "tests.h"

static char *apply(struct redact *r, const char *s)
{
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(redact_apply(r, s, strlen(s), &b), 0);
    return buf_detach(&b);
}

static void test_replace(void)
{
    struct redact *r = redact_new();
    CHECK(r != NULL);
    CHECK_INT(redact_add(r, "TOKEN", "s3cr3t-value", 12), 0);
    CHECK_INT(redact_add(r, "SHORT", "abc", 3), 0); /* too short: ignored */
    char *s = apply(r, "got s3cr3t-value and s3cr3t-value; abc stays");
    CHECK_STR(s, "got [REDACTED:TOKEN] and [REDACTED:TOKEN]; abc stays");
    free(s);
    redact_free(r);
}

static void test_longest_wins(void)
{
    struct redact *r = redact_new();
    CHECK_INT(redact_add(r, "A", "password", 8), 0);
    CHECK_INT(redact_add(r, "B", "password123", 11), 0);
    char *s = apply(r, "xpassword123y password");
    CHECK_STR(s, "x[REDACTED:B]y [REDACTED:A]");
    free(s);
    s = apply(NULL, "plain");
    CHECK_STR(s, "plain");
    free(s);
    redact_free(r);
}

static void test_log_redacts(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/log.txt", tests_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    struct log *l = log_new("prog", fd);
    CHECK_INT(redact_add(log_redact(l), "API_KEY", "canary-0123456789", 17), 0);
    log_error(l, "request failed with key %s", "canary-0123456789");
    log_debug(l, "not shown at the default level");
    log_set_level(l, LOG_DEBUG);
    log_debug(l, "debug %d", 7);
    log_warn(l, "careful");
    log_free(l);
    char out[1024] = {0};
    CHECK(pread(fd, out, sizeof(out) - 1, 0) > 0);
    close(fd);
    CHECK_STR(out, "prog: request failed with key [REDACTED:API_KEY]\nprog: debug 7\n"
                   "prog: warning: careful\n");
}

/* a value with control characters is redacted before the message is escaped; the rest of
 * the message reaches the terminal escaped, but for its line breaks and tabs */
static void test_log_redacts_then_escapes(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/log2.txt", tests_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    struct log *l = log_new("prog", fd);
    CHECK_INT(redact_add(log_redact(l), "PEM", "line-one\nline\ttwo\x1b", 18), 0);
    log_warn(l, "server said: %s; then \x1b[2J\xe2\x80\xae and\n\tmore", "line-one\nline\ttwo\x1b");
    log_free(l);
    char out[1024] = {0};
    CHECK(pread(fd, out, sizeof(out) - 1, 0) > 0);
    close(fd);
    CHECK_STR(out,
              "prog: warning: server said: [REDACTED:PEM]; then \\x1b[2J\\u{202e} and\n\tmore\n");
}

/* The values written in a URL: a key in its query and a password go; a short setting, a
 * ${NAME} and the rest of the URL stay. */
static void test_url_values(void)
{
    struct redact *r = redact_new();
    CHECK(r != NULL);
    CHECK_INT(redact_add_url(r, "https://me:pa55w0rd-x@x.example/mcp?api_key=k3y-of-mine&"
                                "format=json&t=${TOKEN}"),
              0);
    char *s = apply(r, "GET https://x.example/mcp?api_key=k3y-of-mine&format=json as me "
                       "(pa55w0rd-x): json ${TOKEN}");
    CHECK_STR(s, "GET https://x.example/mcp?api_key=[REDACTED:url]&format=json as me "
                 "([REDACTED:url]): json ${TOKEN}");
    free(s);
    CHECK_INT(redact_add_url(r, NULL), 0);
    redact_free(r);
}

TESTS_MAIN(test_replace, test_longest_wins, test_log_redacts, test_log_redacts_then_escapes,
           test_url_values)
