/* cmd_config.c - mcp-bridge list, add and remove: the layered mcp.json files, shown and edited.
 *
 * list is a report: every server after layering with its status, the files considered, and
 * what was wrong with a file as a whole. add and remove change one entry of one file and keep
 * everything else in it as it was (other entries, unknown keys, their order). The file is
 * re-read and replaced atomically under a lock on its directory, and a new entry is checked by
 * the loader the bridge itself uses before anything is written: a refused entry, or a failed
 * write, leaves the file as it was.
 *
 * URLs, header values and env values are templates ("Bearer ${GITHUB_TOKEN}"): they are stored
 * and shown as written, never expanded here. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/tty.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "cli.h"
#include "server_config.h"

#define CONFIG_FILE_MAX (4u * 1024u * 1024u) /* what the loader reads, too */
#define LOCK_TIMEOUT_MS 5000
#define ADD_NAME_MAX    64 /* tool names are at most 64 characters: leave room for them */
#define SUGGEST_MAX     (ADD_NAME_MAX + 1)
#define EXIT_CANCELLED  130 /* Ctrl-C at a prompt, as a shell reports SIGINT */

#define JSON_OUT_FLAGS                                                                             \
    (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

enum scope {
    SCOPE_NONE = -1,
    SCOPE_USER,
    SCOPE_PROJECT,
};

static int usage_error(struct log *log, const char *cmd, const char *fmt, ...) _printf_(3, 4);
static int usage_error(struct log *log, const char *cmd, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_error(log, "%s (see 'mcp-bridge %s --help')", msg, cmd);
    return BRIDGE_EXIT_USAGE;
}

/* ---- small vectors of strings -------------------------------------------------------------- */

struct strv {
    char **v;
    size_t n;
};

static int strv_add(struct strv *sv, const char *s)
{
    char *d = strdup(s);
    char **v = d ? realloc(sv->v, (sv->n + 2) * sizeof(char *)) : NULL;
    if (!v) {
        free(d);
        return -ENOMEM;
    }
    v[sv->n++] = d;
    v[sv->n] = NULL;
    sv->v = v;
    return 0;
}

/* Wipes as it frees: header and env values may be credentials written out. */
static void strv_release(struct strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        secure_free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

/* ---- words ------------------------------------------------------------------------------- */

static const char *layer_word(enum mcp_layer l)
{
    switch (l) {
    case MCP_LAYER_BUNDLED:
        return "bundled";
    case MCP_LAYER_SHARED:
        return "shared";
    case MCP_LAYER_USER:
        return "user";
    case MCP_LAYER_PROJECT:
        return "project";
    }
    return "unknown";
}

/* Appends s quoted for a POSIX shell when it needs quoting, so a command line reads back as
 * the words it is made of. */
static int shell_quote(struct buf *b, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "@%+=:,./_-";
    int r;
    if (*s && strspn(s, safe) == strlen(s))
        return buf_append_str(b, s);
    r = buf_append_char(b, '\'');
    for (const char *p = s; r >= 0 && *p; p++)
        r = *p == '\'' ? buf_append_str(b, "'\\''") : buf_append_char(b, *p);
    if (r >= 0)
        r = buf_append_char(b, '\'');
    return r;
}

/* What an entry is, for the report. A valid entry answers from its parsed fields; an invalid
 * one has them filled only up to its first problem, so it answers from the entry as written. */
static const char *view_transport(const struct mcp_server *s)
{
    if (!s->error)
        return mcp_transport_name(s->transport);
    const char *t = json_get_string(s->raw, "type");
    if (t && (strcmp(t, "stdio") == 0 || strcmp(t, "sse") == 0))
        return strcmp(t, "sse") == 0 ? "sse" : "stdio";
    if (t || json_get_string(s->raw, "url"))
        return "http";
    return "stdio";
}

static const char *view_command(const struct mcp_server *s)
{
    if (!s->error)
        return s->transport == MCP_TRANSPORT_STDIO ? s->command : NULL;
    return json_get_string(s->raw, "command");
}

static const char *view_url(const struct mcp_server *s)
{
    if (!s->error)
        return s->transport == MCP_TRANSPORT_STDIO ? NULL : s->url;
    return json_get_string(s->raw, "url");
}

/* The arguments of the command: the string elements of "args" as written for an invalid
 * entry. out borrows nothing. */
static int view_args(const struct mcp_server *s, struct strv *out)
{
    if (!s->error) {
        for (size_t i = 0; s->args[i]; i++)
            if (strv_add(out, s->args[i]) < 0)
                return -ENOMEM;
        return 0;
    }
    struct json_object *a = json_get_array(s->raw, "args");
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        struct json_object *v = json_object_array_get_idx(a, i);
        if (json_object_is_type(v, json_type_string) &&
            strv_add(out, json_object_get_string(v)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The URL, else "command arg...", else "-". Templates as written. */
static int entry_target(const struct mcp_server *s, struct buf *out)
{
    const char *url = view_url(s), *cmd = view_command(s);
    struct strv args = {0};
    int r;
    if (url || !cmd)
        return buf_append_str(out, url ? url : "-");
    r = view_args(s, &args);
    if (r >= 0)
        r = shell_quote(out, cmd);
    for (size_t i = 0; r >= 0 && i < args.n; i++) {
        r = buf_append_char(out, ' ');
        if (r >= 0)
            r = shell_quote(out, args.v[i]);
    }
    strv_release(&args);
    return r;
}

/* The loader's reason without its "'<file>': server '<name>': " prefix (shown in columns of
 * their own); the whole message when it does not start that way. Borrowed. */
static const char *entry_reason(const struct mcp_server *s)
{
    const char *p = s->error;
    size_t n = strlen(s->source), k = strlen(s->name);
    if (p[0] != '\'' || strncmp(p + 1, s->source, n) != 0)
        return s->error;
    p += 1 + n;
    if (strncmp(p, "': server '", 11) != 0)
        return s->error;
    p += 11;
    if (strncmp(p, s->name, k) != 0 || strncmp(p + k, "': ", 3) != 0)
        return s->error;
    return p + k + 3;
}

/* An absolute copy of p, relative to the working directory. Caller frees. */
static int absolute_path(const char *p, char **ret, struct err *e)
{
    char *out;
    if (p[0] == '/') {
        out = strdup(p);
    } else {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return err_set(e, negerr_or(errno, -EIO), "cannot find the working directory: %s",
                           strerror(errno));
        out = path_join(cwd, p);
        free(cwd);
    }
    if (!out)
        return err_set(e, -ENOMEM, "out of memory");
    *ret = out;
    return 0;
}

/* ---- list -------------------------------------------------------------------------------- */

static const char list_help[] =
    "usage: mcp-bridge list [--json]\n"
    "\n"
    "Show every MCP server of the layered configuration, as the bridge sees it: name,\n"
    "transport, command or URL (as written: ${VAR} references are not expanded), the file that\n"
    "defines it, and its status: ok, or why the entry cannot be used, and which variables are\n"
    "not set. Then the files that were considered (lowest priority first) and what was wrong\n"
    "with any of them as a whole (not JSON, with line and column).\n"
    "\n"
    "Layers, lowest to highest: the bundled configuration, ~/.config/mcp/mcp.json,\n"
    "~/.pi/agent/mcp.json (or --config PATH), .mcp.json and .pi/mcp.json in the working\n"
    "directory. A higher layer replaces a whole entry of the same name.\n"
    "\n"
    "  --json        one JSON object for programs (paths absolute, every key always present):\n"
    "                {\"servers\": [{\"name\", \"transport\": \"stdio\"|\"http\"|\"sse\",\n"
    "                  \"command\": string|null, \"args\": [string], \"url\": string|null,\n"
    "                  \"source\": path, \"layer\": \"bundled\"|\"shared\"|\"user\"|\"project\",\n"
    "                  \"valid\": bool, \"error\": string|null, \"missingVariables\": [string]}],\n"
    "                 \"files\": [{\"path\", \"exists\": bool}],\n"
    "                 \"diagnostics\": [{\"source\", \"message\"}]}\n"
    "\n"
    "exit status: 0 (also when some entries are invalid: this is a report), 3 when the\n"
    "configuration cannot be loaded at all (--config names a missing file)\n"
    "\n"
    "examples:\n"
    "  mcp-bridge list\n"
    "  mcp-bridge list --json | jq '.servers[] | select(.valid | not) | .error'\n";

/* Display path -> absolute path of the files the configuration considered (entries and
 * diagnostics name files by their display path). Borrowed; disp itself when unknown. */
static const char *source_path(const struct mcp_config *c, char *const *displays, const char *disp)
{
    for (size_t i = 0; i < mcp_config_file_count(c); i++)
        if (displays[i] && strcmp(displays[i], disp) == 0)
            return mcp_config_file_at(c, i, NULL);
    return disp;
}

/* json-c answers NULL only when out of memory: remembered once instead of checked at every
 * call. A NULL s is JSON null. */
static struct json_object *jstr(bool *oom, const char *s)
{
    struct json_object *v;
    if (!s)
        return NULL;
    v = json_object_new_string(s);
    if (!v)
        *oom = true;
    return v;
}

static void jadd(bool *oom, struct json_object *o, const char *key, struct json_object *v)
{
    if (!o || json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        *oom = true;
    }
}

static void jpush(bool *oom, struct json_object *a, struct json_object *v)
{
    if (!a || !v || json_object_array_add(a, v) < 0) {
        json_object_put(v);
        *oom = true;
    }
}

/* Splits a --header ("Name: value", one space after the colon, as parse_header_opt() leaves
 * it) or an --env ("NAME=value") string at sep: the name's length, and *ret_value. */
static size_t pair_split(const char *s, char sep, const char **ret_value)
{
    const char *at = strchr(s, sep);
    *ret_value = at + (sep == ':' ? 2 : 1);
    return (size_t)(at - s);
}

/* The object {name: value, ...} of such strings. */
static struct json_object *jpairs(bool *oom, char *const *v, size_t n, char sep)
{
    struct json_object *o = json_object_new_object();
    if (!o)
        *oom = true;
    for (size_t i = 0; o && i < n; i++) {
        const char *value;
        char *name = strndup(v[i], pair_split(v[i], sep, &value));
        if (!name)
            *oom = true;
        else
            jadd(oom, o, name, jstr(oom, value));
        free(name);
    }
    return o;
}

static struct json_object *jstrv(bool *oom, char *const *v)
{
    struct json_object *a = json_object_new_array();
    if (!a)
        *oom = true;
    for (size_t i = 0; a && v && v[i]; i++)
        jpush(oom, a, jstr(oom, v[i]));
    return a;
}

static int list_json(const struct mcp_config *c, char *const *displays)
{
    bool oom = false;
    struct json_object *root = json_object_new_object();
    struct json_object *servers = json_object_new_array(), *files = json_object_new_array(),
                       *diags = json_object_new_array();

    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        const char *cmd = view_command(s);
        struct strv args = {0};
        struct json_object *o = json_object_new_object();
        if (cmd && view_args(s, &args) < 0)
            oom = true;
        jadd(&oom, o, "name", jstr(&oom, s->name));
        jadd(&oom, o, "transport", jstr(&oom, view_transport(s)));
        jadd(&oom, o, "command", jstr(&oom, cmd));
        jadd(&oom, o, "args", jstrv(&oom, args.v));
        strv_release(&args);
        jadd(&oom, o, "url", jstr(&oom, view_url(s)));
        jadd(&oom, o, "source", jstr(&oom, source_path(c, displays, s->source)));
        jadd(&oom, o, "layer", jstr(&oom, layer_word(s->layer)));
        jadd(&oom, o, "valid", json_object_new_boolean(!s->error));
        jadd(&oom, o, "error", jstr(&oom, s->error));
        jadd(&oom, o, "missingVariables", jstrv(&oom, s->missing_vars));
        jpush(&oom, servers, o);
    }
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *p = mcp_config_file_at(c, i, &exists);
        struct json_object *o = json_object_new_object();
        jadd(&oom, o, "path", jstr(&oom, p));
        jadd(&oom, o, "exists", json_object_new_boolean(exists));
        jpush(&oom, files, o);
    }
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
        struct json_object *o = json_object_new_object();
        jadd(&oom, o, "source", jstr(&oom, source_path(c, displays, d->source)));
        jadd(&oom, o, "message", jstr(&oom, d->message));
        jpush(&oom, diags, o);
    }
    jadd(&oom, root, "servers", servers);
    jadd(&oom, root, "files", files);
    jadd(&oom, root, "diagnostics", diags);
    const char *text = oom ? NULL : json_object_to_json_string_ext(root, JSON_OUT_FLAGS);
    if (text)
        printf("%s\n", text);
    json_object_put(root);
    return text ? 0 : -ENOMEM;
}

static int list_text(const struct mcp_config *c)
{
    size_t n = mcp_config_count(c), w_name = 4, w_src = 6;
    struct buf target;
    int r = 0;

    for (size_t i = 0; i < n; i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        size_t k = strlen(s->name), m = strlen(s->source);
        w_name = k > w_name ? k : w_name;
        w_src = m > w_src ? m : w_src;
    }
    if (n == 0)
        printf("no MCP servers configured: add one with 'mcp-bridge add'\n");
    else
        printf("%-*s  %-9s  %-7s  %-*s  %s\n", (int)w_name, "NAME", "TRANSPORT", "STATUS",
               (int)w_src, "SOURCE", "COMMAND OR URL");
    buf_init(&target, 256 * 1024);
    for (size_t i = 0; i < n && r >= 0; i++) {
        const struct mcp_server *s = mcp_config_at(c, i);
        buf_reset(&target);
        r = entry_target(s, &target);
        if (r < 0)
            break;
        printf("%-*s  %-9s  %-7s  %-*s  %s\n", (int)w_name, s->name, view_transport(s),
               !s->error         ? "ok"
               : s->missing_vars ? "missing"
                                 : "invalid",
               (int)w_src, s->source, buf_str(&target));
        if (s->missing_vars) {
            printf("    missing:");
            for (size_t k = 0; s->missing_vars[k]; k++)
                printf("%s %s", k ? "," : "", s->missing_vars[k]);
            printf(" (not set)\n");
        } else if (s->error) {
            printf("    error: %s\n", entry_reason(s));
        }
    }
    buf_release(&target);

    printf("\nfiles, lowest priority first:\n");
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *p = mcp_config_file_at(c, i, &exists);
        char *d = path_display(p);
        printf("  %s%s\n", d ? d : p, exists ? "" : " (absent)");
        free(d);
    }
    if (mcp_config_diag_count(c) > 0) {
        printf("\nproblems with files (their servers are not used):\n");
        for (size_t i = 0; i < mcp_config_diag_count(c); i++)
            printf("  %s\n", mcp_config_diag_at(c, i)->message);
    }
    return r;
}

int cmd_list(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
    struct mcp_config *c = NULL;
    char *displays[8] = {0};
    bool json = false;
    int opt, r, status = BRIDGE_EXIT_FAILED;

    if (args_wants_help(argc, argv)) {
        fputs(list_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 'j')
            return usage_error(log, "list", "unknown option");
        json = true;
    }
    if (optind != argc)
        return usage_error(log, "list", "list takes no arguments");

    /* the problems with files are part of the report: not warnings printed on top of it */
    enum log_level level = log_get_level(log);
    if (level == LOG_WARN)
        log_set_level(log, LOG_ERROR);
    c = cli_load_config(g, log);
    log_set_level(log, level);
    if (!c)
        return BRIDGE_EXIT_CONFIG;

    for (size_t i = 0; i < mcp_config_file_count(c) && i < ELEMENTSOF(displays); i++) {
        displays[i] = path_display(mcp_config_file_at(c, i, NULL));
        if (!displays[i])
            goto out;
    }
    r = json ? list_json(c, displays) : list_text(c);
    if (r < 0) {
        log_error(log, "cannot print the list: %s", strerror(-r));
        goto out;
    }
    if (fflush(stdout) != 0) {
        log_error(log, "cannot write the list: %s", strerror(errno));
        goto out;
    }
    status = BRIDGE_EXIT_OK;
out:
    for (size_t i = 0; i < ELEMENTSOF(displays); i++)
        free(displays[i]);
    mcp_config_free(c);
    return status;
}

/* ---- one configuration file, for changing it ------------------------------------------------ */

struct cfg_file {
    char *path;    /* what is replaced: absolute, a symlink followed to its target */
    char *display; /* for messages: the path as the loader names it */
    struct json_object *root;
    struct json_object *mcp_servers; /* root's "mcpServers" (borrowed); NULL when absent */
    struct json_object *servers;     /* root's "servers", the older key (borrowed); NULL */
    bool existed;
    mode_t mode; /* kept when the file is rewritten */
    int lock_fd; /* the directory, flock'ed; -1 */
};

static void cfg_file_release(struct cfg_file *f)
{
    free(f->path);
    free(f->display);
    json_object_put(f->root);
    if (f->lock_fd >= 0)
        (void)close(f->lock_fd); /* releases the flock */
    *f = (struct cfg_file){.lock_fd = -1};
}

/* Locks the directory that holds a configuration file: flock on the directory itself, so no
 * lock file is left behind in a project, and a read-only directory can still be locked (the
 * write then fails with a clear message). */
static int lock_dir(const char *dir, int *ret_fd, struct err *e)
{
    char *d = path_display(dir);
    const char *dd = d ? d : dir;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;
    if (fd < 0) {
        int k = errno;
        r = err_set(e, -k, "cannot open the directory '%s': %s", dd, strerror(k));
        goto out;
    }
    int64_t end = now_mono_ms() + LOCK_TIMEOUT_MS;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int k = errno;
        if (k == EINTR)
            continue;
        if (k != EWOULDBLOCK) {
            r = err_set(e, -k, "cannot lock the directory '%s': %s", dd, strerror(k));
            goto out;
        }
        if (now_mono_ms() >= end) {
            r = err_set(e, -ETIMEDOUT,
                        "another mcp-bridge add or remove is changing a file in '%s' and did not "
                        "finish within %d s: try again",
                        dd, LOCK_TIMEOUT_MS / 1000);
            goto out;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        (void)nanosleep(&ts, NULL);
    }
    *ret_fd = fd;
    fd = -1;
    r = 0;
out:
    if (fd >= 0)
        (void)close(fd);
    free(d);
    return r;
}

/* The servers object of root under key: *ret NULL when absent (or null); -EBADMSG when it is
 * something else than an object. */
static int servers_of(const struct cfg_file *f, const char *key, struct json_object **ret,
                      struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(f->root, key, &v) || !v) {
        *ret = NULL;
        return 0;
    }
    if (!json_object_is_type(v, json_type_object))
        return err_set(e, -EBADMSG, "'%s': \"%s\" must be an object, not %s", f->display, key,
                       json_type_desc(json_object_get_type(v)));
    *ret = v;
    return 0;
}

