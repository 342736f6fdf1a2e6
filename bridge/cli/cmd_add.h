/* cmd_add.h - mcp-bridge add: what the command line said, and the guided questions.
 *
 * cmd_add.c parses the options into a struct add_args, decides what is missing, and writes
 * the entry; on a terminal, cmd_add_guided.c asks for whatever the options did not say, into
 * the same struct. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/macro.h"
#include "credkit/strv.h"

#define ADD_EXIT_CANCELLED 130 /* Ctrl-C at a prompt, as a shell reports SIGINT */

struct add_args {
    char *name;
    int transport; /* enum mcp_transport, -1 until chosen */
    int type_flag; /* --type, -1 when not given */
    char *url, *command, *cwd, *bearer_env;
    struct strv args;    /* the command's arguments: may carry a key (released wiped) */
    struct strv env;     /* "K=V" as given: values may be credentials (released wiped) */
    struct strv headers; /* "Name: value", one space after the colon: the same */
    bool oauth, auth_none, force, have_timeout;
    int64_t timeout_ms;
    int scope; /* enum cfg_scope */
};

#define ADD_ARGS_INIT                                                                              \
    {                                                                                              \
        .transport = -1, .type_flag = -1, .scope = -1, .args = STRV_INIT, .env = STRV_INIT,        \
        .headers = STRV_INIT                                                                       \
    }

/* Frees what a holds (header and env values wiped); a is then empty. */
void add_args_release(struct add_args *a);

/* Asks on the terminal for what a lacks: the transport, the URL or command line (and the
 * command's variables), the name, how it authenticates, where it is saved (user_disp and
 * project_disp name the files). 0, -ECANCELED on Ctrl-C or end of input, -ENOMEM. */
int add_guided(struct add_args *a, const char *user_disp, const char *project_disp) _must_check_;

/* A y/N question; an empty answer is no. 0 and *ret, or -ECANCELED. */
int add_ask_yes_no(const char *prompt, bool *ret) _must_check_;
