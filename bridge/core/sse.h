/* sse.h - a Server-Sent Events parser that follows the WHATWG event-stream rules.
 *
 * Fed arbitrary chunks of a text/event-stream body (as they come off the network), it calls
 * back once per dispatched event, following html.spec.whatwg.org, "Interpreting an event
 * stream" (line ends, comments, fields, the last event id, retry). An event with empty data
 * (the TS SDK's priming event) IS dispatched, with data_len 0; only an event without any data
 * line is not. Bytes are passed through as they are. Bounded: a line over max_line or an event
 * over max_event is -E2BIG, and the stream must be dropped. One parser can outlive one HTTP
 * response, like an EventSource: sse_end finishes a stream and the next sse_feed starts a new
 * one, keeping the last event id and retry. docs/development.md, "Modules in detail", has the
 * rules as implemented, the note for MCP and the bounds.
 *
 * An event's data is built in a counted buffer (core/rblock.h) and handed out with it: the
 * callback may set it as the buffer being delivered, so that a writer holds a big message where
 * it lies instead of copying it; a held buffer is never written again (the next event gets
 * another). The value of a data line split across chunks goes straight into that buffer, not
 * through the line buffer first: a message of 8 MiB on one data line is one copy of it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

struct rblock;

struct sse_event {
    const char *type; /* "message" unless the event said otherwise; borrowed for the call */
    size_t type_len;  /* a type may hold NULs ("message\0x" is not "message"): compare with
                       * type_len == 7 && memcmp(type, "message", 7) == 0 */
    const char *data; /* NUL-terminated (data may hold NULs: data_len is the truth); borrowed */
    size_t data_len;
    const char *id;       /* the last event id after this event ("" when none); borrowed */
    struct rblock *block; /* the buffer data lies in (rblock.h): a writer may take a reference */
};

/* Return < 0 to stop parsing (sse_feed returns that value). */
typedef int (*sse_event_fn)(const struct sse_event *ev, void *userdata);

/* Embedded value; fields are private to sse.c. */
struct sse_parser {
    struct buf line;     /* current partial line (or a partial BOM at the very start) */
    struct rblock *data; /* data of the event being built: [0, data_len) and a NUL, or NULL */
    size_t data_len;
    size_t data_max;    /* max_event + 1: a "\n" after every data line, the last one dropped */
    size_t direct;      /* a partial data line's length so far, its value put in data: 0 none */
    struct buf type;    /* event type of the event being built */
    struct buf id;      /* the stream's last event ID buffer, set by id fields */
    struct buf last_id; /* last event id: the id buffer as of the last blank line */
    int64_t retry_ms;   /* last retry field seen, -1 when none */
    size_t max_line;
    size_t max_event;
    int error; /* sticky: once < 0, sse_feed returns it until sse_end */
    bool bom_checked;
    bool cr_pending; /* the previous chunk ended in CR */
    sse_event_fn fn;
    void *userdata;
};

/* max_line and max_event of 0 mean BUF_MAX_DEFAULT. fn may be NULL (only ids and retry are
 * tracked). Release with sse_parser_release. */
void sse_parser_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn fn,
                     void *userdata);
void sse_parser_release(struct sse_parser *p);
/* p, initialised before, made as sse_parser_init() would make it with the same bounds and the
 * given fn and userdata (no last event id, no retry), for a new stream: the storage of its
 * buffers is kept, emptied, unless one grew above keep bytes (then given back). */
void sse_parser_reuse(struct sse_parser *p, sse_event_fn fn, void *userdata, size_t keep);

/* Feeds a chunk; calls fn for every event it completes. -E2BIG past the bounds, -ENOMEM, or
 * fn's negative value (the rest of the chunk is dropped); each of these is sticky. Linear in
 * len. */
int sse_feed(struct sse_parser *p, const char *data, size_t len) _must_check_;

/* The stream ended: an event not terminated by a blank line is discarded (spec), and so are a
 * partial line and the stream's id buffer; the sticky error is cleared. The last event id and
 * retry are kept for the reconnection (Last-Event-ID, the delay before it). Per the spec a new
 * stream's id buffer starts empty, so a blank line on it before any id field clears the last
 * event id (Chromium seeds the buffer with the old id instead; we follow the spec). */
void sse_end(struct sse_parser *p);

/* The last event id ("" when none: send no Last-Event-ID then) and the last retry (-1 when
 * none). Borrowed, valid until the next sse_feed, sse_end or sse_parser_release. */
const char *sse_last_id(const struct sse_parser *p);
int64_t sse_retry_ms(const struct sse_parser *p);
