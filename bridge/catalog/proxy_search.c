/* proxy_search.c - the proxy tool's answers read off the catalogue (proxy_search.h): the
 * search and its regex guard, describe, a server's tools, status lines, close names. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"
#include "credkit/suggest.h"

#include "catalog/catalog.h"
#include "catalog/proxy.h"
#include "catalog/proxy_search.h"

#define MAX_TERMS       32
#define DESCRIBE_MAX    2000 /* bytes of a tool's description in describe */
#define REGEX_DEPTH_MAX 32

/* ---- regular expressions ----------------------------------------------------------------- */

/* The end of a bracket expression that opens at p[0] == '[' (the index of its ']'), or 0 when
 * it does not close. */
static size_t bracket_end(const char *p)
{
    size_t i = 1;
    if (p[i] == '^')
        i++;
    if (p[i] == ']')
        i++; /* a literal ']' first */
    for (; p[i]; i++) {
        if (p[i] == '[' && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
            const char *close = strstr(p + i + 2, (char[]){p[i + 1], ']', 0});
            if (!close)
                return 0;
            i = (size_t)(close - p) + 1;
            continue;
        }
        if (p[i] == ']')
            return i;
    }
    return 0;
}

/* A "{n}", "{n,}" or "{n,m}" at p: its length, and the largest bound in *ret_max; 0 when it is
 * not one (a literal '{'). */
static size_t bound_len(const char *p, unsigned long *ret_max)
{
    size_t i = 1;
    unsigned long max = 0;
    bool digits = false;
    for (int part = 0; part < 2; part++) {
        unsigned long v = 0;
        while (isdigit((unsigned char)p[i])) {
            v = v * 10 + (unsigned long)(p[i] - '0');
            if (v > 1000000)
                v = 1000000;
            i++;
            digits = true;
        }
        if (v > max)
            max = v;
        if (part == 0 && p[i] == ',')
            i++;
        else
            break;
    }
    if (!digits || p[i] != '}')
        return 0;
    *ret_max = max;
    return i + 1;
}

int proxy_regex_check(const char *p, char *err, size_t size)
{
    size_t n = strlen(p);
    if (n > PROXY_PATTERN_MAX)
        return proxy_refuse(err, size, "the pattern is %zu bytes: at most %d", n,
                            PROXY_PATTERN_MAX);
    bool repeats[REGEX_DEPTH_MAX]; /* the open group has a repetition inside */
    int depth = 0;
    bool after_group = false, group_repeats = false; /* the last atom was a group (that ...) */
    bool after_repeat = false;                       /* the last thing was a repetition */
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool quant = c == '*' || c == '+' || c == '?';
        size_t blen = 0;
        unsigned long bmax = 0;
        if (c == '{') {
            blen = bound_len(p + i, &bmax);
            quant = blen > 0;
        }
        if (quant) {
            if (bmax > PROXY_REPEAT_MAX)
                return proxy_refuse(err, size, "the pattern repeats {%lu} times: at most %d", bmax,
                                    PROXY_REPEAT_MAX);
            if ((after_group && group_repeats) || after_repeat)
                return proxy_refuse(
                    err, size,
                    "the pattern repeats a repetition (like \"(a+)+\"): that can take "
                    "very long to match; write it without nesting");
            if (depth > 0)
                repeats[depth - 1] = true;
            after_repeat = true;
            after_group = false;
            if (blen)
                i += blen - 1;
            continue;
        }
        after_repeat = false;
        after_group = false;
        switch (c) {
        case '\\':
            if (isdigit((unsigned char)p[i + 1]))
                return proxy_refuse(
                    err, size, "the pattern has a back reference (\\%c): not allowed", p[i + 1]);
            if (p[i + 1])
                i++;
            break;
        case '[': {
            size_t end = bracket_end(p + i);
            if (!end)
                return proxy_refuse(err, size, "the pattern has a '[' that does not close");
            i += end;
            break;
        }
        case '(':
            if (depth == REGEX_DEPTH_MAX)
                return proxy_refuse(err, size, "the pattern nests groups deeper than %d",
                                    REGEX_DEPTH_MAX);
            repeats[depth++] = false;
            break;
        case ')':
            if (depth > 0) {
                group_repeats = repeats[--depth];
                if (group_repeats && depth > 0)
                    repeats[depth - 1] = true;
                after_group = true;
            }
            break;
        default:
            break;
        }
    }
    return 0;
}

