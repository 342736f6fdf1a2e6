/* recipe.c - parsing and writing secrets.json entries */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "credkit/duration.h"
#include "credkit/json.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/suggest.h"
#include "credkit/util.h"

#include "recipe.h"

static const char *const kind_names[] = {
    [RECIPE_ENV] = "env",         [RECIPE_KEYCHAIN] = "keychain",
    [RECIPE_COMMAND] = "command", [RECIPE_FILE] = "file",
    [RECIPE_LITERAL] = "literal", [RECIPE_OP] = "op",
    [RECIPE_BW] = "bw",           [RECIPE_PASS] = "pass",
    [RECIPE_GOPASS] = "gopass",   [RECIPE_KEEPASSXC] = "keepassxc",
    [RECIPE_VAULT] = "vault",     [RECIPE_AWS] = "aws",
    [RECIPE_GCLOUD] = "gcloud",
};

/* The TTL a manager's value is reused for when the recipe names none. A manager that may
 * prompt (1Password's app integration, Bitwarden's session) or goes to the network (Vault, the
 * clouds, which also bill per request) is asked less often than a local store behind an agent
 * that already caches its passphrase (pass, gopass). */
static const int64_t manager_ttl[] = {
    [RECIPE_OP] = INT64_C(60) * 60 * 1000,        [RECIPE_BW] = INT64_C(60) * 60 * 1000,
    [RECIPE_PASS] = INT64_C(5) * 60 * 1000,       [RECIPE_GOPASS] = INT64_C(5) * 60 * 1000,
    [RECIPE_KEEPASSXC] = INT64_C(15) * 60 * 1000, [RECIPE_VAULT] = INT64_C(15) * 60 * 1000,
    [RECIPE_AWS] = INT64_C(15) * 60 * 1000,       [RECIPE_GCLOUD] = INT64_C(15) * 60 * 1000,
};

int64_t recipe_ttl_default(enum recipe_kind k)
{
    if (k == RECIPE_COMMAND)
        return RECIPE_COMMAND_TTL_DEFAULT;
    if (RECIPE_IS_MANAGER(k) && (size_t)k < ELEMENTSOF(manager_ttl))
        return manager_ttl[k];
    return RECIPE_TTL_NONE;
}

int64_t recipe_timeout_default(enum recipe_kind k)
{
    return RECIPE_IS_MANAGER(k) ? RECIPE_MANAGER_TIMEOUT_DEFAULT : RECIPE_COMMAND_TIMEOUT_DEFAULT;
}

const char *recipe_kind_str(enum recipe_kind k)
{
    return (size_t)k < ELEMENTSOF(kind_names) ? kind_names[k] : "unknown";
}

void recipe_free(struct recipe *r)
{
    if (!r)
        return;
    free(r->name);
    secure_free(r->arg);
    free(r->entry);
    free(r->password);
    free(r->field);
    free(r->project);
    free(r->description);
    free(r);
}

/* "~/x" -> "$HOME/x" for file recipes, so a recipe can be shared between machines. */
static char *expand_home(const char *p)
{
    if (strncmp(p, "~/", 2) != 0)
        return strdup(p);
    char *home = NULL;
    if (path_home(&home) < 0)
        return strdup(p);
    char *full = path_join(home, p + 2);
    free(home);
    return full;
}

/* Kinds whose argument is a path, "~/" expanded when read. */
static bool has_path(enum recipe_kind k)
{
    return k == RECIPE_FILE || k == RECIPE_KEEPASSXC;
}

int recipe_new(const char *name, enum recipe_kind kind, const char *arg, struct recipe **ret)
{
    struct recipe *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->name = strdup(name);
    r->arg = has_path(kind) ? expand_home(arg) : strdup(arg);
    if (!r->name || !r->arg) {
        recipe_free(r);
        return -ENOMEM;
    }
    r->kind = kind;
    r->ttl_ms = recipe_ttl_default(kind);
    r->timeout_ms = recipe_timeout_default(kind);
    *ret = r;
    return 0;
}

