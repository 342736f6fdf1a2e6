/* naming.c - exposed names of tools and prompts: prefix, sanitise, bound, deduplicate */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/hashmap.h"

#include "config/naming.h"

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

#define KEEP (NAMING_MAX - 7) /* bytes kept before "_" + 6 hex digits */

static uint32_t fnv1a(uint32_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= FNV_PRIME;
    }
    return h;
}

static uint32_t fnv1a_str(const char *s)
{
    return fnv1a(FNV_OFFSET, s);
}

static bool is_allowed(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* The length of the UTF-8 sequence a lead byte opens (1 for anything that is not a valid
 * lead: ASCII, a stray continuation byte, 0xC0, 0xC1, 0xF5..0xFF). */
static int utf8_len(unsigned char c)
{
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 1;
}

/* Appends the sanitised s to out[0..NAMING_MAX) at *len; *len counts every byte the full
 * sanitised name would have, so the caller sees when it did not fit. */
static void sanitise(const char *s, char *out, size_t *len)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char c = *p++;
        if (!is_allowed(c)) {
            c = '_';
            /* one '_' for a whole character: swallow its continuation bytes */
            for (int n = utf8_len(p[-1]) - 1; n > 0 && (*p & 0xC0) == 0x80; n--)
                p++;
        }
        if (*len < NAMING_MAX)
            out[*len] = (char)c;
        (*len)++;
    }
}

/* The server name without a "-mcp" suffix (the pi adapter's "short"): "github-mcp" ->
 * "github"; a name that is only "-mcp", or has no such suffix, stays as it is. Into buf when cut
 * (a name too long for buf is hashed with its suffix, as written: names that long are cut to
 * the bound anyway). */
static const char *short_name(const char *server, char *buf, size_t size)
{
    static const char suffix[] = "-mcp";
    size_t n = strlen(server), sl = sizeof(suffix) - 1;
    if (n <= sl || strcmp(server + n - sl, suffix) != 0 || n - sl >= size)
        return server;
    memcpy(buf, server, n - sl);
    buf[n - sl] = '\0';
    return buf;
}

void naming_expose(enum mcp_tool_prefix prefix, const char *server, const char *name,
                   char buf[static NAMING_MAX + 1])
{
    const char *head = "", *mid = "", *tail = "";
    char short_buf[256];
    if (!server)
        server = "";
    if (!name)
        name = "";
    switch (prefix) {
    case MCP_TOOL_PREFIX_MCP:
        head = "mcp_";
        mid = server;
        tail = "_";
        break;
    case MCP_TOOL_PREFIX_SERVER:
        mid = server;
        tail = "_";
        break;
    case MCP_TOOL_PREFIX_SHORT:
        mid = short_name(server, short_buf, sizeof(short_buf));
        tail = "_";
        break;
    case MCP_TOOL_PREFIX_NONE:
        break;
    }

    size_t len = 0;
    sanitise(head, buf, &len);
    sanitise(mid, buf, &len);
    sanitise(tail, buf, &len);
    sanitise(name, buf, &len);

    if (len > NAMING_MAX) {
        /* the hash of the unsanitised full name: "a.b" and "a/b" differ here */
        uint32_t h = fnv1a(fnv1a(fnv1a(fnv1a_str(head), mid), tail), name);
        uint32_t folded = (h >> 24) ^ (h & 0xFFFFFFu);
        (void)snprintf(buf + KEEP, NAMING_MAX + 1 - KEEP, "_%06x", (unsigned)folded);
        return;
    }
    if (len == 0)
        buf[len++] = '_';
    buf[len] = 0;
}

/* The set maps each name to its entry, which remembers the next suffix to try for that name as
 * a base, so n tools of one name cost O(n) in all, not O(n^2): the set only grows, so every
 * suffix below the hint stays taken. */
struct naming_entry {
    unsigned next; /* next suffix to try when this name collides; 0: not yet (2) */
};

struct naming_set {
    struct hashmap *names; /* name -> struct naming_entry (owned) */
};

struct naming_set *naming_set_new(void)
{
    struct naming_set *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->names = hashmap_new();
    if (!s->names) {
        free(s);
        return NULL;
    }
    return s;
}

void naming_set_free(struct naming_set *s)
{
    if (!s)
        return;
    size_t iter = 0;
    const char *name;
    void *entry;
    while (hashmap_next(s->names, &iter, &name, &entry))
        free(entry);
    hashmap_free(s->names);
    free(s);
}

/* Adds name (known to be absent). */
static int insert(struct naming_set *s, const char *name)
{
    struct naming_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    int r = hashmap_put(s->names, name, e);
    if (r < 0)
        free(e);
    return r;
}

int naming_set_claim(struct naming_set *s, char buf[static NAMING_MAX + 1])
{
    struct naming_entry *base = hashmap_get(s->names, buf);
    if (!base) {
        int r = insert(s, buf);
        return r < 0 ? r : 0;
    }

    size_t base_len = strlen(buf);
    unsigned n = base->next ? base->next : 2;
    char cand[NAMING_MAX + 1];
    for (;; n++) {
        char suffix[16];
        int sl = snprintf(suffix, sizeof(suffix), "_%u", n);
        if (sl < 0 || (size_t)sl >= sizeof(suffix))
            return -EOVERFLOW; /* cannot happen: a set this large does not fit in memory */
        size_t keep = base_len + (size_t)sl <= NAMING_MAX ? base_len : NAMING_MAX - (size_t)sl;
        memcpy(cand, buf, keep);
        memcpy(cand + keep, suffix, (size_t)sl + 1);
        if (!hashmap_get(s->names, cand))
            break;
    }
    int r = insert(s, cand);
    if (r < 0)
        return r;
    base->next = n + 1;
    memcpy(buf, cand, strlen(cand) + 1);
    return 1;
}
