/* cmd_uninstall.c - mcp-bridge uninstall AGENT: the bridge's entry out of the agent's
 * configuration, the servers install moved back in, and out of the bridge's file
 * (cmd_install_int.h).
 *
 * A file is given back byte for byte from its backup when it is exactly what install made of
 * that backup (install is a function of the text: it is run again on the backup and compared);
 * otherwise, something else having changed since, only our entry is removed and the moved
 * servers put back as the backup had them, so that the later edits stay. A server removed from
 * the bridge's file since is not put back: it was removed on purpose. The agent's file is
 * written first and the bridge's file after, so that a failure leaves a server in both rather
 * than in neither. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/json.h"
#include "credkit/mcp_import.h"

#include "cli/cli.h"
#include "cli/cmd_cfgfile.h"
#include "cli/cmd_install_int.h"

/* ---- uninstall --------------------------------------------------------------------------- */

/* The names of was (the servers before install) that now lacks, ours aside. */
static int missing_names(struct json_object *was, struct json_object *now, struct strv *out)
{
    json_object_object_foreach(was, name, v)
    {
        (void)v;
        if (strcmp(name, ENTRY_NAME) != 0 && !json_object_object_get_ex(now, name, NULL) &&
            strv_push(out, name) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Takes the put-back servers out of the bridge's file. */
static int dest_remove(struct cfg_file *df, const struct strv *back, struct err *e)
{
    bool any = false;
    for (size_t i = 0; df && i < back->n; i++) {
        if (inst_dest_entry(df, back->v[i])) {
            cfg_file_delete(df, back->v[i]);
            any = true;
        }
    }
    return any ? cfg_file_commit(df, e) : 0;
}

/* What uninstall makes of the agent's file t (the backup b, when there is one): the backup as
 * it is when t is exactly what install made of it, else t without our entry and with the moved
 * servers back (those the bridge's file still has). */
static int uninstall_text(struct inst *in, struct cfg_file *df, const struct buf *t,
                          struct json_object *now, const struct buf *b, struct json_object *was,
                          struct strv *back, bool *ret_restore, struct buf *nt, struct err *e)
{
    struct buf exp;
    int r = 0;

    buf_init(&exp, AGENT_FILE_MAX);
    *ret_restore = false;
    if (was && missing_names(was, now, back) < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    if (r >= 0 && was && buf_append(&exp, b->data ? b->data : "", b->len) < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    if (r >= 0 && was && inst_transform(in, &exp, back->v, true, e) >= 0 && exp.len == t->len &&
        memcmp(exp.data, t->data, t->len) == 0)
        *ret_restore = true;
    err_clear(e);
    buf_release(&exp);
    if (r < 0)
        return r;
    if (*ret_restore)
        return buf_append(nt, b->data, b->len) < 0 ? err_set(e, -ENOMEM, "out of memory") : 0;
    if (buf_append(nt, t->data ? t->data : "", t->len) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    struct json_object *cur = NULL;
    if (json_object_object_get_ex(now, ENTRY_NAME, &cur) && mcp_import_runs_bridge(cur) &&
        (r = inst_text_remove(in, nt, ENTRY_NAME, e)) > 0)
        r = inst_change(in, "removed", ENTRY_NAME, in->file_disp, NULL);
    /* a moved server leaves the list when the bridge's file no longer has it (removed there
     * since: it stays removed) */
    for (size_t i = 0; r >= 0 && i < back->n;) {
        if (!inst_dest_entry(df, back->v[i])) {
            free(back->v[i]);
            memmove(&back->v[i], &back->v[i + 1], (back->n - i) * sizeof(char *));
            back->n--;
            continue;
        }
        if (in->a->fmt == FMT_TOML)
            r = itext_toml_append_from(nt, b->data, b->len, back->v[i]) < 0 ? -ENOMEM : 0;
        else
            r = itext_json_add(nt, in->a->fmt == FMT_JSONC, in->a->key, back->v[i],
                               json_object_object_get(was, back->v[i]), e);
        i++;
    }
    return r < 0 ? (e->msg[0] ? r : err_set(e, r, "out of memory")) : 0;
}

static int uninstall_file(struct inst *in, struct cfg_file *df, struct err *e)
{
    struct buf t, b, nt;
    struct json_object *now = NULL, *was = NULL;
    struct strv back = STRV_INIT;
    bool exists = false, bexists = false, restore = false;
    mode_t mode = 0600;

    buf_init(&nt, AGENT_FILE_MAX);
    buf_init(&b, AGENT_FILE_MAX);
    int r = inst_read_text(in->file, &t, &exists, &mode, e);
    if (r >= 0 && exists)
        r = inst_read_text(in->side, &b, &bexists, NULL, e);
    if (r < 0 || !exists)
        goto out;
    if ((r = inst_servers_of_text(in, &t, &now, e)) < 0 ||
        (bexists && (r = inst_servers_of_text(in, &b, &was, e)) < 0)) {
        (void)err_prefix(e, "'%s'", bexists && now ? in->side_disp : in->file_disp);
        goto out;
    }
    r = uninstall_text(in, df, &t, now, &b, was, &back, &restore, &nt, e);
    if (r >= 0 && restore)
        r = inst_change(in, "restored", NULL, in->file_disp, in->side_disp);
    for (size_t i = 0; r >= 0 && i < back.n; i++)
        r = inst_change(in, "put_back", back.v[i], in->file_disp,
                        inst_dest_entry(df, back.v[i]) ? in->dest_disp : in->side_disp);
    if (r < 0 || in->dry_run || json_object_array_length(in->changes) == 0)
        goto out;
    r = inst_write_file(in, nt.data, nt.len, mode, e);
    if (r >= 0)
        r = dest_remove(df, &back, e);
    if (r >= 0 && bexists)
        (void)unlink(in->side);
out:
    buf_release(&t);
    buf_release(&b);
    buf_release(&nt);
    json_object_put(now);
    json_object_put(was);
    strv_release(&back);
    return r;
}

static int uninstall_claude(struct inst *in, struct cfg_file *df, struct err *e)
{
    struct json_object *now = NULL, *rec = NULL, *cur = NULL;
    struct strv back = STRV_INIT;
    bool ours = false;

    int r = inst_claude_servers(in, &now, e);
    if (r >= 0)
        r = inst_read_record(in, &rec, e);
    if (r >= 0 && missing_names(json_get_object(rec, "servers"), now, &back) < 0)
        r = err_set(e, -ENOMEM, "out of memory");
    if (r >= 0 && json_object_object_get_ex(now, ENTRY_NAME, &cur) && mcp_import_runs_bridge(cur)) {
        ours = true;
        r = inst_change(in, "removed", ENTRY_NAME, in->file_disp, NULL);
    }
    for (size_t i = 0; r >= 0 && i < back.n; i++)
        r = inst_change(in, "put_back", back.v[i], in->file_disp,
                        inst_dest_entry(df, back.v[i]) ? in->dest_disp : in->side_disp);
    if (r < 0 || in->dry_run)
        goto out;
    if (ours)
        r = inst_claude_remove(in, ENTRY_NAME, e);
    for (size_t i = 0; r >= 0 && i < back.n; i++)
        r = inst_claude_add_json(
            in, back.v[i], json_object_object_get(json_get_object(rec, "servers"), back.v[i]), e);
    if (r >= 0)
        r = dest_remove(df, &back, e);
    if (r >= 0)
        (void)unlink(in->side);
out:
    json_object_put(now);
    json_object_put(rec);
    strv_release(&back);
    return r;
}

int cmd_uninstall(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    static const struct inst_way uninstall = {true, uninstall_file, uninstall_claude};
    return inst_run(argc, argv, g, log, &uninstall);
}
