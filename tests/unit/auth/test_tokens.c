/* test_tokens.c - the token store: round trips, selection, preservation, refusals, locks */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/util.h"

#include "tokens.h"
#include "tests.h"

#define URL "https://mcp.example.com/mcp"
#define ISS "https://auth.example.com"

/* A fresh agent directory for each test: never the real home. Returns the store path. */
static const char *fresh_store(const char *name)
{
    static char agent[4096], store[4096 + 16];
    (void)snprintf(agent, sizeof(agent), "%s/%s", tests_tmpdir(), name);
    (void)snprintf(store, sizeof(store), "%s/oauth", agent);
    CHECK_INT(setenv("PI_CODING_AGENT_DIR", agent, 1), 0);
    return store;
}

static void put(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_INT(write(fd, content, strlen(content)), (long long)strlen(content));
    CHECK_INT(fchmod(fd, mode), 0);
    close(fd);
}

/* The file's bytes (caller frees), or NULL. */
static char *slurp(const char *path)
{
    struct buf b;
    struct err e = ERR_INIT;
    buf_init(&b, 1 << 20);
    if (file_read(path, 0, &b, &e) < 0) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return (mode_t)-1;
    return st.st_mode & 07777;
}

static char *entry_file(const char *url, const char *iss)
{
    char *p = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(tokens_entry_path(url, iss, NULL, &p, &e), 0);
    return p;
}

/* Rewrites one top-level key of an entry file, as if saved at another time. */
static void set_updated_at(const char *url, const char *iss, int64_t when)
{
    struct err e = ERR_INIT;
    struct json_object *o = NULL;
    char *p = entry_file(url, iss);
    CHECK_INT(json_read_file(p, 1 << 20, JSON_READ_SECRET, &o, &e), 0);
    json_object_object_add(o, "updated_at", json_object_new_int64(when));
    CHECK_INT(json_write_file(p, o, 0600, &e), 0);
    json_object_put(o);
    free(p);
}

static struct token_entry *full_entry(const char *url, const char *iss)
{
    struct token_entry *t = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(token_entry_new(url, iss, NULL, &t), 0);
    if (!t)
        abort();
    t->registration = REGISTRATION_DYNAMIC;
    t->client_id = strdup("client-123");
    t->client_secret = strdup("s3cret/\"quoted\"");
    t->auth_method = strdup("client_secret_basic");
    t->redirect_uri = strdup("http://127.0.0.1:43123/callback");
    t->client_secret_expires_at = 4102444800;
    t->registered_at = 1700000000;
    t->access_token = strdup("at-abc");
    t->token_type = strdup("Bearer");
    t->refresh_token = strdup("rt-def");
    t->scope = strdup("files:read offline_access");
    t->expires_at = 1700003600;
    t->issued_at = 1700000000;
    CHECK_INT(json_parse("{\"issuer\": \"" ISS "\", \"token_endpoint\": \"" ISS "/token\", "
                         "\"code_challenge_methods_supported\": [\"S256\"]}",
                         strlen("{\"issuer\": \"" ISS "\", \"token_endpoint\": \"" ISS
                                "/token\", \"code_challenge_methods_supported\": [\"S256\"]}"),
                         4096, &t->as_metadata, &e),
              0);
    CHECK_INT(json_parse("{\"resource\": \"" URL "\"}", strlen("{\"resource\": \"" URL "\"}"), 4096,
                         &t->prm, &e),
              0);
    t->resource_metadata_url =
        strdup("https://mcp.example.com/.well-known/oauth-protected-resource");
    t->discovered_at = 1699999999;
    return t;
}

static void check_same(const struct token_entry *a, const struct token_entry *b)
{
    CHECK_STR(a->server_url, b->server_url);
    CHECK_STR(a->issuer, b->issuer);
    CHECK_INT(a->registration, b->registration);
    CHECK_STR(a->client_id, b->client_id);
    CHECK_STR(a->client_secret, b->client_secret);
    CHECK_STR(a->auth_method, b->auth_method);
    CHECK_STR(a->redirect_uri, b->redirect_uri);
    CHECK_INT(a->client_secret_expires_at, b->client_secret_expires_at);
    CHECK_INT(a->registered_at, b->registered_at);
    CHECK_STR(a->access_token, b->access_token);
    CHECK_STR(a->token_type, b->token_type);
    CHECK_STR(a->refresh_token, b->refresh_token);
    CHECK_STR(a->scope, b->scope);
    CHECK_INT(a->expires_at, b->expires_at);
    CHECK_INT(a->issued_at, b->issued_at);
    CHECK(json_object_equal(a->as_metadata, b->as_metadata));
    CHECK(json_object_equal(a->prm, b->prm));
    CHECK_STR(a->resource_metadata_url, b->resource_metadata_url);
    CHECK_INT(a->discovered_at, b->discovered_at);
    CHECK_INT(a->updated_at, b->updated_at);
}

