# The pi adapter's HTTP trust keys, against tests/peers/guarded-server.mjs:
#   caFile: the server speaks https with a certificate for 127.0.0.1 signed by a CA this test
#     makes with openssl. A call with "caFile" naming that CA succeeds; without it the
#     certificate is not trusted (the system's roots do not know the CA), and the message says
#     to set "caFile"; a "caFile" that does not exist fails naming the key and the path; a
#     "caFile" of another CA fails as not trusted (it replaces the system's roots).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

command -v openssl >/dev/null || fail "openssl is missing"

# a CA and a server certificate for 127.0.0.1 signed by it; a second CA that signed nothing
pki="$T_ROOT/pki"
mkdir -p "$pki"
ossl() { openssl "$@" >>"$T_ROOT/openssl.log" 2>&1 || fail "openssl $1 failed: $(tail -5 "$T_ROOT/openssl.log")"; }
for ca in ca other-ca; do
    ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=credkit test $ca" \
        -keyout "$pki/$ca.key" -out "$pki/$ca.pem"
done
ossl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$pki/server.key" -out "$pki/server.csr"
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$pki/server.ext"
ossl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/server.ext" -out "$pki/server.pem"

start_peer guarded-server --cert "$pki/server.pem" --key "$pki/server.key"
TLS=$PEER_URL
case $TLS in https://127.0.0.1:*) ;; *) fail "guarded-server is not on https: $TLS" ;; esac

mkdir -p "$HOME/certs"
cp "$pki/ca.pem" "$HOME/certs/local-ca.pem"
cat >"$T_ROOT/tls.json" <<EOF
{ "mcpServers": {
    "with-ca": { "url": "$TLS", "caFile": "~/certs/local-ca.pem" },
    "with-ca-env": { "url": "$TLS", "caFile": "\${env:CK_PKI}/ca.pem" },
    "without-ca": { "url": "$TLS" },
    "missing-ca": { "url": "$TLS", "caFile": "$pki/nowhere.pem" },
    "other-ca": { "url": "$TLS", "caFile": "$pki/other-ca.pem" }
} }
EOF
call() { # STATUS NAME
    run "$1" env CK_PKI="$pki" "$MCP_BRIDGE_BIN" --config "$T_ROOT/tls.json" call "$2" echo \
        '{"message": "over tls"}' --connect-timeout 10s --timeout 10s
}

echo "== caFile"
call 0 with-ca
assert_eq "$OUT" "echo: over tls" "the call with caFile"
call 0 with-ca-env
assert_eq "$OUT" "echo: over tls" "the call with caFile from \${env:...}"
call 1 without-ca
assert_contains "$ERR" "server 'without-ca'"
assert_contains "$ERR" "the server's TLS certificate is not trusted"
assert_contains "$ERR" 'set "caFile" to a PEM file of the CA that signed it'
call 1 missing-ca
assert_contains "$ERR" "server 'missing-ca'"
assert_contains "$ERR" "\"caFile\" '$pki/nowhere.pem': cannot read it: No such file or directory"
call 1 other-ca
assert_contains "$ERR" "the server's TLS certificate is not trusted"
run 0 env CK_PKI="$pki" "$MCP_BRIDGE_BIN" --config "$T_ROOT/tls.json" list
assert_not_contains "$ERR" '"caFile"' "the warnings of list"
echo "ok caFile: the CA it names verifies the server, and only it"

echo "== requestHeadersCommand"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T_ROOT/hmac.key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T_ROOT/wrong.key"
start_peer guarded-server --hmac-key-file "$T_ROOT/hmac.key"
SIGNED=$PEER_URL
start_peer guarded-server --hmac-key-file "$T_ROOT/hmac.key" --cert "$pki/server.pem" \
    --key "$pki/server.key"
SIGNED_TLS=$PEER_URL
node_bin=$(command -v node)
sign_entry() { # URL KEY MODE [MORE-KEYS]: an entry whose requests sign-request.mjs signs
    printf '{ "url": "%s", "requestHeadersCommand": { "command": "%s", "args": ["%s"], "env": { "SIGN_KEY": "%s", "MODE": "%s" }, "timeoutMs": 20000 }%s }' \
        "$1" "$node_bin" "$PEERS_DIR/sign-request.mjs" "$2" "$3" "${4:-}"
}
cat >"$T_ROOT/sign.json" <<EOF
{ "mcpServers": {
    "signed": $(sign_entry "$SIGNED" '${env:CK_KEYS}/hmac.key' ok),
    "signed-tls": $(sign_entry "$SIGNED_TLS" "$T_ROOT/hmac.key" ok ", \"caFile\": \"$pki/ca.pem\""),
    "unsigned": { "url": "$SIGNED" },
    "wrong-key": $(sign_entry "$SIGNED" "$T_ROOT/wrong.key" ok),
    "failing": $(sign_entry "$SIGNED" "$T_ROOT/hmac.key" fail),
    "framing": $(sign_entry "$SIGNED" "$T_ROOT/hmac.key" framing)
} }
EOF
scall() { # STATUS NAME MESSAGE
    run "$1" env CK_KEYS="$T_ROOT" "$MCP_BRIDGE_BIN" --config "$T_ROOT/sign.json" call "$2" echo \
        "{\"message\": \"$3\"}" --connect-timeout 20s --timeout 20s
}
stats() { NODE_EXTRA_CA_CERTS="$pki/ca.pem" node -e 'fetch(process.argv[1]).then(async (r) => process.stdout.write(await r.text()))' "${1%/mcp}/__test/stats"; }
scall 0 signed "signed once"
assert_eq "$OUT" "echo: signed once" "the signed call"
st=$(stats "$SIGNED")
assert_eq "$(json_get "$st" 'j.refused')" 0 "requests refused"
# initialize, notifications/initialized and tools/call at least (the GET stream and the
# DELETE when they come): each signed for itself
n=$(json_get "$st" 'j.signed')
[ "$n" -ge 3 ] || fail "the server saw $n signed requests, expected 3 or more: $st"
scall 0 signed-tls "signed over tls"
assert_eq "$OUT" "echo: signed over tls" "the signed call over https with caFile"
assert_eq "$(json_get "$(stats "$SIGNED_TLS")" 'j.refused')" 0 "requests refused over https"
scall 1 unsigned "x"
assert_contains "$ERR" "HTTP 401 Unauthorized"
before=$(json_get "$(stats "$SIGNED")" 'j.requests')
scall 1 wrong-key "x"
assert_contains "$ERR" "server 'wrong-key'"
assert_contains "$ERR" "HTTP 401 Unauthorized"
after_wrong=$(json_get "$(stats "$SIGNED")" 'j.requests')
[ "$after_wrong" -gt "$before" ] || fail "the wrongly signed request did not reach the server"
scall 1 failing "x"
assert_contains "$ERR" "server 'failing': \"requestHeadersCommand\" failed, the request is not sent: exit status 1: the signing key is locked"
assert_contains "$ERR" 'the "requestHeadersCommand" gave no usable headers, so the request was not sent'
scall 1 framing "x"
assert_contains "$ERR" "its header 'Content-Length' is refused: it frames the HTTP request"
assert_eq "$(json_get "$(stats "$SIGNED")" 'j.requests')" "$after_wrong" \
    "requests that reached the server from the failing helpers"
echo "ok requestHeadersCommand: every request signed by the helper, failures said and nothing sent"

bridge_done "the adapter's HTTP trust keys"
