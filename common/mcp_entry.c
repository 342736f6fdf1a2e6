/* mcp_entry.c - one server entry: its generic keys parsed and checked, its templates expanded
 * once to validate them, copies and release. The keys are read in a fixed order and the first
 * problem is the entry's error, so that the message a user sees does not depend on the order of
 * keys in the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/curl_load.h"
#include "credkit/helper_answer.h"
#include "credkit/mcp_field.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/suggest.h"
#include "credkit/url.h"
#include "credkit/util.h"
#include "mcp_internal.h"

#define SERVER_NAME_MAX 128 /* characters */
#define SCHEME_WORD_MAX 16  /* characters of a scheme quoted in a message */

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* Appends the warnings of w to s->warnings. -ENOMEM. */
static int add_warnings(struct mcp_server *s, struct strv *w)
{
    struct strv all = STRV_INIT;
    int r = 0;
    if (w->n == 0)
        return 0;
    for (size_t i = 0; r >= 0 && s->warnings && s->warnings[i]; i++)
        r = strv_push(&all, s->warnings[i]);
    for (size_t i = 0; r >= 0 && i < w->n; i++)
        r = strv_push(&all, w->v[i]);
    char **v = r >= 0 ? strv_detach(&all) : NULL;
    strv_release(&all);
    if (!v)
        return -ENOMEM;
    strv_free(s->warnings);
    s->warnings = v;
    return 0;
}

/* The warnings a tool's check gave, one a line in msg. -ENOMEM. */
static int add_warning_lines(struct mcp_server *s, const char *msg)
{
    struct strv w = STRV_INIT;
    int r = 0;
    for (const char *p = msg; r >= 0 && *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 0)
            r = strv_pushf(&w, "%.*s", (int)n, p);
        p += n;
        if (*p)
            p++;
    }
    if (r >= 0)
        r = add_warnings(s, &w);
    strv_release(&w);
    return r < 0 ? -ENOMEM : 0;
}

const char *mcp_transport_name(enum mcp_transport t)
{
    switch (t) {
    case MCP_TRANSPORT_STDIO:
        return "stdio";
    case MCP_TRANSPORT_HTTP:
        return "http";
    case MCP_TRANSPORT_SSE:
        return "sse";
    }
    return "unknown";
}

/* ---- parsing ----------------------------------------------------------------------------- */

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_header_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_tchar(*s))
            return false;
    return true;
}

/* One member of "env" or "headers" as a line ("NAME=value", "Name: value") pushed to sv. */
static int map_line(struct strv *sv, const char *k, struct json_object *val, bool headers,
                    struct err *e)
{
    char kd[MCP_DISP_BUF], lbl[MCP_DISP_BUF + 32];
    const char *s;
    int r;

    mcp_disp(kd, k);
    if (headers ? !is_header_name(k) : (!*k || strchr(k, '=')))
        return headers ? bad(e, "'%s' in \"headers\" is not a valid HTTP header name", kd)
                       : bad(e,
                             "'%s' in \"env\" is not a valid variable name: it must "
                             "be non-empty, without '='",
                             kd);
    /* the transport frames the request and its session: an entry that would set those
     * headers cannot work as written, and a Content-Length of its own smuggles a request */
    const char *framing = headers ? helper_header_framing(k) : NULL;
    if (framing)
        return bad(e, "header '%s' in \"headers\" is refused: %s: remove it", kd, framing);
    (void)snprintf(lbl, sizeof(lbl), "%s '%s'", headers ? "header" : "\"env\" value", kd);
    if (!val)
        return bad(e, "%s must be a string, not null", lbl);
    r = mcp_field_string_value(val, lbl, 0, &s, e);
    if (r < 0)
        return r;
    r = headers ? strv_pushf(sv, "%s: %s", k, s) : strv_pushf(sv, "%s=%s", k, s);
    return r < 0 ? oom(e) : 0;
}

/* "env" (NAME=value) or "headers" (Name: value): an optional object of strings; an empty vector
 * when absent. The values may be literal secrets: they are wiped on free, never quoted. */
