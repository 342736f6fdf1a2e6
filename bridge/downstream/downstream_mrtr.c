/* downstream_mrtr.c - across eras, a legacy server's requests during a modern agent's call: the
 * agent's request answered with an InputRequiredResult, its requestState (opaque, HMAC-signed
 * with a per-process key, bounded in count and time) resuming the server's request when the
 * agent sends the request again with its inputResponses.
 *
 * A 2026-07-28 agent takes no requests from servers: it asks its user (or its model) only when
 * a result of its own request says so, and then sends that request again. A legacy server
 * asks in the middle of a request and waits. So the bridge answers the agent's request with
 * the server's request as an input (key "input<n>"), keeps the upstream call alive, and takes
 * the agent's record out of the map of its ids (the agent's retry has a new id): suspended.
 * The retry's requestState names the record; its inputResponses answer the server's requests
 * (with the server's id, in the session it asked in), and the record carries the retry's id
 * from then on. The server's next request is the next InputRequiredResult; its final answer
 * answers the retry. What happens while the agent is away waits for it: a server request (the
 * next round), the final answer (given to the retry).
 *
 * requestState: "mcpb1." + replica + "." + base64url(payload) + "." + base64url(HMAC-SHA256(key,
 * the text before the last dot)). The replica is --replica-name, else random: in clear, so that
 * a load balancer can send a retry back to the replica holding its round (docs/deploy.md). The
 * payload is "<record>.<expiry>.<instance>.<server>": the expiry in Unix seconds, so that
 * another machine reads it too; the instance 6 random bytes naming this process, so that two
 * replicas given the same name by mistake still never take each other's states. The key is the
 * downstream's, every agent's: 32 random bytes drawn when the first state is made, or derived
 * from --state-key's secret, which replicas share so that each verifies the others' states. A
 * state that verifies but names another instance is a round another replica holds (its
 * server's call is open there): the retry is told to start over, rather than proxied to the
 * holder, which would need the replicas to know and reach each other. Each round makes a new
 * record number (one counter for the whole process), so an older state of the same request is
 * refused as expired. A suspended record is kept MRTR_KEEP_MS, at most
 * MRTR_MAX_SUSPENDED at once; at expiry the server's requests are answered with an error and
 * its call is cancelled. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "credkit/json.h"
#include "credkit/secmem.h"

#include "downstream/downstream_int.h"
#include "downstream/downstream_agent_int.h"
#include "downstream/downstream_mrtr_int.h"
#include "downstream/downstream_modern_int.h"
#include "downstream/downstream_pending_int.h"

#define MRTR_MAX_SUSPENDED 64
#define MRTR_KEEP_MS       (10 * 60 * 1000)
#define MRTR_MAX_REQS      16 /* a server's requests waiting in one record */
#define MRTR_PREFIX        "mcpb1."
#define MRTR_PAYLOAD_MAX   340 /* "<record>.<expiry>.<instance>.<server name>" */
#define MRTR_STATE_MAX     640

#define MRTR_INSTANCE_BYTES 6
#define MRTR_REPLICA_MAX    63
/* the label the --state-key secret is turned into the HMAC key with: a secret used for
 * something else as well gives a key of this use only */
#define MRTR_KEY_LABEL "mcp-bridge requestState key 1"

#define INVALID_STATE "requestState is invalid or expired: send the request again without it"
#define ELSEWHERE_STATE                                                                            \
    "requestState names an input round that another replica of this bridge holds: send the "       \
    "request again without it"

struct ds_mrtr_key {
    unsigned char key[32];
    char instance[MRTR_INSTANCE_BYTES * 4 / 3 + 4]; /* base64url */
    char replica[MRTR_REPLICA_MAX + 1];             /* the name in clear; the instance's */
    uint64_t counter;
};

struct ds_mrtr_state {
    int64_t keep_ms;
    struct list_node suspended; /* struct ds_pending by their node, oldest first */
    size_t n_suspended;
};

