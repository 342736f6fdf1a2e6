/* cred.h - where an upstream's credentials come from: a provider behind a small ops
 * table, asked with a reason and answering asynchronously.
 *
 * An upstream asks its provider at every connect (CONNECT the first time, RECONNECT after),
 * after a 401 in the middle of a session (UNAUTHORIZED: the answer it had was refused), and
 * ahead of expiry (EXPIRING: a loop timer at expires_at minus cred_skew_ms()). The
 * answer carries the HTTP request headers, the values of the ${VAR}s the entry's url, env and
 * headers refer to (the upstream expands from them: never a blocking lookup on the loop), and
 * when it stops being valid. Everything in an answer is a secret: it is wiped when freed and
 * never logged.
 *
 * The default provider (cred_entry_new()) is the entry itself: its headers and ${VAR}s
 * expanded through a lookup (the environment unless told otherwise), or its headers from an
 * asynchronous hook (upstream_opts.headers_fn); it never expires. Helpers that ask `secrets`
 * and `mcp-auth` are providers of their own, beside it.
 *
 * Contract for every provider: done is called exactly once, from the loop, never from inside
 * ask(); a request can be cancelled until done is called (then no callback follows); the
 * request belongs to the provider and is gone once done has returned or after cancel. The
 * server entry given to ask() stays valid until then. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "core/loop.h"

#define CRED_SKEW_MAX_MS (60 * 1000)
#define CRED_SKEW_MIN_MS 1000

struct strv;     /* credkit/strv.h */
struct dpop_key; /* credkit/dpop.h */

enum cred_reason {
    CRED_REASON_CONNECT,      /* the first connect */
    CRED_REASON_RECONNECT,    /* every later connect */
    CRED_REASON_UNAUTHORIZED, /* the server refused what the last answer gave (401) */
    CRED_REASON_EXPIRING,     /* the last answer expires soon */
    CRED_REASON_FORBIDDEN,    /* the server refused a request with 403 insufficient_scope: the
                               * grant must be widened (step-up) */
};
#define CRED_REASON_N_REASONS 5

/* The error of an answer that says a login is required (no token, a refresh refused): a state,
 * not a failure; the message names the command that signs in. */
#define CRED_LOGIN_REQUIRED (-ENOKEY)

const char *cred_reason_name(enum cred_reason reason);

/* An answer. Borrowed by done for its duration; copy what is kept (cred_copy()). */
struct credentials {
    char **headers;     /* "Name: value", NULL-terminated; NULL: none */
    char **vars;        /* "NAME=value" for ${NAME}, NULL-terminated; NULL: none */
    int64_t expires_at; /* Unix time in milliseconds; 0: does not expire */
    int64_t refresh_at; /* when asking again can give a newer answer (ms; before expires_at);
                         * 0: expires_at minus cred_skew_ms() */
    /* the key that headers' "Authorization: DPoP" token is bound to: each request needs a
     * fresh proof of it (cred_dpop.h). A reference (cred_copy() takes one); NULL: none */
    struct dpop_key *dpop;
};

/* error 0 and c; or -errno with a message for the user (never a secret value), c NULL.
 * -ENOENT and -EINVAL mean the entry cannot work as configured (a missing ${VAR}). */
typedef void (*cred_done_fn)(int error, const struct credentials *c, const char *message,
                             void *userdata);

struct cred_provider;
struct cred_request;

/* What a provider is asked. Borrowed for the ask() call only, except server (see above). */
struct cred_query {
    const struct mcp_server *server;
    enum cred_reason reason;
    /* UNAUTHORIZED, FORBIDDEN: the server's WWW-Authenticate challenge of the refusal (HTTP),
     * NULL when none; e.g. the scopes a step-up needs. */
    const char *challenge;
};

struct cred_provider_ops {
    const char *name;
    /* Starts asking for q->server's credentials. 0 and *ret, or -errno (no callback then). */
    int (*ask)(struct cred_provider *p, const struct cred_query *q, cred_done_fn done,
               void *userdata, struct cred_request **ret);
    /* Gives up on a request: no callback follows. */
    void (*cancel)(struct cred_request *r);
    /* Optional: what to do when the server refused (error -EACCES or -EPERM) even the fresh
     * answer, as a sentence ("sign in again with 'mcp-auth x'"); NULL: nothing to add. Caller
     * frees. */
    char *(*refused_hint)(struct cred_provider *p, const struct mcp_server *srv, int error);
    void (*free)(struct cred_provider *p);
};

/* Every provider embeds this first, and every request of a provider embeds its own. */
struct cred_provider {
    const struct cred_provider_ops *ops;
};
struct cred_request {
    struct cred_provider *provider;
};

