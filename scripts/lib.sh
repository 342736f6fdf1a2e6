# shellcheck shell=bash
# Helpers shared by scripts/install-deps, scripts/test and scripts/demo. Source it, do not run it.
# Sets ROOT (the repository root) and defines say, die, quietly, need_root_or_sudo,
# ensure_apt_packages and build_tree.

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "scripts/lib.sh is meant to be sourced by the other scripts" >&2
    exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
export ROOT

# say MESSAGE... : progress for the person watching, on stderr so stdout stays clean.
say() {
    printf '==> %s\n' "$*" >&2
}

# die MESSAGE... : explain what went wrong (and what to do) and stop.
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# quietly LOG WHAT CMD... : runs CMD with its output added to the file LOG, and shows only one
# line on the terminal: WHAT, then how long it took. When CMD fails, the end of LOG follows,
# with where the rest is. Returns CMD's status.
quietly() {
    local log="$1" what="$2" rc=0 start=$SECONDS
    shift 2
    printf '==> %s ... ' "$what" >&2
    printf '\n==> %s\n$ %s\n' "$what" "$*" >>"$log"
    "$@" >>"$log" 2>&1 || rc=$?
    if [[ $rc -eq 0 ]]; then
        printf 'done (%d s)\n' $((SECONDS - start)) >&2
        return 0
    fi
    printf 'failed\n' >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    printf 'error: %s failed (exit status %d); all its output is in %s\n' "$what" "$rc" "$log" >&2
    return "$rc"
}

# need_root_or_sudo : sets the array SUDO to the prefix that runs a command as root (empty when
# we are root). Without a terminal, sudo must not need a password, or we would hang.
need_root_or_sudo() {
    SUDO=()
    if [[ "$(id -u)" -eq 0 ]]; then
        return 0
    fi
    if ! command -v sudo >/dev/null 2>&1; then
        die "installing packages needs root, and sudo is not installed: run this script as root, or install the packages listed above yourself"
    fi
    if [[ ! -t 0 ]] && ! sudo -n true 2>/dev/null; then
        die "installing packages needs root: sudo wants a password but there is no terminal to type it; run 'sudo true' first or run this script as root"
    fi
    SUDO=(sudo)
}

# apt_missing PKG... : prints the packages that are not installed, one per line.
# One dpkg-query for all of them keeps a warm run fast.
apt_missing() {
    local -A installed=()
    local name status pkg
    while IFS=$'\t' read -r name status; do
        [[ "$status" == "install ok installed" ]] && installed["$name"]=1
    done < <(dpkg-query -W -f='${Package}\t${Status}\n' "$@" 2>/dev/null || true)
    for pkg in "$@"; do
        [[ -n "${installed[$pkg]:-}" ]] || printf '%s\n' "$pkg"
    done
}

# ensure_apt_packages PKG... : installs those of PKG that are missing; does nothing (and needs
# neither root nor network) when all are there. Never pass ca-certificates: upgrading it runs a
# slow Java keystore hook.
ensure_apt_packages() {
    local missing
    command -v dpkg-query >/dev/null 2>&1 ||
        die "this script installs packages with apt (Debian/Ubuntu); elsewhere install these yourself: $*"
    mapfile -t missing < <(apt_missing "$@")
    if [[ ${#missing[@]} -eq 0 ]]; then
        return 0
    fi
    say "installing ${missing[*]}"
    need_root_or_sudo
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
        die "apt-get update failed (is the network to the Debian mirror up?)"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" ||
        die "apt-get install ${missing[*]} failed"
    mapfile -t missing < <(apt_missing "${missing[@]}")
    [[ ${#missing[@]} -eq 0 ]] || die "still not installed after apt-get install: ${missing[*]}"
}

# build_tree DIR [CMAKE_ARGS...] : configures DIR from the repository root (cheap when nothing
# changed) and builds everything in it. Returns non-zero, with a message, when either fails.
build_tree() {
    local dir="$1" name
    shift
    name="${dir#"$ROOT"/}"
    say "configuring $name${*:+ ($*)}"
    if ! cmake -S "$ROOT" -B "$dir" "$@" >/dev/null; then
        printf 'error: cmake could not configure %s (see above)\n' "$name" >&2
        return 1
    fi
    say "building $name"
    if ! cmake --build "$dir" -j"$(nproc)"; then
        printf 'error: the build in %s failed (see above)\n' "$name" >&2
        return 1
    fi
}
