/* test_tokens_secrets.c - where the token store's secrets are: the secret members split out of
 * an entry's JSON and put back, the store's record, the setting and its refusals, decided with
 * no Secret Service reachable (the keychain itself: tests/integration/auth_keyring.sh) */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/path.h"

#include "token_json.h"
#include "tokens.h"
#include "tokens_secrets.h"
#include "tests.h"

#define URL "https://mcp.example.com/mcp"
#define ISS "https://auth.example.com"

static struct json_object *parse(const char *text)
{
    struct json_object *o = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(json_parse(text, strlen(text), 1 << 16, &o, &e), 0);
    return o;
}

static const char *str_at(struct json_object *root, const char *section, const char *key)
{
    struct json_object *v = NULL;
    struct json_object *s = json_get_object(root, section);
    if (!s || !json_object_object_get_ex(s, key, &v))
        return NULL;
    return json_object_get_string(v);
}

/* Every secret member moves out, the rest stays; put back, the entry is whole again. */
static void test_split_and_put_back(void)
{
    struct json_object *root = parse(
        "{\"version\": 1, \"registration\": {\"client_id\": \"c\", \"client_secret\": \"cs\", "
        "\"registration_access_token\": \"rat\"}, \"tokens\": {\"access_token\": \"at\", "
        "\"refresh_token\": \"rt\", \"id_token\": \"it\", \"dpop_key\": \"dk\", "
        "\"token_type\": \"Bearer\", \"scope\": \"s\"}}");
    struct json_object *sec = NULL;
    CHECK(token_json_has_secrets(root));
    CHECK_INT(token_json_take_secrets(root, &sec), 0);
    CHECK(!token_json_has_secrets(root));
    CHECK(token_json_has_secrets(sec));
    CHECK_STR(str_at(root, "registration", "client_id"), "c");
    CHECK_STR(str_at(root, "tokens", "token_type"), "Bearer");
    CHECK_STR(str_at(root, "tokens", "scope"), "s");
    static const char *const moved[][3] = {
        {"registration", "client_secret", "cs"},
        {"registration", "registration_access_token", "rat"},
        {"tokens", "access_token", "at"},
        {"tokens", "refresh_token", "rt"},
        {"tokens", "id_token", "it"},
        {"tokens", "dpop_key", "dk"},
    };
    for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
        CHECK(str_at(root, moved[i][0], moved[i][1]) == NULL);
        CHECK_STR(str_at(sec, moved[i][0], moved[i][1]), moved[i][2]);
    }
    CHECK(json_get_object(sec, "discovery") == NULL);

    CHECK_INT(token_json_put_secrets(root, sec), 0);
    for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
        CHECK_STR(str_at(root, moved[i][0], moved[i][1]), moved[i][2]);

    /* what root held is replaced, not merged: a secret the other side lacks is gone */
    struct json_object *only_at = parse("{\"tokens\": {\"access_token\": \"new\"}}");
    CHECK_INT(token_json_put_secrets(root, only_at), 0);
    CHECK_STR(str_at(root, "tokens", "access_token"), "new");
    CHECK(str_at(root, "tokens", "refresh_token") == NULL);
    CHECK(str_at(root, "registration", "client_secret") == NULL);
    CHECK_STR(str_at(root, "registration", "client_id"), "c");

    /* an entry without a secret: nothing to move, no empty section left behind */
    struct json_object *plain = parse("{\"version\": 1, \"tokens\": {\"scope\": \"s\"}}"),
                       *none = NULL;
    CHECK(!token_json_has_secrets(plain));
    CHECK_INT(token_json_take_secrets(plain, &none), 0);
    CHECK_INT(json_object_object_length(none), 0);
    CHECK_STR(str_at(plain, "tokens", "scope"), "s");

    json_object_put(none);
    json_object_put(plain);
    json_object_put(only_at);
    token_json_wipe_secrets(sec);
    json_object_put(sec);
    token_json_wipe_secrets(root);
    json_object_put(root);
}

