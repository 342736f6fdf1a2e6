/* jsonrpc.h - JSON-RPC 2.0 messages as the bridge handles them (mcp-client.md 4).
 *
 * Every message crossing the bridge is parsed once into a json-c tree (jrpc_parse), looked at,
 * possibly changed in place (an id or a progress token swapped), and serialised once
 * (jrpc_serialize); a request passed through has no tree of its envelope, only its id and a
 * stand-in of its params (jrpc_parse_light: a big message's params are not copied, the stand-in
 * holds the read buffer they lie in), is written to its server without one
 * (jrpc_write_request, or in pieces of that buffer: jrpc_write_request_pieces), and a result
 * passed through has none (jsonscan.h). Classification follows JSON-RPC 2.0: an object
 * with "method" and "id" is a request, with "method" and no "id" a notification, with "result" or
 * "error" and an "id" a response. Ids are strings or integers (MCP forbids null ids and fractional
 * numbers); anything else is JRPC_INVALID, as is a batch (arrays: MCP dropped batches in
 * 2025-06-18). A malformed error still makes a response (so its request is settled), rewritten
 * with an integer code and a string message. Ids are compared and used as map keys through their
 * canonical text (jrpc_id_key), so 1 and "1" never collide. docs/development.md, "Modules in
 * detail", has the rules in detail. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/jsonscan.h"

/* JSON-RPC 2.0 and MCP error codes */
#define JRPC_PARSE_ERROR        (-32700)
#define JRPC_INVALID_REQUEST    (-32600)
#define JRPC_METHOD_NOT_FOUND   (-32601)
#define JRPC_INVALID_PARAMS     (-32602)
#define JRPC_INTERNAL_ERROR     (-32603)
#define JRPC_CONNECTION_CLOSED  (-32000) /* the SDKs' ConnectionClosed */
#define JRPC_REQUEST_TIMEOUT    (-32001) /* the SDKs' RequestTimeout */
#define JRPC_RESOURCE_NOT_FOUND (-32002)

#define JRPC_ID_KEY_MAX 256 /* longer string ids are refused (JRPC_INVALID) */

enum jrpc_kind {
    JRPC_INVALID = 0,
    JRPC_REQUEST,
    JRPC_NOTIFICATION,
    JRPC_RESPONSE,
};

/* A parsed message. Every pointer but root is borrowed from root (a light request's from the
 * message itself, below); root is NULL only for the JSON value null (json-c has no object for
 * it; kind JRPC_INVALID) and for a light request. For JRPC_INVALID, id is set
 * when the message had a valid id and method when it had a string method (a caller answers an
 * invalid request with JRPC_INVALID_REQUEST when method is set; with no method it was a broken
 * response); params, result and error are NULL. For JRPC_RESPONSE, error is NULL on success
 * and result is NULL only for "result": null. */
struct jrpc_msg {
    struct json_object *root; /* owned reference; NULL for a light request until jrpc_msg_ref() */
    enum jrpc_kind kind;
    const char *method;         /* requests and notifications */
    struct json_object *id;     /* requests and responses */
    struct json_object *params; /* NULL when absent */
    struct json_object *result; /* responses: exactly one of result and error */
    struct json_object *error;
    /* jrpc_parse_light()'s request: id and params are the message's own references, method is
     * kept with the params, and root is built only when someone keeps the whole message */
    bool light;
};

/* Parses one message of len bytes (not NUL-terminated; at most max_len, else -E2BIG). Returns
 * 0 and fills *ret (kind JRPC_INVALID when it is JSON but not a JSON-RPC 2.0 message: *ret
 * then still holds root, for an error answer that echoes a usable id); -EBADMSG with a message
 * in e when it is not JSON: "line L, column C: <what>" (1-based, column in bytes), for syntax
 * errors, a NUL byte, anything but whitespace after the value, nesting deeper than
 * JSON_MAX_DEPTH, invalid UTF-8, or an empty message; -ENOMEM. *ret is written only on
 * success. Strict JSON (no trailing commas, no comments). Fast path: a reusable json_tokener
 * per thread, no copy of the text. Caller releases with jrpc_msg_done(). */
int jrpc_parse(const char *text, size_t len, size_t max_len, struct jrpc_msg *ret,
               struct err *e) _must_check_;
/* jrpc_parse() of a request without a tree of its params: j is text's scan (jscan_message()
 * returned 0). The tree's params holds only params.name and params._meta (as written); it
 * serialises as the params the text has, each byte as it was but for those two members, which
 * are written as the tree has them then (added at the front when the text had none). The rest
 * of params is not in the tree: only a caller that reads nothing else may take this (the
 * bridge's pass-through), and jrpc_params_full() gives the whole tree when it must. -EAGAIN
 * when the scan does not allow it (no "jsonrpc": "2.0", params not an object, an envelope too
 * big for the stand-in): then jrpc_parse() it. Without a _meta and with a plain id (a string
 * without escapes, an integer of at most 18 digits) the message has no root (struct jrpc_msg,
 * light): whoever keeps it takes jrpc_msg_ref(). Otherwise as jrpc_parse(). */
