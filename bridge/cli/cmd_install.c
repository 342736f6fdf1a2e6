/* cmd_install.c - mcp-bridge install AGENT and uninstall AGENT: the bridge registered as the
 * agent's MCP server, the agent's own servers moved behind it, and back.
 *
 * Install adds the entry that runs the bridge to the agent's configuration and moves every other
 * server of that configuration into the bridge's file (the user layer, ~/.pi/agent/mcp.json or
 * --config; pi's own ~/.pi/agent/bridge.json; .pi/mcp.json for --scope project), so that each
 * server is started once, by the bridge. Claude Code is changed through its own CLI when it is
 * installed; every other agent's file is edited as text (cmd_install_text.c), under the lock of
 * its directory, replaced atomically, with a backup of the original beside it
 * (FILE.before-mcp-bridge). Uninstall gives the file back byte for byte from the backup when
 * nothing else changed in it since, else removes the bridge's entry and puts back the moved
 * servers alone, keeping later edits; the moved servers then leave the bridge's file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/mcp_import.h"
#include "credkit/mcp_toml.h"
#include "credkit/path.h"
#include "credkit/strv.h"
#include "credkit/suggest.h"

#include "cli/cli.h"
#include "cli/cmd_cfgfile.h"
#include "cli/cmd_config.h"
#include "cli/cmd_install_int.h"

static const char install_help[] =
    "usage: mcp-bridge install AGENT [--scope user|project] [--dry-run] [--json]\n"
    "       mcp-bridge uninstall AGENT [--scope user|project] [--dry-run] [--json]\n"
    "\n"
    "Register the bridge as the MCP server of AGENT: claude-code, cursor, vscode, codex,\n"
    "claude-desktop or pi. The servers already in that agent's configuration move into the\n"
    "bridge's file (~/.pi/agent/mcp.json, or --config; pi: ~/.pi/agent/bridge.json; --scope\n"
    "project: .pi/mcp.json), so that each runs once, behind the bridge. Claude Code is changed\n"
    "with 'claude mcp' when it is installed; the other files are edited in place (comments and\n"
    "other settings kept), replaced atomically, with a backup beside them "
    "(FILE.before-mcp-bridge).\n"
    "Running it again changes nothing. uninstall removes the bridge's entry and puts the moved\n"
    "servers back: the file as it was, byte for byte, when nothing else changed in it.\n"
    "\n"
    "  --scope user      the agent's user file (the default)\n"
    "  --scope project   the agent's file in the working directory (claude-code: .mcp.json,\n"
    "                    cursor: .cursor/mcp.json, vscode: .vscode/mcp.json)\n"
    "  --dry-run         show what would change, write nothing\n"
    "  --json            the changes as JSON, for scripts\n"
    "\n"
    "files: claude-code ~/.claude.json (claude mcp add --scope user), cursor ~/.cursor/mcp.json,\n"
    "vscode ~/.config/Code/User/mcp.json, codex ~/.codex/config.toml, claude-desktop\n"
    "~/.config/Claude/claude_desktop_config.json, pi ~/.pi/agent/mcp.json.\n"
    "\n"
    "exit status: 0 done (or nothing to do), 1 a file could not be written or the agent's CLI\n"
    "failed, 2 usage error, 3 a file cannot be changed safely or a server is in both files\n"
    "(nothing was changed)\n"
    "\n"
    "examples:\n"
    "  mcp-bridge install claude-code\n"
    "  mcp-bridge install cursor --dry-run\n"
    "  mcp-bridge install vscode --scope project\n"
    "  mcp-bridge uninstall codex\n";

static const struct agent agents[] = {
    {"claude-code", ".claude.json", NULL, ".mcp.json", "mcpServers", FMT_JSON, NULL,
     AGENT_TYPE_STDIO | AGENT_CLI},
    {"cursor", ".cursor/mcp.json", NULL, ".cursor/mcp.json", "mcpServers", FMT_JSONC, "cursor", 0},
    {"vscode", NULL, "Code/User/mcp.json", ".vscode/mcp.json", "servers", FMT_JSONC, "vscode",
     AGENT_TYPE_STDIO},
    {"codex", ".codex/config.toml", NULL, NULL, "mcp_servers", FMT_TOML, "codex", 0},
    {"claude-desktop", NULL, "Claude/claude_desktop_config.json", NULL, "mcpServers", FMT_JSON,
     "claude-desktop", 0},
    {"pi", NULL, NULL, NULL, "mcpServers", FMT_JSON, NULL, AGENT_PI},
};

/* ---- the report -------------------------------------------------------------------------- */

