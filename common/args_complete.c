/* args_complete.c - shell completion scripts written from a tool's command table (args.h).
 *
 * bash and zsh share one function, written in the subset both read (zsh runs it under ksh
 * emulation, arrays from 0); fish gets its own declarations. The static words (commands,
 * options) are in the script; the values of the user's files (server, secret and tool names)
 * are asked of the tool itself at each completion, "PROG __complete KIND [OPERAND...]". */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/err.h"

#define IDENT_MAX 64

/* prog as a shell identifier: "mcp-bridge" -> "mcp_bridge" */
static void ident(const char *prog, char *out)
{
    size_t i = 0;
    for (; prog[i] && i < IDENT_MAX - 1; i++)
        out[i] = (prog[i] >= 'a' && prog[i] <= 'z') || (prog[i] >= 'A' && prog[i] <= 'Z') ||
                         (prog[i] >= '0' && prog[i] <= '9')
                     ? prog[i]
                     : '_';
    out[i] = '\0';
}

static bool hidden(const struct args_command *c)
{
    return strncmp(c->name, "__", 2) == 0;
}

/* " --a --b" for the options of opts (with takes_value: only those that take a value, else
 * all). */
static int append_options(struct buf *out, const struct option *opts, bool only_with_value)
{
    int r = 0;
    for (const struct option *o = opts; r >= 0 && o && o->name; o++)
        if (!only_with_value || o->has_arg == required_argument)
            r = buf_printf(out, " --%s", o->name);
    return r;
}

static int append_commands(struct buf *out, const struct args_tool *t)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < t->n_cmds; i++)
        if (!hidden(&t->cmds[i]))
            r = buf_printf(out, "%s%s", i ? " " : "", t->cmds[i].name);
    return r;
}

/* The case arms that set kind from $cmd and the number of operands before the cursor: one
 * per position of c->operands, the last with "..." for every position from there on. */
static int append_kinds(struct buf *out, const struct args_tool *t, bool fish)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < t->n_cmds; i++) {
        const struct args_command *c = &t->cmds[i];
        if (!c->operands || hidden(c))
            continue;
        r = fish
                ? buf_printf(out, "        case %s\n            switch $n\n", c->name)
                : buf_printf(out, "            %s)\n                case ${#ops[@]} in\n", c->name);
        const char *p = c->operands;
        for (size_t n = 0; r >= 0 && *p; n++) {
            size_t len = strcspn(p, " ");
            bool rep = len > 3 && strncmp(p + len - 3, "...", 3) == 0;
            int wl = (int)(rep ? len - 3 : len);
            char pos[24];
            (void)snprintf(pos, sizeof(pos), "%zu", n);
            if (fish)
                r = buf_printf(out, "                case %s\n                    set kind %.*s\n",
                               rep ? "'*'" : pos, wl, p);
            else
                r = buf_printf(out, "                %s) kind=%.*s ;;\n", rep ? "*" : pos, wl, p);
            p += len;
            p += *p == ' ';
        }
        if (r >= 0)
            r = fish ? buf_printf(out, "            end\n")
                     : buf_printf(out, "                esac ;;\n");
    }
    return r;
}

/* The options a command's line may hold: its own (the case arms) and every command's. */
static int append_option_arms(struct buf *out, const struct args_tool *t, bool fish)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i < t->n_cmds; i++) {
        const struct args_command *c = &t->cmds[i];
        if (!c->opts || hidden(c))
            continue;
        if (fish) {
            for (const struct option *o = c->opts; r >= 0 && o->name; o++)
                r = buf_printf(out, "complete -c %s -n '__fish_seen_subcommand_from %s' -l %s%s\n",
                               t->prog, c->name, o->name,
                               o->has_arg == required_argument ? " -r" : "");
            continue;
        }
        r = buf_printf(out, "        %s) words=\"", c->name);
        if (r >= 0)
            r = append_options(out, c->opts, false);
        if (r >= 0)
            r = buf_printf(out, "\" ;;\n");
    }
    return r;
}

