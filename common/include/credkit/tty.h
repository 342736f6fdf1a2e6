/* tty.h - asking a person at a terminal.
 *
 * Guided commands (secrets configure, mcp-bridge add) talk to /dev/tty when stdin is a
 * terminal. Secret answers are read with echo off and restored even on SIGINT. */
#pragma once

#include <stdbool.h>

#include "credkit/macro.h"

/* Whether stdin and stderr are both terminals (guided mode is possible). */
bool tty_interactive(void);

/* Prints prompt on the terminal and reads one line (without the newline), at most 64 KiB.
 * With secret, echo is off while typing. -ECANCELED on EOF or Ctrl-C. Caller frees (with
 * secure_free() when secret). */
int tty_prompt(const char *prompt, bool secret, char **ret) _must_check_;
