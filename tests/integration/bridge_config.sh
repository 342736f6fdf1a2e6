# mcp-bridge list, add and remove: the report (valid, invalid, missing variables, a file that is
# not JSON, --json), add by flags and guided on a real pty, everything else in the file kept,
# --force, refusals and failed writes that change nothing, remove.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at the mcp-bridge binary (ctest sets it)}"
: "${PTYDRIVE_BIN:?PTYDRIVE_BIN must point at the ptydrive tool (ctest sets it)}"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at the mcp-auth binary (ctest sets it)}"
# the helpers list and add ask: the real ones of this build
export CREDKIT_SECRETS="$SECRETS_BIN" CREDKIT_MCP_AUTH="$MCP_AUTH_BIN"

B() {
    "$MCP_BRIDGE_BIN" "$@"
}

# no bundled layer, no shared layer from the real environment
export CREDKIT_BRIDGE_BUNDLED=
unset XDG_CONFIG_HOME MISSING_TOKEN_XYZ HOSTVAR_XYZ GITHUB_TOKEN CORP_KEY EVERYTHING_KEY GH_TOKEN || true
PROJ="$T_ROOT/proj"
mkdir -p "$PROJ"
cd "$PROJ"
USER_FILE="$PI_CODING_AGENT_DIR/mcp.json"

# same JSON value (key order included) of the document in file $1 and the JSON text $2
same_json() {
    node -e '
        const fs = require("fs");
        const a = JSON.stringify(JSON.parse(fs.readFileSync(process.argv[1], "utf8")));
        const b = JSON.stringify(JSON.parse(process.argv[2]));
        if (a !== b) { console.error("got:      " + a + "\nexpected: " + b); process.exit(1); }
    ' "$1" "$2"
}

# file $1 equals file $2 once key $3 (a path like mcpServers.name) is removed from $1
same_but() {
    node -e '
        const fs = require("fs");
        const a = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const b = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
        const path = process.argv[3].split(".");
        let o = a;
        for (const k of path.slice(0, -1)) o = o[k];
        delete o[path[path.length - 1]];
        const x = JSON.stringify(a), y = JSON.stringify(b);
        if (x !== y) { console.error("got:      " + x + "\nexpected: " + y); process.exit(1); }
    ' "$1" "$2" "$3"
}

check() {
    T_CHECKS=$((T_CHECKS + 1))
    "$@" || fail "check failed: $*"
}

# ---- help -----------------------------------------------------------------------------------
for c in list add remove; do
    run 0 B "$c" --help
    assert_contains "$OUT" "usage: mcp-bridge $c"
    assert_contains "$OUT" "examples:"
done

# ---- list -----------------------------------------------------------------------------------
run 0 B list
assert_contains "$OUT" "no MCP servers configured"
assert_contains "$OUT" "$USER_FILE (absent)"

mkdir -p "$PI_CODING_AGENT_DIR"
cat >"$USER_FILE" <<'EOF'
{
  "mcpServers": {
    "good": {"command": "node", "args": ["server.js", "--port", "1 2"]},
    "arr": {"command": "srv", "args": ["--x", "y"], "env": ["A=1"]},
    "both": {"command": "x", "url": "https://example.com/mcp"},
    "zero": {"url": "https://example.com/mcp", "timeout": 0},
    "needs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${MISSING_TOKEN_XYZ}"}}
  }
}
EOF
mkdir -p .pi
printf '{\n  "mcpServers": {\n    "a": ,\n  }\n}\n' >.pi/mcp.json
run 0 B list
assert_contains "$OUT" "good"
assert_contains "$OUT" "node server.js --port '1 2'" "the command line, quoted"
assert_contains "$OUT" "has both \"url\" and \"command\"" "the reason of an invalid entry"
assert_contains "$OUT" "\"timeout\""
assert_contains "$OUT" '${MISSING_TOKEN_XYZ}: missing: '"'MISSING_TOKEN_XYZ' has no recipe" "secrets' reason"
assert_contains "$OUT" "run 'secrets configure MISSING_TOKEN_XYZ'"
assert_not_contains "$OUT" "Bearer" "list (header values are not shown)"
assert_contains "$OUT" "$PROJ/.pi/mcp.json': line 3, column" "the diagnostic with line and column"
assert_contains "$OUT" "$PROJ/.mcp.json (absent)"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^good .* ok ')" 1 "good is ok"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^good .* ok  *lazy 10m  ')" 1 "good: lazy, the default idle timeout"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^both .* invalid  *-  ')" 1 "no lifecycle for an invalid entry"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^both .* invalid ')" 1 "both is invalid"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^needs .* missing ')" 1 "needs misses a variable"

