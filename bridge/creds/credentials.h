/* credentials.h - where an upstream's credentials come from: a provider behind a small ops
 * table, asked with a reason and answering asynchronously.
 *
 * An upstream asks its provider at every connect (CONNECT the first time, RECONNECT after),
 * after a 401 in the middle of a session (UNAUTHORIZED: the answer it had was refused), and
 * ahead of expiry (EXPIRING: a loop timer at expires_at minus credentials_skew_ms()). The
 * answer carries the HTTP request headers, the values of the ${VAR}s the entry's url, env and
 * headers refer to (the upstream expands from them: never a blocking lookup on the loop), and
 * when it stops being valid. Everything in an answer is a secret: it is wiped when freed and
 * never logged.
 *
 * The default provider (credentials_entry_new()) is the entry itself: its headers and ${VAR}s
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

#define CREDENTIALS_SKEW_MAX_MS (60 * 1000)
#define CREDENTIALS_SKEW_MIN_MS 1000

struct strv; /* credkit/strv.h */

enum credentials_reason {
    CREDENTIALS_CONNECT,      /* the first connect */
    CREDENTIALS_RECONNECT,    /* every later connect */
    CREDENTIALS_UNAUTHORIZED, /* the server refused what the last answer gave (401) */
    CREDENTIALS_EXPIRING,     /* the last answer expires soon */
    CREDENTIALS_FORBIDDEN,    /* the server refused a request with 403 insufficient_scope: the
                               * grant must be widened (step-up) */
};
#define CREDENTIALS_N_REASONS 5

/* The error of an answer that says a login is required (no token, a refresh refused): a state,
 * not a failure; the message names the command that signs in. */
#define CREDENTIALS_LOGIN_REQUIRED (-ENOKEY)

const char *credentials_reason_name(enum credentials_reason reason);

/* An answer. Borrowed by done for its duration; copy what is kept (credentials_copy()). */
struct credentials {
    char **headers;     /* "Name: value", NULL-terminated; NULL: none */
    char **vars;        /* "NAME=value" for ${NAME}, NULL-terminated; NULL: none */
    int64_t expires_at; /* Unix time in milliseconds; 0: does not expire */
    int64_t refresh_at; /* when asking again can give a newer answer (ms; before expires_at);
                         * 0: expires_at minus credentials_skew_ms() */
};

/* error 0 and c; or -errno with a message for the user (never a secret value), c NULL.
 * -ENOENT and -EINVAL mean the entry cannot work as configured (a missing ${VAR}). */
typedef void (*credentials_done_fn)(int error, const struct credentials *c, const char *message,
                                    void *userdata);

struct credentials_provider;
struct credentials_request;

/* What a provider is asked. Borrowed for the ask() call only, except server (see above). */
struct credentials_query {
    const struct mcp_server *server;
    enum credentials_reason reason;
    /* UNAUTHORIZED, FORBIDDEN: the server's WWW-Authenticate challenge of the refusal (HTTP),
     * NULL when none; e.g. the scopes a step-up needs. */
    const char *challenge;
};

struct credentials_provider_ops {
    const char *name;
    /* Starts asking for q->server's credentials. 0 and *ret, or -errno (no callback then). */
    int (*ask)(struct credentials_provider *p, const struct credentials_query *q,
               credentials_done_fn done, void *userdata, struct credentials_request **ret);
    /* Gives up on a request: no callback follows. */
    void (*cancel)(struct credentials_request *r);
    /* Optional: what to do when the server refused (error -EACCES or -EPERM) even the fresh
     * answer, as a sentence ("sign in again with 'mcp-auth x'"); NULL: nothing to add. Caller
     * frees. */
    char *(*refused_hint)(struct credentials_provider *p, const struct mcp_server *srv, int error);
    void (*free)(struct credentials_provider *p);
};

/* Every provider embeds this first, and every request of a provider embeds its own. */
struct credentials_provider {
    const struct credentials_provider_ops *ops;
};
struct credentials_request {
    struct credentials_provider *provider;
};

int credentials_ask(struct credentials_provider *p, const struct credentials_query *q,
                    credentials_done_fn done, void *userdata,
                    struct credentials_request **ret) _must_check_;
