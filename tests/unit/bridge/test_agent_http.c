/* test_agent_http.c - the HTTP listener (agent_http.h) on a real downstream with no server, and
 * libcurl on the same loop as the agent: the refusals at start (a non-loopback bind without a
 * token, addresses that are not), a 2025-11-25 session (initialize, a request, DELETE, the
 * session gone), the checks against DNS rebinding, the token, and 2026-07-28 requests: the
 * Mcp-* headers, the _meta envelope, initialize refused, a tool call answered as JSON; answers
 * routed to their POST whatever the form of their id. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/mcp_config.h"

#include "core/loop.h"
#include "downstream/agent_http.h"
#include "downstream/downstream.h"
#include "tests.h"

#include "loop_wait.h"

#define WAIT_MS 10000

struct bench {
    struct loop *loop;
    struct log *log;
    struct downstream *d;
    struct agent_http *h;
    char url[160];
};

static void on_ds_done(int status, void *userdata)
{
    (void)status;
    (void)userdata;
}

static struct mcp_config *empty_config(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/mcp.json", tests_tmpdir());
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    fputs("{\"mcpServers\": {}}\n", fp);
    fclose(fp);
    setenv("CREDKIT_BRIDGE_BUNDLED", path, 1);
    setenv("MCP_BRIDGE_CACHE", "off", 1);
    struct mcp_config_opts opts = {.config_path = path};
    struct mcp_config *c = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(mcp_config_load(&opts, &c, &e), 0);
    return c;
}

/* A downstream with no server (persist) and its listener on listen, with token (NULL: none):
 * 0, or agent_http_new()'s error (nothing left to stop). */
static int bench_start(struct bench *b, const char *listen, const char *token)
{
    memset(b, 0, sizeof(*b));
    CHECK_INT(loop_new(&b->loop), 0);
    b->log = log_new("test_agent_http", getenv("TEST_VERBOSE") ? 2 : -1);
    struct mcp_config *c = empty_config();
    struct downstream_opts o = {
        .loop = b->loop,
        .log = b->log,
        .in_fd = -1,
        .out_fd = -1,
        .mode = DOWNSTREAM_AGGREGATE,
        .config = c,
        .persist = true,
        .on_done = on_ds_done,
    };
    struct err e = ERR_INIT;
    CHECK_INT(downstream_new(&o, &b->d, &e), 0);
    mcp_config_free(c);
    struct agent_http_opts ho = {
        .loop = b->loop,
        .log = b->log,
        .d = b->d,
        .listen = listen,
        .token = token,
        .allow_origins = (const char *const[]){"https://app.example.com", NULL},
    };
    int r = agent_http_new(&ho, &b->h, &e);
    if (r < 0) {
        downstream_free(b->d);
        loop_free(b->loop);
        log_free(b->log);
        return r;
    }
    snprintf(b->url, sizeof(b->url), "%s", agent_http_url(b->h));
    return 0;
}

static void bench_stop(struct bench *b)
{
    downstream_free(b->d);
    agent_http_free(b->h);
    loop_free(b->loop);
    log_free(b->log);
}

/* ---- the client: libcurl on the bench's loop --------------------------------------------- */

struct reply {
    long status;
    bool done;
    struct buf body;
    char sid[128];
    char type[128]; /* Content-Type */
};

static size_t on_body(char *p, size_t size, size_t n, void *userdata)
{
    struct reply *r = userdata;
    return buf_append(&r->body, p, size * n) < 0 ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
    struct reply *r = userdata;
    size_t len = size * n;
    if (len > 15 && strncasecmp(p, "Mcp-Session-Id:", 15) == 0) {
        size_t k = strspn(p + 15, " ");
        size_t v = strcspn(p + 15 + k, "\r\n");
        snprintf(r->sid, sizeof(r->sid), "%.*s", (int)v, p + 15 + k);
    }
    if (len > 13 && strncasecmp(p, "Content-Type:", 13) == 0) {
        size_t k = strspn(p + 13, " ");
        size_t v = strcspn(p + 13 + k, "\r\n");
        snprintf(r->type, sizeof(r->type), "%.*s", (int)v, p + 13 + k);
    }
    return len;
}

static void on_curl_done(CURL *easy, CURLcode res, void *userdata)
{
    struct reply *r = userdata;
    r->status = res == CURLE_OK ? 0 : -1;
    if (res == CURLE_OK)
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r->status);
    r->done = true;
}

static bool reply_done(void *ctx)
{
    return ((struct reply *)ctx)->done;
}

/* One request: its status (-1 when the transfer failed), body in r->body. headers: NULL-ended,
 * besides the JSON ones. */
static long http(struct bench *b, const char *method, const char *body, const char *const *headers,
                 struct reply *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->body, 1u << 20);
    CURL *c = curl_easy_init();
    CHECK(c != NULL);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, b->url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    CHECK_INT(loop_curl_add(b->loop, c, on_curl_done, r), 0);
    CHECK(wait_for(b->loop, reply_done, r, WAIT_MS));
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return r->status;
}

