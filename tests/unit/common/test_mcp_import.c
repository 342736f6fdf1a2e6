/* test_mcp_import.c - the other clients' files: which ones each import reads and in which order,
 * the shapes read from them and their translation into mcp.json entries (Codex's TOML, Windsurf's
 * serverUrl, Cursor's and VS Code's own variables), the notes of VS Code inputs, diagnostics, and
 * the rule that spots an entry running the bridge itself */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/mcp_import.h"
#include "credkit/strv.h"

#include "mcp_fixture.h"

static struct mcp_import *imp(const char *name, const char *cwd)
{
    struct err e = ERR_INIT;
    struct mcp_import *im = NULL;
    int r = mcp_import_read(name, cwd, &im, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "import %s: %s\n", name, err_msg(&e));
    return im;
}

/* The i-th entry as "name@source=<plain JSON>". */
static const char *item(const struct mcp_import *im, size_t i)
{
    static char out[8192];
    const struct mcp_import_entry *en = mcp_import_at(im, i);
    if (!en)
        return "(none)";
    snprintf(out, sizeof(out), "%s@%s=%s", en->name, en->source,
             json_object_to_json_string_ext(en->entry, JSON_C_TO_STRING_PLAIN |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
    return out;
}

static void test_unknown(void)
{
    setup("unknown");
    struct err e = ERR_INIT;
    struct mcp_import *im = NULL;
    CHECK_INT(mcp_import_read("cursorr", NULL, &im, &e), -EINVAL);
    CHECK(im == NULL);
    CHECK_STR(err_msg(&e), "unknown import 'cursorr': the accepted ones are cursor, claude-code, "
                           "claude-desktop, vscode, windsurf, codex");
    CHECK(mcp_import_known("codex"));
    CHECK(!mcp_import_known("Codex"));
    CHECK(!mcp_import_known(NULL));
}

static void test_cursor(void)
{
    setup("cursor");
    struct mcp_import *im = imp("cursor", P("home/proj"));
    if (!im)
        return;
    /* nothing there: no entries, no problem, both files considered */
    CHECK_INT(mcp_import_count(im), 0);
    CHECK_INT(mcp_import_diag_count(im), 0);
    CHECK_INT(mcp_import_file_count(im), 2);
    bool ex = true;
    CHECK_STR(mcp_import_file_at(im, 0, &ex), P("home/.cursor/mcp.json"));
    CHECK(!ex);
    CHECK_STR(mcp_import_file_at(im, 1, &ex), P("home/proj/.cursor/mcp.json"));
    CHECK(!ex);
    CHECK_STR(mcp_import_name(im), "cursor");
    mcp_import_free(im);

    put("home/.cursor/mcp.json", "{'mcpServers': {'a': {'command': 'user-a'},"
                                 " 'w': {'command': '${userHome}/bin/w',"
                                 " 'args': ['${workspaceFolder}/x', '${env:KEEP}']}}}");
    put("home/proj/.cursor/mcp.json", "{'mcpServers': {'a': {'url': 'https://proj.example/a'}}}");
    im = imp("cursor", P("home/proj"));
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 3);
    /* lowest first: the user's file, then the project's */
    CHECK_STR(item(im, 0), "a@~/.cursor/mcp.json={\"command\":\"user-a\"}");
    char want[4096];
    snprintf(want, sizeof(want),
             "w@~/.cursor/mcp.json={\"command\":\"%s/bin/w\",\"args\":[\"%s/x\",\"${env:KEEP}\"]}",
             P("home"), P("home/proj"));
    CHECK_STR(item(im, 1), want);
    CHECK_STR(item(im, 2), "a@~/proj/.cursor/mcp.json={\"url\":\"https://proj.example/a\"}");
    CHECK(mcp_import_at(im, 2)->notes && !mcp_import_at(im, 2)->notes[0]);
    CHECK(mcp_import_at(im, 3) == NULL);
    mcp_import_free(im);

    /* run in the home directory: the one file read once */
    im = imp("cursor", P("home"));
    if (im) {
        CHECK_INT(mcp_import_file_count(im), 1);
        CHECK_INT(mcp_import_count(im), 2);
    }
    mcp_import_free(im);

    /* no project: only the user's file, ${workspaceFolder} left as written */
    im = imp("cursor", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_file_count(im), 1);
    CHECK_INT(mcp_import_count(im), 2);
    CHECK_CONTAINS(item(im, 1), "\"${workspaceFolder}/x\"");
    mcp_import_free(im);

    /* Cursor's static OAuth client, "auth": {...}, is mcp-auth's "oauth" */
    put("home/.cursor/mcp.json",
        "{'mcpServers': {'o': {'url': 'https://o.example/mcp', 'auth': {'CLIENT_ID': 'cid',"
        " 'CLIENT_SECRET': '${env:O_SECRET}', 'scopes': ['read', 'write', 7]}},"
        " 'p': {'url': 'https://p.example/mcp', 'auth': {'scopes': []}},"
        " 'q': {'url': 'https://q.example/mcp', 'auth': 'oauth', 'oauth': {'clientId': 'x'}}}}");
    im = imp("cursor", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 3);
    CHECK_STR(item(im, 0),
              "o@~/.cursor/mcp.json={\"url\":\"https://o.example/mcp\",\"auth\":\"oauth\","
              "\"oauth\":{\"clientId\":\"cid\",\"clientSecret\":\"${env:O_SECRET}\","
              "\"scope\":\"read write\"}}");
    CHECK_STR(
        item(im, 1),
        "p@~/.cursor/mcp.json={\"url\":\"https://p.example/mcp\",\"auth\":\"oauth\",\"oauth\":{}}");
    CHECK_STR(item(im, 2),
              "q@~/.cursor/mcp.json={\"url\":\"https://q.example/mcp\",\"auth\":\"oauth\","
              "\"oauth\":{\"clientId\":\"x\"}}");
    mcp_import_free(im);
}

static void test_claude_code(void)
{
    setup("claude-code");
    put("home/.claude/mcp.json", "{'mcpServers': {'a': {'command': 'dot-claude-a'},"
                                 " 'b': {'command': 'dot-claude-b'}}}");
    char text[8192];
    snprintf(text, sizeof(text),
             "{'numStartups': 5, 'mcpServers': {'a': {'type': 'stdio', 'command': 'user-a'},"
             " 'c': {'type': 'http', 'url': 'https://c.example/mcp'}},"
             " 'projects': {'/elsewhere': {'mcpServers': {'a': {'command': 'other'}}},"
             " '%s': {'allowedTools': [], 'mcpServers': {'a': {'command': 'local-a'}}}}}",
             P("home/proj"));
    put("home/.claude.json", text);
    struct mcp_import *im = imp("claude-code", P("home/proj"));
    if (!im)
        return;
    CHECK_INT(mcp_import_diag_count(im), 0);
    CHECK_INT(mcp_import_count(im), 5);
    CHECK_STR(item(im, 0), "a@~/.claude/mcp.json={\"command\":\"dot-claude-a\"}");
    CHECK_STR(item(im, 1), "b@~/.claude/mcp.json={\"command\":\"dot-claude-b\"}");
    CHECK_STR(item(im, 2), "a@~/.claude.json={\"type\":\"stdio\",\"command\":\"user-a\"}");
    CHECK_STR(item(im, 3),
              "c@~/.claude.json={\"type\":\"http\",\"url\":\"https://c.example/mcp\"}");
    CHECK_STR(item(im, 4), "a@~/.claude.json={\"command\":\"local-a\"}");
    CHECK_INT(mcp_import_at(im, 0)->part, 1);
    CHECK_INT(mcp_import_at(im, 2)->part, 2);
    CHECK_INT(mcp_import_at(im, 4)->part, 3);
    CHECK_INT(mcp_import_file_count(im), 2);
    mcp_import_free(im);

    /* another project: its local servers are not this one's */
    mkdir_p(P("home/other"));
    im = imp("claude-code", P("home/other"));
    if (im)
        CHECK_INT(mcp_import_count(im), 4);
    mcp_import_free(im);

    /* a project reached through a symbolic link is found by its real path */
    CHECK_INT(symlink(P("home/proj"), P("home/link")), 0);
    im = imp("claude-code", P("home/link"));
    if (im)
        CHECK_STR(item(im, 4), "a@~/.claude.json={\"command\":\"local-a\"}");
    mcp_import_free(im);

    /* shapes that are wrong: diagnostics naming the file, the rest still read */
    put("home/.claude.json", "{'mcpServers': ['x'], 'projects': 5}");
    put("home/.claude/mcp.json", "{'mcpServers': {'a': ,}}");
    im = imp("claude-code", P("home/proj"));
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 0);
    CHECK_INT(mcp_import_diag_count(im), 2);
    CHECK_STR(mcp_import_diag_at(im, 0)->source, "~/.claude/mcp.json");
    CHECK_CONTAINS(mcp_import_diag_at(im, 0)->message, "'~/.claude/mcp.json': line 1");
    CHECK_CONTAINS(mcp_import_diag_at(im, 0)->message,
                   "(import claude-code): its servers are not imported");
    CHECK_STR(mcp_import_diag_at(im, 1)->message,
              "'~/.claude.json' (import claude-code): \"mcpServers\" must be an object, not an "
              "array: its servers are not imported");
    mcp_import_free(im);

    put("home/.claude.json", "[1]");
    im = imp("claude-code", NULL);
    if (im) {
        CHECK_INT(mcp_import_diag_count(im), 2);
        CHECK_STR(mcp_import_diag_at(im, 1)->message,
                  "'~/.claude.json' (import claude-code): the root must be an object, not an "
                  "array: its servers are not imported");
    }
    mcp_import_free(im);
}

