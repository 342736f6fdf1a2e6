/* cmd_creds.h - what the commands say about the credentials an entry needs, without a value.
 *
 * `mcp-bridge list` shows per server what its credentials need and whether they are there;
 * `mcp-bridge add` says the same of the entry it wrote. Both ask the helpers as the bridge will
 * when it connects, but only for a state, never to use a value:
 *   - every ${NAME} of url, headers, env, args and bearerToken, and the name of bearerTokenEnv:
 *     one `secrets resolve --json NAME...` for all the names of all the entries, whose values
 *     are wiped as soon as the answer is read (only resolved or not, the source and the expiry
 *     are kept);
 *   - OAuth entries: one `mcp-auth [--config PATH] status --json` for all of them (it lists
 *     every stored sign-in, never a token), matched to an entry by its canonical URL, as
 *     mcp-auth itself does; `header` is not run, as it may refresh;
 *   - "headersHelper": the program it names and whether it is there; it is NOT run (it may have
 *     side effects).
 * A helper that is not installed or fails is a state of the servers that need it, never a
 * failure of the whole report. The helpers are found with cred_path.h and run synchronously
 * (child_run(), CREDS_HELPER_TIMEOUT_MS each): these are one-shot commands, not the loop.
 *
 * Build a report with cmd_creds_report_new(), read the view of each entry with cmd_creds_report_at(),
 * free it with cmd_creds_report_free(). The describe functions write the words `list` prints. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"
#include "credkit/strv.h"

struct json_object; /* json-c */

#define CREDS_HELPER_TIMEOUT_MS (10 * 1000)

/* One ${NAME}: whether `secrets` resolves it now. */
struct cmd_creds_var {
    char *name;
    bool resolved;
    char *source;       /* resolved: secrets' word ("command", "keychain", "environment"...) */
    int64_t expires_at; /* resolved: Unix seconds; 0: does not expire */
    char *error;        /* not resolved: why, for people (never a value) */
};

enum cmd_creds_oauth_state {
    CREDS_OAUTH_NOT_USED,       /* not an OAuth entry, and nothing stored for it */
    CREDS_OAUTH_SIGNED_IN,      /* an access token that has not expired (or says no expiry) */
    CREDS_OAUTH_EXPIRED,        /* the access token expired or is gone, a refresh token is there */
    CREDS_OAUTH_LOGIN_REQUIRED, /* nothing stored, or nothing to refresh with */
    CREDS_OAUTH_UNKNOWN,        /* mcp-auth could not be asked: error says why */
};

struct cmd_creds_oauth {
    enum cmd_creds_oauth_state state;
    int64_t expires_at; /* SIGNED_IN: Unix seconds; 0: unknown */
    bool refresh_token;
    bool auto_auth; /* the entry's autoAuth (or settings.autoAuth): the bridge signs in itself */
    char *command;  /* LOGIN_REQUIRED: the command that signs in ("mcp-auth linear") */
    char *error;    /* UNKNOWN: why */
};

/* The "headersHelper" of an entry, looked at but not run. */
struct cmd_creds_helper {
    char *program; /* its first word, unquoted; for a shell command ("!..."): "/bin/sh" */
    bool shell;    /* a shell command: what it runs is not checked */
    char *path;    /* where the program is; NULL when not found */
};

/* What one entry's credentials need, and their state. Borrowed from the report. */
struct cmd_creds_server {
    const struct mcp_server *server;
    bool checked; /* false for an invalid entry: nothing was asked */
    struct cmd_creds_var *vars;
    size_t n_vars;
    struct cmd_creds_oauth oauth;
    struct cmd_creds_helper *helper; /* NULL: no headersHelper */
};

/* The word of list's STATUS column for a valid entry: "ok", "missing" (a ${NAME} that does not
 * resolve, a helper that is not there, mcp-auth that could not be asked) or "login" (OAuth
 * needs a sign-in). Static. */
const char *cmd_creds_server_status(const struct cmd_creds_server *cs);
/* Whether some ${NAME} of the entry does not resolve. */
bool cmd_creds_server_missing_vars(const struct cmd_creds_server *cs);

