/* rblock.h - counted read buffers: the bytes a message was read into, held instead of copied.
 *
 * Whoever reads messages into a buffer of its own and hands them on as pointers into it may
 * use these: framing.c for newline-delimited input, and the transports' answer buffers (an
 * HTTP answer's body). A writer that cannot write a big piece of such a message at once takes
 * a reference to the buffer instead of copying the piece (framing_sendv); a buffer with more
 * than one reference is never moved or written over, its reader goes on in another. The
 * reader sets the buffer as the one being delivered (rblock_set_delivering) around the call
 * that hands a message on, so that a writer down the line can tell a piece it may hold.
 * Buffers bigger than RBLOCK_MAP are mappings of their own (mmap: grown by mremap without a
 * copy, their pages given back to the system when freed). The last reference to a big buffer
 * may keep it as the thread's one spare, which the next reader of a big message takes: the
 * request and the result of a big call share one buffer and its pages, instead of one kept
 * per reader and direction.
 *
 * The spare and the buffer being delivered are the thread's (the bridge has one loop on one
 * thread): not thread-safe across readers of different threads sharing buffers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define RBLOCK_MAP (256u * 1024u)

struct rblock {
    unsigned refs;
    bool mapped; /* mmap'd: cap > RBLOCK_MAP */
    size_t cap;
    char data[];
};

/* A buffer of at least cap bytes with one reference, the caller's; NULL on ENOMEM. */
struct rblock *rblock_new(size_t cap);

/* Grows a buffer the caller alone holds to at least cap bytes, its first used bytes kept; *pb
 * may move. -ENOMEM (then *pb is unchanged). */
int rblock_grow(struct rblock **pb, size_t cap, size_t used);

/* One more reference. */
void rblock_get(struct rblock *b);

/* Drops a reference; the last one frees the buffer, or, with keep (big messages go on), keeps
 * a big one as the thread's spare (the bigger of two). NULL-safe. */
void rblock_put(struct rblock *b, bool keep);

/* The spare, when there is one of at least cap bytes: the caller's, with one reference. */
struct rblock *rblock_spare_take(size_t cap);

/* Frees the spare (big messages no longer follow each other). */
void rblock_spare_drop(void);

/* Whether [p, p + len) lies in b's bytes (b may be NULL). */
bool rblock_holds(const struct rblock *b, const char *p, size_t len);

/* The buffer of the message on_message is being called with (NULL outside), and setting it
 * around the call; returns the one set before. */
struct rblock *rblock_delivering(void);
struct rblock *rblock_set_delivering(struct rblock *b);

/* A framing of this thread starts, or is gone: the spare goes with the last one. */
void rblock_user_add(void);
void rblock_user_remove(void);
