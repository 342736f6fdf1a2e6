/* sse.h - a Server-Sent Events parser that follows the WHATWG event-stream rules.
 *
 * Fed arbitrary chunks of a text/event-stream body (as they come off the network), it calls
 * back once per dispatched event. Rules (html.spec.whatwg.org, "Interpreting an event
 * stream"): lines end in CRLF, LF or CR (a CR at the end of one chunk followed by LF at the
 * start of the next is one line end); one leading UTF-8 BOM is skipped (also when split across
 * chunks); lines starting with ':' are comments; "field: value" split at the first colon, one
 * space after the colon removed; a line without a colon is a field with an empty value; fields:
 * event (type), data (value + "\n" appended to the data buffer), id (sets the stream's last
 * event ID buffer unless the value contains NUL), retry (digits only, else ignored, also on
 * overflow: the reconnection time in ms); other fields are ignored. A blank line dispatches:
 * first the last event ID buffer becomes the last event id (sse_last_id) - also when nothing is
 * dispatched, so an id-only event still updates it; then, when the data buffer is empty, data
 * and type are reset and nothing is dispatched; otherwise the single trailing "\n" is dropped,
 * the type defaults to "message", fn is called, data and type are reset.
 *
 * Note for MCP: "data: \n\n" (the TS SDK's priming event "id: X\nretry: N\ndata: \n\n") is, per
 * the spec, an event with empty data (the data buffer held "\n"), so it IS dispatched with
 * data_len 0; the transport skips such events (mcp-client.md 1). Only an event without any data
 * line is not dispatched.
 *
 * Bytes are passed through as they are: invalid UTF-8 is not replaced with U+FFFD (the JSON
 * parser behind us rejects it).
 *
 * Bounded: a line longer than max_line bytes (without its line end) or an event whose data
 * exceeds max_event bytes is -E2BIG; the stream must be dropped, and every later sse_feed
 * returns the same error until sse_end.
 *
 * One parser can outlive one HTTP response, like an EventSource: sse_end finishes a stream and
 * the next sse_feed starts a new one (a reconnection), keeping the last event id and retry. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/buf.h"
#include "credkit/macro.h"

struct sse_event {
    const char *type; /* "message" unless the event said otherwise; borrowed for the call */
    size_t type_len;  /* a type may hold NULs ("message\0x" is not "message"): compare with
                       * type_len == 7 && memcmp(type, "message", 7) == 0 */
    const char *data; /* NUL-terminated (data may hold NULs: data_len is the truth); borrowed */
    size_t data_len;
    const char *id; /* the last event id after this event ("" when none); borrowed */
};

/* Return < 0 to stop parsing (sse_feed returns that value). */
typedef int (*sse_event_fn)(const struct sse_event *ev, void *userdata);

/* Embedded value; fields are private to sse.c. */
struct sse_parser {
    struct buf line;    /* current partial line (or a partial BOM at the very start) */
    struct buf data;    /* data of the event being built */
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
