/* test_cmd_list.c - what `mcp-bridge list` prints of an entry, from entries completed by hand
 * with what the loader fills in for imports and keys (import, shadowed, disabled, warnings):
 * the SOURCE with "(import NAME)", "disabled" as the STATUS, the "shadows:" and "warning:"
 * lines, the LIFECYCLE column (lazy / eager / keep-alive, the idle timeout, "never"), control
 * characters escaped in names, paths, commands and warnings, and the same in --json.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/strv.h"

#include "cli/cmd_creds.h"
#include "cli/cmd_list.h"
#include "config/server_config.h"
#include "tests.h"

/* The configuration of JSON text j (' stands for "), loaded as the bridge loads it. */
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
    CHECK_INT(server_config_load_object(root, "/cfg/mcp.json", &o, &c, &e), 0);
    json_object_put(root);
    return c;
}

/* Entry name of c, writable: the fields the loader fills in for imports and keys are set by
 * hand here (they belong to the configuration, freed with it). */
static struct mcp_server *entry(struct mcp_config *c, const char *name)
{
    struct mcp_server *s = (struct mcp_server *)mcp_config_find(c, name);
    CHECK(s != NULL);
    return s;
}

static char **vec(const char *a, const char *b)
{
    char **v = calloc(3, sizeof(*v));
    v[0] = strdup(a);
    v[1] = b ? strdup(b) : NULL;
    return v;
}

static void set_vec(char ***field, char **v)
{
    strv_free(*field);
    *field = v;
}

