# mcp-bridge's server lifecycles and its metadata cache (tests/peers/bridge-lifecycle.mjs, the
# SDK's Client on `mcp-bridge serve`, tests/peers/tiny-server.mjs as the servers): lazy, eager and
# keep-alive servers seen in the processes the bridge runs (none for an idle or a cached lazy
# server), a keep-alive server restarted after SIGKILL, the cache listing a lazy server whose
# command cannot run, a changed entry not served from the cache, and a hung server that does not
# hold the first tools/list beyond the settle window. No process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

mkdir "$T_ROOT/work"
# "idleTimeout": "1s" (a duration string) comes with the configuration keys' part of issue 12; a
# build that refuses it still reads a number as milliseconds (1000: a second)
printf '{"mcpServers": {"probe": {"command": "true", "idleTimeout": "1s"}}}\n' >"$T_ROOT/probe.json"
idle_value='"1s"'
if "$MCP_BRIDGE_BIN" list --config "$T_ROOT/probe.json" 2>&1 | grep -q 'idleTimeout'; then
    idle_value=1000
fi
driver lifecycle "$T_ROOT/work/cold.log" bridge-lifecycle.mjs \
    --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT" --idle-value "$idle_value"
bridge_done "mcp-bridge lifecycles and cache"
