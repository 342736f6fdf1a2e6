/* helper_answer.c - the secrets and headers answers: writers, and readers over json-c that wipe */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/printbuf.h>

#include "credkit/helper_answer.h"
#include "credkit/json.h"
#include "credkit/jsonw.h"
#include "credkit/secmem.h"
#include "credkit/textsafe.h"

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Names the index-th member (1-based) in a message: by its name when that is short printable
 * ASCII, else by its position. */
static void describe_name(const char *kind, const char *name, size_t n, size_t index, char *out,
                          size_t size)
{
    bool printable = n > 0 && n <= 64;
    for (size_t i = 0; printable && i < n; i++)
        printable = name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\'';
    if (printable)
        (void)snprintf(out, size, "%s '%s'", kind, name);
    else
        (void)snprintf(out, size, "%s #%zu", kind, index);
}

static bool secret_name_valid(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || is_digit(*s) || *s == '_'))
            return false;
    return true;
}

/* ---- reading: json-c, as strict as the protocol, leaving no copy behind ----
 *
 * json-c parses an answer into a tree; a reader walks it, copies what it keeps into memory of
 * its own, and wipes every string of the tree (json_wipe_strings) before it puts it. The
 * tokener is driven here rather than through json_parse(), for what that cannot give:
 *   - a repeated member: json-c keeps the last and frees the value before it, unwiped. The text
 *     goes to the tokener in pieces that end at each ':', so each key is seen before its value:
 *     a repetition the protocol refuses stops the parse there, and any other has the value it
 *     replaces wiped first;
 *   - a failed parse: the tokener frees the tree it had built so far unwiped, so that is wiped
 *     first;
 *   - the tokener's scratch buffer, which would grow by realloc() (each move leaving a copy
 *     behind): it is sized for the whole text before the parse, and wiped after it.
 * The tokener's fields are public in json-c's header, though documented as private; pb, depth
 * and stack are the only ones read (json.c reads pb too).
 *
 * And json-c (0.16) lets through, even with JSON_TOKENER_STRICT, some of what JSON (RFC 8259)
 * and the protocol refuse: control characters inside strings, lone surrogates (turned into
 * U+FFFD, which would change a value), overlong and surrogate UTF-8, numbers such as 1., 00 and
 * NaN, and \u0000 (which no C string can carry). check_strict() finds those on the text json-c has
 * read, so every error is the first in the text, worded "line L, column C: what". */

enum answer_kind {
    ANSWER_SECRETS,
    ANSWER_HEADERS,
};

struct reader {
    const char *text; /* borrowed */
    size_t len;
    enum answer_kind kind;
    struct err *e; /* borrowed */
};

static int syntax(const struct reader *rd, size_t pos, const char *what)
{
    return json_error_at(rd->e, rd->text, rd->len, pos, what);
}

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool hex4(const char *s, size_t len, size_t i, unsigned *ret)
{
    unsigned v = 0;
    if (len - i < 4 || i > len)
        return false;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        v = v << 4 | d;
    }
    *ret = v;
    return true;
}

/* The escape at text[*pos] (a backslash, in a string): checked, *pos past it. */
static int check_escape(const struct reader *rd, size_t *pos)
{
    const char *s = rd->text;
    size_t i = *pos + 1;
    unsigned cp, lo;
    if (i >= rd->len) { /* the string is unterminated: check_strict() says so */
        *pos = rd->len;
        return 0;
    }
    if (s[i] != 'u') {
        if (!s[i] || !strchr("\"\\/bfnrt", s[i]))
            return syntax(rd, i, "invalid escape in a string");
        *pos = i + 1;
        return 0;
    }
    if (!hex4(s, rd->len, i + 1, &cp))
        return syntax(rd, i + 1, "invalid \\u escape");
    i += 5;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return syntax(rd, i, "lone surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (rd->len - i < 2 || s[i] != '\\' || s[i + 1] != 'u')
            return syntax(rd, i, "lone surrogate in a \\u escape");
        if (!hex4(s, rd->len, i + 2, &lo))
            return syntax(rd, i + 2, "invalid \\u escape");
        if (lo < 0xdc00 || lo > 0xdfff)
            return syntax(rd, i + 6, "lone surrogate in a \\u escape");
        i += 6;
    }
    /* no field of an answer may hold a NUL, and C strings could not carry one */
    if (cp == 0)
        return syntax(rd, i, "\\u0000 in a string");
    *pos = i;
    return 0;
}