static void test_round_trip(void)
{
    const char *store = fresh_store("round-trip");
    struct err e = ERR_INIT;
    struct token_entry *t = full_entry(URL, ISS), *l = NULL;

    int64_t before = now_unix();
    CHECK_INT(tokens_save(t, &e), 0);
    CHECK(t->updated_at >= before && t->updated_at <= now_unix());
    CHECK_INT(mode_of(store), 0700);

    /* the file is named after sha256(server_url "\n" issuer) */
    unsigned char md[32];
    unsigned int mdlen = 0;
    CHECK_INT(EVP_Digest(URL "\n" ISS, strlen(URL "\n" ISS), md, &mdlen, EVP_sha256(), NULL), 1);
    char want[4096];
    int o = snprintf(want, sizeof(want), "%s/", store);
    for (int i = 0; i < 16; i++)
        o += snprintf(want + o, sizeof(want) - (size_t)o, "%02x", md[i]);
    (void)snprintf(want + o, sizeof(want) - (size_t)o, ".json");
    char *p = entry_file(URL, ISS);
    CHECK_STR(p, want);
    CHECK_INT(mode_of(p), 0600);

    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), 0);
    if (l)
        check_same(t, l);
    CHECK(l && l->extra == NULL);

    /* the layout on disk */
    struct json_object *root = NULL;
    CHECK_INT(json_read_file(p, 1 << 20, JSON_READ_SECRET, &root, &e), 0);
    int64_t v = 0;
    CHECK(json_get_int64(root, "version", &v) && v == 1);
    CHECK_STR(json_get_string(json_get_object(root, "registration"), "method"), "dynamic");
    CHECK_STR(json_get_string(json_get_object(root, "registration"), "token_endpoint_auth_method"),
              "client_secret_basic");
    CHECK_STR(json_get_string(json_get_object(root, "tokens"), "refresh_token"), "rt-def");
    CHECK(json_get_int64(json_get_object(root, "discovery"), "fetched_at", &v) && v == 1699999999);
    CHECK(json_get_object(json_get_object(root, "discovery"), "authorization_server_metadata"));
    json_object_put(root);

    /* saving what was loaded changes nothing but the time */
    CHECK_INT(tokens_save(l, &e), 0);
    struct token_entry *l2 = NULL;
    CHECK_INT(tokens_load(URL, ISS, NULL, &l2, &e), 0);
    if (l && l2)
        check_same(l, l2);
    token_entry_free(l2);

    /* absent values are omitted: a public client without tokens */
    struct token_entry *m = NULL;
    CHECK_INT(token_entry_new(URL, "https://other-issuer.example", NULL, &m), 0);
    m->registration = REGISTRATION_PRE;
    m->client_id = strdup("public");
    CHECK_INT(tokens_save(m, &e), 0);
    char *mp = entry_file(URL, "https://other-issuer.example");
    CHECK_INT(json_read_file(mp, 1 << 20, JSON_READ_SECRET, &root, &e), 0);
    CHECK_STR(json_get_string(json_get_object(root, "registration"), "method"), "pre-registered");
    CHECK(!json_object_object_get_ex(json_get_object(root, "registration"), "client_secret", NULL));
    CHECK(!json_object_object_get_ex(json_get_object(root, "registration"), "registered_at", NULL));
    CHECK(!json_object_object_get_ex(root, "tokens", NULL));
    CHECK(!json_object_object_get_ex(root, "discovery", NULL));
    CHECK_INT(json_object_object_length(root),
              5); /* version server_url issuer registration updated_at */
    json_object_put(root);
    struct token_entry *ml = NULL;
    CHECK_INT(tokens_load(URL, "https://other-issuer.example", NULL, &ml, &e), 0);
    CHECK(ml && ml->registration == REGISTRATION_PRE && ml->client_secret == NULL &&
          ml->access_token == NULL && ml->as_metadata == NULL && ml->expires_at == 0);
    token_entry_free(ml);
    token_entry_free(m);
    free(mp);

    token_entry_free(l);
    token_entry_free(t);
    free(p);
}