struct cmd_creds_report;

/* Asks the helpers about every valid entry of c (borrowed: it must outlive the report);
 * config_path is the bridge's --config (passed on to mcp-auth), or NULL. Helpers that fail
 * become states of the servers that need them. -ENOMEM only. Caller frees with
 * cmd_creds_report_free(). */
int cmd_creds_report_new(const struct mcp_config *c, const char *config_path,
                         struct cmd_creds_report **ret) _must_check_;
/* The view of the i-th entry of the configuration. Borrowed. */
const struct cmd_creds_server *cmd_creds_report_at(const struct cmd_creds_report *r, size_t i);
void cmd_creds_report_free(struct cmd_creds_report *r);

/* ---- the pieces, for add and the tests ---- */

/* Appends the names an entry's credentials refer to, each once, in order: the ${NAME}s of url,
 * headers, env, args and bearerToken, then bearerTokenEnv. -ENOMEM. */
int cmd_creds_names_of(const struct mcp_server *s, struct strv *out) _must_check_;

/* Asks `secrets resolve --json` about names[0..n) and fills vars[0..n) (zeroed by the caller;
 * released with cmd_creds_vars_release()): one run, or runs for halves of the names when the answer
 * is larger than HELPER_ANSWER_MAX (long values). A secrets that cannot be found, run or read
 * makes every name it was asked for unresolved, with the reason. -ENOMEM only. */
int cmd_creds_vars_resolve(const char *const *names, size_t n,
                           struct cmd_creds_var *vars) _must_check_;
void cmd_creds_vars_release(struct cmd_creds_var *vars, size_t n);

/* The state of the sign-in for the canonical URL url as the account (the entry's
 * "oauth.account"; NULL: the default account), from the parsed answer of `mcp-auth status
 * --json` (status NULL: nothing stored), at Unix time now. oauth_entry: the entry signs
 * in with OAuth (else a missing sign-in is NOT_USED). command: what signs in, copied into
 * ret->command for LOGIN_REQUIRED. *ret is the caller's to release (cmd_creds_oauth_release()).
 * -ENOMEM. */
int cmd_creds_oauth_from_status(struct json_object *status, const char *url, const char *account,
                                bool oauth_entry, const char *command, int64_t now,
                                struct cmd_creds_oauth *ret) _must_check_;
void cmd_creds_oauth_release(struct cmd_creds_oauth *o);

/* The program a headersHelper command line runs: its first word, split as the bridge splits it
 * (helper_cmdline_split()), or "/bin/sh" for a command starting with '!'. Caller frees *ret.
 * -EINVAL for an empty command or an unclosed quote, -ENOMEM. */
int cmd_creds_helper_program(const char *cmdline, char **ret, bool *ret_shell) _must_check_;

/* Where a headersHelper's program is run from: prog itself when it names a path, else the first
 * on PATH (as execvp looks for it); an executable regular file either way. Caller frees; NULL
 * when not found (or out of memory). */
char *cmd_creds_program_path(const char *prog);

/* The command that signs in to NAME, as a person types it and as the bridge's messages write it:
 * "mcp-auth NAME", with --config "PATH" when given (NAME quoted for a shell where needed).
 * Caller frees *ret. -ENOMEM. */
int cmd_creds_login_command(const char *name, const char *config_path, char **ret) _must_check_;

/* Appends s quoted for a POSIX shell when it needs quoting. -E2BIG, -ENOMEM. */
int cmd_creds_shell_quote(struct buf *b, const char *s) _must_check_;

/* The words list prints after "${NAME}: ", "oauth: " and "headersHelper: ", appended to out
 * (now: Unix seconds, for "expires in"). -E2BIG, -ENOMEM. */
int cmd_creds_describe_var(const struct cmd_creds_var *v, int64_t now,
                           struct buf *out) _must_check_;
int cmd_creds_describe_oauth(const struct cmd_creds_oauth *o, int64_t now,
                             struct buf *out) _must_check_;
int cmd_creds_describe_helper(const struct cmd_creds_helper *h, struct buf *out) _must_check_;