static int get_string_map(struct json_object *o, const char *key, bool headers, char ***ret,
                          struct err *e)
{
    struct json_object *v = mcp_field_member(o, key);
    struct strv sv = STRV_INIT;
    int r;

    if (v && !json_object_is_type(v, json_type_object)) {
        r = bad(e, "\"%s\" must be an object of strings, not %s", key, mcp_field_type(v));
        goto out;
    }
    if (v) {
        json_object_object_foreach(v, k, val)
        {
            r = map_line(&sv, k, val, headers, e);
            if (r < 0)
                goto out;
        }
    }
    char **out = strv_detach(&sv);
    if (!out) {
        r = oom(e);
        goto out;
    }
    strv_free_secure(*ret);
    *ret = out;
    r = 0;
out:
    strv_release_secure(&sv);
    return r;
}

/* "url" or "command", and "type": the transport. */
static int parse_transport(struct mcp_server *s, struct json_object *o, struct err *e)
{
    static const char *const types[] = {"stdio",           "http",           "sse",
                                        "streamable-http", "streamableHttp", NULL};
    static const enum mcp_transport type_tr[] = {MCP_TRANSPORT_STDIO, MCP_TRANSPORT_HTTP,
                                                 MCP_TRANSPORT_SSE, MCP_TRANSPORT_HTTP,
                                                 MCP_TRANSPORT_HTTP};
    int r, type = -1;

    struct json_object *url = mcp_field_member(o, "url"), *cmd = mcp_field_member(o, "command");
    if (url && cmd)
        return bad(e, "has both \"url\" and \"command\": keep \"url\" for an HTTP server or "
                      "\"command\" for a stdio one");
    if (!url && !cmd && mcp_field_member(o, "socket"))
        return bad(e, "\"socket\" (an rmcp-mux socket) is not supported: give the server's "
                      "\"command\" or \"url\" instead");
    if (!url && !cmd)
        return bad(e, "needs \"url\" (an HTTP server) or \"command\" (a stdio server)");
    r = mcp_field_string(o, "url", "url", 0, &s->url, e);
    if (r >= 0)
        r = mcp_field_string(o, "command", "command", MCP_FIELD_NONBLANK, &s->command, e);
    if (r < 0)
        return r;

    r = mcp_field_enum(o, "type", "type", types, "\"stdio\", \"http\" or \"sse\"", &type, e);
    if (r < 0)
        return r;
    if (type < 0)
        s->transport = url ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO;
    else if (type_tr[type] == MCP_TRANSPORT_STDIO && url)
        return bad(e, "\"type\" is \"stdio\" but the entry has a \"url\": use \"command\", or "
                      "drop \"type\"");
    else if (type_tr[type] != MCP_TRANSPORT_STDIO && cmd)
        return bad(e,
                   "\"type\" is '%s' but the entry has a \"command\": use \"url\", or drop "
                   "\"type\"",
                   types[type]);
    else
        s->transport = type_tr[type];
    return 0;
}

bool mcp_server_sets_header(const struct mcp_server *s, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; s->headers && s->headers[i]; i++)
        if (strncasecmp(s->headers[i], name, n) == 0 && s->headers[i][n] == ':')
            return true;
    return false;
}

/* "auth": "oauth", "bearer", "none", or false (the same as "none"); -1 when absent. */
static int parse_auth_key(struct json_object *o, int *ret, struct err *e)
{
    static const char *const auths[] = {"oauth", "bearer", "none", NULL};
    static const int auth_mode[] = {MCP_AUTH_OAUTH, MCP_AUTH_BEARER, MCP_AUTH_DISABLED};
    struct json_object *v = mcp_field_member(o, "auth");
    int auth = -1;
    if (v && json_object_is_type(v, json_type_boolean)) {
        if (json_object_get_boolean(v))
            return bad(e, "\"auth\" is true, which names no way to sign in: use \"oauth\", "
                          "\"bearer\", or false for none");
        *ret = MCP_AUTH_DISABLED;
        return 0;
    }
    int r = mcp_field_enum(o, "auth", "auth", auths, "\"oauth\", \"bearer\", \"none\" or false",
                           &auth, e);
    if (r < 0)
        return r;
    *ret = auth >= 0 ? auth_mode[auth] : -1;
    return 0;
}

