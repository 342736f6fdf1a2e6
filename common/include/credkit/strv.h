/* strv.h - growable vectors of strings (git's strvec).
 *
 * A struct strv owns its strings and keeps v NULL-terminated once anything was pushed, so v
 * can be handed to execve() or any API wanting a char **. Embed it, zero-initialised
 * (STRV_INIT), and release it with strv_release(), or strv_release_secure() when its strings
 * may hold credentials (header lines, environment values): those wipe each string before it is
 * freed. strv_detach() hands the vector out; strv_free()/strv_free_secure() free a detached one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

struct strv {
    char **v; /* NULL until the first push; then NULL-terminated */
    size_t n;
    size_t alloc;
};

#define STRV_INIT                                                                                  \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Appends a copy of s. 0 or -ENOMEM (sv unchanged). */
int strv_push(struct strv *sv, const char *s) _must_check_;

/* Appends s itself, which the vector now owns - also on failure, when s is wiped and freed. A
 * NULL s (a failed strdup) is -ENOMEM, so strv_push_take(sv, strdup(x)) is safe. */
int strv_push_take(struct strv *sv, char *s) _must_check_;

/* Appends a formatted string. 0 or -ENOMEM. */
int strv_pushf(struct strv *sv, const char *fmt, ...) _printf_(2, 3) _must_check_;

/* Whether an element equals s. */
bool strv_contains(const struct strv *sv, const char *s);

/* Hands the NULL-terminated vector out (an empty one when nothing was pushed) and leaves sv
 * empty. NULL on allocation failure, when sv is left as it was. Caller frees with strv_free()
 * or strv_free_secure(). */
char **strv_detach(struct strv *sv) _must_check_;

/* Frees the strings and the vector; sv is empty and reusable. */
void strv_release(struct strv *sv);
/* The same, wiping each string first. */
void strv_release_secure(struct strv *sv);

/* The number of strings in a NULL-terminated vector (0 for NULL). */
size_t strv_length(char *const *v);

/* Frees a NULL-terminated vector and its strings; NULL is fine. */
void strv_free(char **v);
/* The same, wiping each string first. */
void strv_free_secure(char **v);
