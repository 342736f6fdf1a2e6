/* server_config.c - the bridge's own keys of the MCP configuration. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/mcp_field.h"
#include "credkit/strv.h"
#include "config/server_config.h"

/* a bound of the trace (bytes, events): far beyond any use, within what a double holds whole */
#define TRACE_COUNT_MAX (1LL << 40)

/* in the order of enum mcp_tool_prefix */
static const char *const prefixes[] = {"mcp", "server", "short", "none", NULL};
static const char *const lifecycles[] = {"lazy", "eager", "keep-alive", "lazy-keep-alive", NULL};

#define PREFIX_WORDS    "\"mcp\", \"server\", \"short\" or \"none\""
#define LIFECYCLE_WORDS "\"lazy\", \"eager\", \"keep-alive\" or \"lazy-keep-alive\""

/* the keys of "settings" the bridge reads */
static const char *const settings_keys[] = {
    "toolPrefix", "idleTimeout", "requestTimeoutMs",    "directTools",         "disableProxyTool",
    "autoAuth",   "sampling",    "samplingAutoApprove", "authRequiredMessage", "settleTimeout",
    "trace",      NULL,
};

/* The pi adapter's settings the bridge accepts and does not act on: pi's display, its config
 * discovery, its token storage, its extra tools (docs/bridge.md says, for each, what the bridge
 * does instead). One warning names those present, never an error (the file is the adapter's
 * too): a file's warnings share one message of ERR_MSG_MAX bytes, which a line per key would
 * overflow. approveTools has a line of its own: its absence of effect is a matter of safety. */
static const char *const adapter_settings[] = {
    "showStatusIcon",
    "mcpFooterStatus",
    "toolResultRendering",
    "collapsedResultLines",
    "notifyOnStartupConnect",
    "warnOnLargeDirectTools",
    "hostConfigDiscovery",
    "ancestorConfigRoots",
    "agentPluginPaths",
    "oauthDir",
    "oauthCredentialStore",
    "namespaceProxyTools",
    "scriptMode",
    "jev",
    "strictDirectToolArguments",
    "directToolResultDetails",
    "outputGuard",
    "freezeDirectTools",
    "elicitation",
    "approveTools",
    NULL,
};

static bool is_adapter_setting(const char *key)
{
    for (size_t i = 0; adapter_settings[i]; i++)
        if (strcmp(key, adapter_settings[i]) == 0)
            return true;
    return false;
}

/* The warnings about the adapter settings present in settings; 1 when there is any. */
static int adapter_settings_warnings(struct json_object *settings, struct err *e)
{
    char keys[768] = "";
    size_t n = 0, count = 0;
    int w = 0;
    for (size_t i = 0; adapter_settings[i]; i++) {
        if (strcmp(adapter_settings[i], "approveTools") == 0 ||
            !mcp_field_member(settings, adapter_settings[i]))
            continue;
        n += (size_t)snprintf(keys + n, sizeof(keys) - n, "%s\"%s\"", count ? ", " : "",
                              adapter_settings[i]);
        count++;
    }
    if (count)
        w = mcp_field_warn(e,
                           "setting%s %s %s accepted and not applied: %s pi's own (its display, "
                           "config discovery, token storage or extra tools); docs/bridge.md "
                           "says what the bridge does instead",
                           count > 1 ? "s" : "", keys, count > 1 ? "are" : "is",
                           count > 1 ? "they are" : "it is");
    if (mcp_field_member(settings, "approveTools"))
        w = mcp_field_warn(e, "\"settings.approveTools\" is accepted and not applied: the bridge "
                              "asks no one before a call, the agent's own approval applies "
                              "(hide a tool with \"excludeTools\")");
    return w;
}

/* The adapter's keys of an entry the bridge accepts and does not act on. */
static const struct {
    const char *key, *why;
} adapter_entry_keys[] = {
    {"approveTools",
     "the bridge asks no one before a call: the agent's own approval of its tools applies (hide a "
     "tool with \"excludeTools\")"},
};

#define bad(e, ...) err_set((e), -EINVAL, __VA_ARGS__)

/* The outcome r of reading one key, why its reason: a bad value (-EINVAL) is dropped alone, as
 * a warning in e (*w set) naming it; -ENOMEM passes. */