static void test_newest_for_url(void)
{
    fresh_store("newest");
    struct err e = ERR_INIT;
    const char *url2 = URL "2"; /* URL is a prefix of it */
    struct token_entry *a = full_entry(URL, "https://a.example"),
                       *b = full_entry(URL, "https://b.example"),
                       *c = full_entry(url2, "https://c.example"), *l = NULL;
    CHECK_INT(tokens_save(a, &e), 0);
    CHECK_INT(tokens_save(b, &e), 0);
    CHECK_INT(tokens_save(c, &e), 0);
    set_updated_at(URL, "https://a.example", 1000);
    set_updated_at(URL, "https://b.example", 2000);
    set_updated_at(url2, "https://c.example", 3000);

    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), 0);
    CHECK(l && strcmp(l->issuer, "https://b.example") == 0 && l->updated_at == 2000);
    token_entry_free(l);
    l = NULL;

    set_updated_at(URL, "https://a.example", 5000);
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), 0);
    CHECK(l && strcmp(l->issuer, "https://a.example") == 0);
    token_entry_free(l);
    l = NULL;

    CHECK_INT(tokens_load(url2, NULL, NULL, &l, &e), 0);
    CHECK(l && strcmp(l->issuer, "https://c.example") == 0);
    token_entry_free(l);
    l = NULL;

    /* the server's authorization server changed: the sign-in at the new one (tokens obtained
     * later) is the current entry, even when the old one is written after it (a refresh that
     * failed), and an entry without tokens never is while another has some */
    struct token_entry *d = full_entry(URL, "https://d.example");
    d->issued_at = 1700000500;
    CHECK_INT(tokens_save(d, &e), 0);
    set_updated_at(URL, "https://d.example", 4000);
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), 0);
    CHECK(l && strcmp(l->issuer, "https://d.example") == 0);
    token_entry_free(l);
    l = NULL;
    struct token_entry *f = NULL;
    CHECK_INT(token_entry_new(URL, "https://f.example", NULL, &f), 0);
    CHECK_INT(tokens_save(f, &e), 0);
    set_updated_at(URL, "https://f.example", 9000);
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), 0);
    CHECK(l && strcmp(l->issuer, "https://d.example") == 0);
    token_entry_free(l);
    l = NULL;
    CHECK_INT(tokens_delete(URL, "https://d.example", NULL, &e), 0);
    CHECK_INT(tokens_delete(URL, "https://f.example", NULL, &e), 0);
    token_entry_free(d);
    token_entry_free(f);

    /* neither a prefix nor an extension of a stored URL matches */
    struct token_entry *sentinel = (struct token_entry *)(uintptr_t)1;
    l = sentinel;
    CHECK_INT(tokens_load("https://mcp.example.com/mc", NULL, NULL, &l, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "no stored login");
    CHECK_INT(tokens_load(URL "/", NULL, NULL, &l, &e), -ENOENT);
    CHECK_INT(tokens_load(URL, "https://z.example", NULL, &l, &e), -ENOENT);
    CHECK(l == sentinel);

    /* the list, sorted */
    struct token_entry **v = NULL;
    size_t n = 0;
    err_clear(&e);
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 3);
    CHECK_INT(e.code, 0);
    if (n == 3) {
        CHECK_STR(v[0]->issuer, "https://a.example");
        CHECK_STR(v[1]->issuer, "https://b.example");
        CHECK_STR(v[2]->server_url, url2);
        CHECK_STR(v[2]->access_token, "at-abc");
    }
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);

    /* lock files and strays in the directory are not entries */
    struct file_lock *lk = NULL;
    CHECK_INT(tokens_lock(URL, "https://a.example", NULL, 1000, &lk, &e), 0);
    file_lock_release(lk);
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 3);
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);

    token_entry_free(a);
    token_entry_free(b);
    token_entry_free(c);
}

static void test_unknown_keys_preserved(void)
{
    fresh_store("unknown");
    struct err e = ERR_INIT;
    struct token_entry *t = NULL;
    char *p = entry_file(URL, ISS);
    CHECK_INT(token_entry_new(URL, ISS, NULL, &t), 0);
    CHECK_INT(tokens_save(t, &e), 0); /* creates the directory */
    token_entry_free(t);
    t = NULL;

    put(p,
        "{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS "\",\n"
        " \"x-future\": {\"a\": [1, 2]}, \"note\": \"hi\",\n"
        " \"tokens\": {\"access_token\": \"tok\", \"expires_at\": 42}, \"updated_at\": 7}\n",
        0600);
    CHECK_INT(tokens_load(URL, ISS, NULL, &t, &e), 0);
    CHECK(t && t->extra && json_object_object_length(t->extra) == 2);
    CHECK_STR(t ? t->access_token : NULL, "tok");
    CHECK_INT(t ? t->expires_at : 0, 42);
    CHECK_INT(t ? t->updated_at : 0, 7);
    if (t) {
        free(t->scope);
        t->scope = strdup("more");
        CHECK_INT(tokens_save(t, &e), 0);
    }
    token_entry_free(t);

    struct json_object *root = NULL;
    CHECK_INT(json_read_file(p, 1 << 20, JSON_READ_SECRET, &root, &e), 0);
    CHECK_STR(json_get_string(root, "note"), "hi");
    struct json_object *fut = json_get_object(root, "x-future");
    CHECK(fut && json_object_array_length(json_get_array(fut, "a")) == 2);
    CHECK_STR(json_get_string(json_get_object(root, "tokens"), "scope"), "more");
    json_object_put(root);
    free(p);
}

