/* cmd_serve.c - "serve" (aggregate mode) and "connect" (single mode): the bridge on stdin/stdout
 *
 * Both run the downstream (downstream.h) on the loop with the agent on stdin/stdout, which are
 * made non-blocking for the time being and given back as they were (the descriptions may be
 * shared with the parent, a terminal or the agent's other children). Everything said to the
 * user goes to stderr: stdout carries the protocol. --listen (of either) serves agents over HTTP
 * (agent_http.h), and then stdio only with --stdio. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/child.h"
#include "credkit/file.h"
#include "credkit/helper_answer.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/textsafe.h"

#include "cli/cli.h"
#include "creds/cred_path.h"
#include "creds/cred_setup.h"
#include "downstream/agent_http.h"
#include "downstream/downstream.h"
#include "core/loop.h"
#include "core/watch.h"

#define MAX_HEADERS 64
/* an edit is several events (an editor writes, renames, changes modes): one reload after the
 * last of them */
#define WATCH_SETTLE_MS  300
#define MAX_ORIGINS      16
#define MAX_SCOPES       16
#define TOKEN_TIMEOUT_MS (30 * 1000) /* secrets resolving --listen-token, --state-key */

static const char serve_help[] =
    "usage: mcp-bridge [serve] [--connect-timeout D] [--agent pi] [--no-watch]\n"
    "                          [--listen [ADDR:]PORT [--stdio] [--listen-url-file FILE]\n"
    "                           [--listen-token SECRET_NAME] [--allow-origin ORIGIN]...\n"
    "                           [--listen-issuer URL [--listen-public-url URL]\n"
    "                            [--listen-audience URI] [--listen-scope SCOPE]...]\n"
    "                           [--max-agents N] [--state-key SECRET_NAME]\n"
    "                           [--replica-name NAME]]\n"
    "\n"
    "Serve every valid server of the layered configuration as one MCP server on stdin/stdout:\n"
    "this is what the agent runs. Tools and prompts are named mcp_<server>_<tool> (see\n"
    "settings.toolPrefix), resources keep their URIs. Servers connect in parallel; one that is\n"
    "slow or broken never holds the others back, and one that comes later is announced with\n"
    "list_changed. Invalid entries are reported (on stderr, as every log) and skipped.\n"
    "\n"
    "  --connect-timeout D  how long a server may take to connect (default 15s)\n"
    "  --no-watch           do not reload by itself when a configuration file changes\n"
    "  --agent pi           served to pi through pi-mcp-adapter, whose entry says\n"
    "                       \"toolPrefix\": \"none\": tools named <server>_<tool> (the adapter's\n"
    "                       default naming; settings.toolPrefix still chooses), no proxy tool\n"
    "                       of the bridge (the adapter's 'mcp' is pi's), every tool listed\n";

/* the help's second half (one string would pass the 4095 bytes C compilers must take) */
static const char serve_help_listen[] =
    "  --listen [ADDR:]PORT serve agents over Streamable HTTP at http://ADDR:PORT/mcp (both\n"
    "                       eras), many at once on the same servers; ADDR 127.0.0.1 unless\n"
    "                       given ([::1]:PORT for IPv6); port 0 picks a free one. The URL is\n"
    "                       printed on stderr. A bind that is not loopback needs --listen-token\n"
    "                       or --listen-issuer\n"
    "  --stdio              with --listen: serve the agent on stdin/stdout too\n"
    "  --listen-url-file FILE  with --listen: write the URL to FILE once listening\n"
    "  --listen-token SECRET_NAME  agents must send 'Authorization: Bearer <value>', the value\n"
    "                       of that name in secrets ('secrets set NAME'); it never goes upstream\n"
    "  --listen-issuer URL  agents must send a JWT access token of this OAuth 2.1 issuer (the\n"
    "                       bridge as a resource server: signature by the issuer's keys, iss,\n"
    "                       aud, exp, scopes); it never goes upstream. Metadata at\n"
    "                       /.well-known/oauth-protected-resource\n"
    "  --listen-public-url URL  with --listen-issuer: the bridge's URL as agents reach it (behind\n"
    "                       a reverse proxy); the resource tokens are for (default the bound URL)\n"
    "  --listen-audience URI  with --listen-issuer: what the tokens' aud must hold (default the\n"
    "                       public URL)\n"
    "  --listen-scope SCOPE  with --listen-issuer: a scope every token must have (repeatable;\n"
    "                       403 insufficient_scope without it)\n"
    "  --allow-origin ORIGIN  a browser Origin allowed besides loopback ones (repeatable)\n"
    "  --max-agents N       HTTP agents at once (sessions and requests; default 64)\n"
    "  --state-key SECRET_NAME  sign input rounds' requestStates with a key made from that\n"
    "                       secret instead of a random one: replicas behind a load balancer\n"
    "                       given the same name recognise each other's states\n"
    "  --replica-name NAME  this replica's name, in clear at the start of its requestStates\n"
    "                       (mcpb1.NAME.): a load balancer sends a round's retry back to it\n"
    "\n"
    "A change to a configuration file (its own, the imported clients' files, the approvals of\n"
    "'mcp-bridge trust') is applied by itself, 300 ms after the last write: servers added,\n"
    "removed or changed connect or disconnect; the rest are left alone; a configuration that\n"
    "cannot be read is not applied. SIGHUP does the same at once.\n"
    "SIGTERM, SIGINT and the end of stdin shut down cleanly (every server closed, every child\n"
    "reaped); with --listen only SIGTERM and SIGINT do.\n"
    "\n"
    "examples:\n"
    "  mcp-bridge\n"
    "  mcp-bridge --config ~/work/mcp.json --connect-timeout 30s\n"
    "  claude mcp add bridge -- mcp-bridge\n"
    "  mcp-bridge serve --agent pi --config ~/.pi/agent/bridge.json   # in pi's mcp.json\n"
    "  mcp-bridge --no-watch             # reload only on SIGHUP\n"
    "  mcp-bridge serve --listen 8765    # agents use http://127.0.0.1:8765/mcp\n";

