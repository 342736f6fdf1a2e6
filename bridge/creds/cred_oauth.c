/* cred_oauth.c - the mcp-auth side of the helpers' provider (cred_helper_int.h): `mcp-auth
 * header` and what its answers lead to: a sign-in by autoAuth, a step-up after a 403
 * insufficient_scope (`status` for the scopes granted, then `login --scope`), the storm brake,
 * and the messages that name the command to run. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/dpop.h"
#include "credkit/challenge.h"
#include "credkit/helper_answer.h"
#include "credkit/json.h"

#include "creds/cred_helper_int.h"
#include "creds/cred_path.h"

/* ---- messages ------------------------------------------------------------------------------- */

/* "mcp-auth [--config "PATH"] NAME" into buf. */
static void signin_command_of(const char *config_path, const char *target, char *buf, size_t size)
{
    if (config_path)
        snprintf(buf, size, "mcp-auth --config \"%s\" %s", config_path, target);
    else
        snprintf(buf, size, "mcp-auth %s", target);
}

void cred_helper_signin_command(const struct cred_helper *h, const char *name, char *buf,
                                size_t size)
{
    signin_command_of(h->config_path, h->auth_target ? h->auth_target : name, buf, size);
}

char *cred_helper_login_message(const struct cred_helper_opts *o, const char *name)
{
    char cmd[MSG_MAX], *m = NULL;
    signin_command_of(o->config_path, o->auth_target ? o->auth_target : name, cmd, sizeof(cmd));
    if (!o->auth_required_message) {
        if (asprintf(&m, "sign-in required: run '%s'", cmd) < 0)
            return NULL;
        return m;
    }
    struct buf b;
    buf_init(&b, 4096);
    const char *t = o->auth_required_message;
    static const char key[] = "${server}";
    int r = 0;
    while (*t && r >= 0) {
        if (strncmp(t, key, sizeof(key) - 1) == 0) {
            r = buf_append_str(&b, name);
            t += sizeof(key) - 1;
        } else {
            r = buf_append_char(&b, *t++);
        }
    }
    if (r >= 0)
        m = strdup(b.data ? b.data : "");
    buf_release(&b);
    return m;
}

/* ---- OAuth: header, login, step-up ---------------------------------------------------------- */

/* "sign-in required: run 'mcp-auth NAME'" (or settings.authRequiredMessage), or NULL (no
 * memory). Caller frees. */
static char *login_message(const struct cred_helper *h, const char *name)
{
    return cred_helper_login_message(
        &(struct cred_helper_opts){
            .config_path = h->config_path,
            .auth_target = h->auth_target,
            .auth_required_message = h->auth_message,
        },
        name);
}

/* The server wants a token of its own, not a sign-in: how to give it one, read after
 * "server 'NAME': ". The words match mcp-auth's (auth/flow.c). */
static void token_message(const struct cred_helper *h, const char *name, char *buf, size_t size)
{
    static const char fix[] = "\"bearerTokenEnv\": \"NAME\" (or \"headers\": {\"Authorization\": "
                              "\"Bearer ${NAME}\"}), and store the token with 'secrets "
                              "configure NAME'";
    if (h->auth_target) /* connect URL: no entry yet */
        snprintf(buf, size,
                 "it does not use OAuth (it answered 401 and publishes no OAuth metadata): it "
                 "wants a token of its own, not a sign-in. Give it one with --header "
                 "\"Authorization: Bearer ...\", or add an entry for it to mcp.json with %s",
                 fix);
    else
        snprintf(buf, size,
                 "it does not use OAuth (it answered 401 and publishes no OAuth metadata): it "
                 "wants a token of its own, not a sign-in. Give the entry '%s' one: %s",
                 name, fix);
}

static bool login_allowed(struct cred_helper *h, char *why, size_t size)
{
    int64_t now = cred_now_ms();
    unsigned recent = 0;
    for (unsigned i = 0; i < h->n_logins && i < CRED_HELPER_LOGINS_MAX; i++)
        recent += now - h->logins[i] < CRED_HELPER_LOGINS_WINDOW_MS;
    if (recent < CRED_HELPER_LOGINS_MAX)
        return true;
    snprintf(why, size,
             "%d sign-ins in the last %d minutes did not help, so no more are started "
             "for now",
             CRED_HELPER_LOGINS_MAX, CRED_HELPER_LOGINS_WINDOW_MS / 60000);
    return false;
}

