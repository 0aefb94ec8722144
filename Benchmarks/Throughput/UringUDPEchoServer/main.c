//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the physical reference for datagrams, a minimal liburing
// UDP echo server.
//
// One thread, one ring, one UDP socket. One multishot recvmsg takes its buffers from a
// provided buffer ring; each buffer holds what the kernel writes for one datagram (the
// io_uring_recvmsg_out header, the sender's address, the payload). Each datagram is sent back
// to its sender with a sendmsg whose name and iovec point into that buffer (no copy), and the
// buffer goes back to the ring when the send completes.
//
//   uring-udp-echo-server --port P [--host 127.0.0.1] [--buffers 256] [--max-datagram 2048]
//
// Written for liburing 2.3 (Debian 12), with the buffer ring mapped and registered by hand as
// in uring-echo-server.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

// MARK: - Configuration

enum {
    QUEUE_DEPTH = 1024,  // SQ entries; the CQ gets four times as many (IORING_SETUP_CQSIZE)
    BUFFER_GROUP = 0,    // the one provided-buffer group
};

// user_data: | kind (8 bits) | buffer id (32 bits) |.
enum op_kind { OP_RECV = 1, OP_SEND, OP_SIGNAL };

static inline uint64_t make_user_data(enum op_kind kind, uint32_t id) { return ((uint64_t)kind << 56) | id; }
static inline enum op_kind user_data_kind(uint64_t data) { return (enum op_kind)(data >> 56); }
static inline uint32_t user_data_id(uint64_t data) { return (uint32_t)data; }

// MARK: - State

// The sendmsg of one buffer: its message and iovec point into the buffer itself, so a buffer
// being sent is never handed back to the kernel before the send completes.
struct send_context {
    struct msghdr message;
    struct iovec iovec;
};

static struct io_uring ring;
static int socket_fd = -1;
static int signal_fd = -1;
static struct signalfd_siginfo signal_info;

static struct io_uring_buf_ring *buffer_ring;
static uint8_t *buffer_memory;  // buffer_count * buffer_size bytes; buffer id b at b * buffer_size
static uint32_t buffer_count = 256, max_datagram = 2048, buffer_size;
static uint32_t buffers_to_return;  // added to the buffer ring in this batch, not yet advanced
static uint32_t buffers_held;       // taken by the kernel for a datagram and not returned yet
static struct send_context *send_contexts;  // per buffer id

// The multishot recvmsg's template: the kernel reads only its name and control lengths.
static struct msghdr receive_template;
static int recv_armed;    // the multishot recvmsg may still post a completion
static int recv_starved;  // it ended with ENOBUFS: re-arm once buffers come back
static uint64_t truncated, dropped_sends;

// MARK: - Helpers

static void die(const char *what, int error) {
    fprintf(stderr, "uring-udp-echo-server: %s: %s\n", what, strerror(error));
    exit(1);
}

static void usage(const char *message) {
    fprintf(stderr, "uring-udp-echo-server: %s\n", message);
    fprintf(
        stderr,
        "usage: uring-udp-echo-server --port P [--host 127.0.0.1] [--buffers 256] [--max-datagram 2048]\n");
    exit(2);
}

// An SQE, submitting what is queued first if the SQ is full.
static struct io_uring_sqe *get_sqe(void) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    while (sqe == NULL) {
        int result = io_uring_submit(&ring);
        if (result < 0 && result != -EINTR && result != -EAGAIN && result != -EBUSY) die("io_uring_submit", -result);
        sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
}

// MARK: - The buffer ring

static uint8_t *buffer_address(uint32_t id) { return buffer_memory + (size_t)id * buffer_size; }

