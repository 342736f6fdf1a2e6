/* test_cmd_creds.c - what list and add say about an entry's credentials: the names an entry
 * refers to (every field, each once, in order), the sign-in state read from `mcp-auth status
 * --json` (signed in, expired with and without a refresh token, nothing stored, another URL),
 * the program of a headersHelper (quotes, '!', bad input), the sign-in command with --config,
 * the words list prints, and the run of `secrets resolve --json` through CREDKIT_SECRETS: an
 * answer read (a canary value kept nowhere), a failing helper, an answer too large for one run,
 * a missing helper. For every credential form of an entry, `list` shows a sign-in exactly when
 * the provider `serve` uses would ask mcp-auth for one (cred_oauth_use(), one rule).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/log.h"
#include "credkit/mcp_config.h"
#include "credkit/strv.h"

#include "cli/cmd_creds.h"
#include "core/loop.h"
#include "creds/cred_helper.h"
#include "creds/cred.h"
#include "tests.h"

#include "loop_wait.h"

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
             " 'n': {'url': 'https://n.example/mcp'},"
             /* a command's own ${...} is the shell's business; "!!" is a template */
             " 'c': {'command': 'srv', 'env': {'K': '!pass show ${CREDS_T_NOT}', 'L': "
             "'!!${CREDS_T_BANG}'}},"
             " 'd': {'url': 'https://d.example/mcp', 'headers': {'X-A': '!cat ${CREDS_T_NOT}'},"
             "       'bearerToken': '!!${CREDS_T_BT2}'}}}");
    const char *want[][2] = {
        {"b", "CREDS_T_BT"},
        {"h", "CREDS_T_HOST,CREDS_T_A,CREDS_T_B,CREDS_T_TOK"},
        {"n", ""},
        {"s", "CREDS_T_KEY,CREDS_T_ROOT"},
        {"c", "CREDS_T_BANG"},
        {"d", "CREDS_T_BT2"},
    };
    for (size_t i = 0; i < ELEMENTSOF(want); i++) {
        const struct mcp_server *s = mcp_config_find(c, want[i][0]);
        struct strv v = STRV_INIT;
        CHECK(s != NULL && !s->error);
        if (!s)
            continue;
        CHECK_INT(cmd_creds_names_of(s, &v), 0);
        CHECK_STR(joined(&v), want[i][1]);
        strv_release(&v);
    }
    mcp_config_free(c);
}

static struct json_object *status_answer(int64_t now)
{
    char text[2048];
    snprintf(
        text, sizeof(text),
        "{\"version\": 1, \"servers\": ["
        "{\"url\": \"https://ok.example/mcp\", \"has_access_token\": true,"
        " \"expires_at\": %lld, \"has_refresh_token\": true},"
        "{\"url\": \"https://old.example/mcp\", \"has_access_token\": true,"
        " \"expires_at\": %lld, \"has_refresh_token\": true},"
        "{\"url\": \"https://dead.example/mcp\", \"has_access_token\": true,"
        " \"expires_at\": %lld, \"has_refresh_token\": false},"
        "{\"url\": \"https://noexp.example/mcp\", \"has_access_token\": true,"
        " \"has_refresh_token\": false},"
        "{\"url\": \"https://out.example/mcp\", \"has_access_token\": false,"
        " \"has_refresh_token\": true},"
        "{\"url\": \"https://ok.example/mcp\", \"label\": \"work\", \"has_access_token\": false,"
        " \"has_refresh_token\": false}]}",
        (long long)(now + 3600), (long long)(now - 10), (long long)(now - 10));
    return json_tokener_parse(text);
}

