/* net.c - the TLS of mcp-auth's requests (net.h) */
#include <stdbool.h>

#include "credkit/mcp_tls.h"

#include "net.h"
#include "secret_command.h"

/* The run's settings: written once by net_load(), before any request. */
static struct http_tls net;
static bool net_ready;

static void ensure_init(void)
{
    if (!net_ready) {
        http_tls_init(&net);
        net_ready = true;
    }
}

int net_load(const struct mcp_server *s, const char *server_url, struct err *e)
{
    ensure_init();
    if (!s)
        return 0;
    return mcp_server_tls(s, server_url, secret_lookup, NULL, &net, e);
}

const struct http_tls *net_tls(void)
{
    ensure_init();
    return &net;
}

void net_release(void)
{
    if (net_ready)
        http_tls_release(&net);
    net_ready = false;
}
