/* test_cred_helper.c - the helpers' credentials provider on a real loop, asking fake `secrets`,
 * `mcp-auth` and headersHelper programs: shell scripts written at test time, named through
 * CREDKIT_SECRETS and CREDKIT_MCP_AUTH, that log their argv and count their runs in files.
 *
 * Covered: the secrets answer as variables and expanded headers; the cache (CONNECT served with
 * no new run, RECONNECT asking again what does not say when it expires, what is about to expire
 * asked again); two asks sharing one run; cancel (no callback, the run's answer kept);
 * bearerTokenEnv and bearerToken, a value with CR/LF refused; headersHelper as argv and as
 * "!shell", overriding the entry's headers of the same name, and its failures; OAuth through
 * mcp-auth: the header, --refresh after a 401, --config, login required (the default message and
 * authRequiredMessage), a server that wants a token of its own (mcp-auth's exit 7: the entry's
 * fix named, never a sign-in, not with autoAuth either), autoAuth's login, the storm brake, the step-up after a 403
 * insufficient_scope with and without autoAuth, OAuth found by a 401 Bearer challenge (not with
 * "auth": "none"); a helper that does not answer in time; a missing helper; the answer's
 * expires_at, the smallest of the slots'. A canary secret appears in no message, no log line and
 * no helper's argv. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/log.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "creds/cred_helper.h"
#include "creds/cred.h"
#include "core/loop.h"
#include "tests.h"

#include "loop_wait.h"

#define CANARY "CANARY-s3cr3t-7f3a"

/* ---- files --------------------------------------------------------------------------------- */

static char dir[4096]; /* this test's own folder */

static const char *at(const char *name)
{
    static char paths[8][4096 + 64];
    static unsigned next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
    return p;
}

static void put_file(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "we");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static void put_script(const char *name, const char *body)
{
    char text[8192];
    snprintf(text, sizeof(text), "#!/bin/sh\nD='%s'\n%s\n", dir, body);
    put_file(name, text);
    CHECK_INT(chmod(at(name), 0755), 0);
}

