/* mcp_import_codex.c - Codex's ~/.codex/config.toml as an import (mcp_import_int.h): its
 * [mcp_servers.NAME] tables read through credkit/mcp_toml.h, and their keys mapped onto
 * mcp.json's: timeouts in milliseconds, headers, the tools excluded; a server whose key that
 * matters was not read is left out, the other keys not read are noted with the entry. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_toml.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "mcp_import_int.h"

#define CODEX_TOML_MAX (1024u * 1024u)

static int jadd(struct json_object *o, const char *key, struct json_object *v)
{
    if (!v || json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        return -ENOMEM;
    }
    return 0;
}

/* A number of seconds or milliseconds of Codex as "timeout" in milliseconds; 1 when v is not a
 * number (said in a diagnostic: the entry is skipped). */
static int codex_timeout(const struct import_ctx *x, const char *display, const char *name,
                         const char *key, struct json_object *v, int64_t unit,
                         struct json_object *out)
{
    char nd[MCP_DISP_BUF];
    if (json_object_is_type(v, json_type_double)) {
        double ms = json_object_get_double(v) * (double)unit;
        /* out of range or below a millisecond: the generic check of "timeout" says so */
        if (ms >= 0.5 && ms < 9e15)
            return jadd(out, "timeout", json_object_new_int64((int64_t)(ms + 0.5)));
        return jadd(out, "timeout", json_object_new_double(ms));
    }
    if (!json_object_is_type(v, json_type_int)) {
        mcp_disp(nd, name);
        int r =
            import_add_diag(x->im, display,
                            "'%s': server '%s' (import codex): \"%s\" must be a number: the server "
                            "is not imported",
                            display, nd, key);
        return r < 0 ? r : 1;
    }
    int64_t n = json_object_get_int64(v);
    /* out of range either way: the generic check of "timeout" says so */
    int64_t ms = n > INT64_MAX / unit || n < INT64_MIN / unit ? n : n * unit;
    return jadd(out, "timeout", json_object_new_int64(ms));
}

