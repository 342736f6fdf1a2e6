/* mcp_config.c - the layered MCP server configuration (mcp.json files)
 *
 * Loading is two passes. The first reads every layer and collects (name, entry) candidates; the
 * second sorts them by name, keeps the one from the highest layer for each name, and only then
 * validates and expands: an entry that a higher layer replaces is never looked at, so its
 * variables are never looked up (the lookup may end up asking `secrets`). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/url.h"
#include "credkit/util.h"

#define CONFIG_MAX_BYTES (4u * 1024u * 1024u)
#define SERVER_NAME_MAX  128                  /* characters */
#define VAR_NAME_MAX     256                  /* bytes */
#define EXPANDED_MAX     (256u * 1024u)       /* one expanded value */
#define MS_MAX           (24LL * 3600 * 1000) /* timeouts: one day */
#define MAX_FILES        5
#define DISP_MAX         96 /* names and words quoted in messages */
#define SCHEME_WORD_MAX  16 /* characters of a scheme quoted in a message */

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

struct mcp_file {
    char *path; /* absolute */
    bool exists;
};

struct mcp_config {
    struct mcp_server **servers; /* sorted by name */
    size_t n_servers;
    struct mcp_config_diag *diags;
    size_t n_diags;
    struct mcp_file files[MAX_FILES];
    size_t n_files;
    enum mcp_tool_prefix tool_prefix;
};

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* Room for a quoted word: DISP_MAX bytes, an escape or a UTF-8 sequence past it, "...". */
#define DISP_BUF (DISP_MAX + 16)

/* A copy of s[0..n) fit to quote in a message: control characters as \xHH, cut after DISP_MAX
 * bytes (at a character boundary). */
static void disp_n(char out[DISP_BUF], const char *s, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n && *p;
         p++) {
        if (o >= DISP_MAX && (*p & 0xc0) != 0x80) {
            memcpy(out + o, "...", 4);
            return;
        }
        if (*p < 0x20 || *p == 0x7f) {
            (void)snprintf(out + o, 5, "\\x%02x", *p);
            o += 4;
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
}

static void disp(char out[DISP_BUF], const char *s)
{
    disp_n(out, s, strlen(s));
}

/* ---- string vectors ---------------------------------------------------------------------- */

struct strv {
    char **v; /* NULL-terminated once anything was pushed */
    size_t n, cap;
};

static void strv_release(struct strv *sv, bool secret)
{
    for (size_t i = 0; i < sv->n; i++) {
        if (secret)
            secure_free(sv->v[i]);
        else
            free(sv->v[i]);
    }
    free(sv->v);
    sv->v = NULL;
    sv->n = sv->cap = 0;
}

/* Takes s (also on failure, when it is freed). */
static int strv_push(struct strv *sv, char *s)
{
    if (!s)
        return -ENOMEM;
    if (sv->n + 1 >= sv->cap) {
        size_t cap = sv->cap ? sv->cap * 2 : 4;
        char **v = realloc(sv->v, cap * sizeof(*v));
        if (!v) {
            free(s);
            return -ENOMEM;
        }
        sv->v = v;
        sv->cap = cap;
    }
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
    return 0;
}

static bool strv_contains(const struct strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0)
            return true;
    return false;
}

/* The vector, never NULL (an empty one is allocated); NULL on ENOMEM. */
static char **strv_take(struct strv *sv)
{
    if (!sv->v) {
        sv->v = calloc(1, sizeof(char *));
        if (!sv->v)
            return NULL;
    }
    char **v = sv->v;
    sv->v = NULL;
    sv->n = sv->cap = 0;
    return v;
}

static void strv_free(char **v, bool secret)
{
    if (!v)
        return;
    for (char **p = v; *p; p++) {
        if (secret)
            secure_free(*p);
        else
            free(*p);
    }
    free(v);
}

/* ---- templates --------------------------------------------------------------------------- */

struct scan_ops {
    int (*lit)(void *ud, const char *p, size_t n); /* literal text; NULL: ignored */
    int (*var)(void *ud, const char *name);        /* a ${NAME}; NULL: ignored */
};

static int scan_flush(const struct scan_ops *ops, void *ud, const char *p, size_t n)
{
    return ops->lit && n > 0 ? ops->lit(ud, p, n) : 0;
}

/* Walks tmpl: "$$" is one literal "$", "${NAME}" a variable, any other "$" itself. Syntax errors
 * are -EINVAL with a message giving the position (never the text: it may hold a secret). */
static int template_scan(const char *tmpl, const struct scan_ops *ops, void *ud, struct err *e)
{
    const char *p = tmpl, *run = tmpl;
    int r;

    while (*p) {
        if (p[0] != '$') {
            p++;
            continue;
        }
        if (p[1] == '$') {
            r = scan_flush(ops, ud, run, (size_t)(p + 1 - run));
            if (r < 0)
                return r;
            p += 2;
            run = p;
            continue;
        }
        if (p[1] != '{') {
            p++;
            continue;
        }
        r = scan_flush(ops, ud, run, (size_t)(p - run));
        if (r < 0)
            return r;
        size_t at = (size_t)(p - tmpl) + 1;
        const char *start = p + 2, *end = strchr(start, '}');
        if (!end)
            return bad(e,
                       "unterminated \"${\" at character %zu: close it with \"}\", or write "
                       "\"$${\" for a literal \"${\"",
                       at);
        size_t n = (size_t)(end - start);
        char name[VAR_NAME_MAX + 1];
        if (n > 0 && n <= VAR_NAME_MAX) {
            memcpy(name, start, n);
            name[n] = 0;
        }
        if (n == 0 || n > VAR_NAME_MAX || !name_is_valid(name))
            return bad(e,
                       "invalid variable name in \"${...}\" at character %zu: use letters, "
                       "digits and '_', not starting with a digit",
                       at);
        if (ops->var) {
            r = ops->var(ud, name);
            if (r < 0)
                return r;
        }
        p = end + 1;
        run = p;
    }
    return scan_flush(ops, ud, run, (size_t)(p - run));
}

struct vars_ctx {
    void (*fn)(const char *name, void *userdata);
    void *userdata;
};

static int vars_var(void *ud, const char *name)
{
    struct vars_ctx *c = ud;
    c->fn(name, c->userdata);
    return 0;
}

void mcp_template_vars(const char *tmpl, void (*fn)(const char *name, void *userdata),
                       void *userdata)
{
    if (!tmpl || !fn)
        return;
    struct vars_ctx c = {fn, userdata};
    const struct scan_ops ops = {NULL, vars_var};
    (void)template_scan(tmpl, &ops, &c, NULL);
}

