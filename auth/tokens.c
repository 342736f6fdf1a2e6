/* tokens.c - the token store: one private JSON file per (server URL, issuer, account name)
 *
 * Entry file: <agent dir>/oauth/<first 32 hex digits of sha256(server_url "\n" issuer)>.json
 * for the default account, of sha256(server_url "\n" issuer "\n" label) for a named one (so
 * every file written before accounts existed is the default account's, where it was),
 * lock file: the same name + ".lock" (never deleted: a process waiting on a lock file that
 * someone unlinks would lock a file nobody else opens). Format version 1:
 *
 *   {"version": 1, "server_url": ..., "issuer": ..., "label": ... (absent: default account),
 *    "registration": {"method": "dynamic" | "pre-registered" | "metadata-document",
 *                     "client_id", "client_secret", "token_endpoint_auth_method",
 *                     "redirect_uri", "client_secret_expires_at", "registered_at"},
 *    "tokens": {"access_token", "token_type", "refresh_token", "dpop_key", "scope", "expires_at",
 *               "issued_at"},
 *    "discovery": {"authorization_server_metadata": {...}, "protected_resource_metadata": {...},
 *                  "resource_metadata_url", "fetched_at"},
 *    "updated_at": ...}
 *
 * Absent values are omitted (0 timestamps too); unknown top-level keys are kept and written
 * back. An entry is only ever replaced by tokens_save() after the file in place was read
 * successfully (or is absent): a corrupt file, one of another format version, one readable by
 * others or one whose content does not match its name stays for the user to look at.
 *
 * Where the secret members live is the backend's (tokens_secrets.h): in the file, or in the
 * store's one keychain item, the file then naming the generation of its secrets there.
 *
 * json-c keeps its own copies of parsed strings; the secret ones in trees we parse or build are
 * wiped before the tree is released, but json-c's tokenizer buffer is freed unwiped (a known
 * limitation). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/util.h"

#include "token_json.h"
#include "tokens.h"
#include "tokens_secrets.h"

#define TOKENS_ENTRY_MAX (1024u * 1024u) /* bytes in one entry file */
#define TOKENS_SCAN_MAX  4096            /* entry files looked at in one scan */
#define ENTRY_HASH_HEX   32
#define ENTRY_SUFFIX     ".json"
#define ENTRY_NAME_LEN   (ENTRY_HASH_HEX + sizeof(ENTRY_SUFFIX) - 1)

const char *registration_method_str(enum registration_method m)
{
    switch (m) {
    case REGISTRATION_PRE:
        return "pre-registered";
    case REGISTRATION_METADATA:
        return "metadata-document";
    case REGISTRATION_DYNAMIC:
        return "dynamic";
    case REGISTRATION_NONE:
        break;
    }
    return "none";
}

