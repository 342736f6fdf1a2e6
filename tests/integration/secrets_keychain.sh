# secrets with a real Secret Service (gnome-keyring in a private D-Bus session): store,
# replace, resolve, remove; a failed configure restores the keychain; locked and missing
# keychains say what to do.
. "$(dirname "$0")/lib/keyring.sh"
. "$(dirname "$0")/lib/common.sh"

: "${FAULTINJECT_LIB:?FAULTINJECT_LIB must point at the fault-injection shim (ctest sets it)}"
SJ="$PI_CODING_AGENT_DIR/secrets.json"
t_canary first-keychain-value "second value with spaces é" labelled-value third-value

lookup() { secret-tool lookup label "$1" 2>/dev/null || true; }

run_in 0 "first-keychain-value" S configure KC_TOKEN --keychain
assert_eq "$(lookup KC_TOKEN)" "first-keychain-value" "the item in the keychain"
assert_contains "$(cat "$SJ")" '"keychain:KC_TOKEN"'
assert_not_contains "$(cat "$SJ")" "first-keychain-value" "secrets.json"
run 0 S get KC_TOKEN
assert_eq "$OUT" "first-keychain-value"
run 0 S resolve --json KC_TOKEN
assert_eq "$(json_get "$OUT" 'j.secrets.KC_TOKEN.source')" keychain
assert_eq "$(json_get "$OUT" 'j.secrets.KC_TOKEN.expires_at')" undefined

# the label attribute holds no secret
attrs=$(secret-tool search --all label KC_TOKEN 2>&1 || true)
assert_contains "$attrs" "attribute.label = KC_TOKEN"
assert_not_contains "$(printf '%s\n' "$attrs" | grep '^attribute')" "first-keychain-value" "item attributes"

# replacing keeps one item with the new value; a trailing newline on stdin is not part of it
run_in 0 "second value with spaces é
" S configure KC_TOKEN --keychain
run 0 S get KC_TOKEN
assert_eq "$OUT" "second value with spaces é"
assert_eq "$(secret-tool search --all label KC_TOKEN 2>&1 | grep -c '^label = ')" 1 "items with the label"

# a custom label
run_in 0 "labelled-value" S configure OTHER --keychain --label "shared label"
assert_eq "$(lookup 'shared label')" "labelled-value"
run 0 S get OTHER

# a label another recipe uses is not overwritten behind its back
run_in 1 "other-value" S configure THIRD --keychain --label "shared label"
assert_contains "$ERR" "is used by another recipe too"
assert_eq "$(lookup 'shared label')" "labelled-value" "the shared item"
run 1 S get THIRD

# empty stdin is refused and changes nothing
run_in 1 "" S configure KC_TOKEN --keychain
assert_contains "$ERR" "no value on stdin"
assert_eq "$(lookup KC_TOKEN)" "second value with spaces é"

# a configure that fails after storing restores the previous item...
cp "$SJ" "$T_ROOT/before.json"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
FAULT_RENAME_SUFFIX=secrets.json LD_PRELOAD="$FAULTINJECT_LIB" run_in 1 "third-value" S configure KC_TOKEN --keychain
assert_contains "$ERR" "nothing was changed"
assert_eq "$(lookup KC_TOKEN)" "second value with spaces é" "the keychain after a failed configure"
cmp -s "$SJ" "$T_ROOT/before.json" || fail "secrets.json changed after a failed configure"
T_CHECKS=$((T_CHECKS + 1))
# ...and removes an item it had just created
FAULT_RENAME_SUFFIX=secrets.json LD_PRELOAD="$FAULTINJECT_LIB" run_in 1 "new-value" S configure BRAND_NEW --keychain
assert_eq "$(lookup BRAND_NEW)" "" "no item left behind"
run 1 S get BRAND_NEW

# moving a recipe away from the keychain deletes the item nothing else uses
export SOME_ENV=from-env
run 0 S configure OTHER --env SOME_ENV
assert_eq "$(lookup 'shared label')" "" "the old item"

# remove deletes the recipe and its item
run 0 S remove KC_TOKEN
assert_eq "$(lookup KC_TOKEN)" "" "the item after remove"
run 1 S get KC_TOKEN

# a recipe whose item is gone says how to fix it
printf '{"GONE": "keychain:never-stored"}\n' >"$SJ"
chmod 600 "$SJ"
run 1 S get GONE
assert_contains "$ERR" "no item 'never-stored'"
assert_contains "$ERR" "secrets configure GONE --keychain"

# a locked keychain: say how to unlock, change nothing
printf '{"LOCKED_ONE": "keychain:locked-item"}\n' >"$SJ"
run 1 bash "$TESTS_DIR/tools/with-keyring" --locked "$SECRETS_BIN" get LOCKED_ONE
assert_contains "$ERR" "locked"
assert_contains "$ERR" "unlock"
run_in 1 "x-value" bash "$TESTS_DIR/tools/with-keyring" --locked "$SECRETS_BIN" configure NEWONE --keychain
assert_contains "$ERR" "locked"

# no Secret Service on the bus, and no bus at all: say what to start
run 1 bash "$TESTS_DIR/tools/with-keyring" --no-daemon "$SECRETS_BIN" get LOCKED_ONE
assert_contains "$ERR" "Secret Service"
run 1 env -u DBUS_SESSION_BUS_ADDRESS -u DISPLAY "$SECRETS_BIN" get LOCKED_ONE
assert_contains "$ERR" "Secret Service"
