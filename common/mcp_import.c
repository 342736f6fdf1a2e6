/* mcp_import.c - the other clients' files (credkit/mcp_import.h): per client which files, where
 * the servers sit in them, and how an entry translates into mcp.json's shape. Codex's
 * config.toml is mcp_import_codex.c's (mcp_import_int.h is what the two share). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_import.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/util.h"
#include "mcp_import_int.h"
#include "mcp_internal.h"

#define CLAUDE_JSON_MAX     (64u * 1024u * 1024u) /* ~/.claude.json also keeps history */
#define BRIDGE_PROGRAM      "mcp-bridge"
#define STRING_EXPAND_LIMIT (64u * 1024u) /* bytes of one string after ${workspaceFolder} */

struct item {
    struct mcp_import_entry pub; /* borrows the members below */
    char *name;
    struct json_object *entry;
    char *source;
    char *path;
    char **notes;
};

int import_add_diag(struct mcp_import *im, const char *source, const char *fmt, ...)
{
    struct mcp_config_diag *d = realloc(im->diags, (im->n_diags + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    im->diags = d;
    d = &im->diags[im->n_diags];
    d->source = strdup(source);
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&d->message, fmt, ap);
    va_end(ap);
    if (k < 0)
        d->message = NULL;
    if (!d->source || !d->message) {
        free(d->source);
        free(d->message);
        return -ENOMEM;
    }
    im->n_diags++;
    return 0;
}

/* Takes entry (a reference) and notes. The entry comes from the file read last. */
static int add_item(struct mcp_import *im, const char *name, struct json_object *entry,
                    const char *source, bool project, char **notes)
{
    struct item it = {.name = strdup(name), .entry = entry, .source = strdup(source)};
    it.path = im->n_files ? strdup(im->files[im->n_files - 1].path) : strdup(source);
    it.notes = notes ? notes : calloc(1, sizeof(char *));
    if (!it.name || !it.source || !it.path || !it.notes)
        goto fail;
    if (im->n_items == im->cap_items) {
        size_t cap = im->cap_items ? im->cap_items * 2 : 16;
        struct item *v = realloc(im->items, cap * sizeof(*v));
        if (!v)
            goto fail;
        im->items = v;
        im->cap_items = cap;
    }
    it.pub = (struct mcp_import_entry){it.name,     it.entry, it.source, it.notes,
                                       im->n_parts, it.path,  project};
    im->items[im->n_items++] = it;
    return 0;
fail:
    free(it.name);
    free(it.source);
    free(it.path);
    strv_free(it.notes);
    json_object_put(entry);
    return -ENOMEM;
}

/* Records path as considered; *ret_display its display path (caller frees). Takes path. */
int import_add_file(struct mcp_import *im, char *path, char **ret_display)
{
    if (!path)
        return -ENOMEM;
    char *d = path_display(path);
    if (!d || im->n_files == MAX_FILES) {
        free(path);
        free(d);
        return -ENOMEM; /* MAX_FILES is a bound of this file's own tables */
    }
    im->files[im->n_files++] = (struct ifile){path, false};
    *ret_display = d;
    return 0;
}

/* Reads the JSON file path (taken) into *ret_root (NULL when it is missing or unusable, then
 * with a diagnostic); *ret_display its display path. flags: JSON_READ_JSONC for the files of an
 * editor built on VS Code. Only -ENOMEM fails. */
static int read_json(struct mcp_import *im, char *path, size_t max, unsigned flags,
                     struct json_object **ret_root, char **ret_display)
{
    struct err le = ERR_INIT;
    char *d = NULL;
    *ret_root = NULL;
    int r = import_add_file(im, path, &d);
    if (r < 0)
        return r;
    *ret_display = d;
    struct json_dup *dups = NULL;
    size_t ndups = 0;
    r = json_read_file_dups(im->files[im->n_files - 1].path, max, flags, ret_root, &dups, &ndups,
                            &le);
    im->files[im->n_files - 1].exists = r != -ENOENT;
    if (r == -ENOENT)
        return 0;
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return import_add_diag(im, d, "%s (import %s): its servers are not imported", err_msg(&le),
                               im->name);
    if (ndups > 0) {
        /* which one the client itself uses is not known: none is imported */
        char kd[MCP_DISP_BUF];
        mcp_disp(kd, dups[0].key);
        r = import_add_diag(im, d,
                            "'%s' (import %s): line %u: \"%s\" is given twice (first on line %u): "
                            "its servers are not imported; keep one of them",
                            d, im->name, dups[0].line, kd, dups[0].first);
        json_dups_free(dups, ndups);
        json_object_put(*ret_root);
        *ret_root = NULL;
        return r;
    }
    if (!json_object_is_type(*ret_root, json_type_object)) {
        r = import_add_diag(im, d,
                            "'%s' (import %s): the root must be an object, not %s: its servers "
                            "are not imported",
                            d, im->name, mcp_field_type(*ret_root));
        json_object_put(*ret_root);
        *ret_root = NULL;
    }
    return r;
}

/* ---- translations ------------------------------------------------------------------------ */

/* s with every ${workspaceFolder} and ${userHome} replaced (*ret NULL when there is none, or
 * when the result would be too long: then left as written). */
static int replace_client_vars(const struct import_ctx *x, const char *s, char **ret)
{
    static const char *const names[] = {"${workspaceFolder}", "${userHome}"};
    const char *values[] = {x->cwd, x->home};
    struct buf b;
    bool any = false;
    int r = 0;

    *ret = NULL;
    if (!strstr(s, "${"))
        return 0;
    buf_init(&b, STRING_EXPAND_LIMIT);
    while (*s && r >= 0) {
        size_t i = 0;
        for (; i < 2; i++)
            if (values[i] && strncmp(s, names[i], strlen(names[i])) == 0)
                break;
        if (i < 2) {
            r = buf_append_str(&b, values[i]);
            s += strlen(names[i]);
            any = true;
        } else {
            r = buf_append_char(&b, *s++);
        }
    }
    if (r == -E2BIG)
        r = 0, any = false;
    if (r >= 0 && any && !(*ret = buf_detach(&b)))
        r = -ENOMEM;
    buf_release(&b);
    return r;
}

/* Replaces the client variables in every string value under o, in place. */
static int replace_in_tree(const struct import_ctx *x, struct json_object *o, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return 0;
    if (json_object_is_type(o, json_type_string)) {
        char *v = NULL;
        int r = replace_client_vars(x, json_object_get_string(o), &v);
        if (r >= 0 && v && json_object_set_string(o, v) == 0)
            r = -ENOMEM;
        free(v);
        return r;
    }
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            int r = replace_in_tree(x, json_object_array_get_idx(o, i), depth + 1);
            if (r < 0)
                return r;
        }
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            int r = replace_in_tree(x, v, depth + 1);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* A copy of in, with the client variables replaced (Cursor, VS Code). */
static int map_vars(const struct import_ctx *x, const char *display, const char *name,
                    struct json_object *in, struct strv *notes, struct json_object **ret)
{
    struct json_object *c = NULL;
    (void)display, (void)name, (void)notes;
    if (json_object_deep_copy(in, &c, NULL) < 0)
        return -ENOMEM;
    int r = replace_in_tree(x, c, 0);
    if (r < 0) {
        json_object_put(c);
        return r;
    }
    *ret = c;
    return 0;
}

/* Cursor's static OAuth client: "auth": {"CLIENT_ID", "CLIENT_SECRET", "scopes": [...]} is
 * "oauth": {"clientId", "clientSecret", "scope": "a b"} here (mcp-auth's keys). Members that are
 * not strings are left out (the entry then signs in as far as the rest allows). */
static int cursor_auth(struct json_object *c)
{
    struct json_object *auth = mcp_field_member(c, "auth");
    if (!auth || !json_object_is_type(auth, json_type_object) || mcp_field_member(c, "oauth"))
        return 0;
    struct json_object *oauth = json_object_new_object();
    struct buf scope;
    buf_init(&scope, 64 * 1024);
    int r = oauth ? 0 : -ENOMEM;
    static const char *const keys[][2] = {{"CLIENT_ID", "clientId"},
                                          {"CLIENT_SECRET", "clientSecret"}};
    for (size_t i = 0; r >= 0 && i < 2; i++) {
        struct json_object *v = mcp_field_member(auth, keys[i][0]);
        if (v && json_object_is_type(v, json_type_string) &&
            json_object_object_add(oauth, keys[i][1], json_object_get(v)) < 0)
            r = -ENOMEM;
    }
    struct json_object *scopes = mcp_field_member(auth, "scopes");
    for (size_t i = 0; r >= 0 && scopes && json_object_is_type(scopes, json_type_array) &&
                       i < json_object_array_length(scopes);
         i++) {
        struct json_object *v = json_object_array_get_idx(scopes, i);
        if (json_object_is_type(v, json_type_string))
            r = buf_printf(&scope, "%s%s", scope.len ? " " : "", json_object_get_string(v));
    }
    if (r >= 0 && scope.len &&
        json_object_object_add(oauth, "scope", json_object_new_string(buf_str(&scope))) < 0)
        r = -ENOMEM;
    buf_release(&scope);
    if (r >= 0 && json_object_object_add(c, "oauth", oauth) < 0)
        r = -ENOMEM;
    else if (r < 0)
        json_object_put(oauth);
    if (r >= 0 && json_object_object_add(c, "auth", json_object_new_string("oauth")) < 0)
        r = -ENOMEM;
    return r < 0 ? -ENOMEM : 0;
}

/* Cursor: its variables, and its "auth" object. */
static int map_cursor(const struct import_ctx *x, const char *display, const char *name,
                      struct json_object *in, struct strv *notes, struct json_object **ret)
{
    struct json_object *c = NULL;
    int r = map_vars(x, display, name, in, notes, &c);
    if (r >= 0)
        r = cursor_auth(c);
    if (r < 0) {
        json_object_put(c);
        return r;
    }
    *ret = c;
    return 0;
}

/* Windsurf names a remote server's URL "serverUrl". */
static int map_windsurf(const struct import_ctx *x, const char *display, const char *name,
                        struct json_object *in, struct strv *notes, struct json_object **ret)
{
    struct json_object *c = NULL, *su = mcp_field_member(in, "serverUrl");
    (void)x, (void)display, (void)name, (void)notes;
    if (json_object_deep_copy(in, &c, NULL) < 0)
        return -ENOMEM;
    if (su && !mcp_field_member(c, "url")) {
        if (json_object_object_add(c, "url", json_object_get(su)) < 0) {
            json_object_put(su);
            json_object_put(c);
            return -ENOMEM;
        }
        json_object_object_del(c, "serverUrl");
    }
    *ret = c;
    return 0;
}

/* The notes of an entry that uses VS Code inputs: ${input:ID} is read as the secret ID. */
static int input_notes(struct json_object *o, struct strv *notes, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return 0;
    if (json_object_is_type(o, json_type_string)) {
        for (const char *s = json_object_get_string(o); (s = strstr(s, "${input:"));) {
            s += 8;
            size_t n = strcspn(s, "}");
            if (!s[n] || n == 0 || n > MCP_DISP_MAX)
                continue;
            const char *dflt = strstr(s, ":-"); /* ${input:ID:-default} */
            if (dflt && (size_t)(dflt - s) < n)
                n = (size_t)(dflt - s);
            char id[MCP_DISP_BUF], ref[MCP_DISP_BUF + 8], secret[MCP_TEMPLATE_SECRET_BUF];
            char *note = NULL;
            mcp_disp_n(id, s, n);
            (void)snprintf(ref, sizeof(ref), "%s%s", MCP_TEMPLATE_INPUT, id);
            /* secrets' names are letters, digits and '_': a VS Code id such as "api-key" is
             * read from the secret api_key */
            const char *sn = mcp_template_secret_name(ref, secret);
            int k = sn ? asprintf(&note,
                                  "${input:%s} is read from the secret %s: run secrets "
                                  "configure %s",
                                  id, sn, sn)
                       : asprintf(&note,
                                  "${input:%s}: the input's ID is too long to name a secret: "
                                  "shorten it",
                                  id);
            if (k < 0)
                return -ENOMEM;
            if (strv_contains(notes, note)) {
                free(note);
                continue;
            }
            if (strv_push_take(notes, note) < 0)
                return -ENOMEM;
        }
        return 0;
    }
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (input_notes(json_object_array_get_idx(o, i), notes, depth + 1) < 0)
                return -ENOMEM;
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            if (input_notes(v, notes, depth + 1) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* The servers of obj (the value of key in root, a file's display path) as items: a missing key
 * is no server; one that is not an object is a diagnostic. */
int import_add_servers(const struct import_ctx *x, struct json_object *root, const char *key,
                       const char *display, const char *where, import_map_fn map, bool inputs,
                       bool project)
{
    struct mcp_import *im = x->im;
    struct json_object *obj = mcp_field_member(root, key);
    int r = 0;

    if (!obj)
        return 0;
    im->n_parts++;
    if (!json_object_is_type(obj, json_type_object))
        return import_add_diag(
            im, display,
            "'%s' (import %s): %s\"%s\" must be an object, not %s: its servers are "
            "not imported",
            display, im->name, where, key, mcp_field_type(obj));
    json_object_object_foreach(obj, name, in)
    {
        struct json_object *entry = NULL;
        struct strv notes = STRV_INIT;
        if (!in || !json_object_is_type(in, json_type_object)) /* the loader says what is wrong */
            entry = json_object_get(in);
        else if (map)
            r = map(x, display, name, in, &notes, &entry);
        else
            entry = json_object_get(in);
        if (r >= 0 && entry && inputs)
            r = input_notes(entry, &notes, 0);
        if (r >= 0 && entry) {
            char **nv = strv_detach(&notes);
            r = nv ? add_item(im, name, entry, display, project, nv)
                   : -ENOMEM; /* takes entry, nv */
            entry = NULL;
        }
        json_object_put(entry);
        strv_release(&notes);
        if (r < 0)
            return r;
    }
    return 0;
}

/* A JSON file of a home-relative (or absolute) path whose servers are under key. */
static int read_json_servers(const struct import_ctx *x, const char *dir, const char *rel,
                             const char *key, unsigned flags, import_map_fn map, bool inputs)
{
    struct json_object *root = NULL;
    char *d = NULL;
    if (!dir)
        return 0;
    int r = read_json(x->im, path_join(dir, rel), MCP_CONFIG_MAX_BYTES, flags, &root, &d);
    if (r >= 0 && root)
        r = import_add_servers(x, root, key, d, "", map, inputs, x->cwd && dir == x->cwd);
    json_object_put(root);
    free(d);
    return r;
}

/* ---- the clients ------------------------------------------------------------------------- */

/* VS Code reads its mcp.json as JSON with comments and trailing commas, and Cursor and Windsurf,
 * editors built on it, open theirs in the same mode: a comment or a trailing comma left by a
 * hand edit must not lose a file's servers. Claude Code and Claude Desktop read theirs with
 * JSON.parse(), so a comment breaks the client too: those files are read as strict JSON, and the
 * diagnostic says where. */
#define EDITOR_JSON JSON_READ_JSONC
#define STRICT_JSON 0u

static int read_cursor(const struct import_ctx *x)
{
    int r = read_json_servers(x, x->home, ".cursor/mcp.json", "mcpServers", EDITOR_JSON, map_cursor,
                              false);
    /* in the home directory the project's file is the user's */
    if (r >= 0 && !(x->cwd && x->home && strcmp(x->cwd, x->home) == 0))
        r = read_json_servers(x, x->cwd, ".cursor/mcp.json", "mcpServers", EDITOR_JSON, map_cursor,
                              false);
    return r;
}

/* ~/.claude.json's "projects" entry of the project directory (exactly, or its real path). */
static struct json_object *claude_project(const struct import_ctx *x, struct json_object *root)
{
    struct json_object *projects = mcp_field_member(root, "projects"), *p = NULL;
    if (!x->cwd || !projects || !json_object_is_type(projects, json_type_object))
        return NULL;
    if (json_object_object_get_ex(projects, x->cwd, &p))
        return p;
    char *real = realpath(x->cwd, NULL);
    if (real && strcmp(real, x->cwd) != 0)
        (void)json_object_object_get_ex(projects, real, &p);
    free(real);
    return p;
}

static int read_claude_code(const struct import_ctx *x)
{
    struct json_object *root = NULL;
    char *d = NULL;
    int r;

    if (!x->home)
        return 0;
    r = read_json_servers(x, x->home, ".claude/mcp.json", "mcpServers", STRICT_JSON, NULL, false);
    if (r < 0)
        return r;
    r = read_json(x->im, path_join(x->home, ".claude.json"), CLAUDE_JSON_MAX, STRICT_JSON, &root,
                  &d);
    if (r >= 0 && root)
        r = import_add_servers(x, root, "mcpServers", d, "", NULL, false, false);
    struct json_object *proj = root ? claude_project(x, root) : NULL;
    if (r >= 0 && proj && json_object_is_type(proj, json_type_object))
        r = import_add_servers(x, proj, "mcpServers", d, "the project's ", NULL, false, false);
    json_object_put(root);
    free(d);
    return r;
}

static int read_claude_desktop(const struct import_ctx *x)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && xdg[0] == '/')
        return read_json_servers(x, xdg, "Claude/claude_desktop_config.json", "mcpServers",
                                 STRICT_JSON, NULL, false);
    return read_json_servers(x, x->home, ".config/Claude/claude_desktop_config.json", "mcpServers",
                             STRICT_JSON, NULL, false);
}

static int read_vscode(const struct import_ctx *x)
{
    return read_json_servers(x, x->cwd, ".vscode/mcp.json", "servers", EDITOR_JSON, map_vars, true);
}

static int read_windsurf(const struct import_ctx *x)
{
    return read_json_servers(x, x->home, ".codeium/windsurf/mcp_config.json", "mcpServers",
                             EDITOR_JSON, map_windsurf, false);
}

/* ---- the import -------------------------------------------------------------------------- */

struct client {
    const char *name;
    int (*read)(const struct import_ctx *x);
};

static const struct client clients[] = {
    {"cursor", read_cursor},
    {"claude-code", read_claude_code},
    {"claude-desktop", read_claude_desktop},
    {"vscode", read_vscode},
    {"windsurf", read_windsurf},
    {"codex", import_read_codex},
};

const char *mcp_import_accepted(void)
{
    return "cursor, claude-code, claude-desktop, vscode, windsurf, codex";
}

static const struct client *find_client(const char *name)
{
    for (size_t i = 0; name && i < sizeof(clients) / sizeof(clients[0]); i++)
        if (strcmp(clients[i].name, name) == 0)
            return &clients[i];
    return NULL;
}

bool mcp_import_known(const char *name)
{
    return find_client(name) != NULL;
}

int mcp_import_read(const char *name, const char *cwd, struct mcp_import **ret, struct err *e)
{
    const struct client *cl = find_client(name);
    char *home = NULL;
    int r;

    if (!cl) {
        char nd[MCP_DISP_BUF];
        mcp_disp(nd, name ? name : "");
        return err_set(e, -EINVAL, "unknown import '%s': the accepted ones are %s", nd,
                       mcp_import_accepted());
    }
    struct mcp_import *im = calloc(1, sizeof(*im));
    if (!im)
        return err_set(e, -ENOMEM, "out of memory");
    im->name = cl->name;
    r = path_home(&home);
    if (r == -ENOMEM)
        goto out;
    struct import_ctx x = {.im = im, .home = r < 0 ? NULL : home, .cwd = cwd};
    r = cl->read(&x);
    if (r < 0)
        goto out;
    *ret = im;
    im = NULL;
out:
    free(home);
    mcp_import_free(im);
    return r < 0 ? err_set(e, r, "out of memory") : 0;
}

/* A problem of the list itself, formatted, to diag. */
static int list_diag(mcp_import_diag_fn diag, void *userdata, const char *source, const char *fmt,
                     ...) _printf_(4, 5);
static int list_diag(mcp_import_diag_fn diag, void *userdata, const char *source, const char *fmt,
                     ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    int r = diag(userdata, source, msg);
    free(msg);
    return r;
}

/* One name of the list: checked, read unless it was read already, its problems told. */
static int read_list_item(struct json_object *el, size_t i, const char *display, const char *cwd,
                          mcp_import_diag_fn diag, void *userdata, struct mcp_import **v, size_t *n)
{
    char nd[MCP_DISP_BUF];
    struct err le = ERR_INIT;

    if (!el || !json_object_is_type(el, json_type_string))
        return list_diag(diag, userdata, display,
                         "'%s': \"imports\" element %zu must be a name (%s), not %s: it is "
                         "ignored",
                         display, i + 1, mcp_import_accepted(), mcp_field_type(el));
    const char *name = json_object_get_string(el);
    if (!mcp_import_known(name)) {
        mcp_disp(nd, name);
        return list_diag(diag, userdata, display,
                         "'%s': unknown import '%s' in \"imports\": the accepted ones are %s",
                         display, nd, mcp_import_accepted());
    }
    for (size_t k = 0; k < *n; k++)
        if (strcmp(v[k]->name, name) == 0)
            return 0;
    int r = mcp_import_read(name, cwd, &v[*n], &le);
    if (r < 0)
        return r; /* -ENOMEM: the name is known */
    struct mcp_import *im = v[(*n)++];
    for (size_t k = 0; r >= 0 && k < im->n_diags; k++)
        r = diag(userdata, im->diags[k].source, im->diags[k].message);
    return r;
}

int mcp_import_read_list(struct json_object *list, const char *display, const char *cwd,
                         mcp_import_diag_fn diag, void *userdata, struct mcp_import ***ret,
                         size_t *ret_n)
{
    struct mcp_import **v = NULL;
    size_t n = 0, len = 0;
    int r = 0;

    if (list && !json_object_is_type(list, json_type_array))
        r = list_diag(diag, userdata, display,
                      "'%s': \"imports\" must be an array of names (%s), not %s: nothing is "
                      "imported",
                      display, mcp_import_accepted(), mcp_field_type(list));
    else if (list)
        len = json_object_array_length(list);
    v = calloc(len ? len : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; r >= 0 && i < len; i++)
        r = read_list_item(json_object_array_get_idx(list, i), i, display, cwd, diag, userdata, v,
                           &n);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            mcp_import_free(v[i]);
        free(v);
        return r;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

void mcp_import_free(struct mcp_import *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->n_items; i++) {
        struct item *it = &im->items[i];
        free(it->name);
        free(it->source);
        free(it->path);
        strv_free(it->notes);
        /* not wiped: the configuration's entries keep a reference as their raw */
        json_object_put(it->entry);
    }
    free(im->items);
    for (size_t i = 0; i < im->n_diags; i++) {
        free(im->diags[i].source);
        free(im->diags[i].message);
    }
    free(im->diags);
    for (size_t i = 0; i < im->n_files; i++)
        free(im->files[i].path);
    free(im);
}

const char *mcp_import_name(const struct mcp_import *im)
{
    return im ? im->name : NULL;
}

size_t mcp_import_count(const struct mcp_import *im)
{
    return im ? im->n_items : 0;
}

const struct mcp_import_entry *mcp_import_at(const struct mcp_import *im, size_t i)
{
    return im && i < im->n_items ? &im->items[i].pub : NULL;
}

size_t mcp_import_diag_count(const struct mcp_import *im)
{
    return im ? im->n_diags : 0;
}

const struct mcp_config_diag *mcp_import_diag_at(const struct mcp_import *im, size_t i)
{
    return im && i < im->n_diags ? &im->diags[i] : NULL;
}

size_t mcp_import_file_count(const struct mcp_import *im)
{
    return im ? im->n_files : 0;
}

const char *mcp_import_file_at(const struct mcp_import *im, size_t i, bool *ret_exists)
{
    if (!im || i >= im->n_files)
        return NULL;
    if (ret_exists)
        *ret_exists = im->files[i].exists;
    return im->files[i].path;
}

/* ---- the bridge itself ------------------------------------------------------------------- */

/* s (a path or an npm package spec) names mcp-bridge: ".../mcp-bridge", "mcp-bridge@1.2",
 * "@scope/mcp-bridge", "@scope/mcp-bridge@latest". */
static bool names_bridge(const char *s, bool package)
{
    const char *base = strrchr(s, '/');
    base = base ? base + 1 : s;
    size_t n = strlen(BRIDGE_PROGRAM);
    if (strncmp(base, BRIDGE_PROGRAM, n) != 0)
        return false;
    return base[n] == '\0' || (package && base[n] == '@');
}

bool mcp_import_runs_bridge(struct json_object *entry)
{
    static const char *const launchers[] = {"npx",  "node", "bunx", "bun", "pnpm",
                                            "pnpx", "npm",  "yarn", "env", NULL};
    struct json_object *cmd = mcp_field_member(entry, "command");
    if (!cmd || !json_object_is_type(cmd, json_type_string))
        return false;
    const char *c = json_object_get_string(cmd);
    if (names_bridge(c, false))
        return true;
    const char *base = strrchr(c, '/');
    base = base ? base + 1 : c;
    size_t i = 0;
    while (launchers[i] && strcmp(launchers[i], base) != 0)
        i++;
    struct json_object *args = mcp_field_member(entry, "args");
    if (!launchers[i] || !args || !json_object_is_type(args, json_type_array))
        return false;
    for (size_t k = 0; k < json_object_array_length(args); k++) {
        struct json_object *a = json_object_array_get_idx(args, k);
        if (a && json_object_is_type(a, json_type_string) &&
            names_bridge(json_object_get_string(a), true))
            return true;
    }
    return false;
}
