/* mcp_import_int.h - what the two halves of the import of other clients' files share inside
 * common/: the import being built (struct mcp_import), the context every client's reader gets,
 * and the calls that record a file, a diagnostic and a file's servers. mcp_import.c holds these,
 * the JSON clients and the public calls; mcp_import_codex.c reads Codex's config.toml through
 * them. Not installed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "credkit/json.h"
#include "credkit/macro.h"
#include "credkit/mcp_config.h"
#include "credkit/mcp_import.h"
#include "credkit/strv.h"

#define MAX_FILES 4

struct item;

struct ifile {
    char *path;
    bool exists;
};

struct mcp_import {
    const char *name; /* static: the client's */
    struct item *items;
    size_t n_items, cap_items;
    unsigned n_parts; /* the servers' objects read so far (the part of the next one) */
    struct mcp_config_diag *diags;
    size_t n_diags;
    struct ifile files[MAX_FILES];
    size_t n_files;
};

/* What every reader gets. */
struct import_ctx {
    struct mcp_import *im;
    const char *home;               /* NULL: no home directory */
    const char *cwd;                /* NULL: no project */
    struct json_object *toml_notes; /* codex: the values its reader did not read */
};

/* How an entry of a file becomes an mcp.json entry: a new reference in *ret, or NULL to skip it
 * (a diagnostic said why), maybe with notes that belong with it; -ENOMEM. */
typedef int (*import_map_fn)(const struct import_ctx *x, const char *display, const char *name,
                             struct json_object *in, struct strv *notes, struct json_object **ret);

/* A diagnostic about source (a display path), formatted, appended to im's; only -ENOMEM fails. */
int import_add_diag(struct mcp_import *im, const char *source, const char *fmt, ...)
    _printf_(3, 4) _must_check_;
/* Records path (taken) as the file read last; *ret_display its display path (caller frees). */
int import_add_file(struct mcp_import *im, char *path, char **ret_display) _must_check_;
/* The servers under key in root (of the file display) as items through map; -ENOMEM only. */
int import_add_servers(const struct import_ctx *x, struct json_object *root, const char *key,
                       const char *display, const char *where, import_map_fn map, bool inputs,
                       bool project) _must_check_;
/* Codex's ~/.codex/config.toml (mcp_import_codex.c): its servers as items; -ENOMEM only. */
int import_read_codex(const struct import_ctx *x) _must_check_;
