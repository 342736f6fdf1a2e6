/* jsonrpc.c - JSON-RPC 2.0 messages: parse once, classify, serialise once */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <json-c/printbuf.h>

#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/util.h"

#include "core/jsonrpc.h"
#include "core/rblock.h"

#define SERIALIZE_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Keys are string literals: json-c need not copy them, and the builders add each key once. */
#define ADD_FLAGS (JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_ADD_CONSTANT_KEY)

/* What each thread keeps across messages: a json_tokener (it allocates its parse stack and
 * string buffer, which would otherwise be paid for per message) and the stand-ins' blocks given
 * back (struct light below). The key only frees what a thread that exits kept; the main
 * thread's lives until exit. */
struct light;
struct kept {
    struct json_tokener *tok;
    struct light *pool;
    size_t n_pool;
};
static _Thread_local struct kept tls_kept;
static pthread_key_t kept_key;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static bool kept_key_ok;

static void kept_destroy(void *p);

static void kept_key_init(void)
{
    kept_key_ok = pthread_key_create(&kept_key, kept_destroy) == 0;
}

/* Registers the thread's kept things for its exit. */
static void kept_register(void)
{
    (void)pthread_once(&kept_once, kept_key_init);
    /* without the key everything still works; a thread that exits then leaks what it kept */
    if (kept_key_ok && !pthread_getspecific(kept_key))
        (void)pthread_setspecific(kept_key, &tls_kept);
}

static struct json_tokener *tokener_get(void)
{
    if (tls_kept.tok)
        return tls_kept.tok; /* json_parse_with() resets it */
    struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
    if (!tok)
        return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_FLAGS);
    kept_register();
    tls_kept.tok = tok;
    return tok;
}

static struct json_object *member(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(obj, key, &v) ? v : NULL;
}

/* Whether obj has the member, and its value (NULL for JSON null) in *ret: one lookup. */
static bool lookup(struct json_object *obj, const char *key, struct json_object **ret)
{
    return json_object_object_get_ex(obj, key, ret);
}

/* A string without NUL bytes: as a C string it means exactly what it says. */
static bool is_clean_string(struct json_object *v)
{
    if (!json_object_is_type(v, json_type_string))
        return false;
    const char *s = json_object_get_string(v);
    return strlen(s) == (size_t)json_object_get_string_len(v);
}

/* json-c clamps integers beyond [INT64_MIN, UINT64_MAX] to those limits: two different ids
 * would come out as one, and the answer would carry an id the sender never used. */
static bool is_exact_int(struct json_object *v)
{
    if (!json_object_is_type(v, json_type_int))
        return false;
    int64_t i = json_object_get_int64(v);
    if (i == INT64_MIN)
        return false;
    return i < INT64_MAX || json_object_get_uint64(v) != UINT64_MAX;
}

static bool is_valid_id(struct json_object *id)
{
    if (is_exact_int(id))
        return true;
    return is_clean_string(id) && json_object_get_string_len(id) <= JRPC_ID_KEY_MAX;
}

/* A malformed error (not an object, or no integer code or string message) becomes a
 * well-formed one that carries the original as data, so that the pending request is settled
 * and whoever reads the error can rely on its shape. */
static int repair_error(struct json_object *root, struct json_object **error)
{
    struct json_object *orig = *error, *code = NULL, *message = NULL;
    if (json_object_is_type(orig, json_type_object)) {
        code = member(orig, "code");
        message = member(orig, "message");
        if (json_object_is_type(code, json_type_int) &&
            json_object_is_type(message, json_type_string))
            return 0;
    }
    int64_t c = JRPC_INTERNAL_ERROR;
    if (json_object_is_type(code, json_type_int)) {
        c = json_object_get_int64(code);
        if (c < INT_MIN || c > INT_MAX)
            c = JRPC_INTERNAL_ERROR;
    }
    const char *msg = json_object_is_type(message, json_type_string)
                          ? json_object_get_string(message)
                          : "the peer sent a malformed JSON-RPC error";
    struct json_object *fixed = jrpc_new_error(NULL, (int)c, msg, orig);
    if (!fixed)
        return -ENOMEM;
    struct json_object *inner = member(fixed, "error");
    /* replacing a member puts the old value: inner keeps orig alive through its "data" */
    if (json_object_object_add(root, "error", json_object_get(inner)) < 0) {
        json_object_put(inner);
        json_object_put(fixed);
        return -ENOMEM;
    }
    json_object_put(fixed);
    *error = inner;
    return 0;
}