bool tokens_label_valid(const char *label)
{
    size_t n = label ? strlen(label) : 0;
    if (n == 0 || n > TOKENS_LABEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = label[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._@+-", c)))
            return false;
    }
    return true;
}

/* Keys must be unambiguous: "a\nb" + "c" and "a" + "b\nc" would hash alike; a label holds no
 * line break either, so a named account's key has one line more than the default's. */
static int check_key(const char *server_url, const char *issuer, const char *label, struct err *e)
{
    if (label && !tokens_label_valid(label))
        return err_set(e, -EINVAL,
                       "the account name '%.*s' is not valid: up to %d letters, digits and "
                       "'.', '_', '@', '+', '-'",
                       TOKENS_LABEL_MAX, label, TOKENS_LABEL_MAX);
    if (!server_url || !*server_url)
        return err_set(e, -EINVAL, "no server URL for the token store");
    if (!issuer || !*issuer)
        return err_set(e, -EINVAL, "no issuer for the token store");
    if (strpbrk(server_url, "\r\n") || strpbrk(issuer, "\r\n"))
        return err_set(e, -EINVAL, "a server URL or issuer with a line break cannot be stored");
    return 0;
}

/* "<32 hex>.json" for (server_url, issuer, label) into name[ENTRY_NAME_LEN + 1]. */
static int entry_name(const char *server_url, const char *issuer, const char *label, char *name,
                      struct err *e)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = NULL;
    int r;

    r = check_key(server_url, issuer, label, e);
    if (r < 0)
        goto out;
    ctx = EVP_MD_CTX_new();
    if (!ctx) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, server_url, strlen(server_url)) != 1 ||
        EVP_DigestUpdate(ctx, "\n", 1) != 1 || EVP_DigestUpdate(ctx, issuer, strlen(issuer)) != 1 ||
        (label && (EVP_DigestUpdate(ctx, "\n", 1) != 1 ||
                   EVP_DigestUpdate(ctx, label, strlen(label)) != 1)) ||
        EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < ENTRY_HASH_HEX / 2) {
        r = err_set(e, -EIO, "cannot compute SHA-256");
        goto out;
    }
    for (size_t i = 0; i < ENTRY_HASH_HEX / 2; i++) {
        name[2 * i] = hex[md[i] >> 4];
        name[2 * i + 1] = hex[md[i] & 15];
    }
    memcpy(name + ENTRY_HASH_HEX, ENTRY_SUFFIX, sizeof(ENTRY_SUFFIX));
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