static bool has_key(struct json_object *o, const char *key)
{
    return o && json_object_object_get_ex(o, key, NULL);
}

/* Locks path's directory (creating it, private, when missing and create_dir) and reads the
 * file: an absent one is an empty object. -EBADMSG (and the like) with the reason when the file
 * cannot be changed safely: not JSON, root not an object, a servers key not an object. */
static int cfg_file_open(struct cfg_file *f, const char *path, bool create_dir, struct err *e)
{
    struct err le = ERR_INIT;
    struct stat st;
    char *dir = NULL;
    int r;

    *f = (struct cfg_file){.lock_fd = -1};
    r = absolute_path(path, &f->path, e);
    if (r < 0)
        goto out;
    f->display = path_display(f->path);
    if (!f->display) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* a symlinked mcp.json (dotfiles) stays a symlink: its target is what gets replaced */
    if (lstat(f->path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(f->path, NULL);
        if (real) {
            free(f->path);
            f->path = real;
        }
    }
    dir = path_dirname(f->path);
    if (!dir) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if (create_dir && stat(dir, &st) < 0 && errno == ENOENT) {
        r = dir_ensure(dir, 0700, e);
        if (r < 0)
            goto out;
    }
    r = lock_dir(dir, &f->lock_fd, e);
    if (r < 0)
        goto out;

    r = json_read_file(f->path, CONFIG_FILE_MAX, 0, &f->root, &le);
    if (r == -ENOENT) {
        f->root = json_object_new_object();
        if (!f->root) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
        f->mode = 0;
        r = 0;
        goto out;
    }
    if (r < 0) {
        r = err_set(e, r, "%s", err_msg(&le));
        goto out;
    }
    f->existed = true;
    f->mode = stat(f->path, &st) == 0 ? st.st_mode & 07777 : 0600;
    if (!json_object_is_type(f->root, json_type_object)) {
        r = err_set(e, -EBADMSG, "'%s': the root must be an object, not %s", f->display,
                    json_type_desc(json_object_get_type(f->root)));
        goto out;
    }
    r = servers_of(f, "mcpServers", &f->mcp_servers, e);
    if (r >= 0)
        r = servers_of(f, "servers", &f->servers, e);
out:
    free(dir);
    return r;
}

/* Whether doc, a configuration document, defines name under either root key. */
static bool doc_defines(struct json_object *doc, const char *name)
{
    static const char *const keys[] = {"mcpServers", "servers"};
    if (!json_object_is_type(doc, json_type_object))
        return false;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        struct json_object *v = NULL;
        if (json_object_object_get_ex(doc, keys[i], &v) &&
            json_object_is_type(v, json_type_object) && has_key(v, name))
            return true;
    }
    return false;
}

