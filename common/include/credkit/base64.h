/* base64.h - base64 and base64url (RFC 4648), as OAuth and JOSE write them.
 *
 * The standard alphabet with padding (client_secret_basic), and base64url without padding
 * (PKCE, JWTs, JWKs). Encoded forms are plain strings; the decoder refuses padding, the other
 * alphabet and anything beyond 1 MiB. */
#pragma once

#include <stddef.h>

/* base64url without padding. Caller frees; NULL on ENOMEM. */
char *base64url_encode(const void *data, size_t len);

/* Standard base64 with padding (for client_secret_basic). Caller secure_free()s; NULL on
 * ENOMEM. */
char *base64_encode(const void *data, size_t len);

/* Decodes base64url s[0..len) (no padding, as JWTs write it) into a new NUL-terminated buffer
 * of *ret_len bytes. NULL for anything else, or ENOMEM. Caller frees. */
char *base64url_decode(const char *s, size_t len, size_t *ret_len);