/* ---- search ------------------------------------------------------------------------------ */

int proxy_append_line(struct buf *out, const char *s, size_t max)
{
    size_t n = strcspn(s, "\r\n");
    bool cut = n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    int r = buf_append(out, s, n);
    if (r >= 0 && (cut || s[strcspn(s, "\r\n")]))
        r = buf_append_str(out, "...");
    return r;
}

static int tool_line(struct buf *out, const struct catalog_tool *t, bool schema)
{
    int r = buf_printf(out, "%s", t->name);
    const char *desc = json_get_string(t->item, "description");
    if (r >= 0 && desc && *desc) {
        r = buf_append_str(out, " - ");
        if (r >= 0)
            r = proxy_append_line(out, desc, PROXY_LINE_DESC);
    }
    if (r >= 0)
        r = buf_append_char(out, '\n');
    struct json_object *s = json_object_object_get(t->item, "inputSchema");
    if (r >= 0 && schema && s)
        r = buf_printf(out, "  inputSchema: %s\n",
                       json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE));
    return r;
}

struct matcher {
    bool regex;
    regex_t re;
    char *terms[MAX_TERMS];
    size_t n_terms;
    char *copy;
};

static bool match_text(const struct matcher *m, const char *s)
{
    if (!s)
        return false;
    if (m->regex)
        return regexec(&m->re, s, 0, NULL, 0) == 0;
    for (size_t i = 0; i < m->n_terms; i++)
        if (strcasestr(s, m->terms[i]))
            return true;
    return false;
}

static bool match_keyword(const char *keyword, const void *ud)
{
    return match_text(ud, keyword);
}

/* How tool t matches: 1 by its name (exposed or raw), 2 by its description or searchKeywords
 * (weighted as the description, as the adapter does), 0 not at all. */
static unsigned char match_rank(const struct matcher *m, const struct catalog_tool *t)
{
    if (match_text(m, t->name) || match_text(m, t->orig))
        return 1;
    if (match_text(m, json_get_string(t->item, "description")) ||
        catalog_tool_keywords_match(t, match_keyword, m))
        return 2;
    return 0;
}