/* The number at text[*pos] (outside strings): RFC 8259's grammar, *pos past it. */
static int check_number(const struct reader *rd, size_t *pos)
{
    const char *s = rd->text;
    size_t i = *pos, len = rd->len;
    if (s[i] == '-')
        i++;
    if (i >= len || !is_digit(s[i]))
        return syntax(rd, i, "invalid number");
    if (s[i] == '0' && i + 1 < len && is_digit(s[i + 1]))
        return syntax(rd, i, "invalid number (leading zero)");
    while (i < len && is_digit(s[i]))
        i++;
    if (i < len && s[i] == '.') {
        if (++i >= len || !is_digit(s[i]))
            return syntax(rd, i, "invalid number");
        while (i < len && is_digit(s[i]))
            i++;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= len || !is_digit(s[i]))
            return syntax(rd, i, "invalid number");
        while (i < len && is_digit(s[i]))
            i++;
    }
    *pos = i;
    return 0;
}

/* What json-c lets through (see above), in the text before limit, which json-c has read as
 * JSON (so strings and numbers are where they seem). 0, or -EBADMSG at the first. */
static int check_strict(const struct reader *rd, size_t limit)
{
    const unsigned char *s = (const unsigned char *)rd->text;
    bool in_string = false;
    size_t i = 0;
    int r = 0;
    if (limit > rd->len)
        limit = rd->len;
    while (r >= 0 && i < limit) {
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t n = utf8_seq_len(rd->text + i, rd->len - i);
            if (n == 0)
                return syntax(rd, i, in_string ? "invalid UTF-8 in a string" : "invalid UTF-8");
            i += n;
        } else if (in_string && c == '\\') {
            r = check_escape(rd, &i);
        } else if (in_string && c < 0x20) {
            return syntax(rd, i, "control character in a string");
        } else if (!in_string && (c == '-' || is_digit(c))) {
            r = check_number(rd, &i);
        } else if (!in_string && (c == 0 || c == 'N' || c == 'I')) {
            /* NaN, Infinity and -Infinity: json-c takes them, strict or not */
            return syntax(rd, i, "unexpected character");
        } else {
            if (c == '"')
                in_string = !in_string;
            i++;
        }
    }
    if (r >= 0 && in_string && i >= rd->len)
        r = syntax(rd, rd->len, "unterminated string");
    return r;
}

/* A json-c error at pos, unless check_strict() finds one before it. */
static int fail_at(const struct reader *rd, size_t pos, const char *what)
{
    int r = check_strict(rd, pos + 1);
    return r < 0 ? r : syntax(rd, pos, what);
}

/* Whether a repetition of the member being read is refused (what: the member, for the
 * message): the members of the answer itself a reader knows, the names in "secrets" and
 * "headers", and a secret's own members. A repeated name that is itself invalid is let through:
 * the walk refuses its first appearance. */
static bool repeat_refused(const struct reader *rd, struct json_tokener *tok, char *what,
                           size_t size)
{
    int d = tok->depth;
    const char *key = tok->stack[d].obj_field_name;
    const char *in = d >= 1 ? tok->stack[0].obj_field_name : NULL; /* the answer's member */
    if (d == 0) {
        bool known = strcmp(key, "version") == 0 ||
                     (rd->kind == ANSWER_SECRETS
                          ? strcmp(key, "secrets") == 0
                          : strcmp(key, "headers") == 0 || strcmp(key, "expires_at") == 0 ||
                                strcmp(key, "dpop") == 0);
        if (known)
            (void)snprintf(what, size, "\"%s\"", key);
        return known;
    }
    if (!in)
        return false;
    if (rd->kind == ANSWER_SECRETS && strcmp(in, "secrets") == 0) {
        if (d == 1 && secret_name_valid(key)) {
            (void)snprintf(what, size, "\"secrets\": '%s'", key);
            return true;
        }
        const char *name = tok->stack[1].obj_field_name;
        if (d == 2 && secret_name_valid(name) &&
            (strcmp(key, "value") == 0 || strcmp(key, "source") == 0 || strcmp(key, "error") == 0 ||
             strcmp(key, "expires_at") == 0)) {
            (void)snprintf(what, size, "\"secrets\": '%s': \"%s\"", name, key);
            return true;
        }
    }
    if (rd->kind == ANSWER_HEADERS && strcmp(in, "headers") == 0 && d == 1 &&
        helper_header_name_valid(key, strlen(key))) {
        char desc[96];
        describe_name("header", key, strlen(key),
                      (size_t)json_object_object_length(tok->stack[1].current) + 1, desc,
                      sizeof(desc));
        (void)snprintf(what, size, "\"headers\": %s", desc);
        return true;
    }
    return false;
}