static int env_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    const char *v = getenv(name);
    if (!v)
        return -ENOENT;
    char *c = strdup(v);
    if (!c)
        return oom(e);
    *ret = c;
    return 0;
}

struct expand_ctx {
    mcp_lookup_fn lookup;
    void *userdata;
    struct buf out;       /* secret */
    struct strv *missing; /* NULL: the first missing variable is the error */
    bool any_missing;
    struct err *e;
};

static int expand_lit(void *ud, const char *p, size_t n)
{
    struct expand_ctx *c = ud;
    if (c->any_missing) /* the result is thrown away anyway */
        return 0;
    int r = buf_append(&c->out, p, n);
    if (r == -E2BIG)
        return bad(c->e, "the value is longer than %u bytes after expanding variables",
                   EXPANDED_MAX);
    return r < 0 ? oom(c->e) : 0;
}

static int expand_var(void *ud, const char *name)
{
    struct expand_ctx *c = ud;
    struct err le = ERR_INIT;
    char *val = NULL;
    int r = c->lookup(c->userdata, name, &val, &le);
    if (r == -ENOENT) {
        c->any_missing = true;
        if (!c->missing)
            return err_set(c->e, -ENOENT, "variable '%s' is not set", name);
        if (strv_contains(c->missing, name))
            return 0;
        return strv_push(c->missing, strdup(name)) < 0 ? oom(c->e) : 0;
    }
    if (r < 0) {
        if (r == -ENOMEM)
            return oom(c->e);
        return err_set(c->e, r, "cannot look up variable '%s': %s", name, err_msg(&le));
    }
    r = expand_lit(c, val ? val : "", val ? strlen(val) : 0);
    secure_free(val);
    return r;
}

/* Expands tmpl. With missing, every unset variable is added to it (once) and the result is
 * -ENOENT (without a message) when there was any; without, the first one is the error. */
static int expand_ex(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct strv *missing,
                     char **ret, struct err *e)
{
    struct expand_ctx c = {lookup ? lookup : env_lookup, userdata, {0}, missing, false, e};
    const struct scan_ops ops = {expand_lit, expand_var};
    int r;

    buf_init_secret(&c.out, EXPANDED_MAX);
    r = template_scan(tmpl, &ops, &c, e);
    if (r < 0)
        goto out;
    if (c.any_missing) {
        r = -ENOENT;
        goto out;
    }
    char *s = buf_detach(&c.out);
    if (!s) {
        r = oom(e);
        goto out;
    }
    *ret = s;
    r = 0;
out:
    buf_release(&c.out);
    return r;
}

int mcp_expand(const char *tmpl, mcp_lookup_fn lookup, void *userdata, char **ret, struct err *e)
{
    if (!tmpl)
        return bad(e, "no template to expand");
    return expand_ex(tmpl, lookup, userdata, NULL, ret, e);
}

/* ---- URLs -------------------------------------------------------------------------------- */

/* The server URL, after expansion: what url_canonical() accepts (absolute http(s), a host, no
 * credentials). The message never quotes the URL: a query may hold a key, a variable a secret. */
static int check_server_url(const char *url, bool had_vars, struct err *e)
{
    const char *after = had_vars ? " after expanding variables" : "";
    size_t n = url_scheme_len(url);
    char *canon = NULL;
    int r;

    if (n > 0 && n <= SCHEME_WORD_MAX && strncasecmp(url, "http:", 5) != 0 &&
        strncasecmp(url, "https:", 6) != 0) {
        char word[DISP_BUF];
        disp_n(word, url, n);
        return bad(e, "\"url\" must be an http:// or https:// URL%s, not '%s:'", after, word);
    }
    if (url_has_userinfo(url))
        return bad(e, "\"url\" must not contain a user name or password: put credentials in "
                      "\"headers\" or use \"auth\"");
    r = url_canonical(url, &canon, NULL);
    free(canon);
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return bad(e,
                   "\"url\" is not a valid http:// or https:// URL%s: expected one like "
                   "'https://mcp.example.com/mcp'",
                   after);
    return 0;
}

/* oauth.clientMetadataUrl: https with a path (the document), or http on a loopback host. */
static int check_metadata_url(const char *url, struct err *e)
{
    char *canon = NULL, *path = NULL;
    bool ok = false;
    int r = url_canonical(url, &canon, NULL);
    if (r >= 0 && strncmp(canon, "https://", 8) == 0) {
        r = url_path(canon, &path);
        ok = r >= 0 && strcmp(path, "/") != 0;
    } else if (r >= 0) {
        ok = url_is_loopback(canon);
    }
    free(canon);
    free(path);
    if (r == -ENOMEM)
        return oom(e);
    if (!ok)
        return bad(e, "\"oauth.clientMetadataUrl\" must be an https:// URL with a path (the "
                      "client metadata document), or http:// on a loopback address");
    return 0;
}

/* oauth.redirectUri: an http loopback redirect (RFC 8252 7.3), where the bridge listens. */
/* The loopback listener serves 127.0.0.1:<port>/callback: a fixed redirect URI must be one it
 * can receive, or the sign-in would wait for a request that can never arrive. */
static int check_redirect_uri(const char *url, struct err *e)
{
    static const char *const hosts[] = {"http://127.0.0.1:", "http://localhost:"};
    bool ok = false;
    for (size_t i = 0; i < ELEMENTSOF(hosts) && !ok; i++) {
        size_t n = strlen(hosts[i]);
        if (strncmp(url, hosts[i], n) != 0)
            continue;
        const char *p = url + n;
        size_t digits = strspn(p, "0123456789");
        long port = digits > 0 && digits <= 5 ? strtol(p, NULL, 10) : 0;
        ok = port > 0 && port <= 65535 && strcmp(p + digits, "/callback") == 0;
    }
    if (!ok)
        return bad(e, "\"oauth.redirectUri\" must be 'http://127.0.0.1:PORT/callback' (or "
                      "localhost) with an explicit port: that is where mcp-auth listens");
    return 0;
}

/* ---- entries ----------------------------------------------------------------------------- */

/* The value of key; NULL when absent or null (a null counts as absent). */
static struct json_object *member(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static const char *type_of(struct json_object *v)
{
    return json_type_desc(json_object_get_type(v));
}

enum {
    STR_NONBLANK = 1 << 0, /* not empty, not only whitespace */
};

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return false;
    return true;
}

