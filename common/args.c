/* args.c - command-line conventions the tools share */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/suggest.h"

bool args_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    }
    return false;
}

int args_take_globals(int argc, char **argv, bool accept_config, struct args_globals *g)
{
    int w = 1;
    bool past_dashes = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        past_dashes |= strcmp(a, "--") == 0;
        if (past_dashes)
            argv[w++] = argv[i];
        else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0)
            g->verbosity++;
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
            g->quiet = true;
        else if (a[0] == '-' && a[1] && a[2] && strspn(a + 1, "vq") == strlen(a + 1))
            for (const char *p = a + 1; *p; p++) /* "-vv", "-vq": bundled */
                *p == 'v' ? (void)g->verbosity++ : (void)(g->quiet = true);
        else if (accept_config && strcmp(a, "--config") == 0 && i + 1 < argc)
            g->config = argv[++i];
        else if (accept_config && strncmp(a, "--config=", 9) == 0)
            g->config = a + 9;
        else
            argv[w++] = argv[i];
    }
    argv[w] = NULL;
    return w;
}

/* The long option that name (no dashes, no "=value") spells or uniquely abbreviates, as
 * getopt_long() reads it; NULL when none (*ret_ambiguous when several). */
static const struct option *long_find(const struct option *opts, const char *name, size_t len,
                                      bool *ret_ambiguous)
{
    const struct option *found = NULL;
    size_t matches = 0;
    *ret_ambiguous = false;
    for (const struct option *o = opts; o && o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return o;
        found = o;
        matches++;
    }
    *ret_ambiguous = matches > 1;
    return matches == 1 ? found : NULL;
}

static int long_error(const char *arg, const struct option *opts, const struct option *globals,
                      struct buf *out)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    bool ambiguous;
    const struct option *o = long_find(opts, name, len, &ambiguous);
    if (o && o->has_arg == required_argument && !eq)
        return buf_printf(out, "option '--%s' needs a value", o->name);
    if (o && o->has_arg == no_argument && eq)
        return buf_printf(out, "option '--%s' takes no value", o->name);
    if (ambiguous)
        return buf_printf(out, "option '--%.*s' is ambiguous", (int)len, name);
    char word[128];
    (void)snprintf(word, sizeof(word), "%.*s", (int)(len < sizeof(word) ? len : sizeof(word) - 1),
                   name);
    struct suggest s;
    suggest_init(&s, word);
    for (const struct option *p = opts; p && p->name; p++)
        suggest_add(&s, p->name);
    for (const struct option *p = globals; p && p->name; p++)
        suggest_add(&s, p->name);
    int r = buf_printf(out, "unknown option '--%s'", word);
    if (r >= 0)
        r = suggest_append(&s, "--", out);
    suggest_release(&s);
    return r;
}

int args_option_error(const char *prog, char *const *argv, const char *shortopts,
                      const struct option *longopts, const struct option *globals, struct buf *out)
{
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    int r;
    if (arg && strncmp(arg, "--", 2) == 0 && arg[2])
        r = long_error(arg, longopts, globals, out);
    else if (optopt > 0 && optopt < 256 && strchr(shortopts, optopt))
        r = buf_printf(out, "option '-%c' needs a value", optopt);
    else if (optopt > 0 && optopt < 256)
        r = buf_printf(out, "unknown option '-%c'", optopt);
    else
        r = buf_printf(out, "unknown option '%s'", arg ? arg : "?");
    if (r >= 0)
        r = buf_printf(out, " (see '%s --help')", prog);
    return r < 0 ? r : 0;
}

void args_move_first(char **argv, int i)
{
    char *w = argv[i];
    memmove(argv + 2, argv + 1, (size_t)(i - 1) * sizeof(*argv));
    argv[1] = w;
}

const struct args_command *args_command_find(const struct args_tool *t, const char *name)
{
    for (size_t i = 0; i < t->n_cmds; i++)
        if (strcmp(t->cmds[i].name, name) == 0)
            return &t->cmds[i];
    return NULL;
}

/* Whether arg ("--scope", "-H") is an option of opts that takes a value. */
static bool takes_value(const struct option *opts, const char *arg)
{
    for (const struct option *o = opts; o && o->name; o++) {
        if (o->has_arg != required_argument)
            continue;
        if (strncmp(arg, "--", 2) == 0 && strcmp(arg + 2, o->name) == 0)
            return true;
        if (arg[0] == '-' && arg[1] == o->val && arg[1] && !arg[2] && o->val < 256)
            return true;
    }
    return false;
}

int args_tool_first_operand(const struct args_tool *t, int argc, char *const *argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return argc;
        if (a[0] != '-' || a[1] == '\0')
            return i; /* "-" is an operand (standard input) */
        bool value = takes_value(t->globals, a);
        for (size_t k = 0; !value && k < t->n_cmds; k++)
            value = takes_value(t->cmds[k].opts, a);
        i += value;
    }
    return argc;
}

int args_help_commands(const struct args_tool *t, struct buf *out)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < t->n_cmds; i++) {
        const struct args_command *c = &t->cmds[i];
        if (!c->summary)
            continue;
        size_t start = out->len;
        r = buf_printf(out, "  %s%s%s", c->name, c->args ? " " : "", c->args ? c->args : "");
        if (r < 0)
            break;
        const char *last = strrchr(out->data + start, '\n');
        size_t width = out->len - (last ? (size_t)(last + 1 - out->data) : start);
        const int col = t->help_column;
        if (width < (size_t)col)
            r = buf_printf(out, "%*s", (int)((size_t)col - width), "");
        else
            r = buf_printf(out, "\n%*s", col, "");
        for (const char *p = c->summary; r >= 0 && *p;) {
            size_t n = strcspn(p, "\n");
            r = buf_printf(out, "%.*s\n", (int)n, p);
            p += n;
            if (*p == '\n' && p[1] && r >= 0)
                r = buf_printf(out, "%*s", col, "");
            p += *p == '\n';
        }
    }
    return r < 0 ? r : 0;
}
