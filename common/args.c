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

static int long_error(const char *arg, const struct option *opts, struct buf *out)
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
    int r = buf_printf(out, "unknown option '--%s'", word);
    if (r >= 0)
        r = suggest_append(&s, "--", out);
    suggest_release(&s);
    return r;
}

int args_option_error(const char *prog, char *const *argv, const char *shortopts,
                      const struct option *longopts, struct buf *out)
{
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    int r;
    if (arg && strncmp(arg, "--", 2) == 0 && arg[2])
        r = long_error(arg, longopts, out);
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

int args_first_operand(int argc, char *const *argv, const char *const *with_value)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return argc;
        if (a[0] != '-' || a[1] == '\0')
            return i; /* "-" is an operand (standard input) */
        for (size_t k = 0; with_value && with_value[k]; k++)
            if (strcmp(a, with_value[k]) == 0) {
                i++;
                break;
            }
    }
    return argc;
}

void args_move_first(char **argv, int i)
{
    char *w = argv[i];
    memmove(argv + 2, argv + 1, (size_t)(i - 1) * sizeof(*argv));
    argv[1] = w;
}