/* After a piece that ends at the ':' at colon: when it followed a key (not inside a string)
 * that the object being read already has, refuses the repetition or wipes the value json-c is
 * about to replace. */
static int check_repeat(const struct reader *rd, struct json_tokener *tok, size_t colon)
{
    struct json_tokener_srec *top = &tok->stack[tok->depth];
    struct json_object *old = NULL;
    char what[160];
    if (top->state != json_tokener_state_eatws ||
        top->saved_state != json_tokener_state_object_value || !top->obj_field_name ||
        !json_object_object_get_ex(top->current, top->obj_field_name, &old))
        return 0;
    if (repeat_refused(rd, tok, what, sizeof(what))) {
        int r = check_strict(rd, colon);
        return r < 0 ? r : err_set(rd->e, -EBADMSG, "%s appears twice", what);
    }
    json_wipe_strings(old);
    return 0;
}

static const char *tokener_error_what(enum json_tokener_error jerr, char *buf, size_t size)
{
    /* worded as json_parse() words them */
    if (jerr == json_tokener_error_parse_eof || jerr == json_tokener_continue)
        return "unexpected end of input";
    if (jerr == json_tokener_error_depth) {
        (void)snprintf(buf, size, "nested more than %d levels deep", JSON_MAX_DEPTH);
        return buf;
    }
    return json_tokener_error_desc(jerr);
}

/* Parses the answer's object out of text[0..len), which begins with '{' (after whitespace),
 * piece by piece (see above). On success *ret is the tree, which the caller wipes and puts. */
static int tokenize(const struct reader *rd, struct json_tokener *tok, struct json_object **ret)
{
    /* json-c takes a NUL for the end of the text: it never sees one (check_strict() does) */
    const char *nul = memchr(rd->text, 0, rd->len);
    size_t feed = nul ? (size_t)(nul - rd->text) : rd->len, pos = 0;
    char buf[64];
    int r = 0;
    while (r >= 0 && pos < feed) {
        const char *colon = memchr(rd->text + pos, ':', feed - pos);
        size_t n = colon ? (size_t)(colon - rd->text) + 1 - pos : feed - pos;
        struct json_object *root = json_tokener_parse_ex(tok, rd->text + pos, (int)n);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = pos + json_tokener_get_parse_end(tok);
        if (root) {
            r = check_strict(rd, end);
            while (r >= 0 && end < rd->len && is_json_space(rd->text[end]))
                end++;
            if (r >= 0 && end < rd->len)
                r = syntax(rd, end, "unexpected characters after the answer");
            if (r < 0) {
                json_wipe_strings(root);
                json_object_put(root);
                return r;
            }
            *ret = root;
            return 0;
        }
        if (jerr != json_tokener_continue)
            return fail_at(rd, end, tokener_error_what(jerr, buf, sizeof(buf)));
        pos += n;
        if (colon)
            r = check_repeat(rd, tok, pos - 1);
    }
    return r < 0 ? r : fail_at(rd, feed, tokener_error_what(json_tokener_continue, buf, 0));
}

/* The answer's tree out of text[0..len): refusals as the protocol says, no copy left behind.
 * Caller wipes (json_wipe_strings) and puts *ret. */