#define INIT                                                                                       \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"     \
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}"
#define MODERN_LIST                                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":{"              \
    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                  \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
#define MODERN_NO_CAPS                                                                             \
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"_meta\":{"              \
    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}"
#define MODERN_INIT                                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":{\"_meta\":{"              \
    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                  \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
#define MODERN_CALL                                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"nothing\","    \
    "\"arguments\":{},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","      \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"

/* ---- the tests --------------------------------------------------------------------------- */

static void test_refused_at_start(void)
{
    struct bench b;
    CHECK_INT(bench_start(&b, "0.0.0.0:0", NULL), -EPERM); /* not loopback: a token is needed */
    CHECK_INT(bench_start(&b, "[::]:0", NULL), -EPERM);
    CHECK_INT(bench_start(&b, "nowhere:80", NULL), -EINVAL);
    CHECK_INT(bench_start(&b, "70000", NULL), -EINVAL);
    CHECK_INT(bench_start(&b, "127.0.0.1:-1", NULL), -EINVAL);
    CHECK_INT(bench_start(&b, "[::1:80", NULL), -EINVAL);
    CHECK_INT(bench_start(&b, "", NULL), -EINVAL);
}

static void test_session(void)
{
    struct bench b;
    struct reply r;
    CHECK_INT(bench_start(&b, "0", NULL), 0);
    CHECK(strncmp(b.url, "http://127.0.0.1:", 17) == 0);

    CHECK_INT(http(&b, "POST", INIT, NULL, &r), 200);
    CHECK_CONTAINS(buf_str(&r.body), "\"serverInfo\"");
    CHECK(strlen(r.sid) >= 24);
    char sid[160], hsid[200];
    snprintf(sid, sizeof(sid), "%s", r.sid);
    snprintf(hsid, sizeof(hsid), "Mcp-Session-Id: %s", sid);
    buf_release(&r.body);

    CHECK_INT(http(&b, "POST", LIST, (const char *const[]){hsid, NULL}, &r), 200);
    CHECK_CONTAINS(buf_str(&r.body), "\"tools\"");
    buf_release(&r.body);
    /* no session, no _meta: which era is it? neither */
    CHECK_INT(http(&b, "POST", LIST, NULL, &r), 400);
    buf_release(&r.body);
    /* a notification: accepted, nothing comes back */
    CHECK_INT(http(&b, "POST", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                   (const char *const[]){hsid, NULL}, &r),
              202);
    buf_release(&r.body);
    CHECK_INT(http(&b, "PUT", LIST, (const char *const[]){hsid, NULL}, &r), 405);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", "{not json", (const char *const[]){hsid, NULL}, &r), 400);
    CHECK_CONTAINS(buf_str(&r.body), "-32700");
    buf_release(&r.body);

    CHECK_INT(http(&b, "DELETE", NULL, (const char *const[]){hsid, NULL}, &r), 200);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", LIST, (const char *const[]){hsid, NULL}, &r), 404);
    buf_release(&r.body);
    CHECK_INT(http(&b, "DELETE", NULL, (const char *const[]){hsid, NULL}, &r), 404);
    buf_release(&r.body);
    bench_stop(&b);
}

static void test_rebinding(void)
{
    struct bench b;
    struct reply r;
    CHECK_INT(bench_start(&b, "127.0.0.1:0", NULL), 0);
    const char *const evil_host[] = {"Host: evil.example", NULL};
    const char *const evil_origin[] = {"Origin: http://evil.example", NULL};
    const char *const near_origin[] = {"Origin: http://127.0.0.1.evil.example", NULL};
    const char *const local_origin[] = {"Origin: http://localhost:5173", "Host: localhost", NULL};
    const char *const listed_origin[] = {"Origin: https://app.example.com", NULL};
    CHECK_INT(http(&b, "POST", INIT, evil_host, &r), 403);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", INIT, evil_origin, &r), 403);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", INIT, near_origin, &r), 403);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", INIT, local_origin, &r), 200);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", INIT, listed_origin, &r), 200);
    buf_release(&r.body);
    bench_stop(&b);
}

static void test_token(void)
{
    struct bench b;
    struct reply r;
    CHECK_INT(bench_start(&b, "127.0.0.1:0", "s3cret-token"), 0);
    CHECK_INT(http(&b, "POST", INIT, NULL, &r), 401);
    buf_release(&r.body);
    CHECK_INT(
        http(&b, "POST", INIT, (const char *const[]){"Authorization: Bearer s3cret", NULL}, &r),
        401);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", INIT,
                   (const char *const[]){"Authorization: Bearer s3cret-token", NULL}, &r),
              200);
    buf_release(&r.body);
    bench_stop(&b);
}