/* The file's contents (static buffer), "" when absent. */
static const char *slurp(const char *name)
{
    static char buf[64 * 1024];
    buf[0] = 0;
    FILE *f = fopen(at(name), "re");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static int lines(const char *name)
{
    int n = 0;
    for (const char *p = slurp(name); *p; p++)
        n += *p == '\n';
    return n;
}

/* The file's last line, with its newline. */
static const char *last_line(const char *name)
{
    const char *text = slurp(name);
    size_t n = strlen(text);
    const char *p = text + (n ? n - 1 : 0);
    while (p > text && p[-1] != '\n')
        p--;
    return p;
}

/* The fakes. Each logs its argv as "[a][b]..." a line and counts its runs. */
static const char fake_secrets[] =
    "printf '[%s]' \"$@\" >> \"$D/secrets.argv\"; echo >> \"$D/secrets.argv\"\n"
    "env >> \"$D/env.log\"\n"
    "echo run >> \"$D/secrets.runs\"\n"
    "[ -f \"$D/secrets.sleep\" ] && sleep \"$(cat \"$D/secrets.sleep\")\"\n"
    "[ -f \"$D/secrets.stderr\" ] && cat \"$D/secrets.stderr\" >&2\n"
    "cat \"$D/secrets.json\"\n"
    "exit 0";

static const char fake_auth[] =
    "printf '[%s]' \"$@\" >> \"$D/auth.argv\"; echo >> \"$D/auth.argv\"\n"
    "env >> \"$D/env.log\"\n"
    "sub=\n"
    "for a; do case \"$a\" in header|login|status) sub=$a; break;; esac; done\n"
    "echo \"$sub\" >> \"$D/auth.runs\"\n"
    "case \"$sub\" in\n"
    "header)\n"
    "  [ -f \"$D/header.sleep\" ] && sleep \"$(cat \"$D/header.sleep\")\"\n"
    "  if [ -f \"$D/need-login\" ]; then echo 'not signed in to this server' >&2; exit 4; fi\n"
    "  cat \"$D/header.json\"; exit 0;;\n"
    "login)\n"
    "  echo login >> \"$D/login.runs\"\n"
    "  [ -f \"$D/login.sleep\" ] && sleep \"$(cat \"$D/login.sleep\")\"\n"
    "  if [ -f \"$D/login-signs-in\" ]; then rm -f \"$D/need-login\";\n"
    "    [ -f \"$D/header2.json\" ] && cp \"$D/header2.json\" \"$D/header.json\"; fi\n"
    "  exit \"$(cat \"$D/login.exit\" 2>/dev/null || echo 0)\";;\n"
    "status)\n"
    "  cat \"$D/status.json\"; exit 0;;\n"
    "esac\n"
    "exit 2";

/* ---- the fixture --------------------------------------------------------------------------- */

struct fx {
    struct loop *l;
    struct log *log;
    int log_fd;
    struct cred_provider *p;
};

static void fx_new(struct fx *f, const char *name, const struct cred_helper_opts *extra)
{
    snprintf(dir, sizeof(dir), "%s/%s", tests_tmpdir(), name);
    CHECK_INT(mkdir(dir, 0700), 0);
    put_script("secrets", fake_secrets);
    put_script("mcp-auth", fake_auth);
    put_file("secrets.json", "{\"secrets\": {}}\n");
    setenv("CREDKIT_SECRETS", at("secrets"), 1);
    setenv("CREDKIT_MCP_AUTH", at("mcp-auth"), 1);
    *f = (struct fx){0};
    CHECK_INT(loop_new(&f->l), 0);
    f->log_fd = open(at("log"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(f->log_fd >= 0);
    f->log = log_new("mcp-bridge", f->log_fd);
    CHECK(f->log != NULL);
    log_set_level(f->log, LOG_DEBUG);
    struct cred_helper_opts o = extra ? *extra : (struct cred_helper_opts){0};
    o.loop = f->l;
    o.log = f->log;
    CHECK_INT(cred_helper_new(&o, &f->p), 0);
}

/* No secret in the log, nor in the argv of any helper. */
static void fx_free(struct fx *f)
{
    cred_provider_free(f->p);
    loop_free(f->l);
    log_free(f->log);
    (void)close(f->log_fd);
    CHECK(!strstr(slurp("log"), CANARY));
    CHECK(!strstr(slurp("secrets.argv"), CANARY));
    CHECK(!strstr(slurp("auth.argv"), CANARY));
    CHECK(!strstr(slurp("hh.argv"), CANARY));
    CHECK(!strstr(slurp("env.log"), CANARY)); /* nor in a helper's environment */
}

static char *none_v[] = {NULL};

static struct mcp_server http_entry(void)
{
    return (struct mcp_server){
        .name = "srv",
        .source = "test",
        .transport = MCP_TRANSPORT_HTTP,
        .url = "https://srv.example/mcp",
        .args = none_v,
        .env = none_v,
        .headers = none_v,
        .auth = MCP_AUTH_NONE,
    };
}

struct answer {
    int calls;
    int error;
    char message[2048];
    struct credentials c;
};

static void on_done(int error, const struct credentials *c, const char *message, void *userdata)
{
    struct answer *a = userdata;
    a->calls++;
    a->error = error;
    snprintf(a->message, sizeof(a->message), "%s", message ? message : "");
    CHECK(!message || !strstr(message, CANARY)); /* never a value in a message */
    CHECK(error < 0 ? message != NULL && c == NULL : c != NULL);
    if (c)
        CHECK_INT(cred_copy(&a->c, c), 0);
}

static void answer_release(struct answer *a)
{
    cred_release(&a->c);
    *a = (struct answer){0};
}

static bool answered(void *ctx)
{
    return ((struct answer *)ctx)->calls > 0;
}

static struct cred_request *ask_start(struct fx *f, const struct mcp_server *s,
                                      enum cred_reason reason, const char *challenge,
                                      struct answer *a)
{
    struct cred_query q = {.server = s, .reason = reason, .challenge = challenge};
    struct cred_request *r = NULL;
    answer_release(a);
    CHECK_INT(cred_ask(f->p, &q, on_done, a, &r), 0);
    CHECK_INT(a->calls, 0); /* from the loop, never from inside ask() */
    return r;
}

static void ask(struct fx *f, const struct mcp_server *s, enum cred_reason reason,
                const char *challenge, struct answer *a)
{
    (void)ask_start(f, s, reason, challenge, a);
    CHECK(wait_for(f->l, answered, a, 20000));
    CHECK_INT(a->calls, 1);
}

static const char *header_of(const struct credentials *c, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; c->headers && c->headers[i]; i++)
        if (strncasecmp(c->headers[i], name, n) == 0 && c->headers[i][n] == ':')
            return c->headers[i] + n + 2;
    return NULL;
}

static int headers_named(const struct credentials *c, const char *name)
{
    size_t n = strlen(name);
    int k = 0;
    for (size_t i = 0; c->headers && c->headers[i]; i++)
        k += strncasecmp(c->headers[i], name, n) == 0 && c->headers[i][n] == ':';
    return k;
}

static const char *var_of(const struct credentials *c, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; c->vars && c->vars[i]; i++)
        if (strncmp(c->vars[i], name, n) == 0 && c->vars[i][n] == '=')
            return c->vars[i] + n + 1;
    return NULL;
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static bool never(void *ctx)
{
    (void)ctx;
    return false;
}

/* Runs the loop for ms (a run that was left going ends meanwhile). */
static void idle(struct fx *f, int64_t ms)
{
    (void)wait_for(f->l, never, NULL, ms);
}

/* ${env:NAME} is never asked of secrets, ${input:ID} is asked as ID, and a ${NAME:-default}
 * that secrets cannot resolve takes its default */
static void test_secrets_forms(void)
{
    struct fx f;
    fx_new(&f, "forms", NULL);
    put_file("secrets.json", "{\"version\": 1, \"secrets\": {"
                             "\"TOK\": {\"value\": \"" CANARY "\", \"source\": \"command\"},"
                             "\"OPT\": {\"error\": \"'OPT' has no recipe\"}}}\n");
    setenv("MCPT_CH_HOST", "env.test", 1);
    struct mcp_server s = http_entry();
    char *headers[] = {"X-Key: ${input:TOK}", "X-Opt: [${OPT:-none}]", "X-Env: ${env:MCPT_CH_HOST}",
                       NULL};
    s.url = "https://${env:MCPT_CH_HOST}/mcp";
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    if (a.error)
        fprintf(stderr, "  %s\n", a.message);
    CHECK_STR(slurp("secrets.argv"), "[resolve][--json][--][TOK][OPT]\n");
    CHECK_STR(header_of(&a.c, "X-Key"), CANARY);
    CHECK_STR(header_of(&a.c, "X-Opt"), "[none]");
    CHECK_STR(header_of(&a.c, "X-Env"), "env.test");
    answer_release(&a);
    fx_free(&f);

    /* the same name without a default as well: its failure is the answer's */
    fx_new(&f, "forms-required", NULL);
    put_file("secrets.json", "{\"secrets\": {\"OPT\": {\"error\": \"'OPT' has no recipe\"}}}\n");
    char *headers2[] = {"X-Opt: ${OPT:-none}", "X-Req: ${OPT}", NULL};
    s.headers = headers2;
    s.url = "https://srv.example/mcp";
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "'OPT' has no recipe");
    answer_release(&a);
    fx_free(&f);

    /* only ${env:...}: secrets is not run */
    fx_new(&f, "forms-env", NULL);
    char *headers3[] = {"X-Env: ${env:MCPT_CH_HOST}", NULL};
    s.headers = headers3;
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "X-Env"), "env.test");
    CHECK_INT(lines("secrets.runs"), 0);
    answer_release(&a);
    fx_free(&f);
    unsetenv("MCPT_CH_HOST");
}

/* ---- secrets ------------------------------------------------------------------------------- */