/* Fills m from m->root. Returns 0 (m->kind set) or -ENOMEM. */
static int classify(struct jrpc_msg *m)
{
    struct json_object *root = m->root;

    m->kind = JRPC_INVALID;
    if (!json_object_is_type(root, json_type_object))
        return 0; /* a batch, or a scalar */

    struct json_object *id, *method, *version, *params, *result, *error;
    bool has_id = lookup(root, "id", &id);
    bool id_ok = has_id && is_valid_id(id);
    if (id_ok)
        m->id = id; /* even for an invalid message: an error answer can echo it */

    bool has_method = lookup(root, "method", &method);
    if (has_method && is_clean_string(method))
        m->method = json_object_get_string(method);

    (void)lookup(root, "jsonrpc", &version);
    if (!json_object_is_type(version, json_type_string) ||
        strcmp(json_object_get_string(version), "2.0") != 0 ||
        json_object_get_string_len(version) != 3)
        return 0;

    bool has_result = lookup(root, "result", &result), has_error = lookup(root, "error", &error);

    if (has_method) {
        if (!m->method || has_result || has_error)
            return 0;
        (void)lookup(root, "params", &params);
        /* MCP params are objects; null is taken for absent, as some peers write it */
        if (params && !json_object_is_type(params, json_type_object))
            return 0;
        if (has_id && !id_ok)
            return 0;
        m->params = params;
        m->kind = has_id ? JRPC_REQUEST : JRPC_NOTIFICATION;
        return 0;
    }

    if (!id_ok || has_result == has_error)
        return 0;
    if (has_result) {
        m->result = result;
    } else {
        int r = repair_error(root, &error);
        if (r < 0)
            return r;
        m->error = error;
    }
    m->kind = JRPC_RESPONSE;
    return 0;
}

int jrpc_parse(const char *text, size_t len, size_t max_len, struct jrpc_msg *ret, struct err *e)
{
    struct json_object *root = NULL;
    int r;

    /* said here with the message's size, which the log of a bridge wants to see */
    if (len > max_len || len >= INT_MAX) {
        r = err_set(e, -E2BIG, "message of %zu bytes is larger than the limit of %zu bytes", len,
                    max_len < INT_MAX - 1 ? max_len : (size_t)INT_MAX - 1);
        goto out;
    }
    struct json_tokener *tok = tokener_get();
    if (!tok) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    /* root stays NULL for a bare JSON null: classified JRPC_INVALID below */
    r = json_parse_with(tok, text, len, max_len, "message", &root, e);
    if (r < 0)
        goto out;

    struct jrpc_msg m = {.root = root};
    r = classify(&m);
    if (r < 0) {
        r = err_set(e, r, "out of memory");
        goto out;
    }
    root = NULL; /* m owns it now */
    *ret = m;
    r = 0;
out:
    json_object_put(root);
    return r;
}

/* ---- params without a tree ---------------------------------------------------------------- */

/* The stand-in's envelope is built on the stack: a bigger one (a long _meta) takes the tree. */
#define LIGHT_ENVELOPE_MAX 2048
/* A stand-in of params (and method) up to this size takes a block kept for reuse, at most
 * LIGHT_POOL_MAX of them per thread: one per call in flight, none allocated once warm. */
#define LIGHT_POOL_TEXT 1024
#define LIGHT_POOL_MAX  64
/* Params longer than this, lying in the read buffer of the message being delivered (a mapping
 * of its own: rblock.h), are not copied: the stand-in holds that buffer. A copy of a big
 * message kept by its call until it is answered was one more message-sized block per call. */