/* A JSON string as a C string: no NUL inside. */
static int string_value(struct json_object *v, const char *label, unsigned flags, const char **ret,
                        struct err *e)
{
    if (!json_object_is_type(v, json_type_string))
        return bad(e, "%s must be a string, not %s", label, type_of(v));
    const char *s = json_object_get_string(v);
    if (strlen(s) != (size_t)json_object_get_string_len(v))
        return bad(e, "%s must not contain a NUL character", label);
    if ((flags & STR_NONBLANK) && is_blank(s))
        return bad(e, "%s must not be blank", label);
    *ret = s;
    return 0;
}

/* An optional string member, copied; *ret untouched when absent. */
static int get_string(struct json_object *o, const char *key, const char *label, unsigned flags,
                      char **ret, struct err *e)
{
    struct json_object *v = member(o, key);
    const char *s = NULL;
    char lbl[128];
    if (!v)
        return 0;
    (void)snprintf(lbl, sizeof(lbl), "\"%s\"", label);
    int r = string_value(v, lbl, flags, &s, e);
    if (r < 0)
        return r;
    char *c = strdup(s);
    if (!c)
        return oom(e);
    free(*ret);
    *ret = c;
    return 0;
}

static int get_bool(struct json_object *o, const char *key, const char *label, bool *ret,
                    struct err *e)
{
    struct json_object *v = member(o, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(e, "\"%s\" must be true or false, not %s", label, type_of(v));
    *ret = json_object_get_boolean(v);
    return 0;
}

/* A positive whole number of milliseconds, at most a day. */
static int get_ms(struct json_object *o, const char *key, int64_t *ret, struct err *e)
{
    struct json_object *v = member(o, key);
    int64_t x;
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_int)) {
        x = json_object_get_int64(v);
        if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
            return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %llu", key,
                       MS_MAX, (unsigned long long)json_object_get_uint64(v));
        if (x <= 0)
            return bad(e, "\"%s\" must be a positive number of milliseconds, not %lld", key,
                       (long long)x);
        if (x > MS_MAX)
            return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %lld", key,
                       MS_MAX, (long long)x);
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d <= 0)
            return bad(e, "\"%s\" must be a positive number of milliseconds, not %g", key, d);
        if (d > (double)MS_MAX)
            return bad(e, "\"%s\" must be at most %lld milliseconds (one day), not %g", key, MS_MAX,
                       d);
        /* 0 < d <= MS_MAX: the conversion is defined (and no libm needed for floor) */
        x = (int64_t)d;
        if ((double)x != d)
            return bad(e, "\"%s\" must be a whole number of milliseconds, not %g", key, d);
    } else {
        return bad(e, "\"%s\" must be a positive number of milliseconds, not %s", key, type_of(v));
    }
    *ret = x;
    return 0;
}

/* An optional array of strings; an empty vector when absent. */
static int get_string_array(struct json_object *o, const char *key, char ***ret, struct err *e)
{
    struct json_object *v = member(o, key);
    struct strv sv = {0};
    int r;

    if (v && !json_object_is_type(v, json_type_array)) {
        r = bad(e, "\"%s\" must be an array of strings, not %s", key, type_of(v));
        goto out;
    }
    size_t n = v ? json_object_array_length(v) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *it = json_object_array_get_idx(v, i);
        const char *s;
        char lbl[128];
        (void)snprintf(lbl, sizeof(lbl), "\"%s\"[%zu]", key, i);
        if (!it) {
            r = bad(e, "%s must be a string, not null", lbl);
            goto out;
        }
        r = string_value(it, lbl, 0, &s, e);
        if (r < 0)
            goto out;
        if (strv_push(&sv, strdup(s)) < 0) {
            r = oom(e);
            goto out;
        }
    }
    char **out = strv_take(&sv);
    if (!out) {
        r = oom(e);
        goto out;
    }
    strv_free(*ret, false);
    *ret = out;
    r = 0;
out:
    strv_release(&sv, false);
    return r;
}

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_header_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_tchar(*s))
            return false;
    return true;
}

/* "env" (NAME=value) or "headers" (Name: value): an optional object of strings; an empty vector
 * when absent. The values may be literal secrets: they are wiped on free, never quoted. */
static int get_string_map(struct json_object *o, const char *key, bool headers, char ***ret,
                          struct err *e)
{
    struct json_object *v = member(o, key);
    struct strv sv = {0};
    int r;

    if (v && !json_object_is_type(v, json_type_object)) {
        r = bad(e, "\"%s\" must be an object of strings, not %s", key, type_of(v));
        goto out;
    }
    if (v) {
        json_object_object_foreach(v, k, val)
        {
            char kd[DISP_BUF], lbl[DISP_BUF + 32];
            const char *s;
            disp(kd, k);
            if (headers ? !is_header_name(k) : (!*k || strchr(k, '='))) {
                r = headers ? bad(e, "'%s' in \"headers\" is not a valid HTTP header name", kd)
                            : bad(e,
                                  "'%s' in \"env\" is not a valid variable name: it must "
                                  "be non-empty, without '='",
                                  kd);
                goto out;
            }
            (void)snprintf(lbl, sizeof(lbl), "%s '%s'", headers ? "header" : "\"env\" value", kd);
            if (!val) {
                r = bad(e, "%s must be a string, not null", lbl);
                goto out;
            }
            r = string_value(val, lbl, 0, &s, e);
            if (r < 0)
                goto out;
            char *line = NULL;
            if (asprintf(&line, headers ? "%s: %s" : "%s=%s", k, s) < 0) {
                r = oom(e);
                goto out;
            }
            if (strv_push(&sv, line) < 0) {
                r = oom(e);
                goto out;
            }
        }
    }
    char **out = strv_take(&sv);
    if (!out) {
        r = oom(e);
        goto out;
    }
    strv_free(*ret, true);
    *ret = out;
    r = 0;
out:
    strv_release(&sv, true);
    return r;
}

/* One of the given words; *ret is the index. */
static int get_enum(struct json_object *o, const char *key, const char *label,
                    const char *const *words, const char *expect, int *ret, struct err *e)
{
    struct json_object *v = member(o, key);
    const char *s;
    char lbl[128], wd[DISP_BUF];
    if (!v)
        return 0;
    (void)snprintf(lbl, sizeof(lbl), "\"%s\"", label);
    int r = string_value(v, lbl, 0, &s, e);
    if (r < 0)
        return r;
    for (int i = 0; words[i]; i++)
        if (strcmp(s, words[i]) == 0) {
            *ret = i;
            return 0;
        }
    disp(wd, s);
    return bad(e, "%s must be %s, not '%s'", lbl, expect, wd);
}

