/* textsafe.h - text from others, made safe for a terminal and for an HTTP header.
 *
 * Names, commands, URLs, messages and the quoted standard error of servers come from files and
 * programs anyone may have written, and go to a terminal: a control character there can clear
 * the screen, move the cursor or forge a row of a listing, and a bidirectional override can
 * make "evil.sh" read as "hs.live". Every human-readable output passes such text through
 * text_escape(); JSON output needs nothing (the JSON writer escapes control characters).
 *
 * Values handed out as HTTP header values (tokens, helper answers) must never carry a line
 * break or another control character: one in a token would become a second header line in
 * every consumer. header_value_safe() and b64token_valid() say whether a value may go out.
 * utf8_valid() says whether bytes are well-formed UTF-8, the only text JSON can carry. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

/* Appends s[0..len) to out with every character that could act on a terminal escaped:
 * C0 controls and DEL as \xHH, C1 controls (U+0080-U+009F) and the bidirectional and line
 * controls (U+061C, U+200E, U+200F, U+2028-U+202E, U+2066-U+2069) as \u{HHHH}, and each byte
 * of an invalid UTF-8 sequence as \xHH. Everything else, including a backslash, is copied.
 * 0 or buf's error (-ENOMEM, -E2BIG); on error out holds a prefix of the result. */
int text_escape_append(struct buf *out, const char *s, size_t len) _must_check_;

/* s (NULL as "") escaped into scratch, which is reset first; "" when it does not fit.
 * Borrowed from scratch: valid until it is changed. For printf arguments. */
const char *text_escaped(struct buf *scratch, const char *s);

/* s (NULL as "") escaped, in a new string; NULL when out of memory. Caller frees. */
char *text_escape_dup(const char *s);

/* The length (1 to 4) of the well-formed UTF-8 character that starts s, of which avail bytes
 * may be read; 0 when there is none: an overlong form, a surrogate (U+D800-U+DFFF), a value
 * above U+10FFFF, a stray continuation byte, or a sequence cut short (avail 0 included). A
 * byte below 0x80, NUL included, is a character of its own. */
size_t utf8_seq_len(const char *s, size_t avail);

/* Whether s[0..len) is well-formed UTF-8 throughout (as utf8_seq_len() says; NUL bytes are
 * characters: callers that refuse them check for them themselves). */
bool utf8_valid(const char *s, size_t len);

/* Whether s[0..len) may be sent as an HTTP header value (RFC 9110 field-value): no NUL, CR,
 * LF or other control character but horizontal tab, no DEL, no leading or trailing space or
 * tab, and not empty. Bytes above 0x7f are allowed (obs-text). */
bool header_value_safe(const char *s, size_t len);

/* Whether s[0..len) is an RFC 6750 b64token, the form of a bearer token in an Authorization
 * header: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
bool b64token_valid(const char *s, size_t len);