/* "bearerTokenEnv", "bearerToken", "oauth" and "auth": the credential mode. */
static int parse_auth(struct mcp_server *s, struct json_object *o, struct err *e)
{
    int r, auth = -1;

    r = mcp_field_string(o, "bearerTokenEnv", "bearerTokenEnv", 0, &s->bearer_token_env, e);
    if (r < 0)
        return r;
    if (s->bearer_token_env && !name_is_valid(s->bearer_token_env)) {
        char d[MCP_DISP_BUF];
        mcp_disp(d, s->bearer_token_env);
        return bad(e,
                   "\"bearerTokenEnv\" must be the name of an environment variable (letters, "
                   "digits and '_'), not '%s'",
                   d);
    }
    r = mcp_field_string(o, "bearerToken", "bearerToken", MCP_FIELD_NONBLANK, &s->bearer_token, e);
    if (r < 0)
        return r;
    if (s->bearer_token && s->bearer_token_env)
        return bad(e, "both \"bearerToken\" and \"bearerTokenEnv\" are set: keep one");

    /* the object's own keys are mcp-auth's to read (auth/oauth_config.c); here it only says
     * that the entry signs in with OAuth. false says it does not. */
    struct json_object *oauth = mcp_field_member(o, "oauth");
    bool oauth_off =
        oauth && json_object_is_type(oauth, json_type_boolean) && !json_object_get_boolean(oauth);
    if (oauth_off)
        oauth = NULL;
    if (oauth && !json_object_is_type(oauth, json_type_object))
        return bad(e, "\"oauth\" must be an object (or false), not %s", mcp_field_type(oauth));

    r = parse_auth_key(o, &auth, e);
    if (r < 0)
        return r;
    if (auth >= 0)
        s->auth = (enum mcp_auth_mode)auth;
    else if (oauth)
        s->auth = MCP_AUTH_OAUTH;
    else if (s->bearer_token_env || s->bearer_token)
        s->auth = MCP_AUTH_BEARER;
    else if (oauth_off)
        s->auth = MCP_AUTH_DISABLED;
    else if (mcp_field_member(o, "account"))
        s->auth = MCP_AUTH_OAUTH; /* "oauth.account" written at the top: an OAuth sign-in */
    else
        s->auth = MCP_AUTH_NONE;
    /* as the adapter reads it: only a literal true, and only when nothing else names the
     * token (bearerToken and bearerTokenEnv take precedence) */
    struct json_object *store = mcp_field_member(o, "bearerTokenStore");
    if (s->auth == MCP_AUTH_BEARER && !s->bearer_token_env && !s->bearer_token && store &&
        json_object_is_type(store, json_type_boolean) && json_object_get_boolean(store))
        s->bearer_token_store = true;
    if (s->auth == MCP_AUTH_BEARER && !s->bearer_token_env && !s->bearer_token &&
        !s->bearer_token_store)
        return bad(e, "\"auth\" is \"bearer\" but neither \"bearerTokenEnv\" nor "
                      "\"bearerToken\" is set: name the environment variable (or secret) that "
                      "holds the token, or set \"bearerTokenStore\": true and store it with "
                      "'pi-mcp-adapter token set NAME'");
    /* both would be sent as Authorization, one silently replacing the other */
    if (s->auth == MCP_AUTH_OAUTH && (s->bearer_token_env || s->bearer_token))
        return bad(e,
                   "the entry signs in with OAuth and also names a bearer token (\"%s\"): "
                   "remove one of them",
                   s->bearer_token_env ? "bearerTokenEnv" : "bearerToken");
    if ((s->auth == MCP_AUTH_OAUTH || s->auth == MCP_AUTH_BEARER) &&
        mcp_server_sets_header(s, "Authorization"))
        return bad(e,
                   "\"headers\" sets Authorization, and the entry also signs in with %s: "
                   "remove one of them",
                   s->auth == MCP_AUTH_OAUTH ? "OAuth" : "a bearer token");
    return 0;
}