#define LIGHT_HOLD_MIN RBLOCK_MAP

/* The bytes a stand-in params serialises as (its userdata). */
struct light {
    struct light *next;  /* in the pool */
    size_t cap;          /* bytes text holds: LIGHT_POOL_TEXT for a block of the pool */
    size_t len;          /* of params */
    const char *params;  /* params as written, "{...}": in text, or in held */
    struct rblock *held; /* the read buffer params lie in (a reference), or NULL */
    struct jscan_span name,
        meta;    /* value spans in params (the name with its quotes); len 0: none */
    char text[]; /* params unless held, then the method of a request without a root and a NUL:
                  * one allocation with the rest */
};

static void kept_destroy(void *p)
{
    struct kept *k = p;
    if (k->tok)
        json_tokener_free(k->tok);
    k->tok = NULL;
    while (k->pool) {
        struct light *l = k->pool;
        k->pool = l->next;
        free(l);
    }
    k->n_pool = 0;
}

/* A block for need bytes of text: from the pool when it fits one. NULL on ENOMEM. */
static struct light *light_new(size_t need)
{
    struct light *l = NULL;
    if (need <= LIGHT_POOL_TEXT && tls_kept.pool) {
        l = tls_kept.pool;
        tls_kept.pool = l->next;
        tls_kept.n_pool--;
        return l;
    }
    size_t cap = need <= LIGHT_POOL_TEXT ? LIGHT_POOL_TEXT : need;
    if (cap > SIZE_MAX - sizeof(*l) || !(l = malloc(sizeof(*l) + cap)))
        return NULL;
    l->cap = cap;
    return l;
}

static void light_free(struct json_object *o, void *userdata)
{
    struct light *l = userdata;
    (void)o;
    if (l) {
        rblock_put(l->held, true);
        l->held = NULL;
    }
    if (l && l->cap == LIGHT_POOL_TEXT && tls_kept.n_pool < LIGHT_POOL_MAX) {
        if (!tls_kept.n_pool)
            kept_register();
        l->next = tls_kept.pool;
        tls_kept.pool = l;
        tls_kept.n_pool++;
        return;
    }
    free(l);
}

static bool is_member(const char *key, const struct light *l)
{
    return (l->name.len && strcmp(key, "name") == 0) || (l->meta.len && strcmp(key, "_meta") == 0);
}

static int put_value(struct printbuf *pb, struct json_object *v, int flags)
{
    size_t n = 0;
    const char *s = json_object_to_json_string_length(v, flags, &n);
    return s && n <= INT_MAX ? printbuf_memappend(pb, s, (int)n) : -1;
}

static int put_bytes(struct printbuf *pb, const char *s, size_t n)
{
    return n == 0 ? 0 : n > INT_MAX ? -1 : printbuf_memappend(pb, s, (int)n);
}

/* Members the tree has that the text has not (a _meta added by the upstream): at the front. */
static int put_added(struct json_object *o, const struct light *l, struct printbuf *pb, int flags)
{
    bool any = false;
    json_object_object_foreach(o, key, v)
    {
        if (is_member(key, l))
            continue;
        struct json_object *k = json_object_new_string(key);
        int r = k && put_bytes(pb, ",", any) >= 0 && put_value(pb, k, flags) >= 0 &&
                        put_bytes(pb, ":", 1) >= 0 && put_value(pb, v, flags) >= 0
                    ? 0
                    : -1;
        json_object_put(k);
        if (r < 0)
            return -1;
        any = true;
    }
    /* a comma before the text's first member, when it has one */
    size_t i = 1;
    while (i < l->len && strchr(" \t\r\n", l->params[i]) && l->params[i])
        i++;
    return any && l->params[i] != '}' ? put_bytes(pb, ",", 1) : 0;
}

struct member_at {
    struct jscan_span span;
    const char *key;
};