/* A request of the server waiting for the agent. */
struct mrtr_req {
    struct json_object *up_id; /* the server's id (reference) */
    struct json_object *msg;   /* its request (reference) */
    uint64_t gen;
    char key[24]; /* its key in inputRequests */
    bool asked;   /* in the last InputRequiredResult */
};

struct ds_mrtr {
    struct ds_pending *p;
    uint64_t no; /* the record number the last requestState names */
    bool suspended;
    struct loop_timer *timer; /* expiry, while suspended */
    struct mrtr_req reqs[MRTR_MAX_REQS];
    size_t n_reqs;
    unsigned keys; /* numbers the keys */
    /* the upstream's final answer, while the agent was away */
    bool has_final;
    struct json_object *final;
    int final_error;
    char *final_message;
};

/* ---- the state's text ---------------------------------------------------------------------- */

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url without padding of n bytes into out (4 * n / 3 + 4 bytes); its length. */
static size_t b64url(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = B64URL[(v >> 18) & 63];
        out[o++] = B64URL[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = B64URL[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = B64URL[v & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64url_value(char c)
{
    const char *p = c ? strchr(B64URL, c) : NULL;
    return p ? (int)(p - B64URL) : -1;
}

/* Decodes len characters into out (at most size - 1 bytes, NUL-terminated); false when it is
 * not base64url or too long. */
static bool b64url_decode(const char *in, size_t len, char *out, size_t size)
{
    size_t o = 0;
    uint32_t v = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int x = b64url_value(in[i]);
        if (x < 0)
            return false;
        v = (v << 6) | (uint32_t)x;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= size)
                return false;
            out[o++] = (char)((v >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return true;
}

/* The downstream's key, made (random) on first use; NULL on ENOMEM or without randomness. */
static struct ds_mrtr_key *key_of(struct downstream *d)
{
    if (d->mrtr_key)
        return d->mrtr_key;
    struct ds_mrtr_key *k = calloc(1, sizeof(*k));
    unsigned char id[MRTR_INSTANCE_BYTES];
    if (!k || secure_random(k->key, sizeof(k->key)) < 0 || secure_random(id, sizeof(id)) < 0) {
        free(k);
        return NULL;
    }
    b64url(id, sizeof(id), k->instance);
    snprintf(k->replica, sizeof(k->replica), "%s", k->instance);
    d->mrtr_key = k;
    return k;
}

int downstream_set_replica(struct downstream *d, const char *name)
{
    size_t n = strlen(name);
    if (!n || n > MRTR_REPLICA_MAX || strspn(name, B64URL) != n)
        return -EINVAL;
    struct ds_mrtr_key *k = key_of(d);
    if (!k)
        return -ENOMEM;
    memcpy(k->replica, name, n + 1);
    return 0;
}

int downstream_set_state_key(struct downstream *d, const char *secret, size_t len)
{
    struct ds_mrtr_key *k = key_of(d);
    unsigned int n = 0;
    if (!k)
        return -ENOMEM;
    if (!len)
        return -EINVAL;
    if (!HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)MRTR_KEY_LABEL,
              strlen(MRTR_KEY_LABEL), k->key, &n) ||
        n != sizeof(k->key))
        return -EIO;
    return 0;
}

void ds_mrtr_key_free(struct downstream *d)
{
    if (!d->mrtr_key)
        return;
    secure_wipe(d->mrtr_key, sizeof(*d->mrtr_key));
    free(d->mrtr_key);
    d->mrtr_key = NULL;
}

static struct ds_mrtr_state *table(struct ds_agent *a)
{
    if (a->mrtr)
        return a->mrtr;
    if (!key_of(a->d))
        return NULL;
    struct ds_mrtr_state *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    list_init(&t->suspended);
    t->keep_ms = MRTR_KEEP_MS;
    /* the tests' way to see an expiry without waiting ten minutes: shorter only */
    const char *v = getenv("MCP_BRIDGE_TEST_MRTR_KEEP_MS");
    char *end;
    long long ms = v ? strtoll(v, &end, 10) : 0;
    if (v && *end == '\0' && ms > 0 && ms < MRTR_KEEP_MS)
        t->keep_ms = ms;
    a->mrtr = t;
    return t;
}

/* The MAC part of a state whose signed text is text[0..len). */
static bool mac_of(const struct ds_mrtr_key *k, const char *text, size_t len, char out[64])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(EVP_sha256(), k->key, (int)sizeof(k->key), (const unsigned char *)text, len, mac,
              &n) ||
        n != 32)
        return false;
    b64url(mac, n, out);
    return true;
}

/* The requestState naming record no of server until expires; false when it cannot be made. */
static bool make_state(const struct ds_mrtr_key *k, uint64_t no, int64_t expires,
                       const char *server, char out[MRTR_STATE_MAX])
{
    char payload[MRTR_PAYLOAD_MAX], mac[64];
    int n = snprintf(payload, sizeof(payload), "%" PRIu64 ".%" PRId64 ".%s.%s", no, expires,
                     k->instance, server);
    if (n < 0 || (size_t)n >= sizeof(payload))
        return false;
    int head = snprintf(out, MRTR_STATE_MAX, "%s%s.", MRTR_PREFIX, k->replica);
    if (head < 0 || (size_t)head + (size_t)n * 4 / 3 + 4 + 64 >= MRTR_STATE_MAX)
        return false;
    size_t len = (size_t)head;
    len += b64url((const unsigned char *)payload, (size_t)n, out + len);
    if (!mac_of(k, out, len, mac))
        return false;
    snprintf(out + len, MRTR_STATE_MAX - len, ".%s", mac);
    return true;
}

enum state_verdict {
    STATE_INVALID,   /* forged, changed, expired, another server's */
    STATE_HERE,      /* this process's: the record it names may still be here */
    STATE_ELSEWHERE, /* good, but another replica's (the same --state-key) */
};

/* What a state of the bridge's is for server at now (Unix seconds); *ret_no the record it
 * names when STATE_HERE. */
static enum state_verdict read_state(const struct ds_mrtr_key *k, const char *state,
                                     const char *server, int64_t now, uint64_t *ret_no)
{
    const char *body = strchr(state + strlen(MRTR_PREFIX), '.'); /* after the replica */
    const char *dot = body ? strchr(body + 1, '.') : NULL;
    char mac[64], payload[MRTR_PAYLOAD_MAX];
    if (!k || !dot || strlen(state) >= MRTR_STATE_MAX ||
        !mac_of(k, state, (size_t)(dot - state), mac) || !secure_streq(mac, dot + 1) ||
        !b64url_decode(body + 1, (size_t)(dot - body) - 1, payload, sizeof(payload)))
        return STATE_INVALID;
    char *end;
    errno = 0;
    unsigned long long no = strtoull(payload, &end, 10);
    if (errno || *end != '.')
        return STATE_INVALID;
    long long expires = strtoll(end + 1, &end, 10);
    if (errno || *end != '.' || expires < now)
        return STATE_INVALID;
    const char *instance = end + 1, *name = strchr(instance, '.');
    if (!name || strcmp(name + 1, server) != 0)
        return STATE_INVALID;
    size_t ilen = (size_t)(name - instance);
    if (ilen != strlen(k->instance) || memcmp(instance, k->instance, ilen) != 0)
        return STATE_ELSEWHERE;
    *ret_no = no;
    return STATE_HERE;
}

/* ---- records --------------------------------------------------------------------------------- */

static void answer_server(struct ds_pending *p, struct mrtr_req *q, const char *message)
{
    if (!p->s || !p->s->u)
        return;
    struct json_object *err = json_object_new_object();
    if (err && json_object_object_add(err, "code", json_object_new_int(JRPC_INTERNAL_ERROR)) == 0 &&
        json_object_object_add(err, "message", json_object_new_string(message)) == 0) {
        int r = upstream_respond(p->s->u, q->gen, q->up_id, NULL, err);
        (void)r; /* the server is gone, or in another session: nothing to answer */
    }
    json_object_put(err);
}

static void req_remove(struct ds_mrtr *r, size_t i)
{
    json_object_put(r->reqs[i].up_id);
    json_object_put(r->reqs[i].msg);
    memmove(&r->reqs[i], &r->reqs[i + 1], (r->n_reqs - i - 1) * sizeof(r->reqs[0]));
    r->n_reqs--;
}

void ds_mrtr_pending_free(struct ds_pending *p)
{
    struct ds_mrtr *r = p->mrtr;
    if (!r)
        return;
    p->mrtr = NULL;
    while (r->n_reqs) {
        answer_server(p, &r->reqs[0], "the client's request this was for is over");
        req_remove(r, 0);
    }
    loop_timer_cancel(r->timer);
    json_object_put(r->final);
    free(r->final_message);
    free(r);
}

static struct ds_mrtr *record_new(struct ds_pending *p)
{
    if (p->mrtr)
        return p->mrtr;
    struct ds_mrtr *r = calloc(1, sizeof(*r));
    if (r)
        r->p = p;
    p->mrtr = r;
    return r;
}

/* Frees a suspended record (it is on no list of the downstream's but the table's). */
static void suspended_free(struct ds_agent *a, struct ds_pending *p)
{
    list_remove(&p->node);
    a->mrtr->n_suspended--;
    /* back on the list for ds_pending_free, without an id: the agent's old one is answered,
     * and may be in use again by another request */
    list_add_head(&a->pending, &p->node);
    a->n_pending++;
    json_object_put(p->id);
    p->id = NULL;
    ds_pending_free(p);
}

/* The record leaves the map of the agent's ids and the list of what is in flight. */
static void suspend(struct ds_agent *a, struct ds_pending *p)
{
    struct ds_mrtr *r = p->mrtr;
    if (p->key[0])
        (void)hashmap_remove(a->ids, p->key);
    p->key[0] = '\0';
    list_remove(&p->node);
    a->n_pending--;
    json_object_put(p->id);
    p->id = NULL;
    list_add_tail(&a->mrtr->suspended, &p->node);
    a->mrtr->n_suspended++;
    r->suspended = true;
}

static void expired(struct loop_timer *t, void *userdata);

/* The record carries the agent's new id; false when it cannot (answered). */
static bool attach(struct ds_agent *a, struct ds_pending *p, struct json_object *id)
{
    /* the map borrows the key from the record */
    if (!jrpc_id_key(id, p->key, sizeof(p->key)) || hashmap_put_borrowed(a->ids, p->key, p) < 0) {
        p->key[0] = '\0';
        ds_reply_error(a, id, JRPC_INTERNAL_ERROR, "out of memory");
        return false;
    }
    list_remove(&p->node);
    a->mrtr->n_suspended--;
    list_add_head(&a->pending, &p->node);
    a->n_pending++;
    p->id = json_object_get(id);
    p->mrtr->suspended = false;
    loop_timer_cancel(p->mrtr->timer);
    p->mrtr->timer = NULL;
    return true;
}

/* The InputRequiredResult of the requests not asked yet; NULL on ENOMEM. */
static struct json_object *input_required(struct ds_mrtr *r, const char *state)
{
    struct json_object *res = json_object_new_object(), *reqs = json_object_new_object();
    if (!res || !reqs ||
        json_object_object_add(res, "resultType", json_object_new_string("input_required")) < 0)
        goto oom;
    for (size_t i = 0; i < r->n_reqs; i++) {
        struct mrtr_req *q = &r->reqs[i];
        if (q->asked)
            continue;
        struct json_object *in = json_object_new_object();
        struct json_object *params = json_object_object_get(q->msg, "params");
        if (!in || json_object_object_add(reqs, q->key, in) < 0) {
            json_object_put(in);
            goto oom;
        }
        if (json_object_object_add(in, "method",
                                   json_object_new_string(json_get_string(q->msg, "method"))) < 0 ||
            (params && json_object_object_add(in, "params", json_object_get(params)) < 0))
            goto oom;
        q->asked = true;
    }
    if (json_object_object_add(res, "inputRequests", reqs) < 0) {
        reqs = NULL;
        goto oom;
    }
    reqs = NULL;
    if (json_object_object_add(res, "requestState", json_object_new_string(state)) < 0)
        goto oom;
    return res;
oom:
    json_object_put(reqs);
    json_object_put(res);
    return NULL;
}

/* Answers the agent's request with what the server asks; the record is suspended. */
static void ask(struct ds_agent *a, struct ds_pending *p)
{
    struct ds_mrtr_state *t = a->mrtr;
    struct ds_mrtr_key *k = a->d->mrtr_key; /* made with the table */
    struct ds_mrtr *r = p->mrtr;
    char state[MRTR_STATE_MAX];
    /* rounded up: the record's own timer is what ends it on time */
    int64_t expires = (int64_t)time(NULL) + (t->keep_ms + 999) / 1000;
    r->no = ++k->counter;
    struct json_object *res = NULL;
    if (!make_state(k, r->no, expires, p->s->name, state) || !(res = input_required(r, state)) ||
        loop_timer_add(a->d->loop, t->keep_ms, expired, p, &r->timer) < 0) {
        json_object_put(res);
        ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
        struct upstream_call *c = p->call;
        p->call = NULL;
        upstream_call_cancel(c, "out of memory");
        ds_pending_free(p);
        return;
    }
    log_debug(a->d->log, "%s: server '%s' asks the client for input (state %" PRIu64 ")", p->method,
              p->s->name, r->no);
    ds_reply_result(a, p->id, res);
    suspend(a, p);
}

static void expired(struct loop_timer *t, void *userdata)
{
    struct ds_pending *p = userdata;
    struct ds_agent *a = p->a;
    struct ds_mrtr *r = p->mrtr;
    (void)t;
    log_info(
        a->d->log, "server '%s': the client did not send %s again within %d minutes: cancelled",
        p->s ? p->s->name : "?", p->method[0] ? p->method : "its request", MRTR_KEEP_MS / 60000);
    while (r->n_reqs) {
        answer_server(p, &r->reqs[0], "the client did not answer in time");
        req_remove(r, 0);
    }
    struct upstream_call *c = p->call;
    p->call = NULL;
    upstream_call_cancel(c, "the client did not come back for it");
    suspended_free(a, p);
}

struct ds_pending *ds_mrtr_record_of_call(struct ds_agent *a, const struct upstream_call *c)
{
    struct list_node *i;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->type == DS_PT_CALL && p->call == c)
            return p;
    }
    if (!a->mrtr)
        return NULL;
    list_for_each (i, &a->mrtr->suspended) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->call == c)
            return p;
    }
    return NULL;
}

