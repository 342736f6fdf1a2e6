# Shell completion of the three tools: the bash script each writes ("TOOL completion bash") is
# sourced in a real bash and driven as bash drives it (COMP_WORDS, COMP_CWORD, the function,
# COMPREPLY) for commands, options, server names (mcp-bridge, mcp-auth), secret names (secrets)
# and a server's tool names for "mcp-bridge call SERVER <TAB>", which come from the metadata
# cache that serving an agent (the TypeScript SDK's Client) filled, never from a connection.
# The zsh and fish scripts are checked by zsh -n and fish -n, and driven too (zsh runs the same
# function, fish its own "complete -C"), when those shells are installed (scripts/install-deps).
. "$(dirname "$0")/lib/common.sh"

: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SDK="$PEERS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm"
[ -f "$EVERYTHING" ] || fail "server-everything is missing: run scripts/install-deps"
export CREDKIT_BRIDGE_BUNDLED=""
mkdir -p "$PI_CODING_AGENT_DIR" "$T_ROOT/bin"
chmod 700 "$PI_CODING_AGENT_DIR"
# the tools by the names the scripts are written for, as installed
ln -s "$MCP_BRIDGE_BIN" "$T_ROOT/bin/mcp-bridge"
ln -s "$MCP_AUTH_BIN" "$T_ROOT/bin/mcp-auth"
ln -s "$SECRETS_BIN" "$T_ROOT/bin/secrets"
export PATH="$T_ROOT/bin:$PATH"
MARK="cli-completion-$$"
cat >"$PI_CODING_AGENT_DIR/mcp.json" <<JSON
{"settings": {"settleTimeout": 15000}, "mcpServers": {
  "everything": {"command": "node", "args": ["$EVERYTHING", "stdio", "$MARK"]},
  "linear": {"url": "https://mcp.linear.example/mcp"},
  "local-files": {"command": "node", "args": ["$T_ROOT/none.js"]}
}}
JSON
cat >"$T_ROOT/other.json" <<JSON
{"mcpServers": {"from-other-file": {"url": "https://other.example/mcp"}}}
JSON
export GITHUB_TOKEN_SRC=x OPENAI_KEY_SRC=y
secrets configure GITHUB_TOKEN --env GITHUB_TOKEN_SRC >/dev/null 2>&1 || fail "configure GITHUB_TOKEN"
secrets configure OPENAI_API_KEY --env OPENAI_KEY_SRC >/dev/null 2>&1 || fail "configure OPENAI_API_KEY"

for tool in mcp-bridge mcp-auth secrets; do
    run 0 "$tool" completion bash
    printf '%s\n' "$OUT" >"$T_ROOT/$tool.bash"
    run 0 "$tool" completion zsh
    printf '%s\n' "$OUT" >"$T_ROOT/_$tool"
    run 0 "$tool" completion fish
    printf '%s\n' "$OUT" >"$T_ROOT/$tool.fish"
done
run 2 mcp-bridge completion tcsh
assert_contains "$ERR" "the shells are bash, zsh and fish"

# complete TOOL WORDS... '': what bash offers for the last word (COMPREPLY, sorted, one line)
complete_bash() {
    local tool=$1
    bash --norc --noprofile -c '
        source "$1" || exit 9
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMPREPLY=()
        "$(complete -p "$1" | sed "s/.* -F \([^ ]*\) .*/\1/")"
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"
    ' complete-bash "$T_ROOT/$tool.bash" "$@"
}
check() { # check EXPECTED TOOL WORDS...
    local want=$1 got
    shift
    got=$(complete_bash "$@") || fail "bash completion of '$*' failed"
    assert_eq "$got" "$want" "bash: $*"
}

# ---- commands and options, from each tool's table ----
check "add call completion connect doctor help install list reload remove serve test trust uninstall" mcp-bridge ""
check "call completion connect" mcp-bridge c
check "--json" mcp-bridge list --j
check "--check --config --connect-timeout" mcp-bridge list --c
check "--bearer-env" mcp-bridge add --b
check "--connect-timeout" mcp-bridge -v call --conn
check "completion" secrets comp
check "configure" secrets conf
check "--no-cache" secrets resolve --no-c
check "--keychain" secrets configure NAME --keyc
check "--device-code" mcp-auth login --d
check "--refresh" mcp-auth header --r
check "bash fish zsh" mcp-bridge completion ""
check "claude-code claude-desktop" mcp-bridge install cl
check "pi" mcp-bridge uninstall p
check "list" secrets help l
# a value to give: nothing of ours (bash's default completion takes it, files)
check "" mcp-bridge call --timeout ""

