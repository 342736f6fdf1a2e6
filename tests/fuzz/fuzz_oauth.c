/* fuzz_oauth.c - libFuzzer target: what an authorization server answers (auth/oauth.c,
 * auth/discovery.c, auth/token_json.c).
 *
 * An in-process HTTP server on 127.0.0.1 (libmicrohttpd) answers mcp-auth's real requests with
 * the input: token responses, dynamic client registration and device authorization answers,
 * and for discovery an MCP server's 401 challenge, its protected resource metadata and its
 * authorization server metadata. Input: byte 0 picks what is asked for, byte 1 the HTTP
 * status of the answer, the rest is up to three parts separated by NUL bytes, in which
 * "@ORIGIN@" stands for the server's own "http://127.0.0.1:PORT" (so that the seeds' metadata
 * can point back at it):
 *   token, register, device: part 1 is the body of /token, /register, /device;
 *   discovery: part 1 the WWW-Authenticate of /mcp's 401, part 2 the protected resource
 *              metadata, part 3 the authorization server metadata (every well-known path);
 *   store:     part 1 a token store file, read and written back.
 * Whatever is accepted must have what the callers rely on (a token, a client_id, a device
 * code, an issuer and endpoints); whatever is refused must say why. */
#include <errno.h>
#include <pthread.h>

#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

#include "discovery.h"
#include "oauth.h"
#include "token_json.h"
#include "tokens.h"

#include "fuzz.h"
#include "httpd.h"

#define PARTS 3

static struct MHD_Daemon *daemon_;
static char origin[64];
static char *part[PARTS];
static unsigned status;

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, const char *body,
                              const char *challenge)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    (void)MHD_add_response_header(r, "Content-Type", "application/json");
    if (challenge)
        (void)MHD_add_response_header(r, "WWW-Authenticate", challenge);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    if (!*req_cls) { /* the first call only announces the request */
        *req_cls = c;
        return MHD_YES;
    }
    if (*upload_size) { /* the form body: not looked at */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/mcp") == 0)
        return answer(c, 401, "", part[0]);
    if (strncmp(url, "/.well-known/oauth-protected-resource", 37) == 0)
        return answer(c, status, part[1], NULL);
    if (strncmp(url, "/.well-known/", 13) == 0)
        return answer(c, status, part[2], NULL);
    return answer(c, status, part[0], NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    unsigned port = 0;
    daemon_ = httpd_start(on_request, NULL, NULL, 0, &port);
    snprintf(origin, sizeof(origin), "http://127.0.0.1:%u", port);
    return 0;
}

/* s with every "@ORIGIN@" replaced by the server's origin. */
static char *with_origin(const char *s)
{
    static const char mark[] = "@ORIGIN@";
    size_t n = 0, olen = strlen(origin);
    for (const char *p = s; (p = strstr(p, mark)); p += sizeof(mark) - 1)
        n++;
    char *out = malloc(strlen(s) + n * olen + 1), *o = out;
    fuzz_check(out != NULL);
    for (const char *p = s, *m; *p; p = m + sizeof(mark) - 1) {
        m = strstr(p, mark);
        if (!m) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(m - p));
        o += m - p;
        memcpy(o, origin, olen);
        o += olen;
    }
    *o = 0;
    return out;
}

static char *endpoint(const char *path)
{
    char *s = malloc(strlen(origin) + strlen(path) + 1);
    fuzz_check(s != NULL);
    strcpy(s, origin);
    strcat(s, path);
    return s;
}

static void token(void)
{
    static const char *const params[] = {"grant_type", "refresh_token", "refresh_token",
                                         "r-1",        "resource",      "https://mcp.example.com",
                                         NULL};
    struct oauth_client client = {.client_id = "c-1", .client_secret = "s-1"};
    struct token_response t = {0};
    struct err e = ERR_INIT;
    char *url = endpoint("/token");
    int r = oauth_token(url, &client, params, 2000, &t, &e);
    if (r == 0) {
        fuzz_check(t.error || (t.access_token && t.access_token[0]));
        token_response_release(&t);
    } else {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
    }
    free(url);
}