/* Replaces the file with f->root, keeping its permissions (new files: mode). */
static int cfg_file_write(struct cfg_file *f, mode_t mode, struct err *e)
{
    return json_write_file(f->path, f->root, f->existed ? f->mode : mode, e);
}

/* Reports why cfg_file_open() failed; returns the exit status: a file whose content cannot
 * be changed safely is a configuration error the user fixes, anything else a failure. */
static int open_failed(struct log *log, int r, const struct err *e)
{
    bool content = r == -EBADMSG || r == -E2BIG;
    log_error(log, "%s%s", err_msg(e),
              content ? ": fix the file by hand, then try again (nothing was changed)"
                      : " (nothing was changed)");
    return content ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
}

/* ---- add: names -------------------------------------------------------------------------- */

static bool add_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= ADD_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static const char add_name_rule[] =
    "use letters, digits, '-', '_' or '.', at most 64 characters (it becomes part of tool names)";

/* Lowercase [a-z0-9_-] of s[0..n), other runs of characters as one '-', none at either end. */
static void sanitize_name(const char *s, size_t n, char out[SUGGEST_MAX])
{
    size_t o = 0;
    bool dash = false;
    for (size_t i = 0; i < n && o < SUGGEST_MAX - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) && c < 0x80) {
            if (dash && o > 0 && o < SUGGEST_MAX - 2)
                out[o++] = '-';
            dash = false;
            out[o++] = (char)tolower(c);
        } else if (c == '_' && o > 0) {
            out[o++] = '_';
            dash = false;
        } else {
            dash = true;
        }
    }
    while (o > 0 && (out[o - 1] == '-' || out[o - 1] == '_'))
        o--;
    out[o] = 0;
}

static bool is_generic_label(const char *s, size_t n)
{
    static const char *const generic[] = {"mcp",    "api",     "www", "server", "servers",
                                          "remote", "gateway", "app", "sse",    NULL};
    for (size_t i = 0; generic[i]; i++)
        if (strlen(generic[i]) == n && strncasecmp(s, generic[i], n) == 0)
            return true;
    return false;
}

/* A name from a URL's host: its first label that says something (mcp.github.com -> github,
 * api.example.com -> example), the top-level domain aside. */
static void suggest_from_url(const char *url, char out[SUGGEST_MAX])
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/?#");
    const char *at = memchr(h, '@', n);
    if (at) {
        n -= (size_t)(at + 1 - h);
        h = at + 1;
    }
    out[0] = 0;
    if (n > 0 && h[0] == '[') {
        snprintf(out, SUGGEST_MAX, "%s", strncmp(h, "[::1]", 5) == 0 ? "local" : "server");
        return;
    }
    const char *colon = memchr(h, ':', n);
    if (colon)
        n = (size_t)(colon - h);
    if (n > 0 && strspn(h, "0123456789.") >= n) {
        snprintf(out, SUGGEST_MAX, "%s", strncmp(h, "127.", 4) == 0 ? "local" : "server");
        return;
    }
    /* labels, the last one (the top-level domain) dropped when there are several */
    const char *labels[32];
    size_t lens[32], k = 0;
    for (const char *p = h; p < h + n && k < ELEMENTSOF(labels);) {
        const char *dot = memchr(p, '.', (size_t)(h + n - p));
        size_t len = dot ? (size_t)(dot - p) : (size_t)(h + n - p);
        if (len > 0) {
            labels[k] = p;
            lens[k++] = len;
        }
        p += len + 1;
    }
    size_t usable = k > 1 ? k - 1 : k;
    for (size_t i = 0; i < usable && !out[0]; i++)
        if (!is_generic_label(labels[i], lens[i]))
            sanitize_name(labels[i], lens[i], out);
    if (!out[0] && usable > 0)
        sanitize_name(labels[0], lens[0], out);
}