static void test_claude_desktop_windsurf(void)
{
    setup("desktop");
    put("home/.config/Claude/claude_desktop_config.json",
        "{'mcpServers': {'d': {'command': 'desk', 'env': {'A': '1'}}}}");
    struct mcp_import *im = imp("claude-desktop", NULL);
    if (im)
        CHECK_STR(item(im, 0), "d@~/.config/Claude/claude_desktop_config.json="
                               "{\"command\":\"desk\",\"env\":{\"A\":\"1\"}}");
    mcp_import_free(im);

    setenv("XDG_CONFIG_HOME", P("xdg"), 1);
    put("xdg/Claude/claude_desktop_config.json", "{'mcpServers': {'x': {'command': 'xdg'}}}");
    im = imp("claude-desktop", NULL);
    if (im) {
        CHECK_INT(mcp_import_count(im), 1);
        CHECK_CONTAINS(item(im, 0), "\"xdg\"");
        CHECK_STR(mcp_import_file_at(im, 0, NULL), P("xdg/Claude/claude_desktop_config.json"));
    }
    mcp_import_free(im);
    unsetenv("XDG_CONFIG_HOME");

    put("home/.codeium/windsurf/mcp_config.json",
        "{'mcpServers': {'r': {'serverUrl': 'https://r.example/mcp', 'disabled': true},"
        " 'both': {'serverUrl': 'https://a.example', 'url': 'https://b.example'},"
        " 'l': {'command': 'local'}}}");
    im = imp("windsurf", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 3);
    CHECK_STR(item(im, 0), "r@~/.codeium/windsurf/mcp_config.json="
                           "{\"disabled\":true,\"url\":\"https://r.example/mcp\"}");
    /* url given too: serverUrl is left for the loader to warn about */
    CHECK_STR(item(im, 1), "both@~/.codeium/windsurf/mcp_config.json="
                           "{\"serverUrl\":\"https://a.example\",\"url\":\"https://b.example\"}");
    CHECK_STR(item(im, 2), "l@~/.codeium/windsurf/mcp_config.json={\"command\":\"local\"}");
    mcp_import_free(im);
}