run 0 B list --json
J=$OUT
assert_eq "$(json_get "$J" 'j.servers.map(s => s.name).join(",")')" "arr,both,good,needs,zero" "sorted names"
assert_eq "$(json_get "$J" 'Object.keys(j.servers[0]).join(",")')" \
    "name,transport,command,args,url,source,layer,import,shadowed,disabled,warnings,lifecycle,idle_timeout_ms,tool_prefix,include_tools,exclude_tools,request_timeout_ms,valid,error,missing_variables,status,trust,credentials" "server keys"
assert_eq "$(json_get "$J" 'Object.keys(j.servers[0].credentials).join(",")')" "variables,oauth,headers_helper" \
    "credentials keys"
assert_eq "$(json_get "$J" 'Object.keys(j).join(",")')" "version,servers,files,imported_files,diagnostics" "top-level keys"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").args')" '["server.js","--port","1 2"]'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").url')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").source')" "$USER_FILE"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").layer')" "user"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").valid')" "true"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").error')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").import')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").shadowed')" "[]"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").disabled')" "false"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").lifecycle')" "lazy"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").idle_timeout_ms')" "600000"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "both").lifecycle')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "both").valid')" "false"
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "both").error')" "server 'both'"
# an invalid entry is shown as written
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "both").url')" "https://example.com/mcp"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "both").command')" "x"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "zero").transport')" "http"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "arr").args')" '["--x","y"]'
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "arr").error')" '"env"'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "needs").missing_variables')" '["MISSING_TOKEN_XYZ"]'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "needs").status')" "missing"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "needs").credentials.variables[0].resolved')" "false"
assert_contains "$(json_get "$J" 'j.servers.find(s => s.name === "needs").credentials.variables[0].error')" \
    "secrets configure MISSING_TOKEN_XYZ"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").status')" "ok"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "good").trust')" "trusted" "a user entry is trusted"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "both").status')" "invalid"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "needs").url')" "https://example.com/mcp"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "needs").command')" "null"
assert_eq "$(json_get "$J" 'j.files.map(f => f.exists).join(",")')" "false,true,false,true"
assert_eq "$(json_get "$J" 'j.files[1].path')" "$USER_FILE"
assert_eq "$(json_get "$J" 'j.diagnostics.length')" 1
assert_eq "$(json_get "$J" 'j.diagnostics[0].source')" "$PROJ/.pi/mcp.json"
assert_contains "$(json_get "$J" 'j.diagnostics[0].message')" "line 3, column"

