/* cred_proc.h - one helper process run on the event loop: spawned, its output read as it
 * comes, bounded in size and in time, reaped, and its result handed back from the loop.
 *
 * The bridge's credential helpers (`secrets resolve`, `mcp-auth header`, a user's
 * headersHelper) run this way, never with a blocking call on the loop. Standard output is read
 * into a secret buffer (wiped when freed) up to max_out bytes (beyond: the process group is
 * killed and the run fails with -E2BIG); standard error is kept for the message, up to
 * CRED_PROC_STDERR_MAX bytes; what the caller gives for its standard input is written as it
 * reads it. At the timeout the group gets SIGTERM, and SIGKILL a second
 * later. The process's own group is killed whenever the run ends, so nothing it started
 * outlives it.
 *
 * done is called exactly once, from the loop (never from inside cred_proc_start()), unless
 * the run is cancelled first; the run's memory goes after done returns. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#include "core/loop.h"

#define CRED_PROC_TIMEOUT_DEFAULT_MS (10 * 1000)
#define CRED_PROC_STDERR_MAX         4096
#define CRED_PROC_STDIN_MAX          (48 * 1024) /* the largest request cred_helper sends */

struct strv;
struct cred_proc;

struct cred_proc_spec {
    const char *const *argv;   /* run directly (argv[0] looked up on PATH); or */
    const char *shell_command; /* "/bin/sh -c" this (the user wrote "!command") */
    const char *const *envp;   /* NULL: the bridge's own environment */
    /* Written to its standard input (copied, as a secret), which is then closed; NULL: its
     * standard input is /dev/null. A helper that exits without reading it all is no error. */
    const char *input;
    size_t input_len;
    int64_t timeout_ms; /* 0: CRED_PROC_TIMEOUT_DEFAULT_MS */
    size_t max_out;     /* 0: 64 KiB (HELPER_ANSWER_MAX) */
    /* Optional: each line of standard error as it comes (without its newline; a line longer
     * than CRED_PROC_LINE_MAX is cut), from the loop, before done. For a run that talks to a
     * person while it lasts (a sign-in prints the URL to open). Not called after a cancel. */
    void (*on_err_line)(const char *line, size_t len, void *userdata);
};

#define CRED_PROC_LINE_MAX 1024

/* What a finished run gave. Borrowed by done for its duration. */
struct cred_proc_result {
    int exit_code;   /* its exit status, -1 when a signal ended it */
    int signal;      /* the signal that ended it, 0 when it exited */
    bool timed_out;  /* killed at the timeout */
    const char *out; /* standard output (a secret), NUL-terminated */
    size_t out_len;
    const char *err; /* standard error, NUL-terminated, possibly cut */
    size_t err_len;
};

/* error 0 and res; or -E2BIG (output over max_out) / -EIO (reading failed, or its exit status
 * could not be had) with res NULL. */
typedef void (*cred_proc_done_fn)(struct cred_proc *p, int error,
                                  const struct cred_proc_result *res, void *userdata);

/* Starts the run. -errno with e naming the command when it cannot start (not found, not
 * executable: "cannot run 'CMD': ..."); done is not called then. */
int cred_proc_start(struct loop *l, const struct cred_proc_spec *spec, cred_proc_done_fn done,
                    void *userdata, struct cred_proc **ret, struct err *e) _must_check_;

/* Kills the run's process group and forgets it: no callback follows. Not from inside its own
 * done. NULL-safe. */
void cred_proc_cancel(struct cred_proc *p);

/* Splits a command line into words at blanks; '...' and "..." quote (no escapes inside '...',
 * backslash escapes " and \ inside "..."), no variables, no globbing. -EINVAL with e saying
 * what is wrong (an unterminated quote, an empty line), -ENOMEM. Words appended to out. */
int helper_cmdline_split(const char *line, struct strv *out, struct err *e) _must_check_;

/* The first line of a helper's standard error, for a message: control characters replaced,
 * at most max - 1 bytes. "" when there is none. */
void cred_proc_first_line(const char *err, size_t len, char *buf, size_t max);
