/* io.c - SIGPIPE-safe writes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "credkit/io.h"

ssize_t writev_nosigpipe(int fd, const struct iovec *iov, int n)
{
    sigset_t pipe_set, old, pending;
    (void)sigemptyset(&pipe_set);
    (void)sigaddset(&pipe_set, SIGPIPE);
    (void)pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;

    ssize_t w;
    do
        w = writev(fd, iov, n);
    while (w < 0 && errno == EINTR);
    int saved = errno;

    if (w < 0 && saved == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

ssize_t write_nosigpipe(int fd, const void *p, size_t n)
{
    struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
    return writev_nosigpipe(fd, &iov, 1);
}
