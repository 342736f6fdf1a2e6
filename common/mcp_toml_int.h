/* mcp_toml_int.h - what the two halves of the config.toml reader share inside common/: the
 * parse state, and the lexer (mcp_toml_lex.c: bytes, strings with their escapes, keys and dotted
 * key paths) that the values and tables (mcp_toml.c) read through. Not installed.
 *
 * Every function reads at T->p, moves it past what it read and keeps T->line; the fallible ones
 * return 0 or a -errno with T->e set to a message naming the line. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/json.h"
#include "credkit/macro.h"
#include "credkit/mcp_field.h"
#include "credkit/strv.h"

#define KEY_MAX       4096 /* bytes of one key */
#define KEY_PARTS_MAX 16   /* parts of a dotted key or table name */

struct toml {
    const char *p, *end;
    size_t line;
    struct err *e;
    struct json_object *servers; /* the result: the table mcp_servers */
    struct json_object *notes;   /* NAME -> KEY -> "line L: ..." of the values not read */
    struct json_object *defined; /* path_id() -> enum defined_as: the tables defined */
    struct strv table;           /* the path of the last header; empty: the root */
    bool skipping;               /* the table is not mcp_servers' */
    char soft[ERR_MSG_MAX];      /* why the value being read is not read */
};

/* A syntax error: -EBADMSG, T->e set to "line L: " and the message. */
int toml_bad(struct toml *T, const char *fmt, ...) _printf_(2, 3);
/* -ENOMEM, T->e set to say so. */
int toml_oom(struct toml *T);

/* The line of the first byte of s[0..n) that is not UTF-8, or a NUL; 0 when all is well. */
size_t toml_bad_utf8_line(const unsigned char *s, size_t n);
/* The byte at T->p, '\0' at the end of the text (which holds no NUL: checked first). */
char toml_peek(const struct toml *T);
/* Whether the text at T->p starts with s; T->p does not move. */
bool toml_at(const struct toml *T, const char *s);
/* Moves T->p past blanks and tabs (not line breaks). */
void toml_skip_ws(struct toml *T);
/* Whether T->p is at a line break or the end of the text. */
bool toml_at_eol(const struct toml *T);
/* Moves past one line break ("\n" or "\r\n"), counting it; false when there is none. */
bool toml_eat_newline(struct toml *T);
/* A comment (at '#') up to the end of its line, which is left for the caller; none: nothing. */
int toml_skip_comment(struct toml *T);
/* Blank space, line breaks and comments, as arrays allow between their elements. */
int toml_skip_ws_lines(struct toml *T);
/* The rest of a line after `after` (a header, a value): blank, maybe a comment, the break. */
int toml_end_of_line(struct toml *T, const char *after);
/* A string of any of the four kinds (T->p at its first quote), its value appended to out. */
int toml_parse_string(struct toml *T, struct buf *out);
/* Whether c opens a string. */
bool toml_is_quote(char c);
/* Whether c may be part of a bare key (A-Za-z0-9_-). */
bool toml_is_bare(char c);
/* A key or table name, maybe dotted (a.b."c d"), its parts pushed to path (caller releases). */
int toml_parse_keypath(struct toml *T, struct strv *path);
/* path[0..n) joined with dots into out, cut to fit a message. */
void toml_path_disp(char out[MCP_DISP_BUF], const struct strv *path, size_t n);