static bool str_in(const char *s, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

/* A name from a command line: the program, or for a runner (npx, uvx, docker ...) the package
 * or image it runs, without scope, version, extension and "mcp-server-"-like decoration:
 * npx -y @modelcontextprotocol/server-everything -> everything. */
static void suggest_from_command(const char *cmd, char *const *args, char out[SUGGEST_MAX])
{
    static const char *const runners[] = {"npx",    "bunx", "pnpx", "uvx",    "pipx",    "node",
                                          "nodejs", "deno", "bun",  "python", "python3", "uv",
                                          "npm",    "pnpm", "yarn", "docker", "podman",  "java",
                                          "ruby",   "go",   NULL};
    static const char *const verbs[] = {"run", "exec", "dlx", "x", "tool", "start", NULL};
    static const char *const exts[] = {".js", ".mjs", ".cjs", ".ts", ".py", ".jar", ".rb", NULL};
    static const char *const prefixes[] = {"mcp-server-", "server-", "mcp-", NULL};
    static const char *const suffixes[] = {"-mcp-server", "-server-mcp", "-mcp",
                                           "-server",     "_mcp",        NULL};
    const char *base = strrchr(cmd, '/');
    const char *word = base ? base + 1 : cmd;

    if (str_in(word, runners)) {
        bool last = strcmp(word, "docker") == 0 || strcmp(word, "podman") == 0;
        for (size_t i = 0; args && args[i]; i++) {
            if (args[i][0] == '-' || str_in(args[i], verbs) || !args[i][0])
                continue;
            word = args[i];
            if (!last)
                break;
        }
    }
    /* @scope/pkg@1.2, ghcr.io/org/image:tag, ./dist/server.js */
    if (word[0] == '@' && strchr(word, '/'))
        word = strchr(word, '/') + 1;
    const char *slash = strrchr(word, '/');
    if (slash && slash[1])
        word = slash + 1;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", word);
    buf[strcspn(buf, "@:")] = 0;
    for (size_t i = 0; exts[i]; i++) {
        size_t n = strlen(buf), m = strlen(exts[i]);
        if (n > m && strcasecmp(buf + n - m, exts[i]) == 0)
            buf[n - m] = 0;
    }
    sanitize_name(buf, strlen(buf), out);
    for (size_t i = 0; prefixes[i]; i++) {
        size_t m = strlen(prefixes[i]);
        if (strncmp(out, prefixes[i], m) == 0 && out[m]) {
            memmove(out, out + m, strlen(out + m) + 1);
            break;
        }
    }
    for (size_t i = 0; suffixes[i]; i++) {
        size_t n = strlen(out), m = strlen(suffixes[i]);
        if (n > m && strcmp(out + n - m, suffixes[i]) == 0) {
            out[n - m] = 0;
            break;
        }
    }
}

/* Splits a command line typed at the guided prompt into words as a POSIX shell would for the
 * simple cases: blanks separate, '...' and "..." quote, a backslash escapes. Nothing is
 * expanded ($VAR stays as written: there is no shell when the bridge starts it). */
static int split_words(const char *s, struct strv *out, const char **ret_why)
{
    struct buf w;
    bool in_word = false;
    int r = 0;

    buf_init(&w, 64 * 1024);
    for (const char *p = s;; p++) {
        char c = *p;
        if (c == 0 || c == ' ' || c == '\t') {
            if (in_word) {
                r = strv_add(out, buf_str(&w));
                if (r < 0)
                    break;
                buf_reset(&w);
                in_word = false;
            }
            if (!c)
                break;
            continue;
        }
        in_word = true;
        if (c == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (!q) {
                *ret_why = "a ' is not closed";
                r = -EINVAL;
                break;
            }
            r = buf_append(&w, p + 1, (size_t)(q - p - 1));
            p = q;
        } else if (c == '"') {
            for (p++; r >= 0 && *p && *p != '"'; p++) {
                if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                    p++;
                r = buf_append_char(&w, *p);
            }
            if (r >= 0 && !*p) {
                *ret_why = "a \" is not closed";
                r = -EINVAL;
            }
        } else if (c == '\\') {
            if (!p[1]) {
                *ret_why = "the line ends with a backslash";
                r = -EINVAL;
                break;
            }
            r = buf_append_char(&w, *++p);
        } else {
            r = buf_append_char(&w, c);
        }
        if (r < 0)
            break;
    }
    if (r == -E2BIG)
        *ret_why = "a word is longer than 64 KiB";
    buf_release(&w);
    return r;
}

/* ---- add: the arguments ------------------------------------------------------------------ */

struct add_args {
    char *name;
    int transport; /* enum mcp_transport, -1 until chosen */
    int type_flag; /* --type, -1 when not given */
    char *url, *command, *cwd, *bearer_env;
    struct strv args, env, headers; /* env "K=V", headers "Name: value", as given */
    bool oauth, auth_none, force, have_timeout;
    int64_t timeout_ms;
    int scope;
};

static void add_args_release(struct add_args *a)
{
    free(a->name);
    free(a->url);
    free(a->command);
    free(a->cwd);
    free(a->bearer_env);
    strv_release(&a->args);
    strv_release(&a->env);
    strv_release(&a->headers);
}

static int set_once(struct log *log, const char *opt, char **slot, const char *value)
{
    if (*slot) {
        log_error(log, "%s is given twice (see 'mcp-bridge add --help')", opt);
        return -EINVAL;
    }
    *slot = strdup(value);
    return *slot ? 0 : -ENOMEM;
}

/* "Name: value" -> "Name: value" with exactly one space, as the loader keeps headers. */
static int parse_header_opt(struct log *log, const char *s, struct strv *out)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : 0;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!colon || n == 0) {
        log_error(log, "--header takes 'Name: value', e.g. --header 'X-Team: ${TEAM_ID}' (see "
                       "'mcp-bridge add --help')");
        return -EINVAL;
    }
    const char *v = colon + 1;
    v += strspn(v, " \t");
    char *h = NULL;
    if (asprintf(&h, "%.*s: %s", (int)n, s, v) < 0)
        return -ENOMEM;
    int r = strv_add(out, h);
    secure_free(h); /* a header value may be a credential typed in clear */
    return r;
}

static bool contains_ci(const char *s, const char *word)
{
    return strcasestr(s, word) != NULL;
}

/* Whether a value stored in clear looks like a credential: a literal (no ${VAR}) Authorization
 * value, or any literal value of a header or variable named like a key or token. */
static bool looks_secret(const char *name, const char *value)
{
    static const char *const words[] = {"token", "secret",     "key",    "password", "passwd",
                                        "auth",  "credential", "cookie", NULL};
    if (!*value || strstr(value, "${"))
        return false;
    if (strncasecmp(value, "Bearer ", 7) == 0 || strncasecmp(value, "Basic ", 6) == 0)
        return true;
    for (size_t i = 0; words[i]; i++)
        if (contains_ci(name, words[i]))
            return true;
    return false;
}

/* Default variable name for a bearer token: GITHUB_TOKEN for "github". */
static void default_token_env(const char *name, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = name; *p && o + 7 < size; p++)
        out[o++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
    snprintf(out + o, size - o, "_TOKEN");
    if (!name_is_valid(out))
        snprintf(out, size, "MCP_TOKEN");
}

/* ---- add: guided ------------------------------------------------------------------------- */

