/* client.h - the client we are at the authorization server, and how it authenticates.
 *
 * Before an interactive sign-in, client_ensure() settles the client in the entry, in priority
 * order: pre-registered (oauth.clientId in the settings, with its secret) > a client ID
 * metadata document (oauth.clientMetadataUrl, where the server supports them) > the stored
 * dynamic registration for the same redirect URI, if the server still knows it > a new dynamic
 * registration (RFC 7591). The machine grants use the settings' client directly. */
#pragma once

#include <stdbool.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "discovery.h"
#include "flow.h"
#include "grant.h"
#include "oauth.h"
#include "tokens.h"

/* Settles the client of s->te for redirect_uri (device: registered for the device grant too),
 * registering one when needed; a new registration drops the tokens held (they belong to the
 * old client). Says what it does through s->ui. */
int client_ensure(const struct grant_session *s, const char *redirect_uri, bool device,
                  struct err *e) _must_check_;

/* The stored client of te, borrowing te's strings. */
void client_of(const struct token_entry *te, struct oauth_client *ret);

/* oauth.clientSecret of the target's settings, ${VAR} expanded from the environment; *ret NULL
 * when there is none. A missing variable fails, its message prefixed with the setting and the
 * server. Caller frees *ret with secure_free(). */
int client_config_secret(const struct auth_target *t, char **ret, struct err *e) _must_check_;

/* How a client with a secret authenticates at d's token endpoint: client_secret_basic where
 * listed (or nothing is), else client_secret_post. Static. */
const char *client_secret_method(const struct discovery *d);
