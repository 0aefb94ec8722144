//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the physical reference, a minimal liburing echo server.
//
// One thread, one ring. Multishot accept; per connection one multishot recv that takes its
// buffers from a provided buffer ring; what arrives is sent back straight from those buffers
// (no copy), and a buffer goes back to the ring only once all of its bytes have been sent.
//
//   uring-echo-server --port P [--host 127.0.0.1] [--buffers 256] [--buffer-size 16384]
//
// Written for liburing 2.3 (Debian 12): io_uring_setup_buf_ring() only arrived in 2.4, so the
// buffer ring is mapped and registered by hand (setup_buffer_ring below).
//===----------------------------------------------------------------------===//

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

// MARK: - Configuration

enum {
    QUEUE_DEPTH = 4096,  // SQ entries; the CQ gets four times as many (IORING_SETUP_CQSIZE)
    BUFFER_GROUP = 0,    // the one provided-buffer group
    MAX_IOVECS = 64,     // buffers gathered into one sendmsg at most
    NO_BUFFER = -1,      // end of a buffer list
};

// user_data: | kind (8 bits) | generation (24 bits) | connection index = fd (32 bits) |.
// The generation of a connection slot changes at every accept, so a completion meant for an
// earlier occupant of the same fd number would be recognised (by the invariant in `close_if_done`
// there never is one; the check is a guard, not a mechanism).
enum op_kind { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_SIGNAL };

static inline uint64_t make_user_data(enum op_kind kind, uint32_t generation, uint32_t index) {
    return ((uint64_t)kind << 56) | ((uint64_t)(generation & 0xFFFFFF) << 32) | index;
}
static inline enum op_kind user_data_kind(uint64_t data) { return (enum op_kind)(data >> 56); }
static inline uint32_t user_data_generation(uint64_t data) { return (uint32_t)(data >> 32) & 0xFFFFFF; }
static inline uint32_t user_data_index(uint64_t data) { return (uint32_t)data; }

// MARK: - State

// One connection, indexed by its fd. Its received-but-unsent buffers form a FIFO linked through
// `buffer_next` (a buffer is in at most one connection's FIFO, so one array of links serves all).
//
// Invariants:
// - `recv_armed`: exactly when a multishot recv for this fd may still post a CQE.
// - `send_in_flight`: exactly when one send/sendmsg for this fd is outstanding. It sends a prefix
//   of the FIFO (from `head` at `head_offset`, at most MAX_IOVECS buffers); only its completion
//   pops buffers and recvs only append at the tail, so that prefix stays put meanwhile. One send
//   at a time keeps the bytes in order.
// - The fd is closed only when neither is set (nor `parked`/`dirty`), so no CQE ever arrives for
//   a closed fd, and a buffer is returned to the ring only once fully sent (or dropped on error).
struct connection {
    uint32_t generation;
    int32_t head;          // first buffer id in the FIFO, or NO_BUFFER
    int32_t tail;          // last buffer id in the FIFO, or NO_BUFFER
    uint32_t head_offset;  // bytes of `head` already sent
    int32_t send_context;  // pool slot of the in-flight sendmsg, or -1 (plain send or none)
    uint8_t in_use, recv_armed, send_in_flight;
    uint8_t eof;       // the peer finished sending: close once the FIFO is empty
    uint8_t failed;    // an error: send nothing more, close when nothing is in flight
    uint8_t dirty;     // on the `dirty` list: send after this batch of completions
    uint8_t parked;    // recv ended with -ENOBUFS: on the `parked` list, re-arm when buffers return
};

// The msghdr + iovecs of one sendmsg, kept until its completion. A send in flight pins at least
// one buffer, so at most `buffer_count` of them are ever in flight: the pool never runs dry.
struct send_context {
    struct msghdr message;
    struct iovec iovecs[MAX_IOVECS];
};

static struct io_uring ring;
static int listen_fd = -1;
static int signal_fd = -1;
static struct signalfd_siginfo signal_info;

static struct connection *connections;  // indexed by fd
static size_t connection_capacity;

static struct io_uring_buf_ring *buffer_ring;
static uint8_t *buffer_memory;  // buffer_count * buffer_size bytes; buffer id b at b * buffer_size
static uint32_t buffer_count = 256, buffer_size = 16384;
static int32_t *buffer_next;     // FIFO links, per buffer id
static uint32_t *buffer_length;  // bytes received into each buffer
static uint32_t buffers_to_return;  // added to the buffer ring in this batch, not yet advanced
static uint32_t buffers_held;       // taken by the kernel for a recv and not returned yet

static struct send_context *send_contexts;
static int32_t *free_send_contexts;  // a stack of pool slots
static uint32_t free_send_context_count;

static int *dirty, *parked;  // lists of fds (each bounded by the connection table's capacity)
static size_t dirty_count, parked_count, parked_start;

