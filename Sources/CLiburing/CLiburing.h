// RingIO — CLiburing: the liburing shim. The include order below matters; the comments say why.
#ifndef CLIBURING_H
#define CLIBURING_H

// glibc first, so <features.h> sees the same macros as Swift's Glibc module;
// liburing.h's own _GNU_SOURCE then changes nothing (the order swift-nio's CNIOLinux.h uses).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <inttypes.h>
#include <time.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <unistd.h>
// The kernel UAPI header before liburing's private copy (same guard, LINUX_IO_URING_H):
// swift-system's CSystem includes this one, and two different io_uring_sqe layouts in one
// Swift module fail to merge.
#include <linux/io_uring.h>
#include <liburing.h>

// Importer limitation: IOSQE_* are macros built over enum bit positions.
static const unsigned char CLiburing_IOSQE_IO_LINK = IOSQE_IO_LINK;
static const unsigned char CLiburing_IOSQE_ASYNC = IOSQE_ASYNC;
static const unsigned char CLiburing_IOSQE_BUFFER_SELECT = IOSQE_BUFFER_SELECT;
// Importer limitation: POLLRDHUP needs _GNU_SOURCE (kept off above); EPOLLRDHUP has the same value.
static const unsigned CLiburing_POLLRDHUP = EPOLLRDHUP;
// Importer limitation: LIBURING_UDATA_TIMEOUT is ((__u64) -1), which Swift rejects as a literal.
static const uint64_t CLiburing_UDATA_TIMEOUT = LIBURING_UDATA_TIMEOUT;

// Importer limitation: IOSQE_BUFFER_SELECT is a macro over an enum bit position, and
// buf_group sits in an anonymous union.
static inline void CLiburing_sqe_set_buffer_group(struct io_uring_sqe *sqe, uint16_t group) {
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = group;
}

// rw_flags sits in an anonymous union: RWF_NOWAIT makes a read fail with EAGAIN instead of
// waiting for data.
static inline void CLiburing_sqe_set_rw_flags(struct io_uring_sqe *sqe, int flags) { sqe->rw_flags = flags; }
// RWF_NOWAIT: glibc declares it only with _GNU_SOURCE, <linux/fs.h> clashes with glibc's
// headers; the value is kernel ABI (include/uapi/linux/fs.h).
static const int CLiburing_RWF_NOWAIT = 0x00000008;

// pipe2(2) and F_SETPIPE_SZ need _GNU_SOURCE (kept off above); the values are kernel ABI
// (include/uapi/linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 7 and + 8).
static inline int CLiburing_pipe_cloexec(int fds[2]) { return (int)syscall(SYS_pipe2, fds, O_CLOEXEC); }
static const int CLiburing_F_SETPIPE_SZ = 1031;
static const int CLiburing_F_GETPIPE_SZ = 1032;

// pidfd_open(2) has no glibc wrapper before 2.36 (Debian 12 has 2.36, but the variadic
// syscall(2) is not callable from Swift either way).
static inline int CLiburing_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

// MARK: The readiness engine (Sources/RingIO/Engine/Backends/Readiness)
//
// The calls below are declared by glibc only with _GNU_SOURCE (kept off above), or not at all:
// each is the raw system call, on 64-bit Linux (x86_64, aarch64), where an offset is one
// register (the high half the kernel takes for 32-bit targets is 0).

// preadv2/pwritev2 with RWF_NOWAIT: a read or write that fails with EAGAIN instead of waiting
// (offset -1: the file position).
static inline ssize_t CLiburing_preadv2(int fd, const struct iovec *iov, int count, int64_t offset, int flags) {
    return (ssize_t)syscall(SYS_preadv2, fd, iov, count, (long)offset, 0L, flags);
}
static inline ssize_t CLiburing_pwritev2(int fd, const struct iovec *iov, int count, int64_t offset, int flags) {
    return (ssize_t)syscall(SYS_pwritev2, fd, iov, count, (long)offset, 0L, flags);
}
// accept4(2) with SOCK_CLOEXEC.
static inline int CLiburing_accept_cloexec(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, SOCK_CLOEXEC);
}
// splice(2); an offset of -1 means "the descriptor's position" (a NULL offset pointer).
static inline ssize_t CLiburing_splice(int input, int64_t inputOffset, int output, int64_t outputOffset,
                                       size_t length, unsigned flags) {
    int64_t in = inputOffset, out = outputOffset;
    return (ssize_t)syscall(SYS_splice, input, inputOffset < 0 ? (int64_t *)0 : &in,
                            output, outputOffset < 0 ? (int64_t *)0 : &out, length, flags);
}
static const unsigned CLiburing_SPLICE_F_NONBLOCK = 2;  // include/uapi/linux/splice.h
static const unsigned CLiburing_EPOLLET = EPOLLET;

// A provided-buffer ring read from user space, as the kernel reads it: the next buffer the
// application published (`*head` is the consumer's position, the caller's own), or false
// when none is (the tail, in the union over bufs[0], is the application's release store).
static inline bool CLiburing_buf_ring_peek(struct io_uring_buf_ring *ring, uint16_t head, unsigned mask,
                                           void **address, unsigned *length, uint16_t *id) {
    uint16_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
    if (head == tail) return false;
    struct io_uring_buf *buffer = &ring->bufs[head & mask];
    *address = (void *)(uintptr_t)buffer->addr;
    *length = buffer->len;
    *id = buffer->bid;
    return true;
}

#endif
