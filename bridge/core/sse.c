/* sse.c - Server-Sent Events parser (WHATWG "interpreting an event stream")
 *
 * The hot path: a chunk is scanned with memchr for CR and LF; a line that lies wholly inside the
 * chunk is interpreted in place, and only a line split across chunks is copied into p->line.
 * The next CR and LF positions are remembered until passed, so a chunk is scanned at most
 * twice whatever its mix of line ends (a fresh memchr per line would be quadratic on a CR-only
 * stream, where the LF search runs to the end of the chunk every time). A data line split
 * across chunks is the exception: once its "data:" is seen, its value goes into the event's
 * data as it comes (p->direct), so that a big message is copied once, into the buffer it is
 * delivered from. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/rblock.h"
#include "core/sse.h"

/* An event's data buffer starts at this size, and doubles. */
#define DATA_MIN 256u

static const unsigned char sse_bom[3] = {0xEF, 0xBB, 0xBF};

void sse_parser_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn fn,
                     void *userdata)
{
    if (!max_line)
        max_line = BUF_MAX_DEFAULT;
    if (!max_event)
        max_event = BUF_MAX_DEFAULT;
    *p = (struct sse_parser){
        .retry_ms = -1,
        .max_line = max_line,
        .max_event = max_event,
        .fn = fn,
        .userdata = userdata,
    };
    /* max_line is enforced by hand (sse_feed); the buffer cap leaves room for a partial BOM
     * even with an absurdly small max_line */
    buf_init(&p->line, max_line < sizeof(sse_bom) ? sizeof(sse_bom) : max_line);
    /* the data buffer holds a "\n" after every data line; the last one is dropped on dispatch,
     * so max_event + 1 buffered bytes are max_event dispatched ones */
    p->data_max = max_event < SIZE_MAX ? max_event + 1 : max_event;
    /* type and id values are parts of one line */
    buf_init(&p->type, max_line);
    buf_init(&p->id, max_line);
    buf_init(&p->last_id, max_line);
}

void sse_parser_release(struct sse_parser *p)
{
    buf_release(&p->line);
    rblock_put(p->data, false);
    p->data = NULL;
    p->data_len = 0;
    p->direct = 0;
    buf_release(&p->type);
    buf_release(&p->id);
    buf_release(&p->last_id);
}

/* Emptied, its storage kept unless above keep bytes. */
static void sse_buf_reuse(struct buf *b, size_t keep)
{
    if (b->cap > keep)
        buf_release(b);
    else
        buf_reset(b);
}

void sse_parser_reuse(struct sse_parser *p, sse_event_fn fn, void *userdata, size_t keep)
{
    sse_buf_reuse(&p->line, keep);
    if (p->data && p->data->cap > keep) {
        rblock_put(p->data, false);
        p->data = NULL;
    }
    p->data_len = 0;
    p->direct = 0;
    sse_buf_reuse(&p->type, keep);
    sse_buf_reuse(&p->id, keep);
    sse_buf_reuse(&p->last_id, keep);
    p->retry_ms = -1;
    p->error = 0;
    p->bom_checked = false;
    p->cr_pending = false;
    p->fn = fn;
    p->userdata = userdata;
}

static int sse_set(struct buf *b, const char *v, size_t n)
{
    buf_reset(b);
    return buf_append(b, v, n);
}

/* Appends to the event's data: -E2BIG past max_event (+ 1), -ENOMEM. A buffer that grows past
 * RBLOCK_MAP is a mapping (the thread's spare when it has one), grown without a copy. */
static int data_append(struct sse_parser *p, const char *s, size_t n)
{
    struct rblock *b = p->data;
    if (n > p->data_max || p->data_len > p->data_max - n)
        return -E2BIG;
    size_t need = p->data_len + n + 1;
    if (!b || b->cap < need) {
        size_t cap = b ? b->cap : DATA_MIN;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (p->data_max < SIZE_MAX && cap > p->data_max + 1)
            cap = p->data_max + 1; /* need <= data_max + 1 */
        if (!b || (cap > RBLOCK_MAP && !b->mapped)) {
            struct rblock *nb = cap > RBLOCK_MAP ? rblock_spare_take(cap) : NULL;
            if (!nb)
                nb = rblock_new(cap);
            if (!nb)
                return -ENOMEM;
            if (b)
                memcpy(nb->data, b->data, p->data_len);
            rblock_put(b, false);
            p->data = nb;
        } else if (rblock_grow(&p->data, cap, p->data_len) < 0) {
            return -ENOMEM;
        }
    }
    memcpy(p->data->data + p->data_len, s, n);
    p->data_len += n;
    p->data->data[p->data_len] = 0;
    return 0;
}