static void login_note(struct cred_helper *h)
{
    h->logins[h->n_logins++ % CRED_HELPER_LOGINS_MAX] = cred_now_ms();
}

/* The scopes of a 403 insufficient_scope challenge (a copy), NULL when it names none. */
char *cred_helper_challenged_scopes(const char *challenge)
{
    struct auth_challenges list = {0};
    char *scopes = NULL;
    if (!challenge || challenges_parse(challenge, &list, NULL) <= 0)
        return NULL;
    const struct auth_challenge *c = challenges_find(&list, "Bearer");
    if (!c)
        c = challenges_find(&list, "DPoP");
    const char *v = c ? challenge_param(c, "scope") : NULL;
    if (v && *v)
        scopes = strdup(v);
    challenges_release(&list);
    return scopes;
}

/* Appends to out each space-separated word of add that out lacks. -ENOMEM. */
/* The scopes granted, from `mcp-auth status --json` (NULL when none or unreadable). */
static char *granted_scopes(const struct cred_proc_result *res)
{
    struct json_object *root = NULL, *servers = NULL;
    char *scope = NULL;
    if (!res->out_len || json_parse(res->out, res->out_len, HELPER_ANSWER_MAX, &root, NULL) < 0)
        return NULL;
    if (json_object_object_get_ex(root, "servers", &servers) &&
        json_object_is_type(servers, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(servers) && !scope; i++) {
            struct json_object *sc = NULL;
            if (json_object_object_get_ex(json_object_array_get_idx(servers, i), "scope", &sc) &&
                json_object_is_type(sc, json_type_string))
                scope = strdup(json_object_get_string(sc));
        }
    }
    json_object_put(root);
    return scope;
}

/* The step-up's scopes are known (granted ∪ challenged): run the login or explain. */
static void step_up_decide(struct slot *s, const char *granted)
{
    struct cred_helper *h = s->h;
    struct buf all;
    char cmd[MSG_MAX], msg[MSG_MAX * 2], why[200];
    buf_init(&all, 8192);
    int r = buf_append_new_words(&all, granted);
    if (r >= 0)
        r = buf_append_new_words(&all, s->challenged);
    const char *scopes = all.data ? all.data : "";
    free(s->scopes);
    s->scopes = strdup(scopes);
    cred_helper_signin_command(h, s->srv->name, cmd, sizeof(cmd));
    if (r < 0) {
        cred_helper_slot_settled(s, -ENOMEM, "out of memory");
    } else if (h->auto_auth && login_allowed(h, why, sizeof(why))) {
        struct err e = ERR_INIT;
        log_warn(h->log, "server '%s': it needs a wider grant (scope \"%s\"): signing in again",
                 s->srv->name, scopes);
        r = cred_helper_oauth_run(s, OAUTH_LOGIN, scopes, &e);
        if (r >= 0) {
            buf_release(&all);
            return;
        }
        snprintf(msg, sizeof(msg), "cannot sign in again: %s", err_msg(&e));
        cred_helper_slot_settled(s, -EPERM, msg);
    } else {
        /* read after "server 'NAME': ", as every message of the provider */
        if (*scopes)
            snprintf(msg, sizeof(msg),
                     "the request was refused: it needs a wider grant than the one signed in "
                     "(insufficient_scope). Run '%s --scope \"%s\"'%s%s",
                     cmd, scopes, h->auto_auth ? "; " : "", h->auto_auth ? why : "");
        else
            snprintf(msg, sizeof(msg),
                     "the request was refused: it needs a wider grant than the one signed in "
                     "(insufficient_scope), and the server named no scope. Run '%s --scope "
                     "\"SCOPES\"' with the scopes its documentation names%s%s",
                     cmd, h->auto_auth ? "; " : "", h->auto_auth ? why : "");
        if (h->auto_auth) /* past the storm brake: a sign-in is needed (LOGIN), and why */
            snprintf(msg, sizeof(msg), "sign-in required: run '%s --scope \"%s\"' (%s)", cmd,
                     *scopes ? scopes : "SCOPES", why);
        cred_helper_slot_settled(s, h->auto_auth ? CRED_LOGIN_REQUIRED : -EPERM, msg);
    }
    buf_release(&all);
}

