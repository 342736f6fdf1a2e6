/* rblock.h - counted read buffers: the bytes a message was read into, held instead of copied.
 *
 * Whoever reads messages into a buffer of its own and hands them on as pointers into it may
 * use these: framing.c for newline-delimited input, and the transports' answer buffers (an
 * HTTP answer's body). A writer that cannot write a big piece of such a message at once takes
 * a reference to the buffer instead of copying the piece (framing_sendv), and so does the
 * stand-in of a big request's params (jsonrpc.c) until its call is answered; a buffer with more
 * than one reference is never moved or written over, its reader goes on in another. The
 * reader sets the buffer as the one being delivered (rblock_set_delivering) around the call
 * that hands a message on, so that a writer down the line can tell a piece it may hold.
 * Buffers bigger than RBLOCK_MAP are mappings of their own (mmap: grown by mremap without a
 * copy, their pages given back to the system when freed). The last reference to a big buffer
 * may keep it as one of the thread's two spares, which the next readers of a big message take:
 * a big call's request (held by the call while its result is read) and its result, instead of
 * a buffer kept per reader and direction, or a fresh mapping and its page faults for every
 * result.
 *
 * The spares and the buffer being delivered are the thread's (the bridge has one loop on one
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
 * a big one as one of the thread's two spares (the two biggest). NULL-safe. */
void rblock_put(struct rblock *b, bool keep);

/* The smallest spare of at least cap bytes, when there is one: the caller's, with one
 * reference. */
struct rblock *rblock_spare_take(size_t cap);

/* Frees the spares (big messages no longer follow each other). */
void rblock_spare_drop(void);

/* The buffers of this thread alive: in use, held or spare. */
size_t rblock_live(void);

/* Whether [p, p + len) lies in b's bytes (b may be NULL). */
bool rblock_holds(const struct rblock *b, const char *p, size_t len);

/* The buffer of the message on_message is being called with (NULL outside), and setting it
 * around the call; returns the one set before. */
struct rblock *rblock_delivering(void);
struct rblock *rblock_set_delivering(struct rblock *b);

/* A framing of this thread starts, or is gone: the spares go with the last one. */
void rblock_user_add(void);
void rblock_user_remove(void);