static int drop_bad(int r, const struct err *why, struct err *e, int *w)
{
    if (r >= 0 || r == -ENOMEM)
        return r;
    *w = mcp_field_warn(e, "%s: it is ignored", err_msg(why));
    return 0;
}

/* "searchKeywords" of an entry: {"tool name or glob": ["keyword", ...]}, the proxy tool's search
 * vocabulary (catalog.h); a value of another shape drops the key alone */
static int parse_keywords(struct json_object *raw, struct server_config *sc, struct err *e, int *w)
{
    struct json_object *v = mcp_field_member(raw, "searchKeywords");
    struct err why = ERR_INIT;
    int r = 0;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_object)) {
        r = bad(&why,
                "\"searchKeywords\" must be an object of tool names (or globs) and arrays "
                "of keywords, not %s",
                mcp_field_type(v));
    } else {
        json_object_object_foreach(v, key, kws)
        {
            bool ok = json_object_is_type(kws, json_type_array);
            for (size_t i = 0; ok && i < json_object_array_length(kws); i++)
                ok = json_object_is_type(json_object_array_get_idx(kws, i), json_type_string);
            if (!ok) {
                r = bad(&why, "\"searchKeywords\" of '%s' must be an array of strings", key);
                break;
            }
        }
    }
    if (r >= 0)
        sc->search_keywords = json_object_get(v);
    r = drop_bad(r, &why, e, w);
    err_clear(&why);
    return r;
}

/* "directTools" of an entry: true, false, "search" or an array of raw tool names */
static int parse_direct(struct json_object *raw, struct server_config *sc, struct err *e, int *w)
{
    struct json_object *v = mcp_field_member(raw, "directTools");
    struct err why = ERR_INIT;
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_boolean)) {
        sc->direct = json_object_get_boolean(v) ? SERVER_DIRECT_ALL : SERVER_DIRECT_NONE;
        return 0;
    }
    if (json_object_is_type(v, json_type_string) &&
        strcmp(json_object_get_string(v), "search") == 0) {
        /* the adapter registers them inactive and activates what a search finds: here they
         * are held back from the tools list until a search finds them */
        sc->direct = SERVER_DIRECT_SEARCH;
        return 0;
    }
    int r;
    if (!json_object_is_type(v, json_type_array))
        r = bad(&why,
                "\"directTools\" must be true, false, \"search\" or an array of tool names, "
                "not %s",
                mcp_field_type(v));
    else
        r = mcp_field_strv(raw, "directTools", &sc->direct_tools, &why);
    if (r >= 0)
        sc->direct = SERVER_DIRECT_LIST;
    return drop_bad(r, &why, e, w);
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

/* "requestTimeoutMs" (label names it): a number of milliseconds; <= 0 is the default (-1), as
 * in the adapter; at most a day. */
static int request_ms(struct json_object *o, const char *label, int64_t *ret, struct err *e)
{
    struct json_object *v = mcp_field_member(o, "requestTimeoutMs");
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return bad(e, "\"%s\" must be a number of milliseconds, not %s", label, mcp_field_type(v));
    double ms = json_object_get_double(v);
    if (ms > (double)SERVER_REQUEST_TIMEOUT_MAX_MS)
        return bad(e, "\"%s\" must be at most %lld milliseconds (a day), not %g", label,
                   (long long)SERVER_REQUEST_TIMEOUT_MAX_MS, ms);
    *ret = ms <= 0 ? -1 : (ms < 1 ? 1 : (int64_t)ms);
    return 0;
}

/* "includeTools" (NULL when absent) and "excludeTools" (empty when absent) */
static int parse_filters(struct json_object *raw, struct server_config *sc, struct err *e, int *w)
{
    struct err why = ERR_INIT;
    int r = drop_bad(mcp_field_strv(raw, "excludeTools", &sc->exclude_tools, &why), &why, e, w);
    if (r < 0 || !mcp_field_member(raw, "includeTools"))
        return r;
    err_clear(&why);
    return drop_bad(mcp_field_strv(raw, "includeTools", &sc->include_tools, &why), &why, e, w);
}