/* json-c's serializer of a stand-in: the text, its name and _meta written from the tree. */
static int light_serialize(struct json_object *o, struct printbuf *pb, int level, int flags)
{
    struct light *l = json_object_get_userdata(o);
    (void)level;
    if (put_bytes(pb, "{", 1) < 0 || put_added(o, l, pb, flags) < 0)
        return -1;
    struct member_at at[2] = {{l->name, "name"}, {l->meta, "_meta"}};
    if (at[1].span.len && (!at[0].span.len || at[1].span.off < at[0].span.off)) {
        struct member_at t = at[0];
        at[0] = at[1];
        at[1] = t;
    }
    size_t pos = 1;
    for (int i = 0; i < 2; i++) {
        if (!at[i].span.len)
            continue;
        struct json_object *v = NULL;
        if (put_bytes(pb, l->params + pos, at[i].span.off - pos) < 0)
            return -1;
        /* a member the tree no longer has keeps what the text says */
        int r = json_object_object_get_ex(o, at[i].key, &v)
                    ? put_value(pb, v, flags)
                    : put_bytes(pb, l->params + at[i].span.off, at[i].span.len);
        if (r < 0)
            return -1;
        pos = at[i].span.off + at[i].span.len;
    }
    return put_bytes(pb, l->params + pos, l->len - pos);
}

static int append(char *buf, size_t size, size_t *pos, const char *s, size_t n)
{
    if (size - *pos <= n)
        return -EAGAIN;
    memcpy(buf + *pos, s, n);
    *pos += n;
    return 0;
}

/* Adds val (a new reference, or NULL for null) under a constant key; on failure puts val. */
static bool add(struct json_object *obj, const char *key, struct json_object *val)
{
    if (json_object_object_add_ex(obj, key, val, ADD_FLAGS) == 0)
        return true;
    json_object_put(val);
    return false;
}

/* add() of a value just made: NULL is its allocation failing, not a null. */
static bool add_made(struct json_object *obj, const char *key, struct json_object *val)
{
    return val && add(obj, key, val);
}

/* The envelope's id as json-c parses it, from the scan: a string without escapes, an integer
 * of at most 18 digits; NULL with *ret_ok false for anything else (the text's parse decides). */
static struct json_object *scanned_id(const char *text, const struct jscan *j, bool *ret_ok)
{
    const char *s = text + j->id.off;
    size_t n = j->id.len;
    *ret_ok = false;
    if (j->id_type == JSCAN_STRING) {
        if (n < 2 || memchr(s, '\\', n))
            return NULL;
        *ret_ok = true;
        return json_object_new_string_len(s + 1, (int)(n - 2));
    }
    bool neg = j->id_type == JSCAN_NUMBER && n > 0 && s[0] == '-';
    if (j->id_type != JSCAN_NUMBER || n - neg == 0 || n - neg > 18)
        return NULL;
    int64_t v = 0;
    for (size_t i = neg; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return NULL;
        v = v * 10 + (s[i] - '0');
    }
    *ret_ok = true;
    return json_object_new_int64(neg ? -v : v);
}

/* A request's id from the scan (NULL when it has none) and an empty params object, without a
 * root: -EAGAIN for what it does not build (a _meta, an id it does not read or that is no valid
 * id), -ENOMEM. */
static int parts_built(const char *text, const struct jscan *j, struct json_object **ret_id,
                       struct json_object **ret_params)
{
    struct json_object *id = NULL, *params = NULL;
    bool id_ok = true;
    if (j->meta.len || j->name.len > INT_MAX || j->id.len > INT_MAX)
        return -EAGAIN;
    if (j->id.len && !(id = scanned_id(text, j, &id_ok)))
        return id_ok ? -ENOMEM : -EAGAIN;
    if (id && !is_valid_id(id)) {
        json_object_put(id);
        return -EAGAIN; /* the tree says it is invalid */
    }
    params = json_object_new_object();
    if (!params) {
        json_object_put(id);
        return -ENOMEM;
    }
    *ret_id = id;
    *ret_params = params;
    return 0;
}

