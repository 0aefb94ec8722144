// RingIO — benchmarks: what UDP_SEGMENT (GSO) and UDP_GRO save per datagram over loopback.
//
// A measurement behind a decision (Benchmarks/README.md, "UDP_SEGMENT and UDP_GRO"), not part of
// any package target. One sender (CPU 0) and one receiver (a child process, CPU 1) of datagrams
// of SIZE bytes: the sender sends one datagram per `send`, BATCH per `sendmmsg`, or BATCH as one
// `sendmsg` with UDP_SEGMENT; the receiver takes one per `recvmsg`, BATCH per `recvmmsg`, or,
// with UDP_GRO on, a coalesced run per `recvmsg`. The sender stays at most 512 datagrams ahead
// of what the receiver has read (a shared counter), so none is dropped. Prints each side's CPU
// time per datagram (CLOCK_THREAD_CPUTIME_ID) and the rate.
//
//   cc -O2 -o /tmp/udp-segment-probe Benchmarks/udp-segment-probe.c
//   /tmp/udp-segment-probe SIZE COUNT single|mmsg|gso single|mmsg|gro [BATCH=16]
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { WINDOW = 512 };

struct shared {
    _Atomic uint64_t received;
    _Atomic int ready;
    double recv_cpu;
    uint64_t recv_calls;
};

static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: udp-segment-probe SIZE COUNT single|mmsg|gso single|mmsg|gro [BATCH]\n");
        return 2;
    }
    int size = atoi(argv[1]);
    uint64_t count = strtoull(argv[2], NULL, 10);
    const char *send_mode = argv[3], *recv_mode = argv[4];
    int batch = argc > 5 ? atoi(argv[5]) : 16;
    if (size < 1 || size > 65507 || count == 0 || batch < 1 || batch > 64 || (size_t)size * batch > 65507) {
        fprintf(stderr, "udp-segment-probe: SIZE in 1...65507, COUNT > 0, BATCH in 1...64, SIZE × BATCH ≤ 65507\n");
        return 2;
    }
    struct shared *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    int receiver = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(receiver, (struct sockaddr *)&address, sizeof address);
    socklen_t length = sizeof address;
    getsockname(receiver, (struct sockaddr *)&address, &length);
    int big = 4 << 20;
    setsockopt(receiver, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (strcmp(recv_mode, "gro") == 0) {
        int one = 1;
        if (setsockopt(receiver, IPPROTO_UDP, UDP_GRO, &one, sizeof one) != 0) perror("UDP_GRO");
    }

    pid_t child = fork();
    if (child == 0) {
        pin(1);
        uint8_t *buffers = malloc((size_t)64 * 65536);
        struct mmsghdr messages[64];
        struct iovec iovecs[64];
        char control[64][CMSG_SPACE(sizeof(int))];
        atomic_store(&shared->ready, 1);
        double start = thread_cpu();
        uint64_t got = 0, calls = 0;
        while (got < count) {
            if (strcmp(recv_mode, "mmsg") == 0) {
                for (int i = 0; i < batch; i++) {
                    iovecs[i] = (struct iovec){buffers + (size_t)i * 65536, 65536};
                    messages[i].msg_hdr = (struct msghdr){.msg_iov = &iovecs[i], .msg_iovlen = 1};
                }
                int n = recvmmsg(receiver, messages, batch, MSG_WAITFORONE, NULL);
                if (n < 0) { perror("recvmmsg"); exit(1); }
                got += n;
            } else {
                iovecs[0] = (struct iovec){buffers, 65536};
                struct msghdr message = {
                    .msg_iov = iovecs, .msg_iovlen = 1, .msg_control = control[0], .msg_controllen = sizeof control[0]};
                ssize_t n = recvmsg(receiver, &message, 0);
                if (n < 0) { perror("recvmsg"); exit(1); }
                int segment = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
                    if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) memcpy(&segment, CMSG_DATA(c), sizeof segment);
                }
                got += segment > 0 ? (uint64_t)((n + segment - 1) / segment) : 1;
            }
            calls++;
            atomic_store_explicit(&shared->received, got, memory_order_release);
        }
        shared->recv_cpu = thread_cpu() - start;
        shared->recv_calls = calls;
        exit(0);
    }
    pin(0);
    while (!atomic_load(&shared->ready)) sched_yield();
    int sender = socket(AF_INET, SOCK_DGRAM, 0);
    connect(sender, (struct sockaddr *)&address, sizeof address);
    uint8_t *payload = calloc((size_t)batch, (size_t)size);
    struct mmsghdr messages[64];
    struct iovec iovecs[64];
    char control[CMSG_SPACE(sizeof(uint16_t))];
    double wall = now(), start = thread_cpu();
    uint64_t sent = 0, calls = 0;
    while (sent < count) {
        while (sent - atomic_load_explicit(&shared->received, memory_order_acquire) + batch > WINDOW) {
            sched_yield();  // the receiver is behind: let it run
        }
        int n = (int)(count - sent < (uint64_t)batch ? count - sent : (uint64_t)batch);
        if (strcmp(send_mode, "single") == 0) {
            for (int i = 0; i < n; i++) {
                if (send(sender, payload, size, 0) != size) { perror("send"); exit(1); }
                calls++;
            }
        } else if (strcmp(send_mode, "mmsg") == 0) {
            for (int i = 0; i < n; i++) {
                iovecs[i] = (struct iovec){payload + (size_t)i * size, (size_t)size};
                messages[i].msg_hdr = (struct msghdr){.msg_iov = &iovecs[i], .msg_iovlen = 1};
            }
            if (sendmmsg(sender, messages, n, 0) != n) { perror("sendmmsg"); exit(1); }
            calls++;
        } else {
            struct iovec iovec = {payload, (size_t)size * n};
            struct msghdr message = {.msg_iov = &iovec, .msg_iovlen = 1};
            if (n > 1) {
                message.msg_control = control;
                message.msg_controllen = sizeof control;
                struct cmsghdr *c = CMSG_FIRSTHDR(&message);
                c->cmsg_level = SOL_UDP;
                c->cmsg_type = UDP_SEGMENT;
                c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
                uint16_t segment = (uint16_t)size;
                memcpy(CMSG_DATA(c), &segment, sizeof segment);
            }
            if (sendmsg(sender, &message, 0) != (ssize_t)size * n) { perror("sendmsg"); exit(1); }
            calls++;
        }
        sent += n;
    }
    double send_cpu = thread_cpu() - start;
    int status;
    waitpid(child, &status, 0);
    wall = now() - wall;
    printf(
        "size %5d send %-6s recv %-6s batch %2d: sender %6.0f ns/dgram (%llu calls), receiver %6.0f ns/dgram (%llu calls), "
        "both %6.0f ns, %.0f k dgram/s\n",
        size, send_mode, recv_mode, batch, send_cpu / count * 1e9, (unsigned long long)calls,
        shared->recv_cpu / count * 1e9, (unsigned long long)shared->recv_calls, (send_cpu + shared->recv_cpu) / count * 1e9,
        count / wall / 1e3);
    return WEXITSTATUS(status);
}
