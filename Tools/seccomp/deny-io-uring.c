//===----------------------------------------------------------------------===//
// RingIO — deny-io-uring: runs a command under a seccomp filter that refuses io_uring, the way a
// default container does, so that RingIO's automatic fallback to its readiness (epoll) engine
// can be tested on a machine where io_uring works.
//
//   deny-io-uring COMMAND [ARGUMENT...]
//
// Installs a seccomp BPF filter that makes io_uring_setup, io_uring_enter and io_uring_register
// fail with EPERM and allows every other system call, then execs COMMAND (looked up in PATH).
// The filter is inherited by every process COMMAND starts (fork and exec keep it) and cannot be
// removed. Tools/run-without-io-uring.sh builds this file and runs `swift test` under it.
//
// Why EPERM: Docker Engine 25+ and containerd 2.0 leave the three calls out of their default
// seccomp profiles, whose default action is SCMP_ACT_ERRNO, and that returns EPERM; EPERM is
// also what `kernel.io_uring_disabled` gives. So EPERM is what a program sees in a default
// container, and what RingIO must take as "io_uring refused".
//
// The numbers: 425 io_uring_setup, 426 io_uring_enter, 427 io_uring_register, on x86_64
// (asm/unistd_64.h) and on aarch64 (asm-generic/unistd.h, which arm64 uses); the static
// assertions below check the headers agree. The filter
//   1. kills the process on a system call made with another architecture's calling convention
//      (i386's `int 0x80` on x86_64, AArch32 on arm64): a number means a call only within its
//      own table, and nothing run under this program has any business with another table;
//   2. on x86_64, kills the process on a call with the x32 bit (0x40000000) set, which would
//      otherwise reach the same kernel functions under other numbers (io_uring_setup is
//      0x40000000 + 425 there), as libseccomp does; -1 (no call at all) is let through;
//   3. returns EPERM for the three io_uring calls and allows everything else.
//
// Built with `cc -std=c11 -O2 -Wall -Wextra -Werror`; needs only libc and the kernel's UAPI
// headers (Linux 4.14+ for SECCOMP_RET_KILL_PROCESS).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

// MARK: - Architecture

#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#define CHECK_X32 1
// __X32_SYSCALL_BIT (asm/unistd.h), spelled out: not every libc's <sys/syscall.h> defines it.
#define X32_SYSCALL_BIT 0x40000000U
#elif defined(__aarch64__) && !defined(__ILP32__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define CHECK_X32 0
#else
#error "deny-io-uring supports x86_64 and aarch64 only"
#endif

#if !defined(__NR_io_uring_setup) || !defined(__NR_io_uring_enter) || !defined(__NR_io_uring_register)
#error "the kernel headers are too old to name the io_uring system calls (Linux 5.1+)"
#endif

_Static_assert(__NR_io_uring_setup == 425, "io_uring_setup is 425 on x86_64 and aarch64");
_Static_assert(__NR_io_uring_enter == 426, "io_uring_enter is 426 on x86_64 and aarch64");
_Static_assert(__NR_io_uring_register == 427, "io_uring_register is 427 on x86_64 and aarch64");

// MARK: - The filter

// Jump offsets count the instructions skipped after the jump itself.
static struct sock_filter filter[] = {
    // 1. The architecture the call was made with; anything but the native one is killed.
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),

    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if CHECK_X32
    // 2. x32 calls (the x32 bit set, AUDIT_ARCH_X86_64 all the same) are killed; -1, which is
    //    no call (the kernel answers ENOSYS, and a tracer uses it to skip one), goes on.
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 2),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xFFFFFFFFU, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif

    // 3. The three io_uring calls get EPERM; everything else is allowed.
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 3, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
};

// MARK: - Main

static void usage(FILE *stream, const char *name) {
    fprintf(stream,
            "usage: %s COMMAND [ARGUMENT...]\n"
            "Runs COMMAND under a seccomp filter that makes io_uring_setup, io_uring_enter and\n"
            "io_uring_register fail with EPERM, as Docker's default seccomp profile does.\n",
            name);
}

int main(int argc, char *argv[]) {
    const char *name = argc > 0 ? argv[0] : "deny-io-uring";
    if (argc < 2) {
        usage(stderr, name);
        return 2;
    }

    struct sock_fprog program = {
        .len = (unsigned short)(sizeof filter / sizeof filter[0]),
        .filter = filter,
    };
    // Without no_new_privs an unprivileged process may not install a filter; with it, a
    // set-user-ID program under the filter does not gain privileges (it runs as the caller).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) {
        perror("deny-io-uring: prctl(PR_SET_NO_NEW_PRIVS)");
        return 1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0L, 0L) != 0) {
        perror("deny-io-uring: prctl(PR_SET_SECCOMP)");
        return 1;
    }

    execvp(argv[1], argv + 1);
    // Only reached when execvp failed: 127 when the command was not found, 126 otherwise, as a
    // shell does.
    int error = errno;
    fprintf(stderr, "deny-io-uring: %s: ", argv[1]);
    errno = error;
    perror("execvp");
    return error == ENOENT ? 127 : 126;
}