/* One line from the terminal, blanks trimmed at both ends. -ECANCELED on Ctrl-C or EOF. */
static int ask(const char *prompt, char **ret)
{
    char *line = NULL;
    int r = tty_prompt(prompt, false, &line);
    if (r < 0)
        return r;
    size_t start = strspn(line, " \t"), n = strlen(line);
    while (n > start && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    memmove(line, line + start, n - start);
    line[n - start] = 0;
    *ret = line;
    return 0;
}

/* ask(), an empty answer standing for def (when def is not empty itself). */
static int ask_default(const char *prompt, const char *def, char **ret)
{
    char *answer = NULL;
    int r = ask(prompt, &answer);
    if (r < 0)
        return r;
    if (!answer[0] && def[0]) {
        free(answer);
        answer = strdup(def);
        if (!answer)
            return -ENOMEM;
    }
    *ret = answer;
    return 0;
}

/* A numbered choice; words[i] is accepted too; an empty answer picks def when def >= 0. */
static int ask_choice(const char *prompt, const char *const *words, int n, int def, int *ret)
{
    for (;;) {
        char *answer = NULL;
        int64_t k = 0;
        int pick = -1, r = ask(prompt, &answer);
        if (r < 0)
            return r;
        if (!answer[0])
            pick = def;
        else if (parse_int64(answer, &k) >= 0 && k >= 1 && k <= n)
            pick = (int)k - 1;
        else
            for (int i = 0; i < n; i++)
                if (strcasecmp(answer, words[i]) == 0)
                    pick = i;
        free(answer);
        if (pick >= 0) {
            *ret = pick;
            return 0;
        }
        fprintf(stderr, "please answer a number from 1 to %d (or press Ctrl-C to cancel)\n", n);
    }
}

static int ask_yes_no(const char *prompt, bool *ret)
{
    for (;;) {
        char *answer = NULL;
        int r = ask(prompt, &answer);
        if (r < 0)
            return r;
        bool yes = strcasecmp(answer, "y") == 0 || strcasecmp(answer, "yes") == 0;
        bool no = !answer[0] || strcasecmp(answer, "n") == 0 || strcasecmp(answer, "no") == 0;
        free(answer);
        if (yes || no) {
            *ret = yes;
            return 0;
        }
        fprintf(stderr, "please answer y or n\n");
    }
}

/* Quick checks at the prompt, so a typo is asked again rather than refused at the end (the
 * loader still checks the whole entry before it is written). */
static bool url_answer_ok(const char *url)
{
    struct err e = ERR_INIT;
    char *canon = NULL;
    if (!url[0]) {
        fprintf(stderr, "the URL is empty\n");
        return false;
    }
    if (strstr(url, "${"))
        return true; /* checked after substitution, by the loader */
    if (url_canonical(url, &canon, &e) < 0) {
        fprintf(stderr, "%s\n", err_msg(&e));
        return false;
    }
    free(canon);
    return true;
}

static int guided(struct add_args *a, const char *user_disp, const char *project_disp)
{
    char *answer = NULL;
    int k, r;

    if (a->transport < 0) {
        static const char *const words[] = {"http", "stdio"};
        fprintf(stderr,
                "What kind of MCP server is it?\n"
                "  1) http   a server at a URL (Streamable HTTP; the older SSE transport is\n"
                "            detected on its own)\n"
                "  2) stdio  a local command the bridge starts and talks to over stdin/stdout\n");
        r = ask_choice("Choose 1-2: ", words, 2, -1, &k);
        if (r < 0)
            return r;
        a->transport = k == 0 ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO;
    }

    if (a->transport != MCP_TRANSPORT_STDIO) {
        while (!a->url) {
            r = ask("URL (e.g. https://mcp.example.com/mcp): ", &answer);
            if (r < 0)
                return r;
            if (url_answer_ok(answer)) {
                a->url = answer;
                answer = NULL;
            }
            free(answer);
            answer = NULL;
        }
    } else if (!a->command) {
        while (!a->command) {
            struct strv words = {0};
            const char *why = NULL;
            r = ask("Command line (e.g. npx -y @modelcontextprotocol/server-everything): ",
                    &answer);
            if (r < 0)
                return r;
            r = split_words(answer, &words, &why);
            free(answer);
            answer = NULL;
            if (r == -ENOMEM) {
                strv_release(&words);
                return r;
            }
            if (r < 0 || words.n == 0) {
                fprintf(stderr, "%s: type the command and its arguments as in a shell\n",
                        r < 0 ? why : "the command line is empty");
                strv_release(&words);
                continue;
            }
            /* the words typed come first, any --arg given on the command line after them */
            struct strv args = {0};
            for (size_t i = 1; r >= 0 && i < words.n; i++)
                r = strv_add(&args, words.v[i]);
            for (size_t i = 0; r >= 0 && i < a->args.n; i++)
                r = strv_add(&args, a->args.v[i]);
            if (r < 0) {
                strv_release(&words);
                strv_release(&args);
                return r;
            }
            strv_release(&a->args);
            a->args = args;
            a->command = words.v[0];
            words.v[0] = NULL;
            strv_release(&words);
        }
        if (a->env.n == 0) {
            const char *prompt = "Environment variable for it, NAME=value (${VAR} is read from "
                                 "the bridge's environment; empty line when done): ";
            for (;;) {
                r = ask(prompt, &answer);
                if (r < 0)
                    return r;
                if (!answer[0]) {
                    free(answer);
                    answer = NULL;
                    break;
                }
                const char *eq = strchr(answer, '=');
                if (!eq || eq == answer) {
                    fprintf(stderr, "type NAME=value, e.g. LOG_LEVEL=debug or "
                                    "API_KEY=${API_KEY}, or an empty line when done\n");
                } else {
                    r = strv_add(&a->env, answer);
                    prompt = "Another one (empty line when done): ";
                }
                free(answer);
                answer = NULL;
                if (r < 0)
                    return r;
            }
        }
    }

    if (!a->name) {
        char suggestion[SUGGEST_MAX] = "";
        if (a->transport == MCP_TRANSPORT_STDIO)
            suggest_from_command(a->command, a->args.v, suggestion);
        else
            suggest_from_url(a->url, suggestion);
        if (!add_name_ok(suggestion))
            suggestion[0] = 0;
        while (!a->name) {
            char prompt[128];
            if (suggestion[0])
                (void)snprintf(prompt, sizeof(prompt), "Name [%s]: ", suggestion);
            else
                (void)snprintf(prompt, sizeof(prompt), "Name: ");
            r = ask_default(prompt, suggestion, &answer);
            if (r < 0)
                return r;
            if (add_name_ok(answer)) {
                a->name = answer;
                answer = NULL;
            } else
                fprintf(stderr, "%s: %s\n", answer[0] ? "not a usable name" : "the name is empty",
                        add_name_rule);
            free(answer);
            answer = NULL;
        }
    }

    if (a->transport != MCP_TRANSPORT_STDIO && !a->oauth && !a->bearer_env && !a->auth_none &&
        a->headers.n == 0) {
        static const char *const words[] = {"none", "oauth", "bearer"};
        fprintf(stderr,
                "How does it authenticate?\n"
                "  1) none    no credentials needed\n"
                "  2) oauth   sign in with the browser (once: mcp-auth %s)\n"
                "  3) bearer  a token taken from an environment variable\n",
                a->name);
        r = ask_choice("Choose 1-3 [1]: ", words, 3, 0, &k);
        if (r < 0)
            return r;
        a->oauth = k == 1;
        if (k == 2) {
            char def[80], prompt[160];
            default_token_env(a->name, def, sizeof(def));
            (void)snprintf(prompt, sizeof(prompt),
                           "Environment variable that holds the token [%s]: ", def);
            while (!a->bearer_env) {
                r = ask_default(prompt, def, &answer);
                if (r < 0)
                    return r;
                if (name_is_valid(answer)) {
                    a->bearer_env = answer;
                    answer = NULL;
                } else
                    fprintf(stderr, "a variable name is letters, digits and '_', not starting "
                                    "with a digit\n");
                free(answer);
                answer = NULL;
            }
        }
    }

    if (a->scope == SCOPE_NONE) {
        static const char *const words[] = {"user", "project"};
        fprintf(stderr,
                "Where should it be saved?\n"
                "  1) user     %s (in every project)\n"
                "  2) project  %s (in this directory only; can be shared with the repository)\n",
                user_disp, project_disp);
        r = ask_choice("Choose 1-2 [1]: ", words, 2, 0, &k);
        if (r < 0)
            return r;
        a->scope = k == 0 ? SCOPE_USER : SCOPE_PROJECT;
    }
    return 0;
}

/* ---- add: the entry ---------------------------------------------------------------------- */

static int build_entry(const struct add_args *a, struct json_object **ret)
{
    struct json_object *o = json_object_new_object();
    bool oom = !o;

    if (a->transport != MCP_TRANSPORT_STDIO) {
        /* "type" as Claude Code writes it: it reads .mcp.json too, and wants it for URLs */
        jadd(&oom, o, "type", jstr(&oom, a->transport == MCP_TRANSPORT_SSE ? "sse" : "http"));
        jadd(&oom, o, "url", jstr(&oom, a->url));
        if (a->headers.n > 0)
            jadd(&oom, o, "headers", jpairs(&oom, a->headers.v, a->headers.n, ':'));
    } else {
        jadd(&oom, o, "command", jstr(&oom, a->command));
        if (a->args.n > 0)
            jadd(&oom, o, "args", jstrv(&oom, a->args.v));
        if (a->env.n > 0)
            jadd(&oom, o, "env", jpairs(&oom, a->env.v, a->env.n, '='));
        if (a->cwd)
            jadd(&oom, o, "cwd", jstr(&oom, a->cwd));
    }
    if (a->have_timeout) {
        struct json_object *t = json_object_new_int64(a->timeout_ms);
        oom |= !t;
        jadd(&oom, o, "timeout", t);
    }
    if (a->oauth)
        jadd(&oom, o, "auth", jstr(&oom, "oauth"));
    if (a->bearer_env)
        jadd(&oom, o, "bearerTokenEnv", jstr(&oom, a->bearer_env));
    if (oom) {
        json_object_put(o);
        return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* Checks the entry name in root as the bridge will read it: the loader validates the whole
 * document as if it were the file display. An invalid entry: -EINVAL with the loader's
 * reason. Variables that are not set now do not make it invalid (they may be set where the
 * bridge runs): their names come back in *ret_missing ("A, B"), or NULL. */
static int check_entry(struct json_object *root, const char *name, const char *display,
                       char **ret_missing, struct err *e)
{
    struct mcp_config *c = NULL;
    struct err le = ERR_INIT;
    struct buf m;
    int r;

    buf_init(&m, 64 * 1024);
    r = server_config_load_object(root, display, NULL, &c, &le);
    if (r < 0) {
        r = err_set(e, r, "cannot check the entry: %s", err_msg(&le));
        goto out;
    }
    const struct mcp_server *s = mcp_config_find(c, name);
    if (!s) {
        r = err_set(e, -EIO, "cannot check the entry: the loader does not see '%s'", name);
        goto out;
    }
    if (s->error && !s->missing_vars) {
        r = err_set(e, -EINVAL, "%s", s->error);
        goto out;
    }
    for (size_t i = 0; s->missing_vars && s->missing_vars[i]; i++) {
        r = buf_printf(&m, "%s%s", i ? ", " : "", s->missing_vars[i]);
        if (r < 0) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }
    *ret_missing = NULL;
    if (m.len) {
        *ret_missing = buf_detach(&m);
        if (!*ret_missing) {
            r = err_set(e, -ENOMEM, "out of memory");
            goto out;
        }
    }
    r = 0;
out:
    mcp_config_free(c);
    buf_release(&m);
    return r;
}

/* The file a scope means: user: --config, else ~/.pi/agent/mcp.json; project: ./.mcp.json.
 * Absolute. Caller frees. */
static int scope_path(enum scope scope, const struct args_globals *g, char **ret, struct err *e)
{
    if (scope == SCOPE_PROJECT)
        return absolute_path(".mcp.json", ret, e);
    if (g->config)
        return absolute_path(g->config, ret, e);
    return path_agent_file("mcp.json", ret, e);
}

static int parse_scope(struct log *log, const char *cmd, const char *s, int *ret)
{
    if (strcmp(s, "user") == 0)
        *ret = SCOPE_USER;
    else if (strcmp(s, "project") == 0)
        *ret = SCOPE_PROJECT;
    else
        return usage_error(log, cmd, "--scope is 'user' or 'project', not '%s'", s);
    return 0;
}

static const char add_help[] =
    "usage: mcp-bridge add [NAME] [OPTIONS]\n"
    "       mcp-bridge add NAME --url URL [--header 'Name: value']...\n"
    "                      [--oauth | --bearer-env VAR | --no-auth] [--type http|sse]\n"
    "                      [--timeout D] [--scope user|project] [--force]\n"
    "       mcp-bridge add NAME --command CMD [--arg A]... [--env K=V]... [--cwd DIR]\n"
    "                      [--timeout D] [--scope user|project] [--force]\n"
    "\n"
    "Add an MCP server to a configuration file. On a terminal, whatever the options do not say\n"
    "is asked step by step: the transport, the URL or command line, the name (suggested from\n"
    "the URL's host or the command's package), how it authenticates and where it is saved.\n"
    "The entry is checked as the bridge will read it before anything is written; the file is\n"
    "replaced atomically and keeps every other entry and key as it was.\n"
    "\n"
    "  --url URL          an HTTP server (Streamable HTTP, or the older SSE with --type sse)\n"
    "  --header 'N: V'    a header sent with every request; V may use ${VAR}, read from the\n"
    "                     environment when the bridge connects (never write a token here)\n"
    "  --oauth            the server uses OAuth: sign in once with 'mcp-auth NAME'\n"
    "  --bearer-env VAR   send 'Authorization: Bearer <value of VAR>'\n"
    "  --no-auth          no credentials (do not ask)\n"
    "  --command CMD      a stdio server: the program to start (no shell)\n"
    "  --arg A            one argument for CMD (repeat for each)\n"
    "  --env K=V          an environment variable for CMD; V may use ${VAR}\n"
    "  --cwd DIR          the directory CMD runs in\n"
    "  --timeout D        the request timeout for this server (e.g. 30s; default 60s)\n"
    "  --scope S          user: ~/.pi/agent/mcp.json, or the --config file (default)\n"
    "                     project: .mcp.json in the working directory\n"
    "  --force            replace an entry of the same name in that file\n"
    "\n"
    "Without a terminal, NAME and --url or --command are required.\n"
    "\n"
    "exit status: 0 added, 1 the file could not be written, 2 usage error, 3 the entry is\n"
    "invalid, already exists (without --force) or the file cannot be changed, 130 cancelled\n"
    "\n"
    "examples:\n"
    "  mcp-bridge add                                          # guided\n"
    "  mcp-bridge add github --url https://api.githubcopilot.com/mcp/ --bearer-env GITHUB_TOKEN\n"
    "  mcp-bridge add linear --url https://mcp.linear.app/mcp --oauth\n"
    "  mcp-bridge add internal --url 'https://mcp.corp.example/${TEAM}' \\\n"
    "      --header 'X-Api-Key: ${CORP_API_KEY}' --scope project\n"
    "  mcp-bridge add everything --command npx --arg -y \\\n"
    "      --arg @modelcontextprotocol/server-everything\n"
    "  mcp-bridge add fs --command mcp-server-filesystem --arg ~/src --env LOG_LEVEL=info\n";

int cmd_add(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    enum {
        OPT_URL = 256,
        OPT_COMMAND,
        OPT_ARG,
        OPT_ENV,
        OPT_CWD,
        OPT_HEADER,
        OPT_OAUTH,
        OPT_BEARER,
        OPT_NO_AUTH,
        OPT_TIMEOUT,
        OPT_SCOPE,
        OPT_FORCE,
        OPT_TYPE,
    };
    static const struct option opts[] = {
        {"url", required_argument, NULL, OPT_URL},
        {"command", required_argument, NULL, OPT_COMMAND},
        {"arg", required_argument, NULL, OPT_ARG},
        {"env", required_argument, NULL, OPT_ENV},
        {"cwd", required_argument, NULL, OPT_CWD},
        {"header", required_argument, NULL, OPT_HEADER},
        {"oauth", no_argument, NULL, OPT_OAUTH},
        {"bearer-env", required_argument, NULL, OPT_BEARER},
        {"no-auth", no_argument, NULL, OPT_NO_AUTH},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"scope", required_argument, NULL, OPT_SCOPE},
        {"force", no_argument, NULL, OPT_FORCE},
        {"type", required_argument, NULL, OPT_TYPE},
        {0},
    };
    struct add_args a = {.transport = -1, .type_flag = -1, .scope = SCOPE_NONE};
    struct cfg_file f = {.lock_fd = -1};
    struct json_object *entry = NULL;
    struct err e = ERR_INIT;
    char *user_path = NULL, *project_path = NULL, *user_disp = NULL, *project_disp = NULL;
    char *missing = NULL;
    bool guided_mode = false;
    int opt, r = 0, status = BRIDGE_EXIT_USAGE;

    if (args_wants_help(argc, argv)) {
        fputs(add_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_URL:
            r = set_once(log, "--url", &a.url, optarg);
            break;
        case OPT_COMMAND:
            r = set_once(log, "--command", &a.command, optarg);
            if (r >= 0 && !optarg[strspn(optarg, " \t")]) {
                log_error(log, "--command is blank: name the program to start");
                r = -EINVAL;
            }
            break;
        case OPT_ARG:
            r = strv_add(&a.args, optarg);
            break;
        case OPT_ENV: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                log_error(log, "--env takes K=V, e.g. --env API_KEY='${API_KEY}' (see "
                               "'mcp-bridge add --help')");
                r = -EINVAL;
            } else {
                r = strv_add(&a.env, optarg);
            }
            break;
        }
        case OPT_CWD:
            r = set_once(log, "--cwd", &a.cwd, optarg);
            break;
        case OPT_HEADER:
            r = parse_header_opt(log, optarg, &a.headers);
            break;
        case OPT_OAUTH:
            a.oauth = true;
            break;
        case OPT_BEARER:
            r = set_once(log, "--bearer-env", &a.bearer_env, optarg);
            if (r >= 0 && !name_is_valid(optarg)) {
                log_error(log,
                          "--bearer-env takes the name of an environment variable (letters, "
                          "digits and '_'), not '%s'",
                          optarg);
                r = -EINVAL;
            }
            break;
        case OPT_NO_AUTH:
            a.auth_none = true;
            break;
        case OPT_TIMEOUT:
            if (duration_parse(optarg, &a.timeout_ms) < 0 || a.timeout_ms <= 0) {
                log_error(log, "--timeout: '%s' is not a duration above zero (e.g. 30s, 2m)",
                          optarg);
                r = -EINVAL;
            }
            a.have_timeout = true;
            break;
        case OPT_SCOPE:
            if (parse_scope(log, "add", optarg, &a.scope) != 0)
                goto out;
            break;
        case OPT_FORCE:
            a.force = true;
            break;
        case OPT_TYPE:
            if (strcmp(optarg, "http") == 0)
                a.type_flag = MCP_TRANSPORT_HTTP;
            else if (strcmp(optarg, "sse") == 0)
                a.type_flag = MCP_TRANSPORT_SSE;
            else if (strcmp(optarg, "stdio") == 0)
                a.type_flag = MCP_TRANSPORT_STDIO;
            else {
                status =
                    usage_error(log, "add", "--type is 'http', 'sse' or 'stdio', not '%s'", optarg);
                goto out;
            }
            break;
        default:
            (void)usage_error(log, "add", "unknown option");
            goto out;
        }
        if (r == -ENOMEM) {
            log_error(log, "out of memory");
            status = BRIDGE_EXIT_FAILED;
            goto out;
        }
        if (r < 0)
            goto out;
    }
    if (argc - optind > 1) {
        status = usage_error(log, "add", "add takes one NAME, and options");
        goto out;
    }
    if (argc - optind == 1) {
        if (!add_name_ok(argv[optind])) {
            status = usage_error(log, "add", "'%s' is not a usable name: %s", argv[optind],
                                 add_name_rule);
            goto out;
        }
        a.name = strdup(argv[optind]);
        if (!a.name) {
            status = BRIDGE_EXIT_FAILED;
            goto out;
        }
    }

    /* which transport the options point at, and whether they agree */
    bool http_opts = a.url || a.headers.n || a.oauth || a.bearer_env || a.auth_none;
    bool stdio_opts = a.command || a.args.n || a.env.n || a.cwd;
    if (a.url && a.command) {
        status = usage_error(log, "add",
                             "give --url (an HTTP server) or --command (a stdio server), not both");
        goto out;
    }
    if (http_opts && stdio_opts) {
        status = usage_error(log, "add",
                             "--header, --oauth, --bearer-env and --no-auth go with --url; --arg, "
                             "--env and --cwd with --command");
        goto out;
    }
    if ((a.oauth != 0) + (a.bearer_env != NULL) + (a.auth_none != 0) > 1) {
        status = usage_error(log, "add", "choose one of --oauth, --bearer-env and --no-auth");
        goto out;
    }
    if (a.type_flag >= 0 && ((a.type_flag == MCP_TRANSPORT_STDIO && http_opts) ||
                             (a.type_flag != MCP_TRANSPORT_STDIO && stdio_opts))) {
        status = usage_error(log, "add", "--type %s does not go with %s",
                             mcp_transport_name((enum mcp_transport)a.type_flag),
                             http_opts ? "--url" : "--command");
        goto out;
    }
    if (a.type_flag >= 0)
        a.transport = a.type_flag;
    else if (http_opts)
        a.transport = MCP_TRANSPORT_HTTP;
    else if (stdio_opts)
        a.transport = MCP_TRANSPORT_STDIO;

    r = scope_path(SCOPE_USER, g, &user_path, &e);
    if (r >= 0)
        r = scope_path(SCOPE_PROJECT, g, &project_path, &e);
    if (r < 0) {
        log_error(log, "%s", err_msg(&e));
        status = BRIDGE_EXIT_CONFIG;
        goto out;
    }
    user_disp = path_display(user_path);
    project_disp = path_display(project_path);
    if (!user_disp || !project_disp) {
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }

    if (!a.name || !(a.url || a.command)) {
        if (!tty_interactive()) {
            char suggestion[SUGGEST_MAX] = "";
            if (a.url)
                suggest_from_url(a.url, suggestion);
            else if (a.command)
                suggest_from_command(a.command, a.args.v, suggestion);
            if (a.url || a.command)
                status = usage_error(log, "add",
                                     "add needs a NAME for the server, e.g. "
                                     "'mcp-bridge add %s %s ...'",
                                     add_name_ok(suggestion) ? suggestion : "NAME",
                                     a.url ? "--url" : "--command");
            else
                status = usage_error(log, "add",
                                     "add needs NAME and --url URL or --command CMD; on a "
                                     "terminal it asks for them");
            goto out;
        }
        guided_mode = true;
        r = guided(&a, user_disp, project_disp);
        if (r < 0) {
            if (r == -ECANCELED) {
                fprintf(stderr, "\ncancelled; nothing was changed\n");
                status = EXIT_CANCELLED;
            } else {
                log_error(log, "cannot ask: %s", strerror(-r));
                status = BRIDGE_EXIT_FAILED;
            }
            goto out;
        }
    }
    if (a.scope == SCOPE_NONE)
        a.scope = SCOPE_USER;

    /* a credential written out in the file: say so (not refused: it may be meant) */
    const char *disp = a.scope == SCOPE_USER ? user_disp : project_disp;
    for (size_t i = 0; i < a.headers.n; i++) {
        const char *v;
        char hname[128];
        (void)snprintf(hname, sizeof(hname), "%.*s", (int)pair_split(a.headers.v[i], ':', &v),
                       a.headers.v[i]);
        const char *scheme = strncasecmp(v, "Bearer ", 7) == 0  ? "Bearer "
                             : strncasecmp(v, "Basic ", 6) == 0 ? "Basic "
                                                                : "";
        if (looks_secret(hname, v))
            log_warn(log,
                     "the header '%s' looks like a credential written out: it is stored in clear "
                     "in '%s'; write a variable instead, e.g. --header '%s: %s${TOKEN_VAR}'%s",
                     hname, disp, hname, scheme,
                     *scheme == 'B' && scheme[1] == 'e' ? ", or use --bearer-env or --oauth" : "");
    }
    for (size_t i = 0; i < a.env.n; i++) {
        const char *v;
        char ename[128];
        (void)snprintf(ename, sizeof(ename), "%.*s", (int)pair_split(a.env.v[i], '=', &v),
                       a.env.v[i]);
        if (looks_secret(ename, v))
            log_warn(log,
                     "the value of %s looks like a credential written out: it is stored in clear "
                     "in '%s'; write ${%s} instead and set %s where the bridge runs",
                     ename, disp, ename, ename);
    }

    r = build_entry(&a, &entry);
    if (r < 0) {
        log_error(log, "out of memory");
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }

    const char *path = a.scope == SCOPE_USER ? user_path : project_path;
    /* asked before the lock is taken: nobody waits on a person */
    if (guided_mode && !a.force) {
        struct json_object *doc = NULL;
        if (json_read_file(path, CONFIG_FILE_MAX, 0, &doc, NULL) >= 0 && doc_defines(doc, a.name)) {
            char prompt[512];
            bool yes = false;
            (void)snprintf(prompt, sizeof(prompt),
                           "'%s' is already in '%s': replace it? [y/N]: ", a.name, disp);
            r = ask_yes_no(prompt, &yes);
            json_object_put(doc);
            if (r == -ECANCELED || (r >= 0 && !yes)) {
                fprintf(stderr, "%snothing was changed\n", r < 0 ? "\ncancelled; " : "");
                status = r < 0 ? EXIT_CANCELLED : BRIDGE_EXIT_CONFIG;
                goto out;
            }
            if (r < 0) {
                log_error(log, "cannot ask: %s", strerror(-r));
                status = BRIDGE_EXIT_FAILED;
                goto out;
            }
            a.force = true;
        } else {
            json_object_put(doc);
        }
    }

    status = BRIDGE_EXIT_CONFIG;
    r = cfg_file_open(&f, path, a.scope == SCOPE_USER, &e);
    if (r < 0) {
        status = open_failed(log, r, &e);
        goto out;
    }
    struct json_object *ms = f.mcp_servers, *sv = f.servers;
    if ((has_key(ms, a.name) || has_key(sv, a.name)) && !a.force) {
        log_error(log,
                  "'%s' is already in '%s': add --force to replace it, or remove it first with "
                  "'mcp-bridge remove %s' (nothing was changed)",
                  a.name, f.display, a.name);
        goto out;
    }
    /* "mcpServers" unless the file is in the older format; an entry being replaced goes away
     * from the other root key too, or it would linger there */
    const char *key = ms || !sv ? "mcpServers" : "servers";
    if (!ms && !sv) {
        ms = json_object_new_object();
        if (!ms || json_object_object_add(f.root, "mcpServers", ms) < 0) {
            json_object_put(ms);
            log_error(log, "out of memory");
            status = BRIDGE_EXIT_FAILED;
            goto out;
        }
        f.mcp_servers = ms;
    }
    struct json_object *target = strcmp(key, "mcpServers") == 0 ? ms : sv;
    struct json_object *other = target == ms ? sv : ms;
    if (has_key(other, a.name))
        json_object_object_del(other, a.name);
    if (json_object_object_add(target, a.name, json_object_get(entry)) < 0) {
        json_object_put(entry);
        log_error(log, "out of memory");
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }

    r = check_entry(f.root, a.name, f.display, &missing, &e);
    if (r == -EINVAL) {
        log_error(log, "%s (nothing was changed)", err_msg(&e));
        goto out;
    }
    if (r < 0) {
        log_error(log, "%s (nothing was changed)", err_msg(&e));
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }

    r = cfg_file_write(&f, a.scope == SCOPE_USER ? 0600 : 0644, &e);
    if (r < 0) {
        log_error(log, "%s (the file is as it was)", err_msg(&e));
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    status = BRIDGE_EXIT_OK;

    /* quiet when scripted; a person being guided gets a confirmation and what comes next */
    log_msg(log, guided_mode ? LOG_ERROR : LOG_INFO, "added '%s' to '%s'", a.name, f.display);
    if (missing)
        log_warn(log,
                 "'%s' uses %s, not set now: it works once %s set where the bridge runs (in "
                 "the environment, or with 'secrets configure')",
                 a.name, missing, strchr(missing, ',') ? "they are" : "it is");
    {
        /* a higher layer with the same name would hide the new entry */
        struct mcp_config *c = NULL;
        char *cwd = getcwd(NULL, 0);
        struct mcp_config_opts o = {.config_path = g->config, .cwd = cwd};
        if (cwd && mcp_config_load(&o, &c, NULL) >= 0) {
            const struct mcp_server *s = mcp_config_find(c, a.name);
            if (s && strcmp(s->source, f.display) != 0)
                log_warn(log, "'%s' is also defined in '%s', which takes precedence", a.name,
                         s->source);
        }
        mcp_config_free(c);
        free(cwd);
    }
    if (guided_mode) {
        if (a.oauth)
            fprintf(stderr, "sign in once with: mcp-auth %s\n", a.name);
        if (a.bearer_env)
            fprintf(stderr,
                    "the token is read from %s when the bridge connects (set it, or: secrets "
                    "configure %s)\n",
                    a.bearer_env, a.bearer_env);
        fprintf(stderr, "try it with: mcp-bridge test %s\n", a.name);
    }
out:
    json_object_put(entry);
    cfg_file_release(&f);
    add_args_release(&a);
    free(user_path);
    free(project_path);
    free(user_disp);
    free(project_disp);
    free(missing);
    return status;
}

/* ---- remove ------------------------------------------------------------------------------ */

static const char remove_help[] =
    "usage: mcp-bridge remove NAME [--scope user|project]\n"
    "\n"
    "Remove the server NAME from the file that defines it: the highest layer that has it\n"
    "(the one 'mcp-bridge list' shows), or with --scope the user file (~/.pi/agent/mcp.json,\n"
    "or --config) or the project files (.pi/mcp.json, then .mcp.json). The file is replaced\n"
    "atomically and keeps every other entry and key. When a lower layer also defines NAME,\n"
    "that one applies afterwards, and you are told.\n"
    "\n"
    "exit status: 0 removed, 1 the file could not be written, 2 usage error, 3 not found (the\n"
    "files searched are named) or the file cannot be changed\n"
    "\n"
    "examples:\n"
    "  mcp-bridge remove github\n"
    "  mcp-bridge remove everything --scope project\n";

/* cli_load_config() without its warnings about files (at the default level): remove reports
 * the files it could not search itself, once, as not searched. */
static struct mcp_config *load_config_quietly(const struct args_globals *g, struct log *log)
{
    enum log_level level = log_get_level(log);
    if (level == LOG_WARN)
        log_set_level(log, LOG_ERROR);
    struct mcp_config *c = cli_load_config(g, log);
    log_set_level(log, level);
    return c;
}

/* Whether the document at path defines name (under either root key). */
static bool file_defines(const char *path, const char *name, struct log *log)
{
    struct json_object *doc = NULL;
    struct err e = ERR_INIT;
    int r = json_read_file(path, CONFIG_FILE_MAX, 0, &doc, &e);
    if (r < 0) {
        if (r != -ENOENT)
            log_warn(log, "%s: not searched", err_msg(&e));
        return false;
    }
    bool found = doc_defines(doc, name);
    json_object_put(doc);
    return found;
}

int cmd_remove(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    static const struct option opts[] = {{"scope", required_argument, NULL, 's'}, {0}};
    struct mcp_config *c = NULL;
    struct cfg_file f = {.lock_fd = -1};
    struct strv cands = {0};
    struct err e = ERR_INIT;
    struct buf searched;
    const char *found = NULL;
    char *p = NULL;
    int opt, r, scope = SCOPE_NONE, status = BRIDGE_EXIT_USAGE;

    buf_init(&searched, 16 * 1024);
    if (args_wants_help(argc, argv)) {
        fputs(remove_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 's') {
            (void)usage_error(log, "remove", "unknown option");
            goto out;
        }
        if (parse_scope(log, "remove", optarg, &scope) != 0)
            goto out;
    }
    if (argc - optind != 1) {
        status = usage_error(log, "remove", "remove takes exactly one NAME");
        goto out;
    }
    const char *name = argv[optind];

    /* the files to search, highest priority first */
    status = BRIDGE_EXIT_FAILED;
    if (scope == SCOPE_USER) {
        r = scope_path(SCOPE_USER, g, &p, &e);
        if (r >= 0)
            r = strv_add(&cands, p);
    } else if (scope == SCOPE_PROJECT) {
        r = absolute_path(".pi/mcp.json", &p, &e);
        if (r >= 0)
            r = strv_add(&cands, p);
        free(p);
        p = NULL;
        if (r >= 0)
            r = absolute_path(".mcp.json", &p, &e);
        if (r >= 0)
            r = strv_add(&cands, p);
    } else {
        /* a file that cannot be read is reported below, as not searched */
        c = load_config_quietly(g, log);
        if (!c) {
            status = BRIDGE_EXIT_CONFIG;
            goto out;
        }
        r = 0;
        for (size_t i = mcp_config_file_count(c); r >= 0 && i-- > 0;)
            r = strv_add(&cands, mcp_config_file_at(c, i, NULL));
    }
    if (r < 0) {
        log_error(log, "%s", e.msg[0] ? err_msg(&e) : strerror(-r));
        status = r == -ENOMEM ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_CONFIG;
        goto out;
    }

    for (size_t i = 0; i < cands.n && !found; i++) {
        char *d = path_display(cands.v[i]);
        if (!d || buf_printf(&searched, "%s'%s'", searched.len ? ", " : "", d) < 0) {
            free(d);
            log_error(log, "out of memory");
            goto out;
        }
        if (file_defines(cands.v[i], name, log)) {
            found = cands.v[i];
            /* the bundled configuration belongs to the installation, not to the user */
            const struct mcp_server *s = c ? mcp_config_find(c, name) : NULL;
            if (s && s->layer == MCP_LAYER_BUNDLED && strcmp(s->source, d) == 0) {
                log_error(log,
                          "'%s' comes with the bridge ('%s') and cannot be removed; an entry of "
                          "the same name in your own file replaces it",
                          name, d);
                free(d);
                status = BRIDGE_EXIT_CONFIG;
                goto out;
            }
        }
        free(d);
    }
    if (!found) {
        log_error(log, "no server named '%s' in %s (nothing was changed)", name,
                  searched.len ? buf_str(&searched) : "any configuration file");
        status = BRIDGE_EXIT_CONFIG;
        goto out;
    }

    status = BRIDGE_EXIT_CONFIG;
    r = cfg_file_open(&f, found, false, &e);
    if (r < 0) {
        status = open_failed(log, r, &e);
        goto out;
    }
    struct json_object *ms = f.mcp_servers, *sv = f.servers;
    if (!has_key(ms, name) && !has_key(sv, name)) {
        /* changed between the search and the lock */
        log_error(log, "no server named '%s' in '%s' any more (nothing was changed)", name,
                  f.display);
        goto out;
    }
    if (has_key(ms, name))
        json_object_object_del(ms, name);
    if (has_key(sv, name))
        json_object_object_del(sv, name);
    r = cfg_file_write(&f, 0600, &e);
    if (r < 0) {
        log_error(log, "%s (the file is as it was)", err_msg(&e));
        status = BRIDGE_EXIT_FAILED;
        goto out;
    }
    status = BRIDGE_EXIT_OK;
    log_info(log, "removed '%s' from '%s'", name, f.display);

    /* a lower layer may define the same name: it applies now */
    mcp_config_free(c);
    c = load_config_quietly(g, log);
    const struct mcp_server *s = c ? mcp_config_find(c, name) : NULL;
    if (s)
        log_warn(log, "'%s' is still defined in '%s', which applies now", name, s->source);
out:
    mcp_config_free(c);
    cfg_file_release(&f);
    strv_release(&cands);
    buf_release(&searched);
    free(p);
    return status;
}
