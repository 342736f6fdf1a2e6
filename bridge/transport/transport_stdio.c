/* transport_stdio.c - transport.h over a child process (stdio_child.h): the entry's command
 * and args run with its env expanded from the credentials' answer; the connection is over
 * when the child closes its output or exits.
 *
 * The end is reported (on_lost) once the child has been reaped, with what became of it ("the
 * server exited with status 3", "was killed by signal 9"), unless the connection broke for a
 * reason of its own first (a message over the bound): a server that crashes reads the same
 * each time, however its pipes happened to close, and its last stderr lines are all in by
 * then. Meanwhile what is sent is dropped (0): the end follows. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "credkit/list.h"
#include "credkit/mcp_template.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"

#include "creds/credentials.h"
#include "transport/stdio_child.h"
#include "transport/transport.h"

enum stdio_phase {
    STDIO_OPEN,
    STDIO_LOST,  /* on_lost reported; waiting for the exit */
    STDIO_FREED, /* transport_free() called; the memory goes after the iteration */
};

struct transport_stdio {
    struct transport t;
    struct loop *loop;
    struct log *log;
    char *name; /* the server's, for the log */
    struct stdio_child *child;
    struct transport_handler h;
    void *userdata;
    enum stdio_phase phase;
    bool ending;    /* the connection is over (on_close, or a write found it broken): on_lost
                  * follows at the exit */
    int end_reason; /* on_close's reason: 0 (EOF), -EPIPE, -E2BIG ... */
    struct loop_release release;
};

static struct transport_stdio *of(struct transport *t)
{
    return (struct transport_stdio *)(void *)t;
}

static void s_message(const char *msg, size_t len, void *userdata)
{
    struct transport_stdio *s = userdata;
    if (s->phase == STDIO_OPEN)
        s->h.on_message(msg, len, s->userdata);
}

static void s_stderr(const char *line, size_t len, void *userdata)
{
    struct transport_stdio *s = userdata;
    if (s->phase != STDIO_FREED && s->h.on_stderr)
        s->h.on_stderr(line, len, s->userdata);
}