static int reader_parse(const char *text, size_t len, enum answer_kind kind,
                        struct json_object **ret, struct err *e)
{
    struct reader rd = {.text = text, .len = len, .kind = kind, .e = e};
    size_t i = 0;
    if (len > HELPER_ANSWER_MAX)
        return err_set(e, -E2BIG, "the answer is larger than %u bytes", HELPER_ANSWER_MAX);
    while (i < len && is_json_space(text[i]))
        i++;
    if (i == len)
        return err_set(e, -EBADMSG, "empty answer: expected a JSON object");
    if (text[i] != '{')
        return err_set(e, -EBADMSG, "the answer is not a JSON object");

    struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
    if (!tok)
        return err_set(e, -ENOMEM, "out of memory");
    json_tokener_set_flags(tok, JSON_TOKENER_FLAGS);
    /* room for the longest string the text can hold, so the buffer never moves */
    int r = printbuf_memset(tok->pb, 0, 0, (int)len + 8);
    if (r < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    else
        r = tokenize(&rd, tok, ret);
    if (r < 0)
        for (int d = 0; d <= tok->depth; d++)
            json_wipe_strings(tok->stack[d].current);
    if (tok->pb && tok->pb->buf && tok->pb->size > 0)
        secure_wipe(tok->pb->buf, (size_t)tok->pb->size);
    json_tokener_free(tok);
    return r;
}

static int type_error(struct err *e, const char *what, const char *want, struct json_object *v)
{
    return err_set(e, -EBADMSG, "%s must be %s, not %s", what, want,
                   json_type_desc(json_object_get_type(v)));
}

/* A string member's value into a fresh copy (*ret, caller frees with secure_free_len). */
static int read_string_dup(struct json_object *v, const char *what, char **ret, size_t *ret_len,
                           struct err *e)
{
    if (!json_object_is_type(v, json_type_string))
        return type_error(e, what, "a string", v);
    size_t len = (size_t)json_object_get_string_len(v);
    char *p = malloc(len + 1);
    if (!p)
        return err_set(e, -ENOMEM, "out of memory");
    memcpy(p, json_object_get_string(v), len);
    p[len] = 0;
    *ret = p;
    if (ret_len)
        *ret_len = len;
    return 0;
}

static int read_positive_int(struct json_object *v, const char *what, int64_t *ret, struct err *e)
{
    enum json_type t = json_object_get_type(v);
    if (t != json_type_int && t != json_type_double)
        return type_error(e, what, "a positive integer", v);
    int64_t x = json_object_get_int64(v);
    /* json-c keeps an integer above INT64_MAX unsigned, and get_int64 clamps it */
    if (t != json_type_int || x <= 0 ||
        (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX))
        return err_set(e, -EBADMSG, "%s must be a positive integer", what);
    *ret = x;
    return 0;
}

static int read_version(struct json_object *v, int newest, struct err *e)
{
    int64_t version = 0;
    int r = read_positive_int(v, "\"version\"", &version, e);
    if (r < 0)
        return r;
    if (version > newest)
        return err_set(e, -EPROTONOSUPPORT,
                       "the answer is in version %lld of the helper protocol, and this program "
                       "reads version %d: update it",
                       (long long)version, newest);
    return 0;
}

/* ---- the secrets answer ---- */

static void secret_release(struct helper_secret *s)
{
    free(s->name);
    if (s->value)
        secure_free_len(s->value, s->value_len);
    free(s->source);
    free(s->error);
    *s = (struct helper_secret){0};
}

const struct helper_secret *helper_secrets_find(const struct helper_secrets *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, name) == 0)
            return &a->v[i];
    return NULL;
}

/* Appends s (whose strings a now owns) or releases it on failure. */
static int secrets_push(struct helper_secrets *a, struct helper_secret *s)
{
    if (!s->name || (!s->value && !s->error)) { /* a failed copy */
        secret_release(s);
        return -ENOMEM;
    }
    if (a->n == a->alloc) {
        size_t alloc = a->alloc ? a->alloc * 2 : 8;
        struct helper_secret *v =
            alloc > SIZE_MAX / sizeof(*v) ? NULL : realloc(a->v, alloc * sizeof(*v));
        if (!v) {
            secret_release(s);
            return -ENOMEM;
        }
        a->v = v;
        a->alloc = alloc;
    }
    a->v[a->n++] = *s;
    *s = (struct helper_secret){0};
    return 0;
}