static void check_load_fails(const char *content, mode_t mode, int code, const char *msg)
{
    struct err e = ERR_INIT;
    struct token_entry *t = NULL;
    char *p = entry_file(URL, ISS);
    put(p, content, mode);
    CHECK_INT(tokens_load(URL, ISS, NULL, &t, &e), code);
    CHECK(t == NULL);
    CHECK_CONTAINS(e.msg, msg);
    CHECK_CONTAINS(e.msg, "oauth/");
    /* and it is never replaced */
    struct token_entry *n = full_entry(URL, ISS);
    CHECK_INT(tokens_save(n, &e), code);
    CHECK_CONTAINS(e.msg, "not replacing it");
    token_entry_free(n);
    char *now = slurp(p);
    CHECK_STR(now, content);
    CHECK_INT(mode_of(p), mode);
    free(now);
    free(p);
}

/* Entry files that do not load, each also refused as the target of a save. */
static void refusals_bad_files(void)
{
    check_load_fails("{\"version\": 1,\n  \"server_url\": }\n", 0600, -EBADMSG, "line 2, column");
    check_load_fails("", 0600, -EBADMSG, "empty document");
    check_load_fails("[1]", 0600, -EBADMSG, "the top level\" must be an object, not an array");
    check_load_fails("{\"server_url\": \"" URL "\", \"issuer\": \"" ISS "\"}", 0600, -EBADMSG,
                     "no \"version\"");
    check_load_fails("{\"version\": 2, \"server_url\": \"" URL "\", \"issuer\": \"" ISS "\"}", 0600,
                     -EBADMSG, "format version 2, but this mcp-auth reads version 1 only");
    check_load_fails("{\"version\": \"1\", \"server_url\": \"" URL "\", \"issuer\": \"" ISS "\"}",
                     0600, -EBADMSG, "\"version\" must be an integer, not a string");
    check_load_fails("{\"version\": 1, \"issuer\": \"" ISS "\"}", 0600, -EBADMSG,
                     "no \"server_url\"");
    check_load_fails("{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS
                     "\", \"tokens\": {\"expires_at\": \"soon\"}}",
                     0600, -EBADMSG,
                     "\"tokens.expires_at\" must be a non-negative integer, not a string");
    check_load_fails("{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS
                     "\", \"registration\": {\"method\": \"magic\"}}",
                     0600, -EBADMSG, "unknown \"registration.method\" 'magic'");
    check_load_fails("{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS
                     "\", \"discovery\": []}",
                     0600, -EBADMSG, "\"discovery\" must be an object, not an array");
    check_load_fails("{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS
                     "\", \"tokens\": {\"access_token\": \"a\\u0000b\"}}",
                     0600, -EBADMSG, "\"tokens.access_token\" contains a NUL character");
    /* valid, but for another server: copied or renamed by hand */
    check_load_fails("{\"version\": 1, \"server_url\": \"https://evil.example\", \"issuer\": \"" ISS
                     "\", \"tokens\": {\"access_token\": \"x\"}}",
                     0600, -EBADMSG, "does not belong here");
    /* others can read it */
    check_load_fails("{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS "\"}", 0644,
                     -EACCES, "chmod 600");
}

/* The entry file for URL and ISS exists and cannot be parsed. */
static void refusals_unreadable_entry(void)
{
    struct err e = ERR_INIT;
    struct token_entry *t = NULL;

    /* with issuer NULL, an unreadable entry is reported when nothing else matches */
    char *p = entry_file(URL, ISS);
    put(p, "{\"version\": 1,\n  \"server_url\": }\n", 0600);
    CHECK_INT(tokens_load(URL, NULL, NULL, &t, &e), -EBADMSG);
    CHECK_CONTAINS(e.msg, "line 2, column");
    CHECK_CONTAINS(e.msg, "may be this server's entry");
    /* and skipped, but reported, when listing */
    struct token_entry *other = full_entry("https://other.example", ISS);
    CHECK_INT(tokens_save(other, &e), 0);
    struct token_entry **v = NULL;
    size_t n = 0;
    err_clear(&e);
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 1);
    CHECK_INT(e.code, -EBADMSG);
    CHECK_CONTAINS(e.msg, "line 2, column");
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);
    token_entry_free(other);
    /* and a readable match wins over it */
    struct token_entry *same = full_entry(URL, "https://second.example");
    CHECK_INT(tokens_save(same, &e), 0);
    CHECK_INT(tokens_load(URL, NULL, NULL, &t, &e), 0);
    CHECK(t && strcmp(t->issuer, "https://second.example") == 0);
    token_entry_free(t);
    t = NULL;
    token_entry_free(same);
    /* the file was never touched */
    char *now = slurp(p);
    CHECK_STR(now, "{\"version\": 1,\n  \"server_url\": }\n");
    free(now);
    free(p);
}

