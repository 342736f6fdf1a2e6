/* cmd_client_int.h - what `test` (cmd_client.c) and `call` (cmd_call.c) share: the one-shot
 * client of one server, run on its own loop by client_run(), which connects it, hands it to the
 * command's start once it is READY, and closes it at client_finish(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "credkit/args.h"
#include "credkit/log.h"

#include "cli/cmd_client.h"
#include "cli/progress.h"
#include "core/loop.h"
#include "core/stderr_tail.h"
#include "upstream/upstream.h"

struct probe_set;

enum client_kind {
    CLIENT_TEST,
    CLIENT_CALL,
};

struct client {
    enum client_kind kind;
    struct loop *loop;
    struct log *log;
    struct upstream *u;
    const struct mcp_server *server; /* borrowed from the one-entry config */
    bool json;
    unsigned config_flags; /* cli_config_for()'s: --allow-http */
    int64_t connect_timeout_ms;
    /* call */
    void (*start_call)(struct client *c); /* cmd_call.c's, when the server is READY */
    const char *tool;
    struct json_object *args;
    int64_t timeout_ms;
    struct upstream_call *call;
    /* test */
    struct upstream_list *list;
    struct loop_timer *guard; /* bounds the close */
    bool started, finished;
    int status;
    struct stderr_tail tail;   /* a stdio server's last stderr lines, quoted when it fails */
    struct progress *progress; /* the line on the terminal while it waits (NULL: none) */
    /* one of several probes on a shared loop (client_probe_run): the outcome goes there */
    struct probe_set *set;
    struct client_probe *probe;
    bool done; /* the probe's upstream closed (or gave up closing): its slot is free */
};

/* The wait is over (an answer came, or it failed): the progress line goes, before anything is
 * printed. */
void client_waited(struct client *c);
/* A failure: printed for test and call, kept for a probe. */
void client_failed(struct client *c, int error, const char *message);
/* The end with status: closes the upstream; the loop ends when it is CLOSED (or after a
 * grace). */
void client_finish(struct client *c, int status);
/* The exit status for an upstream failure (a sign-in needed has its own). */
int client_failure_status(int error);
/* The options of test and call (call alone takes --timeout). -EINVAL after a usage error
 * (reported). */
int client_options(struct client *c, int argc, char **argv);
/* Connects target (a name or a URL) and runs the loop until the command is done; returns the
 * exit status. */
int client_run(struct client *c, const char *target, const struct args_globals *g);