// MARK: - Helpers

static void die(const char *what, int error) {
    fprintf(stderr, "uring-echo-server: %s: %s\n", what, strerror(error));
    exit(1);
}

static void usage(const char *message) {
    fprintf(stderr, "uring-echo-server: %s\n", message);
    fprintf(
        stderr, "usage: uring-echo-server --port P [--host 127.0.0.1] [--buffers 256] [--buffer-size 16384]\n");
    exit(2);
}

static void *checked_calloc(size_t count, size_t size) {
    void *memory = calloc(count, size);
    if (memory == NULL) die("calloc", ENOMEM);
    return memory;
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

// Grows the connection table (and the fd lists sized with it) to hold index `fd`.
static void reserve_connection(int fd) {
    if ((size_t)fd < connection_capacity) return;
    size_t capacity = connection_capacity ? connection_capacity : 1024;
    while (capacity <= (size_t)fd) capacity *= 2;
    connections = realloc(connections, capacity * sizeof *connections);
    int *new_parked = calloc(capacity, sizeof *new_parked);
    dirty = realloc(dirty, capacity * sizeof *dirty);
    if (connections == NULL || new_parked == NULL || dirty == NULL) die("realloc", ENOMEM);
    memset(connections + connection_capacity, 0, (capacity - connection_capacity) * sizeof *connections);
    // `parked` is a circular queue: unroll it into the new array.
    for (size_t i = 0; i < parked_count; i++) new_parked[i] = parked[(parked_start + i) % connection_capacity];
    free(parked);
    parked = new_parked;
    parked_start = 0;
    connection_capacity = capacity;
}

// MARK: - The buffer ring

static void setup_buffer_ring(void) {
    size_t ring_bytes = buffer_count * sizeof(struct io_uring_buf);
    buffer_ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer_ring == MAP_FAILED) die("mmap (buffer ring)", errno);
    struct io_uring_buf_reg registration = {
        .ring_addr = (uint64_t)(uintptr_t)buffer_ring, .ring_entries = buffer_count, .bgid = BUFFER_GROUP};
    int result = io_uring_register_buf_ring(&ring, &registration, 0);
    if (result < 0) die("io_uring_register_buf_ring", -result);
    io_uring_buf_ring_init(buffer_ring);

    buffer_memory = mmap(
        NULL, (size_t)buffer_count * buffer_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer_memory == MAP_FAILED) die("mmap (buffers)", errno);
    buffer_next = checked_calloc(buffer_count, sizeof *buffer_next);
    buffer_length = checked_calloc(buffer_count, sizeof *buffer_length);
    int mask = io_uring_buf_ring_mask(buffer_count);
    for (uint32_t id = 0; id < buffer_count; id++) {
        io_uring_buf_ring_add(
            buffer_ring, buffer_memory + (size_t)id * buffer_size, buffer_size, (unsigned short)id, mask, (int)id);
    }
    io_uring_buf_ring_advance(buffer_ring, (int)buffer_count);

    send_contexts = checked_calloc(buffer_count, sizeof *send_contexts);
    free_send_contexts = checked_calloc(buffer_count, sizeof *free_send_contexts);
    for (uint32_t i = 0; i < buffer_count; i++) free_send_contexts[free_send_context_count++] = (int32_t)i;
}

// Gives buffer `id` back to the kernel; visible at the next `publish_returned_buffers`.
static void return_buffer(int32_t id) {
    io_uring_buf_ring_add(
        buffer_ring, buffer_memory + (size_t)id * buffer_size, buffer_size, (unsigned short)id,
        io_uring_buf_ring_mask(buffer_count), (int)buffers_to_return);
    buffers_to_return++;
    buffers_held--;
}

static void publish_returned_buffers(void) {
    if (buffers_to_return == 0) return;
    io_uring_buf_ring_advance(buffer_ring, (int)buffers_to_return);
    buffers_to_return = 0;
}

// MARK: - Operations

static void arm_accept(void) {
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_multishot_accept(sqe, listen_fd, NULL, NULL, 0);
    io_uring_sqe_set_data64(sqe, make_user_data(OP_ACCEPT, 0, 0));
}

static void arm_signal_read(void) {
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_read(sqe, signal_fd, &signal_info, sizeof signal_info, 0);
    io_uring_sqe_set_data64(sqe, make_user_data(OP_SIGNAL, 0, 0));
}

static void arm_recv(int fd) {
    struct connection *c = &connections[fd];
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUFFER_GROUP;
    io_uring_sqe_set_data64(sqe, make_user_data(OP_RECV, c->generation, (uint32_t)fd));
    c->recv_armed = 1;
}

