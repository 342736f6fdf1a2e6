/* keychain.c - the OS keychain: the freedesktop Secret Service, through libsecret.
 *
 * Every operation runs libsecret's asynchronous API in a private GMainContext, pushed as the
 * thread-default context for the duration of the call, and iterates that context until the
 * call completes. One deadline (KEYCHAIN_TIMEOUT_MS) covers the whole operation: a timeout
 * source on the private context cancels the shared GCancellable, so nothing can hang forever -
 * not a bus that accepts the connection and never authenticates, not a daemon that is stopped,
 * not a prompt that nobody answers (GDBus's own 25 s per-call default does not cover those).
 * The _sync API cannot do this: it runs its own hidden context that our timer cannot reach.
 *
 * Each operation opens its own SecretService (secret_service_open) instead of libsecret's
 * process-wide singleton (secret_service_get): the singleton's D-Bus proxies would be bound to
 * the private context of the first call, so later property changes (Locked) would never reach
 * them and would pile up in a context nobody iterates - wrong answers and a slow leak in a
 * long-running process - and a restarted keyring daemon would leave the singleton holding a dead
 * session. The price is one session negotiation per operation; the daemon drops sessions when
 * the client leaves the bus.
 *
 * Nothing here prompts or unlocks: searches run without SECRET_SEARCH_UNLOCK, and store checks
 * that the default collection exists and is unlocked, then creates the item in that collection
 * with secret_item_create (secret_service_store would answer a locked collection with an unlock
 * prompt and a missing one with a create-keyring prompt). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>
#include <libsecret/secret.h>

#include "credkit/secmem.h"

#include "keychain.h"

/* The whole operation - connect, open a session, search or check, read, write or delete. */
#ifndef KEYCHAIN_TIMEOUT_MS
#define KEYCHAIN_TIMEOUT_MS 20000
#endif
/* After the deadline cancels the call in flight, how long to wait for it to report back. */
#define KEYCHAIN_GRACE_MS  2000
#define KEYCHAIN_LABEL_MAX 1024
#define KEYCHAIN_VALUE_MAX (1024u * 1024u)

#define DISPLAY_LABEL_PREFIX "credkit secret: "

#define ADVICE_START                                                                               \
    "start one, e.g. 'gnome-keyring-daemon --start --components=secrets' in a desktop session"
#define ADVICE_NO_SERVICE ADVICE_START ", or use an env/command recipe instead"
/* mcp-auth's token store: its tokens are in the keychain, and nowhere else */
#define ADVICE_TOKENS                                                                              \
    ADVICE_START " (or move the tokens back to files once it runs: 'mcp-auth store migrate file')"
#define MSG_LOCKED                                                                                 \
    "the keychain is locked: unlock it (log in to the desktop session or run "                     \
    "'gnome-keyring-daemon --unlock' with your password), then try again"

/* libsecret needs the schema as static data; it is constant. */
static const SecretSchema keychain_schema = {
    .name = "org.credkit.Secret",
    .flags = SECRET_SCHEMA_NONE,
    .attributes =
        {
            {.name = "label", .type = SECRET_SCHEMA_ATTRIBUTE_STRING},
            {.name = NULL, .type = 0},
        },
};

/* mcp-auth's token store: one item per store directory (attribute "store", its path), whose
 * secret holds the secrets of every entry of that store (tokens.h). */
static const SecretSchema tokens_schema = {
    .name = "org.credkit.TokenStore",
    .flags = SECRET_SCHEMA_NONE,
    .attributes =
        {
            {.name = "store", .type = SECRET_SCHEMA_ATTRIBUTE_STRING},
            {.name = NULL, .type = 0},
        },
};

/* Which item of ours an operation is about: the schema, its one attribute and that attribute's
 * value (which names the item in messages too), the display label's prefix, and the advice
 * when no Secret Service runs. */
struct kc_item {
    const SecretSchema *schema;
    const char *attr;
    const char *value;
    const char *display_prefix;
    const char *advice;
};

/* Items other programs store under "service" and "username" (keyring-rs, Python's keyring,
 * secret-tool's usual pair): matched by those attributes whatever schema name they carry. */
