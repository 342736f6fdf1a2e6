/* cmd_install_text.c - one server added to or removed from an agent's file, as text
 * (cmd_install_text.h).
 *
 * JSON: the text is scanned on a copy whose comments (and trailing commas) are blanked to spaces
 * (json_blank_jsonc() keeps every offset), checked by json_parse(), and the members of the
 * servers' object are found by offset; the edit is made to the original text, so that what is
 * not the member stays byte for byte. TOML: the tables are found line by line, outside
 * multi-line strings. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/json.h"

#include "cli/cmd_config.h"
#include "cli/cmd_install_text.h"

#define TEXT_MAX (4u * 1024u * 1024u)

struct member {
    char *key;
    size_t start, vstart, vend; /* the key's opening quote; the value's first and last + 1 */
};

struct scan {
    char *t; /* the blanked copy */
    size_t n;
    struct member *m;
    size_t count;
    size_t open, close; /* the servers' object braces; open == SIZE_MAX: no such key */
    size_t root_open;
};

static void scan_release(struct scan *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->m[i].key);
    free(s->m);
    free(s->t);
    *s = (struct scan){0};
}

static size_t skip_ws(const char *t, size_t n, size_t i)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n'))
        i++;
    return i;
}

/* From the opening quote at i to just after the closing one. */
static int skip_string(const char *t, size_t n, size_t i, size_t *ret)
{
    for (i++; i < n; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"') {
            *ret = i + 1;
            return 0;
        }
    }
    return -EBADMSG;
}

/* From a value's first byte to just after it (the text is valid JSON: json_parse() said so). */
static int skip_value(const char *t, size_t n, size_t i, size_t *ret)
{
    if (i >= n)
        return -EBADMSG;
    if (t[i] == '"')
        return skip_string(t, n, i, ret);
    if (t[i] != '{' && t[i] != '[') {
        while (i < n && !strchr(",}] \t\r\n", t[i]))
            i++;
        *ret = i;
        return 0;
    }
    for (unsigned depth = 0; i < n; i++) {
        if (t[i] == '"') {
            size_t end;
            if (skip_string(t, n, i, &end) < 0)
                return -EBADMSG;
            i = end - 1;
        } else if (t[i] == '{' || t[i] == '[') {
            depth++;
        } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
            *ret = i + 1;
            return 0;
        }
    }
    return -EBADMSG;
}

/* The members of the object whose '{' is at open, and its '}'. */
static int scan_members(struct scan *s, size_t open, bool keep)
{
    size_t i = skip_ws(s->t, s->n, open + 1);
    while (i < s->n && s->t[i] != '}') {
        struct member m = {.start = i};
        size_t kend;
        struct json_object *k = NULL;
        if (s->t[i] != '"' || skip_string(s->t, s->n, i, &kend) < 0)
            return -EBADMSG;
        if (keep) {
            if (json_parse(s->t + i, kend - i, TEXT_MAX, &k, NULL) < 0 || !k)
                return -EBADMSG;
            m.key = strdup(json_object_get_string(k));
            json_object_put(k);
            if (!m.key)
                return -ENOMEM;
        }
        i = skip_ws(s->t, s->n, kend);
        int r = i < s->n && s->t[i] == ':' ? 0 : -EBADMSG;
        m.vstart = skip_ws(s->t, s->n, i + 1);
        if (r >= 0)
            r = skip_value(s->t, s->n, m.vstart, &m.vend);
        struct member *v = r >= 0 ? realloc(s->m, (s->count + 1) * sizeof(*v)) : NULL;
        if (!v) {
            free(m.key);
            return r < 0 ? r : -ENOMEM;
        }
        s->m = v;
        s->m[s->count++] = m;
        i = skip_ws(s->t, s->n, m.vend);
        if (i < s->n && s->t[i] == ',')
            i = skip_ws(s->t, s->n, i + 1);
    }
    if (i >= s->n)
        return -EBADMSG;
    s->close = i;
    return 0;
}

/* Scans text for the servers' object under key: s->open/close (SIZE_MAX when the key is
 * absent), its members in s->m. The document itself in *ret_doc when asked. */