/* The options of the table, commands' first then the globals: list i of n_cmds + 1. */
static const struct option *table_options(const struct args_tool *t, size_t i)
{
    return i == t->n_cmds ? t->globals : t->cmds[i].opts;
}

/* Whether o (in list i) takes a value and no earlier option of the table of that name did. */
static bool first_valued(const struct args_tool *t, size_t i, const struct option *o)
{
    if (o->has_arg != required_argument)
        return false;
    for (size_t k = 0; k <= i; k++)
        for (const struct option *p = table_options(t, k); p && p->name; p++) {
            if (k == i && p == o)
                break; /* (a list two commands share is met first under the first) */
            if (p->has_arg == required_argument && strcmp(p->name, o->name) == 0)
                return false;
        }
    return true;
}

/* " --a --b ": every option of the table that takes a value, once each. */
static int append_valued(struct buf *out, const struct args_tool *t)
{
    int r = 0;
    for (size_t i = 0; r >= 0 && i <= t->n_cmds; i++)
        for (const struct option *o = table_options(t, i); r >= 0 && o && o->name; o++)
            if (first_valued(t, i, o))
                r = buf_printf(out, " --%s", o->name);
    return r < 0 ? r : buf_append_char(out, ' ');
}

static int sh_function(const struct args_tool *t, const char *id, struct buf *out)
{
    int r = buf_printf(out,
                       "_credkit_%s() {\n"
                       "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev= cmd= kind= words= w i\n"
                       "    local -a ops=() cfg=()\n"
                       "    local valued=\"",
                       id);
    if (r >= 0)
        r = append_valued(out, t);
    if (r >= 0)
        r = buf_printf(
            out, "\"\n"
                 "    COMPREPLY=()\n"
                 "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
                 "        w=\"${COMP_WORDS[i]}\"\n"
                 "        [ \"$w\" = -- ] && return 0\n"
                 "        case \"$w\" in\n"
                 "        --config | --mcp-config) cfg=(--config \"${COMP_WORDS[i + 1]}\") ;;\n"
                 "        esac\n"
                 "        case \"$valued\" in *\" $w \"*) i=$((i + 1)); continue ;; esac\n"
                 "        case \"$w\" in -*) continue ;; esac\n"
                 "        if [ -z \"$cmd\" ]; then cmd=\"$w\"; else ops+=(\"$w\"); fi\n"
                 "    done\n"
                 "    [ \"$COMP_CWORD\" -gt 1 ] && prev=\"${COMP_WORDS[COMP_CWORD - 1]}\"\n"
                 "    case \"$valued\" in *\" $prev \"*) return 0 ;; esac\n"
                 "    case \"$cur\" in\n"
                 "    -*)\n"
                 "        case \"$cmd\" in\n");
    if (r >= 0)
        r = append_option_arms(out, t, false);
    if (r >= 0)
        r = buf_printf(out, "        esac\n        words=\"$words");
    if (r >= 0)
        r = append_options(out, t->globals, false);
    if (r >= 0)
        r = buf_printf(out, "\"\n"
                            "        ;;\n"
                            "    *)\n"
                            "        if [ -z \"$cmd\" ]; then\n"
                            "            words=\"");
    if (r >= 0)
        r = append_commands(out, t);
    if (r >= 0)
        r = buf_printf(out, "\"\n            kind=%s\n        else\n            case \"$cmd\" in\n",
                       t->first_word ? t->first_word : "");
    if (r >= 0)
        r = append_kinds(out, t, false);
    if (r >= 0)
        r = buf_printf(out, "            esac\n"
                            "        fi\n"
                            "        if [ \"$kind\" = commands ]; then\n"
                            "            words=\"");
    if (r >= 0)
        r = append_commands(out, t);
    if (r >= 0)
        r = buf_printf(
            out,
            "\"\n"
            "        elif [ -n \"$kind\" ]; then\n"
            "            words=\"$words $(\"${COMP_WORDS[0]}\" \"${cfg[@]}\" __complete \"$kind\" "
            "\"${ops[@]}\" 2>/dev/null)\"\n"
            "        fi\n"
            "        ;;\n"
            "    esac\n"
            "    for w in $words; do\n"
            "        case \"$w\" in \"$cur\"*) COMPREPLY+=(\"$w\") ;; esac\n"
            "    done\n"
            "    return 0\n"
            "}\n");
    return r;
}

