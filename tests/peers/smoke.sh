#!/usr/bin/env bash
# Smoke test of the test peers: starts auth-server.mjs and mcp-resource-server.mjs on ephemeral
# ports, checks their metadata and challenges with curl, then runs smoke-flow.mjs (a full
# authorization-code + PKCE login through browser.mjs, MCP calls, refresh, reuse detection,
# revocation, denial, client_credentials). Needs `npm ci` in tests/peers and /usr/bin/chromium
# (scripts/install-deps). Run: bash tests/peers/smoke.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
node="${NODE:-node}"
work="$(mktemp -d)"
pids=()

cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    printf '  FAIL %s\n' "$*" >&2
    local f
    for f in "$work"/*.log; do
        [[ -s "$f" ]] || continue
        printf -- '--- %s (last 40 lines)\n' "$(basename "$f")" >&2
        tail -n 40 "$f" >&2
    done
    exit 1
}
ok() { printf '  ok   %s\n' "$*" >&2; }

# start NAME ARGS... : starts a peer in the background and waits (at most 20 s) for its READY line;
# sets URL to the URL it printed.
start() {
    local name="$1" deadline line
    shift
    "$node" "$here/$name.mjs" "$@" >"$work/$name.out" 2>"$work/$name.log" &
    pids+=("$!")
    deadline=$((SECONDS + 20))
    while :; do
        line="$(grep -m1 '^READY ' "$work/$name.out" 2>/dev/null || true)"
        [[ -n "$line" ]] && break
        kill -0 "${pids[-1]}" 2>/dev/null || fail "$name exited before it was ready"
        ((SECONDS < deadline)) || fail "$name printed no READY line within 20 s"
        sleep 0.05
    done
    URL="${line#READY }"
}

[[ -x /usr/bin/chromium ]] || fail "/usr/bin/chromium is missing: run scripts/install-deps"
[[ -d "$here/node_modules/oidc-provider" ]] || fail "tests/peers/node_modules is missing: run scripts/install-deps"

echo "smoke test of tests/peers ($("$node" --version))" >&2
"$node" "$here/smoke-flow.mjs" genkey "$work/jwt-client.pub.json" "$work/jwt-client.key.json"

start auth-server --pre-registered --jwks-client "jwt-client=$work/jwt-client.pub.json"
issuer="$URL"
ok "auth-server ready at $issuer"
start mcp-resource-server --issuer "$issuer"
resource="$URL"
origin="${resource%/mcp}"
ok "mcp-resource-server ready at $resource"

c() { curl -sS --max-time 10 "$@"; }

meta="$(c "$issuer/.well-known/oauth-authorization-server")"
jq_issuer="$(printf '%s' "$meta" | "$node" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s);console.log([m.issuer,m.registration_endpoint,m.code_challenge_methods_supported.join(","),m.authorization_response_iss_parameter_supported].join(" "))})')"
[[ "$jq_issuer" == "$issuer $issuer/reg S256 true" ]] || fail "AS metadata: $jq_issuer"
ok "AS metadata: issuer, registration endpoint, S256 only, iss parameter"

reg="$(c -w '\n%{http_code}' -H 'content-type: application/json' -d '{"application_type":"native","client_name":"curl","redirect_uris":["http://127.0.0.1:45678/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}' "$issuer/reg")"
[[ "${reg##*$'\n'}" == 201 && "$reg" == *'"client_id"'* ]] || fail "DCR: $reg"
ok "DCR of a native public client with a loopback redirect URI"

hdr="$(c -o /dev/null -D - -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' "$resource")"
[[ "$hdr" == "HTTP/1.1 401"* ]] || fail "unauthenticated initialize: ${hdr%%$'\r'*}"
want="www-authenticate: Bearer resource_metadata=\"$origin/.well-known/oauth-protected-resource/mcp\""
grep -qiF "$want" <<<"$hdr" || fail "WWW-Authenticate: $(grep -i www-auth <<<"$hdr")"
ok "unauthenticated MCP initialize: 401 with resource_metadata"

for path in /.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource; do
    prm="$(c "$origin$path")"
    [[ "$prm" == *"\"resource\": \"$resource\""* && "$prm" == *"\"$issuer\""* && "$prm" == *'"mcp:read"'* ]] ||
        fail "PRM at $path: $prm"
done
ok "protected resource metadata (path and root variants)"

"$node" "$here/smoke-flow.mjs" flow "$issuer" "$resource" "$work/jwt-client.key.json" || fail "the end-to-end flow failed"

# Shutdown: SIGTERM must stop both peers promptly with status 0.
for pid in "${pids[@]}"; do
    kill -TERM "$pid"
done
deadline=$((SECONDS + 10))
for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
        ((SECONDS < deadline)) || fail "a peer ignored SIGTERM for 10 s"
        sleep 0.05
    done
    wait "$pid" || fail "a peer exited non-zero on SIGTERM"
done
pids=()
ok "both peers stopped on SIGTERM with status 0"
echo "smoke test passed" >&2