static int check_arg(const char *name, enum recipe_kind kind, const char *arg, struct err *e)
{
    switch (kind) {
    case RECIPE_ENV:
        if (!name_is_valid(arg))
            return err_set(e, -EINVAL,
                           "'%s': '%s' is not a valid environment variable name "
                           "(letters, digits and '_', not starting with a digit)",
                           name, arg);
        break;
    case RECIPE_COMMAND:
        if (arg[strspn(arg, " \t")] == 0)
            return err_set(e, -EINVAL, "'%s': the command is empty", name);
        break;
    case RECIPE_KEYCHAIN:
        if (!*arg)
            return err_set(e, -EINVAL, "'%s': the keychain label is empty", name);
        if (strchr(arg, '\n'))
            return err_set(e, -EINVAL, "'%s': the keychain label contains a newline", name);
        break;
    case RECIPE_FILE:
        if (!*arg)
            return err_set(e, -EINVAL, "'%s': the file path is empty", name);
        if (arg[0] != '/' && strncmp(arg, "~/", 2) != 0)
            return err_set(e, -EINVAL,
                           "'%s': the file path '%s' is relative: use an absolute path or ~/", name,
                           arg);
        break;
    case RECIPE_LITERAL:
        if (!*arg)
            return err_set(e, -EINVAL, "'%s': the literal value is empty", name);
        break;
    default:
        /* a manager's reference: checked with its options, recipe_check_options() */
        break;
    }
    return 0;
}

/* What a manager's reference is called in messages. */
static const char *const ref_words[] = {
    [RECIPE_OP] = "1Password reference",
    [RECIPE_BW] = "Bitwarden item",
    [RECIPE_PASS] = "pass path",
    [RECIPE_GOPASS] = "gopass path",
    [RECIPE_KEEPASSXC] = "KeePassXC database",
    [RECIPE_VAULT] = "Vault path",
    [RECIPE_AWS] = "AWS secret id",
    [RECIPE_GCLOUD] = "GCP secret name",
};

/* A reference handed to a manager as one argument: never empty, never an option. */
static int check_ref(const char *name, const char *word, const char *ref, struct err *e)
{
    if (!ref[0])
        return err_set(e, -EINVAL, "'%s': the %s is empty", name, word);
    if (strpbrk(ref, "\n\r"))
        return err_set(e, -EINVAL, "'%s': the %s contains a line break", name, word);
    if (ref[0] == '-')
        return err_set(e, -EINVAL,
                       "'%s': the %s '%s' begins with '-': the manager would take it for an "
                       "option",
                       name, word, ref);
    return 0;
}

/* A key that only some kinds take, given to another. */
static int option_misplaced(const struct recipe *r, const char *key, const char *goes_with,
                            struct err *e)
{
    return err_set(e, -EINVAL, "'%s': \"%s\" goes with %s, not with \"%s\"", r->name, key,
                   goes_with, recipe_kind_str(r->kind));
}

