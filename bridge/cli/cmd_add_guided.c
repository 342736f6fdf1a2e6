/* cmd_add_guided.c - mcp-bridge add on a terminal: whatever the options did not say, asked.
 *
 * Answers are checked as they come (a typo is asked again rather than refused at the end);
 * the loader still checks the whole entry before it is written. Ctrl-C or the end of input at
 * any prompt cancels, and nothing is written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "credkit/buf.h"
#include "credkit/mcp_config.h"
#include "credkit/secmem.h"
#include "credkit/strv.h"
#include "credkit/tty.h"
#include "credkit/url.h"
#include "credkit/util.h"

#include "cli/cmd_add.h"
#include "cli/cmd_add_names.h"
#include "cli/cmd_config.h"

/* ---- prompts ------------------------------------------------------------------------------- */

/* One line from the terminal, blanks trimmed at both ends. -ECANCELED on Ctrl-C or EOF. */
static int ask(const char *prompt, char **ret)
{
    char *line = NULL;
    int r = tty_prompt(prompt, false, &line);
    if (r < 0)
        return r;
    size_t start = strspn(line, " \t"), n = strlen(line);
    while (n > start && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    memmove(line, line + start, n - start);
    line[n - start] = 0;
    *ret = line;
    return 0;
}

/* ask(), an empty answer standing for def (when def is not empty itself). */
static int ask_default(const char *prompt, const char *def, char **ret)
{
    char *answer = NULL;
    int r = ask(prompt, &answer);
    if (r < 0)
        return r;
    if (!answer[0] && def[0]) {
        free(answer);
        answer = strdup(def);
        if (!answer)
            return -ENOMEM;
    }
    *ret = answer;
    return 0;
}

/* A numbered choice; words[i] is accepted too; an empty answer picks def when def >= 0. */
static int ask_choice(const char *prompt, const char *const *words, int n, int def, int *ret)
{
    for (;;) {
        char *answer = NULL;
        int64_t k = 0;
        int pick = -1, r = ask(prompt, &answer);
        if (r < 0)
            return r;
        if (!answer[0])
            pick = def;
        else if (parse_int64(answer, &k) >= 0 && k >= 1 && k <= n)
            pick = (int)k - 1;
        else
            for (int i = 0; i < n; i++)
                if (strcasecmp(answer, words[i]) == 0)
                    pick = i;
        free(answer);
        if (pick >= 0) {
            *ret = pick;
            return 0;
        }
        fprintf(stderr, "please answer a number from 1 to %d (or press Ctrl-C to cancel)\n", n);
    }
}

int add_ask_yes_no(const char *prompt, bool *ret)
{
    for (;;) {
        char *answer = NULL;
        int r = ask(prompt, &answer);
        if (r < 0)
            return r;
        bool yes = strcasecmp(answer, "y") == 0 || strcasecmp(answer, "yes") == 0;
        bool no = !answer[0] || strcasecmp(answer, "n") == 0 || strcasecmp(answer, "no") == 0;
        free(answer);
        if (yes || no) {
            *ret = yes;
            return 0;
        }
        fprintf(stderr, "please answer y or n\n");
    }
}

/* Quick checks at the prompt, so a typo is asked again rather than refused at the end (the
 * loader still checks the whole entry before it is written). */
static bool url_answer_ok(const char *url)
{
    struct err e = ERR_INIT;
    char *canon = NULL;
    if (!url[0]) {
        fprintf(stderr, "the URL is empty\n");
        return false;
    }
    if (strstr(url, "${"))
        return true; /* checked after substitution, by the loader */
    if (url_canonical(url, &canon, &e) < 0) {
        fprintf(stderr, "%s\n", err_msg(&e));
        return false;
    }
    free(canon);
    return true;
}

/* Splits a command line typed at the guided prompt into words as a POSIX shell would for the
 * simple cases: blanks separate, '...' and "..." quote, a backslash escapes. Nothing is
 * expanded ($VAR stays as written: there is no shell when the bridge starts it). */
static int split_words(const char *s, struct strv *out, const char **ret_why)
{
    struct buf w;
    bool in_word = false;
    int r = 0;

    buf_init(&w, 64 * 1024);
    for (const char *p = s;; p++) {
        char c = *p;
        if (c == 0 || c == ' ' || c == '\t') {
            if (in_word) {
                r = strv_push(out, buf_str(&w));
                if (r < 0)
                    break;
                buf_reset(&w);
                in_word = false;
            }
            if (!c)
                break;
            continue;
        }
        in_word = true;
        if (c == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (!q) {
                *ret_why = "a ' is not closed";
                r = -EINVAL;
                break;
            }
            r = buf_append(&w, p + 1, (size_t)(q - p - 1));
            p = q;
        } else if (c == '"') {
            for (p++; r >= 0 && *p && *p != '"'; p++) {
                if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                    p++;
                r = buf_append_char(&w, *p);
            }
            if (r >= 0 && !*p) {
                *ret_why = "a \" is not closed";
                r = -EINVAL;
            }
        } else if (c == '\\') {
            if (!p[1]) {
                *ret_why = "the line ends with a backslash";
                r = -EINVAL;
                break;
            }
            r = buf_append_char(&w, *++p);
        } else {
            r = buf_append_char(&w, c);
        }
        if (r < 0)
            break;
    }
    if (r == -E2BIG)
        *ret_why = "a word is longer than 64 KiB";
    buf_release(&w);
    return r;
}
/* ---- the steps ----------------------------------------------------------------------------- */

static int guided_transport(struct add_args *a)
{
    static const char *const words[] = {"http", "stdio"};
    int k, r;
    fprintf(stderr,
            "What kind of MCP server is it?\n"
            "  1) http   a server at a URL (Streamable HTTP; the older SSE transport is\n"
            "            detected on its own)\n"
            "  2) stdio  a local command the bridge starts and talks to over stdin/stdout\n");
    r = ask_choice("Choose 1-2: ", words, 2, -1, &k);
    if (r < 0)
        return r;
    a->transport = k == 0 ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO;
    return 0;
}

static int guided_url(struct add_args *a)
{
    while (!a->url) {
        char *answer = NULL;
        int r = ask("URL (e.g. https://mcp.example.com/mcp): ", &answer);
        if (r < 0)
            return r;
        if (url_answer_ok(answer)) {
            a->url = answer;
            answer = NULL;
        }
        free(answer);
    }
    return 0;
}

/* The command line typed, split: its first word the command, the others its arguments before
 * any --arg given on the command line. 0, -EAGAIN (said why: ask again), -ENOMEM, -ECANCELED. */
static int guided_command_once(struct add_args *a)
{
    struct strv words = STRV_INIT, args = STRV_INIT;
    const char *why = NULL;
    char *answer = NULL;
    int r = ask("Command line (e.g. npx -y @modelcontextprotocol/server-everything): ", &answer);
    if (r < 0)
        return r;
    r = split_words(answer, &words, &why);
    free(answer);
    if (r == -ENOMEM)
        goto out;
    if (r < 0 || words.n == 0) {
        fprintf(stderr, "%s: type the command and its arguments as in a shell\n",
                r < 0 ? why : "the command line is empty");
        r = -EAGAIN;
        goto out;
    }
    for (size_t i = 1; r >= 0 && i < words.n; i++)
        r = strv_push(&args, words.v[i]);
    for (size_t i = 0; r >= 0 && i < a->args.n; i++)
        r = strv_push(&args, a->args.v[i]);
    if (r < 0)
        goto out;
    a->command = strdup(words.v[0]);
    if (!a->command) {
        r = -ENOMEM;
        goto out;
    }
    strv_release_secure(&a->args);
    a->args = args;
    args = (struct strv)STRV_INIT;
out:
    strv_release_secure(&words);
    strv_release_secure(&args);
    return r;
}

/* NAME=value lines until an empty one. */
static int guided_env(struct add_args *a)
{
    const char *prompt = "Environment variable for it, NAME=value (${NAME} is asked of 'secrets' "
                         "at each start; empty line when done): ";
    for (;;) {
        char *answer = NULL;
        int r = ask(prompt, &answer);
        if (r < 0)
            return r;
        if (!answer[0]) {
            free(answer);
            return 0;
        }
        const char *eq = strchr(answer, '=');
        if (!eq || eq == answer) {
            fprintf(stderr, "type NAME=value, e.g. LOG_LEVEL=debug or API_KEY=${API_KEY}, or an "
                            "empty line when done\n");
        } else {
            r = strv_push(&a->env, answer);
            prompt = "Another one (empty line when done): ";
        }
        secure_free(answer); /* a value may be a credential typed in clear */
        if (r < 0)
            return r;
    }
}

static int guided_command(struct add_args *a)
{
    while (!a->command) {
        int r = guided_command_once(a);
        if (r < 0 && r != -EAGAIN)
            return r;
    }
    return a->env.n == 0 ? guided_env(a) : 0;
}

static int guided_name(struct add_args *a)
{
    char suggestion[ADD_SUGGEST_MAX] = "";
    if (a->transport == MCP_TRANSPORT_STDIO)
        add_name_from_command(a->command, a->args.v, suggestion);
    else
        add_name_from_url(a->url, suggestion);
    if (!add_name_ok(suggestion))
        suggestion[0] = 0;
    while (!a->name) {
        char prompt[128], *answer = NULL;
        if (suggestion[0])
            (void)snprintf(prompt, sizeof(prompt), "Name [%s]: ", suggestion);
        else
            (void)snprintf(prompt, sizeof(prompt), "Name: ");
        int r = ask_default(prompt, suggestion, &answer);
        if (r < 0)
            return r;
        if (add_name_ok(answer)) {
            a->name = answer;
            answer = NULL;
        } else
            fprintf(stderr, "%s: %s\n", answer[0] ? "not a usable name" : "the name is empty",
                    add_name_rule);
        free(answer);
    }
    return 0;
}

static int guided_bearer_env(struct add_args *a)
{
    char def[80], prompt[160];
    add_name_token_env(a->name, def, sizeof(def));
    (void)snprintf(prompt, sizeof(prompt),
                   "Secret or environment variable that holds the token [%s]: ", def);
    while (!a->bearer_env) {
        char *answer = NULL;
        int r = ask_default(prompt, def, &answer);
        if (r < 0)
            return r;
        if (name_is_valid(answer)) {
            a->bearer_env = answer;
            answer = NULL;
        } else
            fprintf(stderr, "a name is letters, digits and '_', not starting with a digit\n");
        free(answer);
    }
    return 0;
}

static int guided_auth(struct add_args *a)
{
    static const char *const words[] = {"none", "oauth", "bearer"};
    int k, r;
    fprintf(stderr,
            "How does it authenticate?\n"
            "  1) none    no credentials needed\n"
            "  2) oauth   sign in with the browser (once: mcp-auth %s)\n"
            "  3) bearer  a token from 'secrets' (a recipe) or an environment variable\n",
            a->name);
    r = ask_choice("Choose 1-3 [1]: ", words, 3, 0, &k);
    if (r < 0)
        return r;
    a->oauth = k == 1;
    return k == 2 ? guided_bearer_env(a) : 0;
}

static int guided_scope(struct add_args *a, const char *user_disp, const char *project_disp)
{
    static const char *const words[] = {"user", "project"};
    int k, r;
    fprintf(stderr,
            "Where should it be saved?\n"
            "  1) user     %s (in every project)\n"
            "  2) project  %s (in this directory only; can be shared with the repository)\n",
            user_disp, project_disp);
    r = ask_choice("Choose 1-2 [1]: ", words, 2, 0, &k);
    if (r < 0)
        return r;
    a->scope = k == 0 ? CFG_SCOPE_USER : CFG_SCOPE_PROJECT;
    return 0;
}

int add_guided(struct add_args *a, const char *user_disp, const char *project_disp)
{
    int r = 0;
    if (a->transport < 0)
        r = guided_transport(a);
    if (r >= 0 && a->transport != MCP_TRANSPORT_STDIO)
        r = guided_url(a);
    else if (r >= 0 && !a->command)
        r = guided_command(a);
    if (r >= 0 && !a->name)
        r = guided_name(a);
    if (r >= 0 && a->transport != MCP_TRANSPORT_STDIO && !a->oauth && !a->bearer_env &&
        !a->auth_none && a->headers.n == 0)
        r = guided_auth(a);
    if (r >= 0 && a->scope == CFG_SCOPE_NONE)
        r = guided_scope(a, user_disp, project_disp);
    return r;
}
