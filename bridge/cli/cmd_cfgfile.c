/* cmd_cfgfile.c - one mcp.json being changed, on credkit/jsonfile.h */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/jsonfile.h"
#include "credkit/mcp_field.h"

#include "cli/cli.h"
#include "cli/cmd_cfgfile.h"
#include "cli/cmd_config.h"

#define LOCK_TIMEOUT_MS 5000

struct cfg_file {
    struct jsonfile *jf;
    struct json_object *mcp_servers; /* the root's "mcpServers" (borrowed); NULL when absent */
    struct json_object *servers;     /* the root's "servers", the older key (borrowed); NULL */
};

void cfg_file_free(struct cfg_file *f)
{
    if (!f)
        return;
    jsonfile_free(f->jf);
    free(f);
}

const char *cfg_file_display(const struct cfg_file *f)
{
    return jsonfile_display(f->jf);
}

struct json_object *cfg_file_doc(struct cfg_file *f)
{
    return jsonfile_doc(f->jf);
}

/* The servers object of the root under key: *ret NULL when absent (or null); -EBADMSG when it
 * is something else than an object. */
static int servers_of(struct cfg_file *f, const char *key, struct json_object **ret, struct err *e)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(cfg_file_doc(f), key, &v) || !v) {
        *ret = NULL;
        return 0;
    }
    if (!json_object_is_type(v, json_type_object))
        return err_set(e, -EBADMSG, "'%s': \"%s\" must be an object, not %s", cfg_file_display(f),
                       key, json_type_desc(json_object_get_type(v)));
    *ret = v;
    return 0;
}

/* A file that gives a key twice in one object cannot be rewritten: the document read holds
 * only the last of the two, and writing it would drop the other for good. Read under the lock. */
static int refuse_duplicates(struct cfg_file *f, struct err *e)
{
    const struct json_dup *dups = NULL;
    if (jsonfile_duplicates(f->jf, &dups) == 0)
        return 0;
    char kd[MCP_DISP_BUF];
    mcp_disp(kd, dups[0].key);
    return err_set(e, -EBADMSG,
                   "'%s': line %u: \"%s\" is given twice (first on line %u), and a rewrite would "
                   "keep only one of them: remove the one you do not want",
                   cfg_file_display(f), dups[0].line, kd, dups[0].first);
}

int cfg_file_open(const char *path, bool create_dir, mode_t new_mode, struct cfg_file **ret,
                  struct err *e)
{
    const struct jsonfile_opts o = {
        .lock_holder = "mcp-bridge add or remove",
        .lock_timeout_ms = LOCK_TIMEOUT_MS,
        .max_size = CFG_FILE_MAX,
        .mode = new_mode,
        .flags = JSONFILE_CREATE | JSONFILE_KEEP_MODE | JSONFILE_FOLLOW_SYMLINK |
                 JSONFILE_DUPLICATES | (create_dir ? JSONFILE_MKDIR : 0),
    };
    struct cfg_file *f = calloc(1, sizeof(*f));
    char *abs = NULL;
    int r;

    if (!f)
        return err_set(e, -ENOMEM, "out of memory");
    r = cfg_absolute_path(path, &abs, e);
    if (r < 0)
        goto out;
    r = jsonfile_open(abs, &o, &f->jf, e);
    if (r < 0)
        goto out;
    r = refuse_duplicates(f, e);
    if (r < 0)
        goto out;
    struct json_object *root = cfg_file_doc(f);
    if (!json_object_is_type(root, json_type_object)) {
        r = err_set(e, -EBADMSG, "'%s': the root must be an object, not %s", cfg_file_display(f),
                    json_type_desc(json_object_get_type(root)));
        goto out;
    }
    r = servers_of(f, "mcpServers", &f->mcp_servers, e);
    if (r >= 0)
        r = servers_of(f, "servers", &f->servers, e);
    if (r < 0)
        goto out;
    *ret = f;
    f = NULL;
out:
    free(abs);
    cfg_file_free(f);
    return r;
}

static bool has_key(struct json_object *o, const char *key)
{
    return o && json_object_object_get_ex(o, key, NULL);
}

bool cfg_file_defines(const struct cfg_file *f, const char *name)
{
    return has_key(f->mcp_servers, name) || has_key(f->servers, name);
}

int cfg_file_put(struct cfg_file *f, const char *name, struct json_object *entry)
{
    /* "mcpServers" unless the file is in the older format */
    if (!f->mcp_servers && !f->servers) {
        struct json_object *ms = json_object_new_object();
        if (!ms || json_object_object_add(cfg_file_doc(f), "mcpServers", ms) < 0) {
            json_object_put(ms);
            return -ENOMEM;
        }
        f->mcp_servers = ms;
    }
    struct json_object *target = f->mcp_servers ? f->mcp_servers : f->servers;
    struct json_object *other = target == f->mcp_servers ? f->servers : f->mcp_servers;
    if (has_key(other, name))
        json_object_object_del(other, name);
    if (json_object_object_add(target, name, json_object_get(entry)) < 0) {
        json_object_put(entry);
        return -ENOMEM;
    }
    return 0;
}

void cfg_file_delete(struct cfg_file *f, const char *name)
{
    if (has_key(f->mcp_servers, name))
        json_object_object_del(f->mcp_servers, name);
    if (has_key(f->servers, name))
        json_object_object_del(f->servers, name);
}

int cfg_file_commit(struct cfg_file *f, struct err *e)
{
    int r = jsonfile_commit(f->jf, e);
    return r < 0 ? r : 0;
}

int cfg_path_defines(const char *path, const char *name, struct err *e)
{
    static const char *const keys[] = {"mcpServers", "servers"};
    struct json_object *doc = NULL;
    bool found = false;
    int r = json_read_file(path, CFG_FILE_MAX, 0, &doc, e);
    if (r < 0)
        return r;
    for (size_t i = 0; json_object_is_type(doc, json_type_object) && i < ELEMENTSOF(keys); i++) {
        struct json_object *v = NULL;
        if (json_object_object_get_ex(doc, keys[i], &v) &&
            json_object_is_type(v, json_type_object) && has_key(v, name))
            found = true;
    }
    json_object_put(doc);
    return found;
}

int cfg_file_open_failed(struct log *log, int r, const struct err *e)
{
    bool content = r == -EBADMSG || r == -E2BIG;
    log_error(log, "%s%s", err_msg(e),
              content ? ": fix the file by hand, then try again (nothing was changed)"
                      : " (nothing was changed)");
    return content ? BRIDGE_EXIT_CONFIG : BRIDGE_EXIT_FAILED;
}
