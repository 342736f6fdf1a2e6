/* fuzz_jwt.c - libFuzzer target: the access tokens an HTTP agent sends and the issuer's key set
 * (bridge/downstream/agent_http_auth.c's jwt_check(), common/jws.c's JWK reading and
 * verification).
 *
 * Input: a JWK Set (JSON) on the first line, a token after it. The token is checked against
 * the set at a fixed time. Whatever the answer, it is one of those the contract names, with a
 * reason for a refusal and none for a token taken, whose subject is then printable ASCII. */
#include <errno.h>

#include "credkit/json.h"

#include "downstream/agent_http_auth.h"
#include "fuzz.h"

static const char *const scopes[] = {"mcp:read", NULL};
static const struct jwt_rules rules = {
    .issuer = "https://as.example.com",
    .audience = "https://bridge.example.com/mcp",
    .scopes = scopes,
    .skew_s = AH_AUTH_SKEW_S,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup(data, size);
    char *token = strchr(text, '\n');
    struct json_object *jwks = NULL;
    char sub[AH_AUTH_SUB_MAX];
    const char *why = NULL;
    if (token)
        *token++ = '\0';
    else
        token = text + strlen(text);
    if (json_parse(text, strlen(text), 65536, &jwks, NULL) < 0)
        jwks = NULL;
    int r = jwt_check(token, jwks, &rules, 1800000000, sub, &why);
    fuzz_check(r == 0 || r == -ENOKEY || r == -EBADMSG || r == -ENOTSUP || r == -EKEYEXPIRED ||
               r == -EACCES || r == -EPERM || r == -ENOMEM);
    if (r == 0) {
        fuzz_check(!why);
        fuzz_check(sub[0]);
        for (const char *s = sub; *s; s++)
            fuzz_check(*s > 0x20 && *s < 0x7f);
    } else {
        fuzz_check(why && why[0]);
    }
    json_object_put(jwks);
    free(text);
    return 0;
}