static const SecretSchema account_schema = {
    .name = "org.freedesktop.Secret.Generic",
    .flags = SECRET_SCHEMA_DONT_MATCH_NAME,
    .attributes =
        {
            {.name = "service", .type = SECRET_SCHEMA_ATTRIBUTE_STRING},
            {.name = "username", .type = SECRET_SCHEMA_ATTRIBUTE_STRING},
            {.name = NULL, .type = 0},
        },
};

/* Where an error happened decides what it means: any failure to reach the bus means there is no
 * session bus; a missing name while opening the service means there is no keyring daemon. */
enum stage {
    STAGE_BUS,
    STAGE_SERVICE,
    STAGE_CALL,
};

/* One keychain operation: its private main context, its deadline and the result of the
 * asynchronous call in flight. Lives on the caller's stack between op_begin and op_end. */
struct op {
    GMainContext *ctx;
    GCancellable *cancel;
    GSource *deadline;
    GSource *grace;
    bool timed_out; /* the deadline passed and cancelled everything */
    bool abandoned; /* ... and the call in flight did not even report its cancellation */
    GAsyncResult *res;
    const char *advice; /* what to do when there is no Secret Service */
};

static void op_on_result(GObject *source, GAsyncResult *res, gpointer userdata)
{
    struct op *op = userdata;
    (void)source;
    op->res = g_object_ref(res);
}

static gboolean op_on_grace(gpointer userdata)
{
    struct op *op = userdata;
    op->abandoned = true;
    return G_SOURCE_REMOVE;
}

static gboolean op_on_deadline(gpointer userdata)
{
    struct op *op = userdata;
    op->timed_out = true;
    g_cancellable_cancel(op->cancel);
    op->grace = g_timeout_source_new(KEYCHAIN_GRACE_MS);
    g_source_set_callback(op->grace, op_on_grace, op, NULL);
    g_source_attach(op->grace, op->ctx);
    return G_SOURCE_REMOVE;
}

static void op_begin(struct op *op)
{
    *op = (struct op){0};
    op->advice = ADVICE_NO_SERVICE;
    op->ctx = g_main_context_new();
    g_main_context_push_thread_default(op->ctx);
    op->cancel = g_cancellable_new();
    op->deadline = g_timeout_source_new(KEYCHAIN_TIMEOUT_MS);
    g_source_set_callback(op->deadline, op_on_deadline, op, NULL);
    g_source_attach(op->deadline, op->ctx);
}

/* Call after releasing every object the operation created: their deferred cleanups (signal
 * unsubscriptions, idle completions) are dispatched in our context, so drain it before
 * dropping it. */
static void op_end(struct op *op)
{
    if (!op->ctx)
        return;
    g_source_destroy(op->deadline);
    g_source_unref(op->deadline);
    if (op->grace) {
        g_source_destroy(op->grace);
        g_source_unref(op->grace);
    }
    g_object_unref(op->cancel);
    while (g_main_context_iteration(op->ctx, FALSE))
        ;
    g_clear_object(&op->res);
    g_main_context_pop_thread_default(op->ctx);
    g_main_context_unref(op->ctx);
    *op = (struct op){0};
}

/* Runs the private context until the call in flight completes. Returns its result (caller
 * unrefs), or NULL when the call ignored the cancellation at the deadline: then the operation
 * is over (-ETIMEDOUT) and the context is never iterated again, so the late callback can never
 * run against a dead stack frame. */
static GAsyncResult *op_wait(struct op *op)
{
    while (!op->res && !op->abandoned)
        (void)g_main_context_iteration(op->ctx, TRUE);
    GAsyncResult *res = op->res;
    op->res = NULL;
    return res;
}

static bool is_no_service_error(const GError *gerr)
{
    return g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_NO_SERVER) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_DISCONNECTED) ||
           g_error_matches(gerr, G_IO_ERROR, G_IO_ERROR_CLOSED);
}

static bool is_timeout_error(const GError *gerr)
{
    return g_error_matches(gerr, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_TIMED_OUT) ||
           g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY);
}

/* Turns a GError (which may be NULL when a call was abandoned) into -errno and a message.
 * Messages quote the label, never the value: GError texts from libsecret and D-Bus name objects
 * and paths only. */
static int map_error(const struct op *op, const GError *gerr, enum stage stage, const char *label,
                     struct err *e)
{
    char detail[512] = "";