static int fish_script(const struct args_tool *t, const char *id, struct buf *out)
{
    int r = buf_printf(out,
                       "# fish completion for %s, written by '%s completion fish'\n"
                       "function __credkit_%s_words\n"
                       "    # the operands before the cursor, the first being the command\n"
                       "    set -l valued",
                       t->prog, t->prog, id);
    if (r >= 0)
        r = append_valued(out, t);
    if (r >= 0)
        r = buf_printf(out,
                       "\n"
                       "    set -l skip 0\n"
                       "    for w in (commandline -opc)[2..-1]\n"
                       "        if test $skip = 1\n"
                       "            set skip 0\n"
                       "            continue\n"
                       "        end\n"
                       "        if contains -- $w $valued\n"
                       "            set skip 1\n"
                       "        else if not string match -q -- '-*' $w\n"
                       "            echo $w\n"
                       "        end\n"
                       "    end\n"
                       "end\n"
                       "function __credkit_%s_values\n"
                       "    set -l tokens (commandline -opc)\n"
                       "    contains -- -- $tokens; and return\n"
                       "    set -l cfg\n"
                       "    set -l i (contains -i -- --config $tokens)\n"
                       "    and set cfg --config $tokens[(math $i + 1)]\n"
                       "    set -l ops (__credkit_%s_words)\n"
                       "    set -l kind %s\n"
                       "    set -l cmd $ops[1]\n"
                       "    set -e ops[1]\n"
                       "    set -l n (count $ops)\n"
                       "    if test -n \"$cmd\"\n"
                       "        set kind\n"
                       "        switch $cmd\n",
                       id, id, t->first_word ? t->first_word : "");
    if (r >= 0)
        r = append_kinds(out, t, true);
    if (r >= 0)
        r = buf_printf(out, "        end\n"
                            "    end\n"
                            "    if test \"$kind\" = commands\n"
                            "        printf '%%s\\n' ");
    if (r >= 0)
        r = append_commands(out, t);
    if (r >= 0)
        r = buf_printf(out,
                       "\n"
                       "    else if test -n \"$kind\"; and command -q $tokens[1]\n"
                       "        command $tokens[1] $cfg __complete $kind $ops 2>/dev/null\n"
                       "    end\n"
                       "end\n"
                       "complete -c %s -f\n"
                       "complete -c %s -a '(__credkit_%s_values)'\n",
                       t->prog, t->prog, id);
    for (size_t i = 0; r >= 0 && i < t->n_cmds; i++) {
        const struct args_command *c = &t->cmds[i];
        if (hidden(c))
            continue;
        r = buf_printf(out,
                       "complete -c %s -n 'test (count (__credkit_%s_words)) -eq 0' -a %s -d '",
                       t->prog, id, c->name);
        /* the summary's first line, quoted for fish: ' and \ escaped */
        for (const char *p = c->summary ? c->summary : ""; r >= 0 && *p && *p != '\n'; p++)
            r = buf_printf(out, "%s%c", *p == '\'' || *p == '\\' ? "\\" : "", *p);
        if (r >= 0)
            r = buf_append_str(out, "'\n");
    }
    if (r >= 0)
        r = append_option_arms(out, t, true);
    for (const struct option *o = t->globals; r >= 0 && o && o->name; o++)
        r = buf_printf(out, "complete -c %s -l %s%s\n", t->prog, o->name,
                       o->has_arg == required_argument ? " -r -F" : "");
    return r;
}