static bool is_entry_name(const char *n)
{
    if (strlen(n) != ENTRY_NAME_LEN || strcmp(n + ENTRY_HASH_HEX, ENTRY_SUFFIX) != 0)
        return false;
    for (size_t i = 0; i < ENTRY_HASH_HEX; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return false;
    return true;
}

int tokens_dir(bool create, char **ret, struct err *e)
{
    char *dir = NULL;
    int r = path_agent_file("oauth", &dir, e);
    if (r < 0)
        goto out;
    /* a store others can enter lets them swap entries or read names: tightened to 0700 when
     * ours, refused with the fix when not; also when only reading, but never created then */
    struct stat st;
    if (create || stat(dir, &st) == 0) {
        r = dir_ensure(dir, 0700, e);
        if (r < 0)
            goto out;
    }
    *ret = dir;
    dir = NULL;
    r = 0;
out:
    free(dir);
    return r;
}

static int entry_path(const char *server_url, const char *issuer, const char *label, bool create,
                      char **ret, struct err *e)
{
    char name[ENTRY_NAME_LEN + 1], *dir = NULL, *p = NULL;
    int r = entry_name(server_url, issuer, label, name, e);
    if (r < 0)
        goto out;
    r = tokens_dir(create, &dir, e);
    if (r < 0)
        goto out;
    p = path_join(dir, name);
    if (!p) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = p;
    p = NULL;
    r = 0;
out:
    free(dir);
    return r;
}

int tokens_entry_path(const char *server_url, const char *issuer, const char *label, char **ret,
                      struct err *e)
{
    return entry_path(server_url, issuer, label, false, ret, e);
}

/* ---- entries in memory ---- */

static int strdup_or_null(const char *s, char **ret)
{
    char *c = NULL;
    if (s) {
        c = strdup(s);
        if (!c)
            return -ENOMEM;
    }
    *ret = c;
    return 0;
}

int token_entry_new(const char *server_url, const char *issuer, const char *label,
                    struct token_entry **ret)
{
    struct token_entry *t = NULL;
    int r = check_key(server_url, issuer, label, NULL);
    if (r < 0)
        return r;
    t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    if (strdup_or_null(server_url, &t->server_url) < 0 || strdup_or_null(issuer, &t->issuer) < 0 ||
        strdup_or_null(label, &t->label) < 0) {
        token_entry_free(t);
        return -ENOMEM;
    }
    *ret = t;
    return 0;
}

void token_entry_clear_tokens(struct token_entry *t)
{
    if (!t)
        return;
    secure_free(t->access_token);
    secure_free(t->refresh_token);
    secure_free(t->dpop_key);
    t->dpop_key = NULL;
    free(t->token_type);
    free(t->scope);
    free(t->account);
    t->access_token = t->refresh_token = t->token_type = t->scope = t->account = NULL;
    t->expires_at = 0;
    t->issued_at = 0;
}

void token_entry_clear_registration(struct token_entry *t)
{
    if (!t)
        return;
    token_entry_clear_tokens(t);
    secure_free(t->client_secret);
    free(t->client_id);
    free(t->auth_method);
    free(t->redirect_uri);
    free(t->registration_client_uri);
    secure_free(t->registration_access_token);
    t->client_secret = t->client_id = t->auth_method = t->redirect_uri = NULL;
    t->registration_client_uri = t->registration_access_token = NULL;
    t->registration = REGISTRATION_NONE;
    t->client_secret_expires_at = 0;
    t->registered_at = 0;
}

void token_entry_free(struct token_entry *t)
{
    if (!t)
        return;
    token_entry_clear_registration(t);
    free(t->server_url);
    free(t->issuer);
    free(t->label);
    json_object_put(t->as_metadata);
    json_object_put(t->prm);
    free(t->resource_metadata_url);
    json_object_put(t->extra);
    free(t);
}

/* The store a read looks at: its directory and the backend holding its secrets. */
struct store_ctx {
    char *dir;
    enum tokens_backend backend;
};

static int files_hold_secrets(const char *dir, bool *ret, struct err *e);

static int store_ctx_open(struct store_ctx *sc, struct err *e)
{
    int r = tokens_dir(false, &sc->dir, e);
    if (r >= 0)
        r = tokens_backend_get(sc->dir, files_hold_secrets, &sc->backend, NULL, e);
    return r;
}

static void store_ctx_release(struct store_ctx *sc)
{
    free(sc->dir);
    sc->dir = NULL;
}

/* Reads and checks the entry file at path: private, valid, version 1, and named after its own
 * server_url, issuer and label; with sc, its secrets are fetched from sc's backend (without, the
 * file's content alone). */
static int entry_read(const char *path, const struct store_ctx *sc, struct token_entry **ret,
                      struct err *e)
{
    struct json_object *root = NULL;
    struct token_entry *t = NULL;
    char *disp = path_display(path);
    const char *dp = disp ? disp : path;
    char name[ENTRY_NAME_LEN + 1];
    int r;

    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    r = json_read_file(path, TOKENS_ENTRY_MAX, JSON_READ_SECRET, &root, e);
    if (r < 0)
        goto out;
    if (sc) {
        r = tokens_secrets_fill(sc->dir, sc->backend, base, root, e);
        if (r < 0)
            goto out;
    }
    r = token_entry_from_json(root, dp, &t, e);
    if (r < 0)
        goto out;
    struct err ne = ERR_INIT;
    r = entry_name(t->server_url, t->issuer, t->label, name, &ne);
    if (r < 0) {
        r = err_set(e, -EBADMSG, "'%s': %s: fix the file or remove it (and log in again)", dp,
                    err_msg(&ne));
        goto out;
    }
    if (strcmp(base, name) != 0) {
        /* copied or renamed by hand: using it could send its token to the wrong server */
        r = err_set(e, -EBADMSG,
                    "'%s' does not belong here: its server_url, issuer and label belong in "
                    "'%s'; "
                    "remove it, or log in again",
                    dp, name);
        goto out;
    }
    *ret = t;
    t = NULL;
    r = 0;
out:
    if (root) {
        token_json_wipe_secrets(root);
        json_object_put(root);
    }
    token_entry_free(t);
    free(disp);
    return r;
}

/* ---- the store ---- */

static int no_entry(struct err *e)
{
    return err_set(e, -ENOENT, "no stored login for this server");
}

static int entry_cmp(const void *a, const void *b)
{
    const struct token_entry *x = *(const struct token_entry *const *)a;
    const struct token_entry *y = *(const struct token_entry *const *)b;
    int c = strcmp(x->server_url, y->server_url);
    if (c)
        return c;
    if (!x->label != !y->label)
        return x->label ? 1 : -1; /* the default account first */
    c = x->label ? strcmp(x->label, y->label) : 0;
    return c ? c : strcmp(x->issuer, y->issuer);
}

static bool same_label(const char *a, const char *b)
{
    return a ? b && strcmp(a, b) == 0 : !b;
}

static void entries_free(struct token_entry **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);
}

