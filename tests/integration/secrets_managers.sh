# secrets: secret managers by reference. The real pass, gopass (Debian's) and keepassxc-cli,
# against a store, a GnuPG key and a database made here: configure, the value, the TTL, a
# missing entry's error (naming the manager and the entry, holding no secret), a reference full
# of shell metacharacters handed over as one argument, a leading '-' refused.
#
# op, bw, vault, aws and gcloud cannot be installed here without their vendors' downloads (and
# would need an account and the network): they are STAND-INS on PATH, written below, that
# implement the command line each vendor documents for reading a secret - exactly that argv,
# anything else is refused with status 2 - and print the vendor's documented error for the
# signed-out (locked) and missing cases. They check what secrets hands each CLI and what it
# makes of its answers; they say nothing about the real CLIs' behaviour beyond their docs.
. "$(dirname "$0")/lib/common.sh"

for p in pass gopass keepassxc-cli gpg gpgconf; do
    command -v "$p" >/dev/null || fail "$p is not installed (scripts/install-deps installs it)"
done

BIN="$T_ROOT/bin" # wrappers and stand-ins, first on PATH
ARGV_LOG="$T_ROOT/argv"
DATA="$T_ROOT/data" # the stand-ins' secrets
mkdir -p "$BIN" "$ARGV_LOG" "$DATA"
export PATH="$BIN:$PATH"

# each wrapper logs the argv it got, one argument per line after the count, then runs the real
# program: the log shows what secrets handed over, and the canary scan shows no secret in it
for p in pass gopass keepassxc-cli; do
    real=$(command -v "$p")
    cat >"$BIN/$p" <<EOF
#!/bin/sh
{ echo "\$#"; printf '%s\n' "\$@"; } >"$ARGV_LOG/$p"
exec "$real" "\$@"
EOF
    chmod +x "$BIN/$p"
done
argv_of() { cat "$ARGV_LOG/$1"; }

# ---- GnuPG, pass and gopass ------------------------------------------------------------------
export GNUPGHOME="$T_ROOT/gnupg" PASSWORD_STORE_DIR="$T_ROOT/store"
mkdir -m 700 "$GNUPGHOME"
# the agent this key starts is ours to stop, whatever the outcome
trap 'rc=$?; gpgconf --kill gpg-agent 2>/dev/null || true; (exit $rc); t_cleanup' EXIT
gpg --batch --quiet --passphrase '' --quick-gen-key 'credkit test <test@example.invalid>' \
    default default never 2>/dev/null