static int parse_oauth(struct json_object *o, struct mcp_oauth *oa, struct err *e)
{
    static const char *const grants[] = {"authorization_code", "client_credentials", "jwt-bearer",
                                         NULL};
    static const char *const algs[] = {"ES256", "RS256", NULL};
    int r, i = -1;
    bool send_resource = true;

    if (!json_object_is_type(o, json_type_object))
        return bad(e, "\"oauth\" must be an object, not %s", type_of(o));
    if ((r = get_string(o, "clientId", "oauth.clientId", STR_NONBLANK, &oa->client_id, e)) < 0 ||
        (r = get_string(o, "clientSecret", "oauth.clientSecret", STR_NONBLANK, &oa->client_secret,
                        e)) < 0 ||
        (r = get_string(o, "clientMetadataUrl", "oauth.clientMetadataUrl", 0,
                        &oa->client_metadata_url, e)) < 0 ||
        (r = get_string(o, "scope", "oauth.scope", 0, &oa->scope, e)) < 0 ||
        (r = get_string(o, "redirectUri", "oauth.redirectUri", 0, &oa->redirect_uri, e)) < 0 ||
        (r = get_string(o, "privateKeyFile", "oauth.privateKeyFile", STR_NONBLANK,
                        &oa->private_key_file, e)) < 0 ||
        (r = get_bool(o, "refreshScope", "oauth.refreshScope", &oa->refresh_sends_scope, e)) < 0 ||
        (r = get_bool(o, "sendResource", "oauth.sendResource", &send_resource, e)) < 0)
        return r;
    oa->omit_resource = !send_resource;

    r = get_enum(o, "grant", "oauth.grant", grants,
                 "\"authorization_code\", \"client_credentials\" or \"jwt-bearer\"", &i, e);
    if (r < 0)
        return r;
    if (i >= 0 && !(oa->grant = strdup(grants[i])))
        return oom(e);
    i = -1;
    r = get_enum(o, "privateKeyAlg", "oauth.privateKeyAlg", algs, "\"ES256\" or \"RS256\"", &i, e);
    if (r < 0)
        return r;
    if (i >= 0 && !(oa->private_key_alg = strdup(algs[i])))
        return oom(e);

    struct json_object *idp = member(o, "idp");
    if (idp) {
        if (!json_object_is_type(idp, json_type_object))
            return bad(e, "\"oauth.idp\" must be an object, not %s", type_of(idp));
        if ((r = get_string(idp, "issuer", "oauth.idp.issuer", STR_NONBLANK, &oa->idp_issuer, e)) <
                0 ||
            (r = get_string(idp, "tokenEndpoint", "oauth.idp.tokenEndpoint", STR_NONBLANK,
                            &oa->idp_token_endpoint, e)) < 0 ||
            (r = get_string(idp, "clientId", "oauth.idp.clientId", STR_NONBLANK, &oa->idp_client_id,
                            e)) < 0 ||
            (r = get_string(idp, "clientSecret", "oauth.idp.clientSecret", STR_NONBLANK,
                            &oa->idp_client_secret, e)) < 0 ||
            (r = get_string(idp, "idToken", "oauth.idp.idToken", STR_NONBLANK, &oa->idp_id_token,
                            e)) < 0)
            return r;
        if (!oa->idp_token_endpoint || !oa->idp_id_token)
            return bad(e, "\"oauth.idp\" needs \"tokenEndpoint\" and \"idToken\"");
    }
    if (oa->grant && strcmp(oa->grant, "jwt-bearer") == 0 && !idp)
        return bad(e, "\"oauth.grant\": \"jwt-bearer\" needs an \"oauth.idp\" object");
    if (oa->client_metadata_url && (r = check_metadata_url(oa->client_metadata_url, e)) < 0)
        return r;
    if (oa->redirect_uri && (r = check_redirect_uri(oa->redirect_uri, e)) < 0)
        return r;
    return 0;
}

/* The structure of one entry; -EINVAL with the reason (without file and server) when invalid,
 * -ENOMEM. */
static int parse_entry(struct mcp_server *s, struct json_object *o, struct err *e)
{
    static const char *const types[] = {"stdio",           "http",           "sse",
                                        "streamable-http", "streamableHttp", NULL};
    static const enum mcp_transport type_tr[] = {MCP_TRANSPORT_STDIO, MCP_TRANSPORT_HTTP,
                                                 MCP_TRANSPORT_SSE, MCP_TRANSPORT_HTTP,
                                                 MCP_TRANSPORT_HTTP};
    static const char *const auths[] = {"oauth", "bearer", "none", NULL};
    static const enum mcp_auth_mode auth_mode[] = {MCP_AUTH_OAUTH, MCP_AUTH_BEARER, MCP_AUTH_NONE};
    int r, type = -1, auth = -1;

    if (!json_object_is_type(o, json_type_object))
        return bad(e, "the entry must be an object, not %s", type_of(o));

    struct json_object *url = member(o, "url"), *cmd = member(o, "command");
    if (url && cmd)
        return bad(e, "has both \"url\" and \"command\": keep \"url\" for an HTTP server or "
                      "\"command\" for a stdio one");
    if (!url && !cmd)
        return bad(e, "needs \"url\" (an HTTP server) or \"command\" (a stdio server)");
    if ((r = get_string(o, "url", "url", 0, &s->url, e)) < 0 ||
        (r = get_string(o, "command", "command", STR_NONBLANK, &s->command, e)) < 0)
        return r;

    r = get_enum(o, "type", "type", types, "\"stdio\", \"http\" or \"sse\"", &type, e);
    if (r < 0)
        return r;
    if (type < 0)
        s->transport = url ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO;
    else if (type_tr[type] == MCP_TRANSPORT_STDIO && url)
        return bad(e, "\"type\" is \"stdio\" but the entry has a \"url\": use \"command\", or "
                      "drop \"type\"");
    else if (type_tr[type] != MCP_TRANSPORT_STDIO && cmd)
        return bad(e,
                   "\"type\" is '%s' but the entry has a \"command\": use \"url\", or drop "
                   "\"type\"",
                   types[type]);
    else
        s->transport = type_tr[type];

    if ((r = get_string_array(o, "args", &s->args, e)) < 0 ||
        (r = get_string_map(o, "env", false, &s->env, e)) < 0 ||
        (r = get_string(o, "cwd", "cwd", 0, &s->cwd, e)) < 0 ||
        (r = get_string_map(o, "headers", true, &s->headers, e)) < 0 ||
        (r = get_ms(o, "timeout", &s->timeout_ms, e)) < 0 ||
        (r = get_ms(o, "idleTimeout", &s->idle_timeout_ms, e)) < 0 ||
        (r = get_string(o, "headersHelper", "headersHelper", STR_NONBLANK, &s->headers_helper, e)) <
            0 ||
        (r = get_string(o, "lifecycle", "lifecycle", 0, &s->lifecycle, e)) < 0 ||
        (r = get_string_array(o, "excludeTools", &s->exclude_tools, e)) < 0 ||
        (r = get_string(o, "bearerTokenEnv", "bearerTokenEnv", 0, &s->bearer_token_env, e)) < 0)
        return r;
    if (s->bearer_token_env && !name_is_valid(s->bearer_token_env)) {
        char d[DISP_BUF];
        disp(d, s->bearer_token_env);
        return bad(e,
                   "\"bearerTokenEnv\" must be the name of an environment variable (letters, "
                   "digits and '_'), not '%s'",
                   d);
    }

    struct json_object *oauth = member(o, "oauth");
    if (oauth && (r = parse_oauth(oauth, &s->oauth, e)) < 0)
        return r;

    r = get_enum(o, "auth", "auth", auths, "\"oauth\", \"bearer\" or \"none\"", &auth, e);
    if (r < 0)
        return r;
    if (auth >= 0)
        s->auth = auth_mode[auth];
    else if (oauth)
        s->auth = MCP_AUTH_OAUTH;
    else if (s->bearer_token_env)
        s->auth = MCP_AUTH_BEARER;
    else
        s->auth = MCP_AUTH_NONE;
    if (s->auth == MCP_AUTH_BEARER && !s->bearer_token_env)
        return bad(e, "\"auth\" is \"bearer\" but \"bearerTokenEnv\" is missing: name the "
                      "environment variable that holds the token");
    return 0;
}