int inst_change(struct inst *in, const char *action, const char *server, const char *file,
                const char *other)
{
    bool oom = false;
    struct json_object *c = json_object_new_object();
    cfg_jadd(&oom, c, "action", cfg_jstr(&oom, action));
    if (server)
        cfg_jadd(&oom, c, "server", cfg_jstr(&oom, server));
    cfg_jadd(&oom, c, "file", cfg_jstr(&oom, file));
    if (other)
        cfg_jadd(&oom, c, strcmp(action, "put_back") == 0 ? "from" : "to", cfg_jstr(&oom, other));
    cfg_jpush(&oom, in->changes, c);
    return oom ? -ENOMEM : 0;
}

int inst_note(struct inst *in, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    bool oom = false;
    cfg_jpush(&oom, in->notes, cfg_jstr(&oom, s));
    free(s);
    return oom ? -ENOMEM : 0;
}

static const char *jget(struct json_object *o, const char *k)
{
    const char *s = json_get_string(o, k);
    return s ? s : "";
}

static void print_text(const struct inst *in)
{
    size_t n = json_object_array_length(in->changes);
    const char *verb = in->uninstall ? "uninstall" : "install";
    if (n == 0)
        printf("%s %s: nothing to change in '%s'%s\n", verb, in->a->name, in->file_disp,
               in->uninstall ? " (the bridge is not registered there)" : " (already installed)");
    else
        printf("%s %s (%s)%s:\n", verb, in->a->name, in->project ? "project" : "user",
               in->dry_run ? ", dry run: nothing was written; it would do this" : "");
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(in->changes, i);
        const char *a = jget(c, "action"), *s = jget(c, "server"), *f = jget(c, "file");
        if (strcmp(a, "added") == 0)
            printf("  added '%s' to '%s'\n", s, f);
        else if (strcmp(a, "removed") == 0)
            printf("  removed '%s' from '%s'\n", s, f);
        else if (strcmp(a, "moved") == 0)
            printf("  moved '%s' from '%s' to '%s'\n", s, f, jget(c, "to"));
        else if (strcmp(a, "put_back") == 0)
            printf("  put back '%s' into '%s' from '%s'\n", s, f, jget(c, "from"));
        else if (strcmp(a, "restored") == 0)
            printf("  restored '%s' from its backup '%s'\n", f, jget(c, "to"));
        else if (strcmp(a, "backup") == 0)
            printf("  backup of '%s': '%s'\n", f, jget(c, "to"));
        else if (strcmp(a, "record") == 0)
            printf("  the moved servers recorded in '%s'\n", f);
    }
    for (size_t i = 0; i < json_object_array_length(in->notes); i++)
        printf("note: %s\n", json_object_get_string(json_object_array_get_idx(in->notes, i)));
}

static int print_report(const struct inst *in)
{
    if (!in->json) {
        print_text(in);
        return 0;
    }
    bool oom = false;
    struct json_object *o = json_object_new_object();
    cfg_jadd(&oom, o, "version", json_object_new_int(1));
    cfg_jadd(&oom, o, "command", cfg_jstr(&oom, in->uninstall ? "uninstall" : "install"));
    cfg_jadd(&oom, o, "agent", cfg_jstr(&oom, in->a->name));
    cfg_jadd(&oom, o, "scope", cfg_jstr(&oom, in->project ? "project" : "user"));
    cfg_jadd(&oom, o, "file", cfg_jstr(&oom, in->file));
    cfg_jadd(&oom, o, "bridge_file", cfg_jstr(&oom, in->dest));
    cfg_jadd(&oom, o, "dry_run", json_object_new_boolean(in->dry_run));
    cfg_jadd(&oom, o, "changed",
             json_object_new_boolean(json_object_array_length(in->changes) > 0));
    cfg_jadd(&oom, o, "changes", json_object_get(in->changes));
    cfg_jadd(&oom, o, "notes", json_object_get(in->notes));
    if (!oom)
        puts(json_object_to_json_string_ext(o, CFG_JSON_OUT_FLAGS));
    json_object_put(o);
    return oom ? -ENOMEM : 0;
}

/* ---- paths and the entry ----------------------------------------------------------------- */

static int abs_in(const char *dir, const char *rel, char **ret)
{
    *ret = path_join(dir, rel);
    return *ret ? 0 : -ENOMEM;
}

/* The agent's file of the scope. */
static int agent_file(const struct inst *in, const char *cwd, char **ret, struct err *e)
{
    const struct agent *a = in->a;
    char *home = NULL;
    int r;

    if (in->project)
        r = abs_in(cwd, a->project, ret);
    else if (a->flags & AGENT_PI)
        return path_agent_file("mcp.json", ret, e);
    else if ((r = path_home(&home)) < 0)
        return err_set(e, r, "cannot find the home directory: set HOME");
    else if (a->home_rel)
        r = abs_in(home, a->home_rel, ret);
    else {
        const char *xdg = getenv("XDG_CONFIG_HOME");
        char *base = xdg && xdg[0] == '/' ? strdup(xdg) : path_join(home, ".config");
        r = base ? abs_in(base, a->xdg_rel, ret) : -ENOMEM;
        free(base);
    }
    free(home);
    return r < 0 ? err_set(e, r, "out of memory") : 0;
}