# ---- list: the credentials each server needs, asked of the real secrets and mcp-auth ------
# a canary value comes from a command recipe and from the environment: it is never shown
CANARY=canary-list-5d1c9e
SJ="$PI_CODING_AGENT_DIR/secrets.json"
printf '{"RECIPE_TOKEN_XYZ": "!echo %s-recipe"}\n' "$CANARY" >"$SJ"
chmod 600 "$SJ"
export ENV_TOKEN_XYZ="$CANARY-env"
# a headersHelper that leaves a mark if it is ever run
cat >"$T_ROOT/get-headers" <<EOF
#!/bin/sh
touch "$T_ROOT/helper-ran"
echo '{"headers": {"X-Key": "$CANARY-helper"}}'
EOF
chmod 755 "$T_ROOT/get-headers"
cat >"$T_ROOT/creds.json" <<EOF
{
  "mcpServers": {
    "recipe": {"url": "https://r.example.com/mcp", "headers": {"X-Key": "\${RECIPE_TOKEN_XYZ}"}},
    "envtok": {"url": "https://e.example.com/mcp", "bearerTokenEnv": "ENV_TOKEN_XYZ"},
    "nothing": {"url": "https://n.example.com/mcp", "auth": "bearer", "bearerToken": "\${NO_SUCH_TOKEN_XYZ}"},
    "stdio": {"command": "srv", "args": ["--key", "\${RECIPE_TOKEN_XYZ}"], "env": {"K": "\${NO_SUCH_TOKEN_XYZ}"}},
    "linear": {"url": "https://mcp.linear.example/mcp", "auth": "oauth"},
    "autolin": {"url": "https://auto.linear.example/mcp", "auth": "oauth", "autoAuth": true},
    "helper": {"url": "https://h.example.com/mcp", "headersHelper": "'$T_ROOT/get-headers' --x"},
    "nohelper": {"url": "https://h.example.com/mcp", "headersHelper": "no-such-helper-xyz --x"},
    "plain": {"url": "https://p.example.com/mcp", "auth": "none"}
  }
}
EOF
run 0 B --config "$T_ROOT/creds.json" list
L=$OUT
assert_not_contains "$L" "$CANARY" "list (no value is shown)"
check test ! -e "$T_ROOT/helper-ran"
assert_eq "$(printf '%s\n' "$L" | grep -c '^recipe .* ok ')" 1 "a name a recipe resolves"
# the 5-minute TTL counted from when secrets ran: 5m, or 4m59s when a second turned meanwhile
check grep -Eq '\$\{RECIPE_TOKEN_XYZ\}: ok \(from a command recipe, expires in (5m|4m5[0-9]s)\)' <<<"$L"
assert_eq "$(printf '%s\n' "$L" | grep -c '^envtok .* ok ')" 1 "a bearerTokenEnv from the environment"
assert_contains "$L" '${ENV_TOKEN_XYZ}: ok (from the environment, no recipe)'
assert_eq "$(printf '%s\n' "$L" | grep -c '^nothing .* missing ')" 1 "a bearerToken that does not resolve"
assert_contains "$L" '${NO_SUCH_TOKEN_XYZ}: missing: '"'NO_SUCH_TOKEN_XYZ' has no recipe"
assert_eq "$(printf '%s\n' "$L" | grep -c '^stdio .* missing ')" 1 "a stdio server's env"
assert_eq "$(printf '%s\n' "$L" | grep -c '^linear .* login ')" 1 "an OAuth entry with nothing stored"
assert_contains "$L" "oauth: login required: run 'mcp-auth --config \"$T_ROOT/creds.json\" linear'
"
assert_contains "$L" "oauth: login required: run 'mcp-auth --config \"$T_ROOT/creds.json\" autolin' (autoAuth is on"
assert_eq "$(printf '%s\n' "$L" | grep -c '^helper .* ok ')" 1 "a headersHelper that is there"
assert_contains "$L" "headersHelper: $T_ROOT/get-headers, found at $T_ROOT/get-headers (list does not run it)"
assert_eq "$(printf '%s\n' "$L" | grep -c '^nohelper .* missing ')" 1 "a headersHelper that is not"
assert_contains "$L" "headersHelper: 'no-such-helper-xyz' is not found on PATH"
assert_eq "$(printf '%s\n' "$L" | grep -c '^plain .* ok ')" 1 "auth none"
assert_eq "$(printf '%s\n' "$L" | grep -A1 '^plain ' | grep -c '^    ' || true)" 0 "nothing to say about auth none"
run 0 B --config "$T_ROOT/creds.json" list --json
J=$OUT
assert_not_contains "$J" "$CANARY" "list --json (no value is shown)"
check test ! -e "$T_ROOT/helper-ran"
assert_eq "$(json_get "$J" 'j.servers.map(s => s.name + "=" + s.status).join(" ")')" \
    "autolin=login envtok=ok helper=ok linear=login nohelper=missing nothing=missing plain=ok recipe=ok stdio=missing"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "recipe").credentials.variables.map(v => [v.name, v.resolved, v.source, v.error])')" \
    '[["RECIPE_TOKEN_XYZ",true,"command",null]]'
assert_eq "$(json_get "$J" 'typeof j.servers.find(s => s.name === "recipe").credentials.variables[0].expires_at')" "number"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "envtok").credentials.variables[0].source')" "environment"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "stdio").missing_variables')" '["NO_SUCH_TOKEN_XYZ"]'
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "linear").credentials.oauth.state')" "login-required"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "linear").credentials.oauth.auto_auth')" "false"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "autolin").credentials.oauth.auto_auth')" "true"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "linear").credentials.oauth.command')" \
    "mcp-auth --config \"$T_ROOT/creds.json\" linear"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "helper").credentials.headers_helper.path')" "$T_ROOT/get-headers"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "nohelper").credentials.headers_helper.path')" "null"
assert_eq "$(json_get "$J" 'j.servers.find(s => s.name === "plain").credentials.oauth')" "null"

