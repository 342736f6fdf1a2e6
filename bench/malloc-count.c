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
 * Built by bench/run: cc -O2 -shared -fPIC -o malloc-count.so malloc-count.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
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

static void count(int which, uint64_t bytes)
{
    /* libcurl's resolver may run in a thread: the adds must not race */
    __atomic_add_fetch(&counters[which], 1, __ATOMIC_RELAXED);
    if (bytes)
        __atomic_add_fetch(&counters[C_BYTES], bytes, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void malloc_count_init(void)
{
    const char *path = getenv("MALLOC_COUNT_FILE");
    void *map;
    int fd;

    unsetenv("LD_PRELOAD");
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
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    count(C_CALLOC, (uint64_t)n * size);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    count(C_REALLOC, size);
    return __libc_realloc(p, size);
}

void free(void *p)
{
    if (p)
        count(C_FREE, 0);
    __libc_free(p);
}
