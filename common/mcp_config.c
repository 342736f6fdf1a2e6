/* mcp_config.c - the layers of the MCP server configuration: which files, in which order, and
 * how they merge.
 *
 * Loading is two passes. The first reads every layer and collects (name, entry) candidates and
 * the settings: per layer first the entries of its "imports" (other clients' files,
 * mcp_import.c), the last import listed first, then the layer's own, so that the order of
 * reading is the order of priority. The second sorts the candidates by name, keeps the one read
 * last (the highest) for each name, records the others as the ones it shadowed, and only then
 * validates and expands it (mcp_entry.c): an entry that a higher one replaces is never looked
 * at, so its variables are never looked up (the lookup may end up asking `secrets`). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_import.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "mcp_internal.h"

#define MAX_FILES 5

struct mcp_file {
    char *path; /* absolute */
    bool exists;
};

/* Where an entry of the result comes from, and how far it is trusted. */
struct mcp_origin {
    char *path; /* absolute */
    enum mcp_trust trust;
};

/* A file an import considered. */
struct mcp_ifile {
    char *path;         /* absolute */
    const char *import; /* static */
    bool exists;
};

struct mcp_config {
    struct mcp_server **servers; /* sorted by name */
    size_t n_servers;
    struct mcp_config_diag *diags;
    size_t n_diags;
    struct mcp_file files[MAX_FILES];
    size_t n_files;
    struct mcp_ifile *ifiles;
    size_t n_ifiles;
    struct json_object *settings; /* merged, an object */
    struct mcp_origin *origins;   /* of servers[i], the same index */
};

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

struct layer {
    char *path;    /* absolute */
    char *display; /* for messages */
    enum mcp_layer layer;
    bool explicit_path; /* opts.config_path: missing is an error */
    struct json_object *root;
};

struct cand {
    const char *name; /* borrowed from the layer's root or an import */
    struct json_object *entry;
    const char *source;  /* display path, borrowed */
    const char *import;  /* NULL for the layer's own entries, else the import's name */
    char *const *notes;  /* NULL, or what the import says of the entry (borrowed) */
    unsigned part;       /* the import's part it came from (mcp_import_entry.part), 0: own */
    size_t layer;        /* index into the layers: the layer that defines or imports it */
    size_t seq;          /* order of reading: later wins */
    const char *path;    /* absolute path of its file (borrowed) */
    bool project;        /* written by the project: untrusted until approved */
    const char *problem; /* NULL, or why it cannot be used although it parsed (a key given
                          * twice): borrowed from the loader's problems */
};

struct loader {
    const struct mcp_config_opts *opts;
    struct mcp_config *c;
    struct layer layers[MAX_FILES];
    size_t n_layers;
    struct cand *cands;
    size_t n_cands, cap_cands;
    struct mcp_import **imports; /* read, kept for the candidates that borrow from them */
    size_t n_imports;
    char *cwd; /* opts->cwd made absolute, for the imports; NULL: none */
    bool cwd_tried;
    struct strv problems; /* owns the candidates' problems */
};

/* Adds a diagnostic, once: a file imported by two layers is read twice. */
static int vadd_diag(struct mcp_config *c, bool warning, const char *source, const char *fmt,
                     va_list ap) _printf_(4, 0);