/* "protocolVersion": "auto" (the default), "legacy" or "2026-07-28". */
static int parse_protocol(struct mcp_server *s, struct json_object *o, struct err *e)
{
    static const char *const words[] = {"auto", "legacy", "2026-07-28", NULL};
    static const enum mcp_protocol_mode modes[] = {MCP_PROTOCOL_AUTO, MCP_PROTOCOL_LEGACY,
                                                   MCP_PROTOCOL_MODERN};
    int i = -1;
    int r = mcp_field_enum(o, "protocolVersion", "protocolVersion", words,
                           "\"auto\", \"legacy\" or \"2026-07-28\"", &i, e);
    if (r < 0)
        return r;
    s->protocol = i < 0 ? MCP_PROTOCOL_AUTO : modes[i];
    return 0;
}

/* The generic keys of one entry; -EINVAL with the reason (without file and server) when invalid,
 * -ENOMEM. */
static int parse_entry(struct mcp_server *s, struct json_object *o, struct err *e)
{
    int r;

    if (!json_object_is_type(o, json_type_object))
        return bad(e, "the entry must be an object, not %s", mcp_field_type(o));
    r = parse_transport(s, o, e);
    if (r >= 0)
        r = mcp_field_strv(o, "args", &s->args, e);
    if (r >= 0)
        r = get_string_map(o, "env", false, &s->env, e);
    if (r >= 0)
        r = mcp_field_string(o, "cwd", "cwd", 0, &s->cwd, e);
    if (r >= 0)
        r = get_string_map(o, "headers", true, &s->headers, e);
    if (r >= 0)
        r = mcp_field_ms(o, "timeout", &s->timeout_ms, e);
    if (r >= 0)
        r = mcp_field_string(o, "headersHelper", "headersHelper", MCP_FIELD_NONBLANK,
                             &s->headers_helper, e);
    if (r >= 0)
        r = mcp_field_bool(o, "disabled", "disabled", &s->disabled, e);
    if (r >= 0)
        r = mcp_field_bool(o, "allowHttp", "allowHttp", &s->allow_http, e);
    if (r >= 0)
        r = parse_protocol(s, o, e);
    if (r < 0)
        return r;
    return parse_auth(s, o, e);
}

/* ---- keys no tool reads ------------------------------------------------------------------ */

/* Every key of an entry that some tool of the suite reads, and the keys other clients write
 * that mean nothing here but do no harm. A key of neither is a warning, never an error: a
 * file written for another client still works. */
static const char *const known_keys[] = {
    /* common's generic entry */
    "command", "args", "env", "cwd", "url", "headers", "type", "timeout", "headersHelper", "auth",
    "bearerToken", "bearerTokenEnv", "bearerTokenStore", "disabled", "protocolVersion", "allowHttp",
    /* mcp-auth (auth/oauth_config.c); "account" is "oauth.account" written at the top */
    "oauth", "account",
    /* the bridge (bridge/config/server_config.c), which warns about those it accepts and does
     * not apply */
    "includeTools", "excludeTools", "lifecycle", "idleTimeout", "requestTimeoutMs", "toolPrefix",
    "autoAuth", "directTools", "exposeResources", "debug", "inheritEnv", "tasks", "searchKeywords",
    "approveTools", "trace", "requestHeadersCommand",
    /* every tool's TLS (common/mcp_tls.c) */
    "caFile", "clientCert", "clientKey", "clientKeyPassphrase",
    /* other clients': the agent's own approval lists, a description, VS Code's "dev" */
    "description", "alwaysAllow", "autoApprove", "dev", NULL};

/* Keys of other clients that would change what the server does, which no tool here reads: a
 * warning that says what to write instead. */
static const struct {
    const char *key, *why;
} unread_keys[] = {
    {"envFile", "the file is not read: put the variables in \"env\""},
    {"disabledTools", "no tool reads it: list the tools in \"excludeTools\""},
};

