/* procwatch.h - whether a process is still running, for the tests of code that starts and kills
 * them (child, stdio servers, helper processes); and a bounded wait for it to stop. */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* Gone, or a zombie waiting for its parent (init, or a test that is not it): either way no
 * longer running. */
static inline bool process_gone(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the state follows "(comm)" */
    return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* Waits, bounded, for pid to stop running. */
static inline bool wait_gone(pid_t pid, int max_ms)
{
    for (int t = 0; t <= max_ms; t += 10) {
        if (process_gone(pid))
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}