static void test_secrets_vars_and_cache(void)
{
    struct fx f;
    fx_new(&f, "vars", NULL);
    put_file("secrets.json",
             "{\"version\": 1, \"secrets\": {"
             "\"HOST\": {\"value\": \"h.test\", \"source\": \"literal\"},"
             "\"API_KEY\": {\"value\": \"" CANARY "\", \"source\": \"command\"}}}\n");
    struct mcp_server s = http_entry();
    char *headers[] = {"X-Key: k=${API_KEY}", "X-Plain: p", NULL};
    s.url = "https://${HOST}/mcp";
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(var_of(&a.c, "HOST"), "h.test");
    CHECK_STR(var_of(&a.c, "API_KEY"), CANARY);
    CHECK_STR(header_of(&a.c, "X-Key"), "k=" CANARY);
    CHECK_STR(header_of(&a.c, "X-Plain"), "p");
    CHECK_INT(a.c.expires_at, 0);
    CHECK_STR(slurp("secrets.argv"), "[resolve][--json][--][HOST][API_KEY]\n");
    CHECK_INT(lines("secrets.runs"), 1);
    CHECK_INT(lines("auth.runs"), 0); /* no OAuth for this entry */

    /* a second CONNECT: from the cache, zero new runs */
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "X-Key"), "k=" CANARY);
    CHECK_INT(lines("secrets.runs"), 1);
    ask(&f, &s, CRED_REASON_EXPIRING, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 1);

    /* RECONNECT asks again what does not say when it expires */
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(lines("secrets.runs"), 2);
    /* and so does a 401 */
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(lines("secrets.runs"), 3);
    answer_release(&a);

    answer_release(&a);
    fx_free(&f);

    /* an entry without any ${NAME}: secrets is not asked at all */
    fx_new(&f, "novars", NULL);
    struct mcp_server plain = http_entry();
    ask(&f, &plain, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK(!a.c.vars || !a.c.vars[0]);
    CHECK(!a.c.headers || !a.c.headers[0]);
    ask(&f, &plain, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(lines("secrets.runs"), 0);
    answer_release(&a);
    fx_free(&f);
}

static void test_secrets_expiry(void)
{
    struct fx f;
    fx_new(&f, "expiry", NULL);
    char json[1024];
    int64_t t = now_s();
    snprintf(json, sizeof(json),
             "{\"secrets\": {\"A\": {\"value\": \"" CANARY "\", \"expires_at\": %" PRId64 "},"
             "\"B\": {\"value\": \"b\", \"expires_at\": %" PRId64 "}}}\n",
             t + 7200, t + 3600);
    put_file("secrets.json", json);
    struct mcp_server s = http_entry();
    char *headers[] = {"X-A: ${A}", "X-B: ${B}", NULL};
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(a.c.expires_at, (t + 3600) * 1000); /* the smaller, in ms */
    /* RECONNECT does not ask again what is still good */
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(lines("secrets.runs"), 1);
    ask(&f, &s, CRED_REASON_EXPIRING, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 1);

    /* secrets answers from its own cache until expires_at: asking before then gives the same
     * value, so one about to expire is still served from here (refresh_at is its expiry) */
    snprintf(json, sizeof(json),
             "{\"secrets\": {\"A\": {\"value\": \"a\", \"expires_at\": %" PRId64 "},"
             "\"B\": {\"value\": \"b\"}}}\n",
             now_s() + 5);
    put_file("secrets.json", json);
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a); /* takes the new answer */
    CHECK_INT(lines("secrets.runs"), 2);
    CHECK_INT(a.c.refresh_at, a.c.expires_at);
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 2);
    /* one that has expired is asked again, whatever the reason */
    snprintf(json, sizeof(json),
             "{\"secrets\": {\"A\": {\"value\": \"a\", \"expires_at\": %" PRId64 "},"
             "\"B\": {\"value\": \"b\"}}}\n",
             now_s() - 1);
    put_file("secrets.json", json);
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 3);
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 4);
    ask(&f, &s, CRED_REASON_EXPIRING, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 5);

    /* an expires_at far beyond what milliseconds hold: kept far in the future, not wrapped */
    put_file("secrets.json", "{\"secrets\": {\"A\": {\"value\": \"a\", \"expires_at\": "
                             "9223372036854775807}, \"B\": {\"value\": \"b\"}}}\n");
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK(a.c.expires_at > (now_s() + 100LL * 365 * 86400) * 1000);
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(lines("secrets.runs"), 6); /* and counts as fresh */
    answer_release(&a);
    fx_free(&f);
}

static void test_secrets_errors(void)
{
    struct fx f;
    fx_new(&f, "secerr", NULL);
    /* a name that does not resolve: its error, naming it */
    put_file("secrets.json",
             "{\"secrets\": {\"OK\": {\"value\": \"" CANARY "\"}, \"GONE\": {\"error\": \"'GONE' "
             "has no recipe and no environment variable of that name: run 'secrets configure "
             "GONE'\"}}}\n");
    struct mcp_server s = http_entry();
    char *headers[] = {"X-A: ${OK}", "X-B: ${GONE}", NULL};
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -ENOENT);
    CHECK_CONTAINS(a.message, "'GONE' has no recipe");

    /* an answer that is not JSON */
    put_file("secrets.json", "{\"secrets\": \n");
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "the answer of 'secrets resolve' is not usable");

    /* nothing on stdout: the failure, with its stderr */
    put_file("secrets.json", "");
    put_file("secrets.stderr", "secrets: '~/.pi/agent/secrets.json' is readable by others\n");
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, -EIO);
    CHECK_CONTAINS(a.message, "secrets failed (exit status 0): secrets: '~/.pi/agent/secrets.json' "
                              "is readable by others");

    /* a value with CR/LF would inject a header of its own: refused, naming the header only */
    put_file("secrets.json", "{\"secrets\": {\"OK\": {\"value\": \"" CANARY "\\r\\nX-Evil: 1\"},"
                             "\"GONE\": {\"value\": \"g\"}}}\n");
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_CONTAINS(a.message, "header 'X-A'");
    CHECK_CONTAINS(a.message, "control character");
    CHECK(!strstr(a.message, "Evil"));
    CHECK(a.c.headers == NULL);

    /* an answer without the name asked for: the header's variable is not set */
    unlink(at("secrets.stderr"));
    put_file("secrets.json", "{\"secrets\": {\"OK\": {\"value\": \"x\"}}}\n");
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "GONE");
    answer_release(&a);
    fx_free(&f);
}