/* The bridge's file the servers move to, and the entry's arguments. */
static int bridge_file(struct inst *in, const struct args_globals *g, const char *cwd,
                       struct err *e)
{
    int r;
    if (in->project)
        r = abs_in(cwd, ".pi/mcp.json", &in->dest) < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
    else if (g->config)
        r = cfg_absolute_path(g->config, &in->dest, e);
    else
        r = path_agent_file((in->a->flags & AGENT_PI) ? "bridge.json" : "mcp.json", &in->dest, e);
    if (r < 0)
        return r;
    r = strv_push(&in->args, "serve");
    /* pi-mcp-adapter names and proxies the tools itself (docs/bridge.md, "pi") */
    if (r >= 0 && (in->a->flags & AGENT_PI))
        r = strv_push(&in->args, "--agent") < 0 ? -ENOMEM : strv_push(&in->args, "pi");
    /* the bridge reads the user layer by default: only another file needs naming */
    if (r >= 0 && !in->project && (g->config || (in->a->flags & AGENT_PI)))
        r = strv_push(&in->args, "--config") < 0 ? -ENOMEM : strv_push(&in->args, in->dest);
    return r < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
}

/* pi's entry for the bridge, as pi-mcp-adapter reads it: the one place to align its keys. */
static struct json_object *pi_entry(bool *oom, const char *exe, char *const *args)
{
    struct json_object *o = json_object_new_object();
    cfg_jadd(oom, o, "command", cfg_jstr(oom, exe));
    cfg_jadd(oom, o, "args", cfg_jstrv(oom, args));
    /* the adapter's prefix would come on top of the server's: "bridge_everything_echo" */
    cfg_jadd(oom, o, "toolPrefix", cfg_jstr(oom, "none"));
    return o;
}

/* The entry that runs the bridge, in the agent's shape. Caller puts. */
static struct json_object *bridge_entry(const struct inst *in)
{
    bool oom = false;
    struct json_object *o;
    if (in->a->flags & AGENT_PI) {
        o = pi_entry(&oom, in->exe, in->args.v);
    } else {
        o = json_object_new_object();
        if (in->a->flags & AGENT_TYPE_STDIO)
            cfg_jadd(&oom, o, "type", cfg_jstr(&oom, "stdio"));
        cfg_jadd(&oom, o, "command", cfg_jstr(&oom, in->exe));
        cfg_jadd(&oom, o, "args", cfg_jstrv(&oom, in->args.v));
    }
    if (oom || !o) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* Whether v is our entry: this command with these arguments (other keys the agent adds, such
 * as Claude Code's "env": {}, do not count). */
static bool is_our_entry(const struct inst *in, struct json_object *v)
{
    struct json_object *args = json_get_array(v, "args");
    const char *cmd = json_get_string(v, "command");
    if (!cmd || strcmp(cmd, in->exe) != 0 || !args || json_object_array_length(args) != in->args.n)
        return false;
    for (size_t i = 0; i < in->args.n; i++) {
        struct json_object *s = json_object_array_get_idx(args, i);
        if (!json_object_is_type(s, json_type_string) ||
            strcmp(json_object_get_string(s), in->args.v[i]) != 0)
            return false;
    }
    return true;
}

/* ---- the agent's file as text ------------------------------------------------------------ */

int inst_servers_of_text(const struct inst *in, const struct buf *t, struct json_object **ret,
                         struct err *e)
{
    if (in->a->fmt != FMT_TOML)
        return itext_json_servers(t->data ? t->data : "", t->len, in->a->fmt == FMT_JSONC,
                                  in->a->key, ret, e);
    struct json_object *notes = NULL;
    int r = mcp_toml_read_servers(t->data ? t->data : "", t->len, ret, &notes, e);
    json_object_put(notes);
    return r;
}

int inst_text_remove(const struct inst *in, struct buf *t, const char *name, struct err *e)
{
    if (in->a->fmt == FMT_TOML) {
        int r = itext_toml_remove(t, name);
        return r < 0 ? err_set(e, r, "out of memory") : r;
    }
    return itext_json_remove(t, in->a->fmt == FMT_JSONC, in->a->key, name, e);
}

static int text_add_bridge(const struct inst *in, struct buf *t, struct err *e)
{
    if (in->a->fmt == FMT_TOML) {
        int r = itext_toml_add(t, ENTRY_NAME, in->exe, (const char *const *)in->args.v);
        return r < 0 ? err_set(e, r, "out of memory") : 0;
    }
    struct json_object *v = bridge_entry(in);
    if (!v)
        return err_set(e, -ENOMEM, "out of memory");
    int r = itext_json_add(t, in->a->fmt == FMT_JSONC, in->a->key, ENTRY_NAME, v, e);
    json_object_put(v);
    return r;
}

/* What install does to the text: the moved servers out, our entry in (in place of an older
 * entry of ours). The same function checks, at uninstall, whether the file is still exactly
 * what install made of the backup. */
int inst_transform(const struct inst *in, struct buf *t, char *const *moved, bool add_entry,
                   struct err *e)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && moved && moved[i]; i++)
        r = inst_text_remove(in, t, moved[i], e);
    if (r >= 0 && add_entry) {
        r = inst_text_remove(in, t, ENTRY_NAME, e);
        if (r >= 0)
            r = text_add_bridge(in, t, e);
    }
    return r < 0 ? r : 0;
}