#define UNKNOWN_KEYS_SHOWN 16 /* warnings about keys of one entry; the rest counted */

static int unknown_keys(struct mcp_server *s, struct json_object *o)
{
    struct strv w = STRV_INIT;
    size_t more = 0;
    int r = 0;

    if (!json_object_is_type(o, json_type_object))
        return 0;
    json_object_object_foreach(o, key, val)
    {
        (void)val;
        char kd[MCP_DISP_BUF];
        const char *why = NULL;
        bool known = false;
        for (size_t i = 0; known_keys[i] && !known; i++)
            known = strcmp(key, known_keys[i]) == 0;
        for (size_t i = 0; i < ELEMENTSOF(unread_keys) && !why; i++)
            if (strcmp(key, unread_keys[i].key) == 0)
                why = unread_keys[i].why;
        if (known)
            continue;
        if (w.n == UNKNOWN_KEYS_SHOWN) {
            more++;
            continue;
        }
        mcp_disp(kd, key);
        if (why) {
            r = strv_pushf(&w, "\"%s\" is ignored: %s", kd, why);
        } else {
            /* the close keys, when there are: "did you mean \"headers\"?" */
            struct suggest sg;
            const char *const *v;
            suggest_init(&sg, key);
            for (size_t i = 0; known_keys[i]; i++)
                suggest_add(&sg, known_keys[i]);
            size_t n = suggest_result(&sg, &v);
            r = n == 0 ? strv_pushf(&w,
                                    "\"%s\" is not a key of an entry: it is ignored (check the "
                                    "spelling)",
                                    kd)
                       : strv_pushf(&w,
                                    "\"%s\" is not a key of an entry: it is ignored; did you "
                                    "mean \"%s\"%s?",
                                    kd, v[0], n > 1 ? " or another" : "");
            suggest_release(&sg);
        }
        if (r < 0)
            goto out;
    }
    if (more > 0 && strv_pushf(&w, "%zu more key%s no tool reads: they are ignored", more,
                               more > 1 ? "s" : "") < 0) {
        r = -ENOMEM;
        goto out;
    }
    r = add_warnings(s, &w);
out:
    strv_release(&w);
    return r;
}

static int check_server_name(const char *name, struct err *e)
{
    size_t chars = 0;
    if (!*name)
        return bad(e, "the name must not be empty");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        /* C0, DEL, and C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F); the parser checked UTF-8 */
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return bad(e, "the name must not contain control characters");
        if ((*p & 0xc0) != 0x80)
            chars++;
    }
    if (chars > SERVER_NAME_MAX)
        return bad(e, "the name is longer than %d characters", SERVER_NAME_MAX);
    return 0;
}

/* ---- expansion --------------------------------------------------------------------------- */

/* The server URL, after expansion: what url_canonical() accepts (absolute http(s), a host, no
 * credentials). The message never quotes the URL: a query may hold a key, a variable a secret. */
int mcp_server_check_url(const char *url, bool had_vars, struct err *e)
{
    const char *after = had_vars ? " after expanding variables" : "";
    size_t n = url_scheme_len(url);
    char *canon = NULL;
    int r;

    if (n > 0 && n <= SCHEME_WORD_MAX && strncasecmp(url, "http:", 5) != 0 &&
        strncasecmp(url, "https:", 6) != 0) {
        char word[MCP_DISP_BUF];
        mcp_disp_n(word, url, n);
        return bad(e, "\"url\" must be an http:// or https:// URL%s, not '%s:'", after, word);
    }
    if (url_has_userinfo(url))
        return bad(e, "\"url\" must not contain a user name or password: put credentials in "
                      "\"headers\" or use \"auth\"");
    r = url_canonical(url, &canon, NULL);
    free(canon);
    if (r == -ENOMEM)
        return oom(e);
    if (r == -ELIBACC) /* libcurl, which parses URLs, could not be loaded */
        return curl_load(e);
    if (r < 0)
        return bad(e,
                   "\"url\" is not a valid http:// or https:// URL%s: expected one like "
                   "'https://mcp.example.com/mcp'",
                   after);
    return 0;
}