static char *dup_secret(const char *value, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, value, len);
        p[len] = 0;
    }
    return p;
}

int helper_secrets_add_value(struct helper_secrets *a, const char *name, const char *value,
                             size_t len, const char *source, int64_t expires_at)
{
    if (!secret_name_valid(name) || helper_secrets_find(a, name) || memchr(value, 0, len) ||
        !utf8_valid(value, len) || expires_at < 0 ||
        (source && !utf8_valid(source, strlen(source))))
        return -EINVAL;
    struct helper_secret s = {
        .name = strdup(name),
        .value = dup_secret(value, len),
        .value_len = len,
        .source = source ? strdup(source) : NULL,
        .expires_at = expires_at,
    };
    if (source && !s.source) {
        secret_release(&s);
        return -ENOMEM;
    }
    return secrets_push(a, &s);
}

int helper_secrets_add_error(struct helper_secrets *a, const char *name, const char *message)
{
    if (!secret_name_valid(name) || helper_secrets_find(a, name) ||
        !utf8_valid(message, strlen(message)))
        return -EINVAL;
    struct helper_secret s = {.name = strdup(name), .error = strdup(message)};
    return secrets_push(a, &s);
}

void helper_secrets_release(struct helper_secrets *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        secret_release(&a->v[i]);
    free(a->v);
    *a = (struct helper_secrets){0};
}

static int write_secret(const struct helper_secret *s, struct buf *out)
{
    int r = jsonw_string(out, s->name, strlen(s->name));
    if (r >= 0)
        r = buf_append_str(out, ":{");
    if (r >= 0 && s->error) {
        r = jsonw_kv_string(out, "error", s->error);
    } else if (r >= 0) {
        r = buf_append_str(out, "\"value\":");
        if (r >= 0)
            r = jsonw_string(out, s->value, s->value_len);
        if (r >= 0 && s->source) {
            r = buf_append_char(out, ',');
            if (r >= 0)
                r = jsonw_kv_string(out, "source", s->source);
        }
        if (r >= 0 && s->expires_at > 0) {
            r = buf_append_char(out, ',');
            if (r >= 0)
                r = jsonw_kv_int(out, "expires_at", s->expires_at);
        }
    }
    if (r >= 0)
        r = buf_append_char(out, '}');
    return r;
}

int helper_secrets_write(const struct helper_secrets *a, struct buf *out)
{
    int r = buf_printf(out, "{\"version\":%d,\"secrets\":{", HELPER_ANSWER_VERSION);
    for (size_t i = 0; r >= 0 && i < a->n; i++) {
        if (i > 0)
            r = buf_append_char(out, ',');
        if (r >= 0)
            r = write_secret(&a->v[i], out);
    }
    if (r >= 0)
        r = buf_append_str(out, "}}\n");
    return r;
}

/* One member of "secrets" (the name already checked). */
static int read_secret(struct json_object *v, const char *name, struct helper_secrets *a,
                       struct err *e)
{
    struct helper_secret s = {0};
    int r = 0;

    if (!json_object_is_type(v, json_type_object))
        return err_set(e, -EBADMSG, "\"secrets\": '%s' must be an object, not %s", name,
                       json_type_desc(json_object_get_type(v)));
    json_object_object_foreach(v, k, f)
    {
        char **field = strcmp(k, "value") == 0    ? &s.value
                       : strcmp(k, "source") == 0 ? &s.source
                       : strcmp(k, "error") == 0  ? &s.error
                                                  : NULL;
        bool expires = strcmp(k, "expires_at") == 0;
        char what[128];
        if (!field && !expires)
            continue; /* a member this reader does not know */
        (void)snprintf(what, sizeof(what), "\"secrets\": '%s': \"%s\"", name, k);
        if (field)
            r = read_string_dup(f, what, field, field == &s.value ? &s.value_len : NULL, e);
        else
            r = read_positive_int(f, what, &s.expires_at, e);
        if (r < 0)
            break;
    }
    if (r >= 0 && s.value && s.error)
        r = err_set(e, -EBADMSG, "\"secrets\": '%s' has both \"value\" and \"error\"", name);
    if (r >= 0 && !s.value && !s.error)
        r = err_set(e, -EBADMSG, "\"secrets\": '%s' has neither \"value\" nor \"error\"", name);
    if (r >= 0 && s.error) { /* "source" and "expires_at" describe a value: none here */
        free(s.source);
        s.source = NULL;
        s.expires_at = 0;
    }
    if (r >= 0)
        s.name = strdup(name);
    if (r < 0) {
        secret_release(&s);
        return r;
    }
    return secrets_push(a, &s);
}