/* "env_http_headers" (header -> the variable holding its value) as "headers" templates. */
static int codex_env_headers(struct json_object *v, struct json_object *headers)
{
    json_object_object_foreach(v, hname, var)
    {
        char *t = NULL;
        if (asprintf(&t, "${%s}", json_object_get_string(var)) < 0)
            return -ENOMEM;
        int r = jadd(headers, hname, json_object_new_string(t));
        free(t);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The keys of a Codex server that change what it does: one of them not read leaves the server
 * out, rather than run it otherwise than Codex would. */
static bool codex_key_matters(const char *key, size_t n)
{
    static const char *const keys[] = {"command",
                                       "args",
                                       "env",
                                       "cwd",
                                       "url",
                                       "bearer_token_env_var",
                                       "http_headers",
                                       "env_http_headers",
                                       "enabled",
                                       "startup_timeout_sec",
                                       "startup_timeout_ms",
                                       "tool_timeout_sec",
                                       "enabled_tools",
                                       "disabled_tools",
                                       NULL};
    for (size_t i = 0; keys[i]; i++)
        if (strlen(keys[i]) == n && strncmp(key, keys[i], n) == 0)
            return true;
    return false;
}

/* The values of server name that the TOML reader did not read: 1 (with a diagnostic) when one
 * of them matters, else a note for each. */
static int codex_unread(const struct import_ctx *x, const char *display, const char *name,
                        struct strv *notes)
{
    struct json_object *un = x->toml_notes ? mcp_field_member(x->toml_notes, name) : NULL;
    char nd[MCP_DISP_BUF];

    if (!un)
        return 0;
    json_object_object_foreach(un, key, why)
    {
        const char *w = json_object_get_string(why);
        if (!key[0] || codex_key_matters(key, strcspn(key, "."))) {
            mcp_disp(nd, name);
            int r = import_add_diag(
                x->im, display, "'%s': server '%s' (import codex): %s: the server is not imported",
                display, nd, w);
            return r < 0 ? r : 1;
        }
        if (strv_pushf(notes, "%s: the key is left out", w) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Codex's per-tool tables, "tools": {TOOL: {"enabled": false, "approval_mode": ...}}: a tool
 * disabled is one more of *excl ("excludeTools", made in out when missing); the rest is Codex's
 * own (approval), noted. */
static int codex_tools(struct json_object *tools, struct json_object *out,
                       struct json_object **excl, struct strv *notes)
{
    json_object_object_foreach(tools, tool, t)
    {
        char td[MCP_DISP_BUF];
        bool on = true;
        mcp_disp(td, tool);
        if (!t || !json_object_is_type(t, json_type_object)) {
            if (strv_pushf(notes, "'tools.%s' is not a table: the key is left out", td) < 0)
                return -ENOMEM;
            continue;
        }
        if (json_get_bool(t, "enabled", &on) && !on) {
            if (!*excl && jadd(out, "excludeTools", *excl = json_object_new_array()) < 0)
                return -ENOMEM;
            struct json_object *s = json_object_new_string(tool);
            if (!s || json_object_array_add(*excl, s) < 0) {
                json_object_put(s);
                return -ENOMEM;
            }
        }
        json_object_object_foreach(t, k, v)
        {
            (void)v;
            char kd[MCP_DISP_BUF];
            mcp_disp(kd, k);
            if (strcmp(k, "enabled") != 0 && v &&
                strv_pushf(notes, "'tools.%s.%s' is Codex's own: it is not read here", td, kd) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* http_headers and env_http_headers (objects) into "headers" (made in out when missing). */
static int codex_headers(const char *key, struct json_object *v, struct json_object *out,
                         struct json_object **headers)
{
    int r = 0;
    if (!*headers) {
        *headers = json_object_new_object();
        r = jadd(out, "headers", *headers);
    }
    if (r < 0)
        return r;
    if (key[0] == 'e')
        return codex_env_headers(v, *headers);
    json_object_object_foreach(v, hk, hv)
    {
        r = jadd(*headers, hk, json_object_get(hv));
        if (r < 0)
            return r;
    }
    return 0;
}

/* One key of a Codex server into out: 0, 1 to leave the server out (a diagnostic said why), or
 * -ENOMEM. */
static int codex_key(const struct import_ctx *x, const char *display, const char *name,
                     const char *key, struct json_object *v, struct json_object *in,
                     struct json_object *out, struct json_object **headers,
                     struct json_object **excl, struct strv *notes)
{
    char nd[MCP_DISP_BUF];

    if (!v) /* not read: codex_unread() said so */
        return 0;
    if (strcmp(key, "enabled") == 0) {
        if (!json_object_is_type(v, json_type_boolean)) {
            mcp_disp(nd, name);
            int r = import_add_diag(x->im, display,
                                    "'%s': server '%s' (import codex): \"enabled\" must be true or "
                                    "false: the server is not imported",
                                    display, nd);
            return r < 0 ? r : 1;
        }
        return json_object_get_boolean(v) ? 0 : jadd(out, "disabled", json_object_new_boolean(1));
    }
    /* the request timeout: the tools' when given, else the start's */
    if (strcmp(key, "tool_timeout_sec") == 0)
        return codex_timeout(x, display, name, key, v, 1000, out);
    bool tool_timeout = mcp_field_member(in, "tool_timeout_sec") != NULL;
    if (strcmp(key, "startup_timeout_sec") == 0 || strcmp(key, "startup_timeout_ms") == 0) {
        if (tool_timeout)
            return strv_pushf(notes,
                              "'%s' is left out: the request timeout is "
                              "'tool_timeout_sec'",
                              key) < 0
                       ? -ENOMEM
                       : 0;
        return codex_timeout(x, display, name, key, v,
                             strcmp(key, "startup_timeout_ms") == 0 ? 1 : 1000, out);
    }
    if ((strcmp(key, "http_headers") == 0 || strcmp(key, "env_http_headers") == 0) &&
        json_object_is_type(v, json_type_object))
        return codex_headers(key, v, out, headers);
    if (strcmp(key, "disabled_tools") == 0 && json_object_is_type(v, json_type_array) && !*excl) {
        *excl = json_object_get(v);
        return jadd(out, "excludeTools", *excl);
    }
    if (strcmp(key, "tools") == 0 && json_object_is_type(v, json_type_object))
        return codex_tools(v, out, excl, notes);
    if (strcmp(key, "bearer_token_env_var") == 0)
        return jadd(out, "bearerTokenEnv", json_object_get(v));
    if (strcmp(key, "disabled_tools") == 0)
        return jadd(out, "excludeTools", json_object_get(v));
    /* command, args, env, url, cwd as they are; Codex's others too, for the loader to warn
     * about by name (enabled_tools: no tool here keeps only some tools) */
    return jadd(out, key, json_object_get(v));
}

/* One [mcp_servers.NAME] table as an mcp.json entry, built of a copy of in's values (the
 * reader's own are wiped once read). */
static int map_codex(const struct import_ctx *x, const char *display, const char *name,
                     struct json_object *table, struct strv *notes, struct json_object **ret)
{
    struct json_object *out = NULL, *headers = NULL, *excl = NULL, *in = NULL;
    int r = codex_unread(x, display, name, notes);

    if (r != 0)
        return r < 0 ? r : 0;
    out = json_object_new_object();
    if (!out || json_object_deep_copy(table, &in, NULL) < 0) {
        json_object_put(out);
        return -ENOMEM;
    }
    json_object_object_foreach(in, key, v)
    {
        r = codex_key(x, display, name, key, v, in, out, &headers, &excl, notes);
        if (r != 0)
            break;
    }
    json_object_put(in); /* not wiped: out shares its values */
    if (r != 0) {
        json_object_put(out);
        return r < 0 ? r : 0;
    }
    *ret = out;
    return 0;
}

int import_read_codex(const struct import_ctx *x)
{
    struct mcp_import *im = x->im;
    struct json_object *servers = NULL, *notes = NULL;
    struct err le = ERR_INIT;
    struct buf text;
    char *d = NULL;
    int r;

    if (!x->home)
        return 0;
    r = import_add_file(im, path_join(x->home, ".codex/config.toml"), &d);
    if (r < 0)
        return r;
    buf_init_secret(&text, CODEX_TOML_MAX);
    r = file_read(im->files[im->n_files - 1].path, 0, &text, &le);
    im->files[im->n_files - 1].exists = r != -ENOENT;
    if (r == -ENOENT) {
        r = 0;
        goto out;
    }
    if (r == -ENOMEM)
        goto out;
    if (r < 0) {
        r = import_add_diag(im, d, "%s (import codex): its servers are not imported", err_msg(&le));
        goto out;
    }
    r = mcp_toml_read_servers(buf_str(&text), text.len, &servers, &notes, &le);
    if (r == -ENOMEM)
        goto out;
    if (r < 0) {
        r = import_add_diag(im, d, "'%s' (import codex): %s: its servers are not imported", d,
                            err_msg(&le));
        goto out;
    }
    struct json_object *root = json_object_new_object();
    if (!root || json_object_object_add(root, "mcp_servers", json_object_get(servers)) < 0) {
        json_object_put(root);
        r = -ENOMEM;
        goto out;
    }
    struct import_ctx xc = *x;
    xc.toml_notes = notes;
    r = import_add_servers(&xc, root, "mcp_servers", d, "", map_codex, false, false);
    json_object_put(root);
out:
    json_object_put(notes);
    json_wipe_strings(servers);
    json_object_put(servers);
    buf_release(&text);
    free(d);
    return r;
}