/* The header values: a missing variable is collected, a line break after expansion refused. */
static int expand_headers(const struct mcp_server *s, const struct mcp_config_opts *opts,
                          struct strv *missing, struct err *e)
{
    for (size_t i = 0; s->headers[i]; i++) {
        /* "Name: template"; a header name never contains ':' */
        const char *colon = strchr(s->headers[i], ':');
        char name[MCP_DISP_BUF], *val = NULL;
        mcp_disp_n(name, s->headers[i], (size_t)(colon - s->headers[i]));
        const char *tmpl = mcp_value_template(colon + 2);
        if (!tmpl)
            continue; /* a command: it runs when the server connects, never to load */
        int r = mcp_expand_collect(tmpl, opts->lookup, opts->lookup_userdata, missing, &val, e);
        if (r == -ENOENT)
            continue;
        if (r < 0) {
            (void)err_prefix(e, "header '%s'", name);
            return r;
        }
        bool crlf = strpbrk(val, "\r\n") != NULL;
        secure_free(val);
        if (crlf)
            return bad(e, "header '%s' contains a line break after expanding variables", name);
    }
    return 0;
}

static int expand_env(const struct mcp_server *s, const struct mcp_config_opts *opts,
                      struct strv *missing, struct err *e)
{
    for (size_t i = 0; s->env[i]; i++) {
        /* "NAME=template"; the name never contains '=' */
        const char *eq = strchr(s->env[i], '=');
        char *val = NULL;
        const char *tmpl = mcp_value_template(eq + 1);
        if (!tmpl)
            continue; /* a command, as above */
        int r = mcp_expand_collect(tmpl, opts->lookup, opts->lookup_userdata, missing, &val, e);
        secure_free(val);
        if (r < 0 && r != -ENOENT) {
            char name[MCP_DISP_BUF];
            mcp_disp_n(name, s->env[i], (size_t)(eq - s->env[i]));
            (void)err_prefix(e, "\"env\" value '%s'", name);
            return r;
        }
    }
    return 0;
}

/* One template's missing variables into missing (its value wiped); what names it for a syntax
 * error. */
static int expand_one(const char *tmpl, const char *what, const struct mcp_config_opts *opts,
                      struct strv *missing, struct err *e)
{
    char *val = NULL;
    int r = mcp_expand_collect(tmpl, opts->lookup, opts->lookup_userdata, missing, &val, e);
    secure_free(val);
    if (r < 0 && r != -ENOENT)
        return err_prefix(e, "%s", what);
    return 0;
}

static int expand_args(const struct mcp_server *s, const struct mcp_config_opts *opts,
                       struct strv *missing, struct err *e)
{
    for (size_t i = 0; s->args[i]; i++) {
        char what[32];
        snprintf(what, sizeof(what), "\"args\" element %zu", i + 1);
        int r = expand_one(s->args[i], what, opts, missing, e);
        if (r < 0)
            return r;
    }
    return 0;
}

/* -ENOENT naming the missing variables that fit in a message (missing_vars has them all). */
static int missing_error(const struct strv *missing, struct err *e)
{
    struct buf msg;
    bool cut = false;
    int r = 0;

    buf_init(&msg, ERR_MSG_MAX / 2);
    for (size_t i = 0; i < missing->n && !cut; i++) {
        r = buf_printf(&msg, "%s'%s'", i == 0 ? "" : ", ", missing->v[i]);
        if (r == -ENOMEM)
            break;
        cut = r < 0;
    }
    /* an input is a secret to configure: say how, for the first one */
    char hint[MCP_DISP_BUF + 192] = "";
    for (size_t i = 0; i < missing->n && !*hint; i++)
        (void)mcp_template_missing_hint(missing->v[i], hint, sizeof(hint));
    if (r == -ENOMEM)
        r = oom(e);
    else
        r = err_set(e, -ENOENT, "variable%s %s%s %s not set%s%s", missing->n > 1 ? "s" : "",
                    buf_str(&msg), cut ? ", ..." : "", missing->n > 1 ? "are" : "is",
                    *hint ? ": " : "", hint);
    buf_release(&msg);
    return r;
}

