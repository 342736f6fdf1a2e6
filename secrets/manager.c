/* manager.c - the secret managers' command lines, answers and errors */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "credkit/duration.h"
#include "credkit/json.h"
#include "credkit/util.h"

#include "manager.h"

#define STDERR_QUOTE_MAX 300

/* Known words of a manager's standard error, and what to do about them. */
struct manager_hint {
    const char *needle; /* matched without regard to case */
    const char *fix;
};

struct manager {
    enum recipe_kind kind;
    const char *program;
    const char *verb;    /* for messages: "pass show" */
    const char *install; /* where the program comes from */
    bool first_line;     /* the value is the first line of the output */
    int (*argv)(const struct recipe *r, struct strv *sv);
    const struct manager_hint *hints; /* ends with {NULL} */
};

static int push_all(struct strv *sv, const char *const *args)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && args[i]; i++)
        r = strv_push(sv, args[i]);
    return r;
}

static int argv_op(const struct recipe *r, struct strv *sv)
{
    /* --no-newline: the value exactly as stored */
    return push_all(sv, (const char *const[]){"op", "read", "--no-newline", r->arg, NULL});
}

static int argv_bw(const struct recipe *r, struct strv *sv)
{
    /* --nointeraction: a locked vault is an error, never a prompt nobody sees */
    return push_all(sv, (const char *const[]){"bw", "get", r->field ? r->field : "password", r->arg,
                                              "--nointeraction", NULL});
}

static int argv_pass(const struct recipe *r, struct strv *sv)
{
    return push_all(sv, (const char *const[]){"pass", "show", r->arg, NULL});
}

static int argv_gopass(const struct recipe *r, struct strv *sv)
{
    /* Debian's gopass has no -o; the first line is the password in every gopass */
    return push_all(sv, (const char *const[]){"gopass", "show", r->arg, NULL});
}

static int argv_keepassxc(const struct recipe *r, struct strv *sv)
{
    /* not -q: it would silence the reason a database does not open, too; the password goes
     * on stdin (resolve.c), the prompt on stderr is skipped when quoting */
    return push_all(sv, (const char *const[]){"keepassxc-cli", "show", "-s", "-a", "Password",
                                              r->arg, r->entry, NULL});
}

static int argv_vault(const struct recipe *r, struct strv *sv)
{
    const char *hash = strrchr(r->arg, '#'); /* recipe.c checked there is one */
    char *path = strndup(r->arg, (size_t)(hash - r->arg));
    int rc = push_all(sv, (const char *const[]){"vault", "kv", "get", NULL});
    if (rc >= 0)
        rc = strv_pushf(sv, "-field=%s", hash + 1);
    if (rc >= 0)
        rc = strv_push_take(sv, path);
    else
        free(path);
    return rc;
}

static int argv_aws(const struct recipe *r, struct strv *sv)
{
    return push_all(sv, (const char *const[]){"aws", "secretsmanager", "get-secret-value",
                                              "--secret-id", r->arg, "--query", "SecretString",
                                              "--output", "text", NULL});
}

static int argv_gcloud(const struct recipe *r, struct strv *sv)
{
    int rc = push_all(
        sv, (const char *const[]){"gcloud", "secrets", "versions", "access", "latest", NULL});
    if (rc >= 0)
        rc = strv_pushf(sv, "--secret=%s", r->arg);
    if (rc >= 0 && r->project)
        rc = strv_pushf(sv, "--project=%s", r->project);
    return rc;
}

static const struct manager_hint op_hints[] = {
    {"not currently signed in",
     "sign in with 'eval $(op signin)', or set OP_SERVICE_ACCOUNT_TOKEN"},
    {"account is not signed in",
     "sign in with 'eval $(op signin)', or set OP_SERVICE_ACCOUNT_TOKEN"},
    {"no accounts configured", "add your account with 'op account add', then 'eval $(op signin)'"},
    {"authorization prompt dismissed", "approve the prompt of the 1Password app, then try again"},
    {"isn't an item",
     "check the reference: 'op item list' and 'op item get ITEM' show what exists"},
    {"isn't a vault", "check the vault in the reference: 'op vault list' shows them"},
    {"isn't a field", "check the field: 'op item get ITEM' shows the item's fields"},
    {NULL, NULL},
};

static const struct manager_hint bw_hints[] = {
    {"not logged in", "log in with 'bw login', then 'bw unlock'"},
    {"vault is locked", "run 'bw unlock' and export the BW_SESSION it prints where secrets runs"},
    {"more than one result", "use the item's id: 'bw list items --search ITEM' shows them"},
    {"not found", "check the item: 'bw list items --search ITEM' shows what exists"},
    {NULL, NULL},
};