static void test_two_asks_one_run(void)
{
    struct fx f;
    fx_new(&f, "twoasks", NULL);
    put_file("secrets.json", "{\"secrets\": {\"T\": {\"value\": \"" CANARY "\"}}}\n");
    put_file("secrets.sleep", "0.3");
    struct mcp_server s = http_entry();
    char *headers[] = {"X-T: ${T}", NULL};
    s.headers = headers;
    struct answer a = {0}, b = {0};
    (void)ask_start(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    (void)ask_start(&f, &s, CRED_REASON_RECONNECT, NULL, &b);
    CHECK(wait_for(f.l, answered, &a, 10000));
    CHECK(wait_for(f.l, answered, &b, 10000));
    CHECK_INT(a.error, 0);
    CHECK_INT(b.error, 0);
    CHECK_STR(header_of(&a.c, "X-T"), CANARY);
    CHECK_STR(header_of(&b.c, "X-T"), CANARY);
    CHECK_INT(lines("secrets.runs"), 1);
    answer_release(&a);
    answer_release(&b);
    fx_free(&f);
}

static bool file_has_line(void *ctx)
{
    return lines((const char *)ctx) > 0;
}

struct count {
    const char *file;
    int n;
};

static bool reached(void *ctx)
{
    const struct count *c = ctx;
    return lines(c->file) >= c->n;
}

static void test_cancel(void)
{
    struct fx f;
    fx_new(&f, "cancel", NULL);
    put_script("slow-secrets", "echo run >> \"$D/secrets.runs\"; sleep 0.3\n"
                               "cat \"$D/secrets.json\"; echo done >> \"$D/secrets.done\"");
    setenv("CREDKIT_SECRETS", at("slow-secrets"), 1);
    put_file("secrets.json", "{\"secrets\": {\"T\": {\"value\": \"" CANARY "\"}}}\n");
    struct mcp_server s = http_entry();
    char *headers[] = {"X-T: ${T}", NULL};
    s.headers = headers;
    struct answer a = {0};
    struct cred_request *r = ask_start(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    cred_cancel(r);
    /* the run goes on to its end, with no callback */
    CHECK(wait_for(f.l, file_has_line, "secrets.done", 10000));
    idle(&f, 200);
    CHECK_INT(a.calls, 0);
    /* and its answer serves the next ask */
    struct answer b = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &b);
    CHECK_INT(b.error, 0);
    CHECK_STR(header_of(&b.c, "X-T"), CANARY);
    CHECK_INT(lines("secrets.runs"), 1);
    CHECK_INT(a.calls, 0);
    answer_release(&b);

    /* cancelled while another waits on the same run: that one is still answered */
    struct answer c = {0}, d = {0};
    r = ask_start(&f, &s, CRED_REASON_RECONNECT, NULL, &c);
    (void)ask_start(&f, &s, CRED_REASON_RECONNECT, NULL, &d);
    cred_cancel(r);
    CHECK(wait_for(f.l, answered, &d, 10000));
    CHECK_INT(d.error, 0);
    CHECK_INT(c.calls, 0);
    CHECK_INT(lines("secrets.runs"), 2);
    answer_release(&d);

    /* cancelled after the answer is decided but before it was delivered */
    struct answer e = {0};
    r = ask_start(&f, &s, CRED_REASON_CONNECT, NULL, &e); /* fresh: answered from the cache */
    cred_cancel(r);
    idle(&f, 100);
    CHECK_INT(e.calls, 0);

    /* the provider freed with a run going on */
    struct answer g = {0};
    r = ask_start(&f, &s, CRED_REASON_RECONNECT, NULL, &g);
    cred_cancel(r);
    fx_free(&f);
    CHECK_INT(g.calls, 0);
}

/* ---- bearer tokens ------------------------------------------------------------------------- */

static void test_bearer(void)
{
    struct fx f;
    fx_new(&f, "bearer", NULL);
    put_file("secrets.json", "{\"secrets\": {\"TOK\": {\"value\": \"" CANARY "\"}}}\n");
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_BEARER;
    s.bearer_token_env = "TOK";
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    CHECK_STR(slurp("secrets.argv"), "[resolve][--json][--][TOK]\n");
    CHECK_INT(lines("auth.runs"), 0);

    /* bearerToken: a template */
    struct mcp_server t = http_entry();
    t.auth = MCP_AUTH_BEARER;
    t.bearer_token = "pre-${TOK}";
    ask(&f, &t, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer pre-" CANARY);
    /* or a literal: no secrets run */
    int runs = lines("secrets.runs");
    t.bearer_token = "literal-token";
    ask(&f, &t, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer literal-token");
    CHECK_INT(lines("secrets.runs"), runs);

    /* a value with CR/LF is refused, and not quoted */
    put_file("secrets.json",
             "{\"secrets\": {\"TOK\": {\"value\": \"" CANARY "\\r\\nX-Evil: 1\"}}}\n");
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_CONTAINS(a.message, "header 'Authorization' is refused: the bearer token is empty or "
                              "not an RFC 6750 token");
    CHECK(!strstr(a.message, "Evil"));
    /* nor one that is not a b64token (a space, a quote) */
    put_file("secrets.json", "{\"secrets\": {\"TOK\": {\"value\": \"" CANARY " x\"}}}\n");
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_CONTAINS(a.message, "not an RFC 6750 token");
    CHECK(!strstr(a.message, CANARY));
    t.bearer_token = "${TOK}";
    ask(&f, &t, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK(!strstr(a.message, "Evil"));
    /* nor is an empty one taken */
    put_file("secrets.json", "{\"secrets\": {\"TOK\": {\"value\": \"\"}}}\n");
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_CONTAINS(a.message, "the bearer token is empty");

    /* a name that does not resolve */
    put_file("secrets.json", "{\"secrets\": {\"TOK\": {\"error\": \"'TOK' is not set\"}}}\n");
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, -ENOENT);
    CHECK_CONTAINS(a.message, "'TOK' is not set");
    answer_release(&a);
    fx_free(&f);
}

/* ---- headersHelper ------------------------------------------------------------------------- */

static void test_headers_helper(void)
{
    struct fx f;
    fx_new(&f, "hh", NULL);
    char json[512];
    int64_t t = now_s();
    snprintf(json, sizeof(json),
             "{\"headers\": {\"Authorization\": \"Bearer " CANARY "\", \"X-Extra\": \"1\"},"
             " \"expires_at\": %" PRId64 "}\n",
             t + 1800);
    put_file("hh.json", json);
    put_script("hh", "printf '[%s]' \"$@\" >> \"$D/hh.argv\"; echo >> \"$D/hh.argv\"\n"
                     "env >> \"$D/env.log\"\n"
                     "echo run >> \"$D/hh.runs\"; cat \"$D/hh.json\"");
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s --flag 'a b' \"c \\\"d\\\"\"", at("hh"));
    struct mcp_server s = http_entry();
    char *headers[] = {"authorization: Bearer static", "X-Keep: k", NULL};
    s.headers = headers;
    s.headers_helper = cmd;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(slurp("hh.argv"), "[--flag][a b][c \"d\"]\n"); /* no shell: split and unquoted */
    /* the helper's headers win over the entry's of the same name, whatever its case */
    CHECK_INT(headers_named(&a.c, "Authorization"), 1);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    CHECK_STR(header_of(&a.c, "X-Keep"), "k");
    CHECK_STR(header_of(&a.c, "X-Extra"), "1");
    CHECK_INT(a.c.expires_at, (t + 1800) * 1000);
    CHECK_INT(lines("secrets.runs"), 0);
    /* cached until its expiry */
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(lines("hh.runs"), 1);
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(lines("hh.runs"), 2);

    answer_release(&a);
    fx_free(&f);

    /* "!": through the shell (a provider serves one entry: a new one) */
    fx_new(&f, "hh-shell", NULL);
    char shell[8192];
    snprintf(shell, sizeof(shell),
             "! echo run >> '%s'; printf '{\"headers\": {\"x-keep\": \"%%s\"}}' \"$((1 + 2))\"",
             at("sh.runs"));
    struct mcp_server sh = http_entry();
    sh.headers = headers;
    sh.headers_helper = shell;
    ask(&f, &sh, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(headers_named(&a.c, "X-Keep"), 1);
    CHECK_STR(header_of(&a.c, "X-Keep"), "3");
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer static");
    CHECK_INT(a.c.expires_at, 0);
    CHECK_INT(lines("sh.runs"), 1);
    /* without expires_at: RECONNECT runs it again */
    ask(&f, &sh, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(lines("sh.runs"), 2);
    answer_release(&a);
    fx_free(&f);

    /* its failures (each asked with UNAUTHORIZED: nothing cached is taken) */
    fx_new(&f, "hh-fail", NULL);

    /* a failing helper: its exit status and the first line of its stderr */
    put_script("bad-hh", "echo 'corp-token: not logged in' >&2; echo ' more' >&2; exit 3");
    struct mcp_server b = http_entry();
    char bad_cmd[8192];
    snprintf(bad_cmd, sizeof(bad_cmd), "%s", at("bad-hh"));
    b.headers_helper = bad_cmd;
    ask(&f, &b, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, -EIO);
    CHECK_STR(a.message, "headersHelper failed (exit status 3): corp-token: not logged in");
    /* an answer that is not one */
    put_script("junk-hh", "echo '{\"headers\": {\"Bad Name\": \"" CANARY "\"}}'");
    snprintf(bad_cmd, sizeof(bad_cmd), "%s", at("junk-hh"));
    ask(&f, &b, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "the answer of headersHelper is not usable");
    /* a header value with CR/LF */
    put_script("crlf-hh", "printf '{\"headers\": {\"X-A\": \"" CANARY "\\\\r\\\\nX-Evil: 1\"}}'");
    snprintf(bad_cmd, sizeof(bad_cmd), "%s", at("crlf-hh"));
    ask(&f, &b, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(a.error < 0);
    CHECK(!strstr(a.message, "Evil"));
    /* a command line that does not split, or names nothing that runs */
    snprintf(bad_cmd, sizeof(bad_cmd), "%s 'unterminated", at("junk-hh"));
    ask(&f, &b, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "\"headersHelper\"");
    CHECK_CONTAINS(a.message, "unterminated single quote");
    snprintf(bad_cmd, sizeof(bad_cmd), "%s", at("no-such-helper"));
    ask(&f, &b, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, -ENOENT);
    CHECK_CONTAINS(a.message, "no-such-helper");
    /* a stdio entry's headersHelper is not run */
    struct mcp_server st = http_entry();
    st.transport = MCP_TRANSPORT_STDIO;
    st.command = "true";
    st.headers_helper = bad_cmd;
    ask(&f, &st, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    answer_release(&a);
    fx_free(&f);
}

/* ---- stdio ----------------------------------------------------------------------------------- */

static void test_stdio_vars(void)
{
    struct fx f;
    fx_new(&f, "stdio", NULL);
    put_file("secrets.json", "{\"secrets\": {\"TOK\": {\"value\": \"" CANARY "\"},"
                             "\"PORT\": {\"value\": \"8080\"}}}\n");
    struct mcp_server s = http_entry();
    char *env[] = {"TOKEN=${TOK}", NULL};
    char *args[] = {"--port=${PORT}", "--token-from-env", NULL};
    s.transport = MCP_TRANSPORT_STDIO;
    s.command = "server";
    s.url = NULL;
    s.env = env;
    s.args = args;
    s.auth = MCP_AUTH_OAUTH; /* not for stdio */
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(var_of(&a.c, "TOK"), CANARY);
    CHECK_STR(var_of(&a.c, "PORT"), "8080");
    CHECK(!a.c.headers || !a.c.headers[0]);
    CHECK_STR(slurp("secrets.argv"), "[resolve][--json][--][TOK][PORT]\n");
    CHECK_INT(lines("auth.runs"), 0);
    answer_release(&a);
    fx_free(&f);
}

/* ---- OAuth ----------------------------------------------------------------------------------- */

static void put_header_json(const char *name, const char *token, int64_t expires_at)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"headers\": {\"Authorization\": \"Bearer %s\"}, \"expires_at\": %" PRId64
             ", \"version\": 1}\n",
             token, expires_at);
    put_file(name, json);
}

static void test_oauth_header(void)
{
    struct fx f;
    struct cred_helper_opts o = {.config_path = "/etc/cfg/mcp.json"};
    fx_new(&f, "oauth", &o);
    int64_t t = now_s();
    put_header_json("header.json", CANARY "-oa", t + 2400);
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    char *headers[] = {"X-Other: o", NULL};
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY "-oa");
    CHECK_STR(header_of(&a.c, "X-Other"), "o");
    CHECK_INT(a.c.expires_at, (t + 2400) * 1000);
    CHECK_STR(slurp("auth.argv"), "[--config][/etc/cfg/mcp.json][header][--json][--][srv]\n");
    /* cached until it expires */
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(lines("auth.runs"), 1);
    /* a 401: asked again, with --refresh */
    put_header_json("header.json", CANARY "-new", t + 3000);
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, "Bearer error=\"invalid_token\"", &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY "-new");
    CHECK_INT(lines("auth.runs"), 2);
    CHECK_CONTAINS(slurp("auth.argv"),
                   "\n[--config][/etc/cfg/mcp.json][header][--json][--refresh][--][srv]\n");
    /* the next plain ask does not refresh (this answer is due for renewal as it comes: it
     * expires within the current second) */
    put_header_json("header.json", CANARY "-soon", now_s());
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    ask(&f, &s, CRED_REASON_EXPIRING, NULL, &a);
    CHECK_INT(lines("auth.runs"), 4);
    CHECK_STR(last_line("auth.argv"), "[--config][/etc/cfg/mcp.json][header][--json][--][srv]\n");
    answer_release(&a);
    fx_free(&f);

    /* the target mcp-auth is told, when it is not the entry's name */
    struct cred_helper_opts o2 = {.auth_target = "https://srv.example/mcp"};
    fx_new(&f, "oauth-target", &o2);
    put_header_json("header.json", "tok", now_s() + 3600);
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(slurp("auth.argv"), "[header][--json][--][https://srv.example/mcp]\n");
    answer_release(&a);
    fx_free(&f);
}

/* OAuth, a headersHelper and secrets together: the answer's expires_at is the smallest */
static void test_expires_at_smallest(void)
{
    struct fx f;
    fx_new(&f, "smallest", NULL);
    int64_t t = now_s();
    char json[512];
    snprintf(json, sizeof(json),
             "{\"secrets\": {\"K\": {\"value\": \"" CANARY "\", \"expires_at\": %" PRId64 "}}}\n",
             t + 5000);
    put_file("secrets.json", json);
    snprintf(json, sizeof(json), "{\"headers\": {\"X-H\": \"h\"}, \"expires_at\": %" PRId64 "}\n",
             t + 4000);
    put_file("hh.json", json);
    put_script("hh", "cat \"$D/hh.json\"");
    put_header_json("header.json", "oa", t + 4500);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s", at("hh"));
    struct mcp_server s = http_entry();
    char *headers[] = {"X-K: ${K}", NULL};
    s.headers = headers;
    s.headers_helper = cmd;
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_INT(a.c.expires_at, (t + 4000) * 1000);
    CHECK_STR(header_of(&a.c, "X-K"), CANARY);
    CHECK_STR(header_of(&a.c, "X-H"), "h");
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer oa");
    snprintf(json, sizeof(json), "{\"headers\": {\"X-H\": \"h\"}, \"expires_at\": %" PRId64 "}\n",
             t + 9000);
    put_file("hh.json", json);
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.c.expires_at, (t + 4500) * 1000);
    answer_release(&a);
    fx_free(&f);
}

static void test_login_required(void)
{
    struct fx f;
    fx_new(&f, "login", NULL);
    put_file("need-login", "");
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_STR(a.message, "sign-in required: run 'mcp-auth srv'"); /* after "server 'srv': " */
    CHECK_INT(lines("login.runs"), 0); /* no autoAuth: never signs in by itself */
    /* not cached: asked again at the next need */
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(lines("auth.runs"), 2);
    /* once signed in elsewhere, the next ask has the header */
    unlink(at("need-login"));
    put_header_json("header.json", CANARY, now_s() + 3600);
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    answer_release(&a);
    fx_free(&f);

    /* --config, when the bridge was given one */
    struct cred_helper_opts o = {.config_path = "/x/mcp.json"};
    fx_new(&f, "login-config", &o);
    put_file("need-login", "");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_STR(a.message, "sign-in required: run 'mcp-auth --config \"/x/mcp.json\" srv'");
    answer_release(&a);
    fx_free(&f);

    /* authRequiredMessage, with ${server} */
    struct cred_helper_opts m = {.auth_required_message = "Sign in to ${server} (${server}) now"};
    fx_new(&f, "login-message", &m);
    put_file("need-login", "");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_STR(a.message, "Sign in to srv (srv) now");
    answer_release(&a);
    fx_free(&f);

    char *msg = cred_helper_login_message(&(struct cred_helper_opts){0}, "linear");
    CHECK_STR(msg, "sign-in required: run 'mcp-auth linear'");
    free(msg);
    msg = cred_helper_login_message(&(struct cred_helper_opts){.auth_target = "https://l.example"},
                                    "linear");
    CHECK_STR(msg, "sign-in required: run 'mcp-auth https://l.example'");
    free(msg);
    msg = cred_helper_login_message(
        &(struct cred_helper_opts){.auth_required_message = "$${server"}, "linear");
    CHECK_STR(msg, "$${server");
    free(msg);
}

/* mcp-auth header exits 7: the server publishes no OAuth metadata. The message names the fix
 * in the entry (not a sign-in), the error is not "login required", autoAuth signs nothing in. */
static void test_wants_token(void)
{
    static const char wants_token[] =
        "printf '[%s]' \"$@\" >> \"$D/auth.argv\"; echo >> \"$D/auth.argv\"\n"
        "for a; do case \"$a\" in login) echo login >> \"$D/login.runs\";; esac; done\n"
        "echo \"mcp-auth: 'https://srv.example/mcp' does not use OAuth\" >&2; exit 7";
    static const char fix[] = "\"bearerTokenEnv\": \"NAME\" (or \"headers\": {\"Authorization\": "
                              "\"Bearer ${NAME}\"}), and store the token with 'secrets configure "
                              "NAME'";
    struct fx f;
    struct cred_helper_opts o = {.auto_auth = true, .login_timeout_ms = 30000};
    fx_new(&f, "wants-token", &o);
    put_script("mcp-auth", wants_token);
    struct mcp_server s = http_entry(); /* no "auth": found by a Bearer challenge */
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, "Bearer error=\"invalid_token\"", &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_STR(a.message, "it does not use OAuth (it answered 401 and publishes no OAuth metadata): "
                         "it wants a token of its own, not a sign-in. Give the entry 'srv' one: "
                         "\"bearerTokenEnv\": \"NAME\" (or \"headers\": {\"Authorization\": "
                         "\"Bearer ${NAME}\"}), and store the token with 'secrets configure NAME'");
    CHECK(!strstr(a.message, "sign-in required"));
    CHECK_INT(lines("login.runs"), 0);
    CHECK_INT(lines("auth.argv"), 1);
    answer_release(&a);
    fx_free(&f);

    /* connect URL: no entry to change yet */
    struct cred_helper_opts u = {.auth_target = "https://srv.example/mcp"};
    fx_new(&f, "wants-token-url", &u);
    put_script("mcp-auth", wants_token);
    s.auth = MCP_AUTH_OAUTH;
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -EINVAL);
    CHECK_CONTAINS(a.message, "--header \"Authorization: Bearer ...\"");
    CHECK_CONTAINS(a.message, fix);
    answer_release(&a);
    fx_free(&f);
}

