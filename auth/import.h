/* import.h - sign-ins obtained elsewhere, into the token store: a token handed over on standard
 * input (`mcp-auth login --with-token`) and the sign-ins mcp-remote keeps (`mcp-auth import
 * mcp-remote`).
 *
 * Both end in import_store(): the server's authorization server is discovered (the store keys
 * every entry by it, and a refresh needs its token endpoint), the entry is taken under its lock
 * as a sign-in takes it, and the tokens, with the client that obtained them (their refresh needs
 * it), are written through store.h. A sign-in already stored that is newer than the one
 * imported is kept unless forced. Reading mcp-remote's files is here too: where its directory
 * is, how it names a server's files (the md5 of the URL as mcp-remote was given it), what its
 * JSON holds. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/strv.h"

#include "flow.h"

/* The longest input of --with-token, and of one file of mcp-remote's */
#define IMPORT_INPUT_MAX (256 * 1024)

/* A sign-in from elsewhere. Strings NULL when absent. */
struct import_signin {
    char *access_token;  /* secret */
    char *token_type;    /* NULL: Bearer */
    char *refresh_token; /* secret */
    char *scope;
    int64_t expires_at;  /* unix seconds; 0: unknown */
    int64_t obtained_at; /* unix seconds, when it was obtained; 0: now */
    char *issuer;        /* the authorization server that issued it, when the source says */
    /* the client that obtained the tokens; client_id NULL: none known */
    char *client_id;
    char *client_secret; /* secret */
    char *auth_method;
    char *redirect_uri;
};

/* Wipes the secrets and frees the members. NULL is fine. */
void import_signin_release(struct import_signin *s);

/* What --with-token reads, text[0..len): the access token on one line, or a JSON token response
 * when it starts with '{' (access_token required; token_type, refresh_token, expires_in, scope).
 * The token must be one that can be sent as a bearer token. -EINVAL with the reason in e, which
 * never quotes the input. Caller releases *ret. */
int import_parse_token(const char *text, size_t len, struct import_signin *ret,
                       struct err *e) _must_check_;

/* import_parse_token() of everything read from fd (standard input), at most IMPORT_INPUT_MAX
 * bytes (-E2BIG beyond), the copy read wiped. */
int import_read_token(int fd, struct import_signin *ret, struct err *e) _must_check_;

enum import_outcome {
    IMPORT_SAVED,
    IMPORT_WOULD_SAVE, /* dry_run */
    IMPORT_KEPT_NEWER, /* the store holds a newer sign-in, and force was not given */
};

/* Stores s as the sign-in of t (t->label's account) at the authorization server t's discovery
 * names (each request bounded by http_timeout_ms). A source that names an issuer other than the
 * one discovered is refused (-EXDEV): the tokens would be sent to a server that did not issue
 * them. A server that uses no OAuth at all keeps the token under its origin, as the
 * 2025-03-26 fallback names the issuer. With dry_run nothing is written. *ret_issuer (caller
 * frees) says where it went. */
int import_store(const struct auth_target *t, const struct import_signin *s, bool force,
                 bool dry_run, int64_t http_timeout_ms, enum import_outcome *ret, char **ret_issuer,
                 struct err *e) _must_check_;

/* mcp-remote's store directory: dir when given (the directory named by --dir, which holds
 * mcp-remote-v1/ or is it), else $MCP_REMOTE_CONFIG_DIR, else ~/.mcp-auth, each with
 * "/mcp-remote-v1" appended. Caller frees. */
int import_mcp_remote_dir(const char *dir, char **ret, struct err *e) _must_check_;

/* The name mcp-remote gives url's files: 32 hex digits, the md5 of the URL as mcp-remote was
 * given it (with no --resource, header, authorize parameter, client metadata URL or token
 * endpoint option, which mcp-remote adds to the hash). out has 33 bytes. */
void import_mcp_remote_hash(const char *url, char out[33]);

/* The sign-in mcp-remote keeps in dir for the hash: <hash>_tokens.json and, when there,
 * <hash>_client_info.json (its registration). -ENOENT when there are no tokens; -EBADMSG with
 * the file named when one is not what mcp-remote writes. Caller releases *ret. */
int import_mcp_remote_read(const char *dir, const char *hash, struct import_signin *ret,
                           struct err *e) _must_check_;

/* The hashes of every sign-in in dir (its "<hash>_tokens.json" files), sorted. An absent
 * directory has none. Caller releases *ret with strv_release(). */
int import_mcp_remote_list(const char *dir, struct strv *ret, struct err *e) _must_check_;