int cred_ask(struct cred_provider *p, const struct cred_query *q, cred_done_fn done, void *userdata,
             struct cred_request **ret) _must_check_;
/* NULL-safe. */
void cred_cancel(struct cred_request *r);
/* The provider's refused_hint, or NULL (also when it has none). Caller frees. */
char *cred_refused_hint(struct cred_provider *p, const struct mcp_server *srv, int error);
/* NULL-safe. Not while a request is open. */
void cred_provider_free(struct cred_provider *p);

/* The [seam] hook of upstream.h: headers asked for asynchronously (force after a 401);
 * done(done_ud, 0, headers, NULL) or (done_ud, -errno, NULL, message), from the loop. */
typedef void (*cred_headers_done_fn)(void *done_ud, int error, const char *const *headers,
                                     const char *message);
typedef int (*cred_headers_fn)(void *userdata, const struct mcp_server *server, bool force,
                               cred_headers_done_fn done, void *done_ud);

struct cred_entry_opts {
    struct loop *loop;    /* required: answers come from it */
    mcp_lookup_fn lookup; /* NULL: the environment */
    void *lookup_userdata;
    cred_headers_fn headers_fn; /* NULL: the entry's headers, expanded */
    void *headers_userdata;
};

/* The default provider (see above). Caller frees with cred_provider_free(). */
int cred_entry_new(const struct cred_entry_opts *opts, struct cred_provider **ret) _must_check_;

/* Deep copy into *dst (released first), and its release, wiping. */
int cred_copy(struct credentials *dst, const struct credentials *src) _must_check_;
void cred_release(struct credentials *c);
/* Whether two header vectors are the same (NULL and empty alike). */
bool cred_headers_equal(char *const *a, char *const *b);

/* An mcp_lookup_fn over an answer's vars (userdata: const struct credentials *). */
int cred_lookup(void *userdata, const char *name, char **ret, struct err *e);

/* Expands every "NAME<sep>value" of v into "NAME<sep>value", appended to out (secrets): the
 * value a template or a "!command" (mcp_value_expand(): its output as the lookup has it).
 * -ENOENT etc. with a message naming the entry ("'NAME': variable 'X' is not set"). */
int cred_expand_pairs(char *const *v, const char *sep, mcp_lookup_fn lookup, void *userdata,
                      struct strv *out, struct err *e) _must_check_;

/* How long before expires_at to ask again, for an answer of that lifetime: the smaller of
 * CRED_SKEW_MAX_MS and a quarter of the lifetime, at least CRED_SKEW_MIN_MS. */
int64_t cred_skew_ms(int64_t lifetime_ms);
/* Unix time in milliseconds (expires_at's clock). */
int64_t cred_now_ms(void);

/* Whether a WWW-Authenticate value is a Bearer (or DPoP) challenge with
 * error="insufficient_scope" (a 403 that a wider grant would turn into a success: FORBIDDEN). */
bool cred_insufficient_scope(const char *challenge);
/* Whether a WWW-Authenticate value holds a Bearer or a DPoP challenge (any parameters). */
bool cred_bearer_challenge(const char *challenge);

/* When an entry signs in with mcp-auth: the one rule of the helpers' provider (cred_helper.h,
 * which asks mcp-auth for the header) and of `mcp-bridge list` (which shows the sign-in), so
 * that list never describes a mode the bridge does not use. */
enum cred_oauth_use {
    CRED_OAUTH_NEVER,     /* stdio; "auth": "bearer", "none" or false; or no "auth" while
                                  * Authorization comes from elsewhere (the entry's "headers", a
                                  * headersHelper): mcp-auth's header would replace it */
    CRED_OAUTH_ALWAYS,    /* "auth": "oauth", or an "oauth" object */
    CRED_OAUTH_CHALLENGE, /* no "auth": once the server answered a 401 or a 403 with a
                                  * Bearer challenge, and from then on */
};

/* The entry's use of mcp-auth (its transport, url, "auth", "headers", "headersHelper"; neither
 * autoAuth nor allowHttp changes it: they say how a sign-in happens and where it may go). */
enum cred_oauth_use cred_oauth_use(const struct mcp_server *s);
/* Whether mcp-auth's header goes on s's requests now: ALWAYS, or CHALLENGE once challenged
 * (the server answered with a Bearer challenge, cred_bearer_challenge()). */
bool cred_oauth_applies(const struct mcp_server *s, bool challenged);
/* The account name the entry signs in as ("oauth": {"account": NAME}), told to mcp-auth as
 * --account NAME and matched against status's "label"; NULL: the default account. Borrowed
 * from s. */
const char *cred_oauth_account(const struct mcp_server *s);
