/* stdio_child.h - an MCP server run as a child process, spoken to over its stdin/stdout.
 *
 * (Not "stdio.h": bridge/ is on the include path of everything linking bridge_core, and a
 * header of that name would replace <stdio.h> for all of them.)
 *
 * stdio_child_new() starts the server (mcp-client.md 2): argv run directly, no shell, in a
 * process group of its own, with the minimal environment plus the entry's env. Its stdout and
 * stdin are framed as newline-delimited JSON (framing.h), its stderr lines go to on_stderr.
 * Its end comes as on_close(reason) once, then on_exit(status) once it is reaped. Shutdown
 * closes stdin, then sends SIGTERM and SIGKILL to its process group, so that nothing it
 * started outlives it. docs/development.md, "Modules in detail", has the environment, the end,
 * the shutdown sequence and how the exit is seen, in full. The process must ignore SIGPIPE.
 *
 * Callbacks come from the loop, never from inside a stdio_child_* call; any function here,
 * stdio_child_free() included, may be called from inside them. Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/framing.h"
#include "core/loop.h"

#define STDIO_CHILD_STDERR_LINE   4096
#define STDIO_CHILD_TERM_AFTER_MS 2000
#define STDIO_CHILD_KILL_AFTER_MS 2000
#define STDIO_CHILD_POLL_MS       50

struct stdio_child;

struct stdio_child_spec {
    const char *const *argv; /* required; argv[0] looked up on our PATH */
    const char *const *env;  /* "NAME=value" strings set over the minimal environment; NULL */
    const char *cwd;         /* NULL: ours */
    size_t max_frame;        /* 0: FRAMING_MAX_FRAME_DEFAULT */
    size_t max_pending;      /* 0: FRAMING_MAX_PENDING_DEFAULT */
    int64_t term_after_ms;   /* 0: STDIO_CHILD_TERM_AFTER_MS */
    int64_t kill_after_ms;   /* 0: STDIO_CHILD_KILL_AFTER_MS */
    bool poll_exit;          /* poll for the exit even where pidfds work (for tests) */
};

/* One message from the server's stdout; msg is borrowed, valid during the call only, not
 * NUL-terminated. */
typedef void (*stdio_child_message_fn)(const char *msg, size_t len, void *userdata);
/* One line of its stderr, without the line end, never empty, at most
 * STDIO_CHILD_STDERR_LINE bytes (the rest of a longer line is dropped); borrowed, not
 * NUL-terminated. */
typedef void (*stdio_child_stderr_fn)(const char *line, size_t len, void *userdata);
/* The connection is over (see above); no message follows. */
typedef void (*stdio_child_close_fn)(int reason, void *userdata);
/* The server has been reaped: status as from waitpid() (WIFEXITED ...), or -1 when someone
 * else reaped it. Nothing follows. */
typedef void (*stdio_child_exit_fn)(int status, void *userdata);

struct stdio_child_handler {
    stdio_child_message_fn on_message; /* required */
    stdio_child_stderr_fn on_stderr;   /* optional */
    stdio_child_close_fn on_close;     /* optional */
    stdio_child_exit_fn on_exit;       /* optional */
};

/* Starts the server. Nothing in spec is kept (it may go on return); h is copied. Failing to
 * start it - command not found or not executable, cwd missing, bad env entry - is reported
 * here with a message in e ("cannot run 'CMD': No such file or directory"), as -ENOENT,
 * -EACCES, -EINVAL ...; no callback follows and nothing is left running. Caller frees with
 * stdio_child_free(), before loop_free(). */
int stdio_child_new(struct loop *l, const struct stdio_child_spec *spec,
                    const struct stdio_child_handler *h, void *userdata, struct stdio_child **ret,
                    struct err *e) _must_check_;

/* Sends one message to the server's stdin (framing_send(): msg is the caller's, copied only
 * if it cannot be written at once). -EINVAL, -ENOBUFS as there; -ESHUTDOWN once shutdown has
 * begun (on_close begins it too); -EPIPE (or the error) once its pipes are gone. */
int stdio_child_send(struct stdio_child *s, const char *msg, size_t len) _must_check_;

/* Begins the shutdown described above; on_exit tells when it is over. Idempotent. */
void stdio_child_shutdown(struct stdio_child *s);

/* The server's pid, which is also its process group id. */
pid_t stdio_child_pid(const struct stdio_child *s);

/* Frees at once without any callback: a server still running gets SIGKILL (its whole group)
 * and is reaped before this returns (bounded: SIGKILL cannot be ignored), so no zombie and no
 * straggler remains. NULL-safe; safe from inside its callbacks. */
void stdio_child_free(struct stdio_child *s);
