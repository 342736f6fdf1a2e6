/* server_config.c - the bridge's own keys of the MCP configuration. */
#include <errno.h>
#include <stdlib.h>

#include "credkit/mcp_field.h"
#include "credkit/strv.h"
#include "server_config.h"

/* in the order of enum mcp_tool_prefix */
static const char *const prefixes[] = {"mcp", "server", "short", "none", NULL};
static const char *const lifecycles[] = {"lazy", "eager", "keep-alive", NULL};

int server_config_parse(struct json_object *raw, struct server_config *ret, struct err *e)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    int r;

    /* in the order the loader always read them, so that the first problem is the same one */
    /* TODO(compat): minutes, 0 = never, the old milliseconds where unambiguous */
    r = mcp_field_ms(raw, "idleTimeout", &sc.idle_timeout_ms, e);
    if (r >= 0) {
        int i = -1;
        r = mcp_field_enum(raw, "lifecycle", "lifecycle", lifecycles,
                           "\"lazy\", \"eager\" or \"keep-alive\"", &i, e);
        if (i >= 0)
            sc.lifecycle = (enum server_lifecycle)i;
    }
    if (r >= 0)
        r = mcp_field_strv(raw, "excludeTools", &sc.exclude_tools, e);
    if (r >= 0 && mcp_field_member(raw, "autoAuth")) {
        bool v = false;
        r = mcp_field_bool(raw, "autoAuth", "autoAuth", &v, e);
        sc.auto_auth = v;
    }
    if (r < 0) {
        server_config_release(&sc);
        return r;
    }
    *ret = sc;
    return 0;
}

void server_config_release(struct server_config *sc)
{
    if (!sc)
        return;
    strv_free(sc->exclude_tools);
    strv_free(sc->direct_tools);
    *sc = (struct server_config)SERVER_CONFIG_INIT;
}

/* settings.toolPrefix of one settings object: -1 when absent. */
static int tool_prefix(struct json_object *settings, int *ret, struct err *e)
{
    return mcp_field_enum(settings, "toolPrefix", "settings.toolPrefix", prefixes,
                          "\"server\", \"short\" or \"none\"", ret, e);
}

enum mcp_tool_prefix server_config_tool_prefix(const struct mcp_config *c)
{
    int i = -1;
    /* checked at load time, layer by layer; a configuration loaded without the checks falls
     * back to the default for a value that is not one of the words */
    if (tool_prefix(mcp_config_settings(c), &i, NULL) < 0 || i < 0)
        return MCP_TOOL_PREFIX_MCP;
    return (enum mcp_tool_prefix)i;
}

void server_settings_get(const struct mcp_config *c, struct server_settings *ret)
{
    struct json_object *st = c ? mcp_config_settings(c) : NULL;
    *ret = (struct server_settings){
        .tool_prefix = server_config_tool_prefix(c),
        .idle_timeout_ms = SERVER_IDLE_TIMEOUT_DEFAULT_MS,
        .direct_tools = true,
        .sampling = true,
        .settle_timeout_ms = SERVER_SETTLE_TIMEOUT_DEFAULT_MS,
    };
    /* TODO(compat): idleTimeout, directTools, disableProxyTool, sampling, samplingAutoApprove,
     * settleTimeout */
    if (mcp_field_bool(st, "sampling", "settings.sampling", &ret->sampling, NULL) < 0)
        ret->sampling = true;
    if (mcp_field_ms(st, "settleTimeout", &ret->settle_timeout_ms, NULL) < 0)
        ret->settle_timeout_ms = SERVER_SETTLE_TIMEOUT_DEFAULT_MS;
    if (mcp_field_bool(st, "autoAuth", "settings.autoAuth", &ret->auto_auth, NULL) < 0)
        ret->auto_auth = false;
    ret->auth_required_message = server_config_auth_message(c);
}

int64_t server_config_idle_ms(const struct server_config *sc, const struct server_settings *st)
{
    return sc->idle_timeout_ms >= 0 ? sc->idle_timeout_ms : st->idle_timeout_ms;
}

int server_config_check_entry(void *userdata, const char *name, struct json_object *raw,
                              struct err *e)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    (void)userdata;
    (void)name;
    int r = server_config_parse(raw, &sc, e);
    server_config_release(&sc);
    return r;
}

int server_config_check_settings(void *userdata, struct json_object *settings, struct err *e)
{
    int i = -1;
    bool b = false;
    char *m = NULL;
    (void)userdata;
    int r = tool_prefix(settings, &i, e);
    if (r >= 0)
        r = mcp_field_bool(settings, "autoAuth", "settings.autoAuth", &b, e);
    if (r >= 0)
        r = mcp_field_string(settings, "authRequiredMessage", "settings.authRequiredMessage",
                             MCP_FIELD_NONBLANK, &m, e);
    free(m);
    return r;
}

bool server_config_auto_auth(const struct mcp_config *c, const struct mcp_server *s)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    bool v = false;
    if (s && s->raw && server_config_parse(s->raw, &sc, NULL) >= 0 && sc.auto_auth >= 0) {
        v = sc.auto_auth > 0;
        server_config_release(&sc);
        return v;
    }
    server_config_release(&sc);
    if (mcp_field_bool(mcp_config_settings(c), "autoAuth", "settings.autoAuth", &v, NULL) < 0)
        return false;
    return v;
}

const char *server_config_auth_message(const struct mcp_config *c)
{
    struct json_object *v = mcp_field_member(mcp_config_settings(c), "authRequiredMessage");
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void add_checks(const struct mcp_config_opts *opts, struct mcp_config_opts *ret)
{
    static const struct mcp_config_opts no_opts;
    *ret = opts ? *opts : no_opts;
    ret->check_entry = server_config_check_entry;
    ret->check_settings = server_config_check_settings;
    ret->check_userdata = NULL;
}

int server_config_load(const struct mcp_config_opts *opts, struct mcp_config **ret, struct err *e)
{
    struct mcp_config_opts o;
    add_checks(opts, &o);
    return mcp_config_load(&o, ret, e);
}

int server_config_load_object(struct json_object *root, const char *source,
                              const struct mcp_config_opts *opts, struct mcp_config **ret,
                              struct err *e)
{
    struct mcp_config_opts o;
    add_checks(opts, &o);
    return mcp_config_load_object(root, source, &o, ret, e);
}
