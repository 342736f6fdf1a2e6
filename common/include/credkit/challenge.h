/* challenge.h - WWW-Authenticate, parsed as RFC 9110 section 11 says.
 *
 * A header value holds one or more challenges: a scheme (case-insensitive) followed by either
 * a token68 or comma-separated auth-params (name case-insensitive; value a token or a
 * quoted-string with backslash escapes). Several WWW-Authenticate headers are parsed one by
 * one and their challenges concatenated. Empty list elements (",,") are allowed, as 9110 says. */
#pragma once

#include <stddef.h>

#include "credkit/err.h"
#include "credkit/macro.h"

struct auth_param {
    char *name;  /* lowercase */
    char *value; /* unquoted, unescaped */
};

struct auth_challenge {
    char *scheme;  /* as written */
    char *token68; /* NULL unless the challenge carried one */
    struct auth_param *params;
    size_t n_params;
};

struct auth_challenges {
    struct auth_challenge *v;
    size_t n;
};

/* Parses one header value and appends its challenges to *list (zero-initialised by the
 * caller). Returns the number of challenges appended (0 for an empty value). -EBADMSG with a
 * message saying where parsing failed ("WWW-Authenticate: <what> at offset N"); *list keeps
 * what it had. Bounded: a value of at most 16 KiB, 64 challenges, 64 params per challenge;
 * a param name given twice in one challenge is an error (RFC 9110 11.2). */
int challenges_parse(const char *header, struct auth_challenges *list, struct err *e) _must_check_;

void challenges_release(struct auth_challenges *list);

/* The first challenge whose scheme matches (case-insensitive), or NULL. Borrowed. */
const struct auth_challenge *challenges_find(const struct auth_challenges *list,
                                             const char *scheme);

/* The value of param name (case-insensitive) in c, or NULL. Borrowed. */
const char *challenge_param(const struct auth_challenge *c, const char *name);