static void test_vscode(void)
{
    setup("vscode");
    put("home/proj/.vscode/mcp.json",
        "{'inputs': [{'type': 'promptString', 'id': 'gh-token', 'password': true}],"
        " 'servers': {'gh': {'type': 'http', 'url': 'https://api.example/mcp',"
        " 'headers': {'Authorization': 'Bearer ${input:gh-token}'}},"
        " 'fs': {'type': 'stdio', 'command': 'node', 'args': ['${workspaceFolder}/fs.js'],"
        " 'env': {'K': '${input:key}', 'K2': '${input:key}', 'K3': '${input:}', 'K4': "
        "'${input:key:-x}'}}}}");
    struct mcp_import *im = imp("vscode", P("home/proj"));
    if (!im)
        return;
    CHECK_INT(mcp_import_diag_count(im), 0);
    CHECK_INT(mcp_import_count(im), 2);
    const struct mcp_import_entry *gh = mcp_import_at(im, 0), *fs = mcp_import_at(im, 1);
    CHECK_STR(gh->name, "gh");
    CHECK_STR(gh->source, "~/proj/.vscode/mcp.json");
    CHECK_INT(vlen((char **)gh->notes), 1);
    /* (an id secrets cannot hold as a name: its secret is gh_token) */
    CHECK_STR(gh->notes[0],
              "${input:gh-token} is read from the secret gh_token: run secrets configure gh_token");
    CHECK_STR(fs->name, "fs");
    CHECK_INT(vlen((char **)fs->notes), 1); /* once, however often it is used */
    CHECK_STR(fs->notes[0], "${input:key} is read from the secret key: run secrets configure key");
    char want[4096];
    snprintf(want, sizeof(want), "\"args\":[\"%s/fs.js\"]", P("home/proj"));
    CHECK_CONTAINS(item(im, 1), want);
    mcp_import_free(im);

    /* without a project there is no .vscode/mcp.json to read */
    im = imp("vscode", NULL);
    if (im) {
        CHECK_INT(mcp_import_file_count(im), 0);
        CHECK_INT(mcp_import_count(im), 0);
    }
    mcp_import_free(im);

    put("home/proj/.vscode/mcp.json", "{'servers': 'x'}");
    im = imp("vscode", P("home/proj"));
    if (im)
        CHECK_STR(mcp_import_diag_at(im, 0)->message,
                  "'~/proj/.vscode/mcp.json' (import vscode): \"servers\" must be an object, not a "
                  "string: its servers are not imported");
    mcp_import_free(im);
}