    if (gerr) {
        /* "GDBus.Error:org.freedesktop.DBus.Error.ServiceUnknown: The name ..." -> "The name ..." */
        GError *copy = g_error_copy(gerr);
        (void)g_dbus_error_strip_remote_error(copy);
        (void)g_strlcpy(detail, copy->message, sizeof(detail));
        g_error_free(copy);
    }

    if (op->abandoned ||
        (op->timed_out && g_error_matches(gerr, G_IO_ERROR, G_IO_ERROR_CANCELLED)) ||
        is_timeout_error(gerr))
        return err_set(e, -ETIMEDOUT,
                       "the Secret Service did not answer within %d seconds: check that the "
                       "keyring daemon is running and responsive, then try again",
                       KEYCHAIN_TIMEOUT_MS / 1000);
    if (!gerr)
        (void)g_strlcpy(detail, "unknown failure", sizeof(detail));
    if (stage == STAGE_BUS)
        return err_set(e, -ENOTCONN, "no Secret Service is available (no D-Bus session: %s): %s",
                       detail, op->advice);
    if (is_no_service_error(gerr))
        return err_set(e, -ENOTCONN,
                       "no Secret Service is available (no keyring daemon on the D-Bus session: "
                       "%s): %s",
                       detail, op->advice);
    if (g_error_matches(gerr, SECRET_ERROR, SECRET_ERROR_IS_LOCKED))
        return err_set(e, -EACCES, MSG_LOCKED);
    if (label)
        return err_set(e, -EIO, "keychain item '%s': the Secret Service failed: %s", label, detail);
    return err_set(e, -EIO, "the Secret Service failed: %s", detail);
}

static int check_label(const char *label, struct err *e)
{
    if (!label || !*label)
        return err_set(e, -EINVAL, "the keychain label is empty");
    size_t n = strnlen(label, KEYCHAIN_LABEL_MAX + 1);
    if (n > KEYCHAIN_LABEL_MAX)
        return err_set(e, -EINVAL, "the keychain label is longer than %d bytes",
                       KEYCHAIN_LABEL_MAX);
    if (!g_utf8_validate(label, (gssize)n, NULL))
        return err_set(e, -EINVAL, "the keychain label is not valid UTF-8");
    return 0;
}

/* Connects to the session bus and opens a Secret Service session. On success *ret_service is
 * the caller's (g_object_unref). */
static int open_service(struct op *op, SecretService **ret_service, struct err *e)
{
    GDBusConnection *bus = NULL;
    SecretService *service = NULL;
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    int r;

    g_bus_get(G_BUS_TYPE_SESSION, op->cancel, op_on_result, op);
    res = op_wait(op);
    if (res)
        bus = g_bus_get_finish(res, &gerr);
    if (!bus) {
        r = map_error(op, gerr, STAGE_BUS, NULL, e);
        goto out;
    }
    /* GLib's shared session connection raises SIGTERM in the process when the bus goes away;
     * a library must not kill its host. */
    g_dbus_connection_set_exit_on_close(bus, FALSE);
    g_clear_object(&res);

    /* Uses the same shared connection. */
    secret_service_open(SECRET_TYPE_SERVICE, NULL, SECRET_SERVICE_OPEN_SESSION, op->cancel,
                        op_on_result, op);
    res = op_wait(op);
    if (res)
        service = secret_service_open_finish(res, &gerr);
    if (!service) {
        r = map_error(op, gerr, STAGE_SERVICE, NULL, e);
        goto out;
    }

    *ret_service = service;
    service = NULL;
    r = 0;
out:
    g_clear_error(&gerr);
    g_clear_object(&res);
    g_clear_object(&bus);
    return r;
}

/* Every item of schema with attrs; label names the item in messages. */
static int search_by(struct op *op, SecretService *service, const SecretSchema *schema,
                     GHashTable *attrs, const char *label, bool load_secrets, GList **ret_items,
                     struct err *e)
{
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    GList *items = NULL;
    SecretSearchFlags flags = SECRET_SEARCH_ALL;
    int r;

