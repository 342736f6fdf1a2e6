# The manual pages of docs/man: each renders without a warning (groff -man -ww, and man -l on
# the gzipped page the build installs), and the pages of the three executables stay in step
# with their --help: every command and option a help lists (the tool's and each command's) is
# in the page, and every command and option the page lists exists.
. "$(dirname "$0")/lib/common.sh"

: "${MCP_AUTH_BIN:?MCP_AUTH_BIN must point at mcp-auth (ctest sets it)}"
: "${MCP_BRIDGE_BIN:?MCP_BRIDGE_BIN must point at mcp-bridge (ctest sets it)}"
: "${BUILD_DIR:?BUILD_DIR must point at the build directory (ctest sets it)}"
MAN_DIR="$TESTS_DIR/../docs/man"
PAGES="secrets.1 mcp-auth.1 mcp-bridge.1 mcp.json.5 secrets.json.5"

# --- every page renders, with no warning, from the source and as installed (gzipped)
for page in $PAGES; do
    [ -f "$MAN_DIR/$page" ] || fail "docs/man/$page is missing"
    run 0 groff -man -Tutf8 -ww -z "$MAN_DIR/$page"
    assert_eq "$ERR" "" "groff's warnings on $page"
    gz="$BUILD_DIR/docs/man/$page.gz"
    [ -f "$gz" ] || fail "$gz was not built (the man-pages target)"
    run 0 cmp "$MAN_DIR/$page" <(gzip -dc "$gz")
    # man -l formats the page as a reader sees it; its warnings go to stderr as groff's do
    run 0 env MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$gz"
    assert_eq "$ERR" "" "man -l's warnings on $page"
    name=${page%.*}
    assert_contains "$OUT" "$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')(${page##*.})" "man -l $page"
    for section in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
        assert_contains "$OUT" "
$section
" "the sections of $page"
    done
done
for page in secrets.1 mcp-auth.1 mcp-bridge.1; do
    run 0 env MANWIDTH=80 man -l "$MAN_DIR/$page"
    for section in COMMANDS OPTIONS FILES ENVIRONMENT "EXIT STATUS" EXAMPLES; do
        assert_contains "$OUT" "
$section
" "the sections of $page"
    done
done

# roff_text PAGE: the page's source as plain text: \- is -, no font changes, \(aq is '
roff_text() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g' "$1"
}

# help_commands HELP: the commands of a help's "commands:" list, one a line
help_commands() {
    printf '%s\n' "$1" | awk '/^commands:/ { on = 1; next } /^$/ { on = 0 }
        on && /^  [a-z]/ { print $1 }'
}

# options TEXT: every long option (--name) and short option (-x) of TEXT, one a line, sorted
options() {
    printf '%s\n' "$1" | grep -oE -- '--[a-z][a-z0-9-]*' || true
    printf '%s\n' "$1" | grep -oE -- '(^|[][ |,(])-[a-zA-Z]([],| )|]|$)' | grep -oE -- '-[a-zA-Z]' || true
}

# no_examples HELP: HELP without its examples, which show other programs' options too
no_examples() {
    printf '%s\n' "$1" | awk '/^examples?:/ { skip = 1; next } /^$/ { skip = 0 } !skip'
}

# check_tool TOOL BIN HELP_CMD: compares TOOL's --help and every 'HELP_CMD COMMAND' with its page
check_tool() {
    local tool=$1 bin=$2 help_cmd=$3 help all cmd page text commands man_cmds opt
    page="$MAN_DIR/$tool.1"
    run 0 "$bin" --help
    help=$OUT
    all=$(no_examples "$help")
    commands=$(help_commands "$help")
    [ -n "$commands" ] || fail "no commands found in '$tool --help':
$help"
    for cmd in $commands; do
        run 0 "$bin" "$help_cmd" "$cmd"
        all="$all
$(no_examples "$OUT")"
    done
    text=$(roff_text "$page")
    # the page's commands: the .SS headings of its COMMANDS section
    man_cmds=$(printf '%s\n' "$text" | awk '/^\.SH/ { on = ($2 == "COMMANDS") ; next }
        on && /^\.SS/ { sub(/^\.SS +"?/, ""); sub(/[ "].*/, ""); print }')
    for cmd in $commands; do
        T_CHECKS=$((T_CHECKS + 1))
        printf '%s\n' "$man_cmds" | grep -qxF -- "$cmd" ||
            fail "'$tool --help' lists the command '$cmd', which $tool.1 does not describe (a .SS under COMMANDS)"
    done
    for cmd in $man_cmds; do
        T_CHECKS=$((T_CHECKS + 1))
        printf '%s\n' "$commands" | grep -qxF -- "$cmd" ||
            fail "$tool.1 describes a command '$cmd' that '$tool --help' does not list"
    done
    for opt in $(options "$all" | sort -u); do
        T_CHECKS=$((T_CHECKS + 1))
        options "$text" | grep -qxF -- "$opt" ||
            fail "the help of $tool lists the option '$opt', which $tool.1 does not"
    done
    # the page's own options, outside its examples (which may show other programs' options)
    for opt in $(options "$(printf '%s\n' "$text" | sed '/^\.EX/,/^\.EE/d')" | sort -u); do
        T_CHECKS=$((T_CHECKS + 1))
        options "$all" | grep -qxF -- "$opt" ||
            fail "$tool.1 lists the option '$opt', which no help of $tool does"
    done
}

check_tool secrets "$SECRETS_BIN" help
check_tool mcp-auth "$MCP_AUTH_BIN" help
check_tool mcp-bridge "$MCP_BRIDGE_BIN" help
