/*
 * malloc-count: an LD_PRELOAD library that counts a process's calls to malloc, calloc, realloc
 * and free, for bench/run's allocation phase. The counters live in a file mapped shared
 * (MALLOC_COUNT_FILE, created here), so the driver reads them whenever it likes, before and
 * after a phase, without a signal the measured program might block or handle itself, and
 * without waiting for its exit. The layout is five little-endian uint64: malloc, calloc,
 * realloc, free, bytes asked for (malloc + calloc + realloc sizes).
 *
 * The real allocator is glibc's, reached through its __libc_* entry points rather than dlsym,
 * whose own calloc would recurse into ours. LD_PRELOAD is taken out of the environment at load,
 * so the programs the measured process starts (its upstream servers) are not counted.
 *
 * With MALLOC_COUNT_BACKTRACE=FILE, each malloc, calloc and realloc also appends its call stack
 * to FILE ("@ malloc SIZE" and one line per frame, from backtrace_symbols_fd): slow, for finding
 * where the allocations of a call come from, never for the timed runs. Group the records by
 * stack and count them: a stack seen once per call of a phase is a per-call allocation (the
 * frames print as BINARY(+OFFSET), which addr2line -f -e BINARY OFFSET names).
 *
 * Built by bench/run: cc -O2 -shared -fPIC -o malloc-count.so malloc-count.c
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

enum { C_MALLOC, C_CALLOC, C_REALLOC, C_FREE, C_BYTES, C_N };

/* Until the file is mapped (or when it cannot be), counts go to this scratch array. */
static uint64_t scratch[C_N];
static uint64_t *counters = scratch;
/* MALLOC_COUNT_BACKTRACE's file, or -1 */
static int trace_fd = -1;
/* backtrace() allocates on its first call (it loads libgcc_s): those allocations are not traced */
static __thread int in_trace;

static void count(int which, uint64_t bytes)
{
    /* libcurl's resolver may run in a thread: the adds must not race */
    __atomic_add_fetch(&counters[which], 1, __ATOMIC_RELAXED);
    if (bytes)
        __atomic_add_fetch(&counters[C_BYTES], bytes, __ATOMIC_RELAXED);
}

static void trace(const char *what, size_t size)
{
    void *frames[32];
    char head[64];
    int n, len;

    if (trace_fd < 0 || in_trace)
        return;
    in_trace = 1;
    n = backtrace(frames, 32);
    len = snprintf(head, sizeof(head), "@ %s %zu\n", what, size);
    if (len > 0)
        (void)!write(trace_fd, head, (size_t)len);
    /* frame 0 is trace() itself, frame 1 our malloc */
    if (n > 2)
        backtrace_symbols_fd(frames + 2, n - 2, trace_fd);
    in_trace = 0;
}

__attribute__((constructor)) static void malloc_count_init(void)
{
    const char *path = getenv("MALLOC_COUNT_FILE");
    const char *trace_path = getenv("MALLOC_COUNT_BACKTRACE");
    void *map;
    int fd;

    unsetenv("LD_PRELOAD");
    if (trace_path) {
        trace_fd = open(trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
        unsetenv("MALLOC_COUNT_BACKTRACE");
    }
    if (!path)
        return;
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (ftruncate(fd, (off_t)sizeof(scratch)) < 0) {
        (void)close(fd);
        return;
    }
    map = mmap(NULL, sizeof(scratch), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    (void)close(fd);
    if (map == MAP_FAILED)
        return;
    /* what the loader and the constructors before ours allocated counts too */
    for (int i = 0; i < C_N; i++)
        ((uint64_t *)map)[i] = scratch[i];
    counters = map;
}

void *malloc(size_t size)
{
    count(C_MALLOC, size);
    trace("malloc", size);
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    count(C_CALLOC, (uint64_t)n * size);
    trace("calloc", n * size);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    count(C_REALLOC, size);
    trace("realloc", size);
    return __libc_realloc(p, size);
}

void free(void *p)
{
    if (p)
        count(C_FREE, 0);
    __libc_free(p);
}
