/* err.h - the human side of an error.
 *
 * Functions return an int: >= 0 success, -errno failure. Where the user must see why, a
 * caller passes a `struct err` and the callee fills in one message saying what is wrong
 * (lowercase, no full stop, subjects in quotes) and, where there is one, what to do. Callers
 * add context with err_prefix() as the error travels up, and the tool prints it once.
 *
 * A message never contains a secret value: callees quote names and paths, never values. */
#pragma once

#include "credkit/macro.h"

#define ERR_MSG_MAX 1024

struct err {
    int code;              /* the -errno that was returned with the message, 0 if none */
    char msg[ERR_MSG_MAX]; /* "" when no message was set */
};

#define ERR_INIT                                                                                   \
    {                                                                                              \
        0, ""                                                                                      \
    }

/* Sets the message (vsnprintf, truncated at ERR_MSG_MAX) and returns code, which must be
 * negative, so that "return err_set(e, -EINVAL, ...)" reads naturally. e may be NULL. */
int err_set(struct err *e, int code, const char *fmt, ...) _printf_(3, 4);

/* Prepends "<context>: " to the current message. Returns e->code (or -EIO if unset). */
int err_prefix(struct err *e, const char *fmt, ...) _printf_(2, 3);

/* Message to show: e->msg, else strerror(-code). Borrowed; valid until e changes. */
const char *err_msg(const struct err *e);

void err_clear(struct err *e);
