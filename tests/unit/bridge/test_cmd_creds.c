/* test_cmd_creds.c - what list and add say about an entry's credentials: the names an entry
 * refers to (every field, each once, in order), the sign-in state read from `mcp-auth status
 * --json` (signed in, expired with and without a refresh token, nothing stored, another URL),
 * the program of a headersHelper (quotes, '!', bad input), the sign-in command with --config,
 * the words list prints, and the run of `secrets resolve --json` through CREDKIT_SECRETS: an
 * answer read (a canary value kept nowhere), a failing helper, an answer too large for one run,
 * a missing helper.
 *
 * The commands are not part of bridge_core (they make the executable), so the module is
 * compiled into this test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "cli/cmd_creds.c" /* the module under test, with its static helpers */
#include "tests.h"

#define CANARY "canary-7f3e-value"

/* The configuration of JSON text j (' stands for "), loaded as the bridge loads it: names that
 * are not in the environment leave the entry valid. */
static struct mcp_config *load(const char *j)
{
    char text[4096];
    snprintf(text, sizeof(text), "%s", j);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    struct json_object *root = json_tokener_parse(text);
    struct mcp_config_opts o = {.defer_vars = true};
    struct mcp_config *c = NULL;
    struct err e = ERR_INIT;
    CHECK(root != NULL);
    CHECK_INT(mcp_config_load_object(root, "test", &o, &c, &e), 0);
    json_object_put(root);
    return c;
}

static char *joined(const struct strv *v)
{
    static char out[1024];
    out[0] = 0;
    for (size_t i = 0; i < v->n; i++) {
        strcat(out, i ? "," : "");
        strcat(out, v->v[i]);
    }
    return out;
}

static void test_names(void)
{
    unsetenv("CREDS_T_A");
    struct mcp_config *c =
        load("{'mcpServers': {"
             " 'h': {'url': 'https://${CREDS_T_HOST}/mcp', 'headers': {'X-A': '${CREDS_T_A} "
             "${CREDS_T_B}',"
             "        'X-C': 'plain $$ ${CREDS_T_A}'}, 'bearerTokenEnv': 'CREDS_T_TOK'},"
             " 's': {'command': 'srv', 'args': ['--root', '${CREDS_T_ROOT}', '${CREDS_T_ROOT}'],"
             "       'env': {'K': '${CREDS_T_KEY}', 'L': 'literal'}},"
             " 'b': {'url': 'https://b.example/mcp', 'auth': 'bearer', 'bearerToken': "
             "'x-${CREDS_T_BT}'},"
             " 'n': {'url': 'https://n.example/mcp'}}}");
    const char *want[][2] = {
        {"b", "CREDS_T_BT"},
        {"h", "CREDS_T_HOST,CREDS_T_A,CREDS_T_B,CREDS_T_TOK"},
        {"n", ""},
        {"s", "CREDS_T_KEY,CREDS_T_ROOT"},
    };
    for (size_t i = 0; i < 4; i++) {
        const struct mcp_server *s = mcp_config_find(c, want[i][0]);
        struct strv v = STRV_INIT;
        CHECK(s != NULL && !s->error);
        if (!s)
            continue;
        CHECK_INT(creds_names_of(s, &v), 0);
        CHECK_STR(joined(&v), want[i][1]);
        strv_release(&v);
    }
    mcp_config_free(c);
}

static struct json_object *status_answer(int64_t now)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"version\": 1, \"servers\": ["
             "{\"server_url\": \"https://ok.example/mcp\", \"has_access_token\": true,"
             " \"expires_at\": %lld, \"has_refresh_token\": true},"
             "{\"server_url\": \"https://old.example/mcp\", \"has_access_token\": true,"
             " \"expires_at\": %lld, \"has_refresh_token\": true},"
             "{\"server_url\": \"https://dead.example/mcp\", \"has_access_token\": true,"
             " \"expires_at\": %lld, \"has_refresh_token\": false},"
             "{\"server_url\": \"https://noexp.example/mcp\", \"has_access_token\": true,"
             " \"has_refresh_token\": false},"
             "{\"server_url\": \"https://out.example/mcp\", \"has_access_token\": false,"
             " \"has_refresh_token\": true}]}",
             (long long)(now + 3600), (long long)(now - 10), (long long)(now - 10));
    return json_tokener_parse(text);
}