static void test_auto_auth(void)
{
    struct fx f;
    struct cred_helper_opts o = {.auto_auth = true, .login_timeout_ms = 30000};
    fx_new(&f, "autoauth", &o);
    put_file("need-login", "");
    put_file("login-signs-in", "");
    put_header_json("header2.json", CANARY, now_s() + 3600);
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    CHECK_STR(slurp("auth.runs"), "header\nlogin\nheader\n");
    CHECK_CONTAINS(slurp("auth.argv"), "\n[-q][login][--timeout][30000ms][--][srv]\n");
    /* two needs while it signs in: one login, both answered */
    put_file("need-login", "");
    put_file("login-signs-in", "");
    put_file("login.sleep", "0.3");
    put_header_json("header2.json", CANARY "-2", now_s() + 3600);
    struct answer b = {0};
    (void)ask_start(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    /* the header said 4: the login is under way */
    CHECK(wait_for(f.l, reached, &(struct count){"login.runs", 2}, 10000));
    CHECK_INT(a.calls, 0);
    (void)ask_start(&f, &s, CRED_REASON_RECONNECT, NULL, &b);
    CHECK(wait_for(f.l, answered, &a, 10000));
    CHECK(wait_for(f.l, answered, &b, 10000));
    CHECK_INT(a.error, 0);
    CHECK_INT(b.error, 0);
    CHECK_STR(header_of(&b.c, "Authorization"), "Bearer " CANARY "-2");
    CHECK_INT(lines("login.runs"), 2);
    answer_release(&b);

    /* cancelled while it signs in: no callback, and the next ask has the new header */
    put_file("need-login", "");
    put_header_json("header2.json", CANARY "-3", now_s() + 3600);
    struct cred_request *r = ask_start(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK(wait_for(f.l, reached, &(struct count){"login.runs", 3}, 10000));
    cred_cancel(r);
    idle(&f, 600);
    CHECK_INT(a.calls, 0);
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY "-3");
    CHECK_INT(lines("login.runs"), 3);
    unlink(at("login.sleep"));
    answer_release(&a);
    fx_free(&f);

    /* a failed login: login required, saying why */
    fx_new(&f, "autoauth-fail", &o);
    put_file("need-login", "");
    put_file("login.exit", "1");
    unlink(at("login-signs-in"));
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_STR(a.message, "signing in by itself (autoAuth) failed: mcp-auth failed (exit status 1). "
                         "Run 'mcp-auth srv' to see why");
    answer_release(&a);
    fx_free(&f);
}

static void test_oauth_failures(void)
{
    struct fx f;
    fx_new(&f, "oauth-fail", NULL);
    put_script("mcp-auth", "echo 'mcp-auth: cannot reach https://as.example/token: timed out' >&2;"
                           " echo 'detail' >&2; exit 1");
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -EIO);
    CHECK_STR(a.message, "mcp-auth failed (exit status 1): mcp-auth: cannot reach "
                         "https://as.example/token: timed out");
    /* an answer over 64 KiB */
    put_script("mcp-auth", "head -c 70000 /dev/zero | tr '\\0' ' '; echo '{}'");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -E2BIG);
    CHECK_CONTAINS(a.message, "mcp-auth: its answer is larger than 65536 bytes");
    /* exit 0 with nothing said */
    put_script("mcp-auth", "exit 0");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -EIO);
    CHECK_STR(a.message, "mcp-auth failed (exit status 0)");
    /* a headers answer of a later version */
    put_script("mcp-auth", "echo '{\"headers\": {}, \"version\": 3}'");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "version 3 of the helper protocol");
    answer_release(&a);
    fx_free(&f);
}