int jrpc_parse_light(const char *text, size_t len, size_t max_len, const struct jscan *j,
                     struct jrpc_msg *ret, struct err *e) _must_check_;
/* A new reference to m's root (caller puts), for keeping the whole request: a light request's
 * is built from its parts then (and kept in m). NULL on ENOMEM (and for the JSON value null). */
struct json_object *jrpc_msg_ref(struct jrpc_msg *m);
/* Whether params is jrpc_parse_light()'s stand-in. */
bool jrpc_params_light(struct json_object *params);
/* The whole params of a stand-in, parsed from its bytes with name and _meta as the stand-in has
 * them (a new reference, caller puts); for any other params a new reference to params. NULL on
 * ENOMEM. */
struct json_object *jrpc_params_full(struct json_object *params);

/* Puts root and clears the struct. NULL-safe, idempotent. */
void jrpc_msg_done(struct jrpc_msg *m);

/* Compact serialisation of obj (no slash escaping), no newline. The text is owned by obj and
 * valid until obj changes, is serialised again or is put; *ret_len (may be NULL) gets its
 * length. NULL on ENOMEM. */
const char *jrpc_serialize(struct json_object *obj, size_t *ret_len);

/* The canonical key of an id (see above) into buf (at least JRPC_ID_KEY_MAX + 2 bytes), a C
 * string. false for ids that are not valid ids (see above: strings with NUL or longer than
 * JRPC_ID_KEY_MAX, clamped integers, other types), or when buf is too small. */
bool jrpc_id_key(struct json_object *id, char *buf, size_t size);

/* Appends to out the text jrpc_serialize(jrpc_new_request(id, method, params)) gives, with
 * an integer id, without building the envelope's tree: the bridge's requests to its servers,
 * one per call. params may be NULL (no "params"). 0, -EINVAL, -ENOMEM or -E2BIG past out's bound
 * (out then holds part of it). */
int jrpc_write_request(struct buf *out, int64_t id, const char *method,
                       struct json_object *params) _must_check_;

#define JRPC_PIECES_MAX 5

struct rblock; /* a framing's read buffer (core/framing.h) */

/* A request in pieces: iov[0..n) are its bytes in order (no line end). */
struct jrpc_pieces {
    struct iovec iov[JRPC_PIECES_MAX];
    int n;
    /* the read buffer params' pieces lie in (held by params: for framing_sendv_held()), or
     * NULL when every piece is in out */
    struct rblock *held;
};

/* Whether params is a stand-in holding a big message's read buffer (then
 * jrpc_write_request_pieces() gives more than one piece). */
bool jrpc_params_held(struct json_object *params);

/* jrpc_write_request() without a copy of a big message: when params is a stand-in holding a
 * read buffer (jrpc_parse_light() of a message over 256 KiB) whose tree has only its name,
 * out gets the envelope up to "params": and a renamed name, and the pieces are those and the
 * params' bytes where they lie (the same bytes jrpc_write_request() writes). Otherwise the
 * request is appended to out whole, in one piece. ret's pieces are borrowed from out and
 * params, valid while neither changes. The same errors; ret is written only on success. */
int jrpc_write_request_pieces(struct buf *out, int64_t id, const char *method,
                              struct json_object *params, struct jrpc_pieces *ret) _must_check_;

/* Builders. Each returns a new object (caller puts) or NULL on ENOMEM. References to the
 * arguments are taken (json_object_get), never stolen: callers keep theirs. Strings are
 * copied and must not be NULL. Members come in this order: jsonrpc, id, method, params /
 * jsonrpc, id, result / jsonrpc, id, error {code, message, data}. params NULL omits
 * "params"; result NULL gives "result": {} (MCP's empty result, as for ping). */
struct json_object *jrpc_new_request(struct json_object *id, const char *method,
                                     struct json_object *params);
struct json_object *jrpc_new_notification(const char *method, struct json_object *params);
struct json_object *jrpc_new_result(struct json_object *id, struct json_object *result);
/* data may be NULL. id NULL gives "id": null (for answers to unparseable requests). */
struct json_object *jrpc_new_error(struct json_object *id, int code, const char *message,
                                   struct json_object *data);

/* An MCP tool result that reports a failure to the model instead of aborting its turn:
 * {"content":[{"type":"text","text":message}],"isError":true}. */
struct json_object *jrpc_new_tool_error(const char *message);

/* params._meta.progressToken when it is a valid id (a string or integer as above, so that
 * jrpc_id_key works on it), else NULL. params may be NULL. Borrowed. */
struct json_object *jrpc_progress_token(struct json_object *params);
/* Replaces params._meta.progressToken with token (reference taken; the old value is put) when
 * it is one jrpc_progress_token returns; otherwise nothing happens. Cannot fail. */
void jrpc_set_progress_token(struct json_object *params, struct json_object *token);
