/* test_oauth_register.c - the dynamic registration request (RFC 7591) as an authorization
 * server receives it: mcp-auth's client_name by default, "oauth.clientName" and
 * "oauth.clientUri" when the entry gives them. An in-test HTTP server on 127.0.0.1 answers. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "httpd.h" /* also named here: CMake links libmicrohttpd to tests that include it */
#include "oauth.h"
#include "tests.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *last_body; /* the last registration request's body, under mu */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    struct httpd_upload *u = NULL;
    enum MHD_Result now;
    if (!httpd_collect(con_cls, data, data_size, &u, &now))
        return now;
    pthread_mutex_lock(&mu);
    free(last_body);
    last_body = u->data ? strdup(u->data) : NULL;
    pthread_mutex_unlock(&mu);
    return httpd_reply(c, 201, "application/json", "{\"client_id\": \"cid-1\"}", NULL);
}

/* The string member key of the last request, or NULL; caller frees. */
static char *sent(const char *key)
{
    char *v = NULL;
    pthread_mutex_lock(&mu);
    struct json_object *o = last_body ? json_tokener_parse(last_body) : NULL;
    struct json_object *m = NULL;
    if (o && json_object_object_get_ex(o, key, &m) && json_object_is_type(m, json_type_string))
        v = strdup(json_object_get_string(m));
    json_object_put(o);
    pthread_mutex_unlock(&mu);
    return v;
}

static void test_client_name_and_uri(void)
{
    unsigned port = 0;
    struct MHD_Daemon *d = httpd_start(handler, NULL, httpd_upload_completed, 0, &port);
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/register", port);
    struct registration reg = {0};
    struct err e = ERR_INIT;

    /* the default: mcp-auth's own name, no client_uri */
    int r =
        oauth_register(endpoint, "http://127.0.0.1:9/callback", NULL, false, NULL, 5000, &reg, &e);
    CHECK_INT(r, 0);
    if (r < 0)
        fprintf(stderr, "  %s\n", err_msg(&e));
    CHECK_STR(reg.client_id, "cid-1");
    registration_release(&reg);
    char *name = sent("client_name"), *uri = sent("client_uri");
    CHECK_STR(name, "mcp-auth (credkit)");
    CHECK(uri == NULL);
    free(name);
    free(uri);
    /* 2026-07-28: a loopback client says it is native (OIDC would take "web" by default, which
     * refuses loopback redirect URIs), and asks for refresh tokens */
    char *app = sent("application_type"), *method = sent("token_endpoint_auth_method");
    CHECK_STR(app, "native");
    CHECK_STR(method, "none");
    free(app);
    free(method);
    pthread_mutex_lock(&mu);
    CHECK(last_body &&
          strstr(last_body, "\"grant_types\":[\"authorization_code\",\"refresh_token\"]"));
    CHECK(last_body && !strstr(last_body, "\"scope\""));
    pthread_mutex_unlock(&mu);

    /* the entry's */
    reg = (struct registration){0};
    const struct oauth_client_meta meta = {
        .name = "Pi MCP Client", .uri = "https://pi.dev", .logo_uri = "https://pi.dev/logo.png"};
    r = oauth_register(endpoint, "http://127.0.0.1:9/callback", NULL, false, &meta, 5000, &reg, &e);
    CHECK_INT(r, 0);
    registration_release(&reg);
    name = sent("client_name");
    uri = sent("client_uri");
    char *logo = sent("logo_uri");
    CHECK_STR(name, "Pi MCP Client");
    CHECK_STR(uri, "https://pi.dev");
    CHECK_STR(logo, "https://pi.dev/logo.png");
    free(name);
    free(uri);
    free(logo);
    pthread_mutex_lock(&mu);
    CHECK(last_body && strstr(last_body, "\"redirect_uris\":[\"http://127.0.0.1:9/callback\"]"));
    pthread_mutex_unlock(&mu);

    /* a name alone: client_uri stays out */
    reg = (struct registration){0};
    const struct oauth_client_meta only_name = {.name = "Only Name"};
    r = oauth_register(endpoint, "http://127.0.0.1:9/callback", NULL, false, &only_name, 5000, &reg,
                       &e);
    CHECK_INT(r, 0);
    registration_release(&reg);
    name = sent("client_name");
    uri = sent("client_uri");
    logo = sent("logo_uri");
    CHECK_STR(name, "Only Name");
    CHECK(uri == NULL);
    CHECK(logo == NULL);
    free(name);
    free(uri);
    free(logo);

    MHD_stop_daemon(d);
    free(last_body);
    last_body = NULL;
}

TESTS_MAIN(test_client_name_and_uri)