static void test_storm_brake(void)
{
    struct fx f;
    struct cred_helper_opts o = {.auto_auth = true};
    fx_new(&f, "storm", &o);
    put_file("need-login", ""); /* header always 4, login always 0 */
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_INT(lines("login.runs"), 3);
    CHECK_CONTAINS(a.message, "sign-in required: run 'mcp-auth srv'");
    CHECK_CONTAINS(a.message, "3 sign-ins in the last 10 minutes did not help");
    /* and the next need starts no more */
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_INT(a.error, CRED_LOGIN_REQUIRED);
    CHECK_INT(lines("login.runs"), 3);
    CHECK_CONTAINS(a.message, "did not help");
    answer_release(&a);
    fx_free(&f);
}

static const char scope_challenge[] = "Bearer error=\"insufficient_scope\", scope=\"b c\", "
                                      "resource_metadata=\"https://srv.example/.well-known/x\"";

static void test_step_up(void)
{
    struct fx f;
    fx_new(&f, "stepup", NULL);
    put_header_json("header.json", CANARY, now_s() + 3600);
    put_file("status.json", "{\"servers\": [{\"server\": \"srv\", \"scope\": \"a b\"}]}\n");
    struct mcp_server s = http_entry();
    s.auth = MCP_AUTH_OAUTH;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    /* without autoAuth: the command that widens the grant */
    ask(&f, &s, CRED_REASON_FORBIDDEN, scope_challenge, &a);
    CHECK_INT(a.error, -EPERM);
    /* the upstream puts "server 'srv': " before it */
    CHECK_STR(a.message, "the request was refused: it needs a wider grant than the one signed in "
                         "(insufficient_scope). Run 'mcp-auth srv --scope \"a b c\"'");
    CHECK_INT(lines("login.runs"), 0);
    CHECK_CONTAINS(slurp("auth.argv"), "\n[status][--json][--][srv]\n");
    answer_release(&a);
    fx_free(&f);

    /* with autoAuth: mcp-auth login --scope, then the new header */
    struct cred_helper_opts o = {.auto_auth = true};
    fx_new(&f, "stepup-auto", &o);
    put_header_json("header.json", "narrow", now_s() + 3600);
    put_header_json("header2.json", CANARY "-wide", now_s() + 3600);
    put_file("login-signs-in", "");
    put_file("status.json", "{\"servers\": [{\"server\": \"srv\", \"scope\": \"a b\"}]}\n");
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer narrow");
    ask(&f, &s, CRED_REASON_FORBIDDEN, scope_challenge, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY "-wide");
    CHECK_STR(slurp("auth.runs"), "header\nstatus\nlogin\nheader\n");
    CHECK_CONTAINS(slurp("auth.argv"),
                   "\n[-q][login][--timeout][120000ms][--scope][a b c][--][srv]\n");
    /* refused even so: what to do next */
    char *hint = cred_refused_hint(f.p, &s, -EPERM);
    CHECK_CONTAINS(hint, "the grant was widened to \"a b c\" and the server still refuses");
    free(hint);
    hint = cred_refused_hint(f.p, &s, -EACCES);
    CHECK_STR(hint, "sign in again with 'mcp-auth srv'");
    free(hint);
    struct mcp_server plain = http_entry();
    CHECK(cred_refused_hint(f.p, &plain, -EACCES) == NULL); /* not signed in with OAuth */

    /* the widened sign-in fails: -EPERM, with the command to run by hand */
    put_file("login.exit", "3");
    ask(&f, &s, CRED_REASON_FORBIDDEN, scope_challenge, &a);
    CHECK_INT(a.error, -EPERM);
    CHECK_STR(a.message, "signing in by itself (autoAuth) failed: mcp-auth failed (exit status 3). "
                         "Run 'mcp-auth srv --scope \"a b c\"' to see why");
    unlink(at("login.exit"));
    answer_release(&a);
    fx_free(&f);

    /* mcp-auth status knows no grant (exit 4): the challenged scopes alone */
    fx_new(&f, "stepup-nogrant", NULL);
    put_header_json("header.json", "t", now_s() + 3600);
    put_file("status.json", "");
    ask(&f, &s, CRED_REASON_FORBIDDEN, scope_challenge, &a);
    CHECK_INT(a.error, -EPERM);
    CHECK_CONTAINS(a.message, "'mcp-auth srv --scope \"b c\"'");
    answer_release(&a);
    fx_free(&f);

    /* a 403 for an entry that does not sign in with OAuth: nothing to widen */
    fx_new(&f, "stepup-none", NULL);
    struct mcp_server b = http_entry();
    b.auth = MCP_AUTH_DISABLED;
    ask(&f, &b, CRED_REASON_FORBIDDEN, scope_challenge, &a);
    CHECK_INT(a.error, -EPERM);
    CHECK_CONTAINS(a.message, "does not sign in with OAuth");
    CHECK_INT(lines("auth.runs"), 0);
    answer_release(&a);
    fx_free(&f);
}