/* The envelope's tree parsed from a copy of its text, params cut down to name and _meta. */
static int envelope_parsed(const char *text, const struct jscan *j, struct jrpc_msg *ret,
                           struct err *e)
{
    char env[LIGHT_ENVELOPE_MAX];
    size_t n = 0;
    int r;
#define PUT(s, len) append(env, sizeof(env), &n, (s), (len))
#define PUT_STR(s)  PUT((s), strlen(s))
    r = PUT_STR("{\"jsonrpc\":\"2.0\",\"method\":\"");
    if (r >= 0)
        r = PUT(text + j->method.off, j->method.len);
    if (r >= 0)
        r = PUT_STR("\",\"params\":{");
    if (r >= 0 && j->name.len) {
        r = PUT_STR("\"name\":");
        if (r >= 0)
            r = PUT(text + j->name.off - 1, j->name.len + 2);
    }
    if (r >= 0 && j->meta.len) {
        r = PUT_STR(j->name.len ? ",\"_meta\":" : "\"_meta\":");
        if (r >= 0)
            r = PUT(text + j->meta.off, j->meta.len);
    }
    if (r >= 0)
        r = PUT_STR("}");
    if (r >= 0 && j->id.len) {
        r = PUT_STR(",\"id\":");
        if (r >= 0)
            r = PUT(text + j->id.off, j->id.len);
    }
    if (r >= 0)
        r = PUT_STR("}");
#undef PUT
#undef PUT_STR
    if (r < 0)
        return r;
    r = jrpc_parse(env, n, sizeof(env), ret, e);
    return r == -EBADMSG ? -EAGAIN : r; /* the scan said it is JSON: the tree decides */
}

int jrpc_parse_light(const char *text, size_t len, size_t max_len, const struct jscan *j,
                     struct jrpc_msg *ret, struct err *e)
{
    struct jrpc_msg m = {0};
    struct light *l = NULL;
    struct json_object *id = NULL, *params = NULL;
    int r;

    if (len > max_len)
        return jrpc_parse(text, len, max_len, ret, e); /* says so with the sizes */
    if (!j->version_ok || !j->method.len || !j->params.len || text[j->params.off] != '{' ||
        j->result.len || j->error.len || j->params.len > SIZE_MAX / 2 ||
        j->method.len > SIZE_MAX / 4)
        return -EAGAIN;
    /* the usual call (no _meta, a plain id) has no envelope's tree at all: its id, a params
     * object and the method kept with the params' bytes; none of json-c's per-parse allocations
     * (its locale, a copy of each key) nor a root's object, table and strings */
    r = parts_built(text, j, &id, &params);
    if (r == 0) {
        m = (struct jrpc_msg){.kind = id ? JRPC_REQUEST : JRPC_NOTIFICATION,
                              .id = id,
                              .params = params,
                              .light = true};
    } else if (r == -EAGAIN) {
        r = envelope_parsed(text, j, &m, e);
    }
    if (r < 0)
        return r == -ENOMEM ? err_set(e, r, "out of memory") : r;
    if (m.kind != JRPC_REQUEST && m.kind != JRPC_NOTIFICATION) {
        jrpc_msg_done(&m);
        return -EAGAIN;
    }

    /* a big message's read buffer is held instead of copied; it is never moved or written over
     * while held (rblock.h) */
    struct rblock *held = rblock_delivering();
    if (j->params.len <= LIGHT_HOLD_MIN || !rblock_holds(held, text + j->params.off, j->params.len))
        held = NULL;
    l = light_new((held ? 0 : j->params.len) + (m.light ? j->method.len + 1 : 0));
    if (!l) {
        jrpc_msg_done(&m);
        return err_set(e, -ENOMEM, "out of memory");
    }
    l->held = held;
    if (held) {
        rblock_get(held);
        l->params = text + j->params.off;
    } else {
        memcpy(l->text, text + j->params.off, j->params.len);
        l->params = l->text;
    }
    l->len = j->params.len;
    l->name = l->meta = (struct jscan_span){0, 0};
    if (j->name.len)
        l->name = (struct jscan_span){j->name.off - 1 - j->params.off, j->name.len + 2};
    if (j->meta.len)
        l->meta = (struct jscan_span){j->meta.off - j->params.off, j->meta.len};
    if (m.light) {
        /* the method lives as long as the params: as long as the message */
        char *method = l->text + (held ? 0 : l->len);
        memcpy(method, text + j->method.off, j->method.len);
        method[j->method.len] = '\0';
        m.method = method;
    }
    json_object_set_serializer(m.params, light_serialize, l, light_free);
    if (m.light && j->name.len &&
        !add_made(m.params, "name",
                  json_object_new_string_len(text + j->name.off, (int)j->name.len))) {
        jrpc_msg_done(&m);
        return err_set(e, -ENOMEM, "out of memory");
    }
    *ret = m;
    return 0;
}

