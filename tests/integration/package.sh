# The Debian package: cpack -G DEB builds it from this build tree, its metadata declares the
# libraries it needs (dpkg-shlibdeps), dpkg -i installs it, the installed executables run and
# man finds their pages, dpkg -r removes it and nothing of it is left.
#
# The install is real (dpkg, its database, its triggers) but private: the test runs in a mount
# namespace of its own where /usr and /var are overlays on the machine's, so the package's
# /usr/bin/mcp-bridge, secrets and mcp-auth are never seen by the other tests running at the
# same time (a bridge looks for its helpers on PATH), nor by anything else on the machine, and
# a failure halfway leaves nothing installed. Needs root (CI runs as root): skipped without it.
if [ -z "${T_IN_MOUNTNS:-}" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP: the package test installs with dpkg in a private mount namespace: it needs root"
        exit 77
    fi
    for tool in cpack dpkg-deb dpkg-shlibdeps man unshare; do
        command -v "$tool" >/dev/null 2>&1 || {
            echo "FAIL: $tool is missing: run scripts/install-deps" >&2
            exit 1
        }
    done
    export T_IN_MOUNTNS=1
    exec unshare --mount --propagation private -- bash "$0" "$@"
fi
. "$(dirname "$0")/lib/common.sh"

: "${BUILD_DIR:?BUILD_DIR must point at the build directory (ctest sets it)}"
[ -f "$BUILD_DIR/CPackConfig.cmake" ] || fail "no CPackConfig.cmake in $BUILD_DIR (configure it with cmake)"
if dpkg-query -W -f='${Status}' credkit 2>/dev/null | grep -q ' installed$'; then
    echo "SKIP: a credkit package is installed on this machine: the test installs and removes its own"
    trap - EXIT
    rm -rf "$T_ROOT" "$XDG_RUNTIME_DIR"
    exit 77
fi

# /usr and /var as overlays whose upper layers live on a tmpfs of the namespace: what dpkg
# writes lands there and is gone with the namespace. Detached (lazily: this shell runs from
# /usr/bin/bash) before common.sh's cleanup removes $T_ROOT.
mkdir -p "$T_ROOT/overlay"
mount -t tmpfs -o mode=0700 credkit-package-test "$T_ROOT/overlay" || fail "cannot mount a tmpfs"
for dir in usr var; do
    mkdir -p "$T_ROOT/overlay/$dir/upper" "$T_ROOT/overlay/$dir/work"
    mount -t overlay "overlay-$dir" -o "lowerdir=/$dir,upperdir=$T_ROOT/overlay/$dir/upper,workdir=$T_ROOT/overlay/$dir/work" "/$dir" ||
        fail "cannot mount an overlay on /$dir (the kernel's overlayfs)"
done
# (set +e: t_cleanup reads the status the test ends with, which the (exit) hands on)
trap 'rc=$?; umount -l /usr /var "$T_ROOT/overlay" 2>/dev/null || true; set +e; (exit $rc); t_cleanup' EXIT

# --- the package, from this build tree
run 0 cpack -G DEB --config "$BUILD_DIR/CPackConfig.cmake" -B "$T_ROOT/package"
deb=$(find "$T_ROOT/package" -maxdepth 1 -name 'credkit_*.deb')
if [ -z "$deb" ] || [ "$(printf '%s\n' "$deb" | wc -l)" != 1 ]; then
    fail "cpack made no single credkit_*.deb:
$OUT"
fi
run 0 dpkg-deb -I "$deb"
assert_contains "$OUT" " Package: credkit"
version=$(dpkg-deb -f "$deb" Version)
assert_eq "$version" "$("$MCP_BRIDGE_BIN" --version | sed 's/.* //')" "the package's version"
# Depends: every library the executables link, from dpkg-shlibdeps
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libcurl4 libssl3 libjson-c libsecret-1-0 libglib2.0-0 libmicrohttpd; do
    assert_contains "$depends" "$lib" "Depends"
done

# the files: all under /usr, the executables in /usr/bin, the pages gzipped in man1 and man5,
# shell completions only where Debian's shells look for them
run 0 dpkg-deb -c "$deb"
files=$(printf '%s\n' "$OUT" | awk '$1 !~ /^d/ { print substr($6, 2) }')
assert_not_contains "$(printf '%s\n' "$files" | grep -v '^/usr/' || true)" "/" "files outside /usr"
assert_not_contains "$files" "/usr/local/" "the package's files"
for f in /usr/bin/secrets /usr/bin/mcp-auth /usr/bin/mcp-bridge \
    /usr/share/man/man1/secrets.1.gz /usr/share/man/man1/mcp-auth.1.gz \
    /usr/share/man/man1/mcp-bridge.1.gz /usr/share/man/man5/mcp.json.5.gz \
    /usr/share/man/man5/secrets.json.5.gz; do
    assert_contains "$files
" "$f
" "the package's files"
done
T_CHECKS=$((T_CHECKS + 1))
stray=$(printf '%s\n' "$files" | grep -i 'completion' |
    grep -vE '^/usr/share/(bash-completion/completions|zsh/vendor-completions|fish/vendor_completions\.d)/' || true)
[ -z "$stray" ] || fail "completions outside the directories Debian's shells read: $stray"

# --- installed
for f in $files; do
    [ ! -e "$f" ] || fail "$f exists before the package is installed"
done
run 0 dpkg -i "$deb"
run 0 dpkg-query -W -f='${Status} ${Version}' credkit
assert_eq "$OUT" "install ok installed $version" "the package's state"
for tool in secrets mcp-auth mcp-bridge; do
    run 0 "/usr/bin/$tool" --version
    assert_eq "$OUT" "$tool (credkit) $version" "/usr/bin/$tool --version"
done
# the installed bridge finds the installed helpers beside it
run 0 env -u CREDKIT_SECRETS -u CREDKIT_MCP_AUTH /usr/bin/mcp-bridge list
assert_not_contains "$OUT$ERR" "not installed" "mcp-bridge list"
run 0 env -u MANPATH man -w mcp-bridge
assert_contains "$(env -u MANPATH man -aw mcp-bridge)" "/usr/share/man/man1/mcp-bridge.1.gz" "man -aw mcp-bridge"
run 0 env -u MANPATH man -aw 5 mcp.json
assert_contains "$OUT" "/usr/share/man/man5/mcp.json.5.gz" "man -aw 5 mcp.json"
run 0 env -u MANPATH MANWIDTH=80 man -P cat 1 mcp-bridge
assert_contains "$OUT" "MCP-BRIDGE(1)" "man mcp-bridge"

# --- removed, and nothing left
run 0 dpkg -r credkit
T_CHECKS=$((T_CHECKS + 1))
if dpkg-query -W -f='${Status}' credkit 2>/dev/null | grep -qv 'not-installed'; then
    fail "dpkg still knows credkit after dpkg -r: $(dpkg-query -W -f='${Status}' credkit)"
fi
for f in $files; do
    T_CHECKS=$((T_CHECKS + 1))
    [ ! -e "$f" ] || fail "$f is still there after dpkg -r"
done
assert_not_contains "$(env -u MANPATH man -aw mcp-bridge 2>/dev/null || true)" "/usr/share/man/man1/mcp-bridge.1.gz" "man -aw mcp-bridge after dpkg -r"
# nothing the package brought is left anywhere under /usr: the overlay's upper layer holds only
# the directories dpkg went through
T_CHECKS=$((T_CHECKS + 1))
left=$(find "$T_ROOT/overlay/usr/upper" ! -type d)
[ -z "$left" ] || fail "left under /usr after dpkg -r: $left"