/* The files as the editors write them: JSON with comments and trailing commas. */
static void test_jsonc(void)
{
    setup("jsonc");
    put("home/proj/.vscode/mcp.json",
        "// See https://code.visualstudio.com/docs/copilot/chat/mcp-servers\n"
        "{\n"
        "  'inputs': [\n"
        "    {\n"
        "      'type': 'promptString',\n"
        "      'id': 'api-key', // asked once, kept by VS Code\n"
        "      'description': 'API key /* not a comment */',\n"
        "      'password': true,\n"
        "    },\n"
        "  ],\n"
        "  /* the servers\n"
        "     of this project */\n"
        "  'servers': {\n"
        "    'gh': {\n"
        "      'type': 'http',\n"
        "      'url': 'https://api.example/mcp', // the remote one\n"
        "      'headers': { 'Authorization': 'Bearer ${input:api-key}', },\n"
        "    },\n"
        "    'fs': { 'type': 'stdio', 'command': 'node', 'args': ['fs.js', '//x',], },\n"
        "  },\n"
        "}\n");
    struct mcp_import *im = imp("vscode", P("home/proj"));
    if (!im)
        return;
    CHECK_INT(mcp_import_diag_count(im), 0);
    CHECK_INT(mcp_import_count(im), 2);
    CHECK_STR(item(im, 0), "gh@~/proj/.vscode/mcp.json={\"type\":\"http\",\"url\":"
                           "\"https://api.example/mcp\",\"headers\":{\"Authorization\":"
                           "\"Bearer ${input:api-key}\"}}");
    CHECK_STR(item(im, 1), "fs@~/proj/.vscode/mcp.json={\"type\":\"stdio\",\"command\":"
                           "\"node\",\"args\":[\"fs.js\",\"//x\"]}");
    const struct mcp_import_entry *gh = mcp_import_at(im, 0);
    CHECK_INT(vlen((char **)gh->notes), 1);
    if (vlen((char **)gh->notes) == 1)
        CHECK_STR(
            gh->notes[0],
            "${input:api-key} is read from the secret api_key: run secrets configure api_key");
    mcp_import_free(im);

    /* a comment never closed: a diagnostic with its line, no server */
    put("home/proj/.vscode/mcp.json", "{'servers': {'a': {'command': 'a'}}}\n/* end\n");
    im = imp("vscode", P("home/proj"));
    if (im) {
        CHECK_INT(mcp_import_count(im), 0);
        CHECK_INT(mcp_import_diag_count(im), 1);
        CHECK_STR(mcp_import_diag_at(im, 0)->message,
                  "'~/proj/.vscode/mcp.json': line 2, column 1: a comment (/*) that is never "
                  "closed (import vscode): its servers are not imported");
    }
    mcp_import_free(im);
    /* the duplicate check sees through the comments */
    put("home/proj/.vscode/mcp.json",
        "{'servers': {'a': {'command': 'a'}, // first\n 'a': {'command': 'b'},}}\n");
    im = imp("vscode", P("home/proj"));
    if (im) {
        CHECK_INT(mcp_import_count(im), 0);
        CHECK_INT(mcp_import_diag_count(im), 1);
        CHECK_CONTAINS(mcp_import_diag_at(im, 0)->message,
                       "line 2: \"a\" is given twice (first on line 1)");
    }
    mcp_import_free(im);

    /* Cursor and Windsurf: the same leniency */
    put("home/.cursor/mcp.json", "{'mcpServers': {'c': {'command': 'c'}, /* off: 'd' */},}");
    im = imp("cursor", NULL);
    if (im) {
        CHECK_INT(mcp_import_diag_count(im), 0);
        CHECK_STR(item(im, 0), "c@~/.cursor/mcp.json={\"command\":\"c\"}");
    }
    mcp_import_free(im);
    put("home/.codeium/windsurf/mcp_config.json",
        "{\n  // mine\n  'mcpServers': {'w': {'serverUrl': 'https://w.example/mcp',},},\n}\n");
    im = imp("windsurf", NULL);
    if (im) {
        CHECK_INT(mcp_import_diag_count(im), 0);
        CHECK_STR(item(im, 0),
                  "w@~/.codeium/windsurf/mcp_config.json={\"url\":\"https://w.example/mcp\"}");
    }
    mcp_import_free(im);

    /* Claude Desktop reads its file with JSON.parse(): a comment is refused there, and here */
    put("home/.config/Claude/claude_desktop_config.json",
        "{'mcpServers': {'d': {'command': 'desk'}}, // x\n}");
    im = imp("claude-desktop", NULL);
    if (im) {
        CHECK_INT(mcp_import_count(im), 0);
        CHECK_INT(mcp_import_diag_count(im), 1);
        CHECK_CONTAINS(mcp_import_diag_at(im, 0)->message, "line 1, column ");
    }
    mcp_import_free(im);
}