static int vadd_diag(struct mcp_config *c, bool warning, const char *source, const char *fmt,
                     va_list ap)
{
    struct mcp_config_diag *d = realloc(c->diags, (c->n_diags + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    c->diags = d;
    d = &c->diags[c->n_diags];
    d->source = strdup(source);
    d->warning = warning;
    int k = vasprintf(&d->message, fmt, ap);
    if (k < 0)
        d->message = NULL;
    if (!d->source || !d->message) {
        free(d->source);
        free(d->message);
        return -ENOMEM;
    }
    for (size_t i = 0; i < c->n_diags; i++)
        if (strcmp(c->diags[i].source, d->source) == 0 &&
            strcmp(c->diags[i].message, d->message) == 0) {
            free(d->source);
            free(d->message);
            return 0;
        }
    c->n_diags++;
    return 0;
}

/* A problem that leaves servers unused (mcp_config_diag). */
static int add_diag(struct mcp_config *c, const char *source, const char *fmt, ...) _printf_(3, 4);
static int add_diag(struct mcp_config *c, const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vadd_diag(c, false, source, fmt, ap);
    va_end(ap);
    return r;
}

/* Something odd that leaves the file's servers in use. */
static int add_warning(struct mcp_config *c, const char *source, const char *fmt, ...)
    _printf_(3, 4);
static int add_warning(struct mcp_config *c, const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vadd_diag(c, true, source, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- which files ------------------------------------------------------------------------- */

/* An absolute copy of p (relative to the current directory). */
static int absolute(const char *p, char **ret)
{
    char *cwd = NULL, *out;
    if (p[0] == '/') {
        out = strdup(p);
    } else {
        cwd = getcwd(NULL, 0);
        if (!cwd)
            return negerr_or(errno, -EIO);
        out = path_join(cwd, p);
        free(cwd);
    }
    if (!out)
        return -ENOMEM;
    *ret = out;
    return 0;
}

/* Takes path. */
static int add_layer(struct loader *L, char *path, enum mcp_layer layer, bool explicit_path)
{
    if (!path)
        return -ENOMEM;
    char *d = path_display(path);
    if (!d) {
        free(path);
        return -ENOMEM;
    }
    struct layer *y = &L->layers[L->n_layers++];
    y->path = path;
    y->display = d;
    y->layer = layer;
    y->explicit_path = explicit_path;
    return 0;
}

/* A layer named by an option (what names it in the message, e.g. "the bundled configuration"),
 * made absolute. */
static int add_given_layer(struct loader *L, const char *path, const char *what,
                           enum mcp_layer layer, bool explicit_path, struct err *e)
{
    char *p = NULL;
    int r = absolute(path, &p);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return err_set(e, r, "cannot resolve %s '%s': %s", what, path, strerror(-r));
    return add_layer(L, p, layer, explicit_path) < 0 ? oom(e) : 0; /* takes p */
}

/* ~/.config/mcp/mcp.json, or $XDG_CONFIG_HOME/mcp/mcp.json; none without a home. */
static int add_shared_layer(struct loader *L)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    char *dir = NULL;
    if (xdg && xdg[0] == '/')
        return add_layer(L, path_join(xdg, "mcp/mcp.json"), MCP_LAYER_SHARED, false);
    int r = path_home(&dir);
    if (r == -ENOMEM)
        return r;
    if (r < 0) /* no home: no shared layer */
        return 0;
    r = add_layer(L, path_join(dir, ".config/mcp/mcp.json"), MCP_LAYER_SHARED, false);
    free(dir);
    return r;
}

/* ~/.pi/agent/mcp.json (or --config, given explicitly) */
static int add_user_layer(struct loader *L, struct err *e)
{
    struct err le = ERR_INIT;
    char *p = NULL;

    if (L->opts->config_path)
        return add_given_layer(L, L->opts->config_path, "the configuration file", MCP_LAYER_USER,
                               true, e);
    int r = path_agent_file("mcp.json", &p, &le);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0) /* no home: nothing to read, but say why the user layer is missing */
        return add_diag(L->c, "~/.pi/agent/mcp.json", "%s", err_msg(&le)) < 0 ? oom(e) : 0;
    return add_layer(L, p, MCP_LAYER_USER, false) < 0 ? oom(e) : 0; /* takes p */
}

static int add_project_layers(struct loader *L, struct err *e)
{
    char *dir = NULL;
    int r = absolute(L->opts->cwd, &dir);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return err_set(e, r, "cannot resolve the project directory '%s': %s", L->opts->cwd,
                       strerror(-r));
    r = add_layer(L, path_join(dir, ".mcp.json"), MCP_LAYER_PROJECT, false);
    if (r >= 0)
        r = add_layer(L, path_join(dir, ".pi/mcp.json"), MCP_LAYER_PROJECT, false);
    free(dir);
    return r < 0 ? oom(e) : 0;
}

static int find_layers(struct loader *L, struct err *e)
{
    int r;
    if (L->opts->bundled_path) {
        r = add_given_layer(L, L->opts->bundled_path, "the bundled configuration",
                            MCP_LAYER_BUNDLED, false, e);
        if (r < 0)
            return r;
    }
    if (add_shared_layer(L) < 0)
        return oom(e);
    r = add_user_layer(L, e);
    if (r < 0)
        return r;
    return L->opts->cwd ? add_project_layers(L, e) : 0;
}

/* ---- reading them ------------------------------------------------------------------------ */

/* Adds a candidate, unless it runs the bridge itself: that one is skipped with a diagnostic, so
 * that no file (another client's least of all) makes the bridge start itself, over and over. */
static int add_cand(struct loader *L, const char *name, struct json_object *entry, size_t layer,
                    const char *source, const char *import, char *const *notes, unsigned part,
                    const char *path, bool project)
{
    if (mcp_import_runs_bridge(entry)) {
        char nd[MCP_DISP_BUF];
        mcp_disp(nd, name);
        return add_diag(L->c, source,
                        "server '%s' in '%s'%s%s%s is skipped: it runs mcp-bridge itself, which "
                        "would start the bridge inside itself",
                        nd, source, import ? " (import " : "", import ? import : "",
                        import ? ")" : "");
    }
    if (L->n_cands == L->cap_cands) {
        size_t cap = L->cap_cands ? L->cap_cands * 2 : 16;
        struct cand *v = realloc(L->cands, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        L->cands = v;
        L->cap_cands = cap;
    }
    L->cands[L->n_cands] = (struct cand){name,  entry,      source, import,  notes, part,
                                         layer, L->n_cands, path,   project, NULL};
    L->n_cands++;
    return 0;
}

/* A layer's "settings", checked by the tool and merged over the lower layers key by key. */
static int read_settings(struct loader *L, struct layer *y)
{
    const struct mcp_config_opts *o = L->opts;
    struct json_object *st = mcp_field_member(y->root, "settings");
    struct err le = ERR_INIT;

    if (!st)
        return 0;
    if (!json_object_is_type(st, json_type_object))
        return add_warning(L->c, y->display,
                           "'%s': \"settings\" must be an object, not %s: the settings are ignored",
                           y->display, mcp_field_type(st));
    if (o->check_settings) {
        int r = o->check_settings(o->check_userdata, st, &le);
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            return add_warning(L->c, y->display, "'%s': %s: it is ignored", y->display,
                               err_msg(&le));
        /* accepted with warnings (credkit/mcp_field.h): one diagnostic each */
        for (const char *p = r > 0 ? le.msg : ""; *p; p += *p == '\n') {
            size_t n = strcspn(p, "\n");
            if (add_warning(L->c, y->display, "'%s': %.*s", y->display, (int)n, p) < 0)
                return -ENOMEM;
            p += n;
        }
    }
    json_object_object_foreach(st, key, val)
    {
        if (!val) /* null: as if absent, a lower layer's value holds */
            continue;
        struct json_object *v = json_object_get(val);
        if (json_object_object_add(L->c->settings, key, v) < 0) {
            json_object_put(v);
            return -ENOMEM;
        }
    }
    return 0;
}

/* ---- imports ----------------------------------------------------------------------------- */

/* The project directory for the imports, absolute; NULL without one (or when it cannot be
 * resolved: the project layers said so already). */
static const char *import_cwd(struct loader *L)
{
    if (!L->cwd_tried && L->opts->cwd) {
        L->cwd_tried = true;
        if (absolute(L->opts->cwd, &L->cwd) < 0)
            L->cwd = NULL;
    }
    return L->cwd;
}

/* Keeps im's files in the configuration's list, each path once. */
static int note_import_files(struct mcp_config *c, const struct mcp_import *im)
{
    for (size_t i = 0; i < mcp_import_file_count(im); i++) {
        bool exists = false;
        const char *p = mcp_import_file_at(im, i, &exists);
        size_t k = 0;
        while (k < c->n_ifiles && strcmp(c->ifiles[k].path, p) != 0)
            k++;
        if (k < c->n_ifiles)
            continue;
        struct mcp_ifile *v = realloc(c->ifiles, (c->n_ifiles + 1) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        c->ifiles = v;
        v[c->n_ifiles] = (struct mcp_ifile){strdup(p), mcp_import_name(im), exists};
        if (!v[c->n_ifiles].path)
            return -ENOMEM;
        c->n_ifiles++;
    }
    return 0;
}

/* Told of a problem while a layer's imports are read. */
static int import_diag(void *userdata, const char *source, const char *message)
{
    return add_diag(userdata, source, "%s", message);
}

/* A layer's "imports", read in the order listed; their entries are added as candidates from the
 * last import to the first, so that the first listed ranks highest among them, and all of them
 * below the layer's own entries, added after. The imports are kept in L: the candidates borrow
 * from them. */
static int read_imports(struct loader *L, size_t idx)
{
    struct layer *y = &L->layers[idx];
    struct json_object *list = mcp_field_member(y->root, "imports");
    struct mcp_import **read = NULL;
    size_t n = 0;

    if (!list)
        return 0;
    int r = mcp_import_read_list(list, y->display, import_cwd(L), import_diag, L->c, &read, &n);
    if (r < 0)
        return r;
    if (n == 0) { /* realloc to 0 bytes would free L->imports */
        free(read);
        return 0;
    }
    struct mcp_import **v = realloc(L->imports, (L->n_imports + n) * sizeof(*v));
    if (!v) {
        for (size_t i = 0; i < n; i++)
            mcp_import_free(read[i]);
        free(read);
        return -ENOMEM;
    }
    L->imports = v;
    memcpy(v + L->n_imports, read, n * sizeof(*v));
    L->n_imports += n;
    free(read);
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = note_import_files(L->c, v[L->n_imports - n + i]);
    for (size_t i = n; r >= 0 && i-- > 0;) {
        const struct mcp_import *im = v[L->n_imports - n + i];
        for (size_t k = 0; r >= 0 && k < mcp_import_count(im); k++) {
            const struct mcp_import_entry *en = mcp_import_at(im, k);
            /* what a project layer imports is the project's to choose: untrusted as well */
            r = add_cand(L, en->name, en->entry, idx, en->source, mcp_import_name(im), en->notes,
                         en->part, en->path, en->project || y->layer == MCP_LAYER_PROJECT);
        }
    }
    return r;
}

/* Whether a key given twice is about one server: its name given twice under "mcpServers" or
 * "servers", or a key given twice inside it. *ret_name: the server's (borrowed from d). */
static bool dup_of_server(const struct json_dup *d, const char **ret_name)
{
    if (d->npath == 0 ||
        (strcmp(d->path[0], "mcpServers") != 0 && strcmp(d->path[0], "servers") != 0))
        return false;
    *ret_name = d->npath == 1 ? d->key : d->path[1];
    return true;
}

/* A key given twice outside any server (a top-level key, in "settings"): which of the two the
 * file means is not known, so none of the file is used. 1 when the layer is to be skipped
 * (with its diagnostic), 0 when not, -ENOMEM. */
static int dups_of_file(struct loader *L, const struct layer *y, const struct json_dup *dups,
                        size_t n)
{
    const char *name;
    for (size_t i = 0; i < n; i++) {
        if (dup_of_server(&dups[i], &name))
            continue;
        char kd[MCP_DISP_BUF];
        mcp_disp(kd, dups[i].key);
        return add_diag(L->c, y->display,
                        "'%s': line %u: \"%s\" is given twice (first on line %u): no server of "
                        "this file is used; keep one of them",
                        y->display, dups[i].line, kd, dups[i].first) < 0
                   ? -ENOMEM
                   : 1;
    }
    return 0;
}

/* The problem of the candidates of layer idx (its own, from cands[first] on) that a key given
 * twice is about: "its name is given twice" or "\"env.X\" is given twice", with both lines. */
static int dups_of_servers(struct loader *L, size_t idx, size_t first, const struct json_dup *dups,
                           size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct json_dup *d = &dups[i];
        const char *name;
        char *msg = NULL;
        int k;
        if (!dup_of_server(d, &name))
            continue;
        if (d->npath == 1) {
            k = asprintf(&msg,
                         "its name is given twice in the file (lines %u and %u): keep one of them",
                         d->first, d->line);
        } else {
            struct buf kp;
            buf_init(&kp, 4096);
            int rr = 0;
            for (size_t j = 2; rr >= 0 && j < d->npath; j++)
                rr = buf_printf(&kp, "%s.", d->path[j]);
            if (rr >= 0)
                rr = buf_append_str(&kp, d->key);
            char kd[MCP_DISP_BUF];
            mcp_disp(kd, rr >= 0 ? buf_str(&kp) : d->key);
            buf_release(&kp);
            k = asprintf(&msg, "\"%s\" is given twice (lines %u and %u): keep one of them", kd,
                         d->first, d->line);
        }
        if (k < 0 || strv_push_take(&L->problems, msg) < 0)
            return -ENOMEM;
        for (size_t c = first; c < L->n_cands; c++)
            if (L->cands[c].layer == idx && !L->cands[c].import && !L->cands[c].problem &&
                strcmp(L->cands[c].name, name) == 0)
                L->cands[c].problem = L->problems.v[L->problems.n - 1];
    }
    return 0;
}

/* Collects the candidates and settings of a layer whose root is read; a root that is not
 * usable is a diagnostic and the layer is skipped, as one that gives a key twice outside its
 * servers. dups: the keys its text gives twice. */
static int scan_root(struct loader *L, size_t idx, const struct json_dup *dups, size_t ndups,
                     struct err *e)
{
    struct layer *y = &L->layers[idx];
    size_t first = L->n_cands;
    int r;

    r = dups_of_file(L, y, dups, ndups);
    if (r != 0)
        goto skip;
    if (!json_object_is_type(y->root, json_type_object)) {
        r = add_diag(L->c, y->display, "'%s': the root must be an object, not %s", y->display,
                     mcp_field_type(y->root));
        goto skip;
    }
    struct json_object *ms = mcp_field_member(y->root, "mcpServers"),
                       *sv = mcp_field_member(y->root, "servers");
    if ((ms && !json_object_is_type(ms, json_type_object)) ||
        (sv && !json_object_is_type(sv, json_type_object))) {
        const char *key =
            ms && !json_object_is_type(ms, json_type_object) ? "mcpServers" : "servers";
        r = add_diag(L->c, y->display,
                     "'%s': \"%s\" must be an object, not %s: no server of "
                     "this file is used",
                     y->display, key, mcp_field_type(mcp_field_member(y->root, key)));
        goto skip;
    }
    if (read_settings(L, y) < 0 || read_imports(L, idx) < 0)
        return oom(e);
    /* the pi adapter's Claude plugin bundles: accepted, not followed (a plugin's servers would
     * start commands no file of the layers names) */
    if (mcp_field_member(y->root, "claudePlugins") &&
        add_warning(L->c, y->display,
                    "'%s': \"claudePlugins\" is accepted and not applied: no plugin bundle is "
                    "read; copy the servers of its .mcp.json into \"mcpServers\"",
                    y->display) < 0)
        return oom(e);
    /* "servers" first, skipping what "mcpServers" of the same file defines */
    if (sv) {
        json_object_object_foreach(sv, name, entry)
        {
            if (ms && json_object_object_get_ex(ms, name, NULL))
                continue;
            if (add_cand(L, name, entry, idx, y->display, NULL, NULL, 0, y->path,
                         y->layer == MCP_LAYER_PROJECT) < 0)
                return oom(e);
        }
    }
    if (ms) {
        json_object_object_foreach(ms, name, entry)
        {
            if (add_cand(L, name, entry, idx, y->display, NULL, NULL, 0, y->path,
                         y->layer == MCP_LAYER_PROJECT) < 0)
                return oom(e);
        }
    }
    return dups_of_servers(L, idx, first, dups, ndups) < 0 ? oom(e) : 0;
skip:
    json_object_put(y->root);
    y->root = NULL;
    return r < 0 ? oom(e) : 0;
}

/* Reads one layer: a missing file is absent; anything else wrong with the file is a
 * diagnostic and the layer is skipped. */
static int read_layer(struct loader *L, size_t idx, struct err *e)
{
    struct layer *y = &L->layers[idx];
    struct mcp_file *f = &L->c->files[L->c->n_files];
    struct err le = ERR_INIT;
    int r;

    f->path = strdup(y->path);
    if (!f->path)
        return oom(e);
    L->c->n_files++;

    struct json_dup *dups = NULL;
    size_t ndups = 0;
    r = json_read_file_dups(y->path, MCP_CONFIG_MAX_BYTES, 0, &y->root, &dups, &ndups, &le);
    f->exists = r != -ENOENT;
    if (r == -ENOENT && y->explicit_path)
        return err_set(e, -ENOENT, "configuration file '%s' does not exist: check the path",
                       y->display);
    if (r == -ENOENT)
        return 0;
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return add_diag(L->c, y->display, "%s", err_msg(&le)) < 0 ? oom(e) : 0;
    /* the file names commands to run: one that others can change is still used (refusing it
     * would take every server away at once), but never silently */
    struct err we = ERR_INIT;
    if (file_check_owner_only_writes(y->path, &we) == -EPERM &&
        add_warning(L->c, y->display, "%s; whoever can change it chooses the commands it runs",
                    err_msg(&we)) < 0) {
        err_clear(&we);
        json_dups_free(dups, ndups);
        return oom(e);
    }
    err_clear(&we);
    r = scan_root(L, idx, dups, ndups, e);
    json_dups_free(dups, ndups);
    return r;
}

/* ---- merging ----------------------------------------------------------------------------- */

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    int k = strcmp(x->name, y->name);
    if (k)
        return k;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The same entry of the same file: one file imported by two layers gives it twice. */
static bool same_origin(const struct cand *a, const struct cand *b)
{
    return a->part == b->part && strcmp(a->source, b->source) == 0 &&
           (a->import && b->import ? strcmp(a->import, b->import) == 0 : a->import == b->import);
}

/* How the shadowed list names a candidate: "<display path>" or "<display path> (import <name>)";
 * a file imported by two layers is named once, and not at all when the winner comes from it. */
static int push_shadowed(struct strv *sv, const struct cand *k, const struct cand *w)
{
    char *label = NULL;
    if (same_origin(k, w))
        return 0;
    if (k->import ? asprintf(&label, "%s (import %s)", k->source, k->import) < 0
                  : !(label = strdup(k->source)))
        return -ENOMEM;
    if (strv_contains(sv, label)) {
        free(label);
        return 0;
    }
    return strv_push_take(sv, label);
}

/* What the candidates of one name, cands[first..win) (lower first), tell of the winner
 * s = cands[win]: its import, the ones it shadowed (highest first), the import's notes. */
static int annotate(struct mcp_server *s, const struct cand *cands, size_t first, size_t win)
{
    struct strv shadowed = STRV_INIT, warnings = STRV_INIT;
    const struct cand *w = &cands[win];
    int r = 0;

    if (w->import && !(s->import = strdup(w->import)))
        return -ENOMEM;
    for (size_t k = win; r >= 0 && k-- > first;)
        r = push_shadowed(&shadowed, &cands[k], w);
    for (size_t i = 0; r >= 0 && s->warnings && s->warnings[i]; i++)
        r = strv_push(&warnings, s->warnings[i]);
    for (size_t i = 0; r >= 0 && w->notes && w->notes[i]; i++)
        r = strv_push(&warnings, w->notes[i]);
    char **sv = NULL, **wv = NULL;
    if (r >= 0 && (!(sv = strv_detach(&shadowed)) || !(wv = strv_detach(&warnings))))
        r = -ENOMEM;
    if (r >= 0) {
        strv_free(s->shadowed);
        s->shadowed = sv;
        strv_free(s->warnings);
        s->warnings = wv;
    } else {
        strv_free(sv);
    }
    strv_release(&shadowed);
    strv_release(&warnings);
    return r;
}

/* The lookup of an inert entry: nothing is ever looked up for it. */
static int inert_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    (void)userdata;
    (void)name;
    (void)ret;
    return err_set(e, -ENOENT, "not looked up");
}

/* Makes s, built without a lookup, an invalid entry for reason: its missing variables were
 * never asked for, so none is listed. */
static int make_inert(struct mcp_server *s, const char *source, const char *name,
                      const char *reason, const char *hint)
{
    char nd[MCP_DISP_BUF];
    char *msg = NULL;
    mcp_disp(nd, name);
    if (asprintf(&msg, "'%s': server '%s': %s%s%s", source, nd, reason, hint ? ": " : "",
                 hint ? hint : "") < 0)
        return -ENOMEM;
    free(s->error);
    s->error = msg;
    strv_free(s->missing_vars);
    s->missing_vars = NULL;
    return 0;
}

/* Builds the winner k: validated and expanded, unless it is not to be used (a key given
 * twice, a project's entry not approved), which is checked without anything looked up. */
static int build_one(struct loader *L, const struct cand *k, struct mcp_server **ret,
                     enum mcp_trust *ret_trust)
{
    const struct mcp_config_opts *o = L->opts;
    struct mcp_config_opts inert;
    enum mcp_trust trust = MCP_TRUST_TRUSTED;
    const char *reason = k->problem, *hint = NULL;
    int r;

    if (k->project && o->trust) {
        r = o->trust(o->trust_userdata, k->name, k->path, k->entry);
        if (r < 0)
            return r;
        trust = (enum mcp_trust)r;
    }
    if (!reason && (trust == MCP_TRUST_UNTRUSTED || trust == MCP_TRUST_CHANGED)) {
        reason = trust == MCP_TRUST_CHANGED
                     ? "untrusted project entry: changed since it was approved"
                     : "untrusted project entry: not started until approved";
        hint = o->trust_hint;
    }
    if (reason) {
        inert = *o;
        inert.lookup = inert_lookup;
        inert.lookup_userdata = NULL;
        inert.defer_vars = true;
        o = &inert;
    }
    r = mcp_server_build(k->name, k->entry, k->source, L->layers[k->layer].layer, o, ret);
    if (r >= 0 && reason && (r = make_inert(*ret, k->source, k->name, reason, hint)) < 0) {
        mcp_server_free(*ret);
        *ret = NULL;
    }
    if (r >= 0)
        *ret_trust = trust;
    return r;
}

/* The second pass: the last candidate of each name (highest) wins, is validated and expanded,
 * and learns which ones it shadowed; the result is sorted by name. */
static int build_servers(struct loader *L, struct err *e)
{
    if (L->n_cands > 0)
        qsort(L->cands, L->n_cands, sizeof(*L->cands), cand_cmp);
    size_t cap = L->n_cands ? L->n_cands : 1;
    L->c->servers = calloc(cap, sizeof(*L->c->servers));
    L->c->origins = calloc(cap, sizeof(*L->c->origins));
    if (!L->c->servers || !L->c->origins)
        return oom(e);
    for (size_t i = 0; i < L->n_cands;) {
        size_t win = i;
        while (win + 1 < L->n_cands && strcmp(L->cands[win + 1].name, L->cands[i].name) == 0)
            win++;
        const struct cand *k = &L->cands[win];
        struct mcp_server *s = NULL;
        enum mcp_trust trust = MCP_TRUST_TRUSTED;
        if (build_one(L, k, &s, &trust) < 0)
            return oom(e);
        struct mcp_origin *og = &L->c->origins[L->c->n_servers];
        L->c->servers[L->c->n_servers++] = s;
        og->trust = trust;
        if (!(og->path = strdup(k->path ? k->path : k->source)))
            return oom(e);
        if (annotate(s, L->cands, i, win) < 0)
            return oom(e);
        i = win + 1;
    }
    return 0;
}

static int loader_init(struct loader *L, const struct mcp_config_opts *opts, struct err *e)
{
    static const struct mcp_config_opts no_opts;
    *L = (struct loader){.opts = opts ? opts : &no_opts};
    L->c = calloc(1, sizeof(*L->c));
    if (!L->c || !(L->c->settings = json_object_new_object()))
        return oom(e);
    return 0;
}

static void loader_release(struct loader *L)
{
    mcp_config_free(L->c);
    for (size_t i = 0; i < L->n_layers; i++) {
        free(L->layers[i].path);
        free(L->layers[i].display);
        json_object_put(L->layers[i].root);
    }
    free(L->cands);
    strv_release(&L->problems);
    for (size_t i = 0; i < L->n_imports; i++)
        mcp_import_free(L->imports[i]);
    free(L->imports);
    free(L->cwd);
}

int mcp_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret, struct err *e)
{
    struct loader L;
    int r;

    r = loader_init(&L, opts, e);
    if (r < 0)
        goto out;
    r = find_layers(&L, e);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < L.n_layers; i++) {
        r = read_layer(&L, i, e);
        if (r < 0)
            goto out;
    }
    r = build_servers(&L, e);
    if (r < 0)
        goto out;

    *ret = L.c;
    L.c = NULL;
    r = 0;
out:
    loader_release(&L);
    return r;
}

