/* test_cred_sign.c - "requestHeadersCommand": real commands (/bin/sh scripts) on a real loop.
 *
 * Covered: the value's checks (an object with "command"; "args", "env", "timeoutMs" of their
 * kinds; unknown keys); no value, no signer; the envelope on the command's stdin (version,
 * method, exact URL, the body in base64) and its headers as "Name: value"; ${env:VAR} in
 * command, args and env values; "env" on top of the bridge's environment; failures logged with
 * the server's name and never a value: an exit status, not JSON, a value that is not a string,
 * a framing header, a header name twice, the timeout; cancel (no callback). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/strv.h"

#include "core/loop.h"
#include "creds/cred_sign.h"
#include "tests.h"

#include "loop_wait.h"

#define CANARY "sEcReT-4d2a"

static char log_path[4200];

static struct log *test_log(void)
{
    snprintf(log_path, sizeof(log_path), "%s/sign.log", tests_tmpdir());
    int fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        exit(2);
    struct log *l = log_new("test_cred_sign", fd);
    if (!l)
        exit(2);
    return l;
}

/* What the log holds so far (a static buffer). */
static const char *log_text(void)
{
    static char text[8192];
    FILE *f = fopen(log_path, "re");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    return text;
}

static struct json_object *obj(const char *json)
{
    struct json_object *o = json_tokener_parse(json);
    if (!o)
        exit(2);
    return o;
}

static void check_bad(const char *json, const char *want)
{
    struct json_object *o = obj(json);
    struct err e = ERR_INIT;
    CHECK_INT(cred_sign_check(o, &e), -EINVAL);
    if (!strstr(err_msg(&e), want))
        fprintf(stderr, "  %s: got '%s', want '%s'\n", json, err_msg(&e), want);
    CHECK(strstr(err_msg(&e), want) != NULL);
    json_object_put(o);
}

static void test_check(void)
{
    struct json_object *o = obj("{\"url\": \"https://x/mcp\"}");
    struct err e = ERR_INIT;
    struct cred_sign *s = (struct cred_sign *)(void *)&e;
    CHECK_INT(cred_sign_check(o, &e), 0);
    CHECK_INT(cred_sign_new(NULL, NULL, "x", o, &s, &e), 0);
    CHECK(s == NULL); /* no key: no signer */
    json_object_put(o);
    o = obj("{\"requestHeadersCommand\": {\"command\": \"sign\", \"args\": [\"-k\"], "
            "\"env\": {\"K\": \"v\"}, \"timeoutMs\": 60000}}");
    CHECK_INT(cred_sign_check(o, &e), 0);
    json_object_put(o);

    check_bad("{\"requestHeadersCommand\": \"sign --key x\"}",
              "\"requestHeadersCommand\" must be an object with \"command\", not a string");
    check_bad("{\"requestHeadersCommand\": {}}", "\"requestHeadersCommand\" needs \"command\"");
    check_bad("{\"requestHeadersCommand\": {\"command\": \" \"}}", "requestHeadersCommand.command");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"args\": \"-k\"}}",
              "\"requestHeadersCommand\"");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"env\": {\"K\": 1}}}",
              "\"requestHeadersCommand.env\" value 'K' must be a string");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"env\": []}}",
              "\"requestHeadersCommand.env\" must be an object of strings");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"timeoutMs\": 60001}}",
              "\"requestHeadersCommand.timeoutMs\" must be a whole number of milliseconds from 1 "
              "to 60000");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"timeoutMs\": 0}}", "timeoutMs");
    check_bad("{\"requestHeadersCommand\": {\"command\": \"s\", \"shell\": true}}",
              "\"requestHeadersCommand\" has a key it does not know: 'shell'");
}

struct got {
    int calls;
    int error;
    struct strv headers;
};

static void on_done(int error, const char *const *headers, void *userdata)
{
    struct got *g = userdata;
    g->calls++;
    g->error = error;
    for (size_t i = 0; headers && headers[i]; i++)
        CHECK_INT(strv_push(&g->headers, headers[i]), 0);
    CHECK(error < 0 ? headers == NULL : headers != NULL);
}

