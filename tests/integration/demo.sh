# scripts/demo's demonstration (the stage after installing and building), run against the
# binaries under test in a private keychain, so the README's first command keeps working.
. "$(dirname "$0")/lib/common.sh"

export DEMO_SECRETS_DIR
DEMO_SECRETS_DIR=$(dirname "$SECRETS_BIN")
export DEMO_ENV_VALUE="demo-env-value-under-test"
unset DEMO_TOKEN DEMO_KEY DEMO_CMD
mkdir -p "$PI_CODING_AGENT_DIR"
run 0 bash "$TESTS_DIR/tools/with-keyring" bash "$TESTS_DIR/../scripts/demo" --inside-keyring
assert_contains "$OUT" '"DEMO_TOKEN":{"value":"demo-env-value-under-test","source":"env"}'
assert_contains "$OUT" '"source":"keychain"'
assert_contains "$OUT" "demo-from-command-"
assert_contains "$OUT" "child sees DEMO_KEY of"
assert_contains "$ERR" "same value both times"
assert_not_contains "$ERR" "error:" "the demo's messages"