    if (load_secrets)
        flags |= SECRET_SEARCH_LOAD_SECRETS;
    secret_service_search(service, schema, attrs, flags, op->cancel, op_on_result, op);
    res = op_wait(op);
    if (res)
        items = secret_service_search_finish(service, res, &gerr);
    if (!res || gerr) {
        r = map_error(op, gerr, STAGE_CALL, label, e);
        goto out;
    }

    *ret_items = items;
    items = NULL;
    r = 0;
out:
    g_list_free_full(items, g_object_unref);
    g_clear_error(&gerr);
    g_clear_object(&res);
    return r;
}

/* Every item it names, locked or not, in every collection. Secrets are loaded for the unlocked
 * ones when load_secrets. *ret_items (may be NULL: none) is the caller's:
 * g_list_free_full(items, g_object_unref). */
static int search_items(struct op *op, SecretService *service, const struct kc_item *it,
                        bool load_secrets, GList **ret_items, struct err *e)
{
    GHashTable *attrs = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attrs, (gpointer)it->attr, (gpointer)it->value);
    int r = search_by(op, service, it->schema, attrs, it->value, load_secrets, ret_items, e);
    g_hash_table_unref(attrs);
    return r;
}

/* The collection behind the "default" alias; *ret_collection is NULL when there is none, else
 * the caller's (g_object_unref). */
static int default_collection(struct op *op, SecretService *service, const char *label,
                              SecretCollection **ret_collection, struct err *e)
{
    SecretCollection *collection = NULL;
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    int r;

    secret_collection_for_alias(service, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE,
                                op->cancel, op_on_result, op);
    res = op_wait(op);
    if (res)
        collection = secret_collection_for_alias_finish(res, &gerr);
    if (!res || gerr) {
        r = map_error(op, gerr, STAGE_CALL, label, e);
        goto out;
    }

    *ret_collection = collection;
    collection = NULL;
    r = 0;
out:
    g_clear_object(&collection);
    g_clear_error(&gerr);
    g_clear_object(&res);
    return r;
}

/* Nothing carries the label. While the default collection is locked that is not an answer the
 * user can act on (the item may be in there, and storing it would fail anyway): say locked. */
static int not_found(struct op *op, SecretService *service, const char *label, struct err *e)
{
    SecretCollection *collection = NULL;
    int r;

    r = default_collection(op, service, label, &collection, e);
    if (r < 0)
        return r;
    if (collection && secret_collection_get_locked(collection))
        r = err_set(e, -EACCES, MSG_LOCKED);
    else
        r = err_set(e, -ENOENT, "no keychain item '%s'", label);
    g_clear_object(&collection);
    return r;
}

/* Copies a secret out of libsecret's (wiped-on-release) memory into a C string the caller
 * frees with secure_free(). */
static int copy_value(SecretValue *value, const char *label, char **ret, struct err *e)
{
    gsize len = 0;
    const gchar *bytes = secret_value_get(value, &len);
    char *copy;

    if (!bytes)
        len = 0;
    if (len > KEYCHAIN_VALUE_MAX)
        return err_set(e, -E2BIG, "keychain item '%s' is larger than %u bytes", label,
                       KEYCHAIN_VALUE_MAX);
    if (len && memchr(bytes, '\0', len))
        return err_set(e, -EINVAL, "keychain item '%s' holds binary data", label);
    copy = malloc(len + 1);
    if (!copy)
        return err_set(e, -ENOMEM, "out of memory reading keychain item '%s'", label);
    if (len)
        memcpy(copy, bytes, len);
    copy[len] = 0;
    *ret = copy;
    return 0;
}