# a sign-in stored by mcp-auth (its store's format, written here: signing in with a browser is
# tests/integration/auth_oidc.sh's), read by the real mcp-auth status and matched to the entries
# by canonical URL, whatever their spelling; the tokens are never shown
store_signin() { # URL EXPIRES_AT REFRESH_TOKEN|""
    local issuer=https://as.example.com name
    name=$(printf '%s\n%s' "$1" "$issuer" | sha256sum | cut -c1-32)
    mkdir -p "$PI_CODING_AGENT_DIR/oauth"
    chmod 700 "$PI_CODING_AGENT_DIR" "$PI_CODING_AGENT_DIR/oauth"
    printf '{"version": 1, "server_url": "%s", "issuer": "%s", "registration": {"method": "dynamic", "client_id": "c"}, "tokens": {"access_token": "%s-at", %s"token_type": "Bearer", "expires_at": %s}}\n' \
        "$1" "$issuer" "$CANARY" "${3:+\"refresh_token\": \"$3\", }" "$2" \
        >"$PI_CODING_AGENT_DIR/oauth/$name.json"
    chmod 600 "$PI_CODING_AGENT_DIR/oauth/$name.json"
}
NOW=$(date +%s)
store_signin https://fresh.example.com/mcp $((NOW + 3600)) "$CANARY-rt"
store_signin https://stale.example.com/mcp $((NOW - 60)) "$CANARY-rt"
store_signin https://dead.example.com/mcp $((NOW - 60)) ""
cat >"$T_ROOT/signed.json" <<EOF
{"mcpServers": {
  "fresh": {"url": "https://FRESH.example.com:443/mcp", "auth": "oauth"},
  "stale": {"url": "https://stale.example.com/mcp", "oauth": {}},
  "dead": {"url": "https://dead.example.com/mcp", "auth": "oauth"},
  "quiet": {"url": "https://fresh.example.com/mcp"},
  "off": {"url": "https://fresh.example.com/mcp", "auth": "none"}
}}
EOF
run 0 B --config "$T_ROOT/signed.json" list
assert_not_contains "$OUT" "$CANARY" "list (no token is shown)"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^fresh .* ok ')" 1 "signed in"
assert_eq "$(printf '%s\n' "$OUT" | grep -A1 '^fresh ' | grep -c 'oauth: signed in, expires in .*, refreshed by itself$')" 1 \
    "signed in, with the expiry and the refresh token"
assert_contains "$OUT" "oauth: signed in, the token expired: it is refreshed at the next connect"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^dead .* login ')" 1 "expired with nothing to refresh it"
assert_contains "$OUT" "oauth: login required: run 'mcp-auth --config \"$T_ROOT/signed.json\" dead'"
assert_eq "$(printf '%s\n' "$OUT" | grep -A1 '^quiet ' | grep -c 'oauth: signed in')" 1 \
    "a sign-in stored for an entry without auth (used after a 401)"
assert_eq "$(printf '%s\n' "$OUT" | grep -A1 '^off ' | grep -c '^    ' || true)" 0 "auth none: never signs in"
run 0 B --config "$T_ROOT/signed.json" list --json
assert_not_contains "$OUT" "$CANARY" "list --json (no token is shown)"
assert_eq "$(json_get "$OUT" 'j.servers.map(s => s.name + "=" + (s.credentials.oauth ? s.credentials.oauth.state : "-")).join(" ")')" \
    "dead=login-required fresh=signed-in off=- quiet=signed-in stale=expired"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "fresh").credentials.oauth.expires_at')" "$((NOW + 3600))"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "fresh").credentials.oauth.refresh_token')" "true"
rm -rf "$PI_CODING_AGENT_DIR/oauth"

# a helper that is not installed is each server's state, never a failure of the list
CREDKIT_SECRETS="$T_ROOT/no-secrets" CREDKIT_MCP_AUTH="$T_ROOT/no-mcp-auth" run 0 B --config "$T_ROOT/creds.json" list
assert_contains "$OUT" '${RECIPE_TOKEN_XYZ}: missing: '"CREDKIT_SECRETS names '$T_ROOT/no-secrets'"
assert_contains "$OUT" "oauth: cannot tell: CREDKIT_MCP_AUTH names '$T_ROOT/no-mcp-auth'"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^linear .* missing ')" 1 "mcp-auth missing: the sign-in cannot be told"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^helper .* ok ')" 1 "the others are still shown"
# a secrets.json that secrets refuses: every name says why
chmod 644 "$SJ"
run 0 B --config "$T_ROOT/creds.json" list
assert_contains "$OUT" "\${RECIPE_TOKEN_XYZ}: missing: 'secrets' failed (exit status 3)"
rm -f "$SJ"
unset ENV_TOKEN_XYZ

# a --config that does not exist: the configuration cannot be loaded at all
run 3 B list --config "$T_ROOT/nope.json"
assert_contains "$ERR" "nope.json"
rm -f .pi/mcp.json

# ---- add by flags ---------------------------------------------------------------------------
# a file with unknown keys, odd values and the older "servers" root next to "mcpServers"
cat >"$USER_FILE" <<'EOF'
{
  "$schema": "https://example.com/schema.json",
  "settings": {"toolPrefix": "short", "unknownSetting": [1, 2.5, -3e2, {"deep": null}]},
  "mcpServers": {
    "first": {"command": "node", "args": ["a.js"], "x-note": "caf\u00e9 \/ \"quoted\"", "lifecycle": "lazy"},
    "second": {"url": "https://second.example.com/mcp", "headers": {"X-Team": "${TEAM_ID}"}, "custom": {"a": [true, false, null]}}
  },
  "servers": {"legacy": {"command": "legacy-server"}},
  "trailing": 12345678901234
}
EOF
chmod 640 "$USER_FILE"
cp "$USER_FILE" "$T_ROOT/before.json"