int recipe_check_options(const struct recipe *r, struct err *e)
{
    static const char *const bw_fields[] = {"password", "username", "uri", "totp", "notes"};
    enum recipe_kind k = r->kind;
    int rc = 0;

    if (r->entry && k != RECIPE_KEEPASSXC)
        return option_misplaced(r, "entry", "\"keepassxc\"", e);
    if (r->password && k != RECIPE_KEEPASSXC)
        return option_misplaced(r, "password", "\"keepassxc\"", e);
    if (r->field && k != RECIPE_BW && k != RECIPE_AWS)
        return option_misplaced(r, "field", "\"bw\" and \"aws\"", e);
    if (r->project && k != RECIPE_GCLOUD)
        return option_misplaced(r, "project", "\"gcloud\"", e);
    if (!RECIPE_IS_MANAGER(k))
        return 0;
    rc = check_ref(r->name, ref_words[k], r->arg, e);
    if (rc < 0)
        return rc;
    switch (k) {
    case RECIPE_OP:
        if (strncmp(r->arg, "op://", 5) != 0)
            return err_set(e, -EINVAL,
                           "'%s': the 1Password reference '%s' does not begin with op:// (copy it "
                           "with 'Copy Secret Reference' in 1Password, or 'op item get ITEM "
                           "--format json')",
                           r->name, r->arg);
        break;
    case RECIPE_VAULT: {
        const char *hash = strrchr(r->arg, '#');
        if (!hash || hash == r->arg || !hash[1])
            return err_set(e, -EINVAL,
                           "'%s': the Vault reference '%s' must be PATH#FIELD (e.g. "
                           "secret/github#token)",
                           r->name, r->arg);
        break;
    }
    case RECIPE_KEEPASSXC:
        if (r->arg[0] != '/' && strncmp(r->arg, "~/", 2) != 0)
            return err_set(e, -EINVAL,
                           "'%s': the KeePassXC database '%s' is relative: use an absolute path "
                           "or ~/",
                           r->name, r->arg);
        if (!r->entry)
            return err_set(e, -EINVAL, "'%s': \"keepassxc\" needs \"entry\", the entry to read",
                           r->name);
        rc = check_ref(r->name, "KeePassXC entry", r->entry, e);
        if (rc < 0)
            return rc;
        if (r->password && !name_is_valid(r->password))
            return err_set(e, -EINVAL,
                           "'%s': \"password\" must name a secret (letters, digits and '_', not "
                           "starting with a digit), not '%s'",
                           r->name, r->password);
        if (strcmp(r->password ? r->password : RECIPE_KEEPASSXC_PASSWORD_DEFAULT, r->name) == 0)
            return err_set(e, -EINVAL,
                           "'%s': the database password cannot be the secret itself: name another "
                           "secret in \"password\"",
                           r->name);
        break;
    case RECIPE_BW:
        if (r->field) {
            size_t i;
            for (i = 0; i < ELEMENTSOF(bw_fields); i++)
                if (strcmp(r->field, bw_fields[i]) == 0)
                    break;
            if (i == ELEMENTSOF(bw_fields))
                return err_set(e, -EINVAL,
                               "'%s': \"field\" of a Bitwarden item is one of password, "
                               "username, uri, totp, notes, not '%s'",
                               r->name, r->field);
        }
        break;
    case RECIPE_AWS:
        if (r->field && !r->field[0])
            return err_set(e, -EINVAL, "'%s': \"field\" is empty", r->name);
        break;
    case RECIPE_GCLOUD:
        if (r->project)
            rc = check_ref(r->name, "GCP project", r->project, e);
        break;
    default:
        break;
    }
    return rc;
}

static int parse_string(const char *name, const char *s, struct recipe *r, struct err *e)
{
    static const struct {
        const char *prefix;
        enum recipe_kind kind;
    } prefixes[] = {
        {"env:", RECIPE_ENV},
        {"keychain:", RECIPE_KEYCHAIN},
        {"keyring:", RECIPE_KEYCHAIN},
        {"file:", RECIPE_FILE},
        {"literal:", RECIPE_LITERAL},
        {"command:", RECIPE_COMMAND},
        {"op:", RECIPE_OP},
        {"bw:", RECIPE_BW},
        {"pass:", RECIPE_PASS},
        {"gopass:", RECIPE_GOPASS},
        {"keepassxc:", RECIPE_KEEPASSXC},
        {"vault:", RECIPE_VAULT},
        {"aws:", RECIPE_AWS},
        {"gcloud:", RECIPE_GCLOUD},
    };
    const char *arg = NULL;

    if (s[0] == '!') {
        r->kind = RECIPE_COMMAND;
        arg = s + 1;
    }
    for (size_t i = 0; !arg && i < ELEMENTSOF(prefixes); i++) {
        size_t n = strlen(prefixes[i].prefix);
        if (strncmp(s, prefixes[i].prefix, n) == 0) {
            r->kind = prefixes[i].kind;
            arg = s + n;
        }
    }
    if (!arg) {
        /* the older pi format: a bare variable name, else the value itself */
        r->bare = true;
        r->kind = name_is_valid(s) ? RECIPE_ENV : RECIPE_LITERAL;
        arg = s;
    }
    if (r->kind == RECIPE_COMMAND)
        arg += strspn(arg, " \t");
    r->arg = has_path(r->kind) ? expand_home(arg) : strdup(arg);
    if (!r->arg)
        return -ENOMEM;
    return check_arg(name, r->kind, r->kind == RECIPE_FILE ? arg : r->arg, e);
}

