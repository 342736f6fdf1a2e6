/* cred_helper_int.h - what the two files of the helpers' provider share (cred_helper.h):
 * cred_helper.c (the slots, the requests, secrets and headersHelper) and cred_oauth.c
 * (mcp-auth: the header, a sign-in by autoAuth, a step-up, the storm brake, the messages). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/list.h"
#include "credkit/strv.h"

#include "creds/cred_helper.h"
#include "creds/cred_proc.h"

#define MSG_MAX 480

enum slot_kind {
    SLOT_SECRETS, /* secrets resolve --json NAME... */
    SLOT_OAUTH,   /* mcp-auth header --json NAME (and login, status) */
    SLOT_HELPER,  /* the entry's headersHelper */
    SLOT_N
};

/* What the OAuth slot's run is doing. */
enum oauth_step {
    OAUTH_HEADER, /* mcp-auth header */
    OAUTH_STATUS, /* mcp-auth status --json: the scopes granted, for a step-up */
    OAUTH_LOGIN,  /* mcp-auth login (autoAuth) */
};

struct cred_helper;

struct slot {
    enum slot_kind kind;
    struct cred_helper *h;
    struct cred_proc *proc; /* the run, NULL when none */
    enum oauth_step step;
    bool refresh;          /* this run asks mcp-auth to refresh */
    bool step_up;          /* this run widens the grant (FORBIDDEN) */
    bool again;            /* a step-up was asked for while this run went on: one follows it */
    bool again_step_up;    /* ... and it widens the grant */
    bool have;             /* an answer is kept */
    bool stale;            /* ... that was stale as it came: used once, never fresh */
    struct strv vals;      /* secrets: "NAME=value"; headers: "Name: value" (secrets) */
    struct dpop_key *dpop; /* headers: the key of the answer's DPoP token (a reference); NULL */
    int64_t expires_at;    /* ms; 0: the answer did not say */
    int64_t got_at;        /* ms, when it came */
    char *challenged;      /* step-up: the scopes the server asked for */
    char *scopes;          /* step-up: granted and challenged, as asked for */
    const struct mcp_server *srv; /* of the run's request (valid while a request waits) */
};

struct cred_helper {
    struct cred_provider p; /* first */
    struct loop *loop;
    struct log *log;
    char *config_path, *auth_target, *auth_message;
    bool auto_auth;
    int64_t helper_timeout_ms, login_timeout_ms;
    bool oauth_found; /* a 401 with a Bearer challenge made OAuth apply to this entry */
    struct slot slots[SLOT_N];
    struct list_node reqs;
    int64_t logins[CRED_HELPER_LOGINS_MAX]; /* when the last logins started (ms, a ring) */
    unsigned n_logins;
};

/* cred_helper.c */
/* "secrets", "mcp-auth", "headersHelper". Static. */
const char *cred_helper_slot_program(enum slot_kind k);
/* The slot's run is over: every request waiting on it goes on (or, when a request came that
 * the run could not answer, one more run starts). error 0, or -errno with the message. */
void cred_helper_slot_settled(struct slot *s, int error, const char *message);
/* "<program> failed (exit status 3): <first line of stderr>" into buf. */
void cred_helper_run_failure(const struct slot *s, const struct cred_proc_result *res, char *buf,
                             size_t size);
/* Keeps a headers answer in the slot; -errno with msg saying why it is not usable. */
int cred_helper_headers_answer(struct slot *s, const struct cred_proc_result *res, char *msg,
                               size_t size);
/* Starts the slot's helper process. */
int cred_helper_start(struct slot *s, const struct cred_proc_spec *spec, struct err *e);

/* cred_oauth.c */
/* "mcp-auth [--config "PATH"] NAME" into buf. */
void cred_helper_signin_command(const struct cred_helper *h, const char *name, char *buf,
                                size_t size);
/* The scopes of a 403 insufficient_scope challenge (a copy), NULL when it names none. */
char *cred_helper_challenged_scopes(const char *challenge);
/* Starts mcp-auth's step (with scope for a login that widens the grant). */
int cred_helper_oauth_run(struct slot *s, enum oauth_step step, const char *scope, struct err *e);
/* A run of mcp-auth is over: the next step, or the slot settled. */
void cred_helper_oauth_done(struct slot *s, const struct cred_proc_result *res);