bool jrpc_params_light(struct json_object *params)
{
    return json_object_is_type(params, json_type_object) &&
           json_object_get_userdata(params) != NULL;
}

struct json_object *jrpc_params_full(struct json_object *params)
{
    if (!jrpc_params_light(params))
        return json_object_get(params);
    /* the stand-in's own text: the bytes as written, its name and _meta as they are now */
    size_t len = 0;
    const char *text = jrpc_serialize(params, &len);
    struct json_object *full = NULL;
    struct err e = ERR_INIT;
    struct json_tokener *tok = tokener_get();
    if (!text || !tok || json_parse_with(tok, text, len, len, "params", &full, &e) < 0)
        return NULL;
    return full;
}

/* The stand-in of params when its tree holds only the name the text has a span for (the
 * pass-through's usual case: no _meta), and that name (*ret_name); NULL for anything else. */
static struct light *plain_light(struct json_object *params, struct json_object **ret_name)
{
    struct light *l = jrpc_params_light(params) ? json_object_get_userdata(params) : NULL;
    struct json_object *name = NULL;
    if (!l || l->meta.len || !l->name.len || json_object_object_length(params) != 1 ||
        !json_object_object_get_ex(params, "name", &name) ||
        !json_object_is_type(name, json_type_string))
        return NULL;
    *ret_name = name;
    return l;
}

/* Whether name is the one the text has (single mode: nothing renamed): then the bytes are
 * written as they are (a scanned name has no escapes, and json-c writes none for it either). */
static bool name_unchanged(const struct light *l, struct json_object *name)
{
    size_t n = (size_t)json_object_get_string_len(name);
    return n + 2 == l->name.len &&
           memcmp(json_object_get_string(name), l->params + l->name.off + 1, n) == 0;
}

static int write_name(struct buf *out, struct json_object *name)
{
    return jsonw_string_ex(out, json_object_get_string(name),
                           (size_t)json_object_get_string_len(name), 0);
}

/* params as jrpc_serialize() writes them, appended to out. A plain stand-in (above) is written
 * from its text and the name, without json-c's buffer on the object; anything else goes
 * through json-c. */
static int write_params(struct buf *out, struct json_object *params)
{
    struct json_object *name = NULL;
    struct light *l = plain_light(params, &name);
    if (l) {
        size_t at = l->name.off, end = l->name.off + l->name.len;
        if (name_unchanged(l, name))
            return buf_append(out, l->params, l->len);
        int r = buf_append(out, l->params, at);
        if (r >= 0)
            r = write_name(out, name);
        return r < 0 ? r : buf_append(out, l->params + end, l->len - end);
    }
    size_t len = 0;
    const char *s = jrpc_serialize(params, &len);
    return s ? buf_append(out, s, len) : -ENOMEM;
}

