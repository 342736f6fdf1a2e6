/* challenge.c - WWW-Authenticate, parsed as RFC 9110 section 11 says
 *
 *   challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 *   token68    = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
 *
 * The header value is itself a comma-separated list of challenges, and a challenge's params are
 * a comma-separated list too, so after a comma the next item is a param of the current challenge
 * when it is a token followed by BWS "=", and a new challenge otherwise. Right after a scheme and
 * its space, a token68 is recognised by what follows it: only optional whitespace and then a
 * comma or the end ("Negotiate abc==" is a token68, "Bearer realm=x" is a param).
 *
 * Leniencies, each harmless: HTAB counts as whitespace wherever SP does, and params after
 * "Scheme," (no space before the comma) still belong to Scheme. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"

#include "credkit/challenge.h"

#define CHALLENGE_HEADER_MAX (16u * 1024u) /* bytes in one header value */
#define CHALLENGE_PARAMS_MAX 64            /* params in one challenge */
#define CHALLENGES_MAX       64            /* challenges in one header value */
#define NAME_SHOWN_MAX       64            /* bytes of a param name quoted in a message */

struct parser {
    const char *s;
    size_t len;
    size_t pos;
    struct err *e;
};

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* RFC 9110 section 5.6.2 */
static bool is_tchar(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token68_char(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || (c != 0 && strchr("-._~+/", c));
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* qdtext and the second byte of a quoted-pair: HTAB, SP, VCHAR, obs-text */
static bool is_qtext(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int fail(struct parser *p, size_t at, const char *what)
{
    return err_set(p->e, -EBADMSG, "WWW-Authenticate: %s at offset %zu", what, at);
}

/* What is wrong with the byte at `at`, where a token had to start. */
static int fail_unexpected(struct parser *p, size_t at, const char *expected)
{
    unsigned char c = (unsigned char)p->s[at];
    if (c == '=')
        return fail(p, at, "'=' without a name before it");
    if (c < 0x20 || c == 0x7f)
        return fail(p, at, "control character");
    if (c >= 0x80)
        return fail(p, at, "non-ASCII byte outside a quoted string");
    return err_set(p->e, -EBADMSG, "WWW-Authenticate: %s, not '%c', at offset %zu", expected,
                   (char)c, at);
}

static size_t skip_ws(const struct parser *p, size_t at)
{
    while (at < p->len && is_ws(p->s[at]))
        at++;
    return at;
}

static size_t span_token(const struct parser *p, size_t at)
{
    size_t n = 0;
    while (at + n < p->len && is_tchar((unsigned char)p->s[at + n]))
        n++;
    return n;
}

/* p->pos is at the opening quote; on success p->pos is past the closing one. Caller frees. */
static int parse_quoted(struct parser *p, char **ret)
{
    struct buf b;
    size_t start = p->pos, i = p->pos + 1;
    int r;

    buf_init(&b, CHALLENGE_HEADER_MAX);
    for (;;) {
        if (i >= p->len) {
            r = fail(p, start, "unterminated quoted string");
            goto out;
        }
        unsigned char c = (unsigned char)p->s[i];
        if (c == '"') {
            i++;
            break;
        }
        if (c == '\\') {
            if (++i >= p->len) {
                r = fail(p, start, "unterminated quoted string");
                goto out;
            }
            c = (unsigned char)p->s[i];
        }
        if (!is_qtext(c)) {
            r = fail(p, i, "control character in a quoted string");
            goto out;
        }
        r = buf_append_char(&b, (char)c);
        if (r < 0)
            goto out;
        i++;
    }
    char *v = buf_detach(&b);
    if (!v) {
        r = -ENOMEM;
        goto out;
    }
    p->pos = i;
    *ret = v;
    r = 0;
out:
    buf_release(&b);
    return r;
}

static void challenge_release(struct auth_challenge *c)
{
    for (size_t i = 0; i < c->n_params; i++) {
        free(c->params[i].name);
        free(c->params[i].value);
    }
    free(c->params);
    free(c->scheme);
    free(c->token68);
    *c = (struct auth_challenge){0};
}

void challenges_release(struct auth_challenges *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        challenge_release(&list->v[i]);
    free(list->v);
    list->v = NULL;
    list->n = 0;
}

/* Parses `name = value` at p->pos (the name is n bytes long) into c. */
static int parse_param(struct parser *p, struct auth_challenge *c, size_t n)
{
    size_t name_at = p->pos;
    char *name = NULL, *value = NULL;
    int r;

    if (c->n_params >= CHALLENGE_PARAMS_MAX) {
        r = fail(p, name_at, "more than 64 parameters in one challenge");
        goto out;
    }
    name = strndup(p->s + name_at, n);
    if (!name) {
        r = -ENOMEM;
        goto out;
    }
    for (char *q = name; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    for (size_t i = 0; i < c->n_params; i++)
        if (strcmp(c->params[i].name, name) == 0) {
            /* RFC 9110 11.2: each name only once per challenge; two values could be read
             * differently by two parsers */
            r = err_set(p->e, -EBADMSG,
                        "WWW-Authenticate: parameter '%.*s' given twice in one challenge at "
                        "offset %zu",
                        NAME_SHOWN_MAX, name, name_at);
            goto out;
        }

    size_t i = skip_ws(p, name_at + n); /* BWS */
    /* the caller saw the '=' */
    i = skip_ws(p, i + 1);
    if (i >= p->len) {
        r = fail(p, i, "expected a parameter value");
        goto out;
    }
    if (p->s[i] == '"') {
        p->pos = i;
        r = parse_quoted(p, &value);
        if (r < 0)
            goto out;
        i = p->pos;
    } else {
        size_t vn = span_token(p, i);
        if (vn == 0) {
            r = p->s[i] == '=' || p->s[i] == ','
                    ? fail(p, i, "expected a parameter value")
                    : fail_unexpected(p, i,
                                      "expected a parameter value (a token or a quoted string)");
            goto out;
        }
        value = strndup(p->s + i, vn);
        if (!value) {
            r = -ENOMEM;
            goto out;
        }
        i += vn;
    }

    struct auth_param *np = realloc(c->params, (c->n_params + 1) * sizeof(*np));
    if (!np) {
        r = -ENOMEM;
        goto out;
    }
    c->params = np;
    c->params[c->n_params++] = (struct auth_param){.name = name, .value = value};
    name = value = NULL;
    p->pos = i;
    r = 0;
out:
    free(name);
    free(value);
    return r;
}

/* A new challenge whose scheme is the n bytes at p->pos; handles a token68 right after it.
 * *need_param is set when params must follow (the scheme was followed by a space and
 * something that is not a token68). */
static int parse_scheme(struct parser *p, struct auth_challenges *got, size_t n, bool *need_param)
{
    size_t at = p->pos;

    *need_param = false;
    if (got->n >= CHALLENGES_MAX)
        return fail(p, at, "more than 64 challenges in one header");
    struct auth_challenge *nv = realloc(got->v, (got->n + 1) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    got->v = nv;
    struct auth_challenge *c = &got->v[got->n];
    *c = (struct auth_challenge){0};
    c->scheme = strndup(p->s + at, n);
    if (!c->scheme)
        return -ENOMEM;
    got->n++;

    size_t i = at + n;
    if (i >= p->len || p->s[i] == ',') {
        p->pos = i;
        return 0;
    }
    if (!is_ws(p->s[i]))
        return fail_unexpected(p, i, "expected a space or ',' after the auth scheme");
    i = skip_ws(p, i);
    if (i >= p->len || p->s[i] == ',') {
        p->pos = i;
        return 0;
    }

    /* token68: its characters, any '=' padding, then only whitespace up to ',' or the end */
    size_t t = i;
    while (t < p->len && is_token68_char((unsigned char)p->s[t]))
        t++;
    if (t > i) {
        while (t < p->len && p->s[t] == '=')
            t++;
        size_t u = skip_ws(p, t);
        if (u >= p->len || p->s[u] == ',') {
            c->token68 = strndup(p->s + i, t - i);
            if (!c->token68)
                return -ENOMEM;
            p->pos = u;
            return 0;
        }
    }
    p->pos = i;
    *need_param = true;
    return 0;
}

/* A "name=value" item at at (the name n bytes long, the '=' at q): a parameter of the last
 * challenge in got, followed by ',' or the end. */
static int param_item(struct parser *p, struct auth_challenges *got, size_t at, size_t n, size_t q)
{
    struct auth_challenge *c = got->n ? &got->v[got->n - 1] : NULL;
    if (!c) {
        /* "Bearer =x" reads best as a scheme followed by a stray '=' */
        return q > at + n ? fail(p, q, "'=' without a name before it")
                          : fail(p, at, "parameter before any auth scheme");
    }
    if (c->token68)
        return fail(p, at, "parameter in a challenge that has a token68");
    int r = parse_param(p, c, n);
    if (r < 0)
        return r;
    size_t after = skip_ws(p, p->pos);
    if (after < p->len && p->s[after] != ',')
        return fail_unexpected(p, after, "expected ',' after the parameter");
    p->pos = after;
    return 0;
}

/* Moves the challenges of got to the end of list; their number, or -ENOMEM (got untouched). */
static int append_challenges(struct auth_challenges *list, struct auth_challenges *got)
{
    if (got->n == 0)
        return 0;
    struct auth_challenge *nv = realloc(list->v, (list->n + got->n) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    memcpy(nv + list->n, got->v, got->n * sizeof(*nv));
    list->v = nv;
    list->n += got->n;
    free(got->v);
    int r = (int)got->n;
    *got = (struct auth_challenges){0};
    return r;
}

int challenges_parse(const char *header, struct auth_challenges *list, struct err *e)
{
    struct auth_challenges got = {0};
    struct parser p = {.s = header, .e = e};
    bool need_param = false;
    int r;

    if (!header || !list) {
        r = err_set(e, -EINVAL, "WWW-Authenticate: no header value");
        goto out;
    }
    p.len = strnlen(header, CHALLENGE_HEADER_MAX + 1);
    if (p.len > CHALLENGE_HEADER_MAX) {
        r = err_set(e, -EBADMSG, "WWW-Authenticate: header value longer than %u bytes",
                    CHALLENGE_HEADER_MAX);
        goto out;
    }

    for (;;) {
        p.pos = skip_ws(&p, p.pos);
        if (p.pos >= p.len)
            break;
        if (p.s[p.pos] == ',') {
            p.pos++;
            continue;
        }
        size_t at = p.pos;
        size_t n = span_token(&p, at);
        if (n == 0) {
            r = fail_unexpected(&p, at,
                                got.n ? "expected an auth scheme or a parameter name"
                                      : "expected an auth scheme");
            goto out;
        }
        size_t q = skip_ws(&p, at + n);
        if (q < p.len && p.s[q] == '=') {
            r = param_item(&p, &got, at, n, q);
            if (r < 0)
                goto out;
            need_param = false;
            continue;
        }
        if (need_param) {
            r = fail_unexpected(&p, q < p.len ? q : p.len, "expected '=' after the parameter name");
            goto out;
        }
        p.pos = at;
        r = parse_scheme(&p, &got, n, &need_param);
        if (r < 0)
            goto out;
    }

    r = append_challenges(list, &got);
out:
    if (r == -ENOMEM)
        r = err_set(e, -ENOMEM, "out of memory");
    challenges_release(&got);
    return r;
}

const struct auth_challenge *challenges_find(const struct auth_challenges *list, const char *scheme)
{
    if (!list || !scheme)
        return NULL;
    for (size_t i = 0; i < list->n; i++)
        if (strcasecmp(list->v[i].scheme, scheme) == 0)
            return &list->v[i];
    return NULL;
}

const char *challenge_param(const struct auth_challenge *c, const char *name)
{
    if (!c || !name)
        return NULL;
    for (size_t i = 0; i < c->n_params; i++)
        if (strcasecmp(c->params[i].name, name) == 0)
            return c->params[i].value;
    return NULL;
}