int inst_read_text(const char *path, struct buf *t, bool *ret_exists, mode_t *ret_mode,
                   struct err *e)
{
    struct stat st;
    buf_init(t, AGENT_FILE_MAX);
    int r = file_read(path, 0, t, e);
    if (r == -ENOENT) {
        err_clear(e);
        *ret_exists = false;
        return 0;
    }
    *ret_exists = r >= 0;
    if (r >= 0 && ret_mode)
        *ret_mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : 0600;
    return r;
}

int inst_write_file(const struct inst *in, const char *data, size_t len, mode_t mode, struct err *e)
{
    struct stat st;
    char *target =
        lstat(in->file, &st) == 0 && S_ISLNK(st.st_mode) ? realpath(in->file, NULL) : NULL;
    int r = file_write_atomic(target ? target : in->file, data ? data : "", len, mode, e);
    free(target);
    return r;
}

/* ---- the bridge's file ------------------------------------------------------------------- */

struct json_object *inst_dest_entry(struct cfg_file *f, const char *name)
{
    struct json_object *doc = f ? cfg_file_doc(f) : NULL, *v = NULL;
    if (json_object_object_get_ex(json_get_object(doc, "mcpServers"), name, &v) ||
        json_object_object_get_ex(json_get_object(doc, "servers"), name, &v))
        return v;
    return NULL;
}

/* The import's translation of the server name of the agent's file (a new reference), NULL
 * when the import did not read it. */
static struct json_object *translated(const struct inst *in, const struct mcp_import *im,
                                      const char *name)
{
    for (size_t i = mcp_import_count(im); i-- > 0;) {
        const struct mcp_import_entry *ie = mcp_import_at(im, i);
        if (strcmp(ie->name, name) == 0 && strcmp(ie->path, in->file) == 0)
            return json_object_get(ie->entry);
    }
    return NULL;
}

/* The servers to move, {name: entry in the bridge's shape}, from servers (the agent's, as
 * read). A server that runs the bridge stays; so does one that cannot be moved as it is. */
static int plan_moves(struct inst *in, const struct buf *t, struct json_object *servers,
                      struct json_object **ret, struct err *e)
{
    struct mcp_import *im = NULL;
    struct json_object *out = json_object_new_object();
    char *cwd = getcwd(NULL, 0);
    int r = out && cwd ? 0 : err_set(e, -ENOMEM, "out of memory");

    if (r >= 0 && in->a->import)
        r = mcp_import_read(in->a->import, cwd, &im, e);
    json_object_object_foreach(servers, name, v)
    {
        if (r < 0)
            break;
        if (strcmp(name, ENTRY_NAME) == 0)
            continue;
        if (mcp_import_runs_bridge(v)) {
            r = inst_note(in, "'%s' in '%s' runs mcp-bridge already: it is left as it is", name,
                          in->file_disp);
            continue;
        }
        struct json_object *m = translated(in, im, name);
        if (!m && in->a->fmt != FMT_TOML)
            m = json_object_get(v);
        if (!m || (in->a->fmt == FMT_TOML && !itext_toml_has_table(t->data, t->len, name))) {
            r = inst_note(in,
                          "'%s' in '%s' is not moved: %s; it stays where it is, and the agent "
                          "starts it itself",
                          name, in->file_disp,
                          m ? "only a [mcp_servers.NAME] table can be moved"
                            : "the bridge cannot read it (see 'mcp-bridge list')");
            json_object_put(m);
            continue;
        }
        if (json_object_object_add(out, name, m) < 0)
            r = err_set(e, -ENOMEM, "out of memory");
    }
    free(cwd);
    mcp_import_free(im);
    if (r < 0) {
        json_object_put(out);
        return r;
    }
    *ret = out;
    return 0;
}