/* The event's data is over: emptied, or, when the callback's writer holds it, left to it. */
static void data_reset(struct sse_parser *p)
{
    p->data_len = 0;
    if (p->data && p->data->refs > 1) {
        rblock_put(p->data, false);
        p->data = NULL;
    }
}

static int sse_dispatch(struct sse_parser *p)
{
    int r = 0;

    /* the id buffer becomes the last event id before anything else, so an event without data
     * (a priming event's id) still moves it; it is not reset and so persists */
    if (p->last_id.len != p->id.len ||
        (p->id.len && memcmp(p->last_id.data, p->id.data, p->id.len) != 0)) {
        r = sse_set(&p->last_id, p->id.data, p->id.len);
        if (r < 0)
            return r;
    }

    if (p->data_len == 0) {
        buf_reset(&p->type);
        return 0;
    }

    /* every data line appended a "\n": drop the last one */
    p->data->data[--p->data_len] = 0;

    if (p->fn) {
        struct sse_event ev = {
            .type = p->type.len ? p->type.data : "message",
            .type_len = p->type.len ? p->type.len : strlen("message"),
            .data = p->data->data,
            .data_len = p->data_len,
            .id = buf_str(&p->last_id),
            .block = p->data,
        };
        r = p->fn(&ev, p->userdata);
    }
    data_reset(p);
    buf_reset(&p->type);
    return r < 0 ? r : 0;
}

/* All ASCII digits, at least one, and fits: else the field is ignored. */
static void sse_retry(struct sse_parser *p, const char *v, size_t n)
{
    int64_t ms = 0;

    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)v[i] - '0';
        if (d > 9)
            return;
        if (ms > (INT64_MAX - (int64_t)d) / 10)
            return;
        ms = ms * 10 + (int64_t)d;
    }
    p->retry_ms = ms;
}

/* One line without its line end; `line` may point into the caller's chunk. */
static int sse_line(struct sse_parser *p, const char *line, size_t n)
{
    const char *colon, *v;
    size_t flen, vlen;
    int r;

    if (n == 0)
        return sse_dispatch(p);
    if (line[0] == ':')
        return 0;

    colon = memchr(line, ':', n);
    if (colon) {
        flen = (size_t)(colon - line);
        v = colon + 1;
        vlen = n - flen - 1;
        if (vlen && v[0] == ' ') {
            v++;
            vlen--;
        }
    } else {
        flen = n;
        v = line + n;
        vlen = 0;
    }

    switch (flen) {
    case 4:
        if (memcmp(line, "data", 4) == 0) {
            r = data_append(p, v, vlen);
            if (r < 0)
                return r;
            return data_append(p, "\n", 1);
        }
        break;
    case 5:
        if (memcmp(line, "event", 5) == 0)
            return sse_set(&p->type, v, vlen);
        if (memcmp(line, "retry", 5) == 0)
            sse_retry(p, v, vlen);
        break;
    case 2:
        if (memcmp(line, "id", 2) == 0 && !memchr(v, 0, vlen))
            return sse_set(&p->id, v, vlen);
        break;
    default:
        break;
    }
    return 0;
}

/* Appends part of a line split across chunks, enforcing max_line. */
static int sse_line_append(struct sse_parser *p, const char *s, size_t n)
{
    if (n > p->max_line || p->line.len > p->max_line - n)
        return -E2BIG;
    return buf_append(&p->line, s, n);
}

/* More of a data line whose value goes straight into the event's data (p->direct). */
static int sse_direct_append(struct sse_parser *p, const char *s, size_t n)
{
    if (n > p->max_line || p->direct > p->max_line - n)
        return -E2BIG;
    p->direct += n;
    return data_append(p, s, n);
}

/* A line not ended in this chunk. Once it is known to be a data line ("data:" and the byte
 * after it, which tells whether a space is to be skipped), its value so far goes into the
 * event's data and the rest of it will too, as it comes, instead of into p->line. */