run 0 B add github --url https://mcp.github.com/mcp --bearer-env GITHUB_TOKEN --timeout 30s
check same_but "$USER_FILE" "$T_ROOT/before.json" mcpServers.github
check same_json <(node -e 'console.log(JSON.stringify(require(process.argv[1]).mcpServers.github))' "$USER_FILE") \
    '{"type":"http","url":"https://mcp.github.com/mcp","timeout":30000,"bearerTokenEnv":"GITHUB_TOKEN"}'
assert_eq "$(file_mode "$USER_FILE")" 640 "the file keeps its mode"
assert_eq "$(ls -A "$PI_CODING_AGENT_DIR" | tr '\n' ' ')" "mcp.json " "no temporary or lock file left"
# what add says is what the bridge does: it asks secrets for GITHUB_TOKEN at each connect
assert_contains "$ERR" "'github' uses \${GITHUB_TOKEN}, which does not resolve now: 'GITHUB_TOKEN' has no recipe"
assert_contains "$ERR" "run 'secrets configure GITHUB_TOKEN'" "how to set it up"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "github").valid')" "true"
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "github").status')" "missing"
# once secrets has a recipe, add says so (never the value) and list agrees
ADD_CANARY=canary-add-83b1f0
printf '{"GITHUB_TOKEN": "!echo %s"}\n' "$ADD_CANARY" >"$PI_CODING_AGENT_DIR/secrets.json"
chmod 600 "$PI_CODING_AGENT_DIR/secrets.json"
run 0 B -v add github --url https://mcp.github.com/mcp --bearer-env GITHUB_TOKEN --timeout 30s --force
assert_contains "$ERR" "'github' is sent 'Authorization: Bearer <\${GITHUB_TOKEN}>': the bridge asks 'secrets' for GITHUB_TOKEN at each connect"
assert_contains "$ERR" "\${GITHUB_TOKEN} resolves now (source: command)"
assert_contains "$ERR" "try it with: mcp-bridge test github"
assert_not_contains "$ERR" "does not resolve" "add, with a recipe"
assert_not_contains "$ERR" "$ADD_CANARY" "add's messages"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "github").status')" "ok"
assert_not_contains "$OUT" "$ADD_CANARY" "list"
# a value only this shell's environment has: said, with the way to make it a recipe
GH_ENV_ONLY_XYZ=x run 0 B -v --config "$T_ROOT/env-only.json" add envonly --url https://e.example.com/mcp --bearer-env GH_ENV_ONLY_XYZ
assert_contains "$ERR" "\${GH_ENV_ONLY_XYZ} comes from the environment of this shell (no recipe)"
assert_contains "$ERR" "secrets configure GH_ENV_ONLY_XYZ"
rm -f "$PI_CODING_AGENT_DIR/secrets.json" "$T_ROOT/env-only.json"
cp "$USER_FILE" "$T_ROOT/before.json"

cp "$USER_FILE" "$T_ROOT/before.json"
run 0 B add corp --url 'https://${HOSTVAR_XYZ}/mcp' --header 'X-Api-Key: ${CORP_KEY}' \
    --header 'X-Team:team-7' --oauth
check same_but "$USER_FILE" "$T_ROOT/before.json" mcpServers.corp
check same_json <(node -e 'console.log(JSON.stringify(require(process.argv[1]).mcpServers.corp))' "$USER_FILE") \
    '{"type":"http","url":"https://${HOSTVAR_XYZ}/mcp","headers":{"X-Api-Key":"${CORP_KEY}","X-Team":"team-7"},"auth":"oauth"}'
assert_contains "$ERR" "'corp' uses \${HOSTVAR_XYZ}, which does not resolve now" "a warning about the variable"
assert_contains "$ERR" "'corp' uses \${CORP_KEY}, which does not resolve now" "each variable"
assert_contains "$ERR" "run 'secrets configure CORP_KEY'"
assert_not_contains "$ERR" "credential" "no warning for templates"
# --oauth: the entry is mcp-auth's as it is, and says how to sign in (with -v, when scripted)
run 0 B -v --config "$T_ROOT/oauth.json" add oauthsrv --url https://o.example.com/mcp --oauth
assert_contains "$ERR" "sign in once with: mcp-auth --config \"$T_ROOT/oauth.json\" oauthsrv"
run 4 "$MCP_AUTH_BIN" --config "$T_ROOT/oauth.json" status --json oauthsrv
assert_eq "$(json_get "$OUT" 'j.servers.length')" 0 "mcp-auth reads the entry add wrote"
run 0 B --config "$T_ROOT/oauth.json" list
assert_contains "$OUT" "oauth: login required: run 'mcp-auth --config \"$T_ROOT/oauth.json\" oauthsrv'"
rm -f "$T_ROOT/oauth.json"

