# Enterprise networks, with real parts: Debian's tinyproxy (with a password) in front of
# tests/peers/mtls-server.mjs, an https MCP server of a private CA this test makes with openssl,
# on 192.0.2.10, an address of a private network namespace that is not loopback (loopback
# hosts are never proxied). One server asks for client certificates (mTLS), one does not.
#   - HTTPS_PROXY: mcp-bridge call goes through the proxy (its log has the CONNECT), -v names
#     the proxy with its user and password masked; NO_PROXY takes the server out of it.
#   - caFile: without it the error names the untrusted certificate and the fix.
#   - clientCert/clientKey: the key from a 0600 file, and (encrypted, its passphrase a secret
#     too) from `secrets` recipes, succeed; a key file others can read is refused with the
#     chmod, a wrong passphrase, a key of another certificate and a certificate without its
#     key are refused naming the key; without a certificate the server refuses and the error
#     says one was asked for; mcp-auth's probe shows the certificate too.
#   - SSL_CERT_FILE is honoured (libcurl itself does not read it).
#   - mcp-auth: a client_credentials sign-in whose discovery, registration and token requests
#     go through the proxy, the authorization server on https of the same private CA.
# The key, its passphrase and the proxy's password appear in no argv, log or error.
. "$(dirname "$0")/lib/netns.sh"
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
command -v openssl >/dev/null || fail "openssl is missing"
command -v tinyproxy >/dev/null || fail "tinyproxy is missing: run scripts/install-deps"
ADDR=192.0.2.10
ip addr add "$ADDR/32" dev lo || fail "cannot add $ADDR to the namespace's loopback interface"

# ---- the private CA, the server's certificate, a client certificate and its keys ----------------
pki="$T_ROOT/pki"
mkdir -p "$pki"
ossl() { openssl "$@" >>"$T_ROOT/openssl.log" 2>&1 || fail "openssl $1 failed: $(tail -5 "$T_ROOT/openssl.log")"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=credkit test ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.pem"
ossl req -newkey rsa:2048 -nodes -subj "/CN=$ADDR" -keyout "$pki/server.key" -out "$pki/server.csr"
printf 'subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\n' "$ADDR" >"$pki/server.ext"
ossl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/server.ext" -out "$pki/server.pem"
ossl req -newkey rsa:2048 -nodes -subj "/CN=credkit test client" -keyout "$pki/client.key" \
    -out "$pki/client.csr"
printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' >"$pki/client.ext"
ossl x509 -req -in "$pki/client.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/client.ext" -out "$pki/client.pem"
chmod 600 "$pki/client.key"
PASSPHRASE="ck-pass-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s' "$PASSPHRASE" >"$pki/passphrase"
chmod 600 "$pki/passphrase"
ossl pkey -in "$pki/client.key" -aes-256-cbc -passout "file:$pki/passphrase" -out "$pki/client-enc.key"
cp "$pki/client.key" "$pki/open.key"
ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/other.key"
chmod 600 "$pki/other.key"
chmod 644 "$pki/open.key"
# a line from the middle of the key, and the passphrase: neither may show anywhere
KEY_LINE=$(sed -n 5p "$pki/client.key")
PROXY_PASS="ck-proxy-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
t_canary "$KEY_LINE" "$PASSPHRASE" "$PROXY_PASS" --held-by "$pki" --held-by "$T_ROOT/tinyproxy.conf"

# ---- the servers and the proxy ------------------------------------------------------------------
start_peer mtls-server --host "$ADDR" --cert "$pki/server.pem" --key "$pki/server.key" \
    --client-ca "$pki/ca.pem"
MTLS=$PEER_URL
start_peer mtls-server --host "$ADDR" --cert "$pki/server.pem" --key "$pki/server.key"
TLS=$PEER_URL
case "$MTLS $TLS" in "https://$ADDR:"*" https://$ADDR:"*) ;; *) fail "the servers are not on https://$ADDR: $MTLS $TLS" ;; esac