static int parse_duration_value(const char *name, const char *key, struct json_object *v,
                                int64_t *ret, struct err *e)
{
    int64_t ms;
    if (json_object_is_type(v, json_type_int)) {
        int64_t sec = json_object_get_int64(v);
        if (sec < 0 || sec > INT64_MAX / 1000)
            return err_set(e, -EINVAL, "'%s': \"%s\" must be a non-negative duration", name, key);
        ms = sec * 1000;
    } else if (json_object_is_type(v, json_type_string)) {
        if (duration_parse(json_object_get_string(v), &ms) < 0)
            return err_set(e, -EINVAL,
                           "'%s': \"%s\" is not a duration: '%s' (use e.g. \"30s\", \"5m\", "
                           "\"8h\", \"1h30m\" or \"0\")",
                           name, key, json_object_get_string(v));
    } else {
        return err_set(e, -EINVAL, "'%s': \"%s\" must be a string like \"5m\", not %s", name, key,
                       json_type_desc(json_object_get_type(v)));
    }
    *ret = ms;
    return 0;
}

/* A key of a recipe object that is none: the close keys when there are. -EINVAL. */
static int unknown_key(const char *name, const char *key, struct err *e)
{
    static const char *const keys[] = {"command", "keychain", "env",    "file",    "literal",
                                       "op",      "bw",       "pass",   "gopass",  "keepassxc",
                                       "vault",   "aws",      "gcloud", "entry",   "password",
                                       "field",   "project",  "ttl",    "timeout", "description"};
    struct suggest s;
    struct buf close;
    suggest_init(&s, key);
    for (size_t i = 0; i < ELEMENTSOF(keys); i++)
        suggest_add(&s, keys[i]);
    buf_init(&close, 1024);
    if (suggest_append(&s, NULL, &close) < 0)
        buf_reset(&close);
    suggest_release(&s);
    int r = err_set(e, -EINVAL,
                    "'%s': unknown key \"%s\"%s (expected one of command, keychain, env, file, "
                    "literal, op, bw, pass, gopass, keepassxc, vault, aws, gcloud, and optionally "
                    "entry, password, field, project, ttl, timeout, description)",
                    name, key, buf_str(&close));
    buf_release(&close);
    return r;
}

/* The slot of a manager option key ("entry" ...) in r, NULL for another key. */
static char **string_option(struct recipe *r, const char *key, const char *const *keys, size_t n)
{
    char **slots[] = {&r->entry, &r->password, &r->field, &r->project};
    for (size_t i = 0; i < n && i < ELEMENTSOF(slots); i++)
        if (strcmp(key, keys[i]) == 0)
            return slots[i];
    return NULL;
}