static void refuse(struct ds_server *s, uint64_t gen, struct json_object *id, const char *message)
{
    struct ds_pending tmp = {.s = s};
    struct mrtr_req q = {.up_id = id, .gen = gen};
    answer_server(&tmp, &q, message);
}

bool ds_mrtr_server_request(struct ds_agent *a, struct ds_server *s, uint64_t gen,
                            struct json_object *msg)
{
    struct json_object *id = json_object_object_get(msg, "id");
    struct upstream_call *c = upstream_related_call(s->u, msg);
    struct ds_pending *p = c ? ds_mrtr_record_of_call(a, c) : NULL;
    if (!p || p->s != s)
        return false;
    char text[DS_TEXT_MAX];
    struct ds_mrtr_state *t = table(a);
    struct ds_mrtr *r = t ? record_new(p) : NULL;
    if (!r) {
        refuse(s, gen, id, "out of memory");
        return true;
    }
    if (r->n_reqs >= MRTR_MAX_REQS) {
        snprintf(text, sizeof(text), "too many requests waiting for the client (at most %d)",
                 MRTR_MAX_REQS);
        refuse(s, gen, id, text);
        return true;
    }
    if (!r->suspended && t->n_suspended >= MRTR_MAX_SUSPENDED) {
        snprintf(text, sizeof(text),
                 "too many requests of the client waiting for its input (at most %d)",
                 MRTR_MAX_SUSPENDED);
        refuse(s, gen, id, text);
        return true;
    }
    struct mrtr_req *q = &r->reqs[r->n_reqs++];
    memset(q, 0, sizeof(*q));
    q->up_id = json_object_get(id);
    q->msg = json_object_get(msg);
    q->gen = gen;
    snprintf(q->key, sizeof(q->key), "input%u", ++r->keys);
    if (!r->suspended)
        ask(a, p);
    /* else it waits for the agent's next try */
    return true;
}

