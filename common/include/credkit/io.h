/* io.h - writes to descriptors whose reader may be gone.
 *
 * A write to a pipe whose reader has closed raises SIGPIPE, which kills the process unless the
 * process ignores it. Library code owns no process-wide state, so instead of changing the
 * disposition these block SIGPIPE in the calling thread around the write, consume the signal
 * that write raised (unless one was already pending, which is not ours to eat) and restore the
 * mask: the approach of libcurl and libgit2. The write then fails with EPIPE, as it should. */
#pragma once

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* One writev(2) of iov[0..n) that returns -1/EPIPE instead of raising SIGPIPE. Retries on EINTR;
 * otherwise as writev(2): the count written, or -1 with errno set (EAGAIN on a full
 * non-blocking descriptor). */
ssize_t writev_nosigpipe(int fd, const struct iovec *iov, int n);

/* The same for one buffer. */
ssize_t write_nosigpipe(int fd, const void *p, size_t n);