void cred_helper_oauth_done(struct slot *s, const struct cred_proc_result *res)
{
    struct cred_helper *h = s->h;
    char msg[MSG_MAX * 2], why[200];
    struct err e = ERR_INIT;
    const char *name = s->srv->name;

    switch (s->step) {
    case OAUTH_STATUS: {
        char *granted = granted_scopes(res);
        step_up_decide(s, granted);
        free(granted);
        return;
    }
    case OAUTH_LOGIN:
        if (res->exit_code != 0) {
            /* the sign-in itself failed: its reason, and the command to try it by hand */
            char fail[MSG_MAX], cmd[MSG_MAX];
            cred_helper_run_failure(s, res, fail, sizeof(fail));
            cred_helper_signin_command(h, name, cmd, sizeof(cmd));
            char *m = NULL;
            if (asprintf(&m,
                         "signing in by itself (autoAuth) failed: %s. Run '%s%s%s%s' to see why",
                         fail, cmd, s->step_up ? " --scope \"" : "",
                         s->step_up && s->scopes ? s->scopes : "", s->step_up ? "\"" : "") < 0)
                m = NULL;
            cred_helper_slot_settled(s, s->step_up ? -EPERM : CRED_LOGIN_REQUIRED,
                                     m ? m : "signing in by itself (autoAuth) failed");
            free(m);
            return;
        }
        log_info(h->log, "server '%s': signed in", name);
        s->refresh = false;
        if (cred_helper_oauth_run(s, OAUTH_HEADER, NULL, &e) < 0)
            cred_helper_slot_settled(s, -EIO, err_msg(&e));
        return;
    case OAUTH_HEADER:
        break;
    }
    if (res->exit_code == 4) {
        if (h->auto_auth && login_allowed(h, why, sizeof(why))) {
            log_warn(h->log, "server '%s': signing in (autoAuth): running mcp-auth login", name);
            if (cred_helper_oauth_run(s, OAUTH_LOGIN, NULL, &e) >= 0)
                return;
            snprintf(why, sizeof(why), "%s", err_msg(&e));
        }
        char *m = login_message(h, name);
        if (h->auto_auth)
            snprintf(msg, sizeof(msg), "%s (%s)", m ? m : "login required", why);
        else
            snprintf(msg, sizeof(msg), "%s", m ? m : "login required");
        free(m);
        strv_release_secure(&s->vals);
        dpop_key_unref(s->dpop);
        s->dpop = NULL;
        s->have = false;
        cred_helper_slot_settled(s, CRED_LOGIN_REQUIRED, msg);
        return;
    }
    if (res->exit_code == 7 && !res->timed_out && !res->signal) {
        /* the server publishes no OAuth metadata (mcp-auth's discovery says so): no sign-in
         * helps, a token in the entry does. Not "login required": nothing is to be polled for,
         * the entry has to change (-EINVAL: the connect fails until it does) */
        token_message(h, name, msg, sizeof(msg));
        strv_release_secure(&s->vals);
        dpop_key_unref(s->dpop);
        s->dpop = NULL;
        s->have = false;
        cred_helper_slot_settled(s, -EINVAL, msg);
        return;
    }
    if (res->exit_code == 5 && !res->timed_out && !res->signal) {
        /* the authorization server or the network failed: no valid token now, and a sign-in
         * may be needed if it lasts; the next call asks again, so recovery needs nothing */
        char line[400];
        cred_proc_first_line(res->err, res->err_len, line, sizeof(line));
        char *m = login_message(h, name);
        snprintf(msg, sizeof(msg),
                 "no valid token: mcp-auth could not refresh it (%s); it is tried again at the "
                 "next call, and if that keeps failing: %s",
                 line[0] ? line : "the authorization server failed", m ? m : "login required");
        free(m);
        cred_helper_slot_settled(s, -EIO, msg);
        return;
    }
    if (res->exit_code != 0 || !res->out_len) {
        cred_helper_run_failure(s, res, msg, sizeof(msg));
        cred_helper_slot_settled(s, -EIO, msg);
        return;
    }
    int r = cred_helper_headers_answer(s, res, msg, sizeof(msg));
    if (r >= 0 && s->step_up)
        log_info(h->log, "server '%s': the grant was widened", name);
    cred_helper_slot_settled(s, r < 0 ? r : 0, r < 0 ? msg : NULL);
}

