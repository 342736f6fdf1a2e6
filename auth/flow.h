/* flow.h - what mcp-auth does: sign in, hand out a fresh header, sign out.
 *
 * The target is a server URL (canonical), with the "oauth" settings of its mcp.json entry
 * when it was named by its entry. Progress is reported through a callback so that the CLI
 * decides what to print; the authorization URL is always reported (AUTH_SAY_ALWAYS), even in
 * quiet mode, because a user may have to open it by hand. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"

#include "tokens.h"

/* Returned when no valid token can be had without a person: the caller exits with the
 * "login required" status and prints the command to run. */
#define AUTH_LOGIN_REQUIRED (-ENOKEY)

enum auth_say_level {
    AUTH_SAY_INFO,   /* progress: "discovering...", shown unless quiet */
    AUTH_SAY_ALWAYS, /* the authorization URL, device codes: shown even when quiet */
};

struct auth_target {
    const char *name;              /* mcp.json entry name, or NULL when given as a URL */
    const char *server_url;        /* canonical */
    const struct mcp_oauth *oauth; /* the entry's settings, or NULL */
};

struct auth_ui {
    void (*say)(void *userdata, enum auth_say_level level, const char *fmt, ...) _printf_(3, 4);
    /* called about once a second while waiting for the browser; may be NULL */
    void (*countdown)(void *userdata, int64_t remaining_ms);
    void *userdata;
};

struct login_opts {
    const char *scope;       /* --scope: widen the grant to these (union with what we have) */
    bool no_browser;         /* print the URL and wait */
    bool device_code;        /* RFC 8628 instead of the browser */
    int64_t timeout_ms;      /* for the browser / device authorization: 0 means 5 minutes */
    int64_t http_timeout_ms; /* each request: 0 means 30 s */
};

/* The whole sign-in. On success *ret holds the saved entry (caller frees). */
int auth_login(const struct auth_target *t, const struct login_opts *o, const struct auth_ui *ui,
               struct token_entry **ret, struct err *e) _must_check_;

/* A valid access token for the target, refreshing it first (under the entry's lock) when it
 * is expired or about to, or when force is set (the resource server refused the token before
 * its time: a 401). Never prompts and never opens a browser: AUTH_LOGIN_REQUIRED when no valid
 * token can be had, with the command to run in the message. client_credentials and
 * jwt-bearer targets get a new token without a person. Caller frees *ret. */
int auth_fresh_token(const struct auth_target *t, int64_t http_timeout_ms, bool force,
                     struct token_entry **ret, struct err *e) _must_check_;

/* Deletes the local tokens and registration for the target and revokes the tokens where the
 * authorization server has a revocation endpoint. *ret_revoked tells whether it did; when a
 * revocation failed, *ret_warning says why (the local tokens are deleted all the same).
 * -ENOENT when there was nothing to delete. */
int auth_logout(const struct auth_target *t, int64_t http_timeout_ms, bool *ret_revoked,
                struct err *ret_warning, struct err *e) _must_check_;

/* When a token expiring at expires_at (issued at issued_at) must be refreshed: the smaller of
 * 60 s and a quarter of its lifetime before expiry, at least 1 s. */
int64_t auth_refresh_margin(int64_t issued_at, int64_t expires_at);
