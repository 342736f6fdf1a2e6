/* server_config.c - the bridge's own keys of the MCP configuration. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_field.h"
#include "credkit/strv.h"
#include "config/server_config.h"

/* in the order of enum mcp_tool_prefix */
static const char *const prefixes[] = {"mcp", "server", "short", "none", NULL};
static const char *const lifecycles[] = {"lazy", "eager", "keep-alive", NULL};

#define PREFIX_WORDS "\"mcp\", \"server\", \"short\" or \"none\""

/* the keys of "settings" the bridge reads */
static const char *const settings_keys[] = {
    "toolPrefix", "idleTimeout",         "directTools",         "disableProxyTool", "autoAuth",
    "sampling",   "samplingAutoApprove", "authRequiredMessage", "settleTimeout",    NULL,
};

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

/* "directTools" of an entry: true, false or an array of raw tool names */
static int parse_direct(struct json_object *raw, struct server_config *sc, struct err *e)
{
    struct json_object *v = mcp_field_member(raw, "directTools");
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_boolean)) {
        sc->direct = json_object_get_boolean(v) ? SERVER_DIRECT_ALL : SERVER_DIRECT_NONE;
        return 0;
    }
    if (!json_object_is_type(v, json_type_array))
        return bad(e, "\"directTools\" must be true, false or an array of tool names, not %s",
                   mcp_field_type(v));
    int r = mcp_field_strv(raw, "directTools", &sc->direct_tools, e);
    if (r < 0)
        return r;
    sc->direct = SERVER_DIRECT_LIST;
    return 0;
}

/* An optional boolean as 1, 0, or untouched when absent. */
static int tri_bool(struct json_object *raw, const char *key, int *ret, struct err *e)
{
    bool v = false;
    if (!mcp_field_member(raw, key))
        return 0;
    int r = mcp_field_bool(raw, key, key, &v, e);
    if (r >= 0)
        *ret = v;
    return r;
}

int server_config_parse(struct json_object *raw, struct server_config *ret, struct err *e)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    int r;

    /* in a fixed order, so that the first problem is the same one whatever the file's order */
    r = mcp_field_minutes(raw, "idleTimeout", "idleTimeout", &sc.idle_timeout_ms, NULL, e);
    if (r >= 0) {
        int i = -1;
        r = mcp_field_enum(raw, "lifecycle", "lifecycle", lifecycles,
                           "\"lazy\", \"eager\" or \"keep-alive\"", &i, e);
        if (i >= 0)
            sc.lifecycle = (enum server_lifecycle)i;
    }
    if (r >= 0)
        r = mcp_field_strv(raw, "excludeTools", &sc.exclude_tools, e);
    if (r >= 0)
        r = tri_bool(raw, "autoAuth", &sc.auto_auth, e);
    if (r >= 0)
        r = parse_direct(raw, &sc, e);
    if (r >= 0)
        r = tri_bool(raw, "exposeResources", &sc.expose_resources, e);
    if (r >= 0)
        r = mcp_field_bool(raw, "debug", "debug", &sc.debug, e);
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
    return mcp_field_enum(settings, "toolPrefix", "settings.toolPrefix", prefixes, PREFIX_WORDS,
                          ret, e);
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

/* settings.settleTimeout: a positive whole number of milliseconds, at most a minute */
static int settle_timeout(struct json_object *st, int64_t *ret, struct err *e)
{
    int64_t ms = *ret;
    int r = mcp_field_ms(st, "settleTimeout", &ms, e);
    if (r < 0)
        return err_prefix(e, "settings");
    if (ms > SERVER_SETTLE_TIMEOUT_MAX_MS)
        return bad(e,
                   "\"settings.settleTimeout\" must be at most %d milliseconds (the first list "
                   "waits no longer than the connect timeout anyway), not %lld",
                   SERVER_SETTLE_TIMEOUT_MAX_MS, (long long)ms);
    *ret = ms;
    return 0;
}

/* A boolean setting into *ret, which a bad value leaves alone. */
static void get_bool(struct json_object *st, const char *key, bool *ret)
{
    bool v = *ret;
    if (mcp_field_bool(st, key, key, &v, NULL) >= 0)
        *ret = v;
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
    int64_t ms = ret->idle_timeout_ms;
    if (mcp_field_minutes(st, "idleTimeout", "settings.idleTimeout", &ms, NULL, NULL) >= 0)
        ret->idle_timeout_ms = ms;
    ms = ret->settle_timeout_ms;
    if (settle_timeout(st, &ms, NULL) >= 0)
        ret->settle_timeout_ms = ms;
    get_bool(st, "directTools", &ret->direct_tools);
    get_bool(st, "disableProxyTool", &ret->disable_proxy_tool);
    get_bool(st, "autoAuth", &ret->auto_auth);
    get_bool(st, "sampling", &ret->sampling);
    get_bool(st, "samplingAutoApprove", &ret->sampling_auto_approve);
    ret->auth_required_message = server_config_auth_message(c);
}