static int read_secrets_object(struct json_object *v, struct helper_secrets *a, struct err *e)
{
    size_t count = 0;
    int r = 0;
    if (!json_object_is_type(v, json_type_object))
        return type_error(e, "\"secrets\"", "an object", v);
    json_object_object_foreach(v, name, secret)
    {
        char desc[96];
        describe_name("name", name, strlen(name), ++count, desc, sizeof(desc));
        if (!secret_name_valid(name))
            r = err_set(e, -EBADMSG,
                        "\"secrets\": %s is not a valid secret name (letters, digits and '_', "
                        "not starting with a digit)",
                        desc);
        else
            r = read_secret(secret, name, a, e);
        if (r < 0)
            break;
    }
    return r;
}

int helper_secrets_parse(const char *text, size_t len, struct helper_secrets *ret, struct err *e)
{
    struct helper_secrets a = {0};
    struct json_object *root = NULL;
    bool secrets = false;
    int r = reader_parse(text, len, ANSWER_SECRETS, &root, e);
    if (r < 0)
        return r;
    /* in the answer's order, members this reader does not know ignored (repetitions were
     * refused while it was parsed) */
    json_object_object_foreach(root, k, v)
    {
        if (strcmp(k, "version") == 0) {
            r = read_version(v, HELPER_ANSWER_VERSION, e);
        } else if (strcmp(k, "secrets") == 0) {
            r = read_secrets_object(v, &a, e);
            secrets = true;
        }
        if (r < 0)
            break;
    }
    if (r >= 0 && !secrets)
        r = err_set(e, -EBADMSG, "the answer has no \"secrets\" object");
    json_wipe_strings(root);
    json_object_put(root);
    if (r < 0) {
        helper_secrets_release(&a);
        return r;
    }
    *ret = a;
    return 0;
}

/* ---- the headers answer ---- */

bool helper_header_name_valid(const char *name, size_t len)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) ||
              (c && strchr(extra, c))))
            return false;
    }
    return true;
}

bool helper_header_value_valid(const char *value, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

const char *helper_header_framing(const char *name)
{
    static const char *const framing[] = {"Host",
                                          "Content-Length",
                                          "Transfer-Encoding",
                                          "Connection",
                                          "Keep-Alive",
                                          "Upgrade",
                                          "TE",
                                          "Trailer",
                                          "Expect",
                                          "Proxy-Connection"};
    static const char *const session[] = {"MCP-Session-Id", "MCP-Protocol-Version",
                                          "Last-Event-ID"};
    for (size_t i = 0; i < ELEMENTSOF(framing); i++)
        if (strcasecmp(name, framing[i]) == 0)
            return "it frames the HTTP request, which only the transport sets";
    for (size_t i = 0; i < ELEMENTSOF(session); i++)
        if (strcasecmp(name, session[i]) == 0)
            return "it belongs to the MCP session, which only the transport sets";
    return NULL;
}

/* The token of "Bearer TOKEN" or "DPoP TOKEN" (value[0..len)), in *ret_token, *ret_len; false
 * for another scheme. */
static bool token_scheme(const char *value, size_t len, const char **ret_token, size_t *ret_len)
{
    static const char *const schemes[] = {"Bearer ", "DPoP "};
    for (size_t i = 0; i < ELEMENTSOF(schemes); i++) {
        size_t n = strlen(schemes[i]);
        if (len >= n && strncasecmp(value, schemes[i], n) == 0) {
            *ret_token = value + n;
            *ret_len = len - n;
            return true;
        }
    }
    return false;
}

const char *helper_header_refusal(const char *name, const char *value, size_t len)
{
    /* the name first: no value makes such a header one that may be added */
    const char *why = name ? helper_header_framing(name) : NULL;
    if (why)
        return why;
    if (len == 0)
        return "the value is empty";
    if (!helper_header_value_valid(value, len))
        return "the value has a control character (CR, LF, NUL and the like are refused)";
    if (!header_value_safe(value, len))
        return "the value begins or ends with a space or a tab";
    const char *token = NULL;
    size_t token_len = 0;
    if (name && strcasecmp(name, "Authorization") == 0 &&
        token_scheme(value, len, &token, &token_len) && !b64token_valid(token, token_len))
        return "the bearer token is not an RFC 6750 token (letters, digits and -._~+/, then "
               "'=' only at the end)";
    return NULL;
}

const char *helper_headers_get(const struct helper_headers *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcasecmp(a->v[i].name, name) == 0)
            return a->v[i].value;
    return NULL;
}