static bool got_done(void *ctx)
{
    return ((struct got *)ctx)->calls > 0;
}

/* A signer whose command is /bin/sh -c script, with env (a JSON object, may be "{}"). */
static struct cred_sign *signer(struct loop *l, struct log *lg, const char *script, const char *env,
                                int timeout_ms)
{
    struct json_object *raw = json_object_new_object(), *v = json_object_new_object();
    struct json_object *args = json_object_new_array();
    json_object_array_add(args, json_object_new_string("-c"));
    json_object_array_add(args, json_object_new_string(script));
    json_object_object_add(v, "command", json_object_new_string("${env:SIGN_SH}"));
    json_object_object_add(v, "args", args);
    json_object_object_add(v, "env", obj(env));
    if (timeout_ms)
        json_object_object_add(v, "timeoutMs", json_object_new_int(timeout_ms));
    json_object_object_add(raw, "requestHeadersCommand", v);
    struct cred_sign *s = NULL;
    struct err e = ERR_INIT;
    int r = cred_sign_new(l, lg, "notes", raw, &s, &e);
    if (r < 0)
        fprintf(stderr, "  cred_sign_new: %s\n", err_msg(&e));
    CHECK_INT(r, 0);
    CHECK(s != NULL);
    json_object_put(raw);
    return s;
}

/* One run of s for a POST of body; waits for done. */
static void sign(struct loop *l, struct cred_sign *s, const char *body, struct got *g)
{
    struct cred_sign_run *run = NULL;
    struct err e = ERR_INIT;
    *g = (struct got){.headers = STRV_INIT};
    CHECK_INT(cred_sign_start(s, "POST", "https://n.example/mcp?a=\"b\"", body,
                              body ? strlen(body) : 0, on_done, g, &run, &e),
              0);
    CHECK_INT(g->calls, 0); /* from the loop, never from inside start */
    CHECK(wait_for(l, got_done, g, 15000));
    CHECK_INT(g->calls, 1);
}

