/* cred_helper.h - the credentials provider that asks the suite's helpers (cred.h):
 * `secrets` for ${NAME}s, `mcp-auth` for OAuth, and an entry's own headersHelper.
 *
 * What an entry needs decides what is asked (docs/helper-protocol.md, "How the bridge asks"):
 * `secrets resolve --json` for its ${NAME}s, `mcp-auth header --json` for OAuth (exit status 4
 * is "login required", -ENOKEY, a state of its own), its headersHelper command. The three run
 * side by side, each a helper process on the loop (cred_proc.h), bounded in time and output,
 * one run at a time per kind. Answers are kept in memory only, until they expire, and wiped
 * when replaced. The reason an upstream asks (cred.h) decides what is asked again; a 403
 * insufficient_scope is a step-up. With autoAuth the provider runs `mcp-auth login` itself,
 * bounded in time and in count. docs/development.md, "Modules in detail", has what is asked
 * for what, when it is asked again, the step-up and autoAuth in full. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "creds/cred.h"
#include "core/loop.h"

#define CRED_HELPER_LOGIN_TIMEOUT_DEFAULT_MS (120 * 1000)
#define CRED_HELPER_LOGINS_MAX               3
#define CRED_HELPER_LOGINS_WINDOW_MS         (10 * 60 * 1000)

struct cred_helper_opts {
    struct loop *loop; /* required */
    struct log *log;   /* required */
    /* What mcp-auth is told: --config PATH when the bridge was given one (NULL: none), and the
     * server (NULL: the entry's name; a URL for an entry given on the command line). Copied. */
    const char *config_path;
    const char *auth_target;
    bool auto_auth;                    /* the entry's "autoAuth", else settings.autoAuth */
    const char *auth_required_message; /* settings.authRequiredMessage (${server}); NULL:
                                        * "sign-in required: run 'mcp-auth NAME'" (messages
                                        * put "server 'NAME': " before it). Copied. */
    int64_t helper_timeout_ms;         /* 0: CRED_PROC_TIMEOUT_DEFAULT_MS */
    int64_t login_timeout_ms;          /* 0: CRED_HELPER_LOGIN_TIMEOUT_DEFAULT_MS */
};

/* A new provider for one upstream. Caller frees with cred_provider_free() (or hands it to
 * upstream_opts.credentials). -EINVAL, -ENOMEM. */
int cred_helper_new(const struct cred_helper_opts *opts, struct cred_provider **ret) _must_check_;

/* The message of "login required" for server name, as the provider words it (authRequiredMessage
 * with ${server} replaced, or the default). Caller frees. NULL on -ENOMEM. */
char *cred_helper_login_message(const struct cred_helper_opts *opts, const char *name);