/* What a sign-in says while it waits (the URL to open, when no browser could be started): to the
 * log, where the person running the agent sees it. */
static void login_line(const char *line, size_t len, void *userdata)
{
    struct slot *s = userdata;
    if (len)
        log_warn(s->h->log, "server '%s': mcp-auth: %.*s", s->srv->name, (int)len, line);
}

/* mcp-auth [--config PATH] STEP ... [--account NAME] TARGET */
int cred_helper_oauth_run(struct slot *s, enum oauth_step step, const char *scope, struct err *e)
{
    struct cred_helper *h = s->h;
    char *prog = NULL, timeout[32];
    int r = cred_path_find(HELPER_MCP_AUTH, &prog, e);
    if (r < 0)
        return r;
    struct strv argv = STRV_INIT;
    const char *target = h->auth_target ? h->auth_target : s->srv->name;
    r = strv_push(&argv, prog);
    if (r >= 0 && h->config_path)
        r = strv_push(&argv, "--config") < 0 ? -ENOMEM : strv_push(&argv, h->config_path);
    int64_t run_timeout = h->helper_timeout_ms;
    switch (step) {
    case OAUTH_HEADER:
        if (r >= 0)
            r = strv_push(&argv, "header") < 0 || strv_push(&argv, "--json") < 0 ? -ENOMEM : 0;
        if (r >= 0 && s->refresh)
            r = strv_push(&argv, "--refresh");
        break;
    case OAUTH_STATUS:
        if (r >= 0)
            r = strv_push(&argv, "status") < 0 || strv_push(&argv, "--json") < 0 ? -ENOMEM : 0;
        break;
    case OAUTH_LOGIN:
        snprintf(timeout, sizeof(timeout), "%" PRId64 "ms", h->login_timeout_ms);
        if (r >= 0)
            r = strv_push(&argv, "-q") < 0 || strv_push(&argv, "login") < 0 ||
                        strv_push(&argv, "--timeout") < 0 || strv_push(&argv, timeout) < 0
                    ? -ENOMEM
                    : 0;
        if (r >= 0 && scope && *scope)
            r = strv_push(&argv, "--scope") < 0 ? -ENOMEM : strv_push(&argv, scope);
        run_timeout = h->login_timeout_ms + 5000;
        login_note(h);
        break;
    }
    /* a URL's --allow-http (the entry of a name says it to mcp-auth itself): mcp-auth refuses
     * a plain http URL on a host that is not loopback as the bridge does */
    if (r >= 0 && h->auth_target && s->srv->allow_http && step != OAUTH_STATUS)
        r = strv_push(&argv, "--allow-http");
    /* the entry's account name ("oauth": {"account": ...}): two entries for one URL are two
     * sign-ins; said on the command line too, so that status and a URL target pick the same
     * account as the entry (a name, never a secret) */
    const char *account = cred_oauth_account(s->srv);
    if (r >= 0 && account)
        r = strv_push(&argv, "--account") < 0 ? -ENOMEM : strv_push(&argv, account);
    if (r >= 0)
        r = strv_push(&argv, "--") < 0 ? -ENOMEM : strv_push(&argv, target);
    free(prog);
    if (r < 0) {
        strv_release(&argv);
        return err_set(e, -ENOMEM, "out of memory");
    }
    s->step = step;
    struct cred_proc_spec spec = {
        .argv = (const char *const *)argv.v,
        .timeout_ms = run_timeout,
        .on_err_line = step == OAUTH_LOGIN ? login_line : NULL,
    };
    r = cred_helper_start(s, &spec, e);
    strv_release(&argv);
    return r;
}