static void test_modern(void)
{
    struct bench b;
    struct reply r;
    CHECK_INT(bench_start(&b, "0", NULL), 0);
    const char *const ok[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", NULL};
    const char *const b64[] = {"MCP-Protocol-Version: 2026-07-28",
                               "Mcp-Method: =?base64?dG9vbHMvbGlzdA==?=", NULL};
    const char *const wrong[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                                 NULL};
    const char *const none[] = {"Mcp-Method: tools/list", NULL};
    CHECK_INT(http(&b, "POST", MODERN_LIST, ok, &r), 200);
    CHECK_CONTAINS(buf_str(&r.body), "\"resultType\":\"complete\"");
    CHECK(r.sid[0] == '\0'); /* no session in 2026-07-28 */
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", MODERN_LIST, b64, &r), 200);
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", MODERN_LIST, wrong, &r), 400);
    CHECK_CONTAINS(buf_str(&r.body), "-32020");
    buf_release(&r.body);
    CHECK_INT(http(&b, "POST", MODERN_LIST, none, &r), 400);
    CHECK_CONTAINS(buf_str(&r.body), "MCP-Protocol-Version");
    CHECK_CONTAINS(buf_str(&r.body), "\"id\":3"); /* the refusal names the request */
    buf_release(&r.body);
    /* spaces around a header's value are not part of it */
    const char *const padded[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method:   tools/list  ",
                                  NULL};
    CHECK_INT(http(&b, "POST", MODERN_LIST, padded, &r), 200);
    buf_release(&r.body);
    /* an envelope without the client's capabilities: -32602, 400, before the headers */
    CHECK_INT(http(&b, "POST", MODERN_NO_CAPS, ok, &r), 400);
    CHECK_CONTAINS(buf_str(&r.body), "-32602");
    CHECK_CONTAINS(buf_str(&r.body), "\"id\":4");
    buf_release(&r.body);
    /* initialize is not a 2026-07-28 method */
    const char *const init[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: initialize", NULL};
    CHECK_INT(http(&b, "POST", MODERN_INIT, init, &r), 404);
    CHECK_CONTAINS(buf_str(&r.body), "-32601");
    CHECK_CONTAINS(buf_str(&r.body), "\"id\":5");
    CHECK(r.sid[0] == '\0');
    buf_release(&r.body);
    /* a tool call with nothing before its answer is answered as JSON, though SSE was accepted */
    const char *const call[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                                "Mcp-Name: nothing", NULL};
    long st = http(&b, "POST", MODERN_CALL, call, &r);
    CHECK(st == 200 || st == 400 || st == 404);
    CHECK_STR(r.type, "application/json");
    CHECK_CONTAINS(buf_str(&r.body), "\"id\":6");
    buf_release(&r.body);
    bench_stop(&b);
}

/* Answers find their POST whatever the id: the plain ones (an integer, a string) routed from the
 * bytes, the others (a sign, an escape, past 18 digits) through a tree; a 2026-07-28 error keeps
 * its status (an unknown method: 404). */
static void test_ids(void)
{
    struct bench b;
    struct reply r;
    CHECK_INT(bench_start(&b, "0", NULL), 0);
    CHECK_INT(http(&b, "POST", INIT, NULL, &r), 200);
    char hsid[200];
    snprintf(hsid, sizeof(hsid), "Mcp-Session-Id: %s", r.sid);
    buf_release(&r.body);
    /* each id as sent, and as its answer carries it */
    static const char *const ids[][2] = {
        {"7", "7"},
        {"\"plain\"", "\"plain\""},
        {"-7", "-7"},
        {"\"a\\\"b\"", "\"a\\\"b\""},
        {"12345678901234567890", "12345678901234567890"},
        {"\"\\u0041\"", "\"A\""},
    };
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char body[200], want[64];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/list\",\"params\":{}}",
                 ids[i][0]);
        CHECK_INT(http(&b, "POST", body, (const char *const[]){hsid, NULL}, &r), 200);
        snprintf(want, sizeof(want), "\"id\":%s,", ids[i][1]);
        CHECK_CONTAINS(buf_str(&r.body), want);
        CHECK_CONTAINS(buf_str(&r.body), "\"tools\"");
        buf_release(&r.body);
    }
    const char *const nope[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: nope/nope", NULL};
    CHECK_INT(http(&b, "POST",
                   "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"nope/nope\",\"params\":{"
                   "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                   nope, &r),
              404);
    CHECK_CONTAINS(buf_str(&r.body), "-32601");
    CHECK_CONTAINS(buf_str(&r.body), "\"id\":\"q\"");
    buf_release(&r.body);
    /* the request read from its scan still has its name checked against Mcp-Name */
    const char *const other[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                                 "Mcp-Name: other", NULL};
    CHECK_INT(http(&b, "POST", MODERN_CALL, other, &r), 400);
    CHECK_CONTAINS(buf_str(&r.body), "Mcp-Name");
    CHECK_CONTAINS(buf_str(&r.body), "-32020");
    buf_release(&r.body);
    bench_stop(&b);
}

TESTS_MAIN(test_refused_at_start, test_session, test_rebinding, test_token, test_modern, test_ids)