/* What fn printed on stdout. Caller frees. */
static char *captured(int (*fn)(const struct mcp_config *, const struct cmd_creds_report *, void *),
                      const struct mcp_config *c, const struct cmd_creds_report *rep, void *arg)
{
    char path[4096];
    int pn = snprintf(path, sizeof(path), "%s/out.txt", tests_tmpdir());
    CHECK(pn > 0 && (size_t)pn < sizeof(path));
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    int r = fn(c, rep, arg);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CHECK_INT(r, 0);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return strdup("");
    char *out = calloc(1, 1 << 20);
    size_t n = fread(out, 1, (1 << 20) - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

static int run_text(const struct mcp_config *c, const struct cmd_creds_report *rep, void *arg)
{
    (void)arg;
    return list_text(c, rep, NULL);
}

static int run_json(const struct mcp_config *c, const struct cmd_creds_report *rep, void *arg)
{
    return list_json(c, rep, arg, NULL);
}

/* The line of out that starts with prefix (a copy, without its end), or NULL. */
static char *line_of(const char *out, const char *prefix)
{
    static char line[4096];
    for (const char *p = out; *p;) {
        size_t n = strcspn(p, "\n");
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            snprintf(line, sizeof(line), "%.*s", (int)n, p);
            return line;
        }
        p += n + (p[n] == '\n');
    }
    return NULL;
}

static struct mcp_config *fixture(void)
{
    /* 'sh' is on PATH: a command that is not makes the status "not installed" */
    struct mcp_config *c = load("{'mcpServers': {"
                                " 'plain': {'command': 'sh'},"
                                " 'off': {'command': 'srv', 'disabled': true},"
                                " 'eager': {'command': 'srv', 'lifecycle': 'eager'},"
                                " 'kept': {'command': 'srv', 'lifecycle': 'keep-alive'},"
                                " 'ctl': {'command': 'a\\u0007b', 'args': ['x\\u001b[2Jy']},"
                                " 'imp': {'url': 'http://127.0.0.1:9/mcp'}}}");
    struct mcp_server *s = entry(c, "off");
    s->disabled = true; /* the loader sets it from "disabled": true */
    s = entry(c, "imp");
    free(s->import);
    s->import = strdup("cursor");
    free(s->source);
    s->source = strdup("~/.cursor/mcp.json");
    set_vec(&s->shadowed, vec("~/.claude.json (import claude-code)", "~/.config/mcp/mcp.json"));
    set_vec(&s->warnings, vec("unknown key \"alwaysAllow\x1b]0;x\a\": ignored", NULL));
    return c;
}

static void test_text(void)
{
    setenv("CREDKIT_SECRETS", "/nonexistent/secrets", 1);
    setenv("CREDKIT_MCP_AUTH", "/nonexistent/mcp-auth", 1);
    struct mcp_config *c = fixture();
    struct cmd_creds_report *rep = NULL;
    CHECK_INT(cmd_creds_report_new(c, NULL, &rep), 0);
    char *out = captured(run_text, c, rep, NULL);

    const char *l = line_of(out, "NAME ");
    CHECK(l && strstr(l, "STATUS") && strstr(l, "LIFECYCLE") && strstr(l, "SOURCE"));
    l = line_of(out, "plain ");
    CHECK(l && strstr(l, " ok ") && strstr(l, " lazy 10m ") && strstr(l, "/cfg/mcp.json"));
    l = line_of(out, "off ");
    CHECK(l && strstr(l, " disabled ") && !strstr(l, " ok "));
    l = line_of(out, "eager ");
    CHECK(l && strstr(l, " eager 10m "));
    l = line_of(out, "kept ");
    CHECK(l && strstr(l, " keep-alive ") && !strstr(l, "keep-alive 10m"));
    l = line_of(out, "imp ");
    CHECK(l && strstr(l, "~/.cursor/mcp.json (import cursor)"));
    CHECK(strstr(out, "    shadows: ~/.claude.json (import claude-code)\n    shadows: "
                      "~/.config/mcp/mcp.json\n") != NULL);
    CHECK(strstr(out, "    warning: unknown key \"alwaysAllow\\x1b]0;x\\x07\": ignored\n") != NULL);
    l = line_of(out, "ctl ");
    CHECK(l && strstr(l, "'a\\x07b' 'x\\x1b[2Jy'"));
    /* nothing of the user's reaches the terminal raw */
    CHECK(strchr(out, '\x1b') == NULL && strchr(out, '\a') == NULL);
    free(out);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
}

static void test_idle(void)
{
    struct mcp_config *c =
        load("{'mcpServers': {'a': {'command': 'srv'}}, 'settings': {'toolPrefix': 'server'}}");
    struct server_settings st;
    server_settings_get(c, &st);
    struct buf b;
    buf_init(&b, 256);
    const struct mcp_server *s = mcp_config_find(c, "a");
    CHECK_INT(list_lifecycle_text(s, &st, &b), 0);
    CHECK_STR(buf_str(&b), "lazy 10m");
    st.idle_timeout_ms = 0;
    buf_reset(&b);
    CHECK_INT(list_lifecycle_text(s, &st, &b), 0);
    CHECK_STR(buf_str(&b), "lazy never");
    st.idle_timeout_ms = 90 * 1000;
    buf_reset(&b);
    CHECK_INT(list_lifecycle_text(s, &st, &b), 0);
    CHECK_STR(buf_str(&b), "lazy 1m30s");
    buf_release(&b);
    mcp_config_free(c);
}

static void test_json(void)
{
    struct mcp_config *c = fixture();
    struct cmd_creds_report *rep = NULL;
    struct strv displays = STRV_INIT;
    CHECK_INT(list_file_displays(c, &displays), 0);
    CHECK_INT(cmd_creds_report_new(c, NULL, &rep), 0);
    char *out = captured(run_json, c, rep, &displays);
    struct json_object *root = json_tokener_parse(out);
    CHECK(root != NULL);
    int64_t version = 0;
    CHECK(json_get_int64(root, "version", &version) && version == 1);
    struct json_object *servers = json_get_array(root, "servers");
    size_t seen = 0;
    for (size_t i = 0; servers && i < json_object_array_length(servers); i++) {
        struct json_object *o = json_object_array_get_idx(servers, i);
        const char *name = json_get_string(o, "name");
        struct json_object *v = NULL;
        if (strcmp(name, "off") == 0) {
            seen++;
            CHECK_STR(json_get_string(o, "status"), "disabled");
            CHECK(json_object_object_get_ex(o, "disabled", &v) && json_object_get_boolean(v));
        } else if (strcmp(name, "imp") == 0) {
            seen++;
            CHECK_STR(json_get_string(o, "import"), "cursor");
            struct json_object *sh = json_get_array(o, "shadowed");
            CHECK(sh && json_object_array_length(sh) == 2);
            CHECK_STR(json_object_get_string(json_object_array_get_idx(sh, 0)),
                      "~/.claude.json (import claude-code)");
            struct json_object *w = json_get_array(o, "warnings");
            CHECK(w && json_object_array_length(w) == 1);
            CHECK_STR(json_get_string(o, "lifecycle"), "lazy");
            CHECK(json_object_object_get_ex(o, "idle_timeout_ms", &v) &&
                  json_object_get_int64(v) == 600000);
        } else if (strcmp(name, "kept") == 0) {
            seen++;
            CHECK_STR(json_get_string(o, "lifecycle"), "keep-alive");
            CHECK(json_object_object_get_ex(o, "idle_timeout_ms", &v) && v == NULL);
        } else if (strcmp(name, "plain") == 0) {
            seen++;
            CHECK(json_object_object_get_ex(o, "import", &v) && v == NULL);
            CHECK(json_object_object_get_ex(o, "disabled", &v) && !json_object_get_boolean(v));
            CHECK_STR(json_get_string(o, "status"), "ok");
        }
    }
    CHECK_INT(seen, 4);
    json_object_put(root);
    free(out);
    strv_release(&displays);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
}

/* Bidirectional controls and invalid UTF-8 are escaped (textsafe); one entry too long to show
 * is shown cut with its length, and the others are listed (the list used to fail as a whole) */
static void test_hostile(void)
{
    setenv("CREDKIT_SECRETS", "/nonexistent/secrets", 1);
    setenv("CREDKIT_MCP_AUTH", "/nonexistent/mcp-auth", 1);
    struct mcp_config *c = load("{'mcpServers': {'a-huge': {'command': 'srv'},"
                                " 'b-bidi': {'command': 'evil\u202egnp.sh'},"
                                " 'c-after': {'command': 'last'}}}");
    size_t n = 300 * 1024;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    struct mcp_server *s = entry(c, "a-huge");
    char **v = calloc(2, sizeof(*v));
    v[0] = big;
    set_vec(&s->args, v);
    s = entry(c, "b-bidi");
    set_vec(&s->warnings, vec("bad \xff byte", NULL));
    struct cmd_creds_report *rep = NULL;
    CHECK_INT(cmd_creds_report_new(c, NULL, &rep), 0);
    char *out = captured(run_text, c, rep, NULL);
    const char *l = line_of(out, "a-huge ");
    CHECK(l != NULL);
    CHECK(strstr(out, "bytes, too long to show: see 'mcp-bridge list --json')") != NULL);
    l = line_of(out, "b-bidi ");
    CHECK(l && strstr(l, "evil\\u{202e}gnp.sh"));
    CHECK(strstr(out, "    warning: bad \\xff byte\n") != NULL);
    CHECK(line_of(out, "c-after ") != NULL);
    CHECK(strstr(out, "\xe2\x80\xae") == NULL);
    free(out);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
}

/* list --check's outcomes, one per entry */
static struct client_probe *check_probes;

static int run_text_checked(const struct mcp_config *c, const struct cmd_creds_report *rep,
                            void *arg)
{
    (void)arg;
    return list_text(c, rep, check_probes);
}

static int run_json_checked(const struct mcp_config *c, const struct cmd_creds_report *rep,
                            void *arg)
{
    return list_json(c, rep, arg, check_probes);
}

static size_t index_of(const struct mcp_config *c, const char *name)
{
    for (size_t i = 0; i < mcp_config_count(c); i++)
        if (strcmp(mcp_config_at(c, i)->name, name) == 0)
            return i;
    FAIL("no such entry");
    return 0;
}

static struct json_object *server_json(struct json_object *root, const char *name)
{
    struct json_object *a = json_get_array(root, "servers");
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        struct json_object *o = json_object_array_get_idx(a, i);
        if (strcmp(json_get_string(o, "name"), name) == 0)
            return o;
    }
    FAIL("no such server in the JSON");
    return NULL;
}