/* Expands every template of a structurally valid entry: lists the missing variables, checks
 * the URL and the header values, and wipes what it expanded. -EINVAL/-ENOENT with the reason,
 * -ENOMEM. */
static int expand_entry(struct mcp_server *s, const struct mcp_config_opts *opts, struct err *e)
{
    struct strv missing = STRV_INIT;
    char *url = NULL;
    int r;

    if (s->url) {
        r = mcp_expand_collect(s->url, opts->lookup, opts->lookup_userdata, &missing, &url, e);
        if (r < 0 && r != -ENOENT) {
            (void)err_prefix(e, "\"url\"");
            goto out;
        }
    }
    r = expand_headers(s, opts, &missing, e);
    if (r >= 0)
        r = expand_env(s, opts, &missing, e);
    if (r >= 0)
        r = expand_args(s, opts, &missing, e);
    if (r >= 0 && mcp_value_template(s->bearer_token))
        r = expand_one(mcp_value_template(s->bearer_token), "\"bearerToken\"", opts, &missing, e);
    if (r >= 0 && s->cwd)
        r = expand_one(s->cwd, "\"cwd\"", opts, &missing, e);
    if (r < 0)
        goto out;

    if (missing.n > 0) {
        r = opts->defer_vars ? 0 : missing_error(&missing, e);
        if (r == -ENOMEM)
            goto out;
        s->missing_vars = strv_detach(&missing);
        if (!s->missing_vars)
            r = oom(e);
        /* deferred: a URL with a missing variable is checked once it has a value; one
         * without is checked now */
        if (r < 0 || !url)
            goto out;
    }
    if (url) {
        bool had_vars = strchr(s->url, '$') != NULL;
        r = mcp_server_check_url(url, had_vars, e);
        if (r < 0)
            goto out;
    }
    r = 0;
out:
    secure_free(url);
    strv_release(&missing);
    return r;
}

int mcp_server_expand_cwd(const struct mcp_server *s, mcp_lookup_fn lookup, void *userdata,
                          char **ret, struct err *e)
{
    char *v = NULL;
    if (!s || !ret)
        return err_set(e, -EINVAL, "no entry");
    if (!s->cwd) {
        *ret = NULL;
        return 0;
    }
    int r = mcp_expand(s->cwd, lookup, userdata, &v, e);
    if (r < 0)
        return err_prefix(e, "\"cwd\"");
    /* "~" and "~/..." after expansion are the home directory, as the pi adapter reads them */
    const char *home = getenv("HOME");
    if (home && *home && v[0] == '~' && (v[1] == '\0' || v[1] == '/')) {
        char *h = NULL;
        if (asprintf(&h, "%s%s", home, v + 1) < 0) {
            secure_free(v);
            return err_set(e, -ENOMEM, "out of memory");
        }
        secure_free(v);
        v = h;
    }
    *ret = v;
    return 0;
}

/* ---- the entry --------------------------------------------------------------------------- */

void mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->source);
    free(s->command);
    strv_free(s->args);
    strv_free_secure(s->env);
    free(s->cwd);
    secure_free(s->url);
    strv_free_secure(s->headers);
    free(s->bearer_token_env);
    secure_free(s->bearer_token);
    free(s->headers_helper);
    json_object_put(s->raw);
    free(s->error);
    strv_free(s->missing_vars);
    free(s->import);
    strv_free(s->shadowed);
    strv_free(s->warnings);
    free(s);
}

/* A copy of the NULL-terminated v (an empty vector for NULL). On -ENOMEM what was copied is
 * wiped: v may be the env or headers of an entry. */