static void test_refusals(void)
{
    fresh_store("refusals");
    struct err e = ERR_INIT;
    struct token_entry *t = NULL;
    CHECK_INT(token_entry_new(URL, ISS, NULL, &t), 0);
    CHECK_INT(tokens_save(t, &e), 0);
    token_entry_free(t);
    t = NULL;

    refusals_bad_files();
    refusals_unreadable_entry();
}

static void test_entry_arguments(void)
{
    fresh_store("arguments");
    struct err e = ERR_INIT;
    struct token_entry *t = NULL;

    CHECK_INT(token_entry_new("", ISS, NULL, &t), -EINVAL);
    CHECK_INT(token_entry_new(URL, NULL, NULL, &t), -EINVAL);
    CHECK_INT(token_entry_new(URL "\n", ISS, NULL, &t), -EINVAL);
    CHECK_INT(tokens_load(NULL, NULL, NULL, &t, &e), -EINVAL);
    CHECK_INT(tokens_load(URL, "", NULL, &t, &e), -EINVAL);
    CHECK(t == NULL);
}

static void test_clear(void)
{
    fresh_store("clear");
    struct err e = ERR_INIT;
    struct token_entry *t = full_entry(URL, ISS), *l = NULL;

    token_entry_clear_tokens(t);
    CHECK(t->access_token == NULL && t->refresh_token == NULL && t->token_type == NULL &&
          t->scope == NULL);
    CHECK_INT(t->expires_at, 0);
    CHECK_INT(t->issued_at, 0);
    CHECK_STR(t->client_id, "client-123");
    CHECK_STR(t->client_secret, "s3cret/\"quoted\"");
    CHECK_INT(t->registration, REGISTRATION_DYNAMIC);
    CHECK(t->as_metadata != NULL);
    CHECK_INT(tokens_save(t, &e), 0);
    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), 0);
    CHECK(l && l->access_token == NULL && l->refresh_token == NULL && l->expires_at == 0);
    CHECK_STR(l ? l->client_id : NULL, "client-123");
    token_entry_free(l);
    l = NULL;

    token_entry_free(t);
    t = full_entry(URL, ISS);
    token_entry_clear_registration(t);
    CHECK(t->client_id == NULL && t->client_secret == NULL && t->auth_method == NULL &&
          t->redirect_uri == NULL);
    CHECK_INT(t->registration, REGISTRATION_NONE);
    CHECK_INT(t->registered_at, 0);
    CHECK_INT(t->client_secret_expires_at, 0);
    CHECK(t->access_token == NULL && t->refresh_token == NULL);
    CHECK(t->as_metadata != NULL && t->prm != NULL && t->resource_metadata_url != NULL);
    CHECK_INT(tokens_save(t, &e), 0);
    struct json_object *root = NULL;
    char *p = entry_file(URL, ISS);
    CHECK_INT(json_read_file(p, 1 << 20, JSON_READ_SECRET, &root, &e), 0);
    CHECK(!json_object_object_get_ex(root, "registration", NULL));
    CHECK(!json_object_object_get_ex(root, "tokens", NULL));
    CHECK(json_get_object(root, "discovery") != NULL);
    json_object_put(root);
    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), 0);
    CHECK(l && l->registration == REGISTRATION_NONE && l->client_id == NULL && l->prm != NULL);
    token_entry_free(l);

    /* NULL-safe */
    token_entry_clear_tokens(NULL);
    token_entry_clear_registration(NULL);
    token_entry_free(NULL);
    token_entry_free(t);
    free(p);
}

static void test_delete(void)
{
    fresh_store("delete");
    struct err e = ERR_INIT;
    struct token_entry *t = full_entry(URL, ISS), *l = NULL;
    CHECK_INT(tokens_delete(URL, ISS, NULL, &e), -ENOENT);
    CHECK_INT(tokens_save(t, &e), 0);
    char *p = entry_file(URL, ISS);
    CHECK(access(p, F_OK) == 0);
    CHECK_INT(tokens_delete(URL, ISS, NULL, &e), 0);
    CHECK(access(p, F_OK) < 0 && errno == ENOENT);
    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), -ENOENT);
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), -ENOENT);
    CHECK_INT(tokens_delete(URL, ISS, NULL, &e), -ENOENT);
    CHECK_CONTAINS(e.msg, "no stored login");
    CHECK(l == NULL);
    /* an empty or absent store lists nothing */
    struct token_entry **v = (struct token_entry **)(uintptr_t)1;
    size_t n = 99;
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 0);
    free(v);
    fresh_store("delete-absent");
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 0);
    free(v);
    CHECK_INT(tokens_load(URL, NULL, NULL, &l, &e), -ENOENT);
    token_entry_free(t);
    free(p);
}