pport=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); })')
cat >"$T_ROOT/tinyproxy.conf" <<EOF2
Port $pport
Listen 127.0.0.1
Timeout 30
LogFile "$T_ROOT/tinyproxy.log"
LogLevel Connect
MaxClients 20
Allow 127.0.0.1
BasicAuth ck-user $PROXY_PASS
EOF2
tinyproxy -d -c "$T_ROOT/tinyproxy.conf" >"$T_ROOT/tinyproxy.out" 2>&1 </dev/null &
T_PEER_PIDS+=("$!")
proxy_up() { (: </dev/tcp/127.0.0.1/"$pport") 2>/dev/null; }
wait_until 10 "tinyproxy on port $pport" proxy_up
PROXY="http://ck-user:$PROXY_PASS@127.0.0.1:$pport"
connects() { grep -c "CONNECT $ADDR:$1" "$T_ROOT/tinyproxy.log" 2>/dev/null || true; }
port_of() { local p=${1#https://"$ADDR":}; echo "${p%%/*}"; }

# ---- the bridge through the proxy ---------------------------------------------------------------
cat >"$T_ROOT/net.json" <<EOF2
{ "mcpServers": {
    "plain": { "url": "$TLS", "caFile": "$pki/ca.pem" },
    "no-ca": { "url": "$TLS" },
    "mtls-file": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem", "clientKey": "$pki/client.key" },
    "mtls-secret": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem", "clientKey": "\${MTLS_KEY}", "clientKeyPassphrase": "\${MTLS_PASS}" },
    "mtls-open": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem", "clientKey": "$pki/open.key" },
    "mtls-none": { "url": "$MTLS", "caFile": "$pki/ca.pem" },
    "mtls-wrong-pass": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem", "clientKey": "$pki/client-enc.key", "clientKeyPassphrase": "\${env:CK_WRONG}" },
    "mtls-other-key": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem", "clientKey": "$pki/other.key" },
    "mtls-half": { "url": "$MTLS", "caFile": "$pki/ca.pem", "clientCert": "$pki/client.pem" }
} }
EOF2
call() { # STATUS NAME [ENV...]
    local want=$1 name=$2
    shift 2
    run "$want" env HTTPS_PROXY="$PROXY" "$@" "$MCP_BRIDGE_BIN" -v --config "$T_ROOT/net.json" \
        call "$name" echo "{\"message\": \"via $name\"}" --connect-timeout 15s --timeout 15s
}

echo "== the proxy and caFile"
before=$(connects "$(port_of "$TLS")")
call 0 plain
assert_eq "$OUT" "echo: via plain" "the call through the proxy"
after=$(connects "$(port_of "$TLS")")
[ "$after" -gt "$before" ] || fail "tinyproxy saw no CONNECT to $TLS: $(tail -5 "$T_ROOT/tinyproxy.log")"
assert_contains "$ERR" "through the proxy 'http://***:***@127.0.0.1:$pport' (HTTPS_PROXY)" "the -v log"
call 0 plain NO_PROXY="example.com,$ADDR"
assert_eq "$OUT" "echo: via plain" "the call with NO_PROXY"
assert_eq "$(connects "$(port_of "$TLS")")" "$after" "CONNECTs to the server listed in NO_PROXY"
assert_not_contains "$ERR" "through the proxy" "the -v log with NO_PROXY"
call 1 no-ca
assert_contains "$ERR" "server 'no-ca'"
assert_contains "$ERR" 'set "caFile" to a PEM file of the CA that signed it'
run 0 env -u CURL_CA_BUNDLE HTTPS_PROXY="$PROXY" SSL_CERT_FILE="$pki/ca.pem" "$MCP_BRIDGE_BIN" --config "$T_ROOT/net.json" \
    call no-ca echo '{"message": "env ca"}' --connect-timeout 15s --timeout 15s
assert_eq "$OUT" "echo: env ca" "the call with SSL_CERT_FILE"
echo "ok the proxy carries the requests, NO_PROXY bypasses it, the CA comes from caFile or SSL_CERT_FILE"

echo "== client certificates"
before=$(connects "$(port_of "$MTLS")")
call 0 mtls-file
assert_eq "$OUT" "echo: via mtls-file" "the mTLS call with the key in a 0600 file"
[ "$(connects "$(port_of "$MTLS")")" -gt "$before" ] || fail "tinyproxy saw no CONNECT to $MTLS"
"$SECRETS_BIN" configure MTLS_KEY --command "cat '$pki/client-enc.key'" >/dev/null 2>"$T_ROOT/err" ||
    fail "secrets configure MTLS_KEY: $(cat "$T_ROOT/err")"
"$SECRETS_BIN" configure MTLS_PASS --file "$pki/passphrase" >/dev/null 2>"$T_ROOT/err" ||
    fail "secrets configure MTLS_PASS: $(cat "$T_ROOT/err")"
call 0 mtls-secret
assert_eq "$OUT" "echo: via mtls-secret" "the mTLS call with the encrypted key and its passphrase from secrets"
run 0 env HTTPS_PROXY="$PROXY" "$MCP_BRIDGE_BIN" -vv --config "$T_ROOT/net.json" call mtls-secret echo \
    '{"message": "debug"}' --connect-timeout 15s --timeout 15s
assert_eq "$OUT" "echo: debug" "the mTLS call at -vv"
call 1 mtls-open
assert_contains "$ERR" "chmod 600 '$pki/open.key'" "the refusal of a key others can read"
call 1 mtls-none
assert_contains "$ERR" "server 'mtls-none'"
assert_contains "$ERR" 'the server asks for a client certificate (TLS): set "clientCert" and "clientKey"'
call 1 mtls-wrong-pass CK_WRONG="not-$PASSPHRASE"
assert_contains "$ERR" '"clientKey" cannot be opened: a wrong "clientKeyPassphrase"'
call 1 mtls-other-key
assert_contains "$ERR" '"clientKey" is not the key of "clientCert"'
call 1 mtls-half
assert_contains "$ERR" '"clientCert" is set without "clientKey"'
# mcp-auth shows the certificate to the server too: its probe gets through the handshake
run 0 env HTTPS_PROXY="$PROXY" "$MCP_AUTH_BIN" --config "$T_ROOT/net.json" login --no-browser mtls-file
assert_contains "$ERR" "answered without asking for authorization: no sign-in is needed" "mcp-auth's probe with the certificate"
run 5 env HTTPS_PROXY="$PROXY" "$MCP_AUTH_BIN" --config "$T_ROOT/net.json" login --no-browser mtls-none
assert_contains "$ERR" "the server asks for a client certificate"
echo "ok client certificates: from a 0600 file and from secrets, refused without"

echo "== mcp-auth through the proxy"
# oidc-provider and a resource server that checks its tokens, both on https of the private CA
# at the namespace's address: mcp-auth reaches both through the proxy only, and trusts them
# through the entry's caFile (the system's roots do not know the CA)
CC_SECRET="ck-cc-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
t_canary "$CC_SECRET"
start_peer auth-server --host "$ADDR" --cert "$pki/server.pem" --key "$pki/server.key" \
    --basic-client "cc-basic:$CC_SECRET" --quiet
AS=$PEER_URL
# the resource server fetches the issuer's keys itself, directly, trusting the test's CA
NODE_EXTRA_CA_CERTS="$pki/ca.pem" start_peer mcp-resource-server --host "$ADDR" \
    --cert "$pki/server.pem" --key "$pki/server.key" --issuer "$AS"
RS=$PEER_URL
case "$RS" in */mcp) ;; *) RS="$RS/mcp" ;; esac
mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<EOF2
{ "mcpServers": {
    "signed": { "url": "$RS", "caFile": "$pki/ca.pem",
        "oauth": { "grantType": "client_credentials", "clientId": "cc-basic", "clientSecret": "\${CC_SECRET}" } }
} }
EOF2
as_port=$(port_of "$AS")
before=$(connects "$as_port")
T_CANARY_STDOUT=1 run 0 env HTTPS_PROXY="$PROXY" CC_SECRET="$CC_SECRET" "$MCP_AUTH_BIN" -v header --json signed
assert_contains "$(json_get "$OUT" 'j.headers.Authorization')" "Bearer " "the header of the sign-in"
assert_contains "$ERR" "is reached through the proxy 'http://***:***@127.0.0.1:$pport' (HTTPS_PROXY)" "mcp-auth -v"
[ "$(connects "$as_port")" -gt "$before" ] ||
    fail "tinyproxy saw no CONNECT to the authorization server $AS: $(tail -5 "$T_ROOT/tinyproxy.log")"
[ "$(connects "$(port_of "$RS")")" -gt 0 ] || fail "tinyproxy saw no CONNECT to the resource server $RS"
echo "ok mcp-auth: discovery and token requests through the proxy, the private CA from caFile"

bridge_done "proxies and client certificates"