/* The store's directory for reading; *ret NULL when there is none. */
static int open_store_dir(const char *dir, const char *ddisp, DIR **ret, struct err *e)
{
    *ret = NULL;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int k = errno;
        if (k == ENOENT)
            return 0;
        return err_set(e, -k, "cannot read the directory '%s': %s", ddisp, strerror(k));
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int k = errno;
        (void)close(fd);
        return err_set(e, -k, "cannot read the directory '%s': %s", ddisp, strerror(k));
    }
    *ret = d;
    return 0;
}

/* Reads the entry file name in dir and appends it to *v (*n of them) when it is readable and
 * (with server_url) that server's for the account label; an unreadable one goes to *problem.
 * Fails on ENOMEM only. */
static int scan_one(const struct store_ctx *sc, const char *name, const char *server_url,
                    const char *label, struct token_entry ***v, size_t *n, struct err *problem,
                    struct err *e)
{
    struct token_entry *t = NULL;
    struct err pe = ERR_INIT;
    char *path = path_join(sc->dir, name);
    if (!path)
        return err_set(e, -ENOMEM, "out of memory");
    int r = entry_read(path, sc, &t, &pe);
    free(path);
    if (r == -ENOMEM)
        return err_set(e, -ENOMEM, "out of memory");
    if (r == -ENOENT)
        return 0; /* deleted while we looked */
    if (r < 0) {
        if (problem)
            *problem = pe;
        return 0;
    }
    if (server_url && (strcmp(t->server_url, server_url) != 0 || !same_label(t->label, label))) {
        token_entry_free(t);
        return 0;
    }
    struct token_entry **nv = realloc(*v, (*n + 1) * sizeof(*nv));
    if (!nv) {
        token_entry_free(t);
        return err_set(e, -ENOMEM, "out of memory");
    }
    *v = nv;
    nv[(*n)++] = t;
    return 0;
}

/* Every readable entry (server_url NULL) or those of server_url for the account label, sorted
 * by server URL, label and issuer. Unreadable ones are skipped; the last problem goes to
 * *problem (which stays clear when there is none). A missing store is empty. */
static int store_scan(const char *server_url, const char *label, struct token_entry ***ret,
                      size_t *ret_n, struct err *problem, struct err *e)
{
    struct token_entry **v = NULL;
    size_t n = 0, seen = 0;
    struct store_ctx sc = {0};
    char *ddisp = NULL;
    DIR *d = NULL;
    int r;

    r = store_ctx_open(&sc, e);
    if (r < 0)
        goto out;
    ddisp = path_display(sc.dir);
    const char *dd = ddisp ? ddisp : sc.dir;
    r = open_store_dir(sc.dir, dd, &d, e);
    while (r >= 0 && d) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                int k = errno;
                r = err_set(e, -k, "cannot read the directory '%s': %s", dd, strerror(k));
            }
            break;
        }
        if (!is_entry_name(de->d_name))
            continue; /* ".", "..", lock files, temporary files of an atomic write */
        if (++seen > TOKENS_SCAN_MAX)
            r = err_set(e, -E2BIG, "'%s' holds more than %d entries: remove old ones", dd,
                        TOKENS_SCAN_MAX);
        else
            r = scan_one(&sc, de->d_name, server_url, label, &v, &n, problem, e);
    }
    if (r < 0)
        goto out;
    if (n > 1)
        qsort(v, n, sizeof(*v), entry_cmp);
    *ret = v;
    v = NULL;
    *ret_n = n;
    n = 0;
    r = 0;