static void reg(void)
{
    struct registration g = {0};
    struct err e = ERR_INIT;
    char *url = endpoint("/register");
    int r = oauth_register(url, "http://127.0.0.1:1/callback", "read", true, NULL, 2000, &g, &e);
    if (r == 0) {
        fuzz_check(g.client_id && g.client_id[0]);
        registration_release(&g);
    } else {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
    }
    free(url);
}

static void device(void)
{
    struct device_authorization d = {0};
    struct oauth_client client = {.client_id = "c-1"};
    struct err e = ERR_INIT;
    char *url = endpoint("/device");
    int r = oauth_device_authorize(url, &client, "read", "https://mcp.example.com", 2000, &d, &e);
    if (r == 0) {
        fuzz_check(d.device_code && d.user_code && d.verification_uri);
        fuzz_check(d.expires_in > 0 && d.interval > 0);
        device_authorization_release(&d);
    } else {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
    }
    free(url);
}

static void discover(void)
{
    struct discovery *d = NULL;
    struct err e = ERR_INIT;
    char *url = endpoint("/mcp");
    int r = discovery_run(url, 2000, &d, &e);
    if (r == 0) {
        fuzz_check(d->server_url && d->issuer && d->resource);
        (void)discovery_as_string(d, "authorization_endpoint");
        (void)discovery_as_lists(d, "grant_types_supported", "authorization_code");
        char *scope = discovery_default_scope(d);
        free(scope);
        discovery_free(d);
    } else {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
    }
    free(url);
}

static void store(const char *text)
{
    struct json_object *root = NULL, *back = NULL;
    struct token_entry *t = NULL, *again = NULL;
    struct err e = ERR_INIT;
    if (json_parse(text, strlen(text), 1024 * 1024, &root, &e) < 0)
        return;
    int r = token_entry_from_json(root, "~/.pi/agent/oauth/x.json", &t, &e);
    if (r < 0) {
        fuzz_check(e.msg[0] != 0 || r == -ENOMEM);
        goto out;
    }
    /* what was read writes back, and reads back the same */
    fuzz_check(token_entry_to_json(t, 1, &back) == 0);
    fuzz_check(token_entry_from_json(back, "again", &again, &e) == 0);
    fuzz_check(!t->access_token == !again->access_token);
    fuzz_check(!t->access_token || strcmp(t->access_token, again->access_token) == 0);
    fuzz_check(!t->refresh_token == !again->refresh_token);
    fuzz_check(!t->refresh_token || strcmp(t->refresh_token, again->refresh_token) == 0);
    fuzz_check(t->expires_at == again->expires_at);
out:
    token_entry_free(again);
    token_entry_free(t);
    token_json_wipe_secrets(back);
    json_object_put(back);
    token_json_wipe_secrets(root);
    json_object_put(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned statuses[8] = {200, 200, 201, 400, 401, 404, 500, 302};
    if (size < 2 || size > 256 * 1024)
        return 0;
    status = statuses[data[1] & 7];
    const char *p = (const char *)data + 2, *end = (const char *)data + size;
    for (int i = 0; i < PARTS; i++) {
        const char *z = p < end ? memchr(p, 0, (size_t)(end - p)) : NULL;
        size_t n = p < end ? (z ? (size_t)(z - p) : (size_t)(end - p)) : 0;
        char *raw = fuzz_strndup((const uint8_t *)p, n);
        part[i] = with_origin(raw);
        free(raw);
        p += n + 1;
    }
    switch (data[0] % 5) {
    case 0:
        token();
        break;
    case 1:
        reg();
        break;
    case 2:
        device();
        break;
    case 3:
        discover();
        break;
    default:
        store(part[0]);
        break;
    }
    for (int i = 0; i < PARTS; i++) {
        free(part[i]);
        part[i] = NULL;
    }
    return 0;
}
