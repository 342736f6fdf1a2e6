/* cmd_config.c - what mcp-bridge list, add and remove share */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/mcp_config.h"
#include "credkit/path.h"
#include "credkit/util.h"

#include "cli/cli.h"
#include "cli/cmd_config.h"

int cfg_usage_error(struct log *log, const char *cmd, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_error(log, "%s (see 'mcp-bridge %s --help')", msg, cmd);
    return BRIDGE_EXIT_USAGE;
}

int cfg_parse_scope(struct log *log, const char *cmd, const char *s, int *ret)
{
    if (strcmp(s, "user") == 0)
        *ret = CFG_SCOPE_USER;
    else if (strcmp(s, "project") == 0)
        *ret = CFG_SCOPE_PROJECT;
    else
        return cfg_usage_error(log, cmd, "--scope is 'user' or 'project', not '%s'", s);
    return 0;
}

int cfg_scope_path(enum cfg_scope scope, const struct args_globals *g, char **ret, struct err *e)
{
    if (scope == CFG_SCOPE_PROJECT)
        return cfg_absolute_path(".mcp.json", ret, e);
    if (g->config)
        return cfg_absolute_path(g->config, ret, e);
    return path_agent_file("mcp.json", ret, e);
}

int cfg_absolute_path(const char *p, char **ret, struct err *e)
{
    char *out;
    if (p[0] == '/') {
        out = strdup(p);
    } else {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return err_set(e, negerr_or(errno, -EIO), "cannot find the working directory: %s",
                           strerror(errno));
        out = path_join(cwd, p);
        free(cwd);
    }
    if (!out)
        return err_set(e, -ENOMEM, "out of memory");
    *ret = out;
    return 0;
}

struct mcp_config *cfg_load_quietly(const struct args_globals *g, struct log *log)
{
    enum log_level level = log_get_level(log);
    if (level == LOG_WARN)
        log_set_level(log, LOG_ERROR);
    struct mcp_config *c = cli_load_config(g, log);
    log_set_level(log, level);
    return c;
}

struct json_object *cfg_jstr(bool *oom, const char *s)
{
    struct json_object *v;
    if (!s)
        return NULL;
    v = json_object_new_string(s);
    if (!v)
        *oom = true;
    return v;
}

void cfg_jadd(bool *oom, struct json_object *o, const char *key, struct json_object *v)
{
    if (!o || json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        *oom = true;
    }
}

void cfg_jpush(bool *oom, struct json_object *a, struct json_object *v)
{
    if (!a || !v || json_object_array_add(a, v) < 0) {
        json_object_put(v);
        *oom = true;
    }
}

size_t cfg_pair_split(const char *s, char sep, const char **ret_value)
{
    const char *at = strchr(s, sep);
    *ret_value = at + (sep == ':' ? 2 : 1);
    return (size_t)(at - s);
}

struct json_object *cfg_jpairs(bool *oom, char *const *v, size_t n, char sep)
{
    struct json_object *o = json_object_new_object();
    if (!o)
        *oom = true;
    for (size_t i = 0; o && i < n; i++) {
        const char *value;
        char *name = strndup(v[i], cfg_pair_split(v[i], sep, &value));
        if (!name)
            *oom = true;
        else
            cfg_jadd(oom, o, name, cfg_jstr(oom, value));
        free(name);
    }
    return o;
}

struct json_object *cfg_jstrv(bool *oom, char *const *v)
{
    struct json_object *a = json_object_new_array();
    if (!a)
        *oom = true;
    for (size_t i = 0; a && v && v[i]; i++)
        cfg_jpush(oom, a, cfg_jstr(oom, v[i]));
    return a;
}