int helper_headers_add(struct helper_headers *a, const char *name, const char *value, size_t len,
                       struct err *e)
{
    if (!helper_header_name_valid(name, strlen(name)))
        return err_set(e, -EINVAL,
                       "a header name is not an HTTP token (letters, digits and "
                       "!#$%%&'*+-.^_`|~)");
    const char *why = helper_header_refusal(name, value, len);
    if (why)
        return err_set(e, -EINVAL, "header '%s': %s", name, why);
    if (!utf8_valid(value, len))
        return err_set(e, -EINVAL, "header '%s': the value is not valid UTF-8", name);
    if (helper_headers_get(a, name))
        return err_set(e, -EINVAL, "header '%s' appears twice", name);
    if (a->n == a->alloc) {
        size_t alloc = a->alloc ? a->alloc * 2 : 4;
        struct helper_header *v =
            alloc > SIZE_MAX / sizeof(*v) ? NULL : realloc(a->v, alloc * sizeof(*v));
        if (!v)
            return err_set(e, -ENOMEM, "out of memory");
        a->v = v;
        a->alloc = alloc;
    }
    struct helper_header h = {
        .name = strdup(name), .value = dup_secret(value, len), .value_len = len};
    if (!h.name || !h.value) {
        free(h.name);
        if (h.value)
            secure_free_len(h.value, len);
        return err_set(e, -ENOMEM, "out of memory");
    }
    a->v[a->n++] = h;
    return 0;
}

void helper_headers_release(struct helper_headers *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->v[i].name);
        secure_free_len(a->v[i].value, a->v[i].value_len);
    }
    free(a->v);
    dpop_key_unref(a->dpop);
    *a = (struct helper_headers){0};
}

int helper_headers_write(const struct helper_headers *a, struct buf *out)
{
    int r = buf_append_str(out, "{\"headers\":{");
    for (size_t i = 0; r >= 0 && i < a->n; i++) {
        if (i > 0)
            r = buf_append_char(out, ',');
        if (r >= 0)
            r = jsonw_string(out, a->v[i].name, strlen(a->v[i].name));
        if (r >= 0)
            r = buf_append_char(out, ':');
        if (r >= 0)
            r = jsonw_string(out, a->v[i].value, a->v[i].value_len);
    }
    if (r >= 0)
        r = buf_append_char(out, '}');
    if (r >= 0 && a->expires_at > 0)
        r = buf_printf(out, ",\"expires_at\":%lld", (long long)a->expires_at);
    if (r >= 0 && a->dpop) {
        r = buf_append_str(out, ",\"dpop\":{\"alg\":\"" DPOP_ALG "\",\"jwk\":");
        if (r >= 0)
            r = dpop_key_write_jwk(a->dpop, out);
        if (r >= 0)
            r = buf_append_char(out, '}');
    }
    if (r >= 0)
        r = buf_printf(out, ",\"version\":%d}\n",
                       a->dpop ? HELPER_HEADERS_VERSION : HELPER_HEADERS_VERSION_BEARER);
    return r;
}