static void test_codex(void)
{
    setup("codex");
    put("home/.codex/config.toml", "model = 'o3'\n"
                                   "[mcp_servers.docs]\n"
                                   "command = 'npx'\n"
                                   "args = ['-y', 'docs-mcp']\n"
                                   "cwd = '/tmp'\n"
                                   "enabled = false\n"
                                   "startup_timeout_sec = 20\n"
                                   "tool_timeout_sec = 60\n"
                                   "disabled_tools = ['drop']\n"
                                   "[mcp_servers.docs.env]\n"
                                   "API_KEY = 'k'\n"
                                   "[mcp_servers.web]\n"
                                   "url = 'https://web.example/mcp'\n"
                                   "bearer_token_env_var = 'WEB_TOKEN'\n"
                                   "startup_timeout_ms = 2500\n"
                                   "enabled = true\n"
                                   "http_headers = { X-Team = 'core' }\n"
                                   "env_http_headers = { X-Key = 'WEB_KEY' }\n"
                                   "[mcp_servers.bad]\n"
                                   "command = 'x'\n"
                                   "enabled = 'no'\n"
                                   "[mcp_servers.slow]\n"
                                   "command = 'x'\n"
                                   "startup_timeout_sec = 'soon'\n");
    struct mcp_import *im = imp("codex", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 2);
    /* ' stands for " in put(): the TOML above is written with double quotes */
    CHECK_STR(item(im, 0), "docs@~/.codex/config.toml={\"command\":\"npx\",\"args\":[\"-y\","
                           "\"docs-mcp\"],\"cwd\":\"/tmp\",\"disabled\":true,\"timeout\":60000,"
                           "\"excludeTools\":[\"drop\"],\"env\":{\"API_KEY\":\"k\"}}");
    /* the request timeout is the tools' when both are given */
    const struct mcp_import_entry *docs = mcp_import_at(im, 0);
    CHECK_INT(vlen((char **)docs->notes), 1);
    if (vlen((char **)docs->notes) == 1)
        CHECK_STR(docs->notes[0], "'startup_timeout_sec' is left out: the request timeout is "
                                  "'tool_timeout_sec'");
    CHECK_STR(item(im, 1), "web@~/.codex/config.toml={\"url\":\"https://web.example/mcp\","
                           "\"bearerTokenEnv\":\"WEB_TOKEN\",\"timeout\":2500,"
                           "\"headers\":{\"X-Team\":\"core\",\"X-Key\":\"${WEB_KEY}\"}}");
    CHECK_INT(mcp_import_diag_count(im), 2);
    CHECK_STR(mcp_import_diag_at(im, 0)->message,
              "'~/.codex/config.toml': server 'bad' (import codex): \"enabled\" must be true or "
              "false: the server is not imported");
    CHECK_STR(mcp_import_diag_at(im, 1)->message,
              "'~/.codex/config.toml': server 'slow' (import codex): \"startup_timeout_sec\" must "
              "be a number: the server is not imported");
    mcp_import_free(im);

    /* a syntax error: the whole file is a diagnostic with the line */
    put("home/.codex/config.toml", "[mcp_servers.a]\ncommand = 'a'\nargs = ['x' 'y']\n");
    im = imp("codex", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 0);
    CHECK_INT(mcp_import_diag_count(im), 1);
    CHECK_STR(mcp_import_diag_at(im, 0)->source, "~/.codex/config.toml");
    CHECK_STR(mcp_import_diag_at(im, 0)->message,
              "'~/.codex/config.toml' (import codex): line 3: expected ',' or ']' in the array: "
              "its servers are not imported");
    mcp_import_free(im);

    /* a directory where the file should be */
    CHECK_INT(unlink(P("home/.codex/config.toml")), 0);
    mkdir_p(P("home/.codex/config.toml"));
    im = imp("codex", NULL);
    if (im) {
        CHECK_INT(mcp_import_diag_count(im), 1);
        CHECK_CONTAINS(mcp_import_diag_at(im, 0)->message, "(import codex): its servers are not");
        bool ex = false;
        CHECK(mcp_import_file_at(im, 0, &ex) && ex);
    }
    mcp_import_free(im);
}