# stdio, into the project file (created 0644)
run 0 B add everything --command npx --arg -y --arg @modelcontextprotocol/server-everything \
    --env 'LOG_LEVEL=debug' --env 'API_KEY=${EVERYTHING_KEY}' --cwd /tmp --scope project
check same_json .mcp.json '{"mcpServers":{"everything":{"command":"npx","args":["-y","@modelcontextprotocol/server-everything"],"env":{"LOG_LEVEL":"debug","API_KEY":"${EVERYTHING_KEY}"},"cwd":"/tmp"}}}'
assert_eq "$(file_mode .mcp.json)" 644 "a new project file"
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "everything").layer')" "project"

# a literal token is stored (it may be meant) but warned about, without showing it
run 0 B add literal --url https://literal.example.com/mcp --header 'Authorization: Bearer sk-live-9f8e7d'
assert_contains "$ERR" "looks like a credential"
assert_not_contains "$ERR" "sk-live-9f8e7d" "the warning"
run 0 B remove literal

# an existing name: refused without --force, replaced in place with it
cp "$USER_FILE" "$T_ROOT/before.json"
run 3 B add first --url https://other.example.com/mcp
assert_contains "$ERR" "'first' is already in"
assert_contains "$ERR" "--force"
check cmp -s "$USER_FILE" "$T_ROOT/before.json"
run 0 B add first --url https://other.example.com/mcp --force
assert_eq "$(json_get "$(cat "$USER_FILE")" 'Object.keys(j.mcpServers).join(",")')" "first,second,github,corp" \
    "the replaced entry keeps its place"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.first.url')" "https://other.example.com/mcp"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.first.args')" "undefined" "the old entry is gone whole"
# a name from the older "servers" root, replaced: it moves to "mcpServers" and does not linger
run 0 B add legacy --command new-legacy --force
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.servers.legacy')" "undefined"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.legacy.command')" "new-legacy"

# a file that gives a key twice: add and remove refuse to rewrite it (the rewrite would keep
# one of the two), saying where; the file is left byte for byte
printf '{"mcpServers": {\n  "one": {"command": "a"},\n  "two": {"command": "b"},\n  "one": {"command": "c"}\n}}\n' \
    >"$T_ROOT/dups.json"
cp "$T_ROOT/dups.json" "$T_ROOT/dups.before"
run 3 B --config "$T_ROOT/dups.json" add three --command d
assert_contains "$ERR" "dups.json': line 4: \"one\" is given twice (first on line 2), and a rewrite would keep only one of them: remove the one you do not want"
check cmp -s "$T_ROOT/dups.json" "$T_ROOT/dups.before"
run 3 B --config "$T_ROOT/dups.json" remove two
assert_contains "$ERR" "\"one\" is given twice (first on line 2)"
check cmp -s "$T_ROOT/dups.json" "$T_ROOT/dups.before"

# a file in the older format only: the new entry goes under "servers"
printf '{"servers": {"old": {"command": "old-server"}}, "keep": true}\n' >"$T_ROOT/old.json"
run 0 B --config "$T_ROOT/old.json" add newer --command newer-server
check same_json "$T_ROOT/old.json" '{"servers":{"old":{"command":"old-server"},"newer":{"command":"newer-server"}},"keep":true}'

# invalid entries are refused with the loader's reason; the file is left as it was
cp "$USER_FILE" "$T_ROOT/before.json"
run 3 B add bad --url ftp://files.example.com/mcp
assert_contains "$ERR" "server 'bad'"
assert_contains "$ERR" "http:// or https://"
assert_contains "$ERR" "nothing was changed"
export HOSTVAR_XYZ="not a host"
run 3 B add bad2 --url 'https://${HOSTVAR_XYZ}/mcp'
assert_contains "$ERR" "server 'bad2'"
unset HOSTVAR_XYZ
run 3 B add bad3 --url https://ok.example.com/mcp --header 'Bad Header: x'
assert_contains "$ERR" "not a valid HTTP header name"
check cmp -s "$USER_FILE" "$T_ROOT/before.json"