/* Gives the final answer kept while the agent was away to its retry. */
static void answer_final(struct ds_agent *a, struct ds_pending *p)
{
    struct ds_mrtr *r = p->mrtr;
    if (!r->final_error && r->final && ds_modern_response(p, r->final) == 0 &&
        json_object_object_add(r->final, "id", json_object_get(p->id)) == 0) {
        ds_send_json(a, r->final);
    } else if (!r->final_error) {
        ds_reply_error(a, p->id, JRPC_INTERNAL_ERROR, "out of memory");
    } else {
        const char *what = r->final_message ? r->final_message : strerror(-r->final_error);
        if (p->tool_call) {
            char text[DS_TEXT_MAX];
            snprintf(text, sizeof(text), "mcp-bridge: the call to server '%s' failed: %s",
                     p->s ? p->s->name : "?", what);
            ds_reply_result(a, p->id, jrpc_new_tool_error(text));
        } else {
            int code = r->final_error == -ETIMEDOUT ? JRPC_REQUEST_TIMEOUT
                       : r->final_error == -ECONNRESET || r->final_error == -ENOTCONN ||
                               r->final_error == -ESHUTDOWN
                           ? JRPC_CONNECTION_CLOSED
                           : JRPC_INTERNAL_ERROR;
            ds_reply_error(a, p->id, code, what);
        }
    }
    ds_pending_free(p);
}