static int vector_dup(char *const *v, char ***ret)
{
    struct strv sv = STRV_INIT;
    char **c = NULL;
    for (size_t i = 0; v && v[i]; i++)
        if (strv_push(&sv, v[i]) < 0)
            goto fail;
    c = strv_detach(&sv);
    if (!c)
        goto fail;
    *ret = c;
    return 0;
fail:
    strv_release_secure(&sv);
    return -ENOMEM;
}

int mcp_server_dup(const struct mcp_server *s, struct mcp_server **ret)
{
    if (!s || !ret)
        return -EINVAL;
    struct mcp_server *c = calloc(1, sizeof(*c));
    bool oom = false;
    if (!c)
        return -ENOMEM;
#define DUP(f)                                                                                     \
    do {                                                                                           \
        if (s->f && !(c->f = strdup(s->f)))                                                        \
            oom = true;                                                                            \
    } while (0)
    DUP(name);
    DUP(source);
    DUP(command);
    DUP(cwd);
    DUP(url);
    DUP(bearer_token_env);
    DUP(bearer_token);
    DUP(headers_helper);
    DUP(error);
    DUP(import);
#undef DUP
    /* the three vectors are never NULL in the copy, even when s was built by hand without them;
     * missing_vars stays NULL when there are none */
    if (vector_dup(s->args, &c->args) < 0 || vector_dup(s->env, &c->env) < 0 ||
        vector_dup(s->headers, &c->headers) < 0 || vector_dup(s->shadowed, &c->shadowed) < 0 ||
        vector_dup(s->warnings, &c->warnings) < 0 ||
        (s->missing_vars && vector_dup(s->missing_vars, &c->missing_vars) < 0))
        oom = true;
    c->layer = s->layer;
    c->transport = s->transport;
    c->timeout_ms = s->timeout_ms;
    c->protocol = s->protocol;
    c->auth = s->auth;
    c->disabled = s->disabled;
    c->allow_http = s->allow_http;
    c->bearer_token_store = s->bearer_token_store;
    c->raw = s->raw ? json_object_get(s->raw) : NULL;
    if (oom) {
        mcp_server_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

/* The entry's error: "'<file>': server '<name>': <reason>". */
static int set_error(struct mcp_server *s, const char *source, const char *name,
                     const struct err *why)
{
    char nd[MCP_DISP_BUF];
    mcp_disp(nd, name);
    if (asprintf(&s->error, "'%s': server '%s': %s", source, nd, err_msg(why)) < 0) {
        s->error = NULL;
        return -ENOMEM;
    }
    return 0;
}

int mcp_server_build(const char *name, struct json_object *entry, const char *source,
                     enum mcp_layer layer, const struct mcp_config_opts *opts,
                     struct mcp_server **ret)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    struct err why = ERR_INIT;
    int r;

    if (!s)
        return -ENOMEM;
    s->layer = layer;
    s->raw = json_object_get(entry);
    s->name = strdup(name);
    s->source = strdup(source);
    s->args = calloc(1, sizeof(char *));
    s->env = calloc(1, sizeof(char *));
    s->headers = calloc(1, sizeof(char *));
    s->shadowed = calloc(1, sizeof(char *));
    s->warnings = calloc(1, sizeof(char *));
    if (!s->name || !s->source || !s->args || !s->env || !s->headers || !s->shadowed ||
        !s->warnings) {
        r = -ENOMEM;
        goto out;
    }

    r = check_server_name(name, &why);
    if (r >= 0)
        r = parse_entry(s, entry, &why);
    if (r >= 0 && opts->check_entry) {
        r = opts->check_entry(opts->check_userdata, name, entry, &why);
        if (r > 0) { /* accepted, with warnings */
            r = add_warning_lines(s, why.msg);
            err_clear(&why);
        }
    }
    if (r != -ENOMEM && unknown_keys(s, entry) < 0)
        r = -ENOMEM;
    if (r >= 0)
        r = expand_entry(s, opts, &why);
    if (r == -ENOMEM)
        goto out;
    if (r < 0) {
        r = set_error(s, source, name, &why);
        if (r < 0)
            goto out;
    }
    *ret = s;
    s = NULL;
    r = 0;
out:
    mcp_server_free(s);
    return r;
}