# ---- server names: every entry for mcp-bridge, those mcp-auth signs in to ----
check "everything" mcp-bridge test e
check "everything linear local-files" mcp-bridge remove ""
check "from-other-file" mcp-bridge --config "$T_ROOT/other.json" connect f
check "from-other-file" mcp-bridge connect --config "$T_ROOT/other.json" ""
# the first word of mcp-auth is a command or a SERVER to sign in to; no stdio server
check "linear login logout" mcp-auth l
check "linear" mcp-auth logout ""
check "" mcp-auth status local
# the token store's move: the action, then the backends
check "migrate" mcp-auth store ""
check "file keyring" mcp-auth store migrate ""

# ---- secret names ----
check "GITHUB_TOKEN" secrets get G
check "GITHUB_TOKEN OPENAI_API_KEY" secrets remove ""
check "GITHUB_TOKEN OPENAI_API_KEY" secrets resolve --json GITHUB_TOKEN ""
check "OPENAI_API_KEY" secrets exec GITHUB_TOKEN O
check "" secrets exec GITHUB_TOKEN -- O # CMD's, not ours

# ---- tool names: from the metadata cache, never connecting ----
# nothing cached yet: no tool names, and no server started to find them
check "" mcp-bridge call everything ""
T_CHECKS=$((T_CHECKS + 1))
! pgrep -f "$MARK" >/dev/null || fail "completion started the server"
# an agent served by the bridge fills the cache
cat >"$T_ROOT/agent.mjs" <<JS
import { Client } from "$SDK/client/index.js";
import { StdioClientTransport } from "$SDK/client/stdio.js";
const transport = new StdioClientTransport({ command: "mcp-bridge", args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "cli-completion-test", version: "1.0.0" }, { capabilities: {} });
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) =>
  setTimeout(() => reject(new Error("timed out waiting for " + what)), ms).unref())]);
await within(client.connect(transport), 30000, "initialize");
const tools = (await within(client.listTools(), 30000, "tools/list")).tools.map((t) => t.name);
await client.close();
console.log(JSON.stringify(tools));
JS
run 0 node "$T_ROOT/agent.mjs"
assert_contains "$OUT" "mcp_everything_echo"
wait_until 10 "the metadata cache to be written" test -s "$PI_CODING_AGENT_DIR/mcp-bridge-cache.json"
server_gone() { ! pgrep -f "$MARK" >/dev/null; }
wait_until 10 "the server to be stopped" server_gone
check "echo" mcp-bridge call everything ec
check "get-structured-content get-sum" mcp-bridge call everything get-s
check "echo" mcp-bridge call --json everything ec
T_CHECKS=$((T_CHECKS + 1))
! pgrep -f "$MARK" >/dev/null || fail "completion started the server"
# a server with nothing cached: nothing
check "" mcp-bridge call linear ""
run 0 mcp-bridge __complete tools everything
assert_contains "$OUT" "echo"
assert_eq "$ERR" "" "__complete is quiet"

# ---- zsh and fish ----
if command -v zsh >/dev/null; then
    for tool in mcp-bridge mcp-auth secrets; do
        run 0 zsh -n "$T_ROOT/_$tool"
    done
    # zsh runs the same function, under ksh emulation
    zcheck() { # zcheck EXPECTED IDENT WORDS...
        local want=$1 id=$2 got
        shift 2
        got=$(zsh -f -c '
            source "$1" 2>/dev/null
            shift
            local -a COMP_WORDS COMPREPLY
            local COMP_CWORD=$(($# - 1))
            COMP_WORDS=("$@")
            _credkit_'"$id"'_ksh
            print -r -- ${(j: :)${(o)COMPREPLY}}
        ' zcheck "$T_ROOT/_$1" "$@")
        assert_eq "$got" "$want" "zsh: $*"
    }
    zcheck "call completion connect" mcp_bridge mcp-bridge c
    zcheck "GITHUB_TOKEN" secrets secrets get G
    zcheck "echo" mcp_bridge mcp-bridge call everything ec
else
    echo "zsh is not installed (scripts/install-deps installs it): its script is not checked"
fi
if command -v fish >/dev/null; then
    for tool in mcp-bridge mcp-auth secrets; do
        run 0 fish -n "$T_ROOT/$tool.fish"
    done
    fcheck() { # fcheck EXPECTED TOOL COMMANDLINE: fish's own completion of the line
        local got
        got=$(fish --no-config -c "source '$T_ROOT/$2.fish'; complete -C'$3'" | cut -f1 | sort | tr '\n' ' ' | sed 's/ $//')
        assert_eq "$got" "$1" "fish: $3"
    }
    fcheck "list" mcp-bridge "mcp-bridge l"
    fcheck "--json" mcp-bridge "mcp-bridge list --j"
    fcheck "everything" mcp-bridge "mcp-bridge test e"
    fcheck "echo" mcp-bridge "mcp-bridge call everything ec"
    fcheck "GITHUB_TOKEN" secrets "secrets get G"
    fcheck "linear" mcp-auth "mcp-auth logout "
else
    echo "fish is not installed (scripts/install-deps installs it): its script is not checked"
fi