out:
    entries_free(v, n);
    if (d)
        (void)closedir(d);
    free(ddisp);
    store_ctx_release(&sc);
    return r;
}

/* Which of two entries of one server is its current one: the one that holds tokens, then the
 * one whose tokens were obtained last, then the one written last. Not simply the one written
 * last: when the server's authorization server changes, the old issuer's entry is still written
 * (a refresh that failed, a registration dropped) after the sign-in at the new one, and must not
 * take its place. */
static bool entry_newer(const struct token_entry *a, const struct token_entry *b)
{
    bool ta = a->access_token != NULL, tb = b->access_token != NULL;
    if (ta != tb)
        return ta;
    if (a->issued_at != b->issued_at)
        return a->issued_at > b->issued_at;
    return a->updated_at > b->updated_at;
}

int tokens_load(const char *server_url, const char *issuer, const char *label,
                struct token_entry **ret, struct err *e)
{
    struct token_entry **v = NULL, *t = NULL;
    struct err problem = ERR_INIT;
    struct store_ctx sc = {0};
    char *path = NULL;
    size_t n = 0;
    int r;

    if (!server_url || !*server_url) {
        r = err_set(e, -EINVAL, "no server URL for the token store");
        goto out;
    }
    if (issuer) {
        r = tokens_entry_path(server_url, issuer, label, &path, e);
        if (r >= 0)
            r = store_ctx_open(&sc, e);
        if (r < 0)
            goto out;
        r = entry_read(path, &sc, &t, e);
        if (r == -ENOENT)
            r = no_entry(e);
        if (r < 0)
            goto out;
        if (strcmp(t->server_url, server_url) != 0 || strcmp(t->issuer, issuer) != 0 ||
            !same_label(t->label, label)) {
            char *disp = path_display(path);
            r = err_set(e, -EBADMSG,
                        "'%s' does not belong here: it holds another server's entry; remove "
                        "it, or log in again",
                        disp ? disp : path);
            free(disp);
            goto out;
        }
    } else {
        if (label && !tokens_label_valid(label)) {
            r = check_key(server_url, "-", label, e);
            goto out;
        }
        r = store_scan(server_url, label, &v, &n, &problem, e);
        if (r < 0)
            goto out;
        if (n == 0) {
            /* an unreadable entry might have been this server's: saying "log in" could lead
             * to a new login replacing it, so say what is wrong instead */
            if (problem.code < 0)
                r = err_set(e, problem.code,
                            "%s (it may be this server's entry, so it was not skipped)",
                            problem.msg);
            else
                r = no_entry(e);
            goto out;
        }
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (entry_newer(v[i], v[best]))
                best = i; /* ties: the first issuer in sort order */
        t = v[best];
        v[best] = NULL;
    }
    *ret = t;
    t = NULL;
    r = 0;
out:
    token_entry_free(t);
    entries_free(v, n);
    store_ctx_release(&sc);
    free(path);
    return r;
}

/* tokens_file_secrets_fn: whether an entry file of the store holds a secret (stops at the
 * first; unreadable ones count as holding one: they might) */
static int files_hold_secrets(const char *dir, bool *ret, struct err *e)
{
    DIR *d = NULL;
    bool found = false;
    int r = open_store_dir(dir, dir, &d, e);
    while (r >= 0 && d && !found) {
        struct dirent *de = readdir(d);
        if (!de)
            break;
        if (!is_entry_name(de->d_name))
            continue;
        struct json_object *root = NULL;
        char *p = path_join(dir, de->d_name);
        if (!p) {
            r = err_set(e, -ENOMEM, "out of memory");
            break;
        }
        if (json_read_file(p, TOKENS_ENTRY_MAX, 0, &root, NULL) < 0)
            found = true;
        else
            found = token_json_has_secrets(root);
        token_json_wipe_secrets(root);
        json_object_put(root);
        free(p);
    }
    if (d)
        (void)closedir(d);
    if (r >= 0)
        *ret = found;
    return r;
}

