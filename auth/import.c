/* import.c - sign-ins obtained elsewhere, into the token store (import.h) */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "crypto.h"
#include "discovery.h"
#include "import.h"
#include "oauth.h"
#include "store.h"

#define MCP_REMOTE_SUBDIR  "mcp-remote-v1" /* its CONFIG_STORE_VERSION 1 */
#define MCP_REMOTE_TOKENS  "_tokens.json"
#define MCP_REMOTE_CLIENT  "_client_info.json"
#define MCP_REMOTE_HASHLEN 32

void import_signin_release(struct import_signin *s)
{
    if (!s)
        return;
    secure_free(s->access_token);
    free(s->token_type);
    secure_free(s->refresh_token);
    free(s->scope);
    free(s->issuer);
    free(s->client_id);
    secure_free(s->client_secret);
    free(s->auth_method);
    free(s->redirect_uri);
    *s = (struct import_signin){0};
}

/* A copy of obj's string member key into *dst (absent: left NULL); -EBADMSG naming it in e when
 * it is there but not a string. */
static int take_string(struct json_object *obj, const char *key, const char *what, char **dst,
                       struct err *e)
{
    struct json_object *v;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return err_set(e, -EBADMSG, "%s: \"%s\" is %s, not a string", what, key,
                       json_type_desc(json_object_get_type(v)));
    if (!(*dst = strdup(json_object_get_string(v))))
        return -ENOMEM;
    return 0;
}

/* A token answer's members into s; what names the input in messages. */
static int from_token_json(struct json_object *o, const char *what, struct import_signin *s,
                           struct err *e)
{
    int r = take_string(o, "access_token", what, &s->access_token, e);
    if (r >= 0)
        r = take_string(o, "token_type", what, &s->token_type, e);
    if (r >= 0)
        r = take_string(o, "refresh_token", what, &s->refresh_token, e);
    if (r >= 0)
        r = take_string(o, "scope", what, &s->scope, e);
    if (r < 0)
        return r;
    if (!s->access_token || !*s->access_token)
        return err_set(e, -EBADMSG, "%s has no \"access_token\"", what);
    if (!oauth_bearer_token_valid(s->access_token, strlen(s->access_token)))
        return err_set(e, -EBADMSG,
                       "%s: its access token is not a bearer token (RFC 6750: letters, digits, "
                       "-._~+/ and = at the end only)",
                       what);
    if (s->token_type && strcasecmp(s->token_type, "bearer") != 0)
        return err_set(e, -EBADMSG, "%s: the token type is not Bearer", what);
    if (s->refresh_token && !*s->refresh_token) {
        secure_free(s->refresh_token);
        s->refresh_token = NULL;
    }
    return 0;
}

int import_parse_token(const char *text, size_t len, struct import_signin *ret, struct err *e)
{
    static const char what[] = "the token given on standard input";
    struct import_signin s = {0};
    struct json_object *o = NULL;
    int r;
    while (len && strchr(" \t\r\n", text[len - 1]))
        len--;
    while (len && strchr(" \t\r\n", *text)) {
        text++;
        len--;
    }
    if (len == 0)
        return err_set(e, -EINVAL,
                       "no token on standard input: pipe it in (never on the command "
                       "line), e.g. mcp-auth login SERVER --with-token <token.txt");
    if (*text != '{') {
        if (memchr(text, '\n', len))
            return err_set(e, -EINVAL,
                           "%s is more than one line: give the access token alone, "
                           "or a JSON token response starting with '{'",
                           what);
        if (!oauth_bearer_token_valid(text, len))
            return err_set(e, -EINVAL,
                           "%s is not a bearer token (RFC 6750: letters, digits, -._~+/ and = "
                           "at the end only)",
                           what);
        if (!(s.access_token = strndup(text, len)))
            return -ENOMEM;
        *ret = s;
        return 0;
    }
    struct err pe = ERR_INIT;
    r = json_parse(text, len, IMPORT_INPUT_MAX, &o, &pe);
    if (r < 0) {
        /* the position only: the text may be a secret */
        r = err_set(e, -EINVAL, "%s starts with '{' but is not valid JSON", what);
        goto out;
    }
    if (!json_object_is_type(o, json_type_object)) {
        r = err_set(e, -EINVAL, "%s is not a JSON object", what);
        goto out;
    }
    r = from_token_json(o, what, &s, e);
    int64_t in = 0;
    struct json_object *v;
    if (r >= 0 && json_object_object_get_ex(o, "expires_in", &v) &&
        (!json_get_int64(o, "expires_in", &in) || in <= 0))
        r = err_set(e, -EBADMSG, "%s: \"expires_in\" is not a positive whole number of seconds",
                    what);
    if (r < 0) {
        r = r == -ENOMEM ? r : -EINVAL;
        goto out;
    }
    if (in > OAUTH_LIFETIME_MAX_S)
        in = OAUTH_LIFETIME_MAX_S;
    s.expires_at = in > 0 ? now_unix() + in : 0;
    *ret = s;
    s = (struct import_signin){0};
out:
    if (o) {
        json_wipe_strings(o);
        json_object_put(o);
    }
    import_signin_release(&s);
    return r;
}