/* "dpop": {"alg": "ES256", "jwk": {...}}; the JSON's copy of the key is wiped by the caller. */
static int read_dpop(struct json_object *v, struct helper_headers *a, struct err *e)
{
    struct json_object *alg = NULL, *jwk = NULL;
    if (!json_object_is_type(v, json_type_object))
        return type_error(e, "\"dpop\"", "an object", v);
    if (!json_object_object_get_ex(v, "alg", &alg) || !json_object_is_type(alg, json_type_string))
        return err_set(e, -EBADMSG, "\"dpop\": \"alg\" must be a string");
    if (strcmp(json_object_get_string(alg), DPOP_ALG) != 0)
        return err_set(e, -EBADMSG, "\"dpop\": unsupported algorithm (only " DPOP_ALG ")");
    if (!json_object_object_get_ex(v, "jwk", &jwk))
        return err_set(e, -EBADMSG, "\"dpop\": \"jwk\" is missing");
    struct dpop_key *k = NULL;
    struct err ke = {0};
    int r = dpop_key_from_json(jwk, &k, &ke);
    if (r < 0)
        return err_set(e, -EBADMSG, "\"dpop\": %s", err_msg(&ke));
    dpop_key_unref(a->dpop);
    a->dpop = k;
    return 0;
}

static int read_header(struct json_object *v, const char *name, size_t count,
                       struct helper_headers *a, struct err *e)
{
    size_t n = strlen(name);
    char desc[96], what[128];
    if (!helper_header_name_valid(name, n))
        return err_set(e, -EBADMSG,
                       "\"headers\": member %zu: the name is not an HTTP token (letters, digits "
                       "and !#$%%&'*+-.^_`|~)",
                       count);
    describe_name("header", name, n, count, desc, sizeof(desc));
    (void)snprintf(what, sizeof(what), "\"headers\": %s", desc);
    if (!json_object_is_type(v, json_type_string))
        return type_error(e, what, "a string", v);
    const char *value = json_object_get_string(v);
    size_t len = (size_t)json_object_get_string_len(v);
    const char *why = helper_header_refusal(name, value, len);
    if (why)
        return err_set(e, -EBADMSG, "%s: %s", what, why);
    if (helper_headers_get(a, name)) /* in another case: json-c's keys are case-sensitive */
        return err_set(e, -EBADMSG, "%s appears twice", what);
    return helper_headers_add(a, name, value, len, e);
}

static int read_headers_object(struct json_object *v, struct helper_headers *a, struct err *e)
{
    size_t count = 0;
    int r = 0;
    if (!json_object_is_type(v, json_type_object))
        return type_error(e, "\"headers\"", "an object", v);
    json_object_object_foreach(v, name, value)
    {
        r = read_header(value, name, ++count, a, e);
        if (r < 0)
            break;
    }
    return r;
}

int helper_headers_parse(const char *text, size_t len, struct helper_headers *ret, struct err *e)
{
    struct helper_headers a = {0};
    struct json_object *root = NULL;
    bool headers = false;
    int r = reader_parse(text, len, ANSWER_HEADERS, &root, e);
    if (r < 0)
        return r;
    json_object_object_foreach(root, k, v)
    {
        if (strcmp(k, "version") == 0) {
            r = read_version(v, HELPER_HEADERS_VERSION, e);
        } else if (strcmp(k, "dpop") == 0) {
            r = read_dpop(v, &a, e);
        } else if (strcmp(k, "headers") == 0) {
            r = read_headers_object(v, &a, e);
            headers = true;
        } else if (strcmp(k, "expires_at") == 0) {
            r = read_positive_int(v, "\"expires_at\"", &a.expires_at, e);
        }
        if (r < 0)
            break;
    }
    if (r >= 0 && !headers)
        r = err_set(e, -EBADMSG, "the answer has no \"headers\" object");
    json_wipe_strings(root);
    json_object_put(root);
    if (r < 0) {
        helper_headers_release(&a);
        return r;
    }
    *ret = a;
    return 0;
}