int mcp_config_load_object(struct json_object *root, const char *source,
                           const struct mcp_config_opts *opts, struct mcp_config **ret,
                           struct err *e)
{
    struct loader L;
    int r;

    if (!root || !source)
        return err_set(e, -EINVAL, "no configuration given");
    r = loader_init(&L, opts, e);
    if (r < 0)
        goto out;
    r = add_layer(&L, strdup(source), MCP_LAYER_USER, true);
    if (r < 0) {
        r = oom(e);
        goto out;
    }
    /* the source is a label, not a path: shown as given */
    free(L.layers[0].display);
    L.layers[0].display = strdup(source);
    if (!L.layers[0].display) {
        r = oom(e);
        goto out;
    }
    L.layers[0].root = json_object_get(root);
    r = scan_root(&L, 0, NULL, 0, e);
    if (r < 0)
        goto out;
    r = build_servers(&L, e);
    if (r < 0)
        goto out;

    *ret = L.c;
    L.c = NULL;
    r = 0;
out:
    loader_release(&L);
    return r;
}

void mcp_config_free(struct mcp_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_servers; i++) {
        mcp_server_free(c->servers[i]);
        free(c->origins[i].path);
    }
    free(c->servers);
    free(c->origins);
    for (size_t i = 0; i < c->n_diags; i++) {
        free(c->diags[i].source);
        free(c->diags[i].message);
    }
    free(c->diags);
    for (size_t i = 0; i < c->n_files; i++)
        free(c->files[i].path);
    for (size_t i = 0; i < c->n_ifiles; i++)
        free(c->ifiles[i].path);
    free(c->ifiles);
    json_object_put(c->settings);
    free(c);
}