static int scan(const char *text, size_t len, bool jsonc, const char *key, struct scan *s,
                struct json_object **ret_doc, struct err *e)
{
    struct json_object *doc = NULL;
    int r;

    *s = (struct scan){.open = SIZE_MAX};
    s->t = malloc(len + 1);
    if (!s->t)
        return err_set(e, -ENOMEM, "out of memory");
    memcpy(s->t, text, len);
    s->t[len] = '\0';
    s->n = len;
    r = jsonc ? json_blank_jsonc(s->t, len, e) : 0;
    if (r >= 0)
        r = json_parse(s->t, len, TEXT_MAX, &doc, e);
    if (r >= 0 && !json_object_is_type(doc, json_type_object))
        r = err_set(e, -EBADMSG, "the root is not an object");
    struct json_object *servers = NULL;
    if (r >= 0 && json_object_object_get_ex(doc, key, &servers) &&
        !json_object_is_type(servers, json_type_object))
        r = err_set(e, -EBADMSG, "\"%s\" is not an object", key);
    if (r < 0)
        goto out;
    s->root_open = skip_ws(s->t, len, 0);
    r = scan_members(s, s->root_open, true);
    for (size_t i = 0; r >= 0 && i < s->count; i++) {
        if (strcmp(s->m[i].key, key) != 0)
            continue;
        size_t open = s->m[i].vstart;
        for (size_t k = 0; k < s->count; k++)
            free(s->m[k].key);
        free(s->m);
        s->m = NULL;
        s->count = 0;
        s->open = open;
        r = scan_members(s, open, true);
        break;
    }
    if (r < 0) {
        if (!e || !e->msg[0])
            (void)err_set(e, r, r == -ENOMEM ? "out of memory" : "cannot find its members");
        goto out;
    }
    if (s->open == SIZE_MAX) { /* the root's members are not the servers */
        for (size_t k = 0; k < s->count; k++)
            free(s->m[k].key);
        free(s->m);
        s->m = NULL;
        s->count = 0;
    }
    if (ret_doc) {
        *ret_doc = doc;
        doc = NULL;
    }
out:
    json_object_put(doc);
    if (r < 0)
        scan_release(s);
    return r;
}

int itext_json_servers(const char *text, size_t len, bool jsonc, const char *key,
                       struct json_object **ret, struct err *e)
{
    struct json_object *doc = NULL, *servers = NULL, *out;
    struct scan s;

    if (len == 0 || skip_ws(text, len, 0) == len) {
        out = json_object_new_object();
        if (!out)
            return err_set(e, -ENOMEM, "out of memory");
        *ret = out;
        return 0;
    }
    int r = scan(text, len, jsonc, key, &s, &doc, e);
    if (r < 0)
        return r;
    scan_release(&s);
    if (json_object_object_get_ex(doc, key, &servers))
        out = json_object_get(servers);
    else
        out = json_object_new_object();
    json_object_put(doc);
    if (!out)
        return err_set(e, -ENOMEM, "out of memory");
    *ret = out;
    return 0;
}

/* Replaces text[from..to) with ins. */
static int splice(struct buf *text, size_t from, size_t to, const char *ins, size_t ins_len)
{
    struct buf out;
    buf_init(&out, TEXT_MAX);
    int r = buf_append(&out, text->data, from);
    if (r >= 0)
        r = buf_append(&out, ins, ins_len);
    if (r >= 0)
        r = buf_append(&out, text->data + to, text->len - to);
    if (r < 0) {
        buf_release(&out);
        return r;
    }
    buf_release(text);
    *text = out;
    return 0;
}

/* The blank space that starts the line holding pos. */
static size_t line_indent(const char *t, size_t pos, size_t *ret_start)
{
    size_t b = pos;
    while (b > 0 && t[b - 1] != '\n')
        b--;
    size_t i = b;
    while (i < pos && (t[i] == ' ' || t[i] == '\t'))
        i++;
    *ret_start = b;
    return i - b;
}