# usage errors
run 2 B add
assert_contains "$ERR" "add needs NAME and --url URL or --command CMD"
run 2 B add --url https://mcp.linear.app/mcp
assert_contains "$ERR" "mcp-bridge add linear --url"
run 2 B add x --url https://a.example.com --command y
run 2 B add x --command y --oauth
run 2 B add x --url https://a.example.com --oauth --bearer-env T
run 2 B add x --url https://a.example.com --bearer-env 'not a var'
run 2 B add x --url https://a.example.com --timeout 0
run 2 B add x --url https://a.example.com --scope global
run 2 B add 'bad name' --url https://a.example.com
run 2 B add x --url https://a.example.com --header 'no colon'
check cmp -s "$USER_FILE" "$T_ROOT/before.json"

# a file that is not JSON is not touched
printf '{"mcpServers": {,}}\n' >"$T_ROOT/broken.json"
cp "$T_ROOT/broken.json" "$T_ROOT/broken.before"
run 3 B --config "$T_ROOT/broken.json" add y --command y
assert_contains "$ERR" "line 1, column"
assert_contains "$ERR" "fix the file by hand"
check cmp -s "$T_ROOT/broken.json" "$T_ROOT/broken.before"

# a failed write leaves the old file intact and nothing behind
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$PI_CODING_AGENT_DIR"
    run 1 B add rofail --url https://ro.example.com/mcp
    chmod 755 "$PI_CODING_AGENT_DIR"
    assert_contains "$ERR" "the file is as it was"
    check cmp -s "$USER_FILE" "$T_ROOT/before.json"
fi
if [ -n "${FAULTINJECT_LIB:-}" ]; then
    # as root a read-only directory does not stop a write: make the rename fail instead (a
    # sanitized binary accepts the shim ahead of its runtime: the shim only forwards calls)
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" FAULT_RENAME_SUFFIX=/mcp.json FAULT_ERRNO=13 LD_PRELOAD="$FAULTINJECT_LIB" \
        run 1 B add rofail --url https://ro.example.com/mcp
    assert_contains "$ERR" "the file is as it was"
    check cmp -s "$USER_FILE" "$T_ROOT/before.json"
    assert_eq "$(ls -A "$PI_CODING_AGENT_DIR" | tr '\n' ' ')" "mcp.json " "no temporary file left"
fi

# a symlinked file stays a symlink; its target changes
mkdir -p "$T_ROOT/dotfiles"
printf '{"mcpServers": {}}\n' >"$T_ROOT/dotfiles/mcp.json"
ln -s "$T_ROOT/dotfiles/mcp.json" "$T_ROOT/linked.json"
run 0 B --config "$T_ROOT/linked.json" add linked --command linked-server
check test -L "$T_ROOT/linked.json"
assert_eq "$(json_get "$(cat "$T_ROOT/dotfiles/mcp.json")" 'j.mcpServers.linked.command')" "linked-server"

# ---- add, guided on a terminal --------------------------------------------------------------
# drive SCRIPT_TEXT ARGS...: runs "mcp-bridge ARGS" on a pty with the script; transcript in $OUT.
drive() { pty_drive "$1" "$MCP_BRIDGE_BIN" "${@:2}"; }