/* NULL-safe. */
void credentials_cancel(struct credentials_request *r);
/* The provider's refused_hint, or NULL (also when it has none). Caller frees. */
char *credentials_refused_hint(struct credentials_provider *p, const struct mcp_server *srv,
                               int error);
/* NULL-safe. Not while a request is open. */
void credentials_provider_free(struct credentials_provider *p);

/* The [seam] hook of upstream.h: headers asked for asynchronously (force after a 401);
 * done(done_ud, 0, headers, NULL) or (done_ud, -errno, NULL, message), from the loop. */
typedef void (*credentials_headers_done_fn)(void *done_ud, int error, const char *const *headers,
                                            const char *message);
typedef int (*credentials_headers_fn)(void *userdata, const struct mcp_server *server, bool force,
                                      credentials_headers_done_fn done, void *done_ud);

struct credentials_entry_opts {
    struct loop *loop;    /* required: answers come from it */
    mcp_lookup_fn lookup; /* NULL: the environment */
    void *lookup_userdata;
    credentials_headers_fn headers_fn; /* NULL: the entry's headers, expanded */
    void *headers_userdata;
};

/* The default provider (see above). Caller frees with credentials_provider_free(). */
int credentials_entry_new(const struct credentials_entry_opts *opts,
                          struct credentials_provider **ret) _must_check_;

/* Deep copy into *dst (released first), and its release, wiping. */
int credentials_copy(struct credentials *dst, const struct credentials *src) _must_check_;
void credentials_release(struct credentials *c);
/* Whether two header vectors are the same (NULL and empty alike). */
bool credentials_headers_equal(char *const *a, char *const *b);

/* An mcp_lookup_fn over an answer's vars (userdata: const struct credentials *). */
int credentials_lookup(void *userdata, const char *name, char **ret, struct err *e);

/* Expands every "NAME<sep>template" of v into "NAME<sep>value", appended to out (secrets).
 * -ENOENT etc. with a message naming the entry ("'NAME': variable 'X' is not set"). */
int credentials_expand_pairs(char *const *v, const char *sep, mcp_lookup_fn lookup, void *userdata,
                             struct strv *out, struct err *e) _must_check_;

/* How long before expires_at to ask again, for an answer of that lifetime: the smaller of
 * CREDENTIALS_SKEW_MAX_MS and a quarter of the lifetime, at least CREDENTIALS_SKEW_MIN_MS. */
int64_t credentials_skew_ms(int64_t lifetime_ms);
/* Unix time in milliseconds (expires_at's clock). */
int64_t credentials_now_ms(void);

/* Whether a WWW-Authenticate value is a Bearer challenge with error="insufficient_scope" (a 403
 * that a wider grant would turn into a success: FORBIDDEN). */
bool credentials_insufficient_scope(const char *challenge);
/* Whether a WWW-Authenticate value holds a Bearer challenge (any parameters). */
bool credentials_bearer_challenge(const char *challenge);

/* When an entry signs in with mcp-auth: the one rule of the helpers' provider (cred_helper.h,
 * which asks mcp-auth for the header) and of `mcp-bridge list` (which shows the sign-in), so
 * that list never describes a mode the bridge does not use. */
enum credentials_oauth_use {
    CREDENTIALS_OAUTH_NEVER,     /* stdio; "auth": "bearer", "none" or false; or no "auth" while
                                  * Authorization comes from elsewhere (the entry's "headers", a
                                  * headersHelper): mcp-auth's header would replace it */
    CREDENTIALS_OAUTH_ALWAYS,    /* "auth": "oauth", or an "oauth" object */
    CREDENTIALS_OAUTH_CHALLENGE, /* no "auth": once the server answered a 401 or a 403 with a
                                  * Bearer challenge, and from then on */
};

/* The entry's use of mcp-auth (its transport, url, "auth", "headers", "headersHelper"; neither
 * autoAuth nor allowHttp changes it: they say how a sign-in happens and where it may go). */
enum credentials_oauth_use credentials_oauth_use(const struct mcp_server *s);
/* Whether mcp-auth's header goes on s's requests now: ALWAYS, or CHALLENGE once challenged
 * (the server answered with a Bearer challenge, credentials_bearer_challenge()). */
bool credentials_oauth_applies(const struct mcp_server *s, bool challenged);