static const char connect_help[] =
    "usage: mcp-bridge connect SERVER [--header 'Name: value']... [--allow-http]\n"
    "                          [--connect-timeout D] [--bridge-eras]\n"
    "                          [--listen [ADDR:]PORT ...]\n"
    "\n"
    "Serve one server on stdin/stdout as it is: its own initialize answer, names, lists and\n"
    "results, unchanged. SERVER is a name from mcp.json or an http(s) URL (Streamable HTTP,\n"
    "falling back to HTTP+SSE by itself): a drop-in for 'npx mcp-remote URL'. Logs go to stderr.\n"
    "The protocol era too is the server's: a server of 2025-11-25 or earlier answers a\n"
    "2026-07-28 client's server/discover as it would directly (method not found), and the\n"
    "client falls back to initialize.\n"
    "\n"
    "  --header 'Name: value'  an HTTP header for a URL (repeatable); the value may use ${VAR},\n"
    "                       taken from the environment at each connect, so that no secret has\n"
    "                       to be written on the command line (values are never printed)\n"
    "  --allow-http         let credentials go to a plain http:// URL whose host is not\n"
    "                       loopback (\"allowHttp\": true of an entry), on a network you trust\n"
    "  --connect-timeout D  how long the server may take to connect (default 15s)\n"
    "  --bridge-eras        serve 2026-07-28 (server/discover, no initialize) whatever the\n"
    "                       server's era, bridging to a legacy server as 'serve' does: for\n"
    "                       clients that speak only 2026-07-28\n"
    "  --listen [ADDR:]PORT serve agents over Streamable HTTP at http://ADDR:PORT/mcp instead\n"
    "                       of stdin/stdout, many at once on the one server; --stdio,\n"
    "                       --listen-url-file, --listen-token, --listen-issuer (and its\n"
    "                       options), --allow-origin, --max-agents, --state-key and\n"
    "                       --replica-name as for serve (see 'mcp-bridge serve --help')\n"
    "\n"
    "examples:\n"
    "  mcp-bridge connect github\n"
    "  mcp-bridge connect https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'\n"
    "  claude mcp add example -- mcp-bridge connect https://mcp.example.com/mcp\n";

/* One run of the bridge. */
struct serve {
    struct loop *loop;
    struct log *log;
    const struct args_globals *g;
    struct downstream *d;
    struct mcp_config *config; /* aggregate: the one applied, for the next reload's diff */
    struct watch *watch;       /* aggregate: the files of config; NULL with --no-watch */
    struct cred_setup creds;   /* the credentials of every upstream (cred_setup.h) */
    struct agent_http *http;   /* serve --listen; NULL: stdio only */
    int in_flags, out_flags;   /* as found, restored at the end (-1: untouched) */
    int status;
    bool done;
};

static int set_nonblock(int fd, int *ret_old)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    *ret_old = fl;
    return 0;
}