static struct ds_pending *find_suspended(struct ds_agent *a, uint64_t no)
{
    struct list_node *i;
    list_for_each (i, &a->mrtr->suspended) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (p->mrtr->no == no)
            return p;
    }
    return NULL;
}

/* The agent's inputResponses to the server's requests asked; those it did not answer are
 * asked again. */
static void answer_inputs(struct ds_pending *p, struct json_object *responses)
{
    struct ds_mrtr *r = p->mrtr;
    for (size_t i = 0; i < r->n_reqs;) {
        struct mrtr_req *q = &r->reqs[i];
        struct json_object *v = q->asked ? json_object_object_get(responses, q->key) : NULL;
        if (!v || !json_object_is_type(v, json_type_object)) {
            q->asked = false;
            i++;
            continue;
        }
        int k = upstream_respond(p->s->u, q->gen, q->up_id, v, NULL);
        if (k < 0)
            log_debug(p->a->d->log, "server '%s': answer to %s not sent: %s", p->s->name, q->key,
                      strerror(-k));
        req_remove(r, i);
    }
}

int ds_mrtr_resume(struct ds_agent *a, struct jrpc_msg *m, struct ds_server *s)
{
    struct json_object *so = json_object_object_get(m->params, "requestState");
    const char *state =
        json_object_is_type(so, json_type_string) ? json_object_get_string(so) : NULL;
    bool legacy = s && upstream_era(s->u) == UPSTREAM_ERA_LEGACY;
    if (!state || strncmp(state, MRTR_PREFIX, strlen(MRTR_PREFIX)) != 0) {
        if (!legacy)
            return 0; /* the server's own: it reads it */
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS, INVALID_STATE);
        return 1;
    }
    uint64_t no = 0;
    struct ds_pending *p = NULL;
    enum state_verdict v =
        s ? read_state(a->d->mrtr_key, state, s->name, (int64_t)time(NULL), &no) : STATE_INVALID;
    if (v == STATE_ELSEWHERE) {
        log_info(a->d->log, "%s: a requestState of another replica's round: the client starts over",
                 m->method);
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS, ELSEWHERE_STATE);
        return 1;
    }
    if (v == STATE_HERE && a->mrtr)
        p = find_suspended(a, no);
    if (!p || p->s != s) {
        log_debug(a->d->log, "%s: a requestState that is not valid (or not any more) refused",
                  m->method);
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS, INVALID_STATE);
        return 1;
    }
    struct json_object *responses = json_object_object_get(m->params, "inputResponses");
    if (responses && !json_object_is_type(responses, json_type_object)) {
        ds_reply_error(a, m->id, JRPC_INVALID_PARAMS, "inputResponses must be an object");
        return 1;
    }
    if (a->n_pending >= DS_MAX_PENDING) {
        ds_reply_too_many(a, m->id);
        return 1;
    }
    if (!attach(a, p, m->id))
        return 1;
    if (!p->mrtr->has_final)
        answer_inputs(p, responses);
    if (p->mrtr->has_final)
        answer_final(a, p);
    else if (p->mrtr->n_reqs)
        ask(a, p); /* what arrived meanwhile, and what was not answered */
    return 1;
}