int import_read_token(int fd, struct import_signin *ret, struct err *e)
{
    struct buf in;
    char chunk[4096];
    int r = 0;
    buf_init_secret(&in, IMPORT_INPUT_MAX);
    while (r >= 0) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? err_set(e, -errno, "cannot read standard input: %s", strerror(errno)) : 0;
            break;
        }
        r = buf_append(&in, chunk, (size_t)n);
        if (r == -E2BIG)
            r = err_set(e, r, "standard input is longer than %d KiB: not a token",
                        IMPORT_INPUT_MAX / 1024);
    }
    secure_wipe(chunk, sizeof(chunk));
    if (r >= 0)
        r = import_parse_token(in.data ? in.data : "", in.len, ret, e);
    buf_release(&in);
    return r;
}

/* ---- into the store ---- */

/* The entry te as the sign-in s, with the client that obtained it when s names one. */
static int fill_entry(struct token_entry *te, const struct import_signin *s, int64_t now)
{
    int r = 0;
    if (s->client_id) {
        te->registration = REGISTRATION_DYNAMIC;
        r = store_set_str(&te->client_id, s->client_id);
        if (r >= 0)
            r = store_set_secret(&te->client_secret, s->client_secret);
        if (r >= 0)
            r = store_set_str(&te->auth_method, s->auth_method);
        if (r >= 0)
            r = store_set_str(&te->redirect_uri, s->redirect_uri);
        te->client_secret_expires_at = 0;
        te->registered_at = s->obtained_at ? s->obtained_at : now;
    }
    if (r >= 0)
        r = store_set_secret(&te->access_token, s->access_token);
    if (r >= 0)
        r = store_set_str(&te->token_type, s->token_type ? s->token_type : "Bearer");
    if (r >= 0)
        r = store_set_secret(&te->refresh_token, s->refresh_token);
    if (r >= 0)
        r = store_set_str(&te->scope, s->scope);
    if (r < 0)
        return r;
    char *account = jwt_account(s->access_token);
    free(te->account);
    te->account = account;
    te->issued_at = s->obtained_at ? s->obtained_at : now;
    te->expires_at = s->expires_at;
    return 0;
}

static int save_discovery(struct token_entry *te, const struct discovery *d)
{
    json_object_put(te->as_metadata);
    te->as_metadata = d->as && !d->as_defaults ? json_object_get(d->as) : NULL;
    json_object_put(te->prm);
    te->prm = d->prm ? json_object_get(d->prm) : NULL;
    te->discovered_at = d->fetched_at;
    return store_set_str(&te->resource_metadata_url, d->resource_metadata_url);
}