# http with OAuth, in the user file: a bad URL is asked again, the name is suggested
cp "$USER_FILE" "$T_ROOT/before.json"
drive 'expect Choose 1-2: 
sendline 7
expect please answer a number from 1 to 2
expect Choose 1-2: 
sendline http
expect URL (e.g. https://mcp.example.com/mcp): 
sendline ftp://nope.example.com
expect URL (e.g. https://mcp.example.com/mcp): 
sendline https://mcp.linear.app/mcp
expect Name [linear]: 
sendline 
expect Choose 1-3 [1]: 
sendline 2
expect Choose 1-2 [1]: 
sendline 
expect added '"'"'linear'"'"'
expect sign in once with: mcp-auth linear
wait 0' add
check same_but "$USER_FILE" "$T_ROOT/before.json" mcpServers.linear
check same_json <(node -e 'console.log(JSON.stringify(require(process.argv[1]).mcpServers.linear))' "$USER_FILE") \
    '{"type":"http","url":"https://mcp.linear.app/mcp","auth":"oauth"}'

# bearer: the variable name is suggested from the server's name
drive 'expect Choose 1-2: 
sendline 1
expect URL (e.g. https://mcp.example.com/mcp): 
sendline https://api.githubcopilot.com/mcp/
expect Name [githubcopilot]: 
sendline gh
expect Choose 1-3 [1]: 
sendline bearer
expect Secret or environment variable that holds the token [GH_TOKEN]: 
sendline 
expect Choose 1-2 [1]: 
sendline 1
expect '"'"'gh'"'"' is sent '"'"'Authorization: Bearer <${GH_TOKEN}>'"'"': the bridge asks '"'"'secrets'"'"' for GH_TOKEN at each connect
expect run '"'"'secrets configure GH_TOKEN'"'"'
wait 0' add
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.gh.bearerTokenEnv')" "GH_TOKEN"

# stdio into the project file, the name from the npm package, environment variables asked
drive 'expect Choose 1-2: 
sendline 2
expect Command line (e.g. npx -y @modelcontextprotocol/server-everything): 
sendline npx -y "@modelcontextprotocol/server-filesystem" '"'"'/tmp/a dir'"'"'
expect empty line when done): 
sendline LOG_LEVEL=debug
expect Another one (empty line when done): 
sendline ROOT=${HOME}
expect Another one (empty line when done): 
sendline 
expect Name [filesystem]: 
sendline 
expect Choose 1-2 [1]: 
sendline project
expect added '"'"'filesystem'"'"'
wait 0' add
check same_json <(node -e 'console.log(JSON.stringify(require(process.argv[1]).mcpServers.filesystem))' "$PROJ/.mcp.json") \
    '{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp/a dir"],"env":{"LOG_LEVEL":"debug","ROOT":"${HOME}"}}'

# flags and questions mix: the URL given, the rest asked (auth skipped: --oauth given)
drive 'expect Name [example]: 
sendline 
expect Choose 1-2 [1]: 
sendline 
wait 0' add --url https://mcp.example.com/mcp --oauth
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.example.auth')" "oauth"

# an existing name: asked whether to replace it; no changes nothing
cp "$USER_FILE" "$T_ROOT/before.json"
drive 'expect Choose 1-2: 
sendline 1
expect URL (e.g. https://mcp.example.com/mcp): 
sendline https://mcp.linear.app/v2
expect Name [linear]: 
sendline 
expect Choose 1-3 [1]: 
sendline 
expect Choose 1-2 [1]: 
sendline 
expect replace it? [y/N]: 
sendline n
expect nothing was changed
wait 3' add
check cmp -s "$USER_FILE" "$T_ROOT/before.json"

# Ctrl-C: cancelled, nothing written
drive 'expect Choose 1-2: 
sendline 1
expect URL (e.g. https://mcp.example.com/mcp): 
sendline https://cancel.example.com/mcp
expect Name [cancel]: 
send half\x03
expect cancelled; nothing was changed
wait 130' add
check cmp -s "$USER_FILE" "$T_ROOT/before.json"

# ---- remove ---------------------------------------------------------------------------------
cp "$USER_FILE" "$T_ROOT/before.json"
run 0 B remove corp
check same_but "$T_ROOT/before.json" "$USER_FILE" mcpServers.corp
assert_eq "$(file_mode "$USER_FILE")" 640 "remove keeps the mode"

run 3 B remove no-such-server
assert_contains "$ERR" "no server named 'no-such-server'"
assert_contains "$ERR" "$USER_FILE"
assert_contains "$ERR" "$PROJ/.mcp.json"
run 2 B remove
run 2 B remove a b

# defined in two layers: the highest goes first, and the lower one is said to apply now
run 0 B add twice --command user-twice
run 0 B add twice --command project-twice --scope project
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "twice").command')" "project-twice"
run 0 B remove twice
assert_contains "$ERR" "still defined in"
assert_eq "$(json_get "$(cat "$PROJ/.mcp.json")" 'j.mcpServers.twice')" "undefined"
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.twice.command')" "user-twice"
run 0 B add twice --command project-twice --scope project
run 0 B remove twice --scope user
assert_eq "$(json_get "$(cat "$USER_FILE")" 'j.mcpServers.twice')" "undefined"
assert_eq "$(json_get "$(cat "$PROJ/.mcp.json")" 'j.mcpServers.twice.command')" "project-twice"
run 3 B remove twice --scope user
run 0 B remove twice --scope project
run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.some(s => s.name === "twice")')" "false"

# the older "servers" root
run 0 B --config "$T_ROOT/old.json" remove old
check same_json "$T_ROOT/old.json" '{"servers":{"newer":{"command":"newer-server"}},"keep":true}'

# the bundled configuration is not the user's to edit
printf '{"mcpServers": {"demo": {"command": "demo-server"}}}\n' >"$T_ROOT/bundled.json"
CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json" run 0 B list --json
assert_eq "$(json_get "$OUT" 'j.servers.find(s => s.name === "demo").layer')" "bundled"
CREDKIT_BRIDGE_BUNDLED="$T_ROOT/bundled.json" run 3 B remove demo
assert_contains "$ERR" "comes with the bridge"