/* A fresh agent directory, its store created; returns the store's path (valid until the next
 * call). */
static const char *fresh_store(const char *name)
{
    static char *store;
    struct err e = ERR_INIT;
    char *agent = path_join(tests_tmpdir(), name), *dir = NULL;
    CHECK(agent != NULL);
    CHECK_INT(setenv("PI_CODING_AGENT_DIR", agent ? agent : "/nonexistent", 1), 0);
    CHECK_INT(tokens_dir(true, &dir, &e), 0);
    free(agent);
    free(store);
    store = dir;
    return store ? store : "/nonexistent";
}

static struct token_entry *signed_in(void)
{
    struct token_entry *t = NULL;
    CHECK_INT(token_entry_new(URL, ISS, NULL, &t), 0);
    if (!t)
        abort();
    t->access_token = strdup("at-1");
    t->refresh_token = strdup("rt-1");
    return t;
}

static int no_file_secrets(const char *dir, bool *ret, struct err *e)
{
    (void)dir;
    (void)e;
    *ret = false;
    return 0;
}

static int has_file_secrets(const char *dir, bool *ret, struct err *e)
{
    (void)dir;
    (void)e;
    *ret = true;
    return 0;
}

/* Without a record the store is a file store, whatever the setting; auto with no Secret
 * Service, and file, keep it so without writing a record; keyring on a store with tokens in
 * files is refused, naming the move. */