static void test_runs(void)
{
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    struct log *lg = test_log();
    struct got g;
    char in_path[4200], script[8600];
    snprintf(in_path, sizeof(in_path), "%s/envelope", tests_tmpdir());
    setenv("SIGN_SH", "/bin/sh", 1);
    setenv("SIGN_WORD", "signed", 1);
    setenv("SIGN_KEPT", "from the bridge", 1);

    /* the envelope on stdin; the headers it answers; its environment: the bridge's and env */
    snprintf(script, sizeof(script),
             "cat >'%s'; printf '{\"X-Sig\": \"%%s %%s\", \"X-Kept\": \"%%s\"}' \"$WORD\" "
             "\"$EXTRA\" \"$SIGN_KEPT\"",
             in_path);
    struct cred_sign *s =
        signer(l, lg, script, "{\"WORD\": \"${env:SIGN_WORD}\", \"EXTRA\": \"x\"}", 0);
    sign(l, s, "{\"jsonrpc\":\"2.0\"}", &g);
    CHECK_INT(g.error, 0);
    CHECK_INT(g.headers.n, 2);
    CHECK_STR(g.headers.n > 0 ? g.headers.v[0] : NULL, "X-Sig: signed x");
    CHECK_STR(g.headers.n > 1 ? g.headers.v[1] : NULL, "X-Kept: from the bridge");
    strv_release(&g.headers);
    FILE *f = fopen(in_path, "re");
    char env[1024] = "";
    size_t n = f ? fread(env, 1, sizeof(env) - 1, f) : 0;
    if (f)
        fclose(f);
    env[n] = '\0';
    CHECK_STR(env,
              "{\"version\":1,\"method\":\"POST\",\"url\":\"https://n.example/mcp?a=\\\"b\\\"\","
              "\"bodyBase64\":\"eyJqc29ucnBjIjoiMi4wIn0=\"}\n");
    /* no body: an empty one */
    sign(l, s, NULL, &g);
    CHECK_INT(g.error, 0);
    strv_release(&g.headers);
    f = fopen(in_path, "re");
    n = f ? fread(env, 1, sizeof(env) - 1, f) : 0;
    if (f)
        fclose(f);
    env[n] = '\0';
    CHECK(strstr(env, "\"bodyBase64\":\"\"}") != NULL);
    cred_sign_free(s);

    /* failures: the request is not to be sent, the log says why with the server's name */
    static const struct {
        const char *script, *logged;
        int error;
    } bad[] = {
        {"echo 'key locked' >&2; exit 3", "exit status 3: key locked", -EIO},
        {"echo '" CANARY "'", "its answer is not a JSON object of headers", -EBADMSG},
        {"echo '[\"" CANARY "\"]'", "its answer is not a JSON object of headers", -EBADMSG},
        {"echo '{\"X-Sig\": 5}'", "the value of its header 'X-Sig' is not a string", -EBADMSG},
        {"echo '{\"X-Sig\": \"" CANARY "\", \"Content-Length\": \"1\"}'",
         "its header 'Content-Length' is refused: it frames the HTTP request", -EINVAL},
        {"echo '{\"mcp-session-id\": \"" CANARY "\"}'",
         "its header 'mcp-session-id' is refused: it belongs to the MCP session", -EINVAL},
        {"echo '{\"X-Sig\": \"" CANARY "\", \"x-sig\": \"" CANARY "\"}'", "X-Sig", -EINVAL},
        {"printf '{\"X-Sig\": \"a\\\\r\\\\nInjected: " CANARY "\"}'", "X-Sig", -EINVAL},
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        s = signer(l, lg, bad[i].script, "{}", 0);
        sign(l, s, "{}", &g);
        if (g.error != bad[i].error)
            fprintf(stderr, "  script %zu: %d\n", i, g.error);
        CHECK_INT(g.error, bad[i].error);
        CHECK_INT(g.headers.n, 0);
        strv_release(&g.headers);
        cred_sign_free(s);
        const char *text = log_text();
        if (!strstr(text, bad[i].logged))
            fprintf(stderr, "  script %zu: the log lacks '%s':\n%s\n", i, bad[i].logged, text);
        CHECK(strstr(text, bad[i].logged) != NULL);
        CHECK(strstr(text, "server 'notes': \"requestHeadersCommand\" failed, the request is "
                           "not sent") != NULL);
        CHECK(strstr(text, CANARY) == NULL);
    }

    /* the timeout */
    s = signer(l, lg, "sleep 30", "{}", 200);
    sign(l, s, "{}", &g);
    CHECK_INT(g.error, -ETIMEDOUT);
    CHECK(strstr(log_text(), "it did not answer in time") != NULL);
    cred_sign_free(s);

    /* cancel: no callback, even once the command would have answered */
    s = signer(l, lg, "echo '{\"X-Sig\": \"a\"}'", "{}", 0);
    struct cred_sign_run *run = NULL;
    struct err e = ERR_INIT;
    g = (struct got){.headers = STRV_INIT};
    CHECK_INT(cred_sign_start(s, "GET", "https://n.example/mcp", NULL, 0, on_done, &g, &run, &e),
              0);
    cred_sign_cancel(run);
    cred_sign_free(s);
    CHECK(!wait_for(l, got_done, &g, 300));
    CHECK_INT(g.calls, 0);

    /* a command that cannot run: an error at start, logged */
    struct json_object *raw =
        obj("{\"requestHeadersCommand\": {\"command\": \"/nonexistent/sign-xyz\"}}");
    CHECK_INT(cred_sign_new(l, lg, "notes", raw, &s, &e), 0);
    json_object_put(raw);
    run = NULL;
    CHECK(cred_sign_start(s, "GET", "https://n.example/mcp", NULL, 0, on_done, &g, &run, &e) < 0);
    CHECK(strstr(err_msg(&e), "/nonexistent/sign-xyz") != NULL);
    CHECK(strstr(log_text(), "/nonexistent/sign-xyz") != NULL);
    cred_sign_free(s);

    unsetenv("SIGN_SH");
    unsetenv("SIGN_WORD");
    unsetenv("SIGN_KEPT");
    log_free(lg);
    loop_free(l);
}

TESTS_MAIN(test_check, test_runs)