/* Checks the moved servers against the bridge's file: one it already holds as it is needs no
 * copy (dropped from *to_add), a different one of the same name stops everything. */
static int check_dest(struct inst *in, struct cfg_file *df, struct json_object *moves,
                      struct strv *to_add, struct err *e)
{
    json_object_object_foreach(moves, name, v)
    {
        struct json_object *d = inst_dest_entry(df, name);
        if (d && !json_object_equal(d, v))
            return err_set(e, -EEXIST,
                           "'%s' is in '%s' and, differently, in '%s': rename or remove one of "
                           "them, then run install again",
                           name, in->file_disp, in->dest_disp);
        if (d && inst_note(in,
                           "'%s' is in '%s' already, as it is: it is not copied, and uninstall "
                           "takes it out of there all the same",
                           name, in->dest_disp) < 0)
            return err_set(e, -ENOMEM, "out of memory");
        if (!d && strv_push(to_add, name) < 0)
            return err_set(e, -ENOMEM, "out of memory");
    }
    return 0;
}

/* Opens the bridge's file (locked): NULL in a dry run where it does not exist yet. */
static int open_dest(struct inst *in, struct cfg_file **ret, struct err *e)
{
    struct stat st;
    *ret = NULL;
    char *dir = path_dirname(in->dest);
    if (!dir)
        return err_set(e, -ENOMEM, "out of memory");
    bool missing = stat(dir, &st) < 0;
    free(dir);
    if (in->dry_run && missing)
        return 0;
    return cfg_file_open(in->dest, true, 0600, ret, e);
}

/* Locks the agent's directory, unless it is the bridge file's (locked already). */
static int lock_agent(struct inst *in, struct file_lock **ret, struct err *e)
{
    char *dir = path_dirname(in->file), *ddir = path_dirname(in->dest);
    struct stat st;
    int r = dir && ddir ? 0 : err_set(e, -ENOMEM, "out of memory");
    *ret = NULL;
    if (r >= 0 && strcmp(dir, ddir) != 0) {
        if (stat(dir, &st) < 0 && !in->dry_run && !in->uninstall)
            r = dir_ensure(dir, 0700, e);
        if (r >= 0 && stat(dir, &st) == 0)
            r = file_lock_dir(dir, LOCK_TIMEOUT_MS, "mcp-bridge install or uninstall", ret, e);
    }
    free(dir);
    free(ddir);
    return r;
}

/* ---- claude mcp -------------------------------------------------------------------------- */

static int run_claude(const char *const *argv, const char *input, struct err *e)
{
    const struct child_spec spec = {.argv = argv};
    const struct child_run_opts o = {
        .timeout_ms = CLI_TIMEOUT_MS, .stdin_data = input, .stdin_len = input ? strlen(input) : 0};
    struct child_result res;
    int r = child_run(&spec, &o, &res, e);
    if (r < 0)
        return r;
    if (res.exit_code != 0) {
        char tail[512];
        const char *s = buf_str(&res.err);
        size_t n = strcspn(s, "\n");
        (void)snprintf(tail, sizeof(tail), "%.*s", (int)(n < 400 ? n : 400), s);
        r = err_set(e, -EIO, "'claude mcp %s %s' failed (exit status %d)%s%s", argv[2], argv[5],
                    res.exit_code, tail[0] ? ": " : "", tail);
    }
    child_result_release(&res);
    return r;
}

int inst_claude_remove(const struct inst *in, const char *name, struct err *e)
{
    const char *argv[] = {in->claude, "mcp", "remove", "--scope", in->project ? "project" : "user",
                          name,       NULL};
    return run_claude(argv, NULL, e);
}

static int claude_add_bridge(const struct inst *in, struct err *e)
{
    const char *argv[16] = {in->claude, "mcp", "add",  "--scope", in->project ? "project" : "user",
                            ENTRY_NAME, "--",  in->exe};
    size_t k = 8;
    for (size_t i = 0; i < in->args.n && k < 15; i++)
        argv[k++] = in->args.v[i];
    return run_claude(argv, NULL, e);
}

int inst_claude_add_json(const struct inst *in, const char *name, struct json_object *v,
                         struct err *e)
{
    const char *argv[] = {
        in->claude, "mcp", "add-json", "--scope", in->project ? "project" : "user",
        name,       "-",   NULL};
    /* on stdin, not in argv: an entry's env and headers may hold secrets */
    return run_claude(argv, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), e);
}

/* ---- install ----------------------------------------------------------------------------- */

/* Our entry in servers: *ret_add whether it must be (re)written. -EEXIST when the name is taken
 * by a server that is not the bridge. */