static int parse_object(const char *name, struct json_object *v, struct recipe *r, struct err *e)
{
    static const struct {
        const char *key;
        enum recipe_kind kind;
    } kinds[] = {
        {"command", RECIPE_COMMAND},
        {"keychain", RECIPE_KEYCHAIN},
        {"keyring", RECIPE_KEYCHAIN},
        {"env", RECIPE_ENV},
        {"file", RECIPE_FILE},
        {"literal", RECIPE_LITERAL},
        {"op", RECIPE_OP},
        {"bw", RECIPE_BW},
        {"pass", RECIPE_PASS},
        {"gopass", RECIPE_GOPASS},
        {"keepassxc", RECIPE_KEEPASSXC},
        {"vault", RECIPE_VAULT},
        {"aws", RECIPE_AWS},
        {"gcloud", RECIPE_GCLOUD},
    };
    static const char *const option_keys[] = {"entry", "password", "field", "project"};
    const char *kind_key = NULL;
    bool have_ttl = false;
    int ret;

    json_object_object_foreach(v, key, val)
    {
        char **slot = NULL;
        size_t i;
        for (i = 0; i < ELEMENTSOF(kinds); i++)
            if (strcmp(key, kinds[i].key) == 0)
                break;
        if (i < ELEMENTSOF(kinds)) {
            if (kind_key)
                return err_set(e, -EINVAL, "'%s': both \"%s\" and \"%s\" are given: keep one", name,
                               kind_key, key);
            if (!json_object_is_type(val, json_type_string))
                return err_set(e, -EINVAL, "'%s': \"%s\" must be a string, not %s", name, key,
                               json_type_desc(json_object_get_type(val)));
            kind_key = key;
            r->kind = kinds[i].kind;
            const char *arg = json_object_get_string(val);
            if (r->kind == RECIPE_COMMAND)
                arg += strspn(arg, " \t");
            r->arg = has_path(r->kind) ? expand_home(arg) : strdup(arg);
            if (!r->arg)
                return -ENOMEM;
            ret = check_arg(name, r->kind, r->kind == RECIPE_FILE ? arg : r->arg, e);
            if (ret < 0)
                return ret;
        } else if (strcmp(key, "ttl") == 0) {
            ret = parse_duration_value(name, key, val, &r->ttl_ms, e);
            if (ret < 0)
                return ret;
            have_ttl = true;
        } else if (strcmp(key, "timeout") == 0) {
            ret = parse_duration_value(name, key, val, &r->timeout_ms, e);
            if (ret < 0)
                return ret;
            if (r->timeout_ms <= 0 || r->timeout_ms > RECIPE_COMMAND_TIMEOUT_MAX)
                return err_set(e, -EINVAL, "'%s': \"timeout\" must be more than 0 and at most 10m",
                               name);
        } else if ((slot = string_option(r, key, option_keys, ELEMENTSOF(option_keys)))) {
            if (!json_object_is_type(val, json_type_string))
                return err_set(e, -EINVAL, "'%s': \"%s\" must be a string, not %s", name, key,
                               json_type_desc(json_object_get_type(val)));
            free(*slot);
            *slot = strdup(json_object_get_string(val));
            if (!*slot)
                return -ENOMEM;
        } else if (strcmp(key, "description") == 0) {
            if (!json_object_is_type(val, json_type_string))
                return err_set(e, -EINVAL, "'%s': \"description\" must be a string", name);
            free(r->description);
            r->description = strdup(json_object_get_string(val));
            if (!r->description)
                return -ENOMEM;
        } else {
            return unknown_key(name, key, e);
        }
    }
    if (!kind_key)
        return err_set(e, -EINVAL,
                       "'%s': the object names no source: add one of \"command\", \"keychain\", "
                       "\"env\", \"file\", \"literal\" or a secret manager (\"op\", \"bw\", "
                       "\"pass\", \"gopass\", \"keepassxc\", \"vault\", \"aws\", \"gcloud\")",
                       name);
    if (!have_ttl)
        r->ttl_ms = recipe_ttl_default(r->kind);
    return 0;
}

static bool runs_child(enum recipe_kind k)
{
    return k == RECIPE_COMMAND || RECIPE_IS_MANAGER(k);
}

int recipe_parse(const char *name, struct json_object *v, struct recipe **ret, struct err *e)
{
    struct recipe *r = NULL;
    int rc;

    if (!name_is_valid(name))
        return err_set(e, -EINVAL,
                       "'%s' is not a valid secret name: use letters, digits and '_', not "
                       "starting with a digit",
                       name);
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->name = strdup(name);
    if (!r->name) {
        rc = -ENOMEM;
        goto out;
    }
    r->timeout_ms = -1;
    r->ttl_ms = RECIPE_TTL_NONE;
    if (json_object_is_type(v, json_type_string)) {
        rc = parse_string(name, json_object_get_string(v), r, e);
        if (rc >= 0)
            r->ttl_ms = recipe_ttl_default(r->kind);
    } else if (json_object_is_type(v, json_type_object)) {
        rc = parse_object(name, v, r, e);
    } else {
        rc = err_set(e, -EINVAL, "'%s': a recipe must be a string or an object, not %s", name,
                     json_type_desc(json_object_get_type(v)));
    }
    /* a timeout bounds a child: a recipe that runs none keeps the default (and writes none back) */
    if (rc >= 0 && (r->timeout_ms < 0 || !runs_child(r->kind)))
        r->timeout_ms = recipe_timeout_default(r->kind);
    if (rc >= 0)
        rc = recipe_check_options(r, e);
    if (rc < 0)
        goto out;
    *ret = r;
    r = NULL;
    rc = 0;
out:
    recipe_free(r);
    return rc;
}

