/* mcp_fixture.h - what the tests of the MCP configuration share (common's test_mcp_*.c and the
 * bridge's test_server_config.c): a private home with the layers' files, written from JSON
 * where ' stands for ", and a variable lookup answering from a table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/err.h"

#include "tests.h"

/* Each test works in its own directory under tests_tmpdir(): base/home is $HOME (with the agent
 * directory in it) and base/home/proj the project. Nothing touches the real home. */
static char base[4096];

static inline const char *P(const char *rel)
{
    static char bufs[8][4096];
    static unsigned i;
    char *s = bufs[i++ % 8];
    int n = snprintf(s, 4096, "%s/%s", base, rel);
    if (n < 0 || n >= 4096)
        abort();
    return s;
}

static inline void mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            (void)mkdir(tmp, 0700);
            *p = '/';
        }
    (void)mkdir(tmp, 0700);
}

static inline void setup(const char *name)
{
    if (snprintf(base, sizeof(base), "%s/%s", tests_tmpdir(), name) >= (int)sizeof(base)) {
        fprintf(stderr, "test directory name too long\n");
        exit(2);
    }
    mkdir_p(P("home/.pi/agent"));
    mkdir_p(P("home/proj/.pi"));
    setenv("HOME", P("home"), 1);
    setenv("PI_CODING_AGENT_DIR", P("home/.pi/agent"), 1);
    unsetenv("XDG_CONFIG_HOME");
}

/* Writes base/rel; in text, ' stands for " so that JSON reads well in C. */
static inline void put(const char *rel, const char *text)
{
    const char *path = P(rel);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = 0;
    mkdir_p(dir);
    FILE *f = fopen(path, "we");
    CHECK(f != NULL);
    if (!f)
        return;
    for (const char *p = text; *p; p++)
        fputc(*p == '\'' ? '"' : *p, f);
    CHECK_INT(fclose(f), 0);
}

#define SHARED "home/.config/mcp/mcp.json"
#define USER   "home/.pi/agent/mcp.json"
#define PROJ1  "home/proj/.mcp.json"
#define PROJ2  "home/proj/.pi/mcp.json"

static inline size_t vlen(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* A lookup that answers from a table and counts its calls. */
struct table {
    const char *const *kv; /* name, value, ..., NULL */
    int calls;
};

static inline int table_lookup(void *userdata, const char *name, char **ret, struct err *e)
{
    struct table *t = userdata;
    t->calls++;
    if (strcmp(name, "LOCKED") == 0)
        return err_set(e, -EACCES, "the keyring is locked: unlock it and retry");
    for (size_t i = 0; t->kv[i]; i += 2)
        if (strcmp(t->kv[i], name) == 0) {
            *ret = strdup(t->kv[i + 1]);
            return *ret ? 0 : -ENOMEM;
        }
    return -ENOENT;
}