/* ---- the result -------------------------------------------------------------------------- */

size_t mcp_config_count(const struct mcp_config *c)
{
    return c ? c->n_servers : 0;
}

const struct mcp_server *mcp_config_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_servers ? c->servers[i] : NULL;
}

const struct mcp_server *mcp_config_find(const struct mcp_config *c, const char *name)
{
    if (!c || !name)
        return NULL;
    size_t lo = 0, hi = c->n_servers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(name, c->servers[mid]->name);
        if (k == 0)
            return c->servers[mid];
        if (k < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

enum mcp_trust mcp_config_trust_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_servers ? c->origins[i].trust : MCP_TRUST_TRUSTED;
}

const char *mcp_config_path_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_servers ? c->origins[i].path : NULL;
}

const char *mcp_trust_name(enum mcp_trust t)
{
    switch (t) {
    case MCP_TRUST_TRUSTED:
        return "trusted";
    case MCP_TRUST_APPROVED:
        return "approved";
    case MCP_TRUST_UNTRUSTED:
        return "untrusted";
    case MCP_TRUST_CHANGED:
        return "changed";
    }
    return "untrusted";
}

struct json_object *mcp_config_settings(const struct mcp_config *c)
{
    return c ? c->settings : NULL;
}

size_t mcp_config_diag_count(const struct mcp_config *c)
{
    return c ? c->n_diags : 0;
}

const struct mcp_config_diag *mcp_config_diag_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_diags ? &c->diags[i] : NULL;
}

size_t mcp_config_file_count(const struct mcp_config *c)
{
    return c ? c->n_files : 0;
}

const char *mcp_config_file_at(const struct mcp_config *c, size_t i, bool *ret_exists)
{
    if (!c || i >= c->n_files)
        return NULL;
    if (ret_exists)
        *ret_exists = c->files[i].exists;
    return c->files[i].path;
}

size_t mcp_config_import_file_count(const struct mcp_config *c)
{
    return c ? c->n_ifiles : 0;
}

const char *mcp_config_import_file_at(const struct mcp_config *c, size_t i, const char **ret_import,
                                      bool *ret_exists)
{
    if (!c || i >= c->n_ifiles)
        return NULL;
    if (ret_import)
        *ret_import = c->ifiles[i].import;
    if (ret_exists)
        *ret_exists = c->ifiles[i].exists;
    return c->ifiles[i].path;
}