static void restore_flags(struct serve *s)
{
    if (s->in_flags >= 0)
        (void)fcntl(STDIN_FILENO, F_SETFL, s->in_flags);
    if (s->out_flags >= 0)
        (void)fcntl(STDOUT_FILENO, F_SETFL, s->out_flags);
    s->in_flags = s->out_flags = -1;
}

static void on_done(int status, void *userdata)
{
    struct serve *s = userdata;
    if (status == -EPIPE)
        log_info(s->log, "the agent closed its side (stdout): shutting down");
    else if (status < 0)
        log_error(s->log, "the connection to the agent broke: %s", strerror(-status));
    s->status = status < 0 ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_OK;
    s->done = true;
    loop_quit(s->loop, 0);
}

static void on_stop(int signo, void *userdata)
{
    struct serve *s = userdata;
    log_info(s->log, "%s: shutting down", signo == SIGINT ? "interrupted" : "terminated");
    downstream_shutdown(s->d);
}

/* Whether the new configuration lost a file the old one could read: a file being edited is
 * often not JSON for a moment, and applying that would disconnect all its servers. */
static const char *new_broken_file(const struct mcp_config *old, const struct mcp_config *c)
{
    for (size_t i = 0; i < mcp_config_diag_count(c); i++) {
        const struct mcp_config_diag *d = mcp_config_diag_at(c, i);
        bool known = false;
        for (size_t j = 0; j < mcp_config_diag_count(old) && !known; j++)
            known = strcmp(mcp_config_diag_at(old, j)->source, d->source) == 0;
        if (!known)
            return d->source;
    }
    return NULL;
}

/* Logs what a reload changes: "added x, removed y, changed z" (an entry that became usable or
 * unusable as written, approved or revoked with mcp-bridge trust, counts as changed). Names
 * are escaped: they come from files. */
static void report_changes(struct serve *s, const struct mcp_config *old,
                           const struct mcp_config *c, bool asked)
{
    struct buf added, removed, changed;
    buf_init(&added, 4096);
    buf_init(&removed, 4096);
    buf_init(&changed, 4096);
    struct buf shown;
    buf_init(&shown, 1024);
    for (size_t i = 0; i < mcp_config_count(c); i++) {
        const struct mcp_server *e = mcp_config_at(c, i), *o = mcp_config_find(old, e->name);
        struct buf *b = !o                                                             ? &added
                        : !json_object_equal(o->raw, e->raw) || !o->error != !e->error ? &changed
                                                                                       : NULL;
        if (b && buf_printf(b, "%s'%s'", b->len ? ", " : "", text_escaped(&shown, e->name)) < 0)
            continue; /* the list is cut: what fits is said */
    }
    for (size_t i = 0; i < mcp_config_count(old); i++) {
        const struct mcp_server *o = mcp_config_at(old, i);
        if (!mcp_config_find(c, o->name) && buf_printf(&removed, "%s'%s'", removed.len ? ", " : "",
                                                       text_escaped(&shown, o->name)) < 0)
            continue;
    }
    buf_release(&shown);
    /* asked for by the user (SIGHUP), or a change the user made: said unless -q; a file
     * rewritten with the same servers (an agent keeps state in its own file) is not news */
    enum log_level level = s->g->quiet ? LOG_INFO : LOG_ERROR;
    if (!added.len && !removed.len && !changed.len)
        log_msg(s->log, asked ? level : LOG_DEBUG, "configuration reloaded: no server changed");
    else
        log_msg(s->log, level, "configuration reloaded:%s%s%s%s%s%s", added.len ? " added " : "",
                buf_str(&added), removed.len ? (added.len ? "; removed " : " removed ") : "",
                buf_str(&removed),
                changed.len ? (added.len || removed.len ? "; changed " : " changed ") : "",
                buf_str(&changed));
    buf_release(&added);
    buf_release(&removed);
    buf_release(&changed);
}

/* Watches the files the applied configuration was read from: its layers (those missing too: one
 * created later is a change), the imported clients' files, and the approvals of mcp-bridge
 * trust. */