/* ~/.codex/config.toml as Codex and its users write it */
static void test_codex_as_written(void)
{
    setup("codex2");
    /* put() turns ' into ": the literal strings are written with \x27 */
    put("home/.codex/config.toml", "model = 'gpt-5'\n"
                                   "model_reasoning_effort = 'high'\n"
                                   "[tui]\n"
                                   "notifications = true\n"
                                   "\n"
                                   "[mcp_servers.docs]\n"
                                   "command = 'npx'\n"
                                   "args = ['-y', '@acme/docs-mcp']\n"
                                   "env = { 'API_KEY' = 'k', MODE = 'fast' }   # inline\n"
                                   "startup_timeout_sec = 20.5\n"
                                   "tool_timeout_sec = 60.0\n"
                                   "enabled_tools = ['search', 'read']\n"
                                   "\n"
                                   "[mcp_servers.docs.tools.search]\n"
                                   "approval_mode = 'approve'\n"
                                   "[mcp_servers.docs.tools.delete]\n"
                                   "enabled = false\n"
                                   "\n"
                                   "[mcp_servers.remote]\n"
                                   "url = 'https://mcp.example.com/mcp'\n"
                                   "bearer_token_env_var = 'REMOTE_TOKEN'\n"
                                   "http_headers.X-Team = 'core'\n"
                                   "disabled_tools = ['drop']\n"
                                   "tools.drop2.enabled = false\n"
                                   "startup_timeout_ms = 1_500\n"
                                   "experimental_flag = inf\n"
                                   "\n"
                                   "[mcp_servers.broken]\n"
                                   "command = 'b'\n"
                                   "tool_timeout_sec = nan\n"
                                   "\n"
                                   "[mcp_servers.later]\n"
                                   "command = 'l'\n"
                                   "since = 2024-01-01\n");
    struct mcp_import *im = imp("codex", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 3);
    CHECK_STR(item(im, 0),
              "docs@~/.codex/config.toml={\"command\":\"npx\",\"args\":[\"-y\",\"@acme/docs-mcp\"],"
              "\"env\":{\"API_KEY\":\"k\",\"MODE\":\"fast\"},\"timeout\":60000,"
              "\"enabled_tools\":[\"search\",\"read\"],\"excludeTools\":[\"delete\"]}");
    const struct mcp_import_entry *docs = mcp_import_at(im, 0);
    CHECK_INT(vlen((char **)docs->notes), 2);
    if (vlen((char **)docs->notes) == 2) {
        CHECK_STR(docs->notes[0], "'startup_timeout_sec' is left out: the request timeout is "
                                  "'tool_timeout_sec'");
        CHECK_STR(docs->notes[1],
                  "'tools.search.approval_mode' is Codex's own: it is not read here");
    }
    CHECK_STR(item(im, 1), "remote@~/.codex/config.toml={\"url\":\"https://mcp.example.com/mcp\","
                           "\"bearerTokenEnv\":\"REMOTE_TOKEN\",\"headers\":{\"X-Team\":\"core\"},"
                           "\"excludeTools\":[\"drop\",\"drop2\"],\"timeout\":1500}");
    const struct mcp_import_entry *remote = mcp_import_at(im, 1);
    CHECK_INT(vlen((char **)remote->notes), 1);
    if (vlen((char **)remote->notes) == 1)
        CHECK_STR(remote->notes[0], "line 26: 'experimental_flag': inf and nan are not read: the "
                                    "key is left out");
    CHECK_STR(item(im, 2), "later@~/.codex/config.toml={\"command\":\"l\"}");
    CHECK_INT(vlen((char **)mcp_import_at(im, 2)->notes), 1);
    if (vlen((char **)mcp_import_at(im, 2)->notes) == 1)
        CHECK_STR(mcp_import_at(im, 2)->notes[0],
                  "line 34: 'since': dates and times are not read: the key is left out");
    /* a key that matters not read: that server alone is left out */
    CHECK_INT(mcp_import_diag_count(im), 1);
    if (mcp_import_diag_count(im) == 1)
        CHECK_STR(mcp_import_diag_at(im, 0)->message,
                  "'~/.codex/config.toml': server 'broken' (import codex): line 30: "
                  "'tool_timeout_sec': inf and nan are not read: the server is not imported");
    mcp_import_free(im);

    /* an array of tables where a server is: that server is left out, the others read */
    put("home/.codex/config.toml", "[mcp_servers.a]\ncommand = 'a'\n[[mcp_servers.b]]\n"
                                   "command = 'b'\n");
    im = imp("codex", NULL);
    if (!im)
        return;
    CHECK_INT(mcp_import_count(im), 1);
    CHECK_STR(item(im, 0), "a@~/.codex/config.toml={\"command\":\"a\"}");
    CHECK_INT(mcp_import_diag_count(im), 1);
    if (mcp_import_diag_count(im) == 1)
        CHECK_STR(mcp_import_diag_at(im, 0)->message,
                  "'~/.codex/config.toml': server 'b' (import codex): line 3: [[mcp_servers.b]] "
                  "(an array of tables) is not read: the server is not imported");
    mcp_import_free(im);
}