static void test_lock(void)
{
    fresh_store("lock");
    struct err e = ERR_INIT;
    int held[2], go[2];
    CHECK_INT(pipe2(held, O_CLOEXEC), 0);
    CHECK_INT(pipe2(go, O_CLOEXEC), 0);

    /* the first process takes the lock and keeps it until told */
    pid_t a = fork();
    CHECK(a >= 0);
    if (a == 0) {
        struct file_lock *lk = NULL;
        struct err ce = ERR_INIT;
        char c = 0;
        int ok = tokens_lock(URL, ISS, NULL, 1000, &lk, &ce) == 0;
        (void)!write(held[1], ok ? "1" : "0", 1);
        (void)!read(go[0], &c, 1);
        file_lock_release(lk);
        _exit(ok ? 0 : 1);
    }
    char c = 0;
    CHECK_INT(read(held[0], &c, 1), 1);
    CHECK_INT(c, '1');

    /* the second one gives up after its short timeout */
    pid_t b = fork();
    CHECK(b >= 0);
    if (b == 0) {
        struct file_lock *lk = NULL;
        struct err ce = ERR_INIT;
        int64_t start = now_mono_ms();
        int r = tokens_lock(URL, ISS, NULL, 200, &lk, &ce);
        int64_t took = now_mono_ms() - start;
        file_lock_release(lk);
        _exit(r == -ETIMEDOUT && took >= 190 && strstr(ce.msg, "timed out after 200ms") &&
                      strstr(ce.msg, ".json.lock")
                  ? 0
                  : 1);
    }
    int st = -1;
    CHECK_INT(waitpid(b, &st, 0), b);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* so does this process; another entry's lock is free meanwhile */
    struct file_lock *lk = NULL;
    CHECK_INT(tokens_lock(URL, ISS, NULL, 50, &lk, &e), -ETIMEDOUT);
    CHECK(lk == NULL);
    CHECK_INT(tokens_lock(URL, "https://other.example", NULL, 50, &lk, &e), 0);
    file_lock_release(lk);
    lk = NULL;

    /* released: it can be had */
    CHECK_INT(write(go[1], "x", 1), 1);
    CHECK_INT(waitpid(a, &st, 0), a);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_INT(tokens_lock(URL, ISS, NULL, 1000, &lk, &e), 0);
    CHECK(lk != NULL);
    file_lock_release(lk);
    close(held[0]);
    close(held[1]);
    close(go[0]);
    close(go[1]);
}

static void test_method_names(void)
{
    CHECK_STR(registration_method_str(REGISTRATION_DYNAMIC), "dynamic");
    CHECK_STR(registration_method_str(REGISTRATION_PRE), "pre-registered");
    CHECK_STR(registration_method_str(REGISTRATION_METADATA), "metadata-document");
    CHECK_STR(registration_method_str(REGISTRATION_NONE), "none");
}

/* Client credentials are bound to the issuer that issued them: a server whose authorization
 * server changed gets an entry of its own for the new issuer, and the old client is never
 * what loading under the new issuer yields. */
static void test_issuer_binding(void)
{
    fresh_store("binding");
    struct err e = ERR_INIT;
    struct token_entry *old = full_entry(URL, "https://as1.example"), *l = NULL;
    CHECK_INT(tokens_save(old, &e), 0);
    CHECK_INT(tokens_load(URL, "https://as2.example", NULL, &l, &e), -ENOENT);
    CHECK(l == NULL);

    struct token_entry *neu = full_entry(URL, "https://as2.example");
    free(neu->client_id);
    neu->client_id = strdup("as2-client");
    CHECK_INT(tokens_save(neu, &e), 0);
    CHECK_INT(tokens_load(URL, "https://as2.example", NULL, &l, &e), 0);
    CHECK(l && strcmp(l->client_id, "as2-client") == 0);
    token_entry_free(l);
    l = NULL;
    CHECK_INT(tokens_load(URL, "https://as1.example", NULL, &l, &e), 0);
    CHECK(l && strcmp(l->client_id, "client-123") == 0);
    token_entry_free(l);
    l = NULL;
    /* issuers are compared as strings: a trailing slash is another issuer */
    CHECK_INT(tokens_load(URL, "https://as1.example/", NULL, &l, &e), -ENOENT);
    char *p1 = entry_file(URL, "https://as1.example"), *p2 = entry_file(URL, "https://as2.example");
    CHECK(p1 && p2 && strcmp(p1, p2) != 0);
    CHECK(p1 && mode_of(p1) == 0600);
    free(p1);
    free(p2);
    token_entry_free(old);
    token_entry_free(neu);
}

/* The store's directory, too open: tightened to 0700 when ours, on reading as on writing;
 * refused with the fix when someone else's. */
