/* secmem.h - secrets as a type of data.
 *
 * Wipe with the known length before freeing, compare in constant time, draw randomness from
 * OpenSSL's CSPRNG, and keep secrets out of core dumps. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/macro.h"

/* Overwrites n bytes with zeros in a way the compiler may not elide. NULL-safe. */
void secure_wipe(void *p, size_t n);

/* Wipes strlen(s) bytes and frees s. NULL-safe. */
void secure_free(char *s);

/* Wipes n bytes and frees p. NULL-safe. */
void secure_free_len(void *p, size_t n);

/* Constant-time comparison of two strings: the time depends only on the lengths. NULL never
 * equals anything. */
bool secure_streq(const char *a, const char *b);

/* Fills p with n bytes from OpenSSL's CSPRNG. -EIO when it cannot. */
int secure_random(void *p, size_t n) _must_check_;

/* A random base64url string (no padding) made of nbytes random bytes. Caller frees with
 * secure_free(). */
int secure_random_token(size_t nbytes, char **ret) _must_check_;

/* Process-wide hardening for a program that handles secrets: no core dumps (soft RLIMIT_CORE
 * 0, PR_SET_DUMPABLE 0; the hard limit is left alone, and exec resets dumpable). Call first
 * thing in main(). The soft limit it found is stored in *ret_core_soft (may be NULL) so that a
 * program about to exec another can put it back. Returns -errno. */
int secure_harden_process(unsigned long long *ret_core_soft);
