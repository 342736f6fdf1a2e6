# Sourced first by tests that need a real Secret Service: re-runs the test inside
# tests/tools/with-keyring (a private D-Bus session, a fresh gnome-keyring, torn down after).
if [ -z "${WITH_KEYRING_SESSION:-}" ]; then
    exec bash "$TESTS_DIR/tools/with-keyring" bash "$0" "$@"
fi
