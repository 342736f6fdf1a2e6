/* downstream_subs_int.h - resource subscriptions: the agents' resources/subscribe remembered and
 * renewed after each READY of their server, and a modern agent's listens' subscriptions. */
#pragma once

#include "downstream/downstream_int.h"

#define DS_MAX_SUBS 4096 /* resource subscriptions remembered for reconnects */

int ds_subs_init(struct ds_agent *a) _must_check_;
void ds_subs_release(struct ds_agent *a);
/* The agent unsubscribed from uri: neither remembered nor renewed, even by a subscribe still
 * in flight. */
void ds_subs_forget(struct ds_agent *a, const char *uri);
/* The agent's resources/subscribe of uri was forwarded to s as p: remembered when s accepts
 * it (ds_subs_remember). */
void ds_subs_expect(struct ds_pending *p, struct ds_server *s, const char *uri);
/* The server accepted the agent's subscription to uri. */
void ds_subs_remember(struct ds_agent *a, struct ds_server *s, const char *uri);
/* Whether an agent has a subscription on s (s then stays connected). */
bool ds_subs_has(struct downstream *d, const struct ds_server *s);
/* After READY: the agents' subscriptions on s, again. */
void ds_subs_renew(struct downstream *d, struct ds_server *s);
/* A modern agent's listen wants updates of uri, which s serves: subscribed on s (and renewed
 * after reconnects) unless it is already. */
void ds_subs_listen_add(struct ds_agent *a, struct ds_server *s, const char *uri);
/* No listen of a wants uri any more: unsubscribed on its server and forgotten. */
void ds_subs_listen_drop(struct ds_agent *a, const char *uri);
/* Frees the renewals in flight of s (their calls go with its upstream). */
void ds_subs_release_server(struct ds_server *s);
/* The subscriptions of servers that are not in the configuration any more are dropped. */
void ds_subs_drop_removed(struct downstream *d);