static int check_server_name(const char *name, struct err *e)
{
    size_t chars = 0;
    if (!*name)
        return bad(e, "the name must not be empty");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        /* C0, DEL, and C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F); the parser checked UTF-8 */
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return bad(e, "the name must not contain control characters");
        if ((*p & 0xc0) != 0x80)
            chars++;
    }
    if (chars > SERVER_NAME_MAX)
        return bad(e, "the name is longer than %d characters", SERVER_NAME_MAX);
    return 0;
}

/* Expands every template of a structurally valid entry: lists the missing variables, checks
 * the URL and the header values, and wipes what it expanded. -EINVAL/-ENOENT with the reason,
 * -ENOMEM. */
static int expand_entry(struct mcp_server *s, const struct mcp_config_opts *opts, struct err *e)
{
    struct strv missing = {0};
    char *url = NULL, *val = NULL;
    struct buf msg;
    int r;

    buf_init(&msg, ERR_MSG_MAX / 2);
    if (s->url) {
        r = expand_ex(s->url, opts->lookup, opts->lookup_userdata, &missing, &url, e);
        if (r < 0 && r != -ENOENT) {
            (void)err_prefix(e, "\"url\"");
            goto out;
        }
    }
    for (size_t i = 0; s->headers[i]; i++) {
        /* "Name: template"; a header name never contains ':' */
        const char *colon = strchr(s->headers[i], ':');
        char name[DISP_BUF];
        disp_n(name, s->headers[i], (size_t)(colon - s->headers[i]));
        r = expand_ex(colon + 2, opts->lookup, opts->lookup_userdata, &missing, &val, e);
        if (r == -ENOENT)
            continue;
        if (r < 0) {
            (void)err_prefix(e, "header '%s'", name);
            goto out;
        }
        bool crlf = strpbrk(val, "\r\n") != NULL;
        secure_free(val);
        val = NULL;
        if (crlf) {
            r = bad(e, "header '%s' contains a line break after expanding variables", name);
            goto out;
        }
    }
    for (size_t i = 0; s->env[i]; i++) {
        /* "NAME=template"; the name never contains '=' */
        const char *eq = strchr(s->env[i], '=');
        r = expand_ex(eq + 1, opts->lookup, opts->lookup_userdata, &missing, &val, e);
        secure_free(val);
        val = NULL;
        if (r < 0 && r != -ENOENT) {
            char name[DISP_BUF];
            disp_n(name, s->env[i], (size_t)(eq - s->env[i]));
            (void)err_prefix(e, "\"env\" value '%s'", name);
            goto out;
        }
    }
    if (s->oauth.client_secret) {
        /* checked for syntax only: the secret is needed at sign-in and refresh, where a
         * missing variable is reported then; a stored token must stay usable without it */
        struct strv later = {0};
        r = expand_ex(s->oauth.client_secret, opts->lookup, opts->lookup_userdata, &later, &val, e);
        secure_free(val);
        val = NULL;
        strv_release(&later, false);
        if (r < 0 && r != -ENOENT) {
            (void)err_prefix(e, "\"oauth.clientSecret\"");
            goto out;
        }
    }

    if (missing.n > 0) {
        /* the names that fit in a message; missing_vars has them all */
        bool cut = false;
        for (size_t i = 0; i < missing.n && !cut; i++) {
            r = buf_printf(&msg, "%s'%s'", i == 0 ? "" : ", ", missing.v[i]);
            if (r == -ENOMEM) {
                r = oom(e);
                goto out;
            }
            cut = r < 0;
        }
        r = err_set(e, -ENOENT, "variable%s %s%s %s not set", missing.n > 1 ? "s" : "",
                    buf_str(&msg), cut ? ", ..." : "", missing.n > 1 ? "are" : "is");
        s->missing_vars = strv_take(&missing);
        if (!s->missing_vars)
            r = oom(e);
        goto out;
    }
    if (url) {
        bool had_vars = strchr(s->url, '$') != NULL;
        r = check_server_url(url, had_vars, e);
        if (r < 0)
            goto out;
    }
    r = 0;
out:
    secure_free(url);
    secure_free(val);
    strv_release(&missing, false);
    buf_release(&msg);
    return r;
}

static void oauth_release(struct mcp_oauth *oa)
{
    free(oa->client_id);
    secure_free(oa->client_secret);
    free(oa->client_metadata_url);
    free(oa->scope);
    free(oa->redirect_uri);
    free(oa->grant);
    free(oa->private_key_file);
    free(oa->private_key_alg);
    free(oa->idp_issuer);
    free(oa->idp_token_endpoint);
    free(oa->idp_client_id);
    secure_free(oa->idp_client_secret);
    secure_free(oa->idp_id_token);
}