/* {"jsonrpc":"2.0","id":N,"method":M */
static int write_envelope(struct buf *out, int64_t id, const char *method)
{
    char num[24];
    size_t n = fmt_i64(num, sizeof(num), id);
    if (!n || !method)
        return -EINVAL;
    int r = buf_append_str(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (r >= 0)
        r = buf_append(out, num, n);
    if (r >= 0)
        r = buf_append_str(out, ",\"method\":");
    return r < 0 ? r : jsonw_string_ex(out, method, strlen(method), 0);
}

int jrpc_write_request(struct buf *out, int64_t id, const char *method, struct json_object *params)
{
    int r = write_envelope(out, id, method);
    if (r >= 0 && params) {
        r = buf_append_str(out, ",\"params\":");
        if (r >= 0)
            r = write_params(out, params);
    }
    return r < 0 ? r : buf_append_char(out, '}');
}

bool jrpc_params_held(struct json_object *params)
{
    struct light *l = jrpc_params_light(params) ? json_object_get_userdata(params) : NULL;
    return l && l->held;
}

static void piece(struct jrpc_pieces *p, const void *base, size_t len)
{
    if (len > 0)
        p->iov[p->n++] = (struct iovec){(void *)base, len};
}

int jrpc_write_request_pieces(struct buf *out, int64_t id, const char *method,
                              struct json_object *params, struct jrpc_pieces *ret)
{
    struct json_object *name = NULL;
    struct light *l = jrpc_params_light(params) ? json_object_get_userdata(params) : NULL;
    struct jrpc_pieces p = {.n = 0};
    size_t start = out->len;
    int r;

    if (!l || !l->held || !plain_light(params, &name)) {
        /* a small request: one copy into out is cheaper than pieces */
        r = jrpc_write_request(out, id, method, params);
        if (r < 0)
            return r;
        piece(&p, out->data + start, out->len - start);
        *ret = p;
        return 0;
    }
    r = write_envelope(out, id, method);
    if (r >= 0)
        r = buf_append_str(out, ",\"params\":");
    size_t env = out->len;
    bool same = name_unchanged(l, name);
    if (r >= 0 && !same)
        r = write_name(out, name);
    if (r < 0)
        return r;
    /* the pieces point into out only once it has stopped growing */
    piece(&p, out->data + start, env - start);
    if (same) {
        piece(&p, l->params, l->len);
    } else {
        size_t at = l->name.off, end = l->name.off + l->name.len;
        piece(&p, l->params, at);
        piece(&p, out->data + env, out->len - env);
        piece(&p, l->params + end, l->len - end);
    }
    piece(&p, "}", 1);
    /* out's bound is the request's, as when it is written whole */
    size_t total = 0;
    for (int i = 0; i < p.n; i++)
        total += p.iov[i].iov_len;
    if (total > out->max - start)
        return -E2BIG;
    p.held = l->held;
    *ret = p;
    return 0;
}

void jrpc_msg_done(struct jrpc_msg *m)
{
    if (!m)
        return;
    if (m->light) {
        json_object_put(m->id);
        json_object_put(m->params);
    }
    json_object_put(m->root);
    *m = (struct jrpc_msg){0};
}

const char *jrpc_serialize(struct json_object *obj, size_t *ret_len)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(obj, SERIALIZE_FLAGS, &len);
    if (s && ret_len)
        *ret_len = len;
    return s;
}

bool jrpc_id_key(struct json_object *id, char *buf, size_t size)
{
    if (!buf || size == 0)
        return false;
    if (is_exact_int(id)) {
        int64_t i = json_object_get_int64(id);
        size_t n = i < 0 ? fmt_i64(buf, size, i) : fmt_u64(buf, size, json_object_get_uint64(id));
        return n > 0;
    }
    if (!is_clean_string(id))
        return false;
    size_t len = (size_t)json_object_get_string_len(id);
    if (len > JRPC_ID_KEY_MAX || len + 2 > size)
        return false;
    buf[0] = 's';
    memcpy(buf + 1, json_object_get_string(id), len + 1);
    return true;
}

