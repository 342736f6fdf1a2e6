/* iss.h - RFC 9207 issuer identification of an authorization response, as MCP 2026-07-28
 * requires it (basic/authorization, "Authorization Response Validation").
 *
 * The issuer of the authorization server's validated metadata is recorded with the PKCE
 * verifier and the state before the browser is sent off; the response's `iss`, once decoded
 * from the query, is compared with it by simple string comparison (RFC 3986 section 6.2.1): no
 * case folding of scheme or host, no default-port elision, no trailing-slash or
 * percent-encoding normalisation. A present `iss` is always compared, whether the metadata
 * advertises `authorization_response_iss_parameter_supported` or not; an absent one is refused
 * only when the metadata advertises it. The check comes before anything else in the response is
 * looked at: an error response that fails it is neither acted on nor shown. */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

enum iss_verdict {
    ISS_OK,       /* matches, or absent where nothing promised it */
    ISS_MISSING,  /* absent although the metadata promises it */
    ISS_MISMATCH, /* present and not the recorded issuer */
};

/* Judges the response's iss (NULL: absent) against the recorded issuer. */
enum iss_verdict iss_check(const char *recorded, bool advertised, const char *iss);

/* Whether the authorization server metadata as (may be NULL) sets
 * authorization_response_iss_parameter_supported to the JSON value true (a string "true" or a
 * number is not true). */
bool iss_advertised(struct json_object *as);