void mcp_server_free(struct mcp_server *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->source);
    free(s->command);
    strv_free(s->args, false);
    strv_free(s->env, true);
    free(s->cwd);
    secure_free(s->url);
    strv_free(s->headers, true);
    oauth_release(&s->oauth);
    free(s->bearer_token_env);
    free(s->headers_helper);
    free(s->lifecycle);
    strv_free(s->exclude_tools, false);
    json_object_put(s->raw);
    free(s->error);
    strv_free(s->missing_vars, false);
    free(s);
}

/* Copies v into *ret (NULL stays NULL). On -ENOMEM what was copied is wiped: v may be the env
 * or headers of an entry. */
static int strv_dup(char *const *v, char ***ret)
{
    size_t n = 0;
    if (!v) {
        *ret = NULL;
        return 0;
    }
    while (v[n])
        n++;
    char **c = calloc(n + 1, sizeof(char *));
    if (!c)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = strdup(v[i]);
        if (!c[i]) {
            strv_free(c, true);
            return -ENOMEM;
        }
    }
    *ret = c;
    return 0;
}

int mcp_server_dup(const struct mcp_server *s, struct mcp_server **ret)
{
    if (!s || !ret)
        return -EINVAL;
    struct mcp_server *c = calloc(1, sizeof(*c));
    bool oom = false;
    if (!c)
        return -ENOMEM;
#define DUP(f)                                                                                     \
    do {                                                                                           \
        if (s->f && !(c->f = strdup(s->f)))                                                        \
            oom = true;                                                                            \
    } while (0)
#define DUPV(f)                                                                                    \
    do {                                                                                           \
        if (strv_dup(s->f, &c->f) < 0)                                                             \
            oom = true;                                                                            \
    } while (0)
    DUP(name);
    DUP(source);
    DUP(command);
    DUPV(args);
    DUPV(env);
    DUP(cwd);
    DUP(url);
    DUPV(headers);
    DUP(oauth.client_id);
    DUP(oauth.client_secret);
    DUP(oauth.client_metadata_url);
    DUP(oauth.scope);
    DUP(oauth.redirect_uri);
    DUP(oauth.grant);
    DUP(oauth.private_key_file);
    DUP(oauth.private_key_alg);
    DUP(oauth.idp_issuer);
    DUP(oauth.idp_token_endpoint);
    DUP(oauth.idp_client_id);
    DUP(oauth.idp_client_secret);
    DUP(oauth.idp_id_token);
    DUP(bearer_token_env);
    DUP(headers_helper);
    DUP(lifecycle);
    DUPV(exclude_tools);
    DUP(error);
    DUPV(missing_vars);
#undef DUP
#undef DUPV
    c->layer = s->layer;
    c->transport = s->transport;
    c->timeout_ms = s->timeout_ms;
    c->auth = s->auth;
    c->oauth.refresh_sends_scope = s->oauth.refresh_sends_scope;
    c->oauth.omit_resource = s->oauth.omit_resource;
    c->idle_timeout_ms = s->idle_timeout_ms;
    c->raw = s->raw ? json_object_get(s->raw) : NULL;
    /* the four vectors are never NULL, even when s was built by hand without them */
    if (!oom && !c->args && !(c->args = calloc(1, sizeof(char *))))
        oom = true;
    if (!oom && !c->env && !(c->env = calloc(1, sizeof(char *))))
        oom = true;
    if (!oom && !c->headers && !(c->headers = calloc(1, sizeof(char *))))
        oom = true;
    if (!oom && !c->exclude_tools && !(c->exclude_tools = calloc(1, sizeof(char *))))
        oom = true;
    if (oom) {
        mcp_server_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

/* Builds one server. Invalid entries come back with error set; only ENOMEM fails. */
static int server_build(const char *name, struct json_object *entry, const char *source,
                        enum mcp_layer layer, const struct mcp_config_opts *opts,
                        struct mcp_server **ret)
{
    struct mcp_server *s = calloc(1, sizeof(*s));
    struct err why = ERR_INIT;
    int r;

    if (!s)
        return -ENOMEM;
    s->layer = layer;
    s->raw = json_object_get(entry);
    s->name = strdup(name);
    s->source = strdup(source);
    s->args = calloc(1, sizeof(char *));
    s->env = calloc(1, sizeof(char *));
    s->headers = calloc(1, sizeof(char *));
    s->exclude_tools = calloc(1, sizeof(char *));
    if (!s->name || !s->source || !s->args || !s->env || !s->headers || !s->exclude_tools) {
        r = -ENOMEM;
        goto out;
    }

    r = check_server_name(name, &why);
    if (r >= 0)
        r = parse_entry(s, entry, &why);
    if (r >= 0)
        r = expand_entry(s, opts, &why);
    if (r == -ENOMEM)
        goto out;
    if (r < 0) {
        char nd[DISP_BUF];
        disp(nd, name);
        if (asprintf(&s->error, "'%s': server '%s': %s", source, nd, err_msg(&why)) < 0) {
            s->error = NULL;
            r = -ENOMEM;
            goto out;
        }
    }
    *ret = s;
    s = NULL;
    r = 0;
out:
    mcp_server_free(s);
    return r;
}

/* ---- layers ------------------------------------------------------------------------------ */

struct layer {
    char *path;    /* absolute */
    char *display; /* for messages */
    enum mcp_layer layer;
    bool explicit_path; /* opts.config_path: missing is an error */
    struct json_object *root;
};

struct cand {
    const char *name; /* borrowed from the layer's root */
    struct json_object *entry;
    size_t layer; /* index into the layers */
    size_t seq;   /* order of reading: later wins */
};

struct loader {
    const struct mcp_config_opts *opts;
    struct mcp_config *c;
    struct layer layers[MAX_FILES];
    size_t n_layers;
    struct cand *cands;
    size_t n_cands, cap_cands;
    int tool_prefix; /* -1: not set by any layer */
};

static int add_diag(struct mcp_config *c, const char *source, const char *fmt, ...) _printf_(3, 4);
static int add_diag(struct mcp_config *c, const char *source, const char *fmt, ...)
{
    struct mcp_config_diag *d = realloc(c->diags, (c->n_diags + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    c->diags = d;
    d = &c->diags[c->n_diags];
    d->source = strdup(source);
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&d->message, fmt, ap);
    va_end(ap);
    if (k < 0)
        d->message = NULL;
    if (!d->source || !d->message) {
        free(d->source);
        free(d->message);
        return -ENOMEM;
    }
    c->n_diags++;
    return 0;
}

/* An absolute copy of p (relative to the current directory). */
static int absolute(const char *p, char **ret)
{
    char *cwd = NULL, *out;
    if (p[0] == '/') {
        out = strdup(p);
    } else {
        cwd = getcwd(NULL, 0);
        if (!cwd)
            return negerr_or(errno, -EIO);
        out = path_join(cwd, p);
        free(cwd);
    }
    if (!out)
        return -ENOMEM;
    *ret = out;
    return 0;
}

/* Takes path. */
static int add_layer(struct loader *L, char *path, enum mcp_layer layer, bool explicit_path)
{
    if (!path)
        return -ENOMEM;
    char *d = path_display(path);
    if (!d) {
        free(path);
        return -ENOMEM;
    }
    struct layer *y = &L->layers[L->n_layers++];
    y->path = path;
    y->display = d;
    y->layer = layer;
    y->explicit_path = explicit_path;
    return 0;
}

static int find_layers(struct loader *L, struct err *e)
{
    const struct mcp_config_opts *o = L->opts;
    char *p = NULL, *dir = NULL;
    struct err le = ERR_INIT;
    int r;

    if (o->bundled_path) {
        r = absolute(o->bundled_path, &p);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = err_set(e, r, "cannot resolve the bundled configuration '%s': %s", o->bundled_path,
                        strerror(-r));
            goto out;
        }
        r = add_layer(L, p, MCP_LAYER_BUNDLED, false); /* takes p */
        p = NULL;
        if (r < 0)
            goto fail;
    }

    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && xdg[0] == '/') {
        r = add_layer(L, path_join(xdg, "mcp/mcp.json"), MCP_LAYER_SHARED, false);
        if (r < 0)
            goto fail;
    } else {
        r = path_home(&dir);
        if (r == -ENOMEM)
            goto fail;
        if (r >= 0) { /* no home: no shared layer */
            r = add_layer(L, path_join(dir, ".config/mcp/mcp.json"), MCP_LAYER_SHARED, false);
            free(dir);
            dir = NULL;
            if (r < 0)
                goto fail;
        }
    }

    if (o->config_path) {
        r = absolute(o->config_path, &p);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = err_set(e, r, "cannot resolve the configuration file '%s': %s", o->config_path,
                        strerror(-r));
            goto out;
        }
        r = add_layer(L, p, MCP_LAYER_USER, true); /* takes p */
        p = NULL;
        if (r < 0)
            goto fail;
    } else {
        r = path_agent_file("mcp.json", &p, &le);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            /* no home: nothing to read, but say why the user layer is missing */
            r = add_diag(L->c, "~/.pi/agent/mcp.json", "%s", err_msg(&le));
            if (r < 0)
                goto fail;
        } else {
            r = add_layer(L, p, MCP_LAYER_USER, false); /* takes p */
            p = NULL;
            if (r < 0)
                goto fail;
        }
    }

    if (o->cwd) {
        r = absolute(o->cwd, &dir);
        if (r == -ENOMEM)
            goto fail;
        if (r < 0) {
            r = err_set(e, r, "cannot resolve the project directory '%s': %s", o->cwd,
                        strerror(-r));
            goto out;
        }
        r = add_layer(L, path_join(dir, ".mcp.json"), MCP_LAYER_PROJECT, false);
        if (r >= 0)
            r = add_layer(L, path_join(dir, ".pi/mcp.json"), MCP_LAYER_PROJECT, false);
        if (r < 0)
            goto fail;
    }
    r = 0;
    goto out;
