/* trace.h - metadata-only protocol tracing: one JSONL file per session, a record per message.
 *
 * The pi adapter's "trace" (its mcp-trace.ts), with the same record shape, so that one tool
 * reads the files of both: {"version":1,"timestamp","direction","server","transport","kind",
 * "status","method","id","errorCode","bytes","durationMs"}. A record is built from a message's
 * envelope alone - its method, its id (a number as it is, a string as "[REDACTED_ID]"), its
 * error code - and the sizes and times the caller gives: params, results, error messages,
 * headers and URLs never reach the file; the server name and method are redacted as the
 * adapter redacts them (a word such as token or secret hides the whole text, a URL is cut
 * out). The file, 0600 in a directory created 0700, is opened (truncated) at the first record,
 * so that a session whose servers trace nothing leaves none. Records are buffered and written
 * from the loop a moment later, or at once past TRACE_FLUSH_BYTES: a write of a few kilobytes
 * to a regular file is all the loop ever waits for. The bounds are the adapter's: the record
 * that would pass max_bytes, or the one past max_events, stops the trace for the session (no
 * rotation; the file keeps what it has). A failure to create or write the file stops it too,
 * with one warning: tracing never changes what the bridge does. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define TRACE_VERSION            1
#define TRACE_MAX_BYTES_DEFAULT  (256 * 1024)
#define TRACE_MAX_EVENTS_DEFAULT 10000
#define TRACE_DIR_DEFAULT        ".pi/mcp-traces" /* the adapter's, from the working directory */
#define TRACE_FLUSH_BYTES        (16 * 1024)
#define TRACE_FLUSH_DELAY_MS     200

struct trace;

struct trace_opts {
    struct loop *loop; /* required */
    struct log *log;   /* required: the one warning when the trace stops on a failure */
    /* The file (copied); relative to the working directory. NULL: a name of its own per
     * session, TRACE_DIR_DEFAULT/mcp-<UTC time>-<8 random letters>.jsonl. */
    const char *file;
    int64_t max_bytes;  /* <= 0: TRACE_MAX_BYTES_DEFAULT */
    int64_t max_events; /* <= 0: TRACE_MAX_EVENTS_DEFAULT */
};

/* Sets up a trace; no file is touched before the first record. Caller frees. -ENOMEM only. */
int trace_new(const struct trace_opts *opts, struct trace **ret, struct err *e) _must_check_;

/* Writes what is buffered, closes the file, frees. NULL-safe. */
void trace_free(struct trace *t);

enum trace_direction {
    TRACE_OUTBOUND, /* from the bridge to the server */
    TRACE_INBOUND,  /* from the server */
};

enum trace_status {
    TRACE_SENT,     /* outbound, handed to the transport */
    TRACE_RECEIVED, /* inbound */
    TRACE_ERROR,    /* outbound, the transport refused it */
};

/* One message exchanged with a server. */
struct trace_message {
    const char *server;    /* the entry's name */
    const char *transport; /* "stdio", "streamable-http", "sse" */
    enum trace_direction direction;
    enum trace_status status;
    struct json_object *msg; /* the JSON-RPC message (borrowed): only its envelope is read */
    size_t bytes;            /* its size on the wire */
    int64_t duration_ms;     /* a response's time since its request was sent; < 0: none */
};

/* Records m (nothing once the trace has stopped). Never fails: a failure stops the trace. */
void trace_record(struct trace *t, const struct trace_message *m);

/* The file's path once it has been opened, else NULL. Borrowed. */
const char *trace_path(const struct trace *t);

/* Whether the trace has stopped: a bound reached, or the file could not be written. */
bool trace_stopped(const struct trace *t);