/* {"jsonrpc":"2.0"} */
static struct json_object *new_message(void)
{
    struct json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    struct json_object *v = json_object_new_string_len("2.0", 3);
    if (!v || !add(o, "jsonrpc", v)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* Adds a new string member; false on ENOMEM. */
static bool add_string(struct json_object *obj, const char *key, const char *s)
{
    struct json_object *v = json_object_new_string(s);
    return v && add(obj, key, v);
}

struct json_object *jrpc_msg_ref(struct jrpc_msg *m)
{
    if (!m->root && m->light) {
        /* the members and order a parse of the envelope gives: jsonrpc, method, params, id */
        struct json_object *root = new_message();
        if (!root || !add_string(root, "method", m->method) ||
            !add(root, "params", json_object_get(m->params)) ||
            (m->id && !add(root, "id", json_object_get(m->id)))) {
            json_object_put(root);
            return NULL;
        }
        m->root = root;
    }
    return json_object_get(m->root);
}

struct json_object *jrpc_new_request(struct json_object *id, const char *method,
                                     struct json_object *params)
{
    struct json_object *o = new_message();
    if (!o || !add(o, "id", json_object_get(id)) || !add_string(o, "method", method) ||
        (params && !add(o, "params", json_object_get(params)))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

struct json_object *jrpc_new_notification(const char *method, struct json_object *params)
{
    struct json_object *o = new_message();
    if (!o || !add_string(o, "method", method) ||
        (params && !add(o, "params", json_object_get(params)))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

struct json_object *jrpc_new_result(struct json_object *id, struct json_object *result)
{
    struct json_object *o = new_message();
    struct json_object *res = result ? json_object_get(result) : json_object_new_object();
    if (!o || !res || !add(o, "id", json_object_get(id))) {
        json_object_put(res);
        json_object_put(o);
        return NULL;
    }
    if (!add(o, "result", res)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

struct json_object *jrpc_new_error(struct json_object *id, int code, const char *message,
                                   struct json_object *data)
{
    struct json_object *o = new_message();
    struct json_object *err = json_object_new_object();
    struct json_object *c = json_object_new_int(code);
    if (!o || !err || !c || !add(o, "id", json_object_get(id))) {
        json_object_put(c);
        goto fail;
    }
    if (!add(err, "code", c) || !add_string(err, "message", message) ||
        (data && !add(err, "data", json_object_get(data))))
        goto fail;
    if (!add(o, "error", err)) {
        json_object_put(o);
        return NULL;
    }
    return o;
fail:
    json_object_put(err);
    json_object_put(o);
    return NULL;
}

struct json_object *jrpc_new_tool_error(const char *message)
{
    struct json_object *o = json_object_new_object();
    struct json_object *content = json_object_new_array_ext(1);
    struct json_object *item = json_object_new_object();
    if (!o || !content || !item || !add_string(item, "type", "text") ||
        !add_string(item, "text", message))
        goto fail;
    if (json_object_array_add(content, item) < 0)
        goto fail;
    item = NULL; /* content owns it */
    struct json_object *c = content;
    content = NULL; /* add() takes it, even when it fails */
    if (!add(o, "content", c))
        goto fail;
    if (!add(o, "isError", json_object_new_boolean(1)))
        goto fail;
    return o;
fail:
    json_object_put(item);
    json_object_put(content);
    json_object_put(o);
    return NULL;
}

/* params._meta, when params and it are objects */
static struct json_object *meta_of(struct json_object *params)
{
    if (!json_object_is_type(params, json_type_object))
        return NULL;
    struct json_object *meta = member(params, "_meta");
    return json_object_is_type(meta, json_type_object) ? meta : NULL;
}

struct json_object *jrpc_progress_token(struct json_object *params)
{
    struct json_object *token = member(meta_of(params), "progressToken");
    /* tokens are mapped like ids, so the same rule: jrpc_id_key() works on any token returned */
    return is_valid_id(token) ? token : NULL;
}

void jrpc_set_progress_token(struct json_object *params, struct json_object *token)
{
    /* only a token jrpc_progress_token would return is ever mapped */
    if (!jrpc_progress_token(params))
        return;
    struct json_object *meta = meta_of(params);
    /* the key exists: json-c replaces the value in place (putting the old one), which cannot
     * fail for lack of memory */
    if (json_object_object_add(meta, "progressToken", json_object_get(token)) < 0)
        json_object_put(token);
}
