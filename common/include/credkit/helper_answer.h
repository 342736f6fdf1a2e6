/* helper_answer.h - the JSON answers of credential helpers, written and read in one place.
 *
 * Two programs of the suite answer other programs with one line of JSON: `secrets resolve
 * --json` (the secrets answer) and `mcp-auth header --json` (the headers answer, which any
 * `headersHelper` command prints too). docs/helper-protocol.md is the contract; this module is
 * its only writer and reader, so the version rule lives in one constant.
 *
 * Build an answer in a struct (helper_secrets_add_*, helper_headers_add), write it into a secret
 * buffer (buf_init_secret) with *_write, or parse one with *_parse. A reader takes a missing
 * "version" as 1, ignores members it does not know (as git's credential helpers do) and refuses
 * a newer version with a message that says so. Values are secrets: every copy this module makes
 * is wiped when released (json-c's own copies too), and none of its messages quotes a value.
 * docs/development.md, "Modules in detail", shows both answers and how the readers parse.
 *
 * Embedded values: struct helper_headers h = {0}; ...; helper_headers_release(&h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/dpop.h"
#include "credkit/err.h"
#include "credkit/macro.h"

/* The version of each answer: what its writer puts in, and the newest its reader accepts.
 * Adding members keeps it; removing one or changing a type or a meaning raises it. The headers
 * answer is at 2 since it may carry a DPoP key ("dpop"), without which its Authorization header
 * is useless: a writer puts 2 only in an answer that has one, so that a reader of version 1
 * refuses that answer with "update it" and still reads every other. */
#define HELPER_ANSWER_VERSION         1
#define HELPER_HEADERS_VERSION        2
#define HELPER_HEADERS_VERSION_BEARER 1

/* The largest answer a reader takes, in bytes (the bridge reads helpers' output up to this). */
#define HELPER_ANSWER_MAX (64u * 1024u)

/* ---- the secrets answer ---- */

struct helper_secret {
    char *name;  /* [A-Za-z_][A-Za-z0-9_]* */
    char *value; /* secret, NUL-terminated, value_len bytes; NULL when error is set */
    size_t value_len;
    char *source; /* "command", "keychain", ...; NULL when error is set or the answer had none */
    int64_t expires_at; /* unix seconds; 0: does not expire */
    char *error;        /* why the name did not resolve (a message for people); or NULL */
};

struct helper_secrets {
    struct helper_secret *v;
    size_t n;
    size_t alloc;
};

/* Appends a resolved name: copies of name, value[0..len) (wiped on release) and source;
 * expires_at 0 when the value does not expire. 0, -EINVAL (an invalid name, a NUL in the value,
 * the name already present) or -ENOMEM; a unchanged on failure. */
int helper_secrets_add_value(struct helper_secrets *a, const char *name, const char *value,
                             size_t len, const char *source, int64_t expires_at) _must_check_;

/* Appends a name that did not resolve, with the message for people (which must not quote a
 * secret: redact it first). 0, -EINVAL or -ENOMEM; a unchanged on failure. */
int helper_secrets_add_error(struct helper_secrets *a, const char *name,
                             const char *message) _must_check_;

/* The entry for name, or NULL. Borrowed from a. */
const struct helper_secret *helper_secrets_find(const struct helper_secrets *a, const char *name);

/* Appends the answer, one line and its newline, to out (which should be secret). -E2BIG past
 * out's cap, -ENOMEM; out may then hold part of it: release it. */
int helper_secrets_write(const struct helper_secrets *a, struct buf *out) _must_check_;

/* Parses text[0..len) (at most HELPER_ANSWER_MAX bytes) into *ret, which the caller releases
 * with helper_secrets_release() on success; on failure *ret is untouched and e says why:
 * -E2BIG, -EBADMSG (not JSON, or not this shape), -EPROTONOSUPPORT (a newer version). */
int helper_secrets_parse(const char *text, size_t len, struct helper_secrets *ret,
                         struct err *e) _must_check_;

/* Wipes the values, frees everything and leaves a empty. NULL-safe. */
void helper_secrets_release(struct helper_secrets *a);

/* ---- the headers answer ---- */

struct helper_header {
    char *name;  /* an HTTP token (RFC 9110), as the helper spelled it */
    char *value; /* secret, NUL-terminated, no control characters but HTAB */
    size_t value_len;
};

struct helper_headers {
    struct helper_header *v;
    size_t n;
    size_t alloc;
    int64_t expires_at; /* unix seconds; 0: the helper did not say */
    /* "dpop": {"alg": "ES256", "jwk": {private JWK}}, the key the token is bound to: a reference
     * (released with the answer), NULL when the answer has none (docs/helper-protocol.md) */
    struct dpop_key *dpop;
};

/* Whether name is an HTTP header name (a token: letters, digits, !#$%&'*+-.^_`|~). */
bool helper_header_name_valid(const char *name, size_t len);

/* Whether value[0..len) may be sent as a header value: no CR, LF, NUL or other control
 * character (HTAB is allowed). */
bool helper_header_value_valid(const char *value, size_t len);

/* Why a header called name may never be added to a request by a configuration or a helper: it
 * frames the request (Host, Content-Length, Transfer-Encoding, Connection, Upgrade, TE ...) or
 * its MCP session (MCP-Session-Id, MCP-Protocol-Version, Last-Event-ID), which only the
 * transport sets; a second Content-Length would cut the body and smuggle the rest in as another
 * request. NULL when it may. A phrase for a message, static. */
const char *helper_header_framing(const char *name);

/* Why value[0..len) may not be sent as the value of the header called name: NULL when it may
 * (header_value_safe() of credkit/textsafe.h, and for "Authorization: Bearer TOKEN" or "DPoP
 * TOKEN" an RFC 6750 b64token, as every consumer of a bearer header expects); else a phrase for a message, static,
 * that never quotes the value: helper_header_framing()'s for such a name (whatever the value),
 * "the value is empty", "the value has a control character (CR, LF, NUL and the like are
 * refused)", "the value begins or ends with a space or a tab", "the bearer token is not an RFC
 * 6750 token (...)". */
const char *helper_header_refusal(const char *name, const char *value, size_t len);

/* Appends a header: copies of name and value[0..len) (wiped on release). -EINVAL with e naming
 * the header (never the value) when the name is not a token, the value is refused by
 * helper_header_refusal() or is not UTF-8, or a header of that name (in any case) is already
 * there; -ENOMEM. a unchanged on failure. e may be NULL. */
int helper_headers_add(struct helper_headers *a, const char *name, const char *value, size_t len,
                       struct err *e) _must_check_;

/* The value of the header called name (case-insensitive), or NULL. Borrowed from a. */
const char *helper_headers_get(const struct helper_headers *a, const char *name);

/* Appends the answer, one line and its newline, to out (which should be secret); expires_at is
 * written when a->expires_at > 0. -E2BIG past out's cap, -ENOMEM; out may then hold part of it:
 * release it. */
int helper_headers_write(const struct helper_headers *a, struct buf *out) _must_check_;

/* Parses text[0..len) (at most HELPER_ANSWER_MAX bytes) into *ret, which the caller releases
 * with helper_headers_release() on success; on failure *ret is untouched and e says why (naming
 * a bad header, never its value): -E2BIG, -EBADMSG, -EPROTONOSUPPORT (a newer version). */
int helper_headers_parse(const char *text, size_t len, struct helper_headers *ret,
                         struct err *e) _must_check_;

/* Wipes the values, frees everything and leaves a empty. NULL-safe. */
void helper_headers_release(struct helper_headers *a);
