/* iss.c - RFC 9207 issuer identification of an authorization response */
#include <string.h>

#include "iss.h"

enum iss_verdict iss_check(const char *recorded, bool advertised, const char *iss)
{
    if (!iss)
        return advertised ? ISS_MISSING : ISS_OK;
    /* byte for byte: RFC 3986 6.2.1; an unknown recorded issuer never matches */
    if (!recorded || strcmp(iss, recorded) != 0)
        return ISS_MISMATCH;
    return ISS_OK;
}

bool iss_advertised(struct json_object *as)
{
    struct json_object *v = NULL;
    return as &&
           json_object_object_get_ex(as, "authorization_response_iss_parameter_supported", &v) &&
           json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}
