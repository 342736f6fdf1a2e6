/* downstream_servers_int.h - the downstream's servers: each one's upstream (template, then
 * real), its lifecycle (lazy, idle, disabled), the log level it was sent, its status for the
 * proxy tool, and the metadata cache's saves. */
#pragma once

#include "downstream/downstream_int.h"

#define DS_LIST_TTL_MS   60000 /* "ttlMs" of a list no server gave one for (modern agents) */
#define DS_CACHE_SAVE_MS 1000  /* the cache is written at most this often (and at shutdown) */

/* What the proxy tool's status says of a server (ds_server_avail). */
enum ds_avail {
    DS_AVAIL_CONNECTED,  /* READY */
    DS_AVAIL_CONNECTING, /* connecting or listing; reason: the last attempt's failure */
    DS_AVAIL_IDLE,       /* lazy or idle-closed (reason: as CONNECTING) */
    DS_AVAIL_FAILED,     /* last connect failed: reason set */
    DS_AVAIL_LOGIN,      /* sign-in required: reason holds the command to run */
    DS_AVAIL_DISABLED,   /* "disabled": true */
};

/* A server for a valid entry (borrowed), with a template upstream (or a real one once
 * started). 0, or -errno with e set. Free with ds_server_free(). */
int ds_server_new(struct downstream *d, const struct mcp_server *entry, struct ds_server **ret,
                  struct err *e) _must_check_;
/* Frees at once (children killed, calls in flight dropped without callbacks). NULL-safe. */
void ds_server_free(struct ds_server *s);
/* Replaces the template upstream with one offering the agent's capabilities. */
int ds_server_make_real(struct downstream *d, struct ds_server *s, struct err *e) _must_check_;
/* Moves s to the state to; an illegal transition is a bug (asserted). */
void ds_server_set_state(struct ds_server *s, enum ds_server_state to);
/* The server's first round is over: listed, failed, or given up on. */
bool ds_server_settled(const struct ds_server *s);
/* Takes a server out of the active list (the catalogue is rebuilt by the caller) and closes
 * it; it is freed when CLOSED (at once when it never connected). */
void ds_server_remove(struct downstream *d, struct ds_server *s);
/* Frees a server that is no longer in the active list. */
void ds_server_finish(struct downstream *d, struct ds_server *s);
/* Sends logging/setLevel LEVEL to the server (its answer only logged at debug). 0, or < 0
 * with the failure logged. */
int ds_send_level(struct ds_server *s, const char *level);
/* Sends level to s when it is READY and has logging; level NULL: the one the first agent that
 * asked for one asked for (with several agents a server has one level: the first agent's). */
void ds_apply_level(struct downstream *d, struct ds_server *s, const char *level);
/* What the upstreams will offer is known (the first agent's capabilities, as offered, and
 * protocol version): before the agent hears what is listed, each server's lists come from the
 * cache kept for that offer (meta_cache.h), when it holds them. Nothing once started. */
void ds_servers_offered(struct downstream *d, struct json_object *caps, const char *version);
/* Starts a server made real, as its lifecycle says: a lazy one whose lists came from the
 * cache is settled at once and not connected; a disabled one never starts; others connect. */
void ds_server_start(struct ds_server *s);
/* What the proxy tool's status says of s; *ret_reason (may be NULL) borrowed, NULL when none. */
enum ds_avail ds_server_avail(const struct ds_server *s, const char **ret_reason);
/* Connect s now if it is not (a lazy or idle one); 0, or -errno with e (disabled, invalid). */
int ds_server_wake(struct ds_server *s, struct err *e);
/* Connects every server whose tools may be missing from the catalogue: listed only from the
 * cache, or not connected (lazy, idle-closed); not a disabled, failed or closing one. true when
 * one was woken: its tools follow once it has listed (ds_servers_waking). */
bool ds_wake_unlisted(struct downstream *d);
/* Whether a server is connecting or listing: the catalogue may still grow. */
bool ds_servers_waking(struct downstream *d);
/* A request of the agent for s was answered: s was in use now (the idle clock restarts). */
void ds_server_used(struct ds_server *s);
/* Rebuilds the catalogue of kind k from the servers' lists (aggregate mode); the agent is due
 * to hear of a change in a list it was given. */
void ds_rebuild(struct downstream *d, enum catalog_kind k);
/* The "ttlMs" of the aggregate list of kind k: the shortest a server gave, 0 while a server is
 * still connecting, else DS_LIST_TTL_MS. */
int64_t ds_list_ttl(struct downstream *d, enum catalog_kind k);
/* The server a resource URI belongs to: the catalogue's choice, else - when only one server
 * has resources - that one; or NULL. */
struct ds_server *ds_route_uri(struct downstream *d, const char *uri);
/* Writes the cache now when a save is due (at shutdown). */
void ds_cache_save_now(struct downstream *d);