static void watch_config(struct serve *s)
{
    struct strv paths = STRV_INIT;
    char *trust = NULL;
    struct err e = ERR_INIT;
    int r = 0;

    if (!s->watch)
        return;
    for (size_t i = 0; r >= 0 && i < mcp_config_file_count(s->config); i++)
        r = strv_push(&paths, mcp_config_file_at(s->config, i, NULL));
    for (size_t i = 0; r >= 0 && i < mcp_config_import_file_count(s->config); i++)
        r = strv_push(&paths, mcp_config_import_file_at(s->config, i, NULL, NULL));
    if (r >= 0 && path_agent_file("mcp-trust.json", &trust, &e) >= 0)
        r = strv_push(&paths, trust);
    if (r >= 0)
        r = watch_set(s->watch, (const char *const *)paths.v, paths.n);
    if (r < 0)
        log_warn(s->log, "cannot watch the configuration files (%s): send SIGHUP after a change",
                 strerror(-r));
    else if (r > 0)
        log_warn(s->log,
                 "%d configuration director%s cannot be watched: send SIGHUP after a "
                 "change there",
                 r, r == 1 ? "y" : "ies");
    free(trust);
    strv_release(&paths);
}

/* Loads the configuration again and applies what changed; asked: by SIGHUP, else by a change
 * to a file. */
static void reload(struct serve *s, bool asked)
{
    struct err e = ERR_INIT;
    if (asked)
        log_info(s->log, "SIGHUP: reloading the configuration");
    else
        log_debug(s->log, "a configuration file changed: reloading");
    struct mcp_config *c = cli_load_config(s->g, s->log);
    if (!c) {
        log_error(s->log, "the configuration could not be loaded: the servers stay as they were");
        return;
    }
    const char *broken = new_broken_file(s->config, c);
    if (broken) {
        /* by a watch: the file is often being edited, and its next save is seen too */
        log_msg(s->log, asked ? LOG_ERROR : LOG_WARN,
                "'%s' cannot be used (see above): the servers stay as they were; fix it%s", broken,
                asked ? " and send SIGHUP again" : " (saving it again applies it)");
        mcp_config_free(c);
        return;
    }
    int r = downstream_reload(s->d, c, &e);
    if (r < 0) {
        log_error(s->log, "cannot apply the new configuration: %s", err_msg(&e));
        mcp_config_free(c);
        return;
    }
    report_changes(s, s->config, c, asked);
    mcp_config_free(s->config);
    s->config = c;
    s->creds.config = c;
    watch_config(s); /* the files may be others now (an import added, a layer created) */
}

static void on_reload(int signo, void *userdata)
{
    (void)signo;
    reload(userdata, true);
}

static void on_config_changed(void *userdata)
{
    reload(userdata, false);
}

static void on_hup_single(int signo, void *userdata)
{
    struct serve *s = userdata;
    (void)signo;
    log_info(s->log, "SIGHUP: nothing to reload in single mode (restart 'mcp-bridge connect' "
                     "to pick up a changed entry)");
}

/* serve --listen's options. */
struct listen_opts {
    const char *listen;   /* NULL: no listener */
    bool stdio;           /* --stdio: the agent on stdin/stdout too */
    const char *url_file; /* --listen-url-file */
    const char *token_name;
    const char *issuer;     /* --listen-issuer */
    const char *public_url; /* --listen-public-url */
    const char *audience;   /* --listen-audience */
    const char *scopes[MAX_SCOPES + 1];
    size_t n_scopes;
    const char *origins[MAX_ORIGINS + 1];
    size_t n_origins;
    size_t max_agents;
    const char *state_key; /* --state-key: a secret's name */
    const char *replica;   /* --replica-name */
};

/* The value of name through `secrets resolve --json` (as every secret of the bridge): *ret a
 * new string, freed with secure_free(). -errno, said in the log with option. */