static void setup_buffer_ring(void) {
    size_t ring_bytes = buffer_count * sizeof(struct io_uring_buf);
    buffer_ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer_ring == MAP_FAILED) die("mmap (buffer ring)", errno);
    struct io_uring_buf_reg registration = {
        .ring_addr = (uint64_t)(uintptr_t)buffer_ring, .ring_entries = buffer_count, .bgid = BUFFER_GROUP};
    int result = io_uring_register_buf_ring(&ring, &registration, 0);
    if (result < 0) die("io_uring_register_buf_ring", -result);
    io_uring_buf_ring_init(buffer_ring);

    // Each buffer: the recvmsg header, room for any address, then the payload.
    buffer_size = (uint32_t)(sizeof(struct io_uring_recvmsg_out) + sizeof(struct sockaddr_storage)) + max_datagram;
    buffer_memory = mmap(
        NULL, (size_t)buffer_count * buffer_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer_memory == MAP_FAILED) die("mmap (buffers)", errno);
    int mask = io_uring_buf_ring_mask(buffer_count);
    for (uint32_t id = 0; id < buffer_count; id++) {
        io_uring_buf_ring_add(buffer_ring, buffer_address(id), buffer_size, (unsigned short)id, mask, (int)id);
    }
    io_uring_buf_ring_advance(buffer_ring, (int)buffer_count);
    send_contexts = calloc(buffer_count, sizeof *send_contexts);
    if (send_contexts == NULL) die("calloc", ENOMEM);
    receive_template.msg_namelen = sizeof(struct sockaddr_storage);
    receive_template.msg_controllen = 0;
}

// Gives buffer `id` back to the kernel; visible at the next `publish_returned_buffers`.
static void return_buffer(uint32_t id) {
    io_uring_buf_ring_add(
        buffer_ring, buffer_address(id), buffer_size, (unsigned short)id, io_uring_buf_ring_mask(buffer_count),
        (int)buffers_to_return);
    buffers_to_return++;
    buffers_held--;
}

static void publish_returned_buffers(void) {
    if (buffers_to_return == 0) return;
    io_uring_buf_ring_advance(buffer_ring, (int)buffers_to_return);
    buffers_to_return = 0;
}

// MARK: - Operations

static void arm_signal_read(void) {
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_read(sqe, signal_fd, &signal_info, sizeof signal_info, 0);
    io_uring_sqe_set_data64(sqe, make_user_data(OP_SIGNAL, 0));
}

static void arm_recv(void) {
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_recvmsg_multishot(sqe, socket_fd, &receive_template, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUFFER_GROUP;
    io_uring_sqe_set_data64(sqe, make_user_data(OP_RECV, 0));
    recv_armed = 1;
}

// Sends the datagram in buffer `id` back to its sender, from the buffer.
static void start_send(uint32_t id, struct io_uring_recvmsg_out *out, void *payload, uint32_t length) {
    struct send_context *context = &send_contexts[id];
    context->iovec = (struct iovec){.iov_base = payload, .iov_len = length};
    context->message = (struct msghdr){
        .msg_name = io_uring_recvmsg_name(out), .msg_namelen = out->namelen, .msg_iov = &context->iovec, .msg_iovlen = 1};
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_sendmsg(sqe, socket_fd, &context->message, 0);
    io_uring_sqe_set_data64(sqe, make_user_data(OP_SEND, id));
}

// MARK: - Completions

static void on_recv(struct io_uring_cqe *cqe) {
    if (!(cqe->flags & IORING_CQE_F_MORE)) recv_armed = 0;
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        uint32_t id = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        buffers_held++;
        struct io_uring_recvmsg_out *out =
            cqe->res >= 0 ? io_uring_recvmsg_validate(buffer_address(id), cqe->res, &receive_template) : NULL;
        if (out == NULL) {
            return_buffer(id);
        } else {
            if (out->flags & MSG_TRUNC) truncated++;
            void *payload = io_uring_recvmsg_payload(out, &receive_template);
            uint32_t length = io_uring_recvmsg_payload_length(out, cqe->res, &receive_template);
            start_send(id, out, payload, length);
        }
    }
    if (cqe->res == -ENOBUFS) {
        recv_starved = 1;  // every buffer is being sent: re-armed when some come back
    } else if (cqe->res < 0 && cqe->res != -EINTR && cqe->res != -ECONNREFUSED) {
        fprintf(stderr, "uring-udp-echo-server: recvmsg: %s\n", strerror(-cqe->res));
    }
}

static void on_send(uint32_t id, struct io_uring_cqe *cqe) {
    // A failed send (the sender went away: ECONNREFUSED…) drops that datagram, as UDP may.
    if (cqe->res < 0) dropped_sends++;
    return_buffer(id);
}