// Sends the FIFO's first (up to MAX_IOVECS) buffers in one operation.
// Precondition: no send in flight, FIFO not empty, connection not failed.
static void start_send(int fd) {
    struct connection *c = &connections[fd];
    struct io_uring_sqe *sqe = get_sqe();
    uint64_t data = make_user_data(OP_SEND, c->generation, (uint32_t)fd);
    int32_t id = c->head;
    if (buffer_next[id] == NO_BUFFER) {
        // One buffer: a plain send, no msghdr needed.
        io_uring_prep_send(
            sqe, fd, buffer_memory + (size_t)id * buffer_size + c->head_offset, buffer_length[id] - c->head_offset,
            MSG_NOSIGNAL);
        c->send_context = -1;
    } else {
        assert(free_send_context_count > 0);  // see `struct send_context`
        int32_t slot = free_send_contexts[--free_send_context_count];
        struct send_context *context = &send_contexts[slot];
        size_t count = 0;
        uint32_t offset = c->head_offset;
        for (; id != NO_BUFFER && count < MAX_IOVECS; id = buffer_next[id], offset = 0, count++) {
            context->iovecs[count].iov_base = buffer_memory + (size_t)id * buffer_size + offset;
            context->iovecs[count].iov_len = buffer_length[id] - offset;
        }
        context->message = (struct msghdr){.msg_iov = context->iovecs, .msg_iovlen = count};
        io_uring_prep_sendmsg(sqe, fd, &context->message, MSG_NOSIGNAL);
        c->send_context = slot;
    }
    io_uring_sqe_set_data64(sqe, data);
    c->send_in_flight = 1;
}

static void mark_dirty(int fd) {
    struct connection *c = &connections[fd];
    if (c->dirty) return;
    c->dirty = 1;
    dirty[dirty_count++] = fd;
}

// Returns every queued buffer (the connection failed: its bytes will never be sent).
static void drop_queue(struct connection *c) {
    while (c->head != NO_BUFFER) {
        int32_t id = c->head;
        c->head = buffer_next[id];
        return_buffer(id);
    }
    c->tail = NO_BUFFER;
    c->head_offset = 0;
}

// Closes the connection once nothing can complete for it any more (see `struct connection`).
static void close_if_done(int fd) {
    struct connection *c = &connections[fd];
    if (c->recv_armed || c->send_in_flight || c->parked || c->dirty) return;
    if (!c->failed && !(c->eof && c->head == NO_BUFFER)) return;
    drop_queue(c);
    c->in_use = 0;
    close(fd);
}

// The connection cannot go on: stop its recv (shutdown ends a multishot recv with EOF) and
// close it once what is in flight has completed.
static void fail(int fd) {
    struct connection *c = &connections[fd];
    if (!c->failed) {
        c->failed = 1;
        if (c->recv_armed) shutdown(fd, SHUT_RDWR);
    }
    if (!c->send_in_flight) drop_queue(c);
    close_if_done(fd);
}

// MARK: - Completions

static void on_accept(struct io_uring_cqe *cqe) {
    if (!(cqe->flags & IORING_CQE_F_MORE)) arm_accept();  // the multishot accept stopped
    if (cqe->res < 0) {
        if (cqe->res != -ECONNABORTED && cqe->res != -EINTR) {
            fprintf(stderr, "uring-echo-server: accept: %s\n", strerror(-cqe->res));
        }
        return;
    }
    int fd = cqe->res;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reserve_connection(fd);
    struct connection *c = &connections[fd];
    uint32_t generation = c->generation + 1;
    *c = (struct connection){
        .generation = generation, .head = NO_BUFFER, .tail = NO_BUFFER, .send_context = -1, .in_use = 1};
    arm_recv(fd);
}