static void test_oauth_state(void)
{
    int64_t now = 1767225600;
    struct json_object *st = status_answer(now);
    struct creds_oauth o;
    struct buf b;
    buf_init(&b, 4096);
    CHECK(st != NULL);

    CHECK_INT(creds_oauth_from_status(st, "https://ok.example/mcp", true, "mcp-auth ok", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    CHECK_INT(o.expires_at, now + 3600);
    CHECK(o.refresh_token);
    CHECK(o.command == NULL);
    CHECK_INT(creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "signed in, expires in 1h, refreshed by itself");
    creds_oauth_release(&o);

    CHECK_INT(creds_oauth_from_status(st, "https://old.example/mcp", true, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_EXPIRED);
    creds_oauth_release(&o);
    CHECK_INT(creds_oauth_from_status(st, "https://out.example/mcp", true, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_EXPIRED);
    creds_oauth_release(&o);

    CHECK_INT(creds_oauth_from_status(st, "https://noexp.example/mcp", true, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    CHECK_INT(o.expires_at, 0);
    buf_reset(&b);
    CHECK_INT(creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "signed in");
    creds_oauth_release(&o);

    /* expired with nothing to refresh it, and nothing stored: a sign-in, with its command */
    CHECK_INT(creds_oauth_from_status(st, "https://dead.example/mcp", true,
                                      "mcp-auth --config /c.json dead", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    buf_reset(&b);
    CHECK_INT(creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "login required: run 'mcp-auth --config /c.json dead'");
    creds_oauth_release(&o);
    CHECK_INT(creds_oauth_from_status(st, "https://ok.example/other", true, "mcp-auth o", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    CHECK_STR(o.command, "mcp-auth o");
    creds_oauth_release(&o);
    CHECK_INT(creds_oauth_from_status(NULL, "https://ok.example/mcp", true, "mcp-auth o", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    creds_oauth_release(&o);

    /* an entry that does not say OAuth: a stored sign-in is shown, none is no state */
    CHECK_INT(creds_oauth_from_status(st, "https://none.example/mcp", false, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_NOT_USED);
    CHECK(o.command == NULL);
    creds_oauth_release(&o);
    CHECK_INT(creds_oauth_from_status(st, "https://ok.example/mcp", false, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    creds_oauth_release(&o);

    json_object_put(st);
    buf_release(&b);
}

static void test_helper_program(void)
{
    char *p = NULL;
    bool shell = true;
    CHECK_INT(creds_helper_program("get-headers --x 'y z'", &p, &shell), 0);
    CHECK_STR(p, "get-headers");
    CHECK(!shell);
    free(p);
    CHECK_INT(creds_helper_program("  '/opt/my dir/h'\"x\" a", &p, &shell), 0);
    CHECK_STR(p, "/opt/my dir/hx");
    free(p);
    CHECK_INT(creds_helper_program("!vault read -field=token x | tr -d '\\n'", &p, &shell), 0);
    CHECK_STR(p, "/bin/sh");
    CHECK(shell);
    free(p);
    p = NULL;
    CHECK_INT(creds_helper_program("'unclosed a", &p, &shell), -EINVAL);
    CHECK_INT(creds_helper_program("''", &p, &shell), -EINVAL);
    CHECK(p == NULL);

    struct creds_helper h = {.program = "get-headers", .path = "/usr/bin/get-headers"};
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(creds_describe_helper(&h, &b), 0);
    CHECK_STR(buf_str(&b), "get-headers, found at /usr/bin/get-headers (list does not run it)");
    h.path = NULL;
    buf_reset(&b);
    CHECK_INT(creds_describe_helper(&h, &b), 0);
    CHECK_STR(buf_str(&b), "'get-headers' is not found on PATH");
    buf_release(&b);

    /* looked up as execvp would: a path as it is, a name on PATH */
    char *found = program_path("sh");
    CHECK(found != NULL && found[0] == '/');
    free(found);
    CHECK(program_path("/nonexistent/creds-helper") == NULL);
    CHECK(program_path("creds-no-such-helper-xyz") == NULL);
}

static void test_login_command(void)
{
    char *cmd = NULL;
    CHECK_INT(creds_login_command("linear", NULL, &cmd), 0);
    CHECK_STR(cmd, "mcp-auth linear");
    free(cmd);
    CHECK_INT(creds_login_command("my server", "/tmp/a b.json", &cmd), 0);
    CHECK_STR(cmd, "mcp-auth --config \"/tmp/a b.json\" 'my server'");
    free(cmd);
}

static void test_describe_var(void)
{
    int64_t now = 1767225600;
    struct creds_var v = {
        .name = "T", .resolved = true, .source = "command", .expires_at = now + 300};
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(creds_describe_var(&v, now, &b), 0);
    CHECK_STR(buf_str(&b), "ok (from a command recipe, expires in 5m)");
    v.source = "environment";
    v.expires_at = 0;
    buf_reset(&b);
    CHECK_INT(creds_describe_var(&v, now, &b), 0);
    CHECK_STR(buf_str(&b), "ok (from the environment, no recipe)");
    v = (struct creds_var){.name = "T", .error = "'T' has no recipe"};
    buf_reset(&b);
    CHECK_INT(creds_describe_var(&v, now, &b), 0);
    CHECK_STR(buf_str(&b), "missing: 'T' has no recipe");
    buf_release(&b);
}

/* A stand-in for secrets at path: prints out, exits with code (the real one is used by the
 * integration tests; here the answers that are hard to get from it on purpose). */
static void write_helper(const char *path, const char *out, const char *err, int code)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "#!/bin/sh\nprintf '%%s\\n' '%s'\nprintf '%%s\\n' '%s' >&2\nexit %d\n", out, err,
            code);
    fclose(f);
    CHECK_INT(chmod(path, 0700), 0);
}

static bool vars_hold(const struct creds_var *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if ((v[i].source && strstr(v[i].source, s)) || (v[i].error && strstr(v[i].error, s)))
            return true;
    return false;
}

static void test_secrets_run(void)
{
    char path[4096];
    const char *names[] = {"CREDS_A", "CREDS_B", "CREDS_C"};
    struct creds_var v[3] = {0};
    int n = snprintf(path, sizeof(path), "%s/fake-secrets", tests_tmpdir());
    CHECK(n > 0 && (size_t)n < sizeof(path));
    setenv("CREDKIT_SECRETS", path, 1);

    write_helper(path,
                 "{\"version\":1,\"secrets\":{\"CREDS_A\":{\"value\":\"" CANARY
                 "\",\"source\":\"command\",\"expires_at\":1767225900},"
                 "\"CREDS_B\":{\"error\":\"CREDS_B has no recipe\"}}}",
                 "", 1);
    CHECK_INT(creds_vars_resolve(names, 3, v), 0);
    CHECK(v[0].resolved);
    CHECK_STR(v[0].source, "command");
    CHECK_INT(v[0].expires_at, 1767225900);
    CHECK(!v[1].resolved);
    CHECK_STR(v[1].error, "CREDS_B has no recipe");
    CHECK(!v[2].resolved);
    CHECK_CONTAINS(v[2].error, "did not answer");
    CHECK(!vars_hold(v, 3, CANARY));
    creds_vars_release(v, 3);

    /* a failure of the whole run: every name says why */
    write_helper(path, "", "secrets: secrets.json is readable by others", 3);
    CHECK_INT(creds_vars_resolve(names, 2, v), 0);
    CHECK(!v[0].resolved && !v[1].resolved);
    CHECK_CONTAINS(v[0].error, "'secrets' failed (exit status 3)");
    CHECK_CONTAINS(v[1].error, "readable by others");
    creds_vars_release(v, 2);

    /* an answer that is not the protocol */
    write_helper(path, "not json", "", 0);
    CHECK_INT(creds_vars_resolve(names, 1, v), 0);
    CHECK_CONTAINS(v[0].error, "cannot read the answer of 'secrets'");
    creds_vars_release(v, 1);

    /* an answer over the bound for all the names at once: asked again in halves, so that only
     * the one value that is too large by itself fails */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "#!/bin/sh\n"
                   "big() { head -c \"$1\" /dev/zero | tr '\\0' x; }\n"
                   "printf '{\"secrets\":{'\n"
                   "sep=\n"
                   "shift 3\n" /* resolve --json -- */
                   "for n; do\n"
                   "  size=30000; [ \"$n\" = CREDS_HUGE ] && size=70000\n"
                   "  printf '%%s\"%%s\":{\"value\":\"%%s\",\"source\":\"file\"}' \"$sep\" \"$n\" "
                   "\"$(big $size)\"\n"
                   "  sep=,\n"
                   "done\n"
                   "printf '}}\\n'\n");
        fclose(f);
        CHECK_INT(chmod(path, 0700), 0);
    }
    const char *many[] = {"CREDS_A", "CREDS_B", "CREDS_HUGE", "CREDS_C"};
    struct creds_var m[4] = {0};
    CHECK_INT(creds_vars_resolve(many, 4, m), 0);
    CHECK(m[0].resolved && m[1].resolved && m[3].resolved);
    CHECK_STR(m[3].source, "file");
    CHECK(!m[2].resolved);
    CHECK_CONTAINS(m[2].error, "larger than 65536 bytes");
    creds_vars_release(m, 4);

    /* not installed where it is said to be */
    (void)unlink(path);
    CHECK_INT(creds_vars_resolve(names, 1, v), 0);
    CHECK_CONTAINS(v[0].error, "CREDKIT_SECRETS");
    creds_vars_release(v, 1);
    unsetenv("CREDKIT_SECRETS");
}

TESTS_MAIN(test_names, test_oauth_state, test_helper_program, test_login_command, test_describe_var,
           test_secrets_run)
