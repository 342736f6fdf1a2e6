/* redact.h - the redaction registry.
 *
 * Every secret value a process handles is registered here under its name; anything the process
 * logs or prints as an error is passed through redact_apply(), which replaces each registered
 * value by "[REDACTED:NAME]". Values shorter than REDACT_MIN_LEN are not registered (replacing
 * every "a" would destroy messages and protect nothing).
 *
 * The registry holds copies of the values and wipes them on free. */
#pragma once

#include <stddef.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

#define REDACT_MIN_LEN 4

struct redact;

/* Caller frees with redact_free(). NULL on ENOMEM. */
struct redact *redact_new(void);
void redact_free(struct redact *r);

/* Registers value (len bytes) under name; copies both. Re-registering the same value is a no-op. */
int redact_add(struct redact *r, const char *name, const char *value, size_t len) _must_check_;

/* The values written in url that url_display() (credkit/url.h) masks, each registered under
 * "url": a key in its query, a password in its userinfo. Those shorter than REDACT_URL_MIN_LEN
 * are left out: "?format=json" is a setting, and redacting "json" would mangle every message
 * with that word. url may be a template. -ENOMEM. */
#define REDACT_URL_MIN_LEN 8
int redact_add_url(struct redact *r, const char *url) _must_check_;

/* Appends text to out with every registered value replaced. Longest values win where several
 * overlap. r may be NULL (plain copy). */
int redact_apply(const struct redact *r, const char *text, size_t len,
                 struct buf *out) _must_check_;
