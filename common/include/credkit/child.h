/* child.h - child processes, spawned safely, stopped one way and always reaped.
 *
 * A child runs its argv directly (execvp), or "/bin/sh -c CMD" only when the user wrote a
 * shell command. It gets its own process group, so a stop reaches everything it started, an
 * environment the caller controls, /dev/null for every stream it does not pipe, and no
 * descriptor of ours (O_CLOEXEC).
 *
 * Two layers:
 *  - child_spawn() and friends: the child and its pipes, for a caller that waits itself (the
 *    bridge's event loop: stdio servers, helper processes). The stop is a sequence of steps -
 *    SIGTERM to the group when due, SIGKILL a grace later - whose deadlines the caller waits
 *    for (child_stop_deadline()) along with the exit (child_pidfd() readable, or a poll every
 *    CHILD_REAP_POLL_MS), then calls child_stop_step() and child_wait(). Nothing here blocks
 *    but child_wait(block) and child_free().
 *  - child_run(): spawn, feed stdin, collect stdout (bounded, 1 MiB by default) and stderr
 *    (bounded, kept for the error message), enforce the timeout, reap; blocking in poll(), with
 *    the same steps. For CLIs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "credkit/buf.h"
#include "credkit/err.h"
#include "credkit/macro.h"

enum child_flags {
    CHILD_STDIN_PIPE = 1 << 0,  /* else /dev/null */
    CHILD_STDOUT_PIPE = 1 << 1, /* else /dev/null */
    CHILD_STDERR_PIPE = 1 << 2, /* else /dev/null, unless CHILD_STDERR_INHERIT */
    CHILD_STDERR_INHERIT = 1 << 3,
    CHILD_EXEC_LATER = 1 << 4, /* child_spawn() does not wait for the exec: child_exec_fd() */
};

/* Without a pidfd the exit cannot be waited for: look at least this often. */
#define CHILD_REAP_POLL_MS 10

struct child_spec {
    const char *const *argv;   /* used when shell_command is NULL; argv[0] looked up on PATH:
                                * OUR PATH (execvpe searches the calling process's environment),
                                * not the PATH in envp */
    const char *shell_command; /* the user wrote a shell command: run "/bin/sh -c" it */
    const char *const *envp;   /* the complete environment; NULL inherits ours */
    const char *cwd;           /* NULL: ours */
    unsigned flags;            /* enum child_flags; child_run() sets the pipes itself and honours
                                * only CHILD_STDERR_INHERIT (stderr then not captured) */
};

struct child;

/* Starts the child. Exec failures (command not found, not executable) are reported here, as
 * -ENOENT/-EACCES with a message naming the command ("cannot run 'CMD': ..."; CMD is argv[0],
 * or "/bin/sh" for a shell command), not as a mysterious exit status 127; so is a cwd that
 * cannot be entered. With CHILD_EXEC_LATER they are not waited for (the fork returns at once,
 * the exec takes its time): child_exec_result() tells them, the same way. The child starts
 * with default signal dispositions and an empty signal mask. Pipe ends we keep are O_CLOEXEC
 * and O_NONBLOCK; the child's ends are blocking. Caller frees with child_free(). */
int child_spawn(const struct child_spec *spec, struct child **ret, struct err *e) _must_check_;

/* CHILD_EXEC_LATER: a descriptor that becomes readable once the child has exec'd or failed to;
 * -1 once child_exec_result() has said which (and always without the flag). Borrowed: it stays
 * open until child_free(), so a loop watching it may stop watching after the answer. */
int child_exec_fd(const struct child *c);

/* CHILD_EXEC_LATER: 0 when the child exec'd, -EAGAIN when that is not known yet, else the
 * -errno and message child_spawn() would have failed with (the child then exits with 127 by
 * itself; child_wait() or child_free() reaps it). Ask again only after -EAGAIN; 0 without the
 * flag. */
int child_exec_result(struct child *c, struct err *e) _must_check_;

pid_t child_pid(const struct child *c);

/* Our ends of the pipes, -1 when not piped or already closed. Borrowed. */
int child_stdin_fd(const struct child *c);
int child_stdout_fd(const struct child *c);
int child_stderr_fd(const struct child *c);

/* Closes our end of the child's stdin (EOF for the child). */
void child_close_stdin(struct child *c);

/* Sends sig to the child's whole process group (also after the child itself was reaped, to
 * stop what it left behind). 0 when the group is already gone, else -errno. */
int child_kill(struct child *c, int sig);

/* Reaps the child if it has exited: returns 1 and the wait(2) status in *ret_status (NULL ok),
 * 0 when it is still running, -errno on failure. With block, waits for it. Once reaped, the
 * status is remembered and returned again. EINTR-safe. */
int child_wait(struct child *c, bool block, int *ret_status) _must_check_;