static int resolve_secret(struct log *log, const char *option, const char *name, char **ret)
{
    char *prog = NULL;
    struct err e = ERR_INIT;
    struct child_result res = {0};
    struct helper_secrets answer = {0};
    bool ran = false, parsed = false;
    int r = cred_path_find(HELPER_SECRETS, &prog, &e);
    if (r < 0)
        goto out;
    const char *argv[] = {prog, "resolve", "--json", "--", name, NULL};
    struct child_spec spec = {.argv = argv};
    struct child_run_opts ro = {
        .timeout_ms = TOKEN_TIMEOUT_MS,
        .max_stdout = HELPER_ANSWER_MAX,
        .secret_output = true,
    };
    r = child_run(&spec, &ro, &res, &e);
    if (r < 0)
        goto out;
    ran = true;
    r = helper_secrets_parse(res.out.data ? res.out.data : "", res.out.len, &answer, &e);
    if (r < 0)
        goto out;
    parsed = true;
    const struct helper_secret *sec = helper_secrets_find(&answer, name);
    if (!sec || !sec->value || !sec->value_len) {
        r = err_set(&e, -ENOKEY, "%s", sec && sec->error ? sec->error : "no value");
        goto out;
    }
    char *v = strdup(sec->value);
    if (!v) {
        r = err_set(&e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = v;
    r = 0;
out:
    if (r < 0)
        log_error(log, "%s '%s': %s", option, name, err_msg(&e));
    if (parsed)
        helper_secrets_release(&answer);
    if (ran)
        child_result_release(&res);
    free(prog);
    return r;
}

/* Starts the listener of lo on s's downstream and says where it is. */
static int start_listener(struct serve *s, const struct listen_opts *lo)
{
    char *token = NULL;
    struct err e = ERR_INIT;
    int r = 0;
    if (lo->state_key) {
        char *key = NULL;
        if ((r = resolve_secret(s->log, "--state-key", lo->state_key, &key)) < 0)
            return r;
        r = downstream_set_state_key(s->d, key, strlen(key));
        secure_free(key);
        if (r < 0) {
            log_error(s->log, "--state-key '%s': %s", lo->state_key, strerror(-r));
            return r;
        }
    }
    if (lo->replica && (r = downstream_set_replica(s->d, lo->replica)) < 0) {
        log_error(s->log, "--replica-name '%s': %s", lo->replica,
                  r == -EINVAL ? "1 to 63 letters, digits, '-' or '_'" : strerror(-r));
        return r;
    }
    if (lo->token_name &&
        (r = resolve_secret(s->log, "--listen-token", lo->token_name, &token)) < 0)
        return r;
    struct agent_http_opts ho = {
        .loop = s->loop,
        .log = s->log,
        .d = s->d,
        .listen = lo->listen,
        .token = token,
        .issuer = lo->issuer,
        .public_url = lo->public_url,
        .audience = lo->audience,
        .scopes = lo->n_scopes ? lo->scopes : NULL,
        .allow_origins = lo->origins,
        .max_agents = lo->max_agents,
    };
    r = agent_http_new(&ho, &s->http, &e);
    secure_free(token);
    if (r < 0) {
        log_error(s->log, "%s", err_msg(&e));
        return r;
    }
    const char *url = agent_http_url(s->http);
    log_msg(s->log, s->g->quiet ? LOG_INFO : LOG_ERROR, "serving agents at %s", url);
    if (lo->url_file) {
        char line[160];
        int n = snprintf(line, sizeof(line), "%s\n", url);
        r = file_write_atomic(lo->url_file, line, (size_t)n, 0644, &e);
        if (r < 0) {
            log_error(s->log, "--listen-url-file: %s", err_msg(&e));
            return r;
        }
    }
    return 0;
}

/* Runs the downstream until it is done. config is borrowed (kept by the caller). */
static int run(struct serve *s, enum downstream_mode mode, const struct mcp_config *config,
               const char *single_name, int64_t connect_timeout_ms, bool bridge_eras,
               enum catalog_audience audience, bool watch, const struct listen_opts *lo)
{
    bool stdio = !lo || !lo->listen || lo->stdio;
    s->creds.log = s->log;
    s->creds.g = s->g;
    s->creds.config = config;
    struct err e = ERR_INIT;
    int r;

    s->in_flags = s->out_flags = -1;
    s->status = BRIDGE_EXIT_FAILED;
    r = loop_new(&s->loop);
    if (r < 0) {
        log_error(s->log, "cannot start the event loop: %s", strerror(-r));
        goto out;
    }
    /* signals first, so that none arriving during the start is lost to its default action */
    r = loop_signal(s->loop, SIGTERM, on_stop, s);
    if (r >= 0)
        r = loop_signal(s->loop, SIGINT, on_stop, s);
    if (r >= 0)
        r = loop_signal(s->loop, SIGHUP, mode == DOWNSTREAM_AGGREGATE ? on_reload : on_hup_single,
                        s);
    if (r < 0) {
        log_error(s->log, "cannot watch signals: %s", strerror(-r));
        goto out;
    }
    r = stdio ? set_nonblock(STDIN_FILENO, &s->in_flags) : 0;
    if (r >= 0 && stdio)
        r = set_nonblock(STDOUT_FILENO, &s->out_flags);
    if (r < 0) {
        log_error(s->log,
                  "cannot use stdin/stdout (%s): run mcp-bridge with the agent on its "
                  "stdin and stdout",
                  strerror(-r));
        goto out;
    }
    s->creds.loop = s->loop;
    struct downstream_opts o = {
        .loop = s->loop,
        .log = s->log,
        .in_fd = stdio ? STDIN_FILENO : -1,
        .out_fd = stdio ? STDOUT_FILENO : -1,
        .mode = mode,
        .config = config,
        .single_name = single_name,
        .bridge_eras = bridge_eras,
        .audience = audience,
        .cred_new = cred_setup_provider,
        .cred_userdata = &s->creds,
        .connect_timeout_ms = connect_timeout_ms,
        .persist = lo && lo->listen,
        .on_done = on_done,
        .userdata = s,
    };
    r = downstream_new(&o, &s->d, &e);
    if (r < 0) {
        log_error(s->log, "%s", err_msg(&e));
        goto out;
    }
    if (lo && lo->listen && (r = start_listener(s, lo)) < 0) {
        /* a listener refused as asked for (not loopback without a token, not an address) is
         * the command line's fault */
        if (r == -EPERM || r == -EINVAL)
            s->status = BRIDGE_EXIT_USAGE;
        goto out;
    }
    if (watch) {
        r = watch_new(s->loop, WATCH_SETTLE_MS, on_config_changed, s, &s->watch);
        if (r < 0)
            log_warn(s->log,
                     "cannot watch the configuration files (%s): send SIGHUP after a "
                     "change",
                     strerror(-r));
        watch_config(s);
    }
    r = loop_run(s->loop);
    if (r < 0) {
        log_error(s->log, "the event loop failed: %s", strerror(-r));
        s->status = BRIDGE_EXIT_FAILED;
    } else if (!s->done) {
        /* the loop ran out of work without on_done: not supposed to happen; say so */
        log_error(s->log, "the bridge stopped unexpectedly");
        s->status = BRIDGE_EXIT_FAILED;
    }
out:
    watch_free(s->watch);
    s->watch = NULL;
    downstream_free(s->d); /* first: its agents' transports are the listener's */
    s->d = NULL;
    agent_http_free(s->http);
    s->http = NULL;
    loop_free(s->loop);
    s->loop = NULL;
    restore_flags(s);
    return s->status;
}

/* the options of serve and connect */
enum {
    OPT_CONNECT_TIMEOUT = 256,
    OPT_HEADER,
    OPT_ALLOW_HTTP,
    OPT_BRIDGE_ERAS,
    OPT_AGENT,
    OPT_NO_WATCH,
    OPT_LISTEN,
    OPT_STDIO,
    OPT_LISTEN_URL_FILE,
    OPT_LISTEN_TOKEN,
    OPT_ALLOW_ORIGIN,
    OPT_MAX_AGENTS,
    OPT_LISTEN_ISSUER,
    OPT_LISTEN_PUBLIC_URL,
    OPT_LISTEN_AUDIENCE,
    OPT_LISTEN_SCOPE,
    OPT_STATE_KEY,
    OPT_REPLICA_NAME,
    OPT_LISTEN_LAST = OPT_REPLICA_NAME, /* the listener's: OPT_LISTEN .. here */
};

/* The listener's options, serve's and connect's alike (listen_option() reads them) */
/* clang-format off */
#define LISTEN_OPTIONS                                                  \
    {"listen", required_argument, NULL, OPT_LISTEN},                    \
    {"stdio", no_argument, NULL, OPT_STDIO},                            \
    {"listen-url-file", required_argument, NULL, OPT_LISTEN_URL_FILE},  \
    {"listen-token", required_argument, NULL, OPT_LISTEN_TOKEN},        \
    {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},        \
    {"max-agents", required_argument, NULL, OPT_MAX_AGENTS},            \
    {"listen-issuer", required_argument, NULL, OPT_LISTEN_ISSUER},      \
    {"listen-public-url", required_argument, NULL, OPT_LISTEN_PUBLIC_URL}, \
    {"listen-audience", required_argument, NULL, OPT_LISTEN_AUDIENCE},  \
    {"listen-scope", required_argument, NULL, OPT_LISTEN_SCOPE},        \
    {"state-key", required_argument, NULL, OPT_STATE_KEY},              \
    {"replica-name", required_argument, NULL, OPT_REPLICA_NAME}
/* clang-format on */

const struct option cli_serve_options[] = {
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"agent", required_argument, NULL, OPT_AGENT},
    {"no-watch", no_argument, NULL, OPT_NO_WATCH},
    LISTEN_OPTIONS,
    {0},
};

/* One of serve's --listen options into lo: 0, or -EINVAL said in the log. */
static int listen_option(int opt, const char *arg, struct listen_opts *lo, struct log *log)
{
    char *end;
    unsigned long n;
    switch (opt) {
    case OPT_LISTEN:
        lo->listen = arg;
        return 0;
    case OPT_STDIO:
        lo->stdio = true;
        return 0;
    case OPT_LISTEN_URL_FILE:
        lo->url_file = arg;
        return 0;
    case OPT_LISTEN_TOKEN:
        lo->token_name = arg;
        return 0;
    case OPT_LISTEN_ISSUER:
        lo->issuer = arg;
        return 0;
    case OPT_LISTEN_PUBLIC_URL:
        lo->public_url = arg;
        return 0;
    case OPT_LISTEN_AUDIENCE:
        lo->audience = arg;
        return 0;
    case OPT_LISTEN_SCOPE:
        if (lo->n_scopes == MAX_SCOPES || !*arg || strpbrk(arg, " \"\\")) {
            log_error(log,
                      "--listen-scope: one scope (no space, quote or backslash) each time, "
                      "at most %d",
                      MAX_SCOPES);
            return -EINVAL;
        }
        lo->scopes[lo->n_scopes++] = arg;
        return 0;
    case OPT_STATE_KEY:
        lo->state_key = arg;
        return 0;
    case OPT_REPLICA_NAME:
        lo->replica = arg;
        return 0;
    case OPT_ALLOW_ORIGIN:
        if (lo->n_origins == MAX_ORIGINS) {
            log_error(log, "--allow-origin: at most %d origins", MAX_ORIGINS);
            return -EINVAL;
        }
        lo->origins[lo->n_origins++] = arg;
        return 0;
    case OPT_MAX_AGENTS:
        errno = 0;
        n = strtoul(arg, &end, 10);
        if (!*arg || *end || errno || n == 0 || n > 100000 || arg[0] == '-') {
            log_error(log, "--max-agents: '%s' is not a number from 1 to 100000", arg);
            return -EINVAL;
        }
        lo->max_agents = n;
        return 0;
    default:
        return -EINVAL;
    }
}

/* The listener's options without --listen: -EINVAL, said in the log. */
static int listen_orphans(const struct listen_opts *lo, struct log *log)
{
    if ((lo->public_url || lo->audience || lo->n_scopes) && !lo->issuer) {
        log_error(log, "--listen-public-url, --listen-audience and --listen-scope go with "
                       "--listen-issuer URL");
        return -EINVAL;
    }
    if (lo->issuer && lo->token_name) {
        log_error(log, "--listen-token and --listen-issuer: agents authenticate one way, choose "
                       "one");
        return -EINVAL;
    }
    if (lo->listen || !(lo->stdio || lo->url_file || lo->token_name || lo->issuer ||
                        lo->n_origins || lo->max_agents || lo->state_key || lo->replica))
        return 0;
    log_error(log, "--stdio, --listen-url-file, --listen-token, --listen-issuer, --allow-origin, "
                   "--max-agents, --state-key and --replica-name go with --listen [ADDR:]PORT");
    return -EINVAL;
}

int cmd_serve(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct serve s = {.log = log, .g = g};
    int64_t connect_timeout_ms = 0;
    bool watch = true;
    enum catalog_audience audience = CATALOG_FOR_AGENT;
    struct listen_opts lo = {0};
    int opt;

    if (args_wants_help(argc, argv)) {
        fputs(serve_help, stdout);
        fputs(serve_help_listen, stdout);
        return BRIDGE_EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "", cli_serve_options, NULL)) != -1) {
        switch (opt) {
        case OPT_CONNECT_TIMEOUT:
            if (cli_parse_duration("--connect-timeout", optarg, log, &connect_timeout_ms) < 0)
                return BRIDGE_EXIT_USAGE;
            break;
        case OPT_AGENT:
            /* the one agent that renames and proxies the bridge's tools itself; every other
             * shows them as listed and needs no option */
            if (strcmp(optarg, "pi") != 0) {
                log_error(log,
                          "--agent: '%s' is not an agent the bridge knows: 'pi' (through "
                          "pi-mcp-adapter) is the one; other agents need no --agent",
                          optarg);
                return BRIDGE_EXIT_USAGE;
            }
            audience = CATALOG_FOR_PI_ADAPTER;
            break;
        case OPT_NO_WATCH:
            watch = false;
            break;
        default:
            if (opt >= OPT_LISTEN && opt <= OPT_LISTEN_LAST) {
                if (listen_option(opt, optarg, &lo, log) < 0)
                    return BRIDGE_EXIT_USAGE;
                break;
            }
            return cli_option_error(log, argv, "", cli_serve_options);
        }
    }
    if (optind < argc) {
        log_error(log,
                  "serve takes no argument, '%s' is one too many (to serve one server: "
                  "'mcp-bridge connect %s')",
                  argv[optind], argv[optind]);
        return BRIDGE_EXIT_USAGE;
    }
    if (listen_orphans(&lo, log) < 0)
        return BRIDGE_EXIT_USAGE;
    s.config = cli_load_config(g, log);
    if (!s.config)
        return BRIDGE_EXIT_CONFIG;
    size_t valid = 0;
    for (size_t i = 0; i < mcp_config_count(s.config); i++)
        valid += !mcp_config_at(s.config, i)->error;
    if (valid == 0)
        log_warn(log, "no server is configured: the agent sees no tools until one is added "
                      "('mcp-bridge add')");
    else
        log_info(log, "serving %zu server%s", valid, valid == 1 ? "" : "s");
    if (audience == CATALOG_FOR_PI_ADAPTER)
        log_info(log, "--agent pi: tools named as pi-mcp-adapter names them, no proxy tool 'mcp' "
                      "of the bridge (the adapter's is pi's), every tool listed");
    if ((!lo.listen || lo.stdio) && isatty(STDIN_FILENO) && !g->quiet)
        log_error(log, "reading MCP messages from the terminal: mcp-bridge is meant to be run by "
                       "an agent (see 'mcp-bridge --help'); Ctrl-D ends");
    int status = run(&s, DOWNSTREAM_AGGREGATE, s.config, NULL, connect_timeout_ms, false, audience,
                     watch, &lo);
    mcp_config_free(s.config);
    return status;
}