static void test_oauth_found_by_challenge(void)
{
    static const char challenge[] =
        "Bearer resource_metadata=\"https://srv.example/.well-known/oauth-protected-resource\"";
    struct fx f;
    fx_new(&f, "found", NULL);
    put_header_json("header.json", CANARY, now_s() + 3600);
    struct mcp_server s = http_entry(); /* no "auth" */
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, 0);
    CHECK(!header_of(&a.c, "Authorization"));
    CHECK_INT(lines("auth.runs"), 0);
    /* a 401 that is not a Bearer challenge: nothing more to ask */
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, "Basic realm=\"x\"", &a);
    CHECK_INT(lines("auth.runs"), 0);
    /* a Bearer one: OAuth from now on */
    ask(&f, &s, CRED_REASON_UNAUTHORIZED, challenge, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    CHECK_INT(lines("auth.runs"), 1);
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer " CANARY);
    answer_release(&a);
    fx_free(&f);

    /* "auth": "none" (or false) never signs in */
    fx_new(&f, "found-none", NULL);
    put_header_json("header.json", CANARY, now_s() + 3600);
    struct mcp_server n = http_entry();
    n.auth = MCP_AUTH_DISABLED;
    ask(&f, &n, CRED_REASON_UNAUTHORIZED, challenge, &a);
    CHECK_INT(a.error, 0);
    CHECK(!header_of(&a.c, "Authorization"));
    ask(&f, &n, CRED_REASON_RECONNECT, NULL, &a);
    CHECK(!header_of(&a.c, "Authorization"));
    CHECK_INT(lines("auth.runs"), 0);
    answer_release(&a);
    fx_free(&f);

    /* nor does an entry that sets Authorization itself: OAuth would silently replace it */
    fx_new(&f, "found-static", NULL);
    put_header_json("header.json", CANARY, now_s() + 3600);
    struct mcp_server st = http_entry();
    char *headers[] = {"Authorization: Bearer static", NULL};
    st.headers = headers;
    ask(&f, &st, CRED_REASON_UNAUTHORIZED, challenge, &a);
    CHECK_INT(a.error, 0);
    CHECK_STR(header_of(&a.c, "Authorization"), "Bearer static");
    CHECK_INT(lines("auth.runs"), 0);
    answer_release(&a);
    fx_free(&f);
}