int tokens_save(struct token_entry *t, struct err *e)
{
    struct json_object *root = NULL;
    struct token_entry *old = NULL;
    struct file_lock *lock = NULL;
    enum tokens_backend backend;
    char *path = NULL, *dir = NULL;
    int r;

    if (!t) {
        r = err_set(e, -EINVAL, "no token store entry to save");
        goto out;
    }
    r = entry_path(t->server_url, t->issuer, t->label, true, &path, e);
    if (r >= 0)
        r = tokens_dir(false, &dir, e);
    if (r >= 0)
        r = tokens_store_lock(dir, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r >= 0)
        r = tokens_backend_for_write(dir, files_hold_secrets, &backend, e);
    if (r < 0)
        goto out;

    /* never replace a file we cannot read: it may be corrupt, newer, or someone else's */
    struct err oe = ERR_INIT;
    r = entry_read(path, NULL, &old, &oe);
    if (r < 0 && r != -ENOENT) {
        r = err_set(e, r, "%s; not replacing it", oe.msg);
        goto out;
    }

    int64_t now = now_unix();
    r = token_entry_to_json(t, now, &root);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    /* the secrets first (keyring: into the item), then the file that names them */
    r = tokens_secrets_keep(dir, backend, strrchr(path, '/') + 1, root, e);
    if (r < 0)
        goto out;
    r = json_write_file(path, root, 0600, e);
    if (r < 0)
        goto out;
    t->updated_at = now;
    r = 0;
out:
    if (root) {
        token_json_wipe_secrets(root);
        json_object_put(root);
    }
    file_lock_release(lock);
    token_entry_free(old);
    free(dir);
    free(path);
    return r;
}

int tokens_delete(const char *server_url, const char *issuer, const char *label, struct err *e)
{
    struct file_lock *lock = NULL;
    enum tokens_backend backend;
    char *path = NULL, *disp = NULL, *dir = NULL;
    int r = tokens_entry_path(server_url, issuer, label, &path, e);
    if (r >= 0)
        r = tokens_dir(false, &dir, e);
    /* under the store's lock: a move in progress would write the file back */
    if (r >= 0)
        r = tokens_store_lock(dir, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r >= 0)
        r = tokens_backend_get(dir, files_hold_secrets, &backend, NULL, e);
    if (r < 0)
        goto out;
    if (unlink(path) < 0) {
        int k = errno;
        if (k == ENOENT) {
            r = no_entry(e);
        } else {
            disp = path_display(path);
            r = err_set(e, -k, "cannot remove '%s': %s", disp ? disp : path, strerror(k));
        }
        goto out;
    }
    /* the file is gone, so is the sign-in; secrets the item keeps after a failure here are
     * dropped by the next write (tokens_secrets_keep) */
    r = tokens_secrets_drop(dir, backend, strrchr(path, '/') + 1, e);
    if (r < 0)
        err_clear(e);
    r = 0;
out:
    file_lock_release(lock);
    free(disp);
    free(dir);
    free(path);
    return r;
}