const struct option cli_connect_options[] = {
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"header", required_argument, NULL, OPT_HEADER},
    {"allow-http", no_argument, NULL, OPT_ALLOW_HTTP},
    {"bridge-eras", no_argument, NULL, OPT_BRIDGE_ERAS},
    LISTEN_OPTIONS,
    {0},
};

int cmd_connect(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    unsigned flags = 0;
    bool bridge_eras = false;
    struct serve s = {.log = log, .g = g};
    char *headers[MAX_HEADERS + 1] = {0};
    size_t n_headers = 0;
    int64_t connect_timeout_ms = 0;
    const char *name = NULL;
    struct listen_opts lo = {0};
    int opt;

    if (args_wants_help(argc, argv)) {
        fputs(connect_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    while ((opt = getopt_long(argc, argv, "H:", cli_connect_options, NULL)) != -1) {
        switch (opt) {
        case OPT_CONNECT_TIMEOUT:
            if (cli_parse_duration("--connect-timeout", optarg, log, &connect_timeout_ms) < 0)
                return BRIDGE_EXIT_USAGE;
            break;
        case 'H':
        case OPT_HEADER:
            if (n_headers == MAX_HEADERS) {
                log_error(log, "--header: at most %d headers", MAX_HEADERS);
                return BRIDGE_EXIT_USAGE;
            }
            if (!strchr(optarg, ':') || optarg[0] == ':') {
                log_error(log, "--header: a header is written 'Name: value' (see 'mcp-bridge "
                               "connect --help')");
                return BRIDGE_EXIT_USAGE;
            }
            headers[n_headers++] = optarg;
            break;
        case OPT_ALLOW_HTTP:
            flags |= CLI_ALLOW_HTTP;
            break;
        case OPT_BRIDGE_ERAS:
            bridge_eras = true;
            break;
        default:
            if (opt >= OPT_LISTEN && opt <= OPT_LISTEN_LAST) {
                if (listen_option(opt, optarg, &lo, log) < 0)
                    return BRIDGE_EXIT_USAGE;
                break;
            }
            return cli_option_error(log, argv, "H:", cli_connect_options);
        }
    }
    if (argc - optind != 1) {
        log_error(log, "connect takes exactly one SERVER, a name or a URL (see 'mcp-bridge "
                       "connect --help')");
        return BRIDGE_EXIT_USAGE;
    }
    if (listen_orphans(&lo, log) < 0)
        return BRIDGE_EXIT_USAGE;
    /* the header values are registered for redaction as the entry is made (cli.h) */
    struct mcp_config *c =
        cli_config_for(argv[optind], (const char *const *)headers, flags, g, log, &name);
    if (!c)
        return cli_config_for_failed(argv[optind]);
    if (cli_is_url(argv[optind]))
        s.creds.auth_target = argv[optind]; /* mcp-auth is told the URL: it has no entry */
    int status = run(&s, DOWNSTREAM_SINGLE, c, name, connect_timeout_ms, bridge_eras,
                     CATALOG_FOR_AGENT, false, &lo);
    mcp_config_free(c);
    return status;
}
