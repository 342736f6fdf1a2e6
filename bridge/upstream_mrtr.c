/* upstream_mrtr.c - a modern server's InputRequiredResult satisfied for a caller that did not
 * ask to see it (upstream.h, UPSTREAM_CALL_INPUT_PASS): its input requests handed to
 * on_request as server requests, their answers gathered and the request sent again; and which
 * call a server request belongs to (upstream_related_call). */
#include <stdlib.h>

#include "upstream_internal.h"

bool up_mrtr_on_result(struct upstream *u, struct upstream_call *c, struct jrpc_msg *m)
{
    (void)u;
    (void)c;
    (void)m;
    return false; /* TODO(mrtr): input rounds */
}

bool up_mrtr_take_response(struct upstream *u, struct json_object *id, struct json_object *result,
                           struct json_object *error)
{
    (void)u;
    (void)id;
    (void)result;
    (void)error;
    return false; /* TODO(mrtr) */
}

void up_mrtr_free(struct upstream_call *c)
{
    (void)c; /* TODO(mrtr) */
}

struct upstream_call *upstream_related_call(struct upstream *u, struct json_object *msg)
{
    (void)u;
    (void)msg;
    return NULL; /* TODO(mrtr) */
}
