# mcp-bridge's server lifecycles and its metadata cache (tests/peers/bridge-lifecycle.mjs, the
# SDK's Client on `mcp-bridge serve`, tests/peers/tiny-server.mjs as the servers): lazy, eager and
# keep-alive servers seen in the processes the bridge runs (none for an idle or a cached lazy
# server), a keep-alive server restarted after SIGKILL, the cache listing a lazy server whose
# command cannot run, a changed entry not served from the cache, and a hung server that does not
# hold the first tools/list beyond the settle window. No process of this test may be left.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/bridge.sh"

mkdir "$T_ROOT/work"
driver lifecycle "$T_ROOT/work/cold.log" bridge-lifecycle.mjs \
    --bridge "$MCP_BRIDGE_BIN" --work "$T_ROOT/work" --tag "$T_ROOT" --idle-value '"1s"'
bridge_done "mcp-bridge lifecycles and cache"