static void test_store_dir_mode(void)
{
    const char *store = fresh_store("dirmode");
    struct err e = ERR_INIT;
    struct token_entry *t = full_entry(URL, ISS), *got = NULL;
    CHECK_INT(tokens_save(t, &e), 0);
    CHECK_INT(mode_of(store), 0700);

    CHECK_INT(chmod(store, 0755), 0);
    CHECK_INT(tokens_load(URL, NULL, NULL, &got, &e), 0); /* a read tightens it */
    token_entry_free(got);
    got = NULL;
    CHECK_INT(mode_of(store), 0700);
    CHECK_INT(chmod(store, 0777), 0);
    CHECK_INT(tokens_save(t, &e), 0); /* and a write */
    CHECK_INT(mode_of(store), 0700);

    /* someone else's: refused, saying who must run what; nothing read, nothing written */
    if (geteuid() == 0) {
        CHECK_INT(chmod(store, 0755), 0);
        CHECK_INT(chown(store, 4242, (gid_t)-1), 0);
        CHECK_INT(tokens_load(URL, NULL, NULL, &got, &e), -EACCES);
        CHECK_CONTAINS(err_msg(&e), "is accessible to others (mode 0755)");
        CHECK_CONTAINS(err_msg(&e), "chmod 700");
        CHECK_INT(tokens_save(t, &e), -EACCES);
        CHECK_INT(mode_of(store), 0755);
        CHECK_INT(chown(store, 0, (gid_t)-1), 0);
    }
    token_entry_free(t);
}

/* An entry file or a lock file that is a symbolic link: refused, naming where it points, never
 * followed, never replaced by a write. */
static void test_symlinks_refused(void)
{
    fresh_store("symlinks");
    struct err e = ERR_INIT;
    struct token_entry *t = full_entry(URL, ISS), *got = NULL;
    CHECK_INT(tokens_save(t, &e), 0);
    char *p = entry_file(URL, ISS);
    char target[4200], lock[4200];
    (void)snprintf(target, sizeof(target), "%s.elsewhere", p);
    CHECK_INT(rename(p, target), 0);
    CHECK_INT(symlink(target, p), 0);

    CHECK_INT(tokens_load(URL, ISS, NULL, &got, &e), -ELOOP);
    CHECK_CONTAINS(err_msg(&e), "is a symbolic link to '");
    CHECK_CONTAINS(err_msg(&e), ".elsewhere'");
    CHECK_INT(tokens_load(URL, NULL, NULL, &got, &e), -ELOOP); /* looked up by URL: reported too */
    CHECK_INT(tokens_save(t, &e), -ELOOP);
    CHECK_CONTAINS(err_msg(&e), "not replacing it");
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode)); /* still the link: nothing written */
    CHECK_INT(unlink(p), 0);
    CHECK_INT(rename(target, p), 0);
    CHECK_INT(tokens_load(URL, ISS, NULL, &got, &e), 0);
    token_entry_free(got);

    /* the lock */
    (void)snprintf(lock, sizeof(lock), "%s.lock", p);
    (void)snprintf(target, sizeof(target), "%s.lock-target", p);
    (void)unlink(lock);
    put(target, "", 0600);
    CHECK_INT(symlink(target, lock), 0);
    struct file_lock *l = NULL;
    CHECK_INT(tokens_lock(URL, ISS, NULL, 1000, &l, &e), -ELOOP);
    CHECK_CONTAINS(err_msg(&e), "symbolic link");
    CHECK(l == NULL);
    file_lock_release(l);
    CHECK_INT(unlink(lock), 0);
    CHECK_INT(tokens_lock(URL, ISS, NULL, 1000, &l, &e), 0);
    file_lock_release(l);
    free(p);
    token_entry_free(t);
}

/* "<store>/<first 32 hex digits of sha256(key)>.json", computed here, not by tokens.c */
static void hashed_name(const char *store, const char *key, char *out, size_t size)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    CHECK_INT(EVP_Digest(key, strlen(key), md, &mdlen, EVP_sha256(), NULL), 1);
    int o = snprintf(out, size, "%s/", store);
    for (int i = 0; i < 16; i++)
        o += snprintf(out + o, size - (size_t)o, "%02x", md[i]);
    (void)snprintf(out + o, size - (size_t)o, ".json");
}

static void save_account(const char *label, const char *token)
{
    struct token_entry *t = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(token_entry_new(URL, ISS, label, &t), 0);
    if (!t)
        return;
    t->registration = REGISTRATION_DYNAMIC;
    t->client_id = strdup("client-of-this-account");
    t->access_token = strdup(token);
    t->token_type = strdup("Bearer");
    t->expires_at = 4102444800;
    t->issued_at = now_unix();
    CHECK_INT(tokens_save(t, &e), 0);
    token_entry_free(t);
}

static void check_account(const char *issuer, const char *label, const char *token)
{
    struct token_entry *l = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(tokens_load(URL, issuer, label, &l, &e), 0);
    if (!l)
        return;
    CHECK_STR(l->access_token, token);
    if (label)
        CHECK_STR(l->label, label);
    else
        CHECK(l->label == NULL);
    token_entry_free(l);
}