/* STATUS says what was checked: a command not found, then what --check found */
static void test_status(void)
{
    setenv("CREDKIT_SECRETS", "/nonexistent/secrets", 1);
    setenv("CREDKIT_MCP_AUTH", "/nonexistent/mcp-auth", 1);
    struct mcp_config *c = load("{'mcpServers': {"
                                " 'found': {'command': 'sh'},"
                                " 'gone': {'command': 'no-such-program-xyz'},"
                                " 'gonepath': {'command': '/nonexistent/bin/srv'},"
                                " 'off': {'command': 'no-such-program-xyz', 'disabled': true},"
                                " 'web': {'url': 'http://127.0.0.1:9/mcp'}}}");
    struct mcp_server *off = entry(c, "off");
    off->disabled = true;
    struct cmd_creds_report *rep = NULL;
    struct strv displays = STRV_INIT;
    CHECK_INT(cmd_creds_report_new(c, NULL, &rep), 0);
    CHECK_INT(list_file_displays(c, &displays), 0);

    char *out = captured(run_text, c, rep, NULL);
    const char *l = line_of(out, "found ");
    CHECK(l && strstr(l, " ok "));
    l = line_of(out, "gone ");
    CHECK(l && strstr(l, " not installed "));
    CHECK(strstr(out, "    not installed: 'no-such-program-xyz' is not found on PATH\n") != NULL);
    l = line_of(out, "gonepath ");
    CHECK(l && strstr(l, " not installed "));
    CHECK(
        strstr(out, "    not installed: '/nonexistent/bin/srv' is not there or not executable\n"));
    l = line_of(out, "off ");
    CHECK(l && strstr(l, " disabled ")); /* never started: what it would run is not its state */
    l = line_of(out, "web ");
    CHECK(l && strstr(l, " ok "));
    CHECK(!strstr(out, "check:"));
    free(out);

    out = captured(run_json, c, rep, &displays);
    struct json_object *root = json_tokener_parse(out), *v = NULL;
    CHECK(root != NULL);
    CHECK_STR(json_get_string(server_json(root, "gone"), "status"), "not-installed");
    CHECK_STR(json_get_string(server_json(root, "found"), "status"), "ok");
    CHECK(!json_object_object_get_ex(server_json(root, "found"), "check", &v));
    json_object_put(root);
    free(out);

    /* --check: ready with the tool count, failed with the reason, sign-in with the command */
    check_probes = calloc(mcp_config_count(c), sizeof(*check_probes));
    struct client_probe *p = &check_probes[index_of(c, "found")];
    p->state = CLIENT_PROBE_READY;
    p->n_tools = 3;
    p = &check_probes[index_of(c, "web")];
    p->state = CLIENT_PROBE_FAILED;
    p->message = strdup("server 'web': initialize failed: connection refused");
    out = captured(run_text_checked, c, rep, NULL);
    l = line_of(out, "found ");
    CHECK(l && strstr(l, " ready "));
    CHECK(strstr(out, "    check: ready, 3 tools\n") != NULL);
    l = line_of(out, "web ");
    CHECK(l && strstr(l, " failed "));
    CHECK(strstr(out, "    check: failed: server 'web': initialize failed: connection refused\n"));
    l = line_of(out, "gone ");
    CHECK(l && strstr(l, " not installed "));
    free(out);

    client_probe_release(p);
    p->state = CLIENT_PROBE_LOGIN;
    p->message = strdup("server 'web' needs a sign-in: run mcp-auth web");
    out = captured(run_text_checked, c, rep, NULL);
    l = line_of(out, "web ");
    CHECK(l && strstr(l, " sign-in required "));
    CHECK(strstr(out, "    check: sign-in required: server 'web' needs a sign-in: run mcp-auth "
                      "web\n") != NULL);
    free(out);

    out = captured(run_json_checked, c, rep, &displays);
    root = json_tokener_parse(out);
    CHECK(root != NULL);
    struct json_object *o = server_json(root, "found"), *chk = NULL;
    CHECK_STR(json_get_string(o, "status"), "ready");
    CHECK(json_object_object_get_ex(o, "check", &chk) && chk);
    CHECK_STR(json_get_string(chk, "state"), "ready");
    CHECK(json_object_object_get_ex(chk, "tools", &v) && json_object_get_int64(v) == 3);
    o = server_json(root, "web");
    CHECK_STR(json_get_string(o, "status"), "sign-in-required");
    CHECK(json_object_object_get_ex(o, "check", &chk) && chk);
    CHECK_STR(json_get_string(chk, "state"), "sign-in-required");
    CHECK_STR(json_get_string(chk, "error"), "server 'web' needs a sign-in: run mcp-auth web");
    o = server_json(root, "gone");
    CHECK_STR(json_get_string(o, "status"), "not-installed");
    CHECK(json_object_object_get_ex(o, "check", &chk) && chk == NULL);
    json_object_put(root);
    free(out);

    for (size_t i = 0; i < mcp_config_count(c); i++)
        client_probe_release(&check_probes[i]);
    free(check_probes);
    check_probes = NULL;
    strv_release(&displays);
    cmd_creds_report_free(rep);
    mcp_config_free(c);
}

TESTS_MAIN(test_text, test_idle, test_json, test_hostile, test_status)