static int check_entry(const struct inst *in, struct json_object *servers, bool *ret_add,
                       bool *ret_replace, struct err *e)
{
    struct json_object *cur = NULL;
    (void)json_object_object_get_ex(servers, ENTRY_NAME, &cur);
    if (cur && !mcp_import_runs_bridge(cur))
        return err_set(e, -EEXIST,
                       "'%s' already has a server named '%s' that does not run mcp-bridge: "
                       "rename it, then run install again",
                       in->file_disp, ENTRY_NAME);
    *ret_add = !cur || !is_our_entry(in, cur);
    *ret_replace = cur && *ret_add;
    return 0;
}

/* The changes install reports, the same for a dry run. */
static int report_install(struct inst *in, bool add, bool replace, const struct strv *moved,
                          bool backup)
{
    int r = replace ? inst_change(in, "removed", ENTRY_NAME, in->file_disp, NULL) : 0;
    if (r >= 0 && add)
        r = inst_change(in, "added", ENTRY_NAME, in->file_disp, NULL);
    for (size_t i = 0; r >= 0 && i < moved->n; i++)
        r = inst_change(in, "moved", moved->v[i], in->file_disp, in->dest_disp);
    if (r >= 0 && backup)
        r = inst_change(in, in->claude ? "record" : "backup", NULL,
                        in->claude ? in->side_disp : in->file_disp,
                        in->claude ? NULL : in->side_disp);
    if (r >= 0 && moved->n && in->project)
        r = inst_note(in,
                      "the moved servers are a project's: approve them with 'mcp-bridge trust'");
    return r;
}

/* Copies the moved servers into the bridge's file. */
static int dest_add(struct cfg_file *df, struct json_object *moves, const struct strv *to_add,
                    struct err *e)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < to_add->n; i++)
        r = cfg_file_put(df, to_add->v[i], json_object_object_get(moves, to_add->v[i]));
    if (r < 0)
        return err_set(e, r, "out of memory");
    return to_add->n ? cfg_file_commit(df, e) : 0;
}

/* Takes back what dest_add() wrote, after a later step failed (best effort: the step's error
 * is the one reported). */
static void dest_undo(struct cfg_file *df, const struct strv *to_add)
{
    struct err ignored = ERR_INIT;
    for (size_t i = 0; i < to_add->n; i++)
        cfg_file_delete(df, to_add->v[i]);
    if (to_add->n && cfg_file_commit(df, &ignored) < 0)
        return;
}

