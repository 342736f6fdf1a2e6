/* cmd_reload.c - "mcp-bridge reload": every running `mcp-bridge serve` of this user reloads its
 * configuration now, as SIGHUP makes it, without the user finding and signalling the processes.
 *
 * A bridge already applies a changed file by itself (cmd_serve.c's watch); this is for what the
 * watch cannot see (a bridge started with --no-watch, a directory that cannot be watched, an
 * environment variable or a secret recipe changed) and for scripts. The bridges are found in
 * /proc: processes of this user named mcp-bridge whose command is serve (or none, which is
 * serve) and that read the same agent directory ($PI_CODING_AGENT_DIR, else ~/.pi/agent) where
 * that can be told. Only those get SIGHUP: test, call and the other one-shot commands do not
 * handle it and would end; connect ignores it, so it is left alone too. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credkit/args.h"
#include "credkit/buf.h"
#include "credkit/path.h"

#include "cli/cli.h"

static const char reload_help[] =
    "usage: mcp-bridge reload\n"
    "\n"
    "Make every running 'mcp-bridge serve' of yours that reads this configuration (the same\n"
    "agent directory, ~/.pi/agent or $PI_CODING_AGENT_DIR) reload it now, as SIGHUP does:\n"
    "servers added, removed or changed connect or disconnect, the rest are left alone.\n"
    "A bridge applies a changed mcp.json by itself; this is for what it cannot see (one started\n"
    "with --no-watch, a changed environment or secret recipe) and for scripts. It says which\n"
    "bridges it asked; each logs the result on its own standard error (the agent's log).\n"
    "\n"
    "exit status: 0 asked (or none running: said on stderr), 1 one could not be asked,\n"
    "2 usage error.\n"
    "\n"
    "examples:\n"
    "  mcp-bridge reload\n";

/* The words of /proc/PID/cmdline into v (at most n), NUL-separated in buf; how many. */
static size_t read_cmdline(const char *pid, char *buf, size_t size, char **v, size_t n)
{
    char path[64];
    (void)snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t len = read(fd, buf, size - 1);
    (void)close(fd);
    if (len <= 0)
        return 0;
    buf[len] = '\0';
    size_t k = 0;
    for (char *p = buf; p < buf + len && k < n; p += strlen(p) + 1)
        v[k++] = p;
    return k;
}

/* The agent directory process pid reads its configuration from ($PI_CODING_AGENT_DIR, else
 * $HOME/.pi/agent) into out; false when its environment cannot be read (a bridge is not
 * dumpable: only root reads it). */
static bool agent_dir_of(const char *pid, char *out, size_t size)
{
    char path[64], env[65536];
    (void)snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t len = read(fd, env, sizeof(env) - 1);
    (void)close(fd);
    if (len <= 0)
        return false;
    env[len] = '\0';
    const char *dir = NULL, *home = NULL;
    for (char *p = env; p < env + len; p += strlen(p) + 1) {
        if (strncmp(p, "PI_CODING_AGENT_DIR=", 20) == 0 && p[20])
            dir = p + 20;
        else if (strncmp(p, "HOME=", 5) == 0)
            home = p + 5;
    }
    if (dir)
        (void)snprintf(out, size, "%s", dir);
    else if (home)
        (void)snprintf(out, size, "%s/.pi/agent", home);
    else
        return false;
    return true;
}

/* Whether process pid is an `mcp-bridge serve` of ours that reads the configuration of mine
 * (agent_dir; NULL: any): where its environment can be read, its agent directory must be the
 * same, so that a reload never reaches the bridges of another configuration (another HOME, a
 * test's). */
static bool is_our_bridge(const char *pid, const char *agent_dir)
{
    char path[64], comm[32] = "", buf[8192];
    char *v[64];
    struct stat st;

    (void)snprintf(path, sizeof(path), "/proc/%s", pid);
    if (stat(path, &st) < 0 || st.st_uid != geteuid())
        return false;
    (void)snprintf(path, sizeof(path), "/proc/%s/comm", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool named = fgets(comm, sizeof(comm), f) && strcmp(comm, "mcp-bridge\n") == 0;
    (void)fclose(f);
    if (!named)
        return false;
    size_t n = read_cmdline(pid, buf, sizeof(buf), v, sizeof(v) / sizeof(v[0]));
    if (n == 0 || !cli_command_line_serves((int)n, v))
        return false;
    char theirs[4096];
    return !agent_dir || !agent_dir_of(pid, theirs, sizeof(theirs)) ||
           strcmp(theirs, agent_dir) == 0;
}

const struct option cli_reload_options[] = {{0}};

int cmd_reload(int argc, char **argv, const struct args_globals *g, struct log *log)
{
    struct buf pids;
    size_t asked = 0, failed = 0;
    (void)g;
    if (args_wants_help(argc, argv)) {
        fputs(reload_help, stdout);
        return BRIDGE_EXIT_OK;
    }
    optind = 0;
    if (getopt_long(argc, argv, "", cli_reload_options, NULL) != -1)
        return cli_option_error(log, argv, "", cli_reload_options);
    if (optind < argc) {
        log_error(log, "reload takes no argument (see 'mcp-bridge reload --help')");
        return BRIDGE_EXIT_USAGE;
    }
    DIR *d = opendir("/proc");
    if (!d) {
        log_error(log, "cannot read /proc: %s", strerror(errno));
        return BRIDGE_EXIT_FAILED;
    }
    buf_init(&pids, 64 * 1024);
    char *mine = NULL;
    struct err e = ERR_INIT;
    if (path_agent_dir(&mine, &e) < 0)
        mine = NULL; /* no HOME: every bridge of ours */
    pid_t self = getpid();
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (!isdigit((unsigned char)name[0]) || strtol(name, NULL, 10) == self ||
            !is_our_bridge(name, mine))
            continue;
        if (kill((pid_t)strtol(name, NULL, 10), SIGHUP) < 0) {
            if (errno != ESRCH) { /* one that just ended has nothing to reload */
                log_error(log, "cannot ask the bridge %s to reload: %s", name, strerror(errno));
                failed++;
            }
            continue;
        }
        asked++;
        if (buf_printf(&pids, "%s%s", pids.len ? ", " : "", name) < 0)
            continue; /* the list is cut: the count says the rest */
    }
    (void)closedir(d);
    free(mine);
    if (asked)
        printf("asked %zu running bridge%s to reload (pid %s)\n", asked, asked == 1 ? "" : "s",
               buf_str(&pids));
    else if (!failed)
        log_warn(log, "no 'mcp-bridge serve' of yours is running: nothing to reload");
    buf_release(&pids);
    return failed ? BRIDGE_EXIT_FAILED : BRIDGE_EXIT_OK;
}