fail:
    r = oom(e);
out:
    free(p);
    free(dir);
    return r;
}

static int add_cand(struct loader *L, const char *name, struct json_object *entry, size_t layer)
{
    if (L->n_cands == L->cap_cands) {
        size_t cap = L->cap_cands ? L->cap_cands * 2 : 16;
        struct cand *v = realloc(L->cands, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        L->cands = v;
        L->cap_cands = cap;
    }
    L->cands[L->n_cands] = (struct cand){name, entry, layer, L->n_cands};
    L->n_cands++;
    return 0;
}

static int read_settings(struct loader *L, struct layer *y)
{
    static const char *const prefixes[] = {"server", "short", "none", NULL};
    struct json_object *st = member(y->root, "settings");
    struct err le = ERR_INIT;
    int i = -1;

    if (!st)
        return 0;
    if (!json_object_is_type(st, json_type_object))
        return add_diag(L->c, y->display,
                        "'%s': \"settings\" must be an object, not %s: the settings are ignored",
                        y->display, type_of(st));
    if (get_enum(st, "toolPrefix", "settings.toolPrefix", prefixes,
                 "\"server\", \"short\" or \"none\"", &i, &le) < 0)
        return add_diag(L->c, y->display, "'%s': %s: it is ignored", y->display, err_msg(&le));
    if (i >= 0)
        L->tool_prefix = i;
    return 0;
}

static int scan_root(struct loader *L, size_t idx, struct err *e);

/* Reads one layer: a missing file is absent; anything else wrong with the file is a
 * diagnostic and the layer is skipped. */
static int read_layer(struct loader *L, size_t idx, struct err *e)
{
    struct layer *y = &L->layers[idx];
    struct mcp_file *f = &L->c->files[L->c->n_files];
    struct err le = ERR_INIT;
    int r;

    f->path = strdup(y->path);
    if (!f->path)
        return oom(e);
    L->c->n_files++;

    r = json_read_file(y->path, CONFIG_MAX_BYTES, 0, &y->root, &le);
    f->exists = r != -ENOENT;
    if (r == -ENOENT && y->explicit_path)
        return err_set(e, -ENOENT, "configuration file '%s' does not exist: check the path",
                       y->display);
    if (r == -ENOENT)
        return 0;
    if (r == -ENOMEM)
        return oom(e);
    if (r < 0)
        return add_diag(L->c, y->display, "%s", err_msg(&le)) < 0 ? oom(e) : 0;
    return scan_root(L, idx, e);
}

/* Collects the candidates and settings of a layer whose root is read; a root that is not
 * usable is a diagnostic and the layer is skipped. */
static int scan_root(struct loader *L, size_t idx, struct err *e)
{
    struct layer *y = &L->layers[idx];
    int r;

    if (!json_object_is_type(y->root, json_type_object)) {
        r = add_diag(L->c, y->display, "'%s': the root must be an object, not %s", y->display,
                     type_of(y->root));
        goto skip;
    }
    struct json_object *ms = member(y->root, "mcpServers"), *sv = member(y->root, "servers");
    if ((ms && !json_object_is_type(ms, json_type_object)) ||
        (sv && !json_object_is_type(sv, json_type_object))) {
        const char *key =
            ms && !json_object_is_type(ms, json_type_object) ? "mcpServers" : "servers";
        r = add_diag(L->c, y->display,
                     "'%s': \"%s\" must be an object, not %s: no server of "
                     "this file is used",
                     y->display, key, type_of(member(y->root, key)));
        goto skip;
    }
    if (read_settings(L, y) < 0)
        return oom(e);
    /* "servers" first, skipping what "mcpServers" of the same file defines */
    if (sv) {
        json_object_object_foreach(sv, name, entry)
        {
            if (ms && json_object_object_get_ex(ms, name, NULL))
                continue;
            if (add_cand(L, name, entry, idx) < 0)
                return oom(e);
        }
    }
    if (ms) {
        json_object_object_foreach(ms, name, entry)
        {
            if (add_cand(L, name, entry, idx) < 0)
                return oom(e);
        }
    }
    return 0;
skip:
    json_object_put(y->root);
    y->root = NULL;
    return r < 0 ? oom(e) : 0;
}

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    int k = strcmp(x->name, y->name);
    if (k)
        return k;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void loader_release(struct loader *L)
{
    for (size_t i = 0; i < L->n_layers; i++) {
        free(L->layers[i].path);
        free(L->layers[i].display);
        json_object_put(L->layers[i].root);
    }
    free(L->cands);
}

/* The second pass: the last candidate of each name (highest layer) wins, is validated and
 * expanded; the result is sorted by name. */
static int build_servers(struct loader *L, struct err *e)
{
    L->c->tool_prefix =
        L->tool_prefix >= 0 ? (enum mcp_tool_prefix)L->tool_prefix : MCP_TOOL_PREFIX_SERVER;
    if (L->n_cands > 0)
        qsort(L->cands, L->n_cands, sizeof(*L->cands), cand_cmp);
    L->c->servers = calloc(L->n_cands ? L->n_cands : 1, sizeof(*L->c->servers));
    if (!L->c->servers)
        return oom(e);
    for (size_t i = 0; i < L->n_cands; i++) {
        const struct cand *k = &L->cands[i];
        if (i + 1 < L->n_cands && strcmp(k->name, L->cands[i + 1].name) == 0)
            continue;
        const struct layer *y = &L->layers[k->layer];
        int r = server_build(k->name, k->entry, y->display, y->layer, L->opts,
                             &L->c->servers[L->c->n_servers]);
        if (r < 0)
            return oom(e);
        L->c->n_servers++;
    }
    return 0;
}

int mcp_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret, struct err *e)
{
    static const struct mcp_config_opts no_opts;
    struct loader L = {0};
    int r;

    L.opts = opts ? opts : &no_opts;
    L.tool_prefix = -1;
    L.c = calloc(1, sizeof(*L.c));
    if (!L.c) {
        r = oom(e);
        goto out;
    }

    r = find_layers(&L, e);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < L.n_layers; i++) {
        r = read_layer(&L, i, e);
        if (r < 0)
            goto out;
    }
    r = build_servers(&L, e);
    if (r < 0)
        goto out;

    *ret = L.c;
    L.c = NULL;
    r = 0;
