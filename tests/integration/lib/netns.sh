# Sourced first by tests whose peers bind every interface (the SDK's example servers, the
# conformance suite's mocks): re-runs the test inside a private network namespace where only
# loopback is up, so nothing they open is reachable from outside. Needs root (CI runs as root).
if [ -z "${T_IN_NETNS:-}" ]; then
    export T_IN_NETNS=1
    exec unshare -n -- bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
fi