static void on_recv(int fd, struct io_uring_cqe *cqe) {
    struct connection *c = &connections[fd];
    int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    if (!more) c->recv_armed = 0;
    if (cqe->res <= 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
        // A buffer taken for an EOF or an error (some kernels do this): straight back.
        buffers_held++;
        return_buffer((int32_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT));
    }
    if (cqe->res > 0) {
        // Append the buffer to the FIFO; it is sent after this batch.
        int32_t id = (int32_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        buffers_held++;
        buffer_length[id] = (uint32_t)cqe->res;
        buffer_next[id] = NO_BUFFER;
        if (c->failed) {
            return_buffer(id);
        } else {
            if (c->tail == NO_BUFFER) {
                c->head = id;
            } else {
                buffer_next[c->tail] = id;
            }
            c->tail = id;
            mark_dirty(fd);
        }
        if (!more && !c->failed) arm_recv(fd);  // the kernel ended the multishot (e.g. CQ pressure)
    } else if (cqe->res == -ENOBUFS) {
        // The buffer ring is empty: wait for sends to return buffers, then re-arm.
        if (!c->failed) {
            c->parked = 1;
            parked[(parked_start + parked_count++) % connection_capacity] = fd;
        }
    } else if (cqe->res == 0) {
        c->eof = 1;  // the FIFO is still sent; close_if_done closes once it is empty
    } else {
        c->failed = 1;  // reset or other error: just close
        if (!c->send_in_flight) drop_queue(c);
    }
    close_if_done(fd);
}

static void on_send(int fd, struct io_uring_cqe *cqe) {
    struct connection *c = &connections[fd];
    c->send_in_flight = 0;
    if (c->send_context >= 0) {
        free_send_contexts[free_send_context_count++] = c->send_context;
        c->send_context = -1;
    }
    if (cqe->res <= 0) {
        fail(fd);
        return;
    }
    // Pop what was fully sent; a short send leaves the rest (from head_offset) for the next one.
    uint32_t sent = (uint32_t)cqe->res;
    while (sent > 0) {
        int32_t id = c->head;
        uint32_t remaining = buffer_length[id] - c->head_offset;
        if (sent < remaining) {
            c->head_offset += sent;
            break;
        }
        sent -= remaining;
        c->head = buffer_next[id];
        c->head_offset = 0;
        return_buffer(id);
    }
    if (c->head == NO_BUFFER) {
        c->tail = NO_BUFFER;
    } else if (!c->failed) {
        mark_dirty(fd);
    }
    if (c->failed) drop_queue(c);
    close_if_done(fd);
}

// After a batch of completions: one send per connection that has data and none in flight, and
// a recv for as many parked connections as there are buffers back in the ring.
static void flush_batch(void) {
    for (size_t i = 0; i < dirty_count; i++) {
        int fd = dirty[i];
        struct connection *c = &connections[fd];
        c->dirty = 0;
        if (!c->failed && !c->send_in_flight && c->head != NO_BUFFER) start_send(fd);
        close_if_done(fd);
    }
    dirty_count = 0;
    publish_returned_buffers();
    uint32_t available = buffer_count - buffers_held;
    while (parked_count > 0 && available > 0) {
        int fd = parked[parked_start];
        parked_start = (parked_start + 1) % connection_capacity;
        parked_count--;
        struct connection *c = &connections[fd];
        c->parked = 0;
        if (c->failed) {
            close_if_done(fd);
        } else {
            arm_recv(fd);
            available--;
        }
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

static int setup_listener(const char *host, int port) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) usage("--host must be an IPv4 address");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket", errno);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) die("bind", errno);
    if (listen(fd, 4096) < 0) die("listen", errno);
    return fd;
}

static void setup_ring(void) {
    // The best the kernel accepts: deferred task work on one issuer thread (6.1), else
    // cooperative task work (5.19), else the defaults.
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
        } else if (strcmp(option, "--buffer-size") == 0) {
            buffer_size = (uint32_t)parse_number(value, 1, 1 << 24, "--buffer-size");
        } else {
            char message[160];
            snprintf(message, sizeof message, "unknown option %.100s", option);
            usage(message);
        }
    }
    if (port < 0) usage("--port is required");

    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    signal(SIGPIPE, SIG_IGN);
    // SIGINT/SIGTERM arrive as a read on a signalfd, through the ring: no race with the wait.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_signals, NULL);
    signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
    if (signal_fd < 0) die("signalfd", errno);

    listen_fd = setup_listener(host, port);
    setup_ring();
    setup_buffer_ring();
    reserve_connection(listen_fd);
    arm_signal_read();
    arm_accept();
    int result = io_uring_submit(&ring);
    if (result < 0) die("io_uring_submit", -result);

    struct sockaddr_in bound;
    socklen_t bound_length = sizeof bound;
    getsockname(listen_fd, (struct sockaddr *)&bound, &bound_length);
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
            uint32_t fd = user_data_index(data);
            enum op_kind kind = user_data_kind(data);
            if ((kind == OP_RECV || kind == OP_SEND)
                && (fd >= connection_capacity || !connections[fd].in_use
                    || connections[fd].generation % 0x1000000 != user_data_generation(data))) {
                // Cannot happen (fds are closed only when idle); never touch a buffer id that
                // belongs to someone else, but hand a recv's buffer back.
                fprintf(stderr, "uring-echo-server: stale completion for fd %u\n", fd);
                if (kind == OP_RECV && (cqe->flags & IORING_CQE_F_BUFFER)) {
                    buffers_held++;
                    return_buffer((int32_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT));
                }
                continue;
            }
            switch (kind) {
            case OP_ACCEPT: on_accept(cqe); break;
            case OP_RECV: on_recv((int)fd, cqe); break;
            case OP_SEND: on_send((int)fd, cqe); break;
            case OP_SIGNAL: running = 0; break;
            }
        }
        io_uring_cq_advance(&ring, seen);
        flush_batch();
    }
    // Exit at once: the kernel tears down the ring, its pending operations and the sockets.
    return 0;
}
