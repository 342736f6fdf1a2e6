/* cred_sign.h - an entry's "requestHeadersCommand" (the pi adapter's key): a command run for
 * every HTTP request just before it goes out, whose answer gives headers for that one request
 * (a signature over its method, URL and body, say).
 *
 * The entry's value is {"command": "...", "args": [...], "env": {...}, "timeoutMs": N}: the
 * command is run directly, never through a shell (looked up on PATH), with the bridge's
 * environment plus "env"; ${VAR}s in command, args and env values come from the environment.
 * It gets one line of JSON on its standard input, {"version": 1, "method": "POST", "url":
 * "https://...", "bodyBase64": "..."} (the exact URL and body of the request), and answers a
 * JSON object of header names and string values on its standard output, exit status 0. A run is
 * a helper process on the loop (cred_proc.h): bounded by timeoutMs (default 10 s, at most 60 s)
 * and by HELPER_ANSWER_MAX bytes of answer, in its own process group. Its headers are checked as
 * every header answer is (helper_headers_add(): a valid name, a safe value, no name twice), and
 * those that frame the request or its session are refused (helper_header_framing()); any
 * failure fails that request, which is not sent. Failures are logged as warnings naming the
 * server; the header values are secrets, never logged.
 *
 * The same seam proves each request of a DPoP-bound token (cred_dpop.h): once the upstream gave
 * the transport mcp-auth's key (cred_sign_set_dpop()), every request gets a "DPoP" header with a
 * fresh proof, after the command's headers when there is a command, else by itself (a run that
 * starts no process; its done still comes from the loop). */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "core/loop.h"
#include "creds/cred_dpop.h"

#define CRED_SIGN_TIMEOUT_DEFAULT_MS (10 * 1000)
#define CRED_SIGN_TIMEOUT_MAX_MS     (60 * 1000)

struct cred_sign;
struct cred_sign_run;

/* A run is over: error 0 and headers ("Name: value", NULL-terminated, secrets, borrowed for the
 * call), or -errno (already logged) and headers NULL. */
typedef void (*cred_sign_done_fn)(int error, const char *const *headers, void *userdata);

/* Checks the entry's "requestHeadersCommand" (raw: the entry, borrowed) without expanding
 * anything: 0 when it is absent or well formed, -EINVAL with the reason in e, -ENOMEM. */
int cred_sign_check(struct json_object *raw, struct err *e) _must_check_;

/* The command of the entry raw (borrowed) of server name, its ${VAR}s expanded from the
 * environment, ready to run on l, logging to log (both must outlive it). *ret is NULL when the
 * entry has no "requestHeadersCommand". -EINVAL with the reason in e, -ENOENT for an unset
 * ${VAR}, -ENOMEM. Caller frees with cred_sign_free(). */
int cred_sign_new(struct loop *l, struct log *log, const char *name, struct json_object *raw,
                  struct cred_sign **ret, struct err *e) _must_check_;

/* A cred_sign without a command, for the proofs of DPoP only (cred_sign_set_dpop()); name is the
 * server's. Caller frees with cred_sign_free(). */
int cred_sign_new_bare(struct loop *l, struct log *log, const char *name,
                       struct cred_sign **ret) _must_check_;

/* The connection's DPoP key (a new reference; NULL: no DPoP) and the headers whose
 * "Authorization: DPoP <token>" it proves, as cred_dpop_set(); for the requests started after.
 * -ENOMEM. */
int cred_sign_set_dpop(struct cred_sign *s, struct dpop_key *key,
                       const char *const *headers) _must_check_;

/* A DPoP-Nonce the server sent (any answer): used by the next proofs. Returns whether it is a
 * new one (a request refused with use_dpop_nonce is then worth sending again). */
bool cred_sign_dpop_nonce(struct cred_sign *s, const char *nonce, size_t len);

/* Whether a request must go through cred_sign_start(): there is a command, or a DPoP key.
 * NULL-safe (false). */
bool cred_sign_wanted(const struct cred_sign *s);

/* Whether cred_sign_start() reads the request's body (a command, which is given it; a DPoP
 * proof alone never is). NULL-safe (false). */
bool cred_sign_reads_body(const struct cred_sign *s);

/* Frees s; its runs still going go on without it (cancel them, or let them finish). NULL-safe. */
void cred_sign_free(struct cred_sign *s);

/* Runs the command for one request: method ("POST", "GET", "DELETE"), url, and its body
 * body[0..len) (NULL, 0 for none). done is called once, from the loop, unless the run is
 * cancelled first. -errno with e saying why when it cannot start (done is not called then). */
int cred_sign_start(struct cred_sign *s, const char *method, const char *url, const char *body,
                    size_t len, cred_sign_done_fn done, void *userdata, struct cred_sign_run **ret,
                    struct err *e) _must_check_;

/* Stops the run (its process group killed): no callback follows. Not from inside its done.
 * NULL-safe. */
void cred_sign_cancel(struct cred_sign_run *run);