static void test_choice_without_keychain(void)
{
    const char *store = fresh_store("choice");
    char *record = path_join(store, "store.json");
    struct err e = ERR_INIT;
    enum tokens_backend b = TOKENS_BACKEND_KEYRING;
    bool recorded = true;
    if (!record)
        abort();
    /* no session bus at all: nothing may reach a real one */
    CHECK_INT(setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/credkit-test-bus", 1), 0);

    CHECK_INT(unsetenv(TOKENS_STORE_ENV), 0);
    CHECK_INT(tokens_backend_get(store, NULL, &b, &recorded, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_FILE);
    CHECK(!recorded);
    CHECK_INT(tokens_backend_for_write(store, no_file_secrets, &b, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_FILE);
    CHECK(access(record, F_OK) < 0);

    CHECK_INT(setenv(TOKENS_STORE_ENV, "file", 1), 0);
    CHECK_INT(tokens_backend_for_write(store, no_file_secrets, &b, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_FILE);

    CHECK_INT(setenv(TOKENS_STORE_ENV, "keyring", 1), 0);
    /* refused at the first read already: a refresh must not get a token it cannot store */
    CHECK_INT(tokens_backend_get(store, has_file_secrets, &b, NULL, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "'mcp-auth store migrate keyring'");
    CHECK_INT(tokens_backend_get(store, no_file_secrets, &b, NULL, &e), 0);
    CHECK_INT(tokens_backend_for_write(store, has_file_secrets, &b, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "keeps its secrets in the files, but MCP_AUTH_STORE=keyring");
    CHECK_CONTAINS(err_msg(&e), "'mcp-auth store migrate keyring'");
    CHECK(access(record, F_OK) < 0);
    /* forced, on a new store, with no Secret Service: the keychain's error, never files */
    CHECK_INT(tokens_backend_for_write(store, no_file_secrets, &b, &e) < 0, 1);
    CHECK_CONTAINS(err_msg(&e), "no Secret Service is available");
    CHECK_CONTAINS(err_msg(&e), "mcp-auth store migrate file");

    CHECK_INT(setenv(TOKENS_STORE_ENV, "vault", 1), 0);
    CHECK_INT(tokens_backend_get(store, NULL, &b, NULL, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e),
                   "MCP_AUTH_STORE='vault' is not a token store: use auto, file or keyring");

    /* a sign-in saved with the default setting and no Secret Service: in the file, no record */
    CHECK_INT(unsetenv(TOKENS_STORE_ENV), 0);
    struct token_entry *t = signed_in(), *l = NULL;
    CHECK_INT(tokens_save(t, &e), 0);
    CHECK(access(record, F_OK) < 0);
    CHECK_INT(tokens_load(URL, ISS, NULL, &l, &e), 0);
    CHECK_STR(l ? l->refresh_token : NULL, "rt-1");
    CHECK_INT(tokens_store_backend(&b, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_FILE);
    token_entry_free(l);
    token_entry_free(t);
    CHECK_INT(unsetenv("DBUS_SESSION_BUS_ADDRESS"), 0);
    free(record);
}

/* The record rules: every process reads the same backend; a setting that forces the other one
 * is refused with the move that fixes it; a record that is not one is reported, not guessed. */
static void test_record(void)
{
    const char *store = fresh_store("record");
    char *record = path_join(store, "store.json");
    struct err e = ERR_INIT;
    enum tokens_backend b = TOKENS_BACKEND_FILE;
    bool recorded = false;
    if (!record)
        abort();
    CHECK_INT(unsetenv(TOKENS_STORE_ENV), 0);

    CHECK_INT(tokens_backend_record(store, TOKENS_BACKEND_KEYRING, &e), 0);
    struct stat st;
    CHECK_INT(stat(record, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK_INT(tokens_backend_get(store, NULL, &b, &recorded, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_KEYRING);
    CHECK(recorded);
    /* a recorded store is what it says, whatever a write would decide */
    CHECK_INT(tokens_backend_for_write(store, has_file_secrets, &b, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_KEYRING);

    CHECK_INT(setenv(TOKENS_STORE_ENV, "file", 1), 0);
    CHECK_INT(tokens_backend_get(store, NULL, &b, NULL, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "keeps its secrets in the keychain, but MCP_AUTH_STORE=file");
    CHECK_CONTAINS(err_msg(&e), "'mcp-auth store migrate file'");
    /* the record alone, as a move reads it */
    CHECK_INT(tokens_backend_recorded(store, &b, &recorded, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_KEYRING);
    CHECK_INT(setenv(TOKENS_STORE_ENV, "keyring", 1), 0);
    CHECK_INT(tokens_backend_get(store, NULL, &b, NULL, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_KEYRING);
    CHECK_INT(unsetenv(TOKENS_STORE_ENV), 0);

    static const char *const bad[] = {
        "{\"version\": 1, \"secrets\": \"vault\"}",
        "{\"version\": 2, \"secrets\": \"file\"}",
        "{\"secrets\": \"file\"}",
        "[]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int fd = open(record, O_WRONLY | O_TRUNC | O_CLOEXEC);
        CHECK(fd >= 0);
        if (fd >= 0) {
            CHECK_INT(write(fd, bad[i], strlen(bad[i])), (long long)strlen(bad[i]));
            close(fd);
        }
        CHECK_INT(tokens_backend_get(store, NULL, &b, NULL, &e), -EBADMSG);
        CHECK_CONTAINS(err_msg(&e), "is not a token store record");
        /* nothing is read or written through a store whose record cannot be read */
        struct token_entry *t = signed_in();
        CHECK(tokens_save(t, &e) < 0);
        token_entry_free(t);
    }
    CHECK_INT(tokens_backend_record(store, TOKENS_BACKEND_FILE, &e), 0);
    CHECK_INT(tokens_backend_get(store, NULL, &b, NULL, &e), 0);
    CHECK_INT(b, TOKENS_BACKEND_FILE);
    free(record);
}

/* The store's lock is exclusive across processes (file_lock_acquire's), and a second holder in
 * this process waits and times out. */
static void test_store_lock(void)
{
    const char *store = fresh_store("lock");
    struct file_lock *a = NULL, *b = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(tokens_store_lock(store, 1000, &a, &e), 0);
    CHECK_INT(tokens_store_lock(store, 100, &b, &e), -ETIMEDOUT);
    file_lock_release(a);
    CHECK_INT(tokens_store_lock(store, 100, &b, &e), 0);
    file_lock_release(b);
}

TESTS_MAIN(test_split_and_put_back, test_choice_without_keychain, test_record, test_store_lock)