out:
    mcp_config_free(L.c);
    loader_release(&L);
    return r;
}

int mcp_config_load_object(struct json_object *root, const char *source,
                           const struct mcp_config_opts *opts, struct mcp_config **ret,
                           struct err *e)
{
    static const struct mcp_config_opts no_opts;
    struct loader L = {0};
    int r;

    if (!root || !source)
        return err_set(e, -EINVAL, "no configuration given");
    L.opts = opts ? opts : &no_opts;
    L.tool_prefix = -1;
    L.c = calloc(1, sizeof(*L.c));
    if (!L.c) {
        r = oom(e);
        goto out;
    }
    r = add_layer(&L, strdup(source), MCP_LAYER_USER, true);
    if (r < 0) {
        r = oom(e);
        goto out;
    }
    /* the source is a label, not a path: shown as given */
    free(L.layers[0].display);
    L.layers[0].display = strdup(source);
    if (!L.layers[0].display) {
        r = oom(e);
        goto out;
    }
    L.layers[0].root = json_object_get(root);
    r = scan_root(&L, 0, e);
    if (r < 0)
        goto out;
    r = build_servers(&L, e);
    if (r < 0)
        goto out;

    *ret = L.c;
    L.c = NULL;
    r = 0;
out:
    mcp_config_free(L.c);
    loader_release(&L);
    return r;
}

void mcp_config_free(struct mcp_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_servers; i++)
        mcp_server_free(c->servers[i]);
    free(c->servers);
    for (size_t i = 0; i < c->n_diags; i++) {
        free(c->diags[i].source);
        free(c->diags[i].message);
    }
    free(c->diags);
    for (size_t i = 0; i < c->n_files; i++)
        free(c->files[i].path);
    free(c);
}

size_t mcp_config_count(const struct mcp_config *c)
{
    return c ? c->n_servers : 0;
}

const struct mcp_server *mcp_config_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_servers ? c->servers[i] : NULL;
}

const struct mcp_server *mcp_config_find(const struct mcp_config *c, const char *name)
{
    if (!c || !name)
        return NULL;
    size_t lo = 0, hi = c->n_servers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(name, c->servers[mid]->name);
        if (k == 0)
            return c->servers[mid];
        if (k < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

enum mcp_tool_prefix mcp_config_tool_prefix(const struct mcp_config *c)
{
    return c ? c->tool_prefix : MCP_TOOL_PREFIX_SERVER;
}

size_t mcp_config_diag_count(const struct mcp_config *c)
{
    return c ? c->n_diags : 0;
}

const struct mcp_config_diag *mcp_config_diag_at(const struct mcp_config *c, size_t i)
{
    return c && i < c->n_diags ? &c->diags[i] : NULL;
}

size_t mcp_config_file_count(const struct mcp_config *c)
{
    return c ? c->n_files : 0;
}

const char *mcp_config_file_at(const struct mcp_config *c, size_t i, bool *ret_exists)
{
    if (!c || i >= c->n_files)
        return NULL;
    if (ret_exists)
        *ret_exists = c->files[i].exists;
    return c->files[i].path;
}

const char *mcp_transport_name(enum mcp_transport t)
{
    switch (t) {
    case MCP_TRANSPORT_STDIO:
        return "stdio";
    case MCP_TRANSPORT_HTTP:
        return "http";
    case MCP_TRANSPORT_SSE:
        return "sse";
    }
    return "unknown";
}