int import_store(const struct auth_target *t, const struct import_signin *s, bool force,
                 bool dry_run, int64_t http_timeout_ms, enum import_outcome *ret, char **ret_issuer,
                 struct err *e)
{
    struct discovery *d = NULL;
    struct file_lock *lock = NULL;
    struct token_entry *te = NULL;
    char *issuer = NULL;
    enum import_outcome outcome;
    int64_t now = now_unix();
    struct discovery_opts dopts = {.as_metadata_url = t->oauth->as_metadata_url,
                                   .skip_issuer_check = t->oauth->skip_issuer_check};
    int r = discovery_run_opts(t->server_url, http_timeout_ms, &dopts, &d, e);
    if (r < 0)
        goto out;
    if (s->issuer && strcmp(s->issuer, d->issuer) != 0) {
        r = err_set(e, -EXDEV,
                    "its tokens were issued by %s, but '%s' now names the authorization server "
                    "%s: they are not sent there; sign in with mcp-auth instead",
                    s->issuer, t->server_url, d->issuer);
        goto out;
    }
    r = store_lock(t->server_url, d->issuer, t->label, TOKENS_LOCK_TIMEOUT_MS, &lock, e);
    if (r >= 0)
        r = store_load_or_new(t->server_url, d->issuer, t->label, &te, e);
    if (r < 0)
        goto out;
    /* a sign-in made after the one imported is the user's latest: keep it */
    int64_t obtained = s->obtained_at ? s->obtained_at : now;
    if (!force && (te->access_token || te->refresh_token) && te->issued_at > obtained) {
        outcome = IMPORT_KEPT_NEWER;
    } else if (dry_run) {
        outcome = IMPORT_WOULD_SAVE;
    } else {
        /* tokens go with the client that obtained them: the registration held here belongs
         * to another client, which could not refresh them */
        if (s->client_id)
            token_entry_clear_registration(te);
        r = save_discovery(te, d);
        if (r >= 0)
            r = fill_entry(te, s, now);
        if (r >= 0)
            r = store_save(te, e);
        if (r < 0)
            goto out;
        outcome = IMPORT_SAVED;
    }
    if (!(issuer = strdup(d->issuer))) {
        r = -ENOMEM;
        goto out;
    }
    *ret = outcome;
    *ret_issuer = issuer;
    r = 0;
out:
    token_entry_free(te);
    file_lock_release(lock);
    discovery_free(d);
    return r;
}

/* ---- mcp-remote's files ---- */

int import_mcp_remote_dir(const char *dir, char **ret, struct err *e)
{
    char *base = NULL, *home = NULL;
    if (dir && *dir) {
        /* the directory itself, or the one holding it */
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        size_t sub = strlen(MCP_REMOTE_SUBDIR);
        bool itself = n >= sub && strncmp(dir + n - sub, MCP_REMOTE_SUBDIR, sub) == 0 &&
                      (n == sub || dir[n - sub - 1] == '/');
        char *d = strndup(dir, n);
        if (!d)
            return -ENOMEM;
        if (itself) {
            *ret = d;
            return 0;
        }
        base = d;
    } else {
        const char *env = getenv("MCP_REMOTE_CONFIG_DIR");
        if (env && *env) {
            base = strdup(env);
        } else {
            int r = path_home(&home);
            if (r < 0)
                return err_set(e, r, "cannot find the home directory to look for ~/.mcp-auth");
            base = path_join(home, ".mcp-auth");
            free(home);
        }
        if (!base)
            return -ENOMEM;
    }
    char *p = path_join(base, MCP_REMOTE_SUBDIR);
    free(base);
    if (!p)
        return -ENOMEM;
    *ret = p;
    return 0;
}

void import_mcp_remote_hash(const char *url, char out[33])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char hex[] = "0123456789abcdef";
    out[0] = '\0';
    if (EVP_Digest(url, strlen(url), md, &n, EVP_md5(), NULL) != 1 || n != 16)
        return;
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[32] = '\0';
}

/* Reads one of mcp-remote's JSON files: 0 with *ret, -ENOENT when absent (no message). */
static int read_file_json(const char *dir, const char *hash, const char *suffix,
                          struct json_object **ret, int64_t *ret_mtime, struct err *e)
{
    struct buf name;
    struct stat st;
    buf_init(&name, 4096);
    int r = buf_printf(&name, "%s/%s%s", dir, hash, suffix);
    if (r < 0)
        goto out;
    if (stat(buf_str(&name), &st) < 0) {
        r = -errno;
        if (r != -ENOENT)
            r = err_set(e, r, "cannot read '%s': %s", buf_str(&name), strerror(-r));
        goto out;
    }
    r = json_read_file(buf_str(&name), IMPORT_INPUT_MAX, JSON_READ_SECRET, ret, e);
    if (r >= 0 && !json_object_is_type(*ret, json_type_object)) {
        json_wipe_strings(*ret);
        json_object_put(*ret);
        *ret = NULL;
        r = err_set(e, -EBADMSG, "'%s' is not a JSON object", buf_str(&name));
    }
    if (r >= 0 && ret_mtime)
        *ret_mtime = (int64_t)st.st_mtime;
out:
    buf_release(&name);
    return r;
}