/* Several accounts for one (URL, issuer): a file each; the default account is the file that
 * was there before accounts existed, read and left as it was */
static void test_accounts(void)
{
    const char *store = fresh_store("accounts");
    struct err e = ERR_INIT;
    struct token_entry *l = NULL, **v = NULL;
    char *dir = NULL, old[4096], work[4096];
    size_t n = 0;

    /* an entry as written before accounts existed: no "label", named by (URL, issuer) */
    CHECK_INT(tokens_dir(true, &dir, &e), 0);
    free(dir);
    hashed_name(store, URL "\n" ISS, old, sizeof(old));
    static const char before[] =
        "{\"version\": 1, \"server_url\": \"" URL "\", \"issuer\": \"" ISS "\", "
        "\"registration\": {\"method\": \"dynamic\", \"client_id\": \"c\"}, "
        "\"tokens\": {\"access_token\": \"at-default\", \"token_type\": \"Bearer\", "
        "\"expires_at\": 4102444800, \"issued_at\": 1700000000}, \"updated_at\": 1700000000}\n";
    put(old, before, 0600);
    check_account(ISS, NULL, "at-default");
    check_account(NULL, NULL, "at-default");
    CHECK_INT(tokens_load(URL, NULL, "work", &l, &e), -ENOENT);
    CHECK_INT(tokens_load(URL, ISS, "work", &l, &e), -ENOENT);

    /* two named accounts beside it, each its own file named by (URL, issuer, label) */
    save_account("work", "at-work");
    save_account("personal", "at-personal");
    hashed_name(store, URL "\n" ISS "\nwork", work, sizeof(work));
    CHECK_INT(mode_of(work), 0600);
    char *p = NULL;
    CHECK_INT(tokens_entry_path(URL, ISS, "work", &p, &e), 0);
    CHECK_STR(p, work);
    free(p);
    char *now = slurp(old);
    CHECK_STR(now, before); /* untouched */
    free(now);
    check_account(NULL, "work", "at-work");
    check_account(ISS, "personal", "at-personal");
    check_account(NULL, NULL, "at-default");

    /* listed together: the default account first, then by name */
    CHECK_INT(tokens_list(&v, &n, &e), 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK(v[0]->label == NULL);
        CHECK_STR(v[1]->label, "personal");
        CHECK_STR(v[2]->label, "work");
    }
    for (size_t i = 0; i < n; i++)
        token_entry_free(v[i]);
    free(v);

    /* one account's lock does not hold another's */
    struct file_lock *lk = NULL, *lk2 = NULL;
    CHECK_INT(tokens_lock(URL, ISS, "work", 1000, &lk, &e), 0);
    CHECK_INT(tokens_lock(URL, ISS, NULL, 50, &lk2, &e), 0);
    file_lock_release(lk2);
    lk2 = NULL;
    CHECK_INT(tokens_lock(URL, ISS, "work", 50, &lk2, &e), -ETIMEDOUT);
    file_lock_release(lk);

    /* signing one out leaves the others */
    CHECK_INT(tokens_delete(URL, ISS, "work", &e), 0);
    CHECK_INT(tokens_load(URL, NULL, "work", &l, &e), -ENOENT);
    check_account(NULL, "personal", "at-personal");
    check_account(NULL, NULL, "at-default");

    /* one account's file under another's name is not taken for it */
    char personal[4096];
    hashed_name(store, URL "\n" ISS "\npersonal", personal, sizeof(personal));
    CHECK_INT(link(personal, work), 0);
    CHECK_INT(tokens_load(URL, ISS, "work", &l, &e), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "does not belong here");
    CHECK_INT(unlink(work), 0);

    /* names that could not go on a command line or in a table as they are */
    static const char *const bad[] = {
        "",
        "a b",
        "a\nb",
        "a/b",
        "$(x)",
        "é",
        "0123456789012345678901234567890123456789012345678901234567890123x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(!tokens_label_valid(bad[i]));
        CHECK_INT(token_entry_new(URL, ISS, bad[i], &l), -EINVAL);
        CHECK_INT(tokens_load(URL, NULL, bad[i], &l, &e), -EINVAL);
        CHECK_INT(tokens_load(URL, ISS, bad[i], &l, &e), -EINVAL);
    }
    CHECK(tokens_label_valid("me+work@example.com"));
    CHECK(tokens_label_valid("0123456789012345678901234567890123456789012345678901234567890123"));
}

TESTS_MAIN(test_round_trip, test_newest_for_url, test_issuer_binding, test_unknown_keys_preserved,
           test_refusals, test_entry_arguments, test_clear, test_delete, test_lock,
           test_method_names, test_store_dir_mode, test_symlinks_refused, test_accounts)