static int install_file(struct inst *in, struct cfg_file *df, struct err *e)
{
    struct buf t, nt;
    struct json_object *servers = NULL, *moves = NULL;
    struct strv moved = STRV_INIT, to_add = STRV_INIT;
    bool exists = false, add = false, replace = false, backup = false, wrote_backup = false;
    mode_t mode = 0600;
    struct stat st;

    buf_init(&nt, AGENT_FILE_MAX);
    int r = inst_read_text(in->file, &t, &exists, &mode, e);
    if (r >= 0 && (r = inst_servers_of_text(in, &t, &servers, e)) < 0)
        (void)err_prefix(e, "'%s'", in->file_disp);
    if (r >= 0)
        r = check_entry(in, servers, &add, &replace, e);
    if (r >= 0)
        r = plan_moves(in, &t, servers, &moves, e);
    if (r >= 0) {
        json_object_object_foreach(moves, name, v)
        {
            (void)v;
            if (r >= 0 && strv_push(&moved, name) < 0)
                r = err_set(e, -ENOMEM, "out of memory");
        }
    }
    if (r >= 0)
        r = check_dest(in, df, moves, &to_add, e);
    if (r >= 0 && buf_append(&nt, t.data ? t.data : "", t.len) < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    if (r >= 0)
        r = inst_transform(in, &nt, moved.v, add, e);
    if (r < 0 || (!add && moved.n == 0))
        goto out;
    backup = exists && stat(in->side, &st) < 0;
    if (exists && !backup)
        r = inst_note(in, "'%s' is kept: the backup of an earlier install%s", in->side_disp,
                      moved.n ? "; the servers moved now are not in it, and uninstall leaves "
                                "them in the bridge's file"
                              : "");
    if (r >= 0)
        r = report_install(in, add, replace, &moved, backup);
    if (r < 0 || in->dry_run)
        goto out;
    if (backup) {
        r = file_write_atomic(in->side, t.data, t.len, mode, e);
        wrote_backup = r >= 0;
    }
    if (r >= 0)
        r = dest_add(df, moves, &to_add, e);
    if (r >= 0) {
        r = inst_write_file(in, nt.data, nt.len, mode, e);
        if (r < 0)
            dest_undo(df, &to_add);
    }
    if (r < 0 && wrote_backup)
        (void)unlink(in->side);
out:
    buf_release(&t);
    buf_release(&nt);
    json_object_put(servers);
    json_object_put(moves);
    strv_release(&moved);
    strv_release(&to_add);
    return r;
}

/* Claude Code's servers of the scope, as its file holds them (an empty object when none). */
int inst_claude_servers(const struct inst *in, struct json_object **ret, struct err *e)
{
    struct json_object *doc = NULL, *s = NULL;
    int r = json_read_file(in->file, AGENT_FILE_MAX, 0, &doc, e);
    if (r == -ENOENT) {
        err_clear(e);
        r = 0;
    }
    if (r < 0)
        return r;
    s = json_get_object(doc, "mcpServers");
    *ret = s ? json_object_get(s) : json_object_new_object();
    json_object_put(doc);
    return *ret ? 0 : err_set(e, -ENOMEM, "out of memory");
}

/* The record of the servers moved out of Claude Code's configuration: {version, servers}. */
int inst_read_record(const struct inst *in, struct json_object **ret, struct err *e)
{
    struct json_object *doc = NULL;
    int r = json_read_file(in->side, AGENT_FILE_MAX, 0, &doc, e);
    if (r == -ENOENT) {
        err_clear(e);
        r = 0;
    }
    if (r < 0)
        return r;
    if (!json_get_object(doc, "servers")) {
        json_object_put(doc);
        bool oom = false;
        doc = json_object_new_object();
        cfg_jadd(&oom, doc, "version", json_object_new_int(1));
        cfg_jadd(&oom, doc, "servers", json_object_new_object());
        if (oom) {
            json_object_put(doc);
            return err_set(e, -ENOMEM, "out of memory");
        }
    }
    *ret = doc;
    return 0;
}

static int install_claude(struct inst *in, struct cfg_file *df, struct err *e)
{
    struct json_object *servers = NULL, *moves = NULL, *rec = NULL;
    struct strv moved = STRV_INIT, to_add = STRV_INIT;
    struct buf none;
    bool add = false, replace = false;

    buf_init(&none, 1);
    int r = inst_claude_servers(in, &servers, e);
    if (r >= 0)
        r = check_entry(in, servers, &add, &replace, e);
    if (r >= 0)
        r = plan_moves(in, &none, servers, &moves, e);
    if (r >= 0)
        r = inst_read_record(in, &rec, e);
    if (r >= 0) {
        json_object_object_foreach(moves, name, v)
        {
            if (r >= 0 && (strv_push(&moved, name) < 0 ||
                           json_object_object_add(json_get_object(rec, "servers"), name,
                                                  json_object_get(v)) < 0))
                r = err_set(e, -ENOMEM, "out of memory");
        }
    }
    if (r >= 0)
        r = check_dest(in, df, moves, &to_add, e);
    if (r >= 0 && (add || moved.n))
        r = report_install(in, add, replace, &moved, moved.n > 0);
    if (r < 0 || in->dry_run || !(add || moved.n))
        goto out;
    if (moved.n)
        r = json_write_file(in->side, rec, 0600, e);
    if (r >= 0)
        r = dest_add(df, moves, &to_add, e);
    /* the servers leave Claude Code once the bridge's file holds them */
    for (size_t i = 0; r >= 0 && i < moved.n; i++)
        r = inst_claude_remove(in, moved.v[i], e);
    if (r >= 0 && replace)
        r = inst_claude_remove(in, ENTRY_NAME, e);
    if (r >= 0 && add)
        r = claude_add_bridge(in, e);
out:
    json_object_put(servers);
    json_object_put(moves);
    json_object_put(rec);
    strv_release(&moved);
    strv_release(&to_add);
    buf_release(&none);
    return r;
}

/* ---- the command ------------------------------------------------------------------------- */

static const struct agent *find_agent(const char *name)
{
    for (size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++)
        if (strcmp(agents[i].name, name) == 0)
            return &agents[i];
    return NULL;
}

const struct option cli_install_options[] = {{"scope", required_argument, NULL, 's'},
                                             {"dry-run", no_argument, NULL, 'n'},
                                             {"json", no_argument, NULL, 'j'},
                                             {0}};

/* -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct log *log, struct inst *in)
{
    const char *cmd = in->uninstall ? "uninstall" : "install";
    int opt, scope = CFG_SCOPE_USER;

    if (args_wants_help(argc, argv)) {
        fputs(install_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "", cli_install_options, NULL)) != -1) {
        if (opt == 's' && cfg_parse_scope(log, cmd, optarg, &scope) != 0)
            return BRIDGE_EXIT_USAGE;
        else if (opt == 'n')
            in->dry_run = true;
        else if (opt == 'j')
            in->json = true;
        else if (opt != 's')
            return cli_option_error(log, argv, "", cli_install_options);
    }
    if (argc - optind != 1)
        return cfg_usage_error(log, cmd,
                               "%s takes exactly one AGENT: claude-code, cursor, "
                               "vscode, codex, claude-desktop or pi",
                               cmd);
    in->a = find_agent(argv[optind]);
    if (!in->a) {
        struct suggest sg;
        struct buf near;
        suggest_init(&sg, argv[optind]);
        for (size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++)
            suggest_add(&sg, agents[i].name);
        buf_init(&near, 1024);
        int r = suggest_append(&sg, NULL, &near);
        int status = cfg_usage_error(log, cmd,
                                     "unknown agent '%.64s': the known ones are claude-code, "
                                     "cursor, vscode, codex, claude-desktop and pi%s",
                                     argv[optind], r >= 0 ? buf_str(&near) : "");
        buf_release(&near);
        suggest_release(&sg);
        return status;
    }
    in->project = scope == CFG_SCOPE_PROJECT;
    if (in->project && !in->a->project)
        return cfg_usage_error(log, cmd, "%s has no project file: use --scope user", in->a->name);
    return -1;
}

/* The paths, this executable, the CLI to use. */
static int prepare(struct inst *in, const struct args_globals *g, struct err *e)
{
    char *cwd = getcwd(NULL, 0);
    int r = cwd ? 0 : err_set(e, -errno, "cannot find the working directory: %s", strerror(errno));
    if (r >= 0)
        r = agent_file(in, cwd, &in->file, e);
    if (r >= 0)
        r = bridge_file(in, g, cwd, e);
    free(cwd);
    if (r < 0)
        return r;
    if (strcmp(in->file, in->dest) == 0)
        return err_set(e, -EINVAL,
                       "the bridge's file would be the agent's own, '%s': name "
                       "another with --config",
                       in->file);
    in->exe = realpath("/proc/self/exe", NULL);
    if (!in->exe)
        return err_set(e, -errno, "cannot find this program's path: %s", strerror(errno));
    if ((in->a->flags & AGENT_CLI) && path_find_program("claude", NULL, &in->claude) == -ENOMEM)
        return err_set(e, -ENOMEM, "out of memory");
    if (asprintf(&in->side, "%s%s", in->file, in->claude ? RECORD_SUFFIX : BACKUP_SUFFIX) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    in->file_disp = path_display(in->file);
    in->side_disp = path_display(in->side);
    in->dest_disp = path_display(in->dest);
    in->changes = json_object_new_array();
    in->notes = json_object_new_array();
    if (!in->file_disp || !in->side_disp || !in->dest_disp || !in->changes || !in->notes)
        return err_set(e, -ENOMEM, "out of memory");
    return 0;
}

static void inst_release(struct inst *in)
{
    free(in->file);
    free(in->file_disp);
    free(in->side);
    free(in->side_disp);
    free(in->dest);
    free(in->dest_disp);
    free(in->exe);
    free(in->claude);
    strv_release(&in->args);
    json_object_put(in->changes);
    json_object_put(in->notes);
}

int inst_run(int argc, char **argv, const struct args_globals *g, struct log *log,
             const struct inst_way *way)
{
    struct inst in = {.uninstall = way->uninstall, .args = STRV_INIT};
    struct err e = ERR_INIT;
    struct cfg_file *df = NULL;
    struct file_lock *lk = NULL;
    int status = parse(argc, argv, log, &in), r;

    if (status >= 0)
        goto out;
    r = prepare(&in, g, &e);
    if (r >= 0 && !in.claude && (in.a->flags & AGENT_CLI))
        r = inst_note(&in, "claude is not on PATH: '%s' is edited directly", in.file_disp);
    if (r >= 0)
        r = open_dest(&in, &df, &e);
    if (r >= 0 && !in.claude)
        r = lock_agent(&in, &lk, &e);
    if (r >= 0)
        r = in.claude ? way->claude(&in, df, &e) : way->file(&in, df, &e);
    if (r >= 0)
        r = print_report(&in);
    if (r < 0) {
        bool config = r == -EEXIST || r == -EBADMSG || r == -EINVAL || r == -E2BIG;
        log_error(log, "%s%s", err_msg(&e),
                  config || r == -ETIMEDOUT ? " (nothing was changed)" : "");
        status = config ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
    } else {
        status = BRIDGE_EXIT_OK;
    }
out:
    file_lock_release(lk);
    cfg_file_free(df);
    inst_release(&in);
    return status;
}

int cmd_install(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    static const struct inst_way install = {false, install_file, install_claude};
    return inst_run(argc, argv, g, log, &install);
}