bool ds_mrtr_on_response(struct ds_pending *p, struct json_object *response, int error,
                         const char *message)
{
    struct ds_mrtr *r = p->mrtr;
    if (!r->suspended)
        return false; /* the agent waits for it: answered as any other */
    r->has_final = true;
    r->final = response ? json_object_get(response) : NULL;
    r->final_error = error;
    r->final_message = message ? strdup(message) : NULL;
    while (r->n_reqs) /* nobody waits for these any more */
        req_remove(r, 0);
    return true;
}

void ds_mrtr_drop(struct ds_agent *a, struct ds_server *s, uint64_t keep_gen, bool gone)
{
    struct list_node *i, *tmp;
    list_for_each (i, &a->pending) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        for (size_t k = 0; p->mrtr && (!s || p->s == s) && k < p->mrtr->n_reqs;) {
            if (keep_gen && p->mrtr->reqs[k].gen == keep_gen)
                k++;
            else
                req_remove(p->mrtr, k);
        }
    }
    if (!a->mrtr)
        return;
    list_for_each_safe (i, tmp, &a->mrtr->suspended) {
        struct ds_pending *p = list_entry(i, struct ds_pending, node);
        if (s && p->s != s)
            continue;
        for (size_t k = 0; k < p->mrtr->n_reqs;) {
            if (keep_gen && p->mrtr->reqs[k].gen == keep_gen)
                k++;
            else
                req_remove(p->mrtr, k);
        }
        if (!gone)
            continue;
        /* its server goes (or the bridge): the agent's retry finds nothing */
        struct upstream_call *c = p->call;
        p->call = NULL;
        upstream_call_cancel(c, NULL);
        suspended_free(a, p);
    }
}

