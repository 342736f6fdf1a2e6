/* ratelimit.h - repeated failures never loop: a cap on token requests and sign-ins per server.
 *
 * The events of the last minute are counted in the entry itself (its "rate" member, kept among
 * the entry's extra data and written back with it), so that every process sharing the store
 * shares the count; the caller holds the entry's lock and saves the entry afterwards, also when
 * the attempt failed. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

#include "tokens.h"

enum ratelimit_kind {
    RATELIMIT_TOKEN,  /* a request to the token endpoint (a grant, a refresh): 60 a minute,
                       * enough for tokens that live seconds, still a brake for a loop */
    RATELIMIT_SIGNIN, /* a sign-in: 5 a minute */
};

/* Counts one event of kind now in t, or refuses with -EBUSY and a message naming t's issuer
 * when the cap for the last minute is reached (then nothing is counted). -ENOMEM. */
int ratelimit_check(struct token_entry *t, enum ratelimit_kind kind, struct err *e) _must_check_;