KEY=$(gpg --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ { print $10; exit }')
[ -n "$KEY" ] || fail "no GnuPG key was generated"
pass init "$KEY" >/dev/null 2>&1

PASS_VALUE="pw-$RANDOM$RANDOM with space;\$(x)"
PASS_VALUE2="pw2-$RANDOM$RANDOM-rotated"
t_canary "$PASS_VALUE" "$PASS_VALUE2"
# a path with a space, ';', '$(...)' and quotes: a shell would run the touch
REF='team one/db;$(touch pwned) "q"'
printf '%s\nuser: bob\n' "$PASS_VALUE" | pass insert -m "$REF" >/dev/null 2>&1

cd "$T_ROOT"
run 0 S configure PASS_PW --pass "$REF"
assert_eq "$(argv_of pass)" "2
show
$REF" "pass got the path as one argument"
[ ! -e "$T_ROOT/pwned" ] || fail "the reference was run by a shell"
assert_contains "$(cat "$PI_CODING_AGENT_DIR/secrets.json")" '"PASS_PW": "pass:team one/db;$(touch pwned) \"q\""'
run 0 S get PASS_PW
assert_eq "$OUT" "$PASS_VALUE" "pass: the first line"
run 0 S list
assert_contains "$OUT" "PASS_PW                  pass      5m     ok"

# a missing entry: the manager and the entry named, pass's own words, the fix
run 1 S configure PASS_MISSING --pass 'team one/nope'
assert_contains "$ERR" "'PASS_MISSING': pass show 'team one/nope' exited with status 1: Error: team one/nope is not in the password store. (see the entries with 'pass ls')"
assert_contains "$ERR" "nothing was changed"
# an option-looking reference is refused before anything runs
rm -f "$ARGV_LOG/pass"
run 2 S configure PASS_DASH --pass '--clip=x'
assert_contains "$ERR" "the pass path '--clip=x' begins with '-': the manager would take it for an option"
[ ! -e "$ARGV_LOG/pass" ] || fail "pass ran for a refused reference"

# gopass reads the same store
run 0 S configure GOPASS_PW --gopass "$REF" --ttl 1h
assert_eq "$(argv_of gopass)" "2
show
$REF" "gopass got the path as one argument"
run 0 S get GOPASS_PW
assert_eq "$OUT" "$PASS_VALUE" "gopass: the first line"
run 1 S configure GOPASS_MISSING --gopass nope/x
assert_contains "$ERR" "'GOPASS_MISSING': gopass show 'nope/x' exited with status 1: "
assert_contains "$ERR" "nope/x"
assert_contains "$ERR" "(see the entries with 'gopass ls')"

# the TTL: within it the cached value, even after the store changed; after it the new value
run 0 S configure PASS_TTL --pass "$REF" --ttl 3s
run 0 S resolve --json PASS_TTL
exp=$(json_get "$OUT" 'j.secrets.PASS_TTL.expires_at')
printf '%s\n' "$PASS_VALUE2" | pass insert -m -f "$REF" >/dev/null 2>&1
run 0 S get PASS_TTL
assert_eq "$OUT" "$PASS_VALUE" "pass: the cached value within the TTL"
past() { [ "$(date +%s)" -ge "$1" ]; }
wait_until 10 "the TTL of PASS_TTL to run out" past "$exp"
run 0 S get PASS_TTL
assert_eq "$OUT" "$PASS_VALUE2" "pass: the new value after the TTL"

# the key's agent gone and the key unusable: gpg's words and the fix
gpgconf --kill gpg-agent
mv "$GNUPGHOME/private-keys-v1.d" "$GNUPGHOME/keys.away"
run 1 S resolve --no-cache PASS_PW
assert_contains "$ERR" "'PASS_PW': pass show '$REF' exited with status 2: gpg: decryption failed: No secret key"
assert_contains "$ERR" "gpg has no secret key for this entry"
mv "$GNUPGHOME/keys.away" "$GNUPGHOME/private-keys-v1.d"

# ---- KeePassXC -------------------------------------------------------------------------------
DB_PW="db-$RANDOM$RANDOM-password"
KP_VALUE="kp-$RANDOM$RANDOM;\$(rm -rf x) 'quoted'"
t_canary "$DB_PW" "$KP_VALUE" --held-by "$T_ROOT/db_password"
DB="$T_ROOT/vault db.kdbx"
printf '%s\n%s\n' "$DB_PW" "$DB_PW" | keepassxc-cli db-create -p "$DB" >/dev/null 2>&1
ENTRY='mail; $(id) "x"'
printf '%s\n%s\n%s\n' "$DB_PW" "$KP_VALUE" "$KP_VALUE" |
    keepassxc-cli add -p "$DB" "$ENTRY" >/dev/null 2>&1
# the database password: a recipe of its own (here a private file), named by --password-secret
printf '%s\n' "$DB_PW" >"$T_ROOT/db_password"
chmod 600 "$T_ROOT/db_password"
run 0 S configure KP_DB_PW --file "$T_ROOT/db_password"

run 0 S configure KP --keepassxc "$DB" "$ENTRY" --password-secret KP_DB_PW
assert_eq "$(argv_of keepassxc-cli)" "6
show
-s
-a
Password
$DB
$ENTRY" "keepassxc-cli got the database and the entry as one argument each, no password"
run 0 S get KP
assert_eq "$OUT" "$KP_VALUE" "keepassxc: the password"
json=$(cat "$PI_CODING_AGENT_DIR/secrets.json")
assert_contains "$json" '"keepassxc": "'"$DB"'"'
assert_contains "$json" '"password": "KP_DB_PW"'
run 0 S list
assert_contains "$OUT" "KP                       keepassxc 15m    ok"
# --entry, and the default password secret KEEPASSXC_PASSWORD (here from the environment)
KEEPASSXC_PASSWORD="$DB_PW" run 0 S configure KP2 --keepassxc "$DB" --entry "$ENTRY" --ttl 0
KEEPASSXC_PASSWORD="$DB_PW" run 0 S get KP2
assert_eq "$OUT" "$KP_VALUE"
# a missing entry, a wrong password (never quoted), no password at all
run 1 S configure KP_MISSING --keepassxc "$DB" nope --password-secret KP_DB_PW
assert_contains "$ERR" "'KP_MISSING': keepassxc-cli show '$DB' 'nope' exited with status 1: Could not find entry with path nope. (see the entries with 'keepassxc-cli ls DATABASE')"
KEEPASSXC_PASSWORD="wrong-$DB_PW" run 1 S get KP2
assert_contains "$ERR" "'KP2': keepassxc-cli show '$DB' '$ENTRY' exited with status 1: Error while reading the database: Invalid credentials were provided, please try again. (the database password is wrong"
assert_not_contains "$ERR" "wrong-"
run 1 S get KP2
assert_contains "$ERR" "'KP2': the database password: 'KEEPASSXC_PASSWORD' has no recipe and no environment variable of that name"
run 2 S configure KP3 --keepassxc "$DB"
assert_contains "$ERR" "--keepassxc needs the entry: --keepassxc DB ENTRY"

# ---- stand-ins for op, bw, vault, aws and gcloud ---------------------------------------------
# standin NAME BODY: a script that logs its argv like the wrappers, then runs BODY; value FILE
# prints a stored secret; key REF names the file a reference's secret is stored in
cat >"$T_ROOT/standin.sh" <<EOF
log() { { echo "\$#"; printf '%s\n' "\$@"; } >"$ARGV_LOG/\$STANDIN"; }
key() { printf '%s' "\$1" | sha256sum | cut -c1-16; }
usage() { echo "\$STANDIN stand-in: unexpected arguments: \$*" >&2; exit 2; }
DATA="$DATA"
EOF
standin() {
    { echo '#!/bin/bash'; echo "STANDIN=$1; . '$T_ROOT/standin.sh'; log \"\$@\""; cat; } >"$BIN/$1"
    chmod +x "$BIN/$1"
}
store() { printf '%s' "$3" >"$DATA/$1-$(printf '%s' "$2" | sha256sum | cut -c1-16)"; }

# 1Password: op read [--no-newline] <reference>; signed out without a session or a service
# account token
standin op <<'EOF'
[ $# = 3 ] && [ "$1" = read ] && [ "$2" = --no-newline ] || usage "$@"
if [ -z "${OP_SERVICE_ACCOUNT_TOKEN:-}" ]; then
    echo '[ERROR] 2026/01/01 00:00:00 You are not currently signed in. Please run `op signin --help` for instructions' >&2
    exit 1
fi
f="$DATA/op-$(key "$3")"
[ -f "$f" ] || { echo "[ERROR] 2026/01/01 00:00:00 could not read secret '$3': error resolving secret reference: \"item\" isn't an item in the vault. Specify the item with its UUID, name, or domain." >&2; exit 1; }
cat "$f"
EOF
# Bitwarden: bw get <object> <id> [--nointeraction]; locked without BW_SESSION
standin bw <<'EOF'
[ $# = 4 ] && [ "$1" = get ] && [ "$4" = --nointeraction ] || usage "$@"
case "$2" in password | username | uri | totp | notes) ;; *) usage "$@" ;; esac
[ -n "${BW_SESSION:-}" ] || { echo 'Vault is locked.' >&2; exit 1; }
f="$DATA/bw-$(key "$2 $3")"
[ -f "$f" ] || { echo 'Not found.' >&2; exit 1; }
cat "$f"
EOF
# Vault: vault kv get -field=<field> <path>; 403 without VAULT_TOKEN
standin vault <<'EOF'
[ $# = 4 ] && [ "$1" = kv ] && [ "$2" = get ] && [ "${3#-field=}" != "$3" ] || usage "$@"
[[ "$4" != -* ]] || usage "$@"
if [ -z "${VAULT_TOKEN:-}" ]; then
    printf 'Error making API request.\n\nURL: GET http://127.0.0.1:8200/v1/sys/internal/ui/mounts/%s\nCode: 403. Errors:\n\n* permission denied\n' "$4" >&2
    exit 2
fi
f="$DATA/vault-$(key "$4#${3#-field=}")"
[ -f "$f" ] || { echo "No value found at $4" >&2; exit 2; }
cat "$f"
EOF
# AWS: aws secretsmanager get-secret-value --secret-id <id> --query SecretString --output text
standin aws <<'EOF'
[ $# = 8 ] && [ "$1 $2 $3" = "secretsmanager get-secret-value --secret-id" ] &&
    [ "$5 $6 $7 $8" = "--query SecretString --output text" ] || usage "$@"
if [ -z "${AWS_ACCESS_KEY_ID:-}" ]; then
    printf '\nUnable to locate credentials. You can configure credentials by running "aws configure".\n' >&2
    exit 253
fi
f="$DATA/aws-$(key "$4")"
[ -f "$f" ] || { printf "\nAn error occurred (ResourceNotFoundException) when calling the GetSecretValue operation: Secrets Manager can't find the specified secret.\n" >&2; exit 254; }
cat "$f"; echo
EOF
# GCP: gcloud secrets versions access latest --secret=<name> [--project=<project>]
standin gcloud <<'EOF'
[ $# -ge 5 ] && [ $# -le 6 ] && [ "$1 $2 $3 $4" = "secrets versions access latest" ] &&
    [ "${5#--secret=}" != "$5" ] || usage "$@"
[ $# = 5 ] || [ "${6#--project=}" != "$6" ] || usage "$@"
if [ -z "${CLOUDSDK_AUTH_ACCESS_TOKEN:-}" ]; then
    printf 'ERROR: (gcloud.secrets.versions.access) You do not currently have an active account selected.\nPlease run:\n\n  $ gcloud auth login\n' >&2
    exit 1
fi
f="$DATA/gcloud-$(key "${6:-} ${5#--secret=}")"
[ -f "$f" ] || { echo "ERROR: (gcloud.secrets.versions.access) NOT_FOUND: Secret [projects/1/secrets/${5#--secret=}] not found or has no versions." >&2; exit 1; }
cat "$f"
EOF

OP_VALUE="op-$RANDOM$RANDOM \"q\" trailing space "
BW_VALUE="bw-$RANDOM$RANDOM-pw" BW_USER="bw-user-$RANDOM$RANDOM"
VAULT_VALUE="vault-$RANDOM$RANDOM" AWS_VALUE="aws-$RANDOM$RANDOM-p w" GCP_VALUE="gcp-$RANDOM$RANDOM"
t_canary "$OP_VALUE" "$BW_VALUE" "$BW_USER" "$VAULT_VALUE" "$AWS_VALUE" "$GCP_VALUE" --held-by "$DATA"
OP_REF='op://Private/Git Hub;$(x)/token'
store op "$OP_REF" "$OP_VALUE"
store bw "password github 'work'" "$BW_VALUE"
store bw "username github 'work'" "$BW_USER"
store vault 'secret/ci;x#token' "$VAULT_VALUE"
store aws 'prod/db' "{\"username\":\"app\",\"password\":\"$AWS_VALUE\"}"
store aws 'plain' "$AWS_VALUE"
store gcloud "--project=p-1 api-key" "$GCP_VALUE"

# signed out: the vendor's words and the fix, nothing saved
run 1 S configure OP_TOKEN --op "$OP_REF"
assert_contains "$ERR" "'OP_TOKEN': op read '$OP_REF' exited with status 1: [ERROR] 2026/01/01 00:00:00 You are not currently signed in."
assert_contains "$ERR" "(sign in with 'eval \$(op signin)', or set OP_SERVICE_ACCOUNT_TOKEN)"
export OP_SERVICE_ACCOUNT_TOKEN=ops_x
run 0 S configure OP_TOKEN --op "$OP_REF"
assert_eq "$(argv_of op)" "3
read
--no-newline
$OP_REF"
assert_contains "$(cat "$PI_CODING_AGENT_DIR/secrets.json")" "\"OP_TOKEN\": \"op:$OP_REF\""
run 0 S get -n OP_TOKEN
assert_eq "$OUT" "$OP_VALUE" "op: the value exactly, trailing blanks kept"
run 0 S list
assert_contains "$OUT" "OP_TOKEN                 op        1h     ok"
run 1 S configure OP_MISSING --op op://Private/nope/token
assert_contains "$ERR" "'OP_MISSING': op read 'op://Private/nope/token' exited with status 1: "
assert_contains "$ERR" "isn't an item"
run 2 S configure OP_BAD --op Private/x/y
assert_contains "$ERR" "does not begin with op://"

run 1 S configure BW_PW --bw "github 'work'"
assert_contains "$ERR" "'BW_PW': bw get password 'github 'work'' exited with status 1: Vault is locked. (run 'bw unlock' and export the BW_SESSION it prints where secrets runs)"
export BW_SESSION=session
run 0 S configure BW_PW --bw "github 'work'"
assert_eq "$(argv_of bw)" "4
get
password
github 'work'
--nointeraction"
run 0 S get BW_PW
assert_eq "$OUT" "$BW_VALUE"
run 0 S configure BW_USER --bw "github 'work'" --field username
run 0 S get BW_USER
assert_eq "$OUT" "$BW_USER"
assert_contains "$(cat "$PI_CODING_AGENT_DIR/secrets.json")" '"field": "username"'
run 1 S configure BW_MISSING --bw nope
assert_contains "$ERR" "'BW_MISSING': bw get password 'nope' exited with status 1: Not found. (check the item: 'bw list items --search ITEM' shows what exists)"
run 2 S configure BW_DASH --bw --raw
assert_contains "$ERR" "begins with '-'"

run 1 S configure VAULT_TOKEN_X --vault 'secret/ci;x#token'
assert_contains "$ERR" "'VAULT_TOKEN_X': vault kv get 'secret/ci;x#token' exited with status 2: Error making API request. (log in with 'vault login' or set VAULT_TOKEN, and check"
export VAULT_TOKEN=hvs.x
run 0 S configure VAULT_TOKEN_X --vault 'secret/ci;x#token'
assert_eq "$(argv_of vault)" "4
kv
get
-field=token
secret/ci;x"
run 0 S get VAULT_TOKEN_X
assert_eq "$OUT" "$VAULT_VALUE"
run 1 S configure VAULT_MISSING --vault 'secret/nope#token'
assert_contains "$ERR" "exited with status 2: No value found at secret/nope (check the path: 'vault kv list' shows what exists)"
run 2 S configure VAULT_NOFIELD --vault 'secret/x'
assert_contains "$ERR" "must be PATH#FIELD"

run 1 S configure AWS_DB --aws prod/db --field password
assert_contains "$ERR" "exited with status 253: Unable to locate credentials."
assert_contains "$ERR" "(set up credentials with 'aws configure', or 'aws sso login' for AWS SSO)"
export AWS_ACCESS_KEY_ID=AKIAX
run 0 S configure AWS_DB --aws prod/db --field password
assert_eq "$(argv_of aws)" "8
secretsmanager
get-secret-value
--secret-id
prod/db
--query
SecretString
--output
text"
run 0 S get AWS_DB
assert_eq "$OUT" "$AWS_VALUE" "aws: a key of a JSON secret"
run 0 S configure AWS_PLAIN --aws plain
run 0 S get AWS_PLAIN
assert_eq "$OUT" "$AWS_VALUE" "aws: the SecretString, minus the newline of text output"
run 1 S configure AWS_NOKEY --aws prod/db --field nope
assert_contains "$ERR" "'AWS_NOKEY': the AWS secret 'prod/db' has no field 'nope'"
run 1 S configure AWS_MISSING --aws prod/nope
assert_contains "$ERR" "ResourceNotFoundException"
assert_contains "$ERR" "(check the secret id and the region, AWS_REGION)"

run 1 S configure GCP_KEY --gcloud api-key --project p-1
assert_contains "$ERR" "You do not currently have an active account selected. (sign in with 'gcloud auth login')"
export CLOUDSDK_AUTH_ACCESS_TOKEN=ya29.x
run 0 S configure GCP_KEY --gcloud api-key --project p-1
assert_eq "$(argv_of gcloud)" "6
secrets
versions
access
latest
--secret=api-key
--project=p-1"
run 0 S get GCP_KEY
assert_eq "$OUT" "$GCP_VALUE"
run 1 S configure GCP_MISSING --gcloud nope
assert_contains "$ERR" "NOT_FOUND: Secret [projects/1/secrets/nope] not found or has no versions. (check the secret's name and the project"
run 0 S list
assert_contains "$OUT" "GCP_KEY                  gcloud    15m    ok"
assert_contains "$OUT" "VAULT_TOKEN_X            vault     15m    ok"
assert_contains "$OUT" "BW_PW                    bw        1h     ok"

# the TTL of a stand-in's value: the cached value until it runs out
run 0 S configure OP_SHORT --op "$OP_REF" --ttl 2s
run 0 S resolve --json OP_SHORT
exp=$(json_get "$OUT" 'j.secrets.OP_SHORT.expires_at')
store op "$OP_REF" "$OP_VALUE-new"
t_canary "$OP_VALUE-new"
run 0 S get -n OP_SHORT
assert_eq "$OUT" "$OP_VALUE" "op: the cached value within the TTL"
wait_until 10 "the TTL of OP_SHORT to run out" past "$exp"
run 0 S get -n OP_SHORT
assert_eq "$OUT" "$OP_VALUE-new" "op: the new value after the TTL"

# not installed: the program named, and where it comes from (past the cache, which would answer)
# (a PATH with nothing on it: this machine may have the real CLIs)
mkdir "$T_ROOT/empty"
run 1 env PATH="$T_ROOT/empty" "$SECRETS_BIN" resolve --no-cache GCP_KEY
assert_contains "$ERR" "'GCP_KEY': gcloud is not installed (or not on PATH): install the Google Cloud CLI"
run 1 env PATH="$T_ROOT/empty" "$SECRETS_BIN" resolve --no-cache PASS_PW
assert_contains "$ERR" "'PASS_PW': pass is not installed (or not on PATH): install the Debian package 'pass'"