static bool runs(const char *json)
{
    char text[2048];
    size_t i = 0;
    for (; json[i] && i < sizeof(text) - 1; i++)
        text[i] = json[i] == '\'' ? '"' : json[i];
    text[i] = '\0';
    struct json_object *o = json_tokener_parse(text);
    CHECK(o != NULL);
    bool r = mcp_import_runs_bridge(o);
    json_object_put(o);
    return r;
}

static void test_runs_bridge(void)
{
    CHECK(runs("{'command': 'mcp-bridge', 'args': ['serve']}"));
    CHECK(runs("{'command': '/usr/local/bin/mcp-bridge'}"));
    CHECK(runs("{'command': 'npx', 'args': ['-y', 'mcp-bridge']}"));
    CHECK(runs("{'command': 'npx', 'args': ['-y', 'mcp-bridge@1.2.0', 'serve']}"));
    CHECK(runs("{'command': 'npx', 'args': ['@acme/mcp-bridge@latest']}"));
    CHECK(runs("{'command': '/usr/bin/node', 'args': ['/opt/x/bin/mcp-bridge', 'serve']}"));
    CHECK(runs("{'command': 'env', 'args': ['A=1', 'mcp-bridge', 'serve']}"));
    CHECK(!runs("{'command': 'mcp-bridge-helper'}"));
    CHECK(!runs("{'command': 'npx', 'args': ['-y', 'mcp-bridge-tools']}"));
    CHECK(!runs("{'command': 'npx', 'args': ['mcp-bridged']}"));
    CHECK(!runs("{'command': 'python', 'args': ['mcp-bridge']}")); /* not a launcher we know */
    CHECK(!runs("{'url': 'https://mcp-bridge.example/mcp'}"));
    CHECK(!runs("{'command': 5}"));
    CHECK(!runs("{'command': 'npx', 'args': 'mcp-bridge'}"));
    CHECK(!runs("[1]"));
}