static int matcher_init(struct matcher *m, const char *query, bool regex, char *err, size_t size)
{
    *m = (struct matcher){.regex = regex};
    if (regex) {
        int r = proxy_regex_check(query, err, size);
        if (r < 0)
            return r;
        int q = regcomp(&m->re, query, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (q == REG_ESPACE)
            return -ENOMEM;
        if (q != 0) {
            char why[128];
            regerror(q, &m->re, why, sizeof(why));
            return proxy_refuse(err, size, "the pattern is not a valid regular expression: %s",
                                why);
        }
        return 0;
    }
    m->copy = strdup(query);
    if (!m->copy)
        return -ENOMEM;
    char *save = NULL;
    for (char *t = strtok_r(m->copy, " \t\r\n", &save); t && m->n_terms < MAX_TERMS;
         t = strtok_r(NULL, " \t\r\n", &save))
        m->terms[m->n_terms++] = t;
    if (!m->n_terms) {
        free(m->copy);
        m->copy = NULL;
        return proxy_refuse(err, size, "the search has no words");
    }
    return 0;
}

static void matcher_release(struct matcher *m)
{
    if (m->regex)
        regfree(&m->re);
    free(m->copy);
}

int proxy_search(const struct catalog *c, const char *query, bool regex, bool schemas,
                 struct buf *out, char *err, size_t err_size)
{
    struct matcher m;
    int r = matcher_init(&m, query, regex, err, err_size);
    if (r < 0)
        return r;
    size_t n = catalog_tool_count(c), shown = 0, found = 0;
    unsigned char *rank = n ? calloc(n, 1) : NULL; /* 0 none, 1 name, 2 description */
    if (n && !rank) {
        matcher_release(&m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        rank[i] = match_rank(&m, &t);
        found += rank[i] != 0;
    }
    if (!found)
        r = buf_printf(out, "no tool matches %s'%s' (%zu tools in all)\n",
                       regex ? "the pattern " : "", query, n);
    else
        r = buf_printf(out, "%zu tool%s match%s '%s'%s:\n", found, found == 1 ? "" : "s",
                       found == 1 ? "es" : "", query,
                       found > PROXY_SEARCH_MAX ? " (name matches first)" : "");
    /* name matches first, each group in the catalogue's order */
    for (unsigned char want = 1; r >= 0 && want <= 2; want++) {
        for (size_t i = 0; r >= 0 && i < n && shown < PROXY_SEARCH_MAX; i++) {
            if (rank[i] != want)
                continue;
            struct catalog_tool t;
            catalog_tool_at(c, i, &t);
            r = tool_line(out, &t, schemas);
            shown++;
        }
    }
    if (r >= 0 && found > shown)
        r = buf_printf(out, "... and %zu more: narrow the search\n", found - shown);
    free(rank);
    matcher_release(&m);
    return r < 0 ? r : 0;
}

/* ---- describe ---------------------------------------------------------------------------- */

/* A property's type, compactly: "string", "string|null", "array of string", "one of a|b". */
int proxy_search_held(const struct catalog *c, const char *query, bool regex, struct strv *held,
                      char *err, size_t err_size)
{
    struct matcher m;
    int r = matcher_init(&m, query, regex, err, err_size);
    if (r < 0)
        return r;
    for (size_t i = 0, n = catalog_tool_count(c); r >= 0 && i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        if (t.held && match_rank(&m, &t))
            r = strv_push(held, t.name);
    }
    matcher_release(&m);
    return r < 0 ? r : 0;
}

static int render_type(struct json_object *prop, struct buf *out)
{
    struct json_object *en = json_object_object_get(prop, "enum");
    if (json_object_is_type(en, json_type_array)) {
        int r = buf_append_str(out, "one of ");
        for (size_t i = 0; r >= 0 && i < json_object_array_length(en) && i < 20; i++)
            r = buf_printf(out, "%s%s", i ? "|" : "",
                           json_object_to_json_string_ext(json_object_array_get_idx(en, i),
                                                          JSON_C_TO_STRING_PLAIN));
        return r;
    }
    struct json_object *type = json_object_object_get(prop, "type");
    if (json_object_is_type(type, json_type_string)) {
        const char *t = json_object_get_string(type);
        const char *items = json_get_string(json_get_object(prop, "items"), "type");
        if (strcmp(t, "array") == 0 && items)
            return buf_printf(out, "array of %s", items);
        return buf_append_str(out, t);
    }
    if (json_object_is_type(type, json_type_array)) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < json_object_array_length(type); i++)
            r = buf_printf(out, "%s%s", i ? "|" : "",
                           json_object_get_string(json_object_array_get_idx(type, i)));
        return r;
    }
    if (json_object_object_get(prop, "anyOf") || json_object_object_get(prop, "oneOf"))
        return buf_append_str(out, "one of several types");
    return buf_append_str(out, "any");
}

static bool is_required(struct json_object *schema, const char *name)
{
    struct json_object *req = json_object_object_get(schema, "required");
    for (size_t i = 0;
         json_object_is_type(req, json_type_array) && i < json_object_array_length(req); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(req, i));
        if (s && strcmp(s, name) == 0)
            return true;
    }
    return false;
}

int proxy_render_schema(struct json_object *schema, struct buf *out)
{
    struct json_object *props = json_object_object_get(schema, "properties");
    if (!json_object_is_type(props, json_type_object) || !json_object_object_length(props))
        return buf_append_str(out, "  (no parameters)\n");
    int r = 0;
    json_object_object_foreach(props, name, prop)
    {
        r = buf_printf(out, "  %s (", name);
        if (r >= 0)
            r = render_type(prop, out);
        if (r >= 0 && is_required(schema, name))
            r = buf_append_str(out, ", required");
        if (r >= 0)
            r = buf_append_char(out, ')');
        const char *desc = json_get_string(prop, "description");
        if (r >= 0 && desc && *desc) {
            r = buf_append_str(out, ": ");
            if (r >= 0)
                r = proxy_append_line(out, desc, PROXY_PARAM_DESC);
        }
        if (r >= 0)
            r = buf_append_char(out, '\n');
        if (r < 0)
            return r;
    }
    return r;
}

