/* request.c - the commands of `secrets resolve --stdin` (request.h) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/secmem.h"
#include "credkit/util.h"

#include "bearer_store.h"
#include "recipe.h"
#include "request.h"
#include "resolve.h"

int cli_read_stdin(struct buf *b)
{
    for (;;) {
        char chunk[4096];
        ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        int r = buf_append(b, chunk, (size_t)n);
        secure_wipe(chunk, sizeof(chunk));
        if (r < 0)
            return r;
    }
}

/* What is wrong with a parsed request, or NULL. Static. */
static const char *request_refusal(struct json_object *doc)
{
    int64_t version = 1;
    struct json_object *cmds = json_get_object(doc, "commands");
    if (json_object_object_get_ex(doc, "version", NULL) &&
        (!json_get_int64(doc, "version", &version) || version < 1))
        return "\"version\" is not a positive integer";
    if (version > 1)
        return "it is in a later version of the helper protocol than this secrets reads (1): "
               "update secrets";
    struct json_object *stores = json_get_object(doc, "bearerStores");
    if (!cmds && !stores)
        return "it has neither a \"commands\" nor a \"bearerStores\" object";
    if (cmds) {
        json_object_object_foreach(cmds, name, v)
        {
            if (!name_is_valid(name))
                return "a name in \"commands\" is not a valid secret name";
            if (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v))
                return "a command in \"commands\" is not a non-empty string";
        }
    }
    if (stores) {
        json_object_object_foreach(stores, name, v)
        {
            const char *server = json_get_string(v, "server"), *url = json_get_string(v, "url");
            if (!name_is_valid(name))
                return "a name in \"bearerStores\" is not a valid secret name";
            if (!server || !*server || !url || !*url)
                return "a member of \"bearerStores\" lacks its \"server\" or \"url\" string";
        }
    }
    return NULL;
}

int request_read(struct cli *c, struct json_object **ret)
{
    struct buf b;
    struct err e = ERR_INIT;
    struct json_object *doc = NULL;
    buf_init_secret(&b, REQUEST_MAX);
    int r = cli_read_stdin(&b);
    if (r == -E2BIG)
        cli_error(c, "the request on stdin is larger than %d bytes", REQUEST_MAX);
    else if (r < 0)
        cli_error(c, "cannot read the request on stdin: %s", strerror(-r));
    else if ((r = json_parse(b.data ? b.data : "", b.len, REQUEST_MAX, &doc, &e)) < 0)
        cli_error(c, "the request on stdin is not JSON: %s", err_msg(&e));
    buf_release(&b);
    if (r < 0)
        return EXIT_USAGE;
    const char *why = request_refusal(doc);
    if (why) {
        request_free(doc);
        cli_error(c, "the request on stdin is refused: %s", why);
        return EXIT_USAGE;
    }
    *ret = doc;
    return EXIT_OK;
}

/* Runs one command into the answer; a failure sets *status. */
static int resolve_command(struct cli *c, const char *name, const char *cmd,
                           struct helper_secrets *answer, int *status)
{
    struct recipe *rc = NULL;
    struct resolved res = {0};
    struct err e = ERR_INIT;
    int r = recipe_new(name, RECIPE_COMMAND, cmd, &rc);
    if (r < 0)
        return r;
    rc->ttl_ms = 0; /* a value of another program's: never in our cache */
    rc->quiet = true;
    if (resolver_run(c->rs, rc, &res, &e) < 0) {
        *status = EXIT_FAILED;
        r = helper_secrets_add_error(answer, name, err_msg(&e));
    } else {
        r = helper_secrets_add_value(answer, name, res.value, res.len, res.source,
                                     res.expires_at > 0 ? res.expires_at : 0);
    }
    resolved_release(&res);
    recipe_free(rc);
    return r;
}

/* Reads one token of pi-mcp-adapter's store into the answer; a failure sets *status. */
static int resolve_store(const char *name, struct json_object *v, struct helper_secrets *answer,
                         int *status)
{
    struct err e = ERR_INIT;
    char *token = NULL;
    int r = bearer_store_read(json_get_string(v, "server"), json_get_string(v, "url"), &token, &e);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        *status = EXIT_FAILED;
        return helper_secrets_add_error(answer, name, err_msg(&e));
    }
    r = helper_secrets_add_value(answer, name, token, strlen(token), "keychain", 0);
    secure_free(token);
    return r;
}

static bool is_skipped(const char *name, const char *const *skip, size_t n_skip)
{
    for (size_t k = 0; k < n_skip; k++)
        if (strcmp(skip[k], name) == 0)
            return true;
    return false;
}

int request_resolve(struct cli *c, struct json_object *req, const char *const *skip, size_t n_skip,
                    struct helper_secrets *answer, int *status)
{
    struct json_object *cmds = json_get_object(req, "commands");
    struct json_object *stores = json_get_object(req, "bearerStores");
    if (cmds) {
        json_object_object_foreach(cmds, name, v)
        {
            int r = is_skipped(name, skip, n_skip)
                        ? 0
                        : resolve_command(c, name, json_object_get_string(v), answer, status);
            if (r < 0)
                return r;
        }
    }
    if (stores) {
        json_object_object_foreach(stores, name, v)
        {
            int r = is_skipped(name, skip, n_skip) ? 0 : resolve_store(name, v, answer, status);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

void request_free(struct json_object *req)
{
    struct json_object *cmds = json_get_object(req, "commands");
    if (!cmds) {
        json_object_put(req);
        return;
    }
    json_object_object_foreach(cmds, name, v)
    {
        (void)name;
        if (json_object_is_type(v, json_type_string))
            secure_wipe((char *)(uintptr_t)json_object_get_string(v),
                        (size_t)json_object_get_string_len(v));
    }
    json_object_put(req);
}