/* Collects what read_list says. */
static int collect(void *userdata, const char *source, const char *message)
{
    struct strv *sv = userdata;
    return strv_pushf(sv, "%s|%s", source, message);
}

static void test_read_list(void)
{
    setup("list");
    put("home/.cursor/mcp.json", "{'mcpServers': {'a': {'command': 'a'}}}");
    put("home/.codex/config.toml", "[mcp_servers.b]\ncommand = 'b'\nargs = [1979-05-27]\n");
    struct json_object *list =
        json_tokener_parse("[\"codex\", 7, \"cursor\", \"nope\", \"codex\"]");
    struct strv diags = STRV_INIT;
    struct mcp_import **v = NULL;
    size_t n = 9;
    CHECK_INT(mcp_import_read_list(list, "f.json", NULL, collect, &diags, &v, &n), 0);
    CHECK_INT(n, 2); /* codex once, at its first place, then cursor */
    if (n == 2) {
        CHECK_STR(mcp_import_name(v[0]), "codex");
        CHECK_STR(mcp_import_name(v[1]), "cursor");
        CHECK_INT(mcp_import_count(v[1]), 1);
    }
    CHECK_INT(diags.n, 3);
    if (diags.n == 3) {
        CHECK_STR(diags.v[0], "~/.codex/config.toml|'~/.codex/config.toml': server 'b' (import "
                              "codex): line 3: 'args': dates and times are not read: the server "
                              "is not imported");
        CHECK_STR(diags.v[1], "f.json|'f.json': \"imports\" element 2 must be a name (cursor, "
                              "claude-code, claude-desktop, vscode, windsurf, codex), not a "
                              "number: it is ignored");
        CHECK_STR(diags.v[2], "f.json|'f.json': unknown import 'nope' in \"imports\": the "
                              "accepted ones are cursor, claude-code, claude-desktop, vscode, "
                              "windsurf, codex");
    }
    for (size_t i = 0; v && i < n; i++)
        mcp_import_free(v[i]);
    free(v);
    strv_release(&diags);
    json_object_put(list);

    /* not a list: nothing read, said once */
    list = json_object_new_object();
    v = NULL;
    CHECK_INT(mcp_import_read_list(list, "f.json", NULL, collect, &diags, &v, &n), 0);
    CHECK_INT(n, 0);
    CHECK_INT(diags.n, 1);
    if (diags.n == 1)
        CHECK_CONTAINS(diags.v[0], "\"imports\" must be an array of names");
    free(v);
    strv_release(&diags);
    json_object_put(list);
}

TESTS_MAIN(test_unknown, test_cursor, test_claude_code, test_claude_desktop_windsurf, test_vscode,
           test_jsonc, test_codex, test_codex_as_written, test_runs_bridge, test_read_list)