int args_completion(const struct args_tool *t, const char *shell, struct buf *out)
{
    char id[IDENT_MAX];
    int r;
    ident(t->prog, id);
    if (strcmp(shell, "bash") == 0) {
        r = buf_printf(out, "# bash completion for %s, written by '%s completion bash'\n", t->prog,
                       t->prog);
        if (r >= 0)
            r = sh_function(t, id, out);
        if (r >= 0)
            r = buf_printf(out, "complete -o default -F _credkit_%s %s\n", id, t->prog);
    } else if (strcmp(shell, "zsh") == 0) {
        r = buf_printf(out,
                       "#compdef %s\n# zsh completion for %s, written by '%s completion zsh'\n",
                       t->prog, t->prog, t->prog);
        if (r >= 0)
            r = sh_function(t, id, out);
        /* the function above reads bash's arrays, from 0: zsh runs it under ksh emulation */
        if (r >= 0)
            r = buf_printf(out,
                           "_credkit_%s_ksh() {\n"
                           "    emulate -L ksh\n"
                           "    _credkit_%s\n"
                           "}\n"
                           "_credkit_%s_zsh() {\n"
                           "    local -a COMP_WORDS COMPREPLY\n"
                           "    local COMP_CWORD=$((CURRENT - 1))\n"
                           "    COMP_WORDS=(\"${words[@]}\")\n"
                           "    _credkit_%s_ksh\n"
                           "    if (( ${#COMPREPLY} )); then\n"
                           "        compadd -- \"${COMPREPLY[@]}\"\n"
                           "    else\n"
                           "        _files\n"
                           "    fi\n"
                           "}\n"
                           "if [ \"${funcstack[1]}\" = \"_%s\" ]; then\n"
                           "    _credkit_%s_zsh \"$@\"\n"
                           "else\n"
                           "    compdef _credkit_%s_zsh %s\n"
                           "fi\n",
                           id, id, id, id, t->prog, id, id, t->prog);
    } else if (strcmp(shell, "fish") == 0) {
        r = fish_script(t, id, out);
    } else {
        return -EINVAL;
    }
    return r < 0 ? r : 0;
}

int args_completion_command(const struct args_tool *t, const char *what, int argc, char **argv,
                            struct err *e)
{
    if (args_wants_help(argc, argv)) {
        printf("usage: %s completion bash|zsh|fish\n"
               "\n"
               "Print the completion script for the shell. Besides commands and options, it\n"
               "completes %s.\n"
               "\n"
               "examples:\n"
               "  source <(%s completion bash)      # in ~/.bashrc\n"
               "  %s completion fish > ~/.config/fish/completions/%s.fish\n",
               t->prog, what, t->prog, t->prog, t->prog);
        return 0;
    }
    if (argc != 2)
        return err_set(e, -EINVAL,
                       "completion takes one SHELL: bash, zsh or fish (see '%s completion "
                       "--help')",
                       t->prog);
    struct buf out;
    buf_init(&out, 1024 * 1024);
    int r = args_completion(t, argv[1], &out);
    if (r == -EINVAL)
        (void)err_set(e, r,
                      "completion: no script for '%.64s': the shells are bash, zsh and fish (see "
                      "'%s completion --help')",
                      argv[1], t->prog);
    else if (r < 0)
        (void)err_set(e, r, "out of memory");
    else
        fputs(buf_str(&out), stdout);
    buf_release(&out);
    return r < 0 ? r : 0;
}

void args_print_usage(const struct args_tool *t, const char *head, const char *tail, FILE *f)
{
    struct buf list;
    buf_init(&list, 64 * 1024);
    fputs(head, f);
    if (args_help_commands(t, &list) >= 0)
        fputs(buf_str(&list), f);
    fputs(tail, f);
    buf_release(&list);
}