int server_config_parse(struct json_object *raw, struct server_config *ret, struct err *e)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    struct err why = ERR_INIT;
    int r, w = 0, i = -1;

    /* in a fixed order, so that the warnings come in the same order whatever the file's */
    r = drop_bad(
        mcp_field_minutes(raw, "idleTimeout", "idleTimeout", &sc.idle_timeout_ms, NULL, &why), &why,
        e, &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(
            mcp_field_enum(raw, "lifecycle", "lifecycle", lifecycles, LIFECYCLE_WORDS, &i, &why),
            &why, e, &w);
    if (i >= 0)
        sc.lifecycle = (enum server_lifecycle)i;
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(request_ms(raw, "requestTimeoutMs", &sc.request_timeout_ms, &why), &why, e,
                     &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(mcp_field_enum(raw, "toolPrefix", "toolPrefix", prefixes, PREFIX_WORDS,
                                    &sc.tool_prefix, &why),
                     &why, e, &w);
    if (r >= 0)
        r = parse_filters(raw, &sc, e, &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(tri_bool(raw, "autoAuth", &sc.auto_auth, &why), &why, e, &w);
    if (r >= 0)
        r = parse_direct(raw, &sc, e, &w);
    if (r >= 0)
        r = parse_keywords(raw, &sc, e, &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(tri_bool(raw, "exposeResources", &sc.expose_resources, &why), &why, e, &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(mcp_field_bool(raw, "debug", "debug", &sc.debug, &why), &why, e, &w);
    err_clear(&why);
    if (r >= 0)
        r = drop_bad(tri_bool(raw, "trace", &sc.trace, &why), &why, e, &w);
    /* the vector is never NULL once parsed */
    if (r >= 0 && !sc.exclude_tools && !(sc.exclude_tools = calloc(1, sizeof(char *))))
        r = -ENOMEM;
    if (r < 0) {
        server_config_release(&sc);
        return err_set(e, r, "out of memory");
    }
    *ret = sc;
    return w;
}

void server_config_release(struct server_config *sc)
{
    if (!sc)
        return;
    strv_free(sc->include_tools);
    strv_free(sc->exclude_tools);
    strv_free(sc->direct_tools);
    json_object_put(sc->search_keywords);
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

/* settings.directTools: true, false, or "search" (false, and *ret_search: see parse_direct()) */
static int direct_setting(struct json_object *st, bool *ret, bool *ret_search, struct err *e)
{
    struct json_object *v = mcp_field_member(st, "directTools");
    if (v && json_object_is_type(v, json_type_string) &&
        strcmp(json_object_get_string(v), "search") == 0) {
        *ret = false;
        *ret_search = true;
        return 0;
    }
    if (v && !json_object_is_type(v, json_type_boolean))
        return bad(e, "\"settings.directTools\" must be true, false or \"search\", not %s",
                   mcp_field_type(v));
    get_bool(st, "directTools", ret);
    return 0;
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
    ms = -1;
    if (request_ms(st, "settings.requestTimeoutMs", &ms, NULL) >= 0 && ms > 0)
        ret->request_timeout_ms = ms;
    bool direct = ret->direct_tools, search = false;
    if (direct_setting(st, &direct, &search, NULL) >= 0) {
        ret->direct_tools = direct;
        ret->direct_search = search;
    }
    get_bool(st, "disableProxyTool", &ret->disable_proxy_tool);
    get_bool(st, "autoAuth", &ret->auto_auth);
    get_bool(st, "sampling", &ret->sampling);
    get_bool(st, "samplingAutoApprove", &ret->sampling_auto_approve);
    get_bool(mcp_field_member(st, "trace"), "enabled", &ret->trace);
    ret->auth_required_message = server_config_auth_message(c);
}

/* A positive count of settings.trace (bytes, events), whole; 0 when absent or not one (the
 * check at load time warned). */
static int64_t trace_count(struct json_object *tr, const char *key)
{
    struct json_object *v = mcp_field_member(tr, key);
    if (!v || (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)))
        return 0;
    double d = json_object_get_double(v);
    return d >= 1 && d <= (double)TRACE_COUNT_MAX ? (int64_t)d : 0;
}

void server_config_trace_settings(const struct mcp_config *c, struct server_trace_settings *ret)
{
    struct json_object *tr = c ? mcp_field_member(mcp_config_settings(c), "trace") : NULL, *f;
    *ret = (struct server_trace_settings){0};
    if (!tr || !json_object_is_type(tr, json_type_object))
        return;
    get_bool(tr, "enabled", &ret->enabled);
    f = mcp_field_member(tr, "file");
    if (f && json_object_is_type(f, json_type_string) && *json_object_get_string(f))
        ret->file = json_object_get_string(f);
    ret->max_bytes = trace_count(tr, "maxBytes");
    ret->max_events = trace_count(tr, "maxEvents");
}

bool server_config_entry_traced(const struct mcp_server *s, const struct server_settings *st)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    bool v = st->trace;
    if (s->raw && server_config_parse(s->raw, &sc, NULL) >= 0 && sc.trace >= 0)
        v = sc.trace > 0;
    server_config_release(&sc);
    return v;
}

int64_t server_config_idle_ms(const struct server_config *sc, const struct server_settings *st)
{
    if (sc->lifecycle == SERVER_LIFECYCLE_KEEP_ALIVE ||
        sc->lifecycle == SERVER_LIFECYCLE_LAZY_KEEP_ALIVE)
        return 0;
    return sc->idle_timeout_ms >= 0 ? sc->idle_timeout_ms : st->idle_timeout_ms;
}

int64_t server_config_request_ms(const struct server_config *sc, const struct mcp_server *s,
                                 const struct server_settings *st)
{
    if (sc->request_timeout_ms > 0)
        return sc->request_timeout_ms;
    if (s && s->timeout_ms > 0)
        return 0; /* the entry's "timeout", which the upstream reads itself */
    return st->request_timeout_ms;
}

int64_t server_config_entry_request_ms(const struct mcp_server *s, const struct server_settings *st)
{
    struct server_config sc = SERVER_CONFIG_INIT;
    int64_t ms = 0;
    if (s->raw && server_config_parse(s->raw, &sc, NULL) >= 0)
        ms = server_config_request_ms(&sc, s, st);
    server_config_release(&sc);
    return ms;
}

enum mcp_tool_prefix server_config_prefix_of(const struct server_config *sc,
                                             enum mcp_tool_prefix settings_prefix)
{
    return sc->tool_prefix >= 0 ? (enum mcp_tool_prefix)sc->tool_prefix : settings_prefix;
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

/* The warnings about the adapter's keys of an entry the bridge does not act on, or not as
 * written; 1 when there is any. */
static int adapter_key_warnings(struct json_object *raw, struct err *e)
{
    int w = 0;
    bool b = true;
    for (size_t i = 0; i < ELEMENTSOF(adapter_entry_keys); i++)
        if (mcp_field_member(raw, adapter_entry_keys[i].key))
            w = mcp_field_warn(e, "\"%s\" is accepted and not applied: %s",
                               adapter_entry_keys[i].key, adapter_entry_keys[i].why);
    b = true;
    if (mcp_field_member(raw, "tasks") && mcp_field_bool(raw, "tasks", "", &b, NULL) >= 0 && b)
        w = mcp_field_warn(e, "\"tasks\" is not applied: the bridge does not use the MCP Tasks "
                              "extension, each call is a plain request (as with false)");
    return w;
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
        r = warn_idle(raw, "idleTimeout", e);
    if (adapter_key_warnings(raw, e) > 0)
        r = 1;
    return r;
}

/* The warnings of the settings object; 1 when there is any. */
static int settings_warnings(struct json_object *settings, struct err *e)
{
    bool large = false, auto_approve = false;
    int64_t ms = 0;
    int w = 0;

    json_object_object_foreach(settings, key, val)
    {
        (void)val;
        bool known = is_adapter_setting(key);
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
    if (adapter_settings_warnings(settings, e) > 0)
        w = 1;
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

/* settings.trace: an object of "enabled" (a boolean), "file" (a path), "maxBytes" and
 * "maxEvents" (positive numbers); a member of another kind is dropped alone, with a warning,
 * and its default holds; an unknown member is warned about. -EINVAL when it is no object. */
static int check_trace(struct json_object *settings, struct err *why, struct err *e, int *w)
{
    static const char *const members[] = {"enabled", "file", "maxBytes", "maxEvents", NULL};
    struct json_object *tr = mcp_field_member(settings, "trace");
    char *path = NULL;
    bool b;
    if (!json_object_is_type(tr, json_type_object))
        return bad(why,
                   "\"settings.trace\" must be an object ({\"enabled\": true, \"file\", "
                   "\"maxBytes\", \"maxEvents\"}), not %s",
                   mcp_field_type(tr));
    for (size_t i = 0; members[i]; i++) {
        struct json_object *v = mcp_field_member(tr, members[i]);
        struct err me = ERR_INIT;
        int r = 0;
        if (!v)
            continue;
        if (i == 0) {
            r = mcp_field_bool(tr, "enabled", "settings.trace.enabled", &b, &me);
        } else if (i == 1) {
            r = mcp_field_string(tr, "file", "settings.trace.file", MCP_FIELD_NONBLANK, &path, &me);
            free(path);
            path = NULL;
        } else if ((!json_object_is_type(v, json_type_int) &&
                    !json_object_is_type(v, json_type_double)) ||
                   json_object_get_double(v) < 1 ||
                   json_object_get_double(v) > (double)TRACE_COUNT_MAX) {
            r = bad(&me, "\"settings.trace.%s\" must be a positive number, at most %lld, not %s",
                    members[i], (long long)TRACE_COUNT_MAX, json_object_to_json_string(v));
        }
        if (r == -ENOMEM) {
            err_clear(&me);
            return r;
        }
        if (r < 0) {
            *w = mcp_field_warn(e, "%s: it is ignored (the default holds)", err_msg(&me));
            json_object_object_del(tr, members[i]);
        }
        err_clear(&me);
    }
    json_object_object_foreach(tr, key, val)
    {
        (void)val;
        bool known = false;
        for (size_t i = 0; members[i] && !known; i++)
            known = strcmp(key, members[i]) == 0;
        if (!known) {
            char kd[MCP_DISP_BUF];
            mcp_disp(kd, key);
            *w = mcp_field_warn(e,
                                "\"settings.trace.%s\" is not a key of the trace: it is ignored "
                                "(\"enabled\", \"file\", \"maxBytes\", \"maxEvents\")",
                                kd);
        }
    }
    return 0;
}

/* One setting's value checked (key: its name): a bad one is dropped alone, a warning naming it,
 * and deleted from settings, so that the lower layers' value holds. */
static int check_setting(struct json_object *settings, const char *key, struct err *e, int *w)
{
    struct err why = ERR_INIT;
    char lbl[64];
    int64_t ms = SERVER_SETTLE_TIMEOUT_DEFAULT_MS;
    char *m = NULL;
    bool b = false, search = false;
    int i = -1, r;

    (void)snprintf(lbl, sizeof(lbl), "settings.%s", key);
    if (strcmp(key, "toolPrefix") == 0)
        r = tool_prefix(settings, &i, &why);
    else if (strcmp(key, "idleTimeout") == 0)
        r = mcp_field_minutes(settings, key, lbl, &ms, NULL, &why);
    else if (strcmp(key, "requestTimeoutMs") == 0)
        r = request_ms(settings, lbl, &ms, &why);
    else if (strcmp(key, "settleTimeout") == 0)
        r = settle_timeout(settings, &ms, &why);
    else if (strcmp(key, "directTools") == 0)
        r = direct_setting(settings, &b, &search, &why);
    else if (strcmp(key, "authRequiredMessage") == 0)
        r = mcp_field_string(settings, key, lbl, MCP_FIELD_NONBLANK, &m, &why);
    else if (strcmp(key, "trace") == 0)
        r = check_trace(settings, &why, e, w);
    else
        r = mcp_field_bool(settings, key, lbl, &b, &why);
    free(m);
    if (r == -ENOMEM || r >= 0)
        return r;
    json_object_object_del(settings, key);
    *w = mcp_field_warn(e, "%s: it is ignored", err_msg(&why));
    return 0;
}

int server_config_check_settings(void *userdata, struct json_object *settings, struct err *e)
{
    int r = 0, w = 0;
    (void)userdata;
    for (size_t k = 0; r >= 0 && settings_keys[k]; k++)
        if (mcp_field_member(settings, settings_keys[k]))
            r = check_setting(settings, settings_keys[k], e, &w);
    if (r < 0)
        return err_set(e, r, "out of memory");
    return settings_warnings(settings, e) > 0 || w ? 1 : 0;
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