/* "NAME": VALUE, VALUE's lines after the first indented by indent. */
static int format_member(struct buf *out, const char *indent, size_t ilen, const char *name,
                         struct json_object *value)
{
    struct json_object *k = json_object_new_string(name);
    if (!k)
        return -ENOMEM;
    int r =
        buf_printf(out, "%s: ", json_object_to_json_string_ext(k, JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(k);
    const char *v = json_object_to_json_string_ext(value, CFG_JSON_OUT_FLAGS);
    for (; r >= 0 && v && *v; v++) {
        r = buf_append_char(out, *v);
        if (r >= 0 && *v == '\n')
            r = buf_append(out, indent, ilen);
    }
    return v ? r : -ENOMEM;
}

/* Adds name: value as the last member of the object whose braces are at open and close, its
 * last member (if any) m. */
static int add_member(struct buf *text, size_t open, size_t close, const struct member *last,
                      const char *name, struct json_object *value)
{
    struct buf ins;
    char indent[256];
    size_t ls, ilen;
    int r;

    buf_init(&ins, TEXT_MAX);
    if (last) {
        ilen = line_indent(text->data, last->start, &ls);
        ilen = ilen < sizeof(indent) ? ilen : sizeof(indent) - 1;
        memcpy(indent, text->data + ls, ilen);
        r = buf_append_str(&ins, ",\n");
        if (r >= 0)
            r = buf_append(&ins, indent, ilen);
        if (r >= 0)
            r = format_member(&ins, indent, ilen, name, value);
        if (r >= 0)
            r = splice(text, last->vend, last->vend, ins.data, ins.len);
    } else {
        size_t plen = line_indent(text->data, open, &ls);
        plen = plen < sizeof(indent) - 3 ? plen : sizeof(indent) - 3;
        memcpy(indent, text->data + ls, plen);
        memcpy(indent + plen, "  ", 2);
        ilen = plen + 2;
        r = buf_append_char(&ins, '\n');
        if (r >= 0)
            r = buf_append(&ins, indent, ilen);
        if (r >= 0)
            r = format_member(&ins, indent, ilen, name, value);
        if (r >= 0)
            r = buf_append_char(&ins, '\n');
        if (r >= 0)
            r = buf_append(&ins, indent, plen);
        /* an empty object's blank space goes; anything else in it (a comment) stays */
        bool blank = skip_ws(text->data, close, open + 1) == close;
        if (r >= 0)
            r = splice(text, open + 1, blank ? close : open + 1, ins.data, ins.len);
    }
    buf_release(&ins);
    return r;
}

int itext_json_add(struct buf *text, bool jsonc, const char *key, const char *name,
                   struct json_object *value, struct err *e)
{
    struct scan s;
    int r;

    if (text->len == 0 || skip_ws(text->data, text->len, 0) == text->len) {
        buf_reset(text);
        if (buf_append_str(text, "{}\n") < 0)
            return err_set(e, -ENOMEM, "out of memory");
    }
    r = scan(text->data, text->len, jsonc, key, &s, NULL, e);
    if (r < 0)
        return r;
    if (s.open == SIZE_MAX) {
        struct json_object *empty = json_object_new_object();
        struct scan root = {0};
        r = empty ? 0 : -ENOMEM;
        root.t = s.t, root.n = s.n;
        s.t = NULL;
        if (r >= 0)
            r = scan_members(&root, skip_ws(root.t, root.n, 0), false);
        if (r >= 0)
            r = add_member(text, skip_ws(root.t, root.n, 0), root.close,
                           root.count ? &root.m[root.count - 1] : NULL, key, empty);
        json_object_put(empty);
        scan_release(&root);
        scan_release(&s);
        if (r < 0)
            return err_set(e, r, "out of memory");
        r = scan(text->data, text->len, jsonc, key, &s, NULL, e);
        if (r < 0)
            return r;
    }
    r = add_member(text, s.open, s.close, s.count ? &s.m[s.count - 1] : NULL, name, value);
    scan_release(&s);
    return r < 0 ? err_set(e, r, "out of memory") : 0;
}

int itext_json_remove(struct buf *text, bool jsonc, const char *key, const char *name,
                      struct err *e)
{
    struct scan s;
    size_t k;
    int r;

    if (text->len == 0 || skip_ws(text->data, text->len, 0) == text->len)
        return 0;
    r = scan(text->data, text->len, jsonc, key, &s, NULL, e);
    if (r < 0)
        return r;
    for (k = 0; k < s.count && strcmp(s.m[k].key, name) != 0; k++)
        ;
    if (k == s.count) {
        scan_release(&s);
        return 0;
    }
    if (s.count == 1)
        r = splice(text, s.open + 1, s.close, "", 0);
    else if (k > 0)
        r = splice(text, s.m[k - 1].vend, s.m[k].vend, "", 0);
    else
        r = splice(text, s.m[0].start, s.m[1].start, "", 0);
    scan_release(&s);
    return r < 0 ? err_set(e, r, "out of memory") : 1;
}

/* ---- TOML -------------------------------------------------------------------------------- */

/* Whether the header [h] (h as written between the brackets, trimmed) is the server's table
 * ("mcp_servers.NAME", "mcp_servers.\"NAME\"") or one of its sub-tables. */
static bool header_is_server(const char *h, size_t hlen, const char *name)
{
    static const char pre[] = "mcp_servers.";
    size_t p = sizeof(pre) - 1, nl = strlen(name);
    if (hlen <= p || strncmp(h, pre, p) != 0)
        return false;
    h += p, hlen -= p;
    if (hlen >= nl + 2 && h[0] == '"' && strncmp(h + 1, name, nl) == 0 && h[nl + 1] == '"')
        h += nl + 2, hlen -= nl + 2;
    else if (hlen >= nl && strncmp(h, name, nl) == 0)
        h += nl, hlen -= nl;
    else
        return false;
    return hlen == 0 || h[0] == '.';
}

struct tline {
    size_t start, end; /* end: after its newline */
    bool header;       /* a [table] line outside a multi-line string */
    bool comment;      /* blank space and a comment */
    bool blank;
    const char *h; /* a header's name, trimmed */
    size_t hlen;
};

/* Whether line (from its '[') is a table header, [NAME] or [[NAME]] with nothing after it but
 * blank space and a comment (a line of a nested array, "[1, 2],", is not); l->h its NAME. */
static bool parse_header(const char *line, size_t n, struct tline *l)
{
    size_t open = n > 1 && line[1] == '[' ? 2 : 1, j = open;
    while (j < n && line[j] != ']' && line[j] != '\n')
        j++;
    if (j >= n || line[j] != ']')
        return false;
    l->h = line + open;
    l->hlen = j - open;
    j += open; /* past "]" or "]]" */
    while (j < n && (line[j] == ' ' || line[j] == '\t' || line[j] == '\r'))
        j++;
    if (j < n && line[j] != '\n' && line[j] != '#')
        return false;
    while (l->hlen && (l->h[0] == ' ' || l->h[0] == '\t'))
        l->h++, l->hlen--;
    while (l->hlen && (l->h[l->hlen - 1] == ' ' || l->h[l->hlen - 1] == '\t'))
        l->hlen--;
    return l->hlen > 0;
}

/* The next line from *pos; *in_ml tracks multi-line strings ("""...""" and '''...'''). */
static bool next_line(const char *t, size_t n, size_t *pos, bool *in_ml, char *ml, struct tline *l)
{
    if (*pos >= n)
        return false;
    *l = (struct tline){.start = *pos};
    const char *nl = memchr(t + *pos, '\n', n - *pos);
    l->end = nl ? (size_t)(nl - t) + 1 : n;
    size_t i = l->start;
    while (i < l->end && (t[i] == ' ' || t[i] == '\t'))
        i++;
    bool was_ml = *in_ml;
    l->blank = !was_ml && (i == l->end || t[i] == '\n' || t[i] == '\r');
    l->comment = !was_ml && i < l->end && t[i] == '#';
    l->header = !was_ml && i < l->end && t[i] == '[' && parse_header(t + i, l->end - i, l);
    for (size_t k = i; k + 2 < l->end; k++) {
        if (!*in_ml && t[k] == '#')
            break;
        if ((t[k] == '"' || t[k] == '\'') && t[k + 1] == t[k] && t[k + 2] == t[k]) {
            if (!*in_ml)
                *in_ml = true, *ml = t[k];
            else if (*ml == t[k])
                *in_ml = false;
            k += 2;
        }
    }
    *pos = l->end;
    return true;
}

/* The lines of [mcp_servers.NAME] and its sub-tables: [*ret_from, *ret_to). */
static bool toml_span(const char *t, size_t n, const char *name, size_t *ret_from, size_t *ret_to)
{
    size_t pos = 0, from = SIZE_MAX, to = 0, comments = SIZE_MAX;
    bool in_ml = false, inside = false;
    char ml = 0;
    struct tline l;
    while (next_line(t, n, &pos, &in_ml, &ml, &l)) {
        if (l.header) {
            bool mine = header_is_server(l.h, l.hlen, name);
            if (mine && from == SIZE_MAX)
                from = comments != SIZE_MAX ? comments : l.start;
            if (inside && !mine)
                break;
            inside = mine;
        }
        if (inside && !l.blank && !l.comment)
            to = l.end;
        if (!inside)
            comments = l.comment ? (comments != SIZE_MAX ? comments : l.start) : SIZE_MAX;
    }
    if (from == SIZE_MAX)
        return false;
    /* one blank line after the table goes with it */
    if (to < n && (t[to] == '\n' || (t[to] == '\r' && to + 1 < n && t[to + 1] == '\n')))
        to += t[to] == '\n' ? 1 : 2;
    *ret_from = from;
    *ret_to = to;
    return true;
}

bool itext_toml_has_table(const char *text, size_t len, const char *name)
{
    size_t a, b;
    return toml_span(text, len, name, &a, &b);
}

int itext_toml_remove(struct buf *text, const char *name)
{
    size_t from, to;
    if (!text->len || !toml_span(text->data, text->len, name, &from, &to))
        return 0;
    /* the blank line install put before the table goes too, when it ends the file */
    if (to == text->len && from >= 2 && text->data[from - 1] == '\n' &&
        text->data[from - 2] == '\n')
        from--;
    int r = splice(text, from, to, "", 0);
    return r < 0 ? r : 1;
}

/* A blank line before what is appended, unless the text is empty. */
static int toml_separate(struct buf *text)
{
    int r = 0;
    if (text->len && text->data[text->len - 1] != '\n')
        r = buf_append_char(text, '\n');
    if (r >= 0 && text->len)
        r = buf_append_char(text, '\n');
    return r;
}

int itext_toml_append_from(struct buf *text, const char *src, size_t len, const char *name)
{
    size_t from, to;
    if (!len || !toml_span(src, len, name, &from, &to))
        return 0;
    while (to > from && (src[to - 1] == '\n' || src[to - 1] == '\r') && to - from >= 2 &&
           (src[to - 2] == '\n' || src[to - 2] == '\r'))
        to--; /* the blank line after it stays behind */
    int r = toml_separate(text);
    if (r >= 0)
        r = buf_append(text, src + from, to - from);
    if (r >= 0 && to > from && src[to - 1] != '\n')
        r = buf_append_char(text, '\n');
    return r < 0 ? r : 1;
}

/* A TOML basic string. */
static int toml_string(struct buf *out, const char *s)
{
    int r = buf_append_char(out, '"');
    for (; r >= 0 && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            r = buf_printf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            r = buf_printf(out, "\\u%04x", c);
        else
            r = buf_append_char(out, (char)c);
    }
    return r < 0 ? r : buf_append_char(out, '"');
}

int itext_toml_add(struct buf *text, const char *name, const char *command, const char *const *args)
{
    int r = toml_separate(text);
    if (r >= 0)
        r = buf_printf(text, "[mcp_servers.%s]\ncommand = ", name);
    if (r >= 0)
        r = toml_string(text, command);
    if (r >= 0)
        r = buf_append_str(text, "\nargs = [");
    for (size_t i = 0; r >= 0 && args[i]; i++) {
        if (i)
            r = buf_append_str(text, ", ");
        if (r >= 0)
            r = toml_string(text, args[i]);
    }
    return r < 0 ? r : buf_append_str(text, "]\n");
}