int64_t server_config_idle_ms(const struct server_config *sc, const struct server_settings *st)
{
    if (sc->lifecycle == SERVER_LIFECYCLE_KEEP_ALIVE)
        return 0;
    return sc->idle_timeout_ms >= 0 ? sc->idle_timeout_ms : st->idle_timeout_ms;
}

/* The warning for an "idleTimeout" number of 1000 or more (label: how the key is named): it is
 * minutes, as the adapter means, but looks like the milliseconds of the bridge's older
 * meaning. */
static int warn_idle(struct json_object *o, const char *label, struct err *e)
{
    struct json_object *v = mcp_field_member(o, "idleTimeout");
    double m = json_object_get_double(v);
    long long days = (long long)(m / (24 * 60)), hours = (long long)(m / 60);
    char span[64], instead[64];
    if (days >= 2)
        (void)snprintf(span, sizeof(span), "%lld days", days);
    else
        (void)snprintf(span, sizeof(span), "%lld hours", hours);
    long long as_ms = (long long)m;
    if ((double)as_ms == m && as_ms % 1000 == 0)
        (void)snprintf(instead, sizeof(instead), "\"%llds\"", as_ms / 1000);
    else
        (void)snprintf(instead, sizeof(instead), "\"%lldms\"", as_ms);
    return mcp_field_warn(e,
                          "\"%s\" is in minutes: %g minutes is %s; write %s for the same time "
                          "in seconds",
                          label, m, span, instead);
}

int server_config_check_entry(void *userdata, const char *name, struct json_object *raw,
                              struct err *e)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    bool large = false;
    int64_t ms = 0;
    (void)userdata;
    (void)name;
    int r = server_config_parse(raw, &sc, e);
    server_config_release(&sc);
    if (r < 0)
        return r;
    if (mcp_field_minutes(raw, "idleTimeout", "idleTimeout", &ms, &large, NULL) >= 0 && large)
        return warn_idle(raw, "idleTimeout", e);
    return 0;
}

/* The warnings of a valid settings object; 1 when there is any. */
static int settings_warnings(struct json_object *settings, struct err *e)
{
    bool large = false, auto_approve = false;
    int64_t ms = 0;
    int w = 0;

    json_object_object_foreach(settings, key, val)
    {
        (void)val;
        bool known = false;
        for (size_t i = 0; settings_keys[i] && !known; i++)
            known = strcmp(key, settings_keys[i]) == 0;
        if (!known) {
            char kd[MCP_DISP_BUF];
            mcp_disp(kd, key);
            w = mcp_field_warn(e,
                               "\"settings.%s\" is not a setting the bridge knows: it is "
                               "ignored (check the spelling)",
                               kd);
        }
    }
    if (mcp_field_minutes(settings, "idleTimeout", "settings.idleTimeout", &ms, &large, NULL) >=
            0 &&
        large)
        w = warn_idle(settings, "settings.idleTimeout", e);
    if (mcp_field_bool(settings, "samplingAutoApprove", "", &auto_approve, NULL) >= 0 &&
        auto_approve)
        w = mcp_field_warn(e, "\"settings.samplingAutoApprove\" has no effect here: the bridge "
                              "forwards sampling requests to the agent, which asks or approves");
    return w;
}

int server_config_check_settings(void *userdata, struct json_object *settings, struct err *e)
{
    static const char *const bools[] = {"directTools", "disableProxyTool", "autoAuth", "sampling",
                                        "samplingAutoApprove"};
    int i = -1;
    int64_t ms = 0;
    char *m = NULL;
    (void)userdata;
    int r = tool_prefix(settings, &i, e);
    if (r >= 0)
        r = mcp_field_minutes(settings, "idleTimeout", "settings.idleTimeout", &ms, NULL, e);
    for (size_t k = 0; r >= 0 && k < ELEMENTSOF(bools); k++) {
        char lbl[64];
        bool b = false;
        (void)snprintf(lbl, sizeof(lbl), "settings.%s", bools[k]);
        r = mcp_field_bool(settings, bools[k], lbl, &b, e);
    }
    if (r >= 0)
        r = mcp_field_string(settings, "authRequiredMessage", "settings.authRequiredMessage",
                             MCP_FIELD_NONBLANK, &m, e);
    ms = SERVER_SETTLE_TIMEOUT_DEFAULT_MS;
    if (r >= 0)
        r = settle_timeout(settings, &ms, e);
    free(m);
    if (r < 0)
        return r;
    return settings_warnings(settings, e);
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