/* The newest of items, unlocked, read into *ret (secure_free). label names it in messages. */
static int read_newest(struct op *op, SecretService *service, GList *items, const char *label,
                       char **ret, struct err *e)
{
    SecretItem *best = NULL;
    SecretValue *value = NULL;
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    char *copy = NULL;
    int r;

    /* Several items may carry the label (several collections, or stored by another tool): the
     * most recently modified one is the one the user last meant. */
    for (GList *l = items; l; l = l->next) {
        SecretItem *item = l->data;
        if (!best || secret_item_get_modified(item) > secret_item_get_modified(best))
            best = item;
    }
    if (!best) {
        r = not_found(op, service, label, e);
        goto out;
    }
    if (secret_item_get_locked(best)) {
        r = err_set(e, -EACCES, MSG_LOCKED);
        goto out;
    }

    value = secret_item_get_secret(best);
    if (!value) {
        /* The search ignores failures to load secrets; load it alone to learn why. */
        secret_item_load_secret(best, op->cancel, op_on_result, op);
        res = op_wait(op);
        if (!res || !secret_item_load_secret_finish(best, res, &gerr)) {
            r = map_error(op, gerr, STAGE_CALL, label, e);
            goto out;
        }
        value = secret_item_get_secret(best);
        if (!value) {
            r = err_set(e, -EIO, "keychain item '%s' has no readable secret", label);
            goto out;
        }
    }

    r = copy_value(value, label, &copy, e);
    if (r < 0)
        goto out;

    *ret = copy;
    copy = NULL;
    r = 0;
out:
    secure_free(copy);
    if (value)
        secret_value_unref(value);
    g_clear_error(&gerr);
    g_clear_object(&res);
    return r;
}

static int lookup_item(const struct kc_item *it, char **ret, struct err *e)
{
    struct op op = {0};
    SecretService *service = NULL;
    GList *items = NULL;
    const char *label = it->value;
    int r;

    r = check_label(label, e);
    if (r < 0)
        return r;

    op_begin(&op);
    op.advice = it->advice;
    r = open_service(&op, &service, e);
    if (r >= 0)
        r = search_items(&op, service, it, true, &items, e);
    if (r >= 0)
        r = read_newest(&op, service, items, label, ret, e);
    g_list_free_full(items, g_object_unref);
    g_clear_object(&service);
    op_end(&op);
    return r;
}

int keychain_lookup_account(const char *service_name, const char *account, char **ret,
                            struct err *e)
{
    struct op op = {0};
    SecretService *service = NULL;
    GHashTable *attrs = NULL;
    GList *items = NULL;
    int r;

    r = check_label(service_name, e);
    if (r >= 0)
        r = check_label(account, e);
    if (r < 0)
        return r;

    op_begin(&op);
    attrs = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attrs, (gpointer) "service", (gpointer)service_name);
    g_hash_table_insert(attrs, (gpointer) "username", (gpointer)account);
    r = open_service(&op, &service, e);
    if (r >= 0)
        r = search_by(&op, service, &account_schema, attrs, account, true, &items, e);
    if (r >= 0)
        r = read_newest(&op, service, items, account, ret, e);
    g_list_free_full(items, g_object_unref);
    g_hash_table_unref(attrs);
    g_clear_object(&service);
    op_end(&op);
    return r;
}

static int store_item(const struct kc_item *it, const char *value, struct err *e)
{
    const char *label = it->value;
    struct op op = {0};
    SecretService *service = NULL;
    SecretCollection *collection = NULL;
    SecretValue *secret = NULL;
    SecretItem *item = NULL;
    GHashTable *attrs = NULL;
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    char *display = NULL;
    size_t len;
    int r;

    r = check_label(label, e);
    if (r < 0)
        return r;
    if (!value)
        return err_set(e, -EINVAL, "no value to store in keychain item '%s'", label);
    len = strnlen(value, KEYCHAIN_VALUE_MAX + 1);
    if (len > KEYCHAIN_VALUE_MAX)
        return err_set(e, -E2BIG, "the value for keychain item '%s' is larger than %u bytes", label,
                       KEYCHAIN_VALUE_MAX);

    op_begin(&op);
    op.advice = it->advice;
    r = open_service(&op, &service, e);
    if (r < 0)
        goto out;

    r = default_collection(&op, service, label, &collection, e);
    if (r < 0)
        goto out;
    if (!collection) {
        r = err_set(e, -EACCES,
                    "the keychain has no default collection: log in to the desktop session once "
                    "(or create a default keyring, e.g. with seahorse), then try again");
        goto out;
    }
    if (secret_collection_get_locked(collection)) {
        r = err_set(e, -EACCES, MSG_LOCKED);
        goto out;
    }

    attrs = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attrs, (gpointer)it->attr, (gpointer)label);
    display = g_strconcat(it->display_prefix, label, NULL);
    secret = secret_value_new(value, (gssize)len, "text/plain");
    /* REPLACE: gnome-keyring updates an item of this collection whose attributes include these
     * (even one another tool stored with extra attributes) instead of adding one. */
    secret_item_create(collection, it->schema, attrs, display, secret, SECRET_ITEM_CREATE_REPLACE,
                       op.cancel, op_on_result, &op);
    res = op_wait(&op);
    if (res)
        item = secret_item_create_finish(res, &gerr);
    if (!item) {
        r = map_error(&op, gerr, STAGE_CALL, label, e);
        goto out;
    }

    r = 0;