/* A descriptor that becomes readable when the child exits (a pidfd, Linux >= 5.3), opened on
 * first use while the child is unreaped; -1 when none can be had: poll child_wait() every
 * CHILD_REAP_POLL_MS then. Borrowed, valid until child_free() (stop watching it first). */
int child_pidfd(struct child *c);

/* The stop of the child's group, whether or not the child itself has been reaped. */
enum child_stop {
    CHILD_STOP_NONE,     /* not begun */
    CHILD_STOP_TERM_DUE, /* SIGTERM due at child_stop_deadline() */
    CHILD_STOP_KILL_DUE, /* SIGTERM sent; SIGKILL due at child_stop_deadline() */
    CHILD_STOP_KILLED,   /* SIGKILL sent: the exit follows, as it cannot be ignored */
};

/* Begins the stop: SIGTERM to the group term_after_ms after now_ms (at once for 0: sent before
 * this returns), SIGKILL kill_after_ms after that. Called again, it only brings a SIGTERM not
 * yet sent forward. Times are the caller's monotonic milliseconds (loop_now(), now_mono_ms()).
 * The pipes are left alone: the caller closes stdin when it means to (it may flush it first). */
void child_stop(struct child *c, int64_t now_ms, int64_t term_after_ms, int64_t kill_after_ms);

/* When child_stop_step() is next due; INT64_MAX when nothing is. */
int64_t child_stop_deadline(const struct child *c);

/* Sends what is due at now_ms (SIGTERM, SIGKILL) and returns where the stop is. Harmless to
 * call early or often. */
enum child_stop child_stop_step(struct child *c, int64_t now_ms);

/* Closes the pipes and the pidfd; if the child has not been reaped, kills its group with
 * SIGKILL and reaps it (blocking, bounded: SIGKILL cannot be ignored). Never leaves a zombie.
 * NULL-safe. */
void child_free(struct child *c);

struct child_run_opts {
    int64_t timeout_ms;     /* > 0 (else -EINVAL); SIGTERM to the group when it expires */
    int64_t kill_grace_ms;  /* SIGKILL this long after SIGTERM; 0 means 1000 */
    size_t max_stdout;      /* 0 means 1 MiB; beyond it the child is killed: -E2BIG */
    size_t max_stderr;      /* 0 means 64 KiB; beyond it stderr is truncated, not fatal */
    const void *stdin_data; /* written to the child's stdin, then closed; NULL: /dev/null */
    size_t stdin_len;
    bool secret_output; /* stdout holds a secret: use a secret buffer */
};

struct child_result {
    int exit_code;  /* exit status when it exited, -1 when killed by a signal */
    int signal;     /* the terminating signal, 0 when it exited */
    bool timed_out; /* we killed it at the timeout */
    struct buf out; /* stdout (secret buffer when secret_output) */
    struct buf err; /* stderr, possibly truncated */
};

/* Runs the child to completion (or the timeout) and reaps it. Returns 0 whenever the child ran,
 * whatever its exit status or whether it timed out: the caller judges *ret. Fails (< 0, with a
 * message) when it could not be started, or with -E2BIG ("output exceeds N bytes") when stdout
 * exceeded max_stdout (the group is killed and reaped). It ends when the child has been reaped
 * and both pipes reached EOF, so output of a background grandchild still holding them is
 * collected, up to the timeout. After the SIGKILL that follows a timeout it does not wait for
 * EOF. A child that stops reading stdin early is not an error (no SIGPIPE reaches us: it is
 * blocked in this thread around each write, the process-wide disposition is left alone).
 * *ret is written only on success; the caller releases it with child_result_release(). */
int child_run(const struct child_spec *spec, const struct child_run_opts *opts,
              struct child_result *ret, struct err *e) _must_check_;

void child_result_release(struct child_result *r);

/* In a freshly forked child, before exec: every signal back to its default disposition and an
 * empty signal mask (ignored signals would otherwise stay ignored across exec). Only calls
 * async-signal-safe functions. -errno on failure. */
int child_reset_signals(void);

/* Environment vectors: NULL-terminated arrays of "NAME=value" strings, each malloc'd. Values
 * may be secrets: child_env_free() wipes every string. */

/* Only HOME, PATH, USER, LOGNAME, SHELL, TERM and LANG from our environment (those set).
 * Caller frees with child_env_free(). -ENOMEM. */
int child_env_minimal(char ***ret) _must_check_;

/* A copy of our whole environment. Caller frees with child_env_free(). */
int child_env_inherit(char ***ret) _must_check_;

/* Sets NAME=value in *envp (which may be NULL: a vector is created), replacing an existing
 * NAME (the old string is wiped); grows the vector. -EINVAL for an empty NAME or one with '=',
 * -ENOMEM; *envp is unchanged on failure. */
int child_env_set(char ***envp, const char *name, const char *value) _must_check_;

/* Wipes and frees every string and the vector. NULL-safe. */
void child_env_free(char **envp);