int tokens_lock(const char *server_url, const char *issuer, const char *label, int64_t timeout_ms,
                struct file_lock **ret, struct err *e)
{
    char *path = NULL, *lock = NULL;
    int r = entry_path(server_url, issuer, label, true, &path, e);
    if (r < 0)
        goto out;
    if (asprintf(&lock, "%s.lock", path) < 0) {
        lock = NULL;
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    r = file_lock_acquire(lock, timeout_ms, ret, e);
out:
    free(lock);
    free(path);
    return r;
}

int tokens_list(struct token_entry ***ret, size_t *ret_n, struct err *e)
{
    struct err problem = ERR_INIT;
    int r = store_scan(NULL, NULL, ret, ret_n, &problem, e);
    if (r < 0)
        return r;
    if (problem.code < 0 && e)
        *e = problem;
    return 0;
}

int tokens_store_backend(enum tokens_backend *ret, struct err *e)
{
    char *dir = NULL;
    int r = tokens_dir(false, &dir, e);
    if (r >= 0)
        r = tokens_backend_get(dir, files_hold_secrets, ret, NULL, e);
    free(dir);
    return r;
}

/* ---- moving a store from one backend to the other ---- */

/* The JSON of every entry file of dir, with their names. */
struct raw_entries {
    struct strv names;
    struct json_object **roots;
};

static void raw_entries_release(struct raw_entries *re)
{
    for (size_t i = 0; i < re->names.n; i++) {
        token_json_wipe_secrets(re->roots[i]);
        json_object_put(re->roots[i]);
    }
    free(re->roots);
    strv_release(&re->names);
}

static int raw_entries_read(const char *dir, struct raw_entries *re, struct err *e)
{
    DIR *d = NULL;
    char *disp = path_display(dir);
    const char *dd = disp ? disp : dir;
    int r = open_store_dir(dir, dd, &d, e);
    while (r >= 0 && d) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno)
                r = err_set(e, -errno, "cannot read the directory '%s': %s", dd, strerror(errno));
            break;
        }
        if (!is_entry_name(de->d_name))
            continue;
        if (re->names.n >= TOKENS_SCAN_MAX) {
            r = err_set(e, -E2BIG, "'%s' holds more than %d entries: remove old ones", dd,
                        TOKENS_SCAN_MAX);
            break;
        }
        struct json_object *root = NULL;
        char *p = path_join(dir, de->d_name);
        struct json_object **nv = realloc(re->roots, (re->names.n + 1) * sizeof(*nv));
        if (!p || !nv) {
            free(p);
            if (nv)
                re->roots = nv;
            r = err_set(e, -ENOMEM, "out of memory");
            break;
        }
        re->roots = nv;
        /* an entry that cannot be read stops the move: its tokens would be lost */
        r = json_read_file(p, TOKENS_ENTRY_MAX, JSON_READ_SECRET, &root, e);
        free(p);
        if (r < 0)
            break;
        r = strv_push(&re->names, de->d_name);
        if (r < 0) {
            token_json_wipe_secrets(root);
            json_object_put(root);
            r = err_set(e, -ENOMEM, "out of memory");
            break;
        }
        re->roots[re->names.n - 1] = root;
    }
    if (d)
        (void)closedir(d);
    free(disp);
    return r;
}

static int write_entries(const char *dir, struct raw_entries *re, struct err *e)
{
    for (size_t i = 0; i < re->names.n; i++) {
        char *p = path_join(dir, re->names.v[i]);
        if (!p)
            return err_set(e, -ENOMEM, "out of memory");
        int r = json_write_file(p, re->roots[i], 0600, e);
        free(p);
        if (r < 0)
            return r;
    }
    return 0;
}

/* file -> keyring: the item written (all the secrets), then the record (the move happens
 * there), then the files rewritten without their secrets. */