static void test_oauth_state(void)
{
    int64_t now = 1767225600;
    struct json_object *st = status_answer(now);
    struct cmd_creds_oauth o;
    struct buf b;
    buf_init(&b, 4096);
    CHECK(st != NULL);

    CHECK_INT(cmd_creds_oauth_from_status(st, "https://ok.example/mcp", NULL, true, "mcp-auth ok",
                                          now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    CHECK_INT(o.expires_at, now + 3600);
    CHECK(o.refresh_token);
    CHECK(o.command == NULL);
    CHECK_INT(cmd_creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "signed in, expires in 1h, refreshed by itself");
    cmd_creds_oauth_release(&o);

    CHECK_INT(cmd_creds_oauth_from_status(st, "https://old.example/mcp", NULL, true, "x", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_EXPIRED);
    cmd_creds_oauth_release(&o);
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://out.example/mcp", NULL, true, "x", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_EXPIRED);
    cmd_creds_oauth_release(&o);

    CHECK_INT(
        cmd_creds_oauth_from_status(st, "https://noexp.example/mcp", NULL, true, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    CHECK_INT(o.expires_at, 0);
    buf_reset(&b);
    CHECK_INT(cmd_creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "signed in");
    cmd_creds_oauth_release(&o);

    /* expired with nothing to refresh it, and nothing stored: a sign-in, with its command */
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://dead.example/mcp", NULL, true,
                                          "mcp-auth --config /c.json dead", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    buf_reset(&b);
    CHECK_INT(cmd_creds_describe_oauth(&o, now, &b), 0);
    CHECK_STR(buf_str(&b), "login required: run 'mcp-auth --config /c.json dead'");
    cmd_creds_oauth_release(&o);
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://ok.example/other", NULL, true, "mcp-auth o",
                                          now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    CHECK_STR(o.command, "mcp-auth o");
    cmd_creds_oauth_release(&o);
    CHECK_INT(cmd_creds_oauth_from_status(NULL, "https://ok.example/mcp", NULL, true, "mcp-auth o",
                                          now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    cmd_creds_oauth_release(&o);

    /* another account of the same URL is its own sign-in: work signed out, the default not */
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://ok.example/mcp", "work", true,
                                          "mcp-auth ok-work", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    CHECK_STR(o.command, "mcp-auth ok-work");
    cmd_creds_oauth_release(&o);
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://ok.example/mcp", "home", true, "x", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_LOGIN_REQUIRED);
    cmd_creds_oauth_release(&o);

    /* an entry that does not say OAuth: a stored sign-in is shown, none is no state */
    CHECK_INT(
        cmd_creds_oauth_from_status(st, "https://none.example/mcp", NULL, false, "x", now, &o), 0);
    CHECK_INT(o.state, CREDS_OAUTH_NOT_USED);
    CHECK(o.command == NULL);
    cmd_creds_oauth_release(&o);
    CHECK_INT(cmd_creds_oauth_from_status(st, "https://ok.example/mcp", NULL, false, "x", now, &o),
              0);
    CHECK_INT(o.state, CREDS_OAUTH_SIGNED_IN);
    cmd_creds_oauth_release(&o);

    json_object_put(st);
    buf_release(&b);
}

static void test_helper_program(void)
{
    char *p = NULL;
    bool shell = true;
    CHECK_INT(cmd_creds_helper_program("get-headers --x 'y z'", &p, &shell), 0);
    CHECK_STR(p, "get-headers");
    CHECK(!shell);
    free(p);
    CHECK_INT(cmd_creds_helper_program("  '/opt/my dir/h'\"x\" a", &p, &shell), 0);
    CHECK_STR(p, "/opt/my dir/hx");
    free(p);
    CHECK_INT(cmd_creds_helper_program("!vault read -field=token x | tr -d '\\n'", &p, &shell), 0);
    CHECK_STR(p, "/bin/sh");
    CHECK(shell);
    free(p);
    p = NULL;
    CHECK_INT(cmd_creds_helper_program("'unclosed a", &p, &shell), -EINVAL);
    CHECK_INT(cmd_creds_helper_program("''", &p, &shell), -EINVAL);
    CHECK(p == NULL);

    struct cmd_creds_helper h = {.program = "get-headers", .path = "/usr/bin/get-headers"};
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(cmd_creds_describe_helper(&h, &b), 0);
    CHECK_STR(buf_str(&b), "get-headers, found at /usr/bin/get-headers (list does not run it)");
    h.path = NULL;
    buf_reset(&b);
    CHECK_INT(cmd_creds_describe_helper(&h, &b), 0);
    CHECK_STR(buf_str(&b), "'get-headers' is not found on PATH");
    buf_release(&b);

    /* looked up as execvp would: a path as it is, a name on PATH */
    char *found = cmd_creds_program_path("sh");
    CHECK(found != NULL && found[0] == '/');
    free(found);
    CHECK(cmd_creds_program_path("/nonexistent/creds-helper") == NULL);
    CHECK(cmd_creds_program_path("creds-no-such-helper-xyz") == NULL);
}

static void test_login_command(void)
{
    char *cmd = NULL;
    CHECK_INT(cmd_creds_login_command("linear", NULL, &cmd), 0);
    CHECK_STR(cmd, "mcp-auth linear");
    free(cmd);
    CHECK_INT(cmd_creds_login_command("my server", "/tmp/a b.json", &cmd), 0);
    CHECK_STR(cmd, "mcp-auth --config \"/tmp/a b.json\" 'my server'");
    free(cmd);
}

static void test_describe_var(void)
{
    int64_t now = 1767225600;
    struct cmd_creds_var v = {
        .name = "T", .resolved = true, .source = "command", .expires_at = now + 300};
    struct buf b;
    buf_init(&b, 4096);
    CHECK_INT(cmd_creds_describe_var(&v, now, &b), 0);
    CHECK_STR(buf_str(&b), "ok (from a command recipe, expires in 5m)");
    v.source = "environment";
    v.expires_at = 0;
    buf_reset(&b);
    CHECK_INT(cmd_creds_describe_var(&v, now, &b), 0);
    CHECK_STR(buf_str(&b), "ok (from the environment, no recipe)");
    v = (struct cmd_creds_var){.name = "T", .error = "'T' has no recipe"};
    buf_reset(&b);
    CHECK_INT(cmd_creds_describe_var(&v, now, &b), 0);
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

static bool vars_hold(const struct cmd_creds_var *v, size_t n, const char *s)
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
    struct cmd_creds_var v[3] = {0};
    int n = snprintf(path, sizeof(path), "%s/fake-secrets", tests_tmpdir());
    CHECK(n > 0 && (size_t)n < sizeof(path));
    setenv("CREDKIT_SECRETS", path, 1);

    write_helper(path,
                 "{\"version\":1,\"secrets\":{\"CREDS_A\":{\"value\":\"" CANARY
                 "\",\"source\":\"command\",\"expires_at\":1767225900},"
                 "\"CREDS_B\":{\"error\":\"CREDS_B has no recipe\"}}}",
                 "", 1);
    CHECK_INT(cmd_creds_vars_resolve(names, 3, v), 0);
    CHECK(v[0].resolved);
    CHECK_STR(v[0].source, "command");
    CHECK_INT(v[0].expires_at, 1767225900);
    CHECK(!v[1].resolved);
    CHECK_STR(v[1].error, "CREDS_B has no recipe");
    CHECK(!v[2].resolved);
    CHECK_CONTAINS(v[2].error, "did not answer");
    CHECK(!vars_hold(v, 3, CANARY));
    cmd_creds_vars_release(v, 3);

    /* a failure of the whole run: every name says why */
    write_helper(path, "", "secrets: secrets.json is readable by others", 3);
    CHECK_INT(cmd_creds_vars_resolve(names, 2, v), 0);
    CHECK(!v[0].resolved && !v[1].resolved);
    CHECK_CONTAINS(v[0].error, "'secrets' failed (exit status 3)");
    CHECK_CONTAINS(v[1].error, "readable by others");
    cmd_creds_vars_release(v, 2);

    /* an answer that is not the protocol */
    write_helper(path, "not json", "", 0);
    CHECK_INT(cmd_creds_vars_resolve(names, 1, v), 0);
    CHECK_CONTAINS(v[0].error, "cannot read the answer of 'secrets'");
    cmd_creds_vars_release(v, 1);

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
    struct cmd_creds_var m[4] = {0};
    CHECK_INT(cmd_creds_vars_resolve(many, 4, m), 0);
    CHECK(m[0].resolved && m[1].resolved && m[3].resolved);
    CHECK_STR(m[3].source, "file");
    CHECK(!m[2].resolved);
    CHECK_CONTAINS(m[2].error, "larger than 65536 bytes");
    cmd_creds_vars_release(m, 4);

    /* not installed where it is said to be */
    (void)unlink(path);
    CHECK_INT(cmd_creds_vars_resolve(names, 1, v), 0);
    CHECK_CONTAINS(v[0].error, "CREDKIT_SECRETS");
    cmd_creds_vars_release(v, 1);
    unsetenv("CREDKIT_SECRETS");
}

/* ---- list and the provider agree --------------------------------------------------------- */

static char agree_dir[4096];

static const char *agree_at(const char *name)
{
    static char paths[4][4096 + 64];
    static unsigned next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof(paths[0]), "%s/%s", agree_dir, name);
    return p;
}

static void agree_script(const char *name, const char *body)
{
    FILE *f = fopen(agree_at(name), "we");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "#!/bin/sh\nD='%s'\n%s\n", agree_dir, body);
    fclose(f);
    CHECK_INT(chmod(agree_at(name), 0700), 0);
}

/* The runs of `mcp-auth header` since the file was last removed. */
static int header_runs(void)
{
    FILE *f = fopen(agree_at("auth.runs"), "re");
    char line[64];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        n += strcmp(line, "header\n") == 0;
    fclose(f);
    return n;
}

struct agree_answer {
    int calls;
};

static void agree_done(int error, const struct credentials *c, const char *message, void *userdata)
{
    (void)error;
    (void)c;
    (void)message;
    ((struct agree_answer *)userdata)->calls++;
}

static bool agree_answered(void *ctx)
{
    return ((struct agree_answer *)ctx)->calls > 0;
}

/* Asks p for s's credentials for reason and waits for the answer. */
static void agree_ask(struct loop *l, struct cred_provider *p, const struct mcp_server *s,
                      enum cred_reason reason, const char *challenge)
{
    struct cred_query q = {.server = s, .reason = reason, .challenge = challenge};
    struct cred_request *r = NULL;
    struct agree_answer a = {0};
    CHECK_INT(cred_ask(p, &q, agree_done, &a, &r), 0);
    CHECK(wait_for(l, agree_answered, &a, 20000));
}

/* Every credential form of docs/bridge.md, each with a sign-in stored in mcp-auth for its URL:
 * list shows that sign-in exactly for the entries whose requests the provider gives
 * mcp-auth's header (from the first connect, or once a 401 brings a Bearer challenge). The
 * entries that set Authorization themselves (in "headers" or through a headersHelper) are
 * where the two used to differ: list showed a sign-in that serve never sent. */
static void test_oauth_list_agrees_with_provider(void)
{
    static const char challenge[] = "Bearer realm=\"mcp\"";
    static const struct {
        const char *name;
        enum cred_oauth_use use;
    } want[] = {
        {"oauth", CRED_OAUTH_ALWAYS},
        {"oauth-object", CRED_OAUTH_ALWAYS},
        {"oauth-auto", CRED_OAUTH_ALWAYS},
        {"oauth-plain-http", CRED_OAUTH_ALWAYS},
        {"nothing", CRED_OAUTH_CHALLENGE},
        {"nothing-sse", CRED_OAUTH_CHALLENGE},
        {"nothing-plain-http", CRED_OAUTH_CHALLENGE},
        {"header-var", CRED_OAUTH_CHALLENGE},
        {"header-auth", CRED_OAUTH_NEVER},
        {"helper", CRED_OAUTH_NEVER},
        {"bearer-env", CRED_OAUTH_NEVER},
        {"bearer-token", CRED_OAUTH_NEVER},
        {"auth-none", CRED_OAUTH_NEVER},
        {"auth-false", CRED_OAUTH_NEVER},
        {"oauth-false", CRED_OAUTH_NEVER},
        {"stdio", CRED_OAUTH_NEVER},
    };
    char status[4096];
    int n = snprintf(agree_dir, sizeof(agree_dir), "%s/agree", tests_tmpdir());
    CHECK(n > 0 && (size_t)n < sizeof(agree_dir));
    CHECK_INT(mkdir(agree_dir, 0700), 0);
    struct mcp_config *c = load(
        "{'settings': {'autoAuth': false}, 'mcpServers': {"
        " 'oauth': {'url': 'https://oauth.example/mcp', 'auth': 'oauth'},"
        " 'oauth-object': {'url': 'https://oauth-object.example/mcp', 'oauth': {'scope': 'a'}},"
        " 'oauth-auto': {'url': 'https://oauth-auto.example/mcp', 'auth': 'oauth',"
        "                'autoAuth': true},"
        " 'oauth-plain-http': {'url': 'http://oauth-plain-http.example/mcp', 'auth': 'oauth'},"
        " 'nothing': {'url': 'https://nothing.example/mcp'},"
        " 'nothing-sse': {'type': 'sse', 'url': 'https://nothing-sse.example/sse'},"
        " 'nothing-plain-http': {'url': 'http://nothing-plain-http.example/mcp'},"
        " 'header-var': {'url': 'https://header-var.example/mcp',"
        "                'headers': {'X-Key': '${CT_KEY}'}},"
        " 'header-auth': {'url': 'https://header-auth.example/mcp',"
        "                 'headers': {'Authorization': 'Bearer ${CT_TOK}'}},"
        " 'helper': {'url': 'https://helper.example/mcp', 'headersHelper': 'HELPER'},"
        " 'bearer-env': {'url': 'https://bearer-env.example/mcp', 'bearerTokenEnv': 'CT_TOK'},"
        " 'bearer-token': {'url': 'https://bearer-token.example/mcp', 'auth': 'bearer',"
        "                  'bearerToken': '${CT_TOK}'},"
        " 'auth-none': {'url': 'https://auth-none.example/mcp', 'auth': 'none'},"
        " 'auth-false': {'url': 'https://auth-false.example/mcp', 'auth': false},"
        " 'oauth-false': {'url': 'https://oauth-false.example/mcp', 'oauth': false},"
        " 'stdio': {'command': 'srv', 'env': {'K': '${CT_KEY}'}}}}");
    /* every URL above has a sign-in stored */
    size_t len = (size_t)snprintf(status, sizeof(status), "{\"version\": 1, \"servers\": [");
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        if (s->url)
            len += (size_t)snprintf(status + len, sizeof(status) - len,
                                    "%s{\"url\": \"%s\", \"has_access_token\": true,"
                                    " \"has_refresh_token\": true}",
                                    len > 30 ? "," : "", s->url);
    }
    (void)snprintf(status + len, sizeof(status) - len, "]}");
    CHECK(strlen(status) < sizeof(status) - 1);
    char auth[8192];
    (void)snprintf(auth, sizeof(auth),
                   "for a; do case \"$a\" in header|status) sub=$a; break;; esac; done\n"
                   "echo \"$sub\" >> \"$D/auth.runs\"\n"
                   "case \"$sub\" in\n"
                   "status) printf '%%s\\n' '%s';;\n"
                   "header) echo '{\"headers\": {\"Authorization\": \"Bearer oa\"}, "
                   "\"version\": 1}';;\n"
                   "esac",
                   status);
    agree_script("mcp-auth", auth);
    agree_script("secrets", "echo '{\"version\": 1, \"secrets\": {"
                            "\"CT_TOK\": {\"value\": \"tok\", \"source\": \"command\"},"
                            "\"CT_KEY\": {\"value\": \"key\", \"source\": \"command\"}}}'");
    agree_script("helper", "echo '{\"headers\": {\"Authorization\": \"Bearer hh\"}}'");
    setenv("CREDKIT_MCP_AUTH", agree_at("mcp-auth"), 1);
    setenv("CREDKIT_SECRETS", agree_at("secrets"), 1);
    struct mcp_server *hs = (struct mcp_server *)mcp_config_find(c, "helper");
    CHECK(hs != NULL);
    if (hs) {
        free(hs->headers_helper);
        hs->headers_helper = strdup(agree_at("helper"));
    }

    struct cmd_creds_report *rep = NULL;
    CHECK_INT(cmd_creds_report_new(c, NULL, &rep), 0);
    struct loop *l = NULL;
    CHECK_INT(loop_new(&l), 0);
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    struct log *log = log_new("mcp-bridge", null_fd);
    CHECK(log != NULL);
    CHECK_INT((int)mcp_config_count(c), (int)ELEMENTSOF(want));
    char name[sizeof(tests_current)];
    memcpy(name, tests_current, sizeof(name));
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct cmd_creds_server *cs = cmd_creds_report_at(rep, i);
        const struct mcp_server *s = cs->server;
        size_t k = 0;
        while (k < ELEMENTSOF(want) && strcmp(want[k].name, s->name) != 0)
            k++;
        CHECK(k < ELEMENTSOF(want));
        if (k == ELEMENTSOF(want))
            continue;
        /* failures name the entry */
        (void)snprintf(tests_current, sizeof(tests_current), "oauth agreement, entry '%s'",
                       s->name);
        CHECK(cs->checked && !s->error);
        enum cred_oauth_use use = cred_oauth_use(s);
        CHECK_INT(use, want[k].use);

        /* what list describes */
        bool listed = cs->oauth.state != CREDS_OAUTH_NOT_USED;
        CHECK(listed == (use != CRED_OAUTH_NEVER));
        if (listed)
            CHECK_INT(cs->oauth.state, CREDS_OAUTH_SIGNED_IN);

        /* what the provider does: at the first connect, and after a 401 with a challenge */
        struct cred_helper_opts o = {.loop = l, .log = log};
        struct cred_provider *p = NULL;
        CHECK_INT(cred_helper_new(&o, &p), 0);
        (void)unlink(agree_at("auth.runs"));
        agree_ask(l, p, s, CRED_REASON_CONNECT, NULL);
        CHECK_INT(header_runs(), use == CRED_OAUTH_ALWAYS);
        agree_ask(l, p, s, CRED_REASON_UNAUTHORIZED, challenge);
        bool asked = header_runs() > 0;
        CHECK(asked == listed);
        CHECK(asked == cred_oauth_applies(s, true));
        cred_provider_free(p);
    }
    memcpy(tests_current, name, sizeof(name));
    log_free(log);
    (void)close(null_fd);
    loop_free(l);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
    unsetenv("CREDKIT_MCP_AUTH");
    unsetenv("CREDKIT_SECRETS");
}

TESTS_MAIN(test_names, test_oauth_state, test_helper_program, test_login_command, test_describe_var,
           test_secrets_run, test_oauth_list_agrees_with_provider)