static void put_secret_json(struct json_object *o)
{
    if (!o)
        return;
    json_wipe_strings(o);
    json_object_put(o);
}

int import_mcp_remote_read(const char *dir, const char *hash, struct import_signin *ret,
                           struct err *e)
{
    struct import_signin s = {0};
    struct json_object *tok = NULL, *cli = NULL;
    int64_t mtime = 0, at = 0;
    char what[128];
    (void)snprintf(what, sizeof(what), "'%s%s'", hash, MCP_REMOTE_TOKENS);
    int r = read_file_json(dir, hash, MCP_REMOTE_TOKENS, &tok, &mtime, e);
    if (r < 0)
        goto out;
    r = from_token_json(tok, what, &s, e);
    if (r >= 0)
        r = take_string(tok, "issuer", what, &s.issuer, e);
    if (r < 0)
        goto out;
    /* mcp-remote keeps the expiry in milliseconds ("expires_at"), and the lifetime it was
     * given ("expires_in") counted from when it wrote the file */
    if (json_get_int64(tok, "expires_at", &at) && at > 0)
        s.expires_at = at / 1000;
    else if (json_get_int64(tok, "expires_in", &at) && at > 0 && at <= OAUTH_LIFETIME_MAX_S)
        s.expires_at = mtime + at;
    s.obtained_at = mtime;
    r = read_file_json(dir, hash, MCP_REMOTE_CLIENT, &cli, NULL, e);
    if (r == -ENOENT) {
        r = 0; /* a static client (--static-oauth-client-info): not stored by mcp-remote */
    } else if (r >= 0) {
        (void)snprintf(what, sizeof(what), "'%s%s'", hash, MCP_REMOTE_CLIENT);
        r = take_string(cli, "client_id", what, &s.client_id, e);
        if (r >= 0)
            r = take_string(cli, "client_secret", what, &s.client_secret, e);
        if (r >= 0)
            r = take_string(cli, "token_endpoint_auth_method", what, &s.auth_method, e);
        struct json_object *uris = json_get_array(cli, "redirect_uris");
        if (r >= 0 && uris && json_object_array_length(uris) > 0) {
            struct json_object *u = json_object_array_get_idx(uris, 0);
            if (json_object_is_type(u, json_type_string) &&
                !(s.redirect_uri = strdup(json_object_get_string(u))))
                r = -ENOMEM;
        }
        if (r >= 0 && s.issuer == NULL)
            r = take_string(cli, "issuer", what, &s.issuer, e);
        if (r >= 0 && !s.client_id)
            r = err_set(e, -EBADMSG, "%s has no \"client_id\"", what);
    }
    if (r < 0)
        goto out;
    *ret = s;
    s = (struct import_signin){0};
out:
    put_secret_json(tok);
    put_secret_json(cli);
    import_signin_release(&s);
    return r;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int import_mcp_remote_list(const char *dir, struct strv *ret, struct err *e)
{
    struct strv v = STRV_INIT;
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT) {
            *ret = v;
            return 0;
        }
        int r = -errno;
        char *shown = path_display(dir);
        r = err_set(e, r, "cannot read '%s': %s", shown ? shown : dir, strerror(-r));
        free(shown);
        return r;
    }
    struct dirent *de;
    int r = 0;
    size_t suffix = strlen(MCP_REMOTE_TOKENS);
    while (r >= 0 && (de = readdir(dp))) {
        size_t n = strlen(de->d_name);
        if (n != MCP_REMOTE_HASHLEN + suffix ||
            strcmp(de->d_name + MCP_REMOTE_HASHLEN, MCP_REMOTE_TOKENS) != 0 ||
            strspn(de->d_name, "0123456789abcdef") != MCP_REMOTE_HASHLEN)
            continue;
        r = strv_push_take(&v, strndup(de->d_name, MCP_REMOTE_HASHLEN));
    }
    closedir(dp);
    if (r < 0) {
        strv_release(&v);
        return r;
    }
    if (v.n > 1)
        qsort(v.v, v.n, sizeof(char *), cmp_str);
    *ret = v;
    return 0;
}