static const struct manager_hint pass_hints[] = {
    {"is not in the password store", "see the entries with 'pass ls'"},
    {"could not find password", "see the entries with 'gopass ls'"},
    {"pass init", "create the store with 'pass init GPG-ID'"},
    {"inappropriate ioctl", "the gpg agent needs the key's passphrase and cannot ask here: run "
                            "'pass show PATH' once in a terminal (the agent then keeps it)"},
    {"pinentry", "the gpg agent needs the key's passphrase and cannot ask here: run 'pass show "
                 "PATH' once in a terminal (the agent then keeps it)"},
    {"no secret key", "gpg has no secret key for this entry: is this the right GNUPGHOME?"},
    {"decryption failed", "gpg could not decrypt it: is the secret key here and the gpg agent "
                          "unlocked?"},
    {NULL, NULL},
};

static const struct manager_hint keepassxc_hints[] = {
    {"invalid credentials", "the database password is wrong: check the secret named in "
                            "\"password\", KEEPASSXC_PASSWORD by default"},
    {"could not find entry", "see the entries with 'keepassxc-cli ls DATABASE'"},
    {"failed to open database", "check the database path"},
    {NULL, NULL},
};

static const struct manager_hint vault_hints[] = {
    {"missing client token", "log in with 'vault login', or set VAULT_TOKEN"},
    {"permission denied", "log in with 'vault login' or set VAULT_TOKEN, and check that the "
                          "token's policy may read this path"},
    {"no value found", "check the path: 'vault kv list' shows what exists"},
    {"not present in secret", "check the field: 'vault kv get PATH' shows the fields"},
    {"connection refused", "check VAULT_ADDR: no Vault server answers there"},
    {NULL, NULL},
};

static const struct manager_hint aws_hints[] = {
    {"unable to locate credentials", "set up credentials with 'aws configure', or 'aws sso "
                                     "login' for AWS SSO"},
    {"token has expired", "sign in again with 'aws sso login'"},
    {"expiredtoken", "sign in again with 'aws sso login'"},
    {"resourcenotfoundexception", "check the secret id and the region, AWS_REGION"},
    {"accessdeniedexception", "the identity may not read this secret: check its IAM policy"},
    {NULL, NULL},
};

static const struct manager_hint gcloud_hints[] = {
    {"do not currently have an active account", "sign in with 'gcloud auth login'"},
    {"reauthentication", "sign in again with 'gcloud auth login'"},
    {"not_found", "check the secret's name and the project, \"project\""},
    {"permission_denied", "the account needs the role roles/secretmanager.secretAccessor on "
                          "the secret"},
    {NULL, NULL},
};

static const struct manager managers[] = {
    {RECIPE_OP, "op", "op read",
     "the 1Password CLI 'op' (https://developer.1password.com/docs/cli/get-started/)", false,
     argv_op, op_hints},
    {RECIPE_BW, "bw", "bw get",
     "the Bitwarden CLI 'bw' (https://bitwarden.com/help/cli/, or npm install -g "
     "@bitwarden/cli)",
     false, argv_bw, bw_hints},
    {RECIPE_PASS, "pass", "pass show", "the Debian package 'pass'", true, argv_pass, pass_hints},
    {RECIPE_GOPASS, "gopass", "gopass show", "the Debian package 'gopass'", true, argv_gopass,
     pass_hints},
    {RECIPE_KEEPASSXC, "keepassxc-cli", "keepassxc-cli show",
     "the Debian package 'keepassxc', which ships keepassxc-cli", true, argv_keepassxc,
     keepassxc_hints},
    {RECIPE_VAULT, "vault", "vault kv get",
     "HashiCorp's 'vault' (https://developer.hashicorp.com/vault/install)", false, argv_vault,
     vault_hints},
    {RECIPE_AWS, "aws", "aws secretsmanager get-secret-value",
     "the AWS CLI (the Debian package 'awscli', or https://aws.amazon.com/cli/)", false, argv_aws,
     aws_hints},
    {RECIPE_GCLOUD, "gcloud", "gcloud secrets versions access",
     "the Google Cloud CLI (https://cloud.google.com/sdk/docs/install)", false, argv_gcloud,
     gcloud_hints},
};

const struct manager *manager_of(enum recipe_kind k)
{
    for (size_t i = 0; i < ELEMENTSOF(managers); i++)
        if (managers[i].kind == k)
            return &managers[i];
    return NULL;
}

const char *manager_program(const struct manager *m)
{
    return m->program;
}

int manager_argv(const struct manager *m, const struct recipe *r, struct strv *ret)
{
    return m->argv(r, ret);
}

