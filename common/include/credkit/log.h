/* log.h - what a tool tells its user on stderr.
 *
 * A tool creates one `struct log` in main(), sets the level from --verbose/--quiet and hands it
 * to its modules. Library code in common/ never logs: it returns errors (err.h) and the tool
 * reports them once, with context. Every line passes through the redaction registry, so a
 * secret that was handled anywhere in the process never reaches the terminal or a log file.
 *
 * Format: "<prog>: <message>\n" for errors ("error: " is implied by the tool's exit status and
 * not repeated), "<prog>: warning: ..." for warnings, "<prog>: ..." for info and debug. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "credkit/macro.h"
#include "credkit/redact.h"

enum log_level {
    LOG_ERROR = 0,
    LOG_WARN = 1,
    LOG_INFO = 2,
    LOG_DEBUG = 3,
};

struct log;

/* prog is copied. Output goes to fd (normally STDERR_FILENO). Level starts at LOG_WARN.
 * Caller frees with log_free(). NULL on ENOMEM. */
struct log *log_new(const char *prog, int fd);
void log_free(struct log *l);

void log_set_level(struct log *l, enum log_level level);
enum log_level log_get_level(const struct log *l);

/* The error lines written so far, redacted and escaped as on stderr but without the prefix,
 * joined by '\n' ("" when none; at most 16 KiB, the first lines kept): the message of the
 * error object a --json command answers with when it fails (jsonw.h). Borrowed; valid until
 * the next message or log_free(). */
const char *log_errors(const struct log *l);

/* The registry every line passes through. Borrowed; owned by the log. */
struct redact *log_redact(struct log *l);

/* Writes one line (a trailing newline is added if missing) when level <= the log's level: the
 * message redacted (the registry's values replaced), then escaped for the terminal as
 * textsafe.h says, but for its line breaks and tabs. Escaping is idempotent, so a message whose
 * parts were escaped already comes out the same. */
void log_msg(struct log *l, enum log_level level, const char *fmt, ...) _printf_(3, 4);
void log_vmsg(struct log *l, enum log_level level, const char *fmt, va_list ap) _printf_(3, 0);

#define log_error(l, ...) log_msg((l), LOG_ERROR, __VA_ARGS__)
#define log_warn(l, ...)  log_msg((l), LOG_WARN, __VA_ARGS__)
#define log_info(l, ...)  log_msg((l), LOG_INFO, __VA_ARGS__)
#define log_debug(l, ...) log_msg((l), LOG_DEBUG, __VA_ARGS__)

/* A rate limit for one kind of message that a peer can make repeat without end (a server's
 * lines that are not JSON): at most burst of them in each window of window_ms; the rest are
 * counted, and the first one let through in a later window says how many were left out
 * ("N similar messages suppressed"), so that a flood costs a few lines a window, never one a
 * message, and nothing goes unsaid. Embedded, zeroed with LOG_RATELIMIT_INIT; no allocation;
 * time comes from the caller (monotonic milliseconds), so it is a pure function. */
struct log_ratelimit {
    int64_t window_ms;
    unsigned burst;
    int64_t start;       /* of the current window; 0 before the first message */
    unsigned n;          /* let through in the current window */
    unsigned suppressed; /* counted since the last one let through */
};
#define LOG_RATELIMIT_INIT(window, b) ((struct log_ratelimit){.window_ms = (window), .burst = (b)})
#define LOG_RATELIMIT_WINDOW_MS       10000
#define LOG_RATELIMIT_BURST           5

/* Whether a message at now may be logged. When it may, *ret_suppressed (if not NULL) is the
 * number of messages left out before it (say it first when > 0); when it may not, it is
 * counted. */
bool log_ratelimit_check(struct log_ratelimit *rl, int64_t now, unsigned *ret_suppressed);

/* The messages counted and not yet said, now zero: for the end of their source (a server's
 * connection closed), so that a flood that stops is still said in full. */
unsigned log_ratelimit_take(struct log_ratelimit *rl);