static bool ttl_is_default(const struct recipe *r)
{
    return r->ttl_ms == recipe_ttl_default(r->kind);
}

struct json_object *recipe_to_json(const struct recipe *r)
{
    bool simple = ttl_is_default(r) && !r->description && !r->entry && !r->password && !r->field &&
                  !r->project && r->kind != RECIPE_KEEPASSXC &&
                  (!runs_child(r->kind) || r->timeout_ms == recipe_timeout_default(r->kind));
    if (simple) {
        char *s = NULL;
        int n;
        if (r->kind == RECIPE_COMMAND)
            n = asprintf(&s, "!%s", r->arg);
        else if (r->bare)
            n = asprintf(&s, "%s", r->arg);
        else
            n = asprintf(&s, "%s:%s", recipe_kind_str(r->kind), r->arg);
        if (n < 0)
            return NULL;
        struct json_object *o = json_object_new_string(s);
        secure_free(s);
        return o;
    }
    struct json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    char d[DURATION_BUF_SIZE];
    int r1 = json_object_object_add(o, recipe_kind_str(r->kind), json_object_new_string(r->arg));
    const char *const opt_keys[] = {"entry", "password", "field", "project"};
    const char *const opt_vals[] = {r->entry, r->password, r->field, r->project};
    for (size_t i = 0; r1 == 0 && i < ELEMENTSOF(opt_keys); i++)
        if (opt_vals[i])
            r1 = json_object_object_add(o, opt_keys[i], json_object_new_string(opt_vals[i]));
    if (r1 == 0 && !ttl_is_default(r) && r->ttl_ms != RECIPE_TTL_NONE)
        r1 = json_object_object_add(
            o, "ttl", json_object_new_string(duration_format(r->ttl_ms, d, sizeof(d))));
    if (r1 == 0 && runs_child(r->kind) && r->timeout_ms != recipe_timeout_default(r->kind))
        r1 = json_object_object_add(
            o, "timeout", json_object_new_string(duration_format(r->timeout_ms, d, sizeof(d))));
    if (r1 == 0 && r->description)
        r1 = json_object_object_add(o, "description", json_object_new_string(r->description));
    if (r1 != 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* An optional string, told apart from an empty one (the byte before it says which). */
static bool digest_opt(EVP_MD_CTX *ctx, const char *s)
{
    if (!s)
        return EVP_DigestUpdate(ctx, "\x01", 1) == 1;
    return EVP_DigestUpdate(ctx, "\x02", 1) == 1 && EVP_DigestUpdate(ctx, s, strlen(s) + 1) == 1;
}

void recipe_fingerprint(const struct recipe *r, const char *scope, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    const char *kind = recipe_kind_str(r->kind);
    out[0] = 0;
    if (!ctx)
        return;
    /* NUL-separated so that no two different recipes hash the same bytes */
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
        EVP_DigestUpdate(ctx, scope ? scope : "", strlen(scope ? scope : "") + 1) == 1 &&
        EVP_DigestUpdate(ctx, r->name, strlen(r->name) + 1) == 1 &&
        EVP_DigestUpdate(ctx, kind, strlen(kind) + 1) == 1 &&
        EVP_DigestUpdate(ctx, r->arg, strlen(r->arg) + 1) == 1 &&
        /* only managers have options: a command's key stays what it always was */
        (!RECIPE_IS_MANAGER(r->kind) ||
         (digest_opt(ctx, r->entry) && digest_opt(ctx, r->password) && digest_opt(ctx, r->field) &&
          digest_opt(ctx, r->project))) &&
        EVP_DigestUpdate(ctx, &r->ttl_ms, sizeof(r->ttl_ms)) == 1 &&
        EVP_DigestFinal_ex(ctx, md, &mdlen) == 1) {
        for (unsigned i = 0; i < mdlen && i < 32; i++)
            (void)snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    EVP_MD_CTX_free(ctx);
}