/* "pass show 'a/b'", "keepassxc-cli show '/db.kdbx' 'entry'": what ran, for messages. */
static void describe(const struct manager *m, const struct recipe *r, char *out, size_t size)
{
    if (r->entry)
        (void)snprintf(out, size, "%s '%s' '%s'", m->verb, r->arg, r->entry);
    else if (r->kind == RECIPE_BW)
        (void)snprintf(out, size, "%s %s '%s'", m->verb, r->field ? r->field : "password", r->arg);
    else
        (void)snprintf(out, size, "%s '%s'", m->verb, r->arg);
}

/* The AWS secret's key r->field, when the secret is a JSON object (as the console writes
 * key/value secrets). */
static int aws_field(const struct recipe *r, const char *text, size_t len, struct buf *value,
                     struct err *e)
{
    struct json_object *o = NULL, *v = NULL;
    int rc = json_parse(text, len, len, &o, NULL);
    if (rc < 0 || !json_object_is_type(o, json_type_object))
        rc = err_set(e, -EBADMSG,
                     "'%s': the AWS secret '%s' is not a JSON object, so it has no field '%s' "
                     "(leave \"field\" out to use the whole secret)",
                     r->name, r->arg, r->field);
    else if (!json_object_object_get_ex(o, r->field, &v))
        rc = err_set(e, -ENOENT, "'%s': the AWS secret '%s' has no field '%s'", r->name, r->arg,
                     r->field);
    else if (!json_object_is_type(v, json_type_string))
        rc = err_set(e, -EBADMSG, "'%s': the field '%s' of the AWS secret '%s' is not a string",
                     r->name, r->field, r->arg);
    else
        rc = buf_append(value, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    json_object_put(o);
    return rc;
}

int manager_value(const struct manager *m, const struct recipe *r, const struct buf *out,
                  struct buf *value, struct err *e)
{
    const char *s = out->data ? out->data : "";
    size_t n = out->len;
    char what[512];
    int rc;

    if (m->first_line) {
        size_t i = 0;
        while (i < n && s[i] != '\n')
            i++;
        n = i;
    } else if (n && s[n - 1] == '\n') {
        n--;
    }
    if (n && s[n - 1] == '\r')
        n--;
    if (r->kind == RECIPE_AWS && r->field)
        rc = aws_field(r, s, n, value, e);
    else
        rc = buf_append(value, s, n);
    if (rc < 0)
        return rc;
    if (value->len == 0) {
        describe(m, r, what, sizeof(what));
        return err_set(e, -ENODATA, "'%s': %s printed an empty value", r->name, what);
    }
    return 0;
}

/* The first line of stderr worth quoting: not blank, not a password prompt. */
static void quote_line(const struct buf *b, char *out, size_t size)
{
    const char *s = buf_str(b);
    out[0] = 0;
    while (*s) {
        s += strspn(s, " \t\r\n");
        size_t n = strcspn(s, "\r\n");
        if (n && strncasecmp(s, "enter password", 14) != 0) {
            if (n >= size)
                n = size - 1;
            memcpy(out, s, n);
            out[n] = 0;
            return;
        }
        s += n;
    }
}

/* The fix for the first known words anywhere in stderr (bounded by child_run): a manager may
 * put the reason below a generic first line (Vault's "Error making API request."). */
static const char *find_fix(const struct manager *m, const struct buf *err)
{
    const char *text = buf_str(err);
    for (const struct manager_hint *h = m->hints; text[0] && h->needle; h++)
        if (strcasestr(text, h->needle))
            return h->fix;
    return NULL;
}

int manager_failed(const struct manager *m, const struct recipe *r, const struct child_result *res,
                   int64_t timeout_ms, struct err *e)
{
    char what[512], line[STDERR_QUOTE_MAX], how[64], d[DURATION_BUF_SIZE];
    describe(m, r, what, sizeof(what));
    if (res->timed_out)
        return err_set(e, -ETIMEDOUT,
                       "'%s': %s did not finish within %s and was killed (is it waiting for an "
                       "unlock? raise \"timeout\" in the recipe if it needs longer)",
                       r->name, what, duration_format(timeout_ms, d, sizeof(d)));
    quote_line(&res->err, line, sizeof(line));
    if (res->signal)
        (void)snprintf(how, sizeof(how), "was killed by signal %d", res->signal);
    else
        (void)snprintf(how, sizeof(how), "exited with status %d", res->exit_code);
    const char *fix = find_fix(m, &res->err);
    return err_set(e, -EIO, "'%s': %s %s%s%s%s%s%s", r->name, what, how, line[0] ? ": " : "", line,
                   fix ? " (" : "", fix ? fix : "", fix ? ")" : "");
}

int manager_not_started(const struct manager *m, const struct recipe *r, int start_error,
                        struct err *e)
{
    if (start_error == -ENOENT)
        return err_set(e, -ENOENT, "'%s': %s is not installed (or not on PATH): install %s",
                       r->name, m->program, m->install);
    return err_prefix(e, "'%s'", r->name);
}