out:
    g_clear_object(&item);
    if (secret)
        secret_value_unref(secret);
    g_free(display);
    if (attrs)
        g_hash_table_unref(attrs);
    g_clear_error(&gerr);
    g_clear_object(&res);
    g_clear_object(&collection);
    g_clear_object(&service);
    op_end(&op);
    return r;
}

static int delete_item(const struct kc_item *it, struct err *e)
{
    const char *label = it->value;
    struct op op = {0};
    SecretService *service = NULL;
    GList *items = NULL;
    GAsyncResult *res = NULL;
    GError *gerr = NULL;
    unsigned deleted = 0;
    int r;

    r = check_label(label, e);
    if (r < 0)
        return r;

    op_begin(&op);
    op.advice = it->advice;
    r = open_service(&op, &service, e);
    if (r < 0)
        goto out;
    r = search_items(&op, service, it, false, &items, e);
    if (r < 0)
        goto out;

    /* All or nothing: deleting the unlocked copies and leaving a locked one would make the
     * label come back once that collection is unlocked. */
    for (GList *l = items; l; l = l->next) {
        if (secret_item_get_locked(l->data)) {
            r = err_set(e, -EACCES, MSG_LOCKED);
            goto out;
        }
    }

    for (GList *l = items; l; l = l->next) {
        SecretItem *item = l->data;
        gboolean ok;

        secret_item_delete(item, op.cancel, op_on_result, &op);
        res = op_wait(&op);
        ok = res && secret_item_delete_finish(item, res, &gerr);
        g_clear_object(&res);
        if (ok) {
            deleted++;
        } else if (g_error_matches(gerr, SECRET_ERROR, SECRET_ERROR_NO_SUCH_OBJECT)) {
            g_clear_error(&gerr); /* gone meanwhile */
        } else {
            r = map_error(&op, gerr, STAGE_CALL, label, e);
            goto out;
        }
    }
    if (deleted == 0) {
        r = not_found(&op, service, label, e);
        goto out;
    }

    r = 0;
out:
    g_clear_error(&gerr);
    g_clear_object(&res);
    g_list_free_full(items, g_object_unref);
    g_clear_object(&service);
    op_end(&op);
    return r;
}

/* ---- the public items ---- */

static struct kc_item recipe_item(const char *label)
{
    return (struct kc_item){.schema = &keychain_schema,
                            .attr = "label",
                            .value = label,
                            .display_prefix = DISPLAY_LABEL_PREFIX,
                            .advice = ADVICE_NO_SERVICE};
}

static struct kc_item tokens_item(const char *store)
{
    return (struct kc_item){.schema = &tokens_schema,
                            .attr = "store",
                            .value = store,
                            .display_prefix = "credkit token store: ",
                            .advice = ADVICE_TOKENS};
}

int keychain_lookup(const char *label, char **ret, struct err *e)
{
    struct kc_item it = recipe_item(label);
    return lookup_item(&it, ret, e);
}

int keychain_store(const char *label, const char *value, struct err *e)
{
    struct kc_item it = recipe_item(label);
    return store_item(&it, value, e);
}

int keychain_delete(const char *label, struct err *e)
{
    struct kc_item it = recipe_item(label);
    return delete_item(&it, e);
}

int keychain_tokens_lookup(const char *store, char **ret, struct err *e)
{
    struct kc_item it = tokens_item(store);
    return lookup_item(&it, ret, e);
}

int keychain_tokens_save(const char *store, const char *value, struct err *e)
{
    struct kc_item it = tokens_item(store);
    return store_item(&it, value, e);
}

int keychain_tokens_delete(const char *store, struct err *e)
{
    struct kc_item it = tokens_item(store);
    return delete_item(&it, e);
}
