/* path.h - where things live.
 *
 * The agent directory is ~/.pi/agent, or $PI_CODING_AGENT_DIR when set (tests always set it,
 * so they never touch a real home). Paths shown to users abbreviate $HOME to "~". */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* The agent directory, absolute. -ENOENT (with a message) when neither PI_CODING_AGENT_DIR nor
 * HOME is usable. Caller frees. */
int path_agent_dir(char **ret, struct err *e) _must_check_;

/* The agent directory joined with a relative name ("secrets.json", "oauth"). Caller frees. */
int path_agent_file(const char *name, char **ret, struct err *e) _must_check_;

/* The user's home directory ($HOME, else the passwd entry). Caller frees. */
int path_home(char **ret) _must_check_;

/* "a" + "/" + "b" without doubled slashes. Caller frees; NULL on ENOMEM. */
char *path_join(const char *a, const char *b);

/* A copy for messages, with $HOME abbreviated to "~". Caller frees; NULL on ENOMEM. */
char *path_display(const char *path);

/* The directory part of path ("." when there is none). Caller frees; NULL on ENOMEM. */
char *path_dirname(const char *path);

/* Where exec finds prog, as execvp() looks for it: prog itself when it holds a '/', else the
 * first directory of $PATH (/bin:/usr/bin when PATH is unset; an empty element is the working
 * directory) that holds it; an executable regular file either way. A relative path found is
 * taken from cwd when cwd is given (the directory the program is started in). *ret: the path
 * as found (relative ones as written, not joined with cwd); caller frees. -ENOENT when there is
 * none, -ENOMEM. */
int path_find_program(const char *prog, const char *cwd, char **ret) _must_check_;

/* A program of the suite that another one runs (`secrets`, `mcp-auth`), in order, the first
 * executable file: $var when set (then nothing else is tried), prog next to our own
 * executable, <our folder>/../build_folder/prog (the build tree), the directories PATH names
 * (never the working directory). Caller frees *ret. -ENOENT with e saying what to install or
 * set, -ENOMEM. */
int path_find_helper(const char *prog, const char *var, const char *build_folder, char **ret,
                     struct err *e) _must_check_;
