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

bridge_done "the adapter's HTTP trust keys"