bool proxy_find_tool(const struct catalog *c, const char *name, struct catalog_tool *ret)
{
    if (catalog_tool_find(c, name, ret))
        return true;
    /* a raw name that only one server has */
    size_t n = catalog_tool_count(c), hits = 0;
    struct catalog_tool t, hit = {0};
    for (size_t i = 0; i < n && hits < 2; i++) {
        catalog_tool_at(c, i, &t);
        if (!t.resource && strcmp(t.orig, name) == 0) {
            hit = t;
            hits++;
        }
    }
    if (hits != 1)
        return false;
    if (ret)
        *ret = hit;
    return true;
}

int proxy_describe(const struct catalog *c, const char *tool, struct buf *out)
{
    struct catalog_tool t;
    if (!proxy_find_tool(c, tool, &t))
        return -ENOENT;
    int r = buf_printf(out, "%s (server '%s'%s)\n", t.name, catalog_source_name(t.src),
                       t.direct ? "" : "; call it with mcp({tool, args})");
    const char *desc = json_get_string(t.item, "description");
    if (r >= 0 && desc && *desc) {
        size_t len = strlen(desc);
        if (len > DESCRIBE_MAX) {
            len = DESCRIBE_MAX;
            while (len > 0 && ((unsigned char)desc[len] & 0xC0) == 0x80)
                len--;
        }
        r = buf_append(out, desc, len);
        if (r >= 0)
            r = buf_append_str(out, len < strlen(desc) ? "...\n" : "\n");
    }
    if (r >= 0)
        r = buf_append_str(out, "parameters:\n");
    if (r >= 0)
        r = proxy_render_schema(json_object_object_get(t.item, "inputSchema"), out);
    return r < 0 ? r : 0;
}

/* ---- servers ----------------------------------------------------------------------------- */

size_t proxy_tool_count(const struct catalog *c, const struct catalog_source *src)
{
    size_t n = catalog_tool_count(c), k = 0;
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        k += t.src == src;
    }
    return k;
}

int proxy_list_server(const struct catalog *c, const struct catalog_source *src, const char *state,
                      struct buf *out)
{
    size_t n = catalog_tool_count(c), k = proxy_tool_count(c, src);
    int r =
        buf_printf(out, "server '%s'%s%s%s: %zu tool%s\n", catalog_source_name(src),
                   state ? " (" : "", state ? state : "", state ? ")" : "", k, k == 1 ? "" : "s");
    for (size_t i = 0; r >= 0 && i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        if (t.src == src)
            r = tool_line(out, &t, false);
    }
    return r < 0 ? r : 0;
}

int proxy_status_line(struct buf *out, const char *name, const char *state, const char *reason,
                      size_t n_tools)
{
    int r = buf_printf(out, "%s: %s", name, state);
    if (r >= 0 && reason && *reason) {
        r = buf_append_str(out, " (");
        if (r >= 0)
            r = proxy_append_line(out, reason, 300);
        if (r >= 0)
            r = buf_append_char(out, ')');
    }
    if (r >= 0)
        r = buf_printf(out, ", %zu tool%s\n", n_tools, n_tools == 1 ? "" : "s");
    return r;
}

int proxy_suggest(const struct catalog *c, const char *name, size_t max, struct buf *out)
{
    size_t n = catalog_tool_count(c);
    struct suggest s;
    suggest_init(&s, name);
    for (size_t i = 0; i < n; i++) {
        struct catalog_tool t;
        catalog_tool_at(c, i, &t);
        suggest_add(&s, t.name);
        suggest_add_as(&s, t.orig, t.name);
    }
    int r = suggest_append_list(&s, max, out);
    suggest_release(&s);
    return r;
}
