/* downstream_mrtr.c - across eras, a legacy server's requests during a modern agent's call: the
 * agent's request answered with an InputRequiredResult, its requestState (opaque, HMAC-signed
 * with a per-process key, bounded in count and time) resuming the server's request when the
 * agent sends the request again with its inputResponses. */
#include <stdlib.h>

#include "downstream_int.h"

bool ds_mrtr_server_request(struct ds_server *s, uint64_t gen, struct json_object *msg)
{
    (void)s;
    (void)gen;
    (void)msg;
    return false; /* TODO(mrtr) */
}

int ds_mrtr_resume(struct downstream *d, struct jrpc_msg *m, struct ds_server *s)
{
    (void)d;
    (void)m;
    (void)s;
    return 0; /* TODO(mrtr) */
}

bool ds_mrtr_on_response(struct ds_pending *p, struct json_object *response, int error,
                         const char *message)
{
    (void)p;
    (void)response;
    (void)error;
    (void)message;
    return false; /* TODO(mrtr) */
}

void ds_mrtr_pending_free(struct ds_pending *p)
{
    (void)p; /* TODO(mrtr) */
}

void ds_mrtr_release_all(struct downstream *d)
{
    (void)d; /* TODO(mrtr) */
}