// After a batch of completions: the buffers back to the kernel, the receive re-armed if it
// ended (the kernel ends a multishot receive on ENOBUFS, or on CQ pressure).
static void flush_batch(void) {
    publish_returned_buffers();
    if (!recv_armed && (!recv_starved || buffers_held < buffer_count)) {
        recv_starved = 0;
        arm_recv();
    }
}

// MARK: - Start

static int parse_number(const char *text, long minimum, long maximum, const char *name) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text || value < minimum || value > maximum) {
        char message[128];
        snprintf(message, sizeof message, "%s must be a number from %ld to %ld", name, minimum, maximum);
        usage(message);
    }
    return (int)value;
}

static int setup_socket(const char *host, int port) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) usage("--host must be an IPv4 address");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket", errno);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) die("bind", errno);
    return fd;
}

static void setup_ring(void) {
    // As uring-echo-server: deferred task work on one issuer thread (6.1), else cooperative
    // task work (5.19), else the defaults.
    static const unsigned attempts[] = {
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int result = -EINVAL;
    for (size_t i = 0; i < sizeof attempts / sizeof attempts[0] && result == -EINVAL; i++) {
        struct io_uring_params params = {.flags = attempts[i] | IORING_SETUP_CQSIZE, .cq_entries = 4 * QUEUE_DEPTH};
        result = io_uring_queue_init_params(QUEUE_DEPTH, &ring, &params);
    }
    if (result < 0) die("io_uring_queue_init_params", -result);
    io_uring_register_ring_fd(&ring);  // optional: saves an fd lookup per io_uring_enter
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = -1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage("every option takes a value");
        const char *option = argv[i], *value = argv[++i];
        if (strcmp(option, "--port") == 0) {
            port = parse_number(value, 0, 65535, "--port");
        } else if (strcmp(option, "--host") == 0) {
            host = value;
        } else if (strcmp(option, "--buffers") == 0) {
            buffer_count = (uint32_t)parse_number(value, 1, 32768, "--buffers");
            if (buffer_count & (buffer_count - 1)) usage("--buffers must be a power of two");
        } else if (strcmp(option, "--max-datagram") == 0) {
            max_datagram = (uint32_t)parse_number(value, 1, 65535, "--max-datagram");
        } else {
            char message[160];
            snprintf(message, sizeof message, "unknown option %.100s", option);
            usage(message);
        }
    }
    if (port < 0) usage("--port is required");

    // SIGINT/SIGTERM arrive as a read on a signalfd, through the ring: no race with the wait.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_signals, NULL);
    signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
    if (signal_fd < 0) die("signalfd", errno);

    socket_fd = setup_socket(host, port);
    setup_ring();
    setup_buffer_ring();
    arm_signal_read();
    arm_recv();
    int result = io_uring_submit(&ring);
    if (result < 0) die("io_uring_submit", -result);

    struct sockaddr_in bound;
    socklen_t bound_length = sizeof bound;
    getsockname(socket_fd, (struct sockaddr *)&bound, &bound_length);
    char bound_host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &bound.sin_addr, bound_host, sizeof bound_host);
    printf("listening on %s:%d\n", bound_host, ntohs(bound.sin_port));
    fflush(stdout);

    // The loop: submit what the last batch queued and wait for at least one completion, then
    // handle every completion that is there, then act on the batch as a whole.
    for (int running = 1; running;) {
        result = io_uring_submit_and_wait(&ring, 1);
        if (result < 0 && result != -EINTR && result != -EAGAIN && result != -EBUSY) {
            die("io_uring_submit_and_wait", -result);
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            uint64_t data = io_uring_cqe_get_data64(cqe);
            switch (user_data_kind(data)) {
            case OP_RECV: on_recv(cqe); break;
            case OP_SEND: on_send(user_data_id(data), cqe); break;
            case OP_SIGNAL: running = 0; break;
            }
        }
        io_uring_cq_advance(&ring, seen);
        flush_batch();
    }
    if (truncated > 0 || dropped_sends > 0) {
        fprintf(
            stderr, "uring-udp-echo-server: %llu datagrams truncated, %llu sends failed\n",
            (unsigned long long)truncated, (unsigned long long)dropped_sends);
    }
    return 0;
}