/* Reports the end: reason as from on_close, status as from on_exit (-1: unknown). */
static void s_lost(struct transport_stdio *s, int reason, int status)
{
    char why[96];
    if (s->phase != STDIO_OPEN)
        return;
    s->phase = STDIO_LOST;
    if (reason == -E2BIG)
        (void)snprintf(why, sizeof(why), "the server sent a message over the size bound");
    else if (reason != 0 && reason != -EPIPE)
        (void)snprintf(why, sizeof(why), "%s", strerror(-reason));
    else if (status >= 0 && WIFEXITED(status))
        (void)snprintf(why, sizeof(why), "the server exited with status %d", WEXITSTATUS(status));
    else if (status >= 0 && WIFSIGNALED(status))
        (void)snprintf(why, sizeof(why), "the server was killed by signal %d (%s)",
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        (void)snprintf(why, sizeof(why), "the server exited");
    /* a server gone (its end seen first on stdout or on stdin) is one reason: -ECONNRESET */
    s->h.on_lost(reason < 0 && reason != -EPIPE ? reason : -ECONNRESET, why, s->userdata);
}

static void s_close(int reason, void *userdata)
{
    struct transport_stdio *s = userdata;
    if (!s->ending || (s->end_reason == -EPIPE && reason != 0))
        s->end_reason = reason;
    s->ending = true;
    if (reason != 0 && reason != -EPIPE)
        s_lost(s, reason, -1); /* a reason of its own: said at once */
}

static void s_exit(int status, void *userdata)
{
    struct transport_stdio *s = userdata;
    if (status >= 0 && WIFEXITED(status))
        log_debug(s->log, "server '%s': exited with status %d", s->name, WEXITSTATUS(status));
    else if (status >= 0 && WIFSIGNALED(status))
        log_debug(s->log, "server '%s': killed by signal %d", s->name, WTERMSIG(status));
    s_lost(s, s->end_reason, status);
    if (s->phase != STDIO_FREED && s->h.on_done)
        s->h.on_done(s->userdata);
}

static const struct stdio_child_handler stdio_handler = {
    .on_message = s_message,
    .on_stderr = s_stderr,
    .on_close = s_close,
    .on_exit = s_exit,
};

static int s_send(struct transport *t, const char *msg, size_t len, unsigned flags, uint64_t tag)
{
    struct transport_stdio *s = of(t);
    (void)flags;
    (void)tag;
    if (s->ending && s->phase == STDIO_OPEN)
        return 0; /* the server is going: on_lost says how, at its exit */
    int r = stdio_child_send(s->child, msg, len);
    if (r == -EPIPE && s->phase == STDIO_OPEN) {
        /* it closed its input, most likely by exiting: on_close and on_exit follow */
        s->ending = true;
        if (!s->end_reason)
            s->end_reason = -EPIPE;
        return 0;
    }
    return r;
}

static int s_shutdown(struct transport *t)
{
    stdio_child_shutdown(of(t)->child); /* on_exit follows */
    return 0;
}

static void s_release(struct loop_release *node)
{
    struct transport_stdio *s = list_entry(node, struct transport_stdio, release);
    free(s->name);
    free(s);
}

static void s_free(struct transport *t)
{
    struct transport_stdio *s = of(t);
    if (s->phase == STDIO_FREED)
        return;
    s->phase = STDIO_FREED;
    stdio_child_free(s->child);
    s->child = NULL;
    loop_release(s->loop, &s->release, s_release);
}

static const struct transport_ops stdio_ops = {
    .name = "stdio",
    .send = s_send,
    .shutdown = s_shutdown,
    .free = s_free,
};

int transport_stdio_open(const struct transport_spec *spec, const struct transport_handler *h,
                         void *userdata, struct transport **ret, struct err *e)
{
    const struct mcp_server *srv = spec->server;
    struct strv env = STRV_INIT, argv = STRV_INIT;
    struct transport_stdio *s = NULL;
    char *cwd = NULL;
    int r;

    r = credentials_expand_pairs(srv->env, "=", spec->lookup, spec->lookup_userdata, &env, e);
    if (r < 0) {
        err_prefix(e, "env");
        goto out;
    }
    r = strv_push(&argv, srv->command);
    for (size_t i = 0; r >= 0 && srv->args && srv->args[i]; i++) {
        /* ${NAME}s resolved at each start: a rotated value is used from the next one on */
        char *arg = NULL;
        r = mcp_expand(srv->args[i], spec->lookup, spec->lookup_userdata, &arg, e);
        if (r < 0) {
            err_prefix(e, "\"args\" element %zu", i + 1);
            goto out;
        }
        r = strv_push_take(&argv, arg); /* wiped and freed on failure */
    }
    if (r >= 0) {
        r = mcp_server_expand_cwd(srv, spec->lookup, spec->lookup_userdata, &cwd, e);
        if (r < 0)
            goto out;
    }
    s = calloc(1, sizeof(*s));
    if (s)
        s->name = strdup(srv->name);
    if (r < 0 || !s || !s->name) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    s->t.ops = &stdio_ops;
    s->loop = spec->loop;
    s->log = spec->log;
    s->h = *h;
    s->userdata = userdata;
    struct stdio_child_spec sp = {
        .argv = (const char *const *)argv.v,
        .env = (const char *const *)env.v,
        .cwd = cwd,
        .max_frame = spec->max_message,
    };
    r = stdio_child_new(spec->loop, &sp, &stdio_handler, s, &s->child, e);
    if (r < 0)
        goto out;
    log_debug(s->log, "server '%s': started '%s' (pid %d)", srv->name, srv->command,
              (int)stdio_child_pid(s->child));
    *ret = &s->t;
    s = NULL;
out:
    if (s)
        free(s->name);
    free(s);
    strv_release_secure(&argv); /* an argument may hold a secret the user put there */
    strv_release_secure(&env);
    secure_free(cwd);
    return r;
}