static int sse_partial_line(struct sse_parser *p, const char *s, size_t n)
{
    int r = sse_line_append(p, s, n);
    const char *l = p->line.data;
    size_t len = p->line.len;
    if (r < 0 || len < 6 || memcmp(l, "data:", 5) != 0)
        return r;
    size_t v = l[5] == ' ' ? 6 : 5;
    r = data_append(p, l + v, len - v);
    if (r < 0)
        return r;
    p->direct = len;
    buf_reset(&p->line);
    return 0;
}

/* The stream's start: one UTF-8 BOM is skipped, also when split across chunks. The bytes of a
 * BOM seen so far wait in p->line (only ever BOM bytes, so they can be taken as the start of
 * the first line if the BOM does not complete). 1 when the whole chunk is held so, 0 to go on
 * from *s, < 0 on error. */
static int sse_skip_bom(struct sse_parser *p, const char **s, size_t len)
{
    const char *c = *s;
    size_t held = p->line.len, i = 0;

    while (held + i < sizeof(sse_bom) && i < len && (unsigned char)c[i] == sse_bom[held + i])
        i++;
    if (held + i == sizeof(sse_bom)) {
        buf_reset(&p->line);
        *s += i;
        p->bom_checked = true;
        return 0;
    }
    if (i == len) {
        int r = buf_append(&p->line, c, i);
        return r < 0 ? r : 1;
    }
    p->bom_checked = true;
    return 0;
}

/* The next line end at or after s (end when none): the nearer of the next LF and the next CR,
 * each looked for again only once s has passed it (NULL: not looked for yet), so that a chunk
 * is scanned once. */
static const char *sse_next_eol(const char *s, const char *end, const char **lf, const char **cr)
{
    if (!*lf || *lf < s) {
        *lf = memchr(s, '\n', (size_t)(end - s));
        if (!*lf)
            *lf = end;
    }
    if (!*cr || *cr < s) {
        *cr = memchr(s, '\r', (size_t)(end - s));
        if (!*cr)
            *cr = end;
    }
    return *lf < *cr ? *lf : *cr;
}

int sse_feed(struct sse_parser *p, const char *data, size_t len)
{
    const char *s = data, *end = data + len, *lf = NULL, *cr = NULL;
    int r = 0;

    if (p->error < 0)
        return p->error;
    if (len == 0)
        return 0;

    if (!p->bom_checked) {
        r = sse_skip_bom(p, &s, len);
        if (r != 0) {
            r = r < 0 ? r : 0;
            goto out;
        }
    }

    if (p->cr_pending && s < end) {
        p->cr_pending = false;
        if (*s == '\n')
            s++;
    }

    while (s < end) {
        const char *eol = sse_next_eol(s, end, &lf, &cr), *line;
        size_t n;

        if (eol == end) {
            r = p->direct ? sse_direct_append(p, s, (size_t)(end - s))
                          : sse_partial_line(p, s, (size_t)(end - s));
            goto out;
        }

        bool direct = p->direct != 0;
        n = (size_t)(eol - s);
        line = NULL;
        if (direct) { /* the end of a data line whose value is in the event's data already */
            r = sse_direct_append(p, s, n);
            if (r >= 0)
                r = data_append(p, "\n", 1);
            p->direct = 0;
            if (r < 0)
                goto out;
        } else if (p->line.len) {
            r = sse_line_append(p, s, n);
            if (r < 0)
                goto out;
            line = p->line.data;
            n = p->line.len;
        } else {
            if (n > p->max_line) {
                r = -E2BIG;
                goto out;
            }
            line = s;
        }

        s = eol + 1;
        if (*eol == '\r') {
            if (s == end)
                p->cr_pending = true;
            else if (*s == '\n')
                s++;
        }

        if (direct)
            continue;
        r = sse_line(p, line, n);
        if (p->line.len)
            buf_reset(&p->line);
        if (r < 0)
            goto out;
    }

out:
    if (r < 0)
        p->error = r;
    return r < 0 ? r : 0;
}

void sse_end(struct sse_parser *p)
{
    buf_reset(&p->line);
    data_reset(p);
    p->direct = 0;
    buf_reset(&p->type);
    buf_reset(&p->id);
    p->bom_checked = false;
    p->cr_pending = false;
    p->error = 0;
}

const char *sse_last_id(const struct sse_parser *p)
{
    return buf_str(&p->last_id);
}

int64_t sse_retry_ms(const struct sse_parser *p)
{
    return p->retry_ms;
}