void ds_mrtr_server_cancelled(struct ds_agent *a, struct ds_server *s, struct json_object *up_id)
{
    struct list_node *i;
    struct list_node *lists[2] = {&a->pending, a->mrtr ? &a->mrtr->suspended : NULL};
    for (size_t l = 0; l < 2 && lists[l]; l++) {
        list_for_each (i, lists[l]) {
            struct ds_pending *p = list_entry(i, struct ds_pending, node);
            for (size_t k = 0; p->mrtr && p->s == s && k < p->mrtr->n_reqs; k++) {
                if (json_object_equal(p->mrtr->reqs[k].up_id, up_id)) {
                    req_remove(p->mrtr, k);
                    return;
                }
            }
        }
    }
}

void ds_mrtr_release_all(struct ds_agent *a)
{
    if (!a->mrtr)
        return;
    while (!list_is_empty(&a->mrtr->suspended)) {
        struct ds_pending *p = list_entry(list_first(&a->mrtr->suspended), struct ds_pending, node);
        p->s = NULL; /* the servers are freed already, their calls with them */
        p->call = NULL;
        suspended_free(a, p);
    }
    free(a->mrtr);
    a->mrtr = NULL;
}

struct ds_agent *ds_agent_of_call(struct downstream *d, const struct upstream_call *c)
{
    for (struct ds_agent *a = c ? ds_agent_first(d) : NULL; a; a = ds_agent_next(a))
        if (ds_mrtr_record_of_call(a, c))
            return a;
    return NULL;
}
