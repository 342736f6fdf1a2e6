/* flow.h - what mcp-auth does: sign in (here), hand out a fresh token (refresh.h), sign out
 * (logout.h).
 *
 * The target is a server URL (canonical), with the "oauth" settings of its mcp.json entry
 * when it was named by its entry (oauth_config.h). Progress is reported through a callback so
 * that the CLI decides what to print; the authorization URL is always reported
 * (AUTH_SAY_ALWAYS), even in quiet mode, because a user may have to open it by hand.
 *
 * A sign-in does here what every grant shares - discovery, the entry loaded under its lock,
 * the cap on sign-ins, the scope to ask for, writing the result - and hands the getting of the
 * tokens to the grant the settings name (grant.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "oauth_config.h"
#include "tokens.h"

/* Returned when no valid token can be had without a person: the caller exits with the
 * "login required" status and prints the command to run. */
#define AUTH_LOGIN_REQUIRED (-ENOKEY)

/* Returned when the server publishes no OAuth metadata at all (discovery.h's no_oauth): it
 * wants a token of its own, which no sign-in gives; the message names how to configure one. */
#define AUTH_WANTS_TOKEN (-EPROTONOSUPPORT)

/* Each HTTP request, when the caller gives 0. */
#define AUTH_HTTP_TIMEOUT_DEFAULT_MS (30 * 1000)

enum auth_say_level {
    AUTH_SAY_INFO,   /* progress: "discovering...", shown unless quiet */
    AUTH_SAY_ALWAYS, /* the authorization URL, device codes: shown even when quiet */
};

struct auth_target {
    const char *name;                 /* mcp.json entry name, or NULL when given as a URL */
    const char *server_url;           /* canonical */
    const struct oauth_config *oauth; /* the entry's settings; never NULL (empty without one) */
    const char *label;                /* the account name (tokens.h); NULL: the default one */
};

struct auth_ui {
    void (*say)(void *userdata, enum auth_say_level level, const char *fmt, ...) _printf_(3, 4);
    /* called about once a second while waiting for the browser; may be NULL */
    void (*countdown)(void *userdata, int64_t remaining_ms);
    void *userdata;
};

struct login_opts {
    const char *scope;        /* --scope: widen the grant to these (union with what we have) */
    bool no_browser;          /* print the URL and wait */
    bool paste;               /* also take the final address pasted on standard input */
    bool device_code;         /* RFC 8628 instead of the browser */
    int64_t timeout_ms;       /* for the browser / device authorization: 0 means 5 minutes */
    int64_t http_timeout_ms;  /* each request: 0 means 30 s */
    const char *callback_url; /* --callback-url: the redirect URI in front of the listener */
    uint16_t callback_port;   /* --callback-port: the listener's port; 0: the settings' */
};

/* The whole sign-in. On success *ret holds the saved entry (caller frees). */
int auth_login(const struct auth_target *t, const struct login_opts *o, const struct auth_ui *ui,
               struct token_entry **ret, struct err *e) _must_check_;

/* AUTH_WANTS_TOKEN, with the message naming the fix, when t's server wants a token of its own
 * rather than a sign-in (discovery_wants_token()); 0 when it takes a sign-in, and when that
 * cannot be told (discovery failed: then nothing is said, and e is left as it was). Settings
 * that name a client (oauth.clientId) mean OAuth: 0, a server without metadata then has the
 * 2025-03-26 default endpoints. Each request is bounded by http_timeout_ms. */
int auth_check_wants_token(const struct auth_target *t, int64_t http_timeout_ms,
                           struct err *e) _must_check_;

/* Reports through ui (NULL, or one without say, is silent). */
void auth_ui_say(const struct auth_ui *ui, enum auth_say_level level, const char *fmt, ...)
    _printf_(3, 4);
