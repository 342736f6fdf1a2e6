/* stdio_child.h - the stdio transport: an MCP server run as a child process, spoken to over its
 * stdin/stdout, its events given straight to the transport handler (transport.h).
 *
 * (Not "stdio.h": bridge/ is on the include path of everything linking bridge_core.)
 *
 * The server runs as mcp-client.md 2 says: argv directly, no shell, in a process group of its
 * own, in cwd, with the minimal environment (child_env_minimal(); or, with inherit_env, the
 * bridge's whole environment) plus the entry's env. Its
 * stdout and stdin are newline-delimited JSON (framing.h); each stderr line goes to on_stderr.
 * The end: when its stdout ends or its framing fails, it is shut down; on_lost comes once - at
 * once for a reason of its own (-E2BIG: a message over max_frame), else when it has been
 * reaped, with what became of it ("the server exited with status 3") - then on_done.
 *
 * Shutdown (stdio_child_shutdown(), or by itself at the end): what is queued for stdin is
 * flushed and stdin closed; term_after_ms later SIGTERM to its group, kill_after_ms after that
 * SIGKILL (child.h's child_stop()); its output is read on meanwhile. Once it has exited the rest
 * of its group gets SIGTERM, then SIGKILL kill_after_ms later. The exit is seen through a pidfd
 * (else a waitpid() poll every STDIO_CHILD_POLL_MS). The process must ignore SIGPIPE.
 *
 * Callbacks come from the loop, never from inside a stdio_child_* call; any function here,
 * stdio_child_free() included, may be called from inside them. Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/framing.h"
#include "core/loop.h"
#include "transport/transport.h"

#define STDIO_CHILD_STDERR_LINE   4096
#define STDIO_CHILD_TERM_AFTER_MS 2000
#define STDIO_CHILD_KILL_AFTER_MS 2000
#define STDIO_CHILD_POLL_MS       50

struct stdio_child;

struct stdio_child_spec {
    const char *const *argv; /* required; argv[0] looked up on our PATH */
    const char *name;        /* the server's, for the log; NULL: argv[0] */
    struct log *log;         /* NULL: none */
    const char *const *env;  /* "NAME=value" strings set over the minimal environment; NULL */
    bool inherit_env;        /* over the bridge's whole environment instead ("inheritEnv") */
    const char *cwd;         /* NULL: ours */
    size_t max_frame;        /* 0: FRAMING_MAX_FRAME_DEFAULT */
    size_t max_pending;      /* 0: FRAMING_MAX_PENDING_DEFAULT */
    int64_t term_after_ms;   /* 0: STDIO_CHILD_TERM_AFTER_MS */
    int64_t kill_after_ms;   /* 0: STDIO_CHILD_KILL_AFTER_MS */
    bool poll_exit;          /* poll for the exit even where pidfds work (for tests) */
};

/* Starts the server. Nothing in spec is kept (it may go on return); h is copied (on_message and
 * on_lost required; on_error is never called). Failing to start it - command not found or not
 * executable, cwd missing, bad env entry - is reported here with a message in e ("cannot run
 * 'CMD': No such file or directory"), as -ENOENT, -EACCES, -EINVAL ...; no callback follows and
 * nothing is left running. Caller frees with stdio_child_free() (or transport_free() of
 * stdio_child_transport()), before loop_free(). */
int stdio_child_new(struct loop *l, const struct stdio_child_spec *spec,
                    const struct transport_handler *h, void *userdata, struct stdio_child **ret,
                    struct err *e) _must_check_;

/* The same object as a transport (its ops: send, sendv, shutdown, free). Borrowed. */
struct transport *stdio_child_transport(struct stdio_child *s);

/* Sends one message to the server's stdin (framing_send(): msg is the caller's, copied only
 * if it cannot be written at once). -EINVAL, -ENOBUFS as there; 0 without sending once the
 * connection is over but not yet reported (on_lost follows at the exit), including when this
 * send finds its stdin closed; -ESHUTDOWN once shutdown has begun; -EPIPE once on_lost was
 * called and its pipes are gone. */
int stdio_child_send(struct stdio_child *s, const char *msg, size_t len) _must_check_;
/* stdio_child_send() of a message in pieces (framing_sendv_held(): big pieces lying in held
 * wait as references to it). The same results. */
int stdio_child_sendv(struct stdio_child *s, const struct iovec *iov, int n,
                      struct rblock *held) _must_check_;

/* Begins the shutdown described above; on_done tells when it is over. Idempotent. */
void stdio_child_shutdown(struct stdio_child *s);

/* Once it has been reaped (from on_lost or on_done on): its status as from waitpid()
 * (WIFEXITED ...); -1 before, or when someone else reaped it. Kept for the tests of shutdown:
 * which signal ended the server is seen nowhere else once on_lost has told another reason. */
int stdio_child_status(const struct stdio_child *s);

/* Frees at once without any callback: a server still running gets SIGKILL (its whole group)
 * and is reaped before this returns (bounded: SIGKILL cannot be ignored), so no zombie and no
 * straggler remains. NULL-safe; safe from inside its callbacks. */
void stdio_child_free(struct stdio_child *s);
