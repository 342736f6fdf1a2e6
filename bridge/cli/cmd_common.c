/* cmd_common.c - what the commands share: the configuration as every command sees it */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/redact.h"
#include "credkit/suggest.h"
#include "credkit/url.h"

#include "cli/cli.h"
#include "credkit/mcp_trust.h"
#include "config/server_config.h"

#define URL_NAME_MAX 64 /* a name made from a URL's host */

/* The bundled layer: $CREDKIT_BRIDGE_BUNDLED (empty: none), else
 * <bindir>/../share/credkit/mcp.json when it exists. Caller frees; NULL: none. */
static char *bundled_path(void)
{
    const char *env = getenv("CREDKIT_BRIDGE_BUNDLED");
    if (env)
        return *env ? strdup(env) : NULL;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *bindir = path_dirname(exe);
    if (!bindir)
        return NULL;
    char *p = path_join(bindir, "../share/credkit/mcp.json");
    free(bindir);
    if (p && access(p, F_OK) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

int cli_parse_duration(const char *opt, const char *arg, struct log *log, int64_t *ret_ms)
{
    int64_t ms;
    if (duration_parse(arg, &ms) < 0 || ms <= 0) {
        log_error(log, "%s: '%s' is not a positive duration (e.g. 30s, 2m)", opt, arg);
        return -EINVAL;
    }
    *ret_ms = ms;
    return 0;
}

static void redact_add_logged(struct log *log, const char *name, const char *value)
{
    if (value && redact_add(log_redact(log), name, value, strlen(value)) < 0)
        log_debug(log, "cannot register the value of '%s' for redaction: out of memory", name);
}

/* A ${VAR} of a template: its value is a secret (here from the environment, as mcp_expand()
 * without a lookup takes it). */
static void redact_var(const char *name, void *userdata)
{
    redact_add_logged(userdata, name,
                      mcp_template_env_name(name) ? getenv(mcp_template_env_name(name)) : NULL);
}

/* "NAME<sep>template": the value as written (a literal may be a secret too) and the values of
 * the variables it names. */
static void redact_values(struct log *log, char *const *v, char sep)
{
    for (size_t i = 0; v && v[i]; i++) {
        const char *at = strchr(v[i], sep);
        if (!at)
            continue;
        char name[128];
        (void)snprintf(name, sizeof(name), "%.*s", (int)(at - v[i]), v[i]);
        const char *value = at + 1;
        while (*value == ' ')
            value++;
        redact_add_logged(log, name, value);
        mcp_template_vars(value, redact_var, log);
    }
}

/* The secrets of an entry go into the log's redaction: whatever a message quotes (a server's
 * stderr echoing its environment, a transport error), header values, env values, the values
 * written in the URL's query and the variables of the URL are never printed. */
static void redact_entry(struct log *log, const struct mcp_server *s)
{
    redact_values(log, s->env, '=');
    redact_values(log, s->headers, ':');
    if (s->url) {
        if (redact_add_url(log_redact(log), s->url) < 0)
            log_debug(log, "cannot register the values of a URL for redaction: out of memory");
        mcp_template_vars(s->url, redact_var, log);
    }
}

static void redact_config(struct log *log, const struct mcp_config *c)
{
    for (size_t i = 0; i < mcp_config_count(c); i++)
        redact_entry(log, mcp_config_at(c, i));
}

/* The approvals of project entries, for the loader; NULL (nothing approved, said once) when
 * they cannot be read. */
static struct trust_store *load_trust(struct log *log)
{
    struct trust_store *t = NULL;
    struct err e = ERR_INIT;
    if (trust_store_load(NULL, &t, &e) < 0) {
        log_warn(log, "%s: no project entry is used until this is fixed", err_msg(&e));
        return NULL;
    }
    return t;
}

struct mcp_config *cli_load_config_at(const struct args_globals *g, struct log *log,
                                      const char *cwd)
{
    struct mcp_config *c = NULL;
    struct err e = ERR_INIT;
    char *bundled = bundled_path();
    struct trust_store *trust = cwd ? load_trust(log) : NULL;
    struct mcp_config_opts opts = {
        .config_path = g->config,
        .cwd = cwd,
        .bundled_path = bundled,
        .defer_vars = true, /* resolved by `secrets` at each connect (cred_helper.h) */
        /* a project's entries are inert until approved (trust.h) */
        .trust = trust_check,
        .trust_userdata = trust,
        .trust_hint = "run mcp-bridge trust",
    };
    int r = server_config_load(&opts, &c, &e);
    free(bundled);
    trust_store_free(trust);
    if (r < 0) {
        log_error(log, "%s", err_msg(&e));
        return NULL;
    }
    redact_config(log, c);
    /* a file that could not be used at all: its servers are missing, say why */
    for (size_t i = 0; i < mcp_config_diag_count(c); i++)
        log_warn(log, "%s", mcp_config_diag_at(c, i)->message);
    return c;
}

struct mcp_config *cli_load_config(const struct args_globals *g, struct log *log)
{
    char cwd[PATH_MAX];
    const char *at = getcwd(cwd, sizeof(cwd));
    if (!at)
        log_warn(log,
                 "cannot tell the working directory (%s): the project files .mcp.json and "
                 ".pi/mcp.json are not read",
                 strerror(errno));
    return cli_load_config_at(g, log, at);
}

const struct option cli_global_options[] = {
    {"config", required_argument, NULL, 0},
    {"mcp-config", required_argument, NULL, 0},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

int cli_option_error(struct log *log, char *const *argv, const char *shortopts,
                     const struct option *opts)
{
    struct buf msg;
    buf_init(&msg, 4096);
    /* said as getopt says it, by the command: "mcp-bridge list: unknown option ..." */
    struct log *cmd_log = log_new(argv[0], STDERR_FILENO);
    if (cmd_log)
        log_set_level(cmd_log, log_get_level(log));
    if (args_option_error(argv[0], argv, shortopts, opts, cli_global_options, &msg) < 0)
        log_error(cmd_log ? cmd_log : log, "invalid option (see '%s --help')", argv[0]);
    else
        log_error(cmd_log ? cmd_log : log, "%s", buf_str(&msg));
    log_free(cmd_log);
    buf_release(&msg);
    return BRIDGE_EXIT_USAGE;
}

int cli_config_for_failed(const char *target)
{
    char *canon = NULL;
    if (!cli_is_url(target))
        return BRIDGE_EXIT_CONFIG;
    int r = url_canonical(target, &canon, NULL);
    free(canon);
    return r == -EINVAL ? BRIDGE_EXIT_USAGE : BRIDGE_EXIT_CONFIG;
}

bool cli_is_url(const char *target)
{
    return strstr(target, "://") != NULL;
}

/* The entry name for a URL: its host, lowercase, each character outside [a-z0-9._-] as '_'
 * ("https://mcp.example.com:8443/mcp" -> "mcp.example.com"). Caller frees. */
static char *name_from_url(const char *url)
{
    const char *p = strstr(url, "://") + 3;
    size_t n = strcspn(p, "/?#");
    const char *at = memchr(p, '@', n);
    if (at) {
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    if (n > 0 && p[0] == '[') { /* [v6]:port */
        const char *close = memchr(p, ']', n);
        if (close)
            n = (size_t)(close + 1 - p);
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon)
            n = (size_t)(colon - p);
    }
    struct buf b;
    buf_init(&b, URL_NAME_MAX + 1);
    for (size_t i = 0; i < n && b.len < URL_NAME_MAX; i++) {
        char ch = (char)tolower((unsigned char)p[i]);
        if (!isalnum((unsigned char)ch) && ch != '.' && ch != '-' && ch != '_')
            ch = '_';
        if (buf_append_char(&b, ch) < 0)
            break;
    }
    /* "[::1]" -> "__1_": trim the underscores that brackets and colons leave */
    size_t start = 0;
    while (start < b.len && b.data[start] == '_')
        start++;
    while (b.len > start && b.data[b.len - 1] == '_')
        b.len--;
    char *out = b.len > start ? strndup(b.data + start, b.len - start) : strdup("server");
    buf_release(&b);
    return out;
}

/* {"mcpServers": {NAME: {"url": URL, "headers": {...}}}} from the command line. -EINVAL with a
 * message for a header that is not "Name: value". */
static int url_root(const char *url, const char *name, const char *const *headers, unsigned flags,
                    struct json_object **ret, struct err *e)
{
    struct json_object *root = json_object_new_object(), *servers = json_object_new_object(),
                       *entry = json_object_new_object(), *hdrs = json_object_new_object();
    int r = -ENOMEM;
    if (!root || !servers || !entry || !hdrs)
        goto out;
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *h = headers[i], *colon = strchr(h, ':');
        if (!colon || colon == h) {
            char shown[48];
            (void)snprintf(shown, sizeof(shown), "%.*s", (int)strcspn(h, ":"), h);
            r = err_set(e, -EINVAL,
                        "--header '%s...': a header is written 'Name: value' (the value may "
                        "use ${VAR} from the environment)",
                        shown);
            goto out;
        }
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *hname = strndup(h, (size_t)(colon - h));
        struct json_object *jv = json_object_new_string(v);
        if (!hname || !jv || json_object_object_add(hdrs, hname, jv) < 0) {
            free(hname);
            json_object_put(jv);
            goto out;
        }
        free(hname);
    }
    struct json_object *ju = json_object_new_string(url);
    if (!ju || json_object_object_add(entry, "url", ju) < 0) {
        json_object_put(ju);
        goto out;
    }
    if (json_object_object_add(entry, "headers", hdrs) < 0)
        goto out;
    hdrs = NULL;
    if (flags & CLI_ALLOW_HTTP) {
        struct json_object *jb = json_object_new_boolean(1);
        if (!jb || json_object_object_add(entry, "allowHttp", jb) < 0) {
            json_object_put(jb);
            goto out;
        }
    }
    if (json_object_object_add(servers, name, entry) < 0)
        goto out;
    entry = NULL;
    if (json_object_object_add(root, "mcpServers", servers) < 0)
        goto out;
    servers = NULL;
    *ret = root;
    root = NULL;
    r = 0;
out:
    if (r == -ENOMEM)
        (void)err_set(e, -ENOMEM, "out of memory");
    json_object_put(root);
    json_object_put(servers);
    json_object_put(entry);
    json_object_put(hdrs);
    return r;
}

/* Says which server names exist, for "no server named ...". */
static void report_not_found(const struct mcp_config *c, const char *target, struct log *log)
{
    struct buf names, files, close;
    struct suggest s;
    buf_init(&names, 2048);
    buf_init(&files, 8192);
    buf_init(&close, 4096);
    suggest_init(&s, target);
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        suggest_add(&s, mcp_config_at(c, i)->name);
        if (buf_printf(&names, "%s%s", names.len ? ", " : "", mcp_config_at(c, i)->name) < 0)
            break;
    }
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    for (size_t i = 0; i < mcp_config_file_count(c); i++) {
        bool exists = false;
        const char *f = mcp_config_file_at(c, i, &exists);
        if (!exists)
            continue;
        char *d = path_display(f);
        int r = buf_printf(&files, "%s%s", files.len ? ", " : "", d ? d : f);
        free(d);
        if (r < 0)
            break;
    }
    log_error(log,
              "no server named '%s' in %s%s%s%s check the name ('mcp-bridge list'), give its "
              "URL, or add it with 'mcp-bridge add'",
              target, files.len ? buf_str(&files) : "the configuration (no mcp.json file found)",
              names.len ? "; configured: " : "", names.len ? buf_str(&names) : "",
              close.len ? buf_str(&close) : ":");
    suggest_release(&s);
    buf_release(&close);
    buf_release(&names);
    buf_release(&files);
}

/* {"mcpServers": {NAME: raw}}: the entry s again, alone, to be validated by the same code
 * from what was written. *ret_name and *ret_root are the caller's; -ENOMEM (reported). */
static int root_from_entry(const struct mcp_server *s, const struct mcp_config *layered,
                           struct log *log, char **ret_name, struct json_object **ret_root)
{
    char *name = strdup(s->name);
    struct json_object *root = json_object_new_object();
    struct json_object *servers = json_object_new_object();
    if (!name || !root || !servers || json_object_object_add(root, "mcpServers", servers) < 0) {
        json_object_put(servers);
        goto oom;
    }
    struct json_object *raw = json_object_get(s->raw);
    if (json_object_object_add(servers, name, raw) < 0) {
        json_object_put(raw);
        goto oom;
    }
    /* the merged settings come along: autoAuth, authRequiredMessage, toolPrefix */
    struct json_object *settings = mcp_config_settings(layered);
    if (settings && json_object_object_length(settings) > 0 &&
        json_object_object_add(root, "settings", json_object_get(settings)) < 0) {
        json_object_put(settings);
        goto oom;
    }
    *ret_name = name;
    *ret_root = root;
    return 0;
oom:
    log_error(log, "out of memory");
    free(name);
    json_object_put(root);
    return -ENOMEM;
}

/* The usable entry named target in the layered configuration (borrowed from *layered, which
 * the caller frees), else NULL (reported). */
static const struct mcp_server *find_named(const char *target, const char *const *headers,
                                           unsigned flags, const struct args_globals *g,
                                           struct log *log, struct mcp_config **layered)
{
    if (headers && headers[0]) {
        log_error(log,
                  "--header goes with a URL; the headers of '%s' are set in its configuration "
                  "entry",
                  target);
        return NULL;
    }
    if (flags & CLI_ALLOW_HTTP) {
        log_error(log,
                  "--allow-http goes with a URL; for '%s' set \"allowHttp\": true in its "
                  "configuration entry",
                  target);
        return NULL;
    }
    *layered = cli_load_config(g, log);
    if (!*layered)
        return NULL;
    const struct mcp_server *s = mcp_config_find(*layered, target);
    if (!s) {
        report_not_found(*layered, target, log);
        return NULL;
    }
    if (s->error) {
        log_error(log, "%s", s->error);
        return NULL;
    }
    if (s->disabled)
        log_warn(log,
                 "server '%s' is disabled (\"disabled\": true in its entry): 'serve' does not "
                 "start it",
                 s->name);
    return s;
}

/* Loads the one-entry document root (as if from source) and checks its entry name. NULL
 * (reported) when it is not usable. */
static struct mcp_config *load_one(struct json_object *root, const char *source, const char *name,
                                   const char *target, struct log *log)
{
    struct mcp_config *one = NULL;
    struct err e = ERR_INIT;
    struct mcp_config_opts opts = {.defer_vars = true}; /* as cli_load_config() */
    int r = server_config_load_object(root, source, &opts, &one, &e);
    if (r < 0) {
        log_error(log, "%s", err_msg(&e));
        return NULL;
    }
    redact_config(log, one); /* the headers of a URL given on the command line */
    for (size_t i = 0; i < mcp_config_diag_count(one); i++)
        log_error(log, "%s", mcp_config_diag_at(one, i)->message);
    const struct mcp_server *s = mcp_config_find(one, name);
    if (!s) {
        log_error(log, "'%s': no usable server entry", target);
    } else if (s->error) {
        log_error(log, "%s", s->error);
    } else {
        return one;
    }
    mcp_config_free(one);
    return NULL;
}

struct mcp_config *cli_config_for(const char *target, const char *const *headers, unsigned flags,
                                  const struct args_globals *g, struct log *log,
                                  const char **ret_name)
{
    struct mcp_config *layered = NULL, *one = NULL;
    struct json_object *root = NULL;
    struct err e = ERR_INIT;
    char *name = NULL;
    const char *source;

    if (cli_is_url(target)) {
        name = name_from_url(target);
        if (!name) {
            log_error(log, "out of memory");
            goto out;
        }
        if (url_root(target, name, headers, flags, &root, &e) < 0) {
            log_error(log, "%s", err_msg(&e));
            goto out;
        }
        source = "command line";
    } else {
        const struct mcp_server *s = find_named(target, headers, flags, g, log, &layered);
        if (!s || root_from_entry(s, layered, log, &name, &root) < 0)
            goto out;
        source = s->source;
    }
    one = load_one(root, source, name, target, log);
    if (one)
        *ret_name = mcp_config_find(one, name)->name;
out:
    json_object_put(root);
    mcp_config_free(layered);
    free(name);
    return one;
}
