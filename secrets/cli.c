/* cli.c - the context the secrets commands run in: secrets.json's paths, the store opened
 * (locked for a change), the cache and the resolver; the messages; values written out */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/path.h"
#include "credkit/redact.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

#include "cli.h"

void cli_say(struct cli *c, enum log_level level, const char *fmt, ...)
{
    char msg[2 * ERR_MSG_MAX];
    va_list ap;
    if (log_get_level(c->log) < level)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* redacted before it is escaped: a value with a control character is still found */
    struct buf red;
    buf_init_secret(&red, 4 * sizeof(msg));
    int r = redact_apply(log_redact(c->log), msg, strlen(msg), &red);
    char *esc = r < 0 ? NULL : text_escape_dup(buf_str(&red));
    buf_release(&red);
    log_msg(c->log, level, "%s", esc ? esc : "(out of memory)");
    free(esc);
}

int usage_error(struct cli *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cli_error(c, "%s (see 'secrets --help')", msg);
    return EXIT_USAGE;
}

/* The agent directory and secrets.json's path. An exit status. */
int cli_paths(struct cli *c)
{
    struct err e = ERR_INIT;
    int r = path_agent_dir(&c->agent_dir, &e);
    if (r >= 0)
        r = path_agent_file("secrets.json", &c->store_path, &e);
    if (r < 0) {
        cli_error(c, "%s", err_msg(&e));
        return EXIT_CONFIG;
    }
    return EXIT_OK;
}

/* Reports why secrets.json could not be read. EXIT_CONFIG. */
static int store_failed(struct cli *c, int r, const struct err *e)
{
    cli_error(c, "%s", err_msg(e));
    if (r == -EBADMSG)
        cli_error(c, "fix the file by hand; it is left exactly as it is");
    return EXIT_CONFIG;
}

/* The cache and the resolver, once the store is open. An exit status. */
static int cli_start(struct cli *c)
{
    int r = cache_open(&c->cache);
    if (r < 0) {
        cli_error(c, "cannot open the cache: %s", strerror(-r));
        return EXIT_FAILED;
    }
    if (!c->cache)
        cli_debug(c, "no private runtime directory ($XDG_RUNTIME_DIR): commands run on "
                     "every resolution");
    r = resolver_new(c->store, c->cache, log_redact(c->log), c->agent_dir, c->resolve_flags,
                     &c->rs);
    if (r < 0) {
        cli_error(c, "%s", strerror(-r));
        return EXIT_FAILED;
    }
    return EXIT_OK;
}

int cli_open(struct cli *c)
{
    struct err e = ERR_INIT;
    int status = cli_paths(c);
    if (status != EXIT_OK)
        return status;
    /* a directory others can enter lets them swap the recipes: tightened to 0700 when ours,
     * refused with the fix when not, when reading too (as mcp-auth does its store); never
     * created here, and left alone while it holds no secrets.json */
    struct stat st;
    if (lstat(c->store_path, &st) == 0 && dir_ensure(c->agent_dir, 0700, &e) < 0) {
        cli_error(c, "%s", err_msg(&e));
        return EXIT_CONFIG;
    }
    int r = store_load(c->store_path, &c->store, &e);
    if (r < 0)
        return store_failed(c, r, &e);
    return cli_start(c);
}

int cli_open_locked(struct cli *c, struct jsonfile **ret)
{
    struct err e = ERR_INIT;
    struct jsonfile *f = NULL;
    int r, status = cli_paths(c);
    if (status != EXIT_OK)
        return status;
    char *lock = store_lock_path(c->store_path);
    if (!lock) {
        cli_error(c, "out of memory");
        return EXIT_FAILED;
    }
    const struct jsonfile_opts o = {
        .lock_path = lock,
        .lock_timeout_ms = STORE_LOCK_TIMEOUT_MS,
        .max_size = STORE_MAX_SIZE,
        .mode = 0600,
        /* a configure that stores a keychain value must fail, and restore the keychain, when
         * the file cannot be written: written even when the recipe is the same */
        .flags = JSONFILE_CREATE | JSONFILE_SECRET | JSONFILE_PRIVATE_DIR | JSONFILE_ALWAYS_WRITE |
                 JSONFILE_DUPLICATES,
    };
    r = jsonfile_open(c->store_path, &o, &f, &e);
    free(lock);
    if (r >= 0)
        r = store_from_json(c->store_path, jsonfile_doc(f), &c->store, &e);
    if (r >= 0) {
        const struct json_dup *d = NULL;
        size_t n = jsonfile_duplicates(f, &d);
        r = store_set_duplicates(c->store, d, n);
        /* a rewrite would keep only one of each: refused before anything is changed */
        if (r >= 0)
            r = store_duplicates_error(c->store, &e);
    }
    if (r < 0) {
        jsonfile_free(f);
        return store_failed(c, r, &e);
    }
    status = cli_start(c);
    if (status != EXIT_OK) {
        jsonfile_free(f);
        return status;
    }
    *ret = f;
    return EXIT_OK;
}

void cli_close(struct cli *c)
{
    resolver_free(c->rs);
    c->rs = NULL;
    cache_free(c->cache);
    c->cache = NULL;
    store_free(c->store);
    c->store = NULL;
    free(c->store_path);
    c->store_path = NULL;
    free(c->agent_dir);
    c->agent_dir = NULL;
}

void cli_mask(const char *value, size_t len, char *out, size_t size)
{
    /* a long value is recognisable by its first characters (ghp_, sk-) without being given
     * away; a short one shows nothing but its length */
    if (value && len >= 16)
        (void)snprintf(out, size, "%.3s... (%zu characters)", value, len);
    else
        (void)snprintf(out, size, "%zu character%s", len, len == 1 ? "" : "s");
}

bool cli_label_in_use(struct store *s, const char *label, const char *except_name)
{
    for (size_t i = 0; i < store_count(s); i++) {
        const struct recipe *o = NULL;
        const char *on = store_name(s, i);
        if (strcmp(on, except_name) != 0 && store_get(s, on, &o, NULL) >= 0 &&
            o->kind == RECIPE_KEYCHAIN && strcmp(o->arg, label) == 0)
            return true;
    }
    return false;
}

void write_out(const char *p, size_t n)
{
    /* stdout going away (a closed pipe) is the reader's choice, not ours to report */
    (void)write_full(STDOUT_FILENO, p, n);
}