/* ---- failures of the helpers themselves ------------------------------------------------------ */

static void test_timeouts(void)
{
    struct fx f;
    struct cred_helper_opts o = {.helper_timeout_ms = 300};
    fx_new(&f, "timeout", &o);
    put_file("secrets.sleep", "20");
    put_file("secrets.json", "{\"secrets\": {\"T\": {\"value\": \"x\"}}}\n");
    struct mcp_server s = http_entry();
    char *headers[] = {"X-T: ${T}", NULL};
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "secrets did not answer in time");

    /* it said part of its answer, then hung */
    put_script("half-secrets", "printf '{\"secrets\": {\"T\": '; sleep 20");
    setenv("CREDKIT_SECRETS", at("half-secrets"), 1);
    ask(&f, &s, CRED_REASON_RECONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "secrets did not answer in time");

    struct mcp_server oa = http_entry();
    oa.auth = MCP_AUTH_OAUTH;
    put_file("header.sleep", "20");
    ask(&f, &oa, CRED_REASON_CONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK(a.error != CRED_LOGIN_REQUIRED);
    CHECK_CONTAINS(a.message, "mcp-auth did not answer in time");

    put_script("slow-hh", "sleep 20");
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s", at("slow-hh"));
    struct mcp_server h = http_entry();
    h.headers_helper = cmd;
    ask(&f, &h, CRED_REASON_CONNECT, NULL, &a);
    CHECK(a.error < 0);
    CHECK_CONTAINS(a.message, "headersHelper did not answer in time");
    answer_release(&a);
    fx_free(&f);
}

static void test_missing_helpers(void)
{
    struct fx f;
    fx_new(&f, "missing", NULL);
    setenv("CREDKIT_SECRETS", at("not-there"), 1);
    struct mcp_server s = http_entry();
    char *headers[] = {"X-T: ${T}", NULL};
    s.headers = headers;
    struct answer a = {0};
    ask(&f, &s, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -ENOENT);
    CHECK_CONTAINS(a.message, "CREDKIT_SECRETS");
    CHECK_CONTAINS(a.message, "not-there");

    setenv("CREDKIT_MCP_AUTH", dir, 1); /* a folder, not an executable file */
    struct mcp_server o = http_entry();
    o.auth = MCP_AUTH_OAUTH;
    ask(&f, &o, CRED_REASON_CONNECT, NULL, &a);
    CHECK_INT(a.error, -ENOENT);
    CHECK_CONTAINS(a.message, "CREDKIT_MCP_AUTH");
    answer_release(&a);
    fx_free(&f);
}

static void test_new_args(void)
{
    struct cred_provider *p = NULL;
    CHECK_INT(cred_helper_new(NULL, &p), -EINVAL);
    CHECK_INT(cred_helper_new(&(struct cred_helper_opts){0}, &p), -EINVAL);
    CHECK(p == NULL);
}

int main(void)
{
    int r = TESTS_RUN(
        test_secrets_forms, test_secrets_vars_and_cache, test_secrets_expiry, test_secrets_errors,
        test_two_asks_one_run, test_cancel, test_bearer, test_headers_helper, test_stdio_vars,
        test_oauth_header, test_expires_at_smallest, test_login_required, test_wants_token,
        test_auto_auth, test_oauth_failures, test_storm_brake, test_step_up,
        test_oauth_found_by_challenge, test_timeouts, test_missing_helpers, test_new_args);
    return r;
}