static int migrate_to_keyring(const char *dir, struct raw_entries *re, struct err *warn,
                              struct err *e)
{
    struct tokens_vault *v = NULL;
    struct err ke = ERR_INIT;
    int r = tokens_vault_read(dir, &v, e);
    for (size_t i = 0; r >= 0 && i < re->names.n; i++) {
        /* an entry already moved (its file names its secrets in the item) keeps them there */
        if (json_get_object(re->roots[i], "keyring") && !token_json_has_secrets(re->roots[i]))
            continue;
        if (tokens_vault_take(v, re->names.v[i], re->roots[i]) < 0)
            r = err_set(e, -ENOMEM, "out of memory");
    }
    if (r >= 0)
        r = tokens_vault_write(v, dir, e);
    if (r < 0)
        goto out;
    r = tokens_backend_record(dir, TOKENS_BACKEND_KEYRING, e);
    if (r < 0) {
        if (tokens_vault_delete(dir, &ke) < 0) /* the files still hold every secret */
            err_clear(&ke);
        goto out;
    }
    /* moved: a file still holding its secrets now is read as the keychain's (the same ones) */
    if (write_entries(dir, re, &ke) < 0)
        (void)err_set(warn, ke.code,
                      "the secrets are in the keychain now, but a file still holds its own: %s; "
                      "run 'mcp-auth store migrate keyring' again to remove them",
                      ke.msg);
    r = 0;
out:
    tokens_vault_free(v);
    return r;
}

/* keyring -> file: every file written with its secrets (the item still has them), then the
 * record (the move happens there), then the item deleted. */
static int migrate_to_file(const char *dir, struct raw_entries *re, struct err *warn, struct err *e)
{
    struct tokens_vault *v = NULL;
    struct err ke = ERR_INIT;
    int r = tokens_vault_read(dir, &v, e);
    for (size_t i = 0; r >= 0 && i < re->names.n; i++) {
        struct json_object *k = json_get_object(re->roots[i], "keyring");
        if (!k)
            continue; /* its secrets are in the file already */
        r = tokens_vault_put(v, re->names.v[i], re->roots[i]);
        if (r == -ENOENT)
            r = err_set(e, -EBADMSG,
                        "the keychain holds no secrets for the entry '%s': remove the file (and "
                        "log in again), then run this again",
                        re->names.v[i]);
        else if (r < 0)
            r = err_set(e, r, "out of memory");
    }
    if (r >= 0)
        r = write_entries(dir, re, e);
    if (r >= 0)
        r = tokens_backend_record(dir, TOKENS_BACKEND_FILE, e);
    if (r < 0)
        goto out;
    tokens_secrets_forget();
    if (tokens_vault_delete(dir, &ke) < 0 && ke.code != -ENOENT)
        (void)err_set(warn, ke.code,
                      "the tokens are in files now, but the keychain item could not be removed: "
                      "%s",
                      ke.msg);
    r = 0;
out:
    tokens_vault_free(v);
    return r;
}

int tokens_migrate(enum tokens_backend to, size_t *ret_n, struct err *warn, struct err *e)
{
    struct raw_entries re = {.names = STRV_INIT};
    struct file_lock *lock = NULL;
    enum tokens_backend from;
    bool recorded = false;
    char *dir = NULL;
    int r = tokens_dir(true, &dir, e);
    if (r >= 0)
        r = tokens_store_lock(dir, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    /* the record alone: a setting that forces the other backend asks for this very move */
    if (r >= 0)
        r = tokens_backend_recorded(dir, &from, &recorded, e);
    if (r < 0)
        goto out;
    r = raw_entries_read(dir, &re, e);
    if (r < 0)
        goto out;
    if (from == to) {
        /* nothing to move; a keyring store whose files kept secrets (a move that could not
         * rewrite them) is tidied by moving again */
        bool left = false;
        for (size_t i = 0; to == TOKENS_BACKEND_KEYRING && i < re.names.n; i++)
            left = left || token_json_has_secrets(re.roots[i]);
        if (!left) {
            if (!recorded)
                r = tokens_backend_record(dir, to, e);
            goto done;
        }
    }
    r = to == TOKENS_BACKEND_KEYRING ? migrate_to_keyring(dir, &re, warn, e)
                                     : migrate_to_file(dir, &re, warn, e);
    if (r < 0)
        goto out;
done:
    *ret_n = from == to && r >= 0 ? 0 : re.names.n;
    r = 0;
out:
    raw_entries_release(&re);
    file_lock_release(lock);
    free(dir);
    return r;
}
