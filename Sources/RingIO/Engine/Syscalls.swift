//===----------------------------------------------------------------------===//
// RingIO — the engine's syscall layer: the only file that calls liburing (POSIX.swift holds
// every other C call).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One io_uring instance, as liburing sees it.
///
/// Owned by one thread (the ring thread), which is the only one that calls these methods.
/// liburing returns `-errno` and does not set `errno`: every wrapper turns a failure into a
/// thrown `Errno` straight away, retrying on `EINTR` where a retry is meaningful.
///
/// **Under valgrind the ring waits in `poll(2)`.** Valgrind (3.19 at least) runs one thread of
/// the process at a time and lets another run only while the current one is in a syscall it
/// knows may block; `io_uring_enter` is not one of them, so a ring thread waiting in it would
/// stop every other thread of the process for good (its creator, waiting for the ring to
/// start, first). A ring set up in a process that runs under valgrind — valgrind puts its
/// `vgpreload` libraries in `LD_PRELOAD` — therefore never waits inside `io_uring_enter`: it
/// submits without waiting and, when no completion is ready, waits in `poll(2)` on the ring's
/// descriptor (readable when completions are), which valgrind knows blocks. Such a ring is set
/// up without `IORING_SETUP_DEFER_TASKRUN`: with it the kernel posts completions only while the
/// ring thread is inside `io_uring_enter`, and a thread asleep in `poll` would never see one.
/// Everywhere else the wait is the one `io_uring_submit_and_wait`, and the cost of this mode is
/// one predictable branch per wait. It is what lets `Benchmarks/run-instruction-check.sh` count
/// instructions under callgrind.
internal struct _URing {
    /// Stable address for liburing: the struct is allocated once and never moves.
    private let ring: UnsafeMutablePointer<io_uring>
    /// Whether waits go through `poll(2)` rather than `io_uring_enter` (under valgrind, see
    /// above). Decided once, at set-up.
    private let waitsInPoll: Bool
    /// The setup flags the kernel accepted.
    internal let setupFlags: UInt32
    /// `io_uring_params.features` as the kernel reported them.
    internal let features: UInt32
    internal let submissionEntries: UInt32
    internal let completionEntries: UInt32
    /// The ring's descriptor is registered with the ring thread (see `init`).
    internal let registeredRingDescriptor: Bool

    /// The setup flag sets tried in order, best first; the kernel answers `EINVAL` to a flag it
    /// does not know, and we fall back to the next set. A ring that waits in `poll(2)` skips
    /// the sets with `IORING_SETUP_DEFER_TASKRUN` (see the type's comment).
    private static let setupFlagChoices: [UInt32] = [
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN
            | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE,
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE,
        IORING_SETUP_CQSIZE,
        0,
    ]

    /// Sets up a ring of `entries` submission entries and a completion queue `cqMultiple`
    /// times larger, with the best flags the kernel accepts.
    ///
    /// Must be called on the thread that will submit (SINGLE_ISSUER).
    /// The corresponding liburing call is `io_uring_queue_init_params`.
    ///
    /// - Throws: The `Errno` of the last attempt: `ENOSYS` (no io_uring), `EPERM`
    ///   (disabled by sysctl or seccomp), `ENOMEM` (locked-memory limit), …
    @inline(never)
    internal init(entries: UInt32, cqMultiple: UInt32) throws(Errno) {
        let ring = UnsafeMutablePointer<io_uring>.allocate(capacity: 1)
        ring.initialize(to: io_uring())
        var lastError = Errno.invalidArgument
        let waitsInPoll = _POSIX.runsUnderValgrind
        for flags in Self.setupFlagChoices where !waitsInPoll || flags & IORING_SETUP_DEFER_TASKRUN == 0 {
            var params = io_uring_params()
            params.flags = flags
            params.cq_entries = entries &* cqMultiple
            let result = io_uring_queue_init_params(entries, ring, &params)
            if result == 0 {
                // The ring's descriptor, registered with this thread (Linux 5.18): each
                // io_uring_enter then names the ring by its index, with no descriptor-table
                // lookup and reference count. Per thread, as this ring's submitter is; liburing
                // uses it for every enter once it is there, and unregisters it in
                // `io_uring_queue_exit`. Optional: an older kernel refuses it (EINVAL) and the
                // plain descriptor serves. Not under valgrind, which checks the descriptor
                // argument and does not know the registered form.
                self.registeredRingDescriptor = !waitsInPoll && io_uring_register_ring_fd(ring) == 1
                self.ring = ring
                self.waitsInPoll = waitsInPoll
                self.setupFlags = flags
                self.features = params.features
                self.submissionEntries = params.sq_entries
                self.completionEntries = params.cq_entries
                return
            }
            lastError = Errno(rawValue: -result)
            guard lastError == .invalidArgument else { break }
        }
        ring.deinitialize(count: 1)
        ring.deallocate()
        throw lastError
    }

    /// Tears the ring down. The corresponding liburing call is `io_uring_queue_exit`.
    internal func close() {
        io_uring_queue_exit(self.ring)
        self.ring.deinitialize(count: 1)
        self.ring.deallocate()
    }

    // MARK: Submission

    /// A free submission entry, or `nil` when the SQ is full.
    /// The corresponding liburing call is `io_uring_get_sqe`.
    @inline(__always)
    internal func nextSQE() -> UnsafeMutablePointer<io_uring_sqe>? {
        io_uring_get_sqe(self.ring)
    }

    /// Submits what is prepared and, when `wait` is true, blocks until at least one completion
    /// is ready; otherwise only runs pending task work.
    ///
    /// The corresponding liburing calls are `io_uring_submit_and_wait` and
    /// `io_uring_submit_and_get_events`.
    ///
    /// Under valgrind the wait is a `poll(2)` (see the type's comment), which may also end
    /// with no completion ready (a signal): the caller reaps what there is and comes back, as
    /// after `EINTR`.
    ///
    /// - Returns: The number of entries submitted.
    /// - Throws: `EBUSY`/`EAGAIN` when the kernel cannot take more until completions are reaped
    ///   (CQ overflow with NODROP): reap, then call again.
    internal func submit(wait: Bool) throws(Errno) -> Int {
        if wait && self.waitsInPoll { return try self.submitThenWaitInPoll() }
        while true {
            let result = wait ? io_uring_submit_and_wait(self.ring, 1) : io_uring_submit_and_get_events(self.ring)
            if result >= 0 { return Int(result) }
            let error = Errno(rawValue: -result)
            if error == .interrupted { return 0 }  // a signal: the loop turns and comes back
            throw error
        }
    }

    /// `submit(wait: true)` under valgrind: submits and, when no completion is ready, waits
    /// in `poll(2)` until the ring's descriptor is readable (a completion is posted). The
    /// corresponding liburing calls are `io_uring_submit_and_get_events` and
    /// `io_uring_cq_ready`.
    @inline(never)
    private func submitThenWaitInPoll() throws(Errno) -> Int {
        let submitted = try self.submit(wait: false)
        if io_uring_cq_ready(self.ring) == 0 {
            try _POSIX.waitUntilReadable(self.ring.pointee.ring_fd)
        }
        return submitted
    }

    /// The number of free submission entries.
    internal var submissionSpaceLeft: UInt32 {
        io_uring_sq_space_left(self.ring)
    }

    /// The number of entries prepared and not yet submitted.
    @inline(__always)
    internal var pendingSubmissions: UInt32 {
        io_uring_sq_ready(self.ring)
    }

    // MARK: Completion

    /// Copies up to `buffer.count` ready completions into `buffer` and marks them seen.
    ///
    /// The corresponding liburing calls are `io_uring_peek_batch_cqe` and `io_uring_cq_advance`.
    internal func reap(into buffer: UnsafeMutableBufferPointer<RingCompletion>) -> Int {
        withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<io_uring_cqe>?.self, capacity: buffer.count) {
            cqes in
            let count = Int(io_uring_peek_batch_cqe(self.ring, cqes.baseAddress!, UInt32(buffer.count)))
            for index in 0..<count {
                let cqe = cqes[index]!.pointee
                buffer[index] = RingCompletion(userData: cqe.user_data, result: cqe.res, flags: cqe.flags)
            }
            io_uring_cq_advance(self.ring, UInt32(count))
            return count
        }
    }

    // MARK: Provided buffer rings

    /// Allocates and registers a provided-buffer ring of `entries` (a power of two) for
    /// buffer group `group`.
    ///
    /// The corresponding liburing call is `io_uring_register_buf_ring`.
    internal func registerBufferRing(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        let handle = try _BufferRingHandle.allocate(entries: entries, group: group)
        var registration = io_uring_buf_reg()
        registration.ring_addr = UInt64(UInt(bitPattern: handle.ring))
        registration.ring_entries = UInt32(entries)
        registration.bgid = group
        let result = io_uring_register_buf_ring(self.ring, &registration, 0)
        guard result == 0 else {
            _POSIX.deallocate(handle.ring)
            throw Errno(rawValue: -result)
        }
        return handle
    }

    /// Unregisters and frees a buffer ring.
    /// The corresponding liburing call is `io_uring_unregister_buf_ring`.
    ///
    /// - Precondition: `handle` is registered with this ring (EINVAL, ENOENT are bugs).
    internal func unregisterBufferRing(_ handle: _BufferRingHandle) {
        let result = io_uring_unregister_buf_ring(self.ring, Int32(handle.group))
        precondition(result == 0, "RingIO: io_uring_unregister_buf_ring failed: \(Errno(rawValue: -result))")
        _POSIX.deallocate(handle.ring)
    }

    /// The kernel's list of supported operations, to be freed with `io_uring_free_probe`;
    /// `nil` when the kernel cannot tell (before Linux 5.6). The corresponding liburing call is
    /// `io_uring_get_probe_ring`.
    internal func probe() -> UnsafeMutablePointer<io_uring_probe>? {
        io_uring_get_probe_ring(self.ring)
    }

    /// Whether completions are waiting in the kernel's overflow list.
    internal var hasOverflow: Bool {
        io_uring_cq_has_overflow(self.ring)
    }
}

/// A registered provided-buffer ring: where the ring thread hands buffers to the kernel.
internal struct _BufferRingHandle {
    internal let ring: UnsafeMutablePointer<io_uring_buf_ring>
    internal let mask: Int32
    internal let group: UInt16

    private init(ring: UnsafeMutablePointer<io_uring_buf_ring>, mask: Int32, group: UInt16) {
        self.ring = ring
        self.mask = mask
        self.group = group
    }

    /// Allocates an empty ring of `entries` (a power of two) for group `group`, page-aligned,
    /// in the layout io_uring reads (the readiness engine reads the same); freed with
    /// `_POSIX.deallocate(ring)`. The corresponding liburing call is `io_uring_buf_ring_init`
    /// (liburing 2.3 has no `io_uring_setup_buf_ring`).
    internal static func allocate(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        precondition(entries > 0 && entries & (entries - 1) == 0, "buffer ring entries must be a power of two")
        let byteCount = Int(entries) * MemoryLayout<io_uring_buf>.stride
        let memory = try _POSIX.allocate(byteCount: byteCount, alignment: _POSIX.pageSize)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        let ring = memory.assumingMemoryBound(to: io_uring_buf_ring.self)
        io_uring_buf_ring_init(ring)
        return _BufferRingHandle(ring: ring, mask: io_uring_buf_ring_mask(UInt32(entries)), group: group)
    }

    /// Stages buffer `id` at `address` for the next `publish`, `offset` entries past the
    /// published tail. The corresponding liburing call is `io_uring_buf_ring_add`.
    internal func stage(_ address: UnsafeMutableRawPointer, length: Int, id: UInt16, offset: Int) {
        io_uring_buf_ring_add(self.ring, address, UInt32(length), id, self.mask, Int32(offset))
    }

    /// Makes `count` staged buffers visible to the kernel (a release store of the tail).
    /// The corresponding liburing call is `io_uring_buf_ring_advance`.
    internal func publish(_ count: Int) {
        io_uring_buf_ring_advance(self.ring, Int32(count))
    }
}

/// A completion copied out of the CQ.
internal struct RingCompletion {
    internal var userData: UInt64
    internal var result: Int32
    internal var flags: UInt32

    internal init(userData: UInt64, result: Int32, flags: UInt32) {
        self.userData = userData
        self.result = result
        self.flags = flags
    }

    /// More completions will follow for the same operation (multishot).
    internal var hasMore: Bool { CompletionFlags(self.flags).hasMore }
}

/// The flags of a completion.
internal struct CompletionFlags {
    internal let rawValue: UInt32

    internal init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// More completions will follow for the same operation (multishot).
    internal var hasMore: Bool { self.rawValue & IORING_CQE_F_MORE != 0 }

    /// The provided buffer the kernel filled, if any.
    internal var bufferID: UInt16? {
        guard self.rawValue & IORING_CQE_F_BUFFER != 0 else { return nil }
        return UInt16(truncatingIfNeeded: self.rawValue >> IORING_CQE_BUFFER_SHIFT)
    }
}

// MARK: - Preparing operations

/// What an operation asks the kernel to do. Each case fills one SQE.
///
/// Every pointer in a request (buffers, iovecs, message headers, paths, timespecs) must stay
/// valid until the operation's final completion: the submitter keeps its owner alive, usually
/// in the completion target.
package enum RingRequest {
    /// Nothing: a round trip through the ring (the benchmarks' no-ops, the engine's tests).
    case nop
    /// Read into `buffer` at `offset` (-1: the file position).
    case read(fd: CInt, buffer: UnsafeMutableRawBufferPointer, offset: Int64)
    /// Write `buffer` at `offset` (-1: the file position).
    case write(fd: CInt, buffer: UnsafeRawBufferPointer, offset: Int64)
    /// Vectored write at `offset` (-1: the file position).
    case writev(fd: CInt, vectors: UnsafeBufferPointer<iovec>, offset: Int64)
    /// Send on a socket, with MSG_NOSIGNAL: a closed peer ends the send with EPIPE, never a
    /// SIGPIPE.
    case send(fd: CInt, buffer: UnsafeRawBufferPointer)
    /// Send a message (vectored), with MSG_NOSIGNAL.
    case sendmsg(fd: CInt, message: UnsafePointer<msghdr>)
    /// Receive repeatedly into buffers picked from provided-buffer group `group` (multishot).
    case receiveMultishot(fd: CInt, group: UInt16)
    /// Receive once, at most `length` bytes, into a buffer picked from `group`; `noWait`:
    /// fail with EAGAIN rather than wait for data.
    case receiveSelect(fd: CInt, group: UInt16, length: Int, noWait: Bool)
    /// Read once at the file position, at most `length` bytes, into a buffer picked from
    /// `group`; `noWait`: fail with EAGAIN rather than wait for data (RWF_NOWAIT).
    case readSelect(fd: CInt, group: UInt16, length: Int, noWait: Bool)
    /// Accept connections repeatedly (multishot); each completion is a new descriptor,
    /// close-on-exec.
    case acceptMultishot(fd: CInt)
    /// Connect socket `fd` to the `length` bytes of address at `address`.
    case connect(fd: CInt, address: UnsafePointer<sockaddr>, length: socklen_t)
    /// Receive datagrams repeatedly (multishot) into buffers picked from provided-buffer group
    /// `group`, each laid out as `io_uring_recvmsg_out`, the source address (up to `message`'s
    /// `msg_namelen` bytes), control data (up to `msg_controllen`), then the payload. `message`
    /// gives only those two lengths (and its control buffer's presence).
    case receiveMessageMultishot(fd: CInt, group: UInt16, message: UnsafeMutablePointer<msghdr>)
    /// Receive one message into the buffers and name of `message`; the result is a datagram's
    /// whole length, also when it was truncated (MSG_TRUNC).
    case receiveMessage(fd: CInt, message: UnsafeMutablePointer<msghdr>)
    /// Shut down one or both directions of a connected socket (`SHUT_WR`…).
    case shutdown(fd: CInt, how: CInt)
    /// Open `path` relative to `directory` (AT_FDCWD for the working directory).
    case openat(directory: CInt, path: UnsafePointer<CChar>, flags: CInt, mode: mode_t)
    /// Close a descriptor.
    case close(fd: CInt)
    /// A one-shot timeout after a duration; `spec` must stay alive until the operation is
    /// submitted. (No multishot timeouts: an async cancel that lands between a fire and its
    /// re-arm misses one, and it runs on forever; repeating timers re-arm one-shot
    /// ``timeoutAt(spec:realtime:)``s instead.)
    case timeout(spec: _KernelTimespec)
    /// A one-shot timeout at an absolute time: CLOCK_MONOTONIC, or CLOCK_REALTIME when
    /// `realtime` (then it follows changes of the wall clock).
    case timeoutAt(spec: _KernelTimespec, realtime: Bool)
    /// Readiness of `fd` for the poll `events`, once.
    case poll(fd: CInt, events: UInt32)
    /// Move `length` bytes from `input` (at `inputOffset`, -1: its position) to `output` (at
    /// `outputOffset`, -1: its position) in the kernel; one side must be a pipe. io_uring runs
    /// it on a worker thread (it cannot tell in advance whether it would block).
    case splice(input: CInt, inputOffset: Int64, output: CInt, outputOffset: Int64, length: Int)
    /// Cancel the operation with this user data.
    case cancel(userData: UInt64)
    /// Cancel every operation of this ring.
    case cancelAll

    /// The kind recorded in `user_data`.
    package var kind: OperationKind {
        switch self {
        case .nop: return .nop
        case .read: return .read
        case .write, .writev: return .write
        case .send, .sendmsg: return .send
        case .receiveMultishot, .receiveSelect, .readSelect: return .receive
        case .acceptMultishot: return .accept
        case .connect: return .connect
        case .receiveMessageMultishot, .receiveMessage: return .receive
        case .shutdown: return .shutdown
        case .openat: return .open
        case .close: return .close
        case .timeout, .timeoutAt: return .timeout
        case .poll: return .poll
        case .splice: return .splice
        case .cancel, .cancelAll: return .cancel
        }
    }

    /// Fills `sqe`. The corresponding liburing calls are `io_uring_prep_*`.
    internal func prepare(_ sqe: UnsafeMutablePointer<io_uring_sqe>, userData: UInt64) {
        switch self {
        case .nop:
            io_uring_prep_nop(sqe)
        case .read(let fd, let buffer, let offset):
            io_uring_prep_read(sqe, fd, buffer.baseAddress, UInt32(clamping: buffer.count), UInt64(bitPattern: offset))
        case .write(let fd, let buffer, let offset):
            io_uring_prep_write(sqe, fd, buffer.baseAddress, UInt32(clamping: buffer.count), UInt64(bitPattern: offset))
        case .writev(let fd, let vectors, let offset):
            io_uring_prep_writev(sqe, fd, vectors.baseAddress, UInt32(vectors.count), UInt64(bitPattern: offset))
        case .send(let fd, let buffer):
            io_uring_prep_send(sqe, fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        case .sendmsg(let fd, let message):
            io_uring_prep_sendmsg(sqe, fd, message, UInt32(MSG_NOSIGNAL))
        case .receiveMultishot(let fd, let group):
            io_uring_prep_recv_multishot(sqe, fd, nil, 0, 0)
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .receiveSelect(let fd, let group, let length, let noWait):
            io_uring_prep_recv(sqe, fd, nil, length, noWait ? Int32(MSG_DONTWAIT) : 0)
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .readSelect(let fd, let group, let length, let noWait):
            io_uring_prep_read(sqe, fd, nil, UInt32(clamping: length), UInt64(bitPattern: -1))
            if noWait { CLiburing_sqe_set_rw_flags(sqe, CLiburing_RWF_NOWAIT) }
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .acceptMultishot(let fd):
            io_uring_prep_multishot_accept(sqe, fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
        case .connect(let fd, let address, let length):
            io_uring_prep_connect(sqe, fd, address, length)
        case .receiveMessageMultishot(let fd, let group, let message):
            // MSG_TRUNC: `payloadlen` is a truncated datagram's whole length.
            io_uring_prep_recvmsg_multishot(sqe, fd, message, UInt32(MSG_TRUNC))
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .receiveMessage(let fd, let message):
            io_uring_prep_recvmsg(sqe, fd, message, UInt32(MSG_TRUNC))
        case .shutdown(let fd, let how):
            io_uring_prep_shutdown(sqe, fd, how)
        case .openat(let directory, let path, let flags, let mode):
            io_uring_prep_openat(sqe, directory, path, flags, mode)
        case .close(let fd):
            io_uring_prep_close(sqe, fd)
        case .timeout(let spec):
            io_uring_prep_timeout(sqe, spec.pointer, 0, 0)
        case .timeoutAt(let spec, let realtime):
            io_uring_prep_timeout(
                sqe,
                spec.pointer,
                0,
                UInt32(IORING_TIMEOUT_ABS) | (realtime ? UInt32(IORING_TIMEOUT_REALTIME) : 0)
            )
        case .poll(let fd, let events):
            io_uring_prep_poll_add(sqe, fd, events)
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            io_uring_prep_splice(sqe, input, inputOffset, output, outputOffset, UInt32(clamping: length), 0)
        case .cancel(let target):
            io_uring_prep_cancel64(sqe, target, 0)
        case .cancelAll:
            io_uring_prep_cancel64(sqe, 0, Int32(IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL))
        }
        io_uring_sqe_set_data64(sqe, userData)
    }
}

/// A `__kernel_timespec` at a stable address, for timeout operations.
// @unchecked: immutable after init, except through `reset`, which its one owner calls on its
// own thread while no prepared entry refers to it; the kernel only reads it.
package final class _KernelTimespec: @unchecked Sendable {
    internal let pointer: UnsafeMutablePointer<__kernel_timespec>

    /// A duration, or an absolute time on a clock, in nanoseconds.
    package init(nanoseconds: Int64) {
        self.pointer = .allocate(capacity: 1)
        self.pointer.initialize(to: Self.timespec(nanoseconds))
    }

    /// Sets a new time, for reuse. Only while no prepared entry that is not yet submitted
    /// refers to it: the kernel copies the time when it takes the entry (a timeout's
    /// `io_timeout_prep`), not later.
    internal func reset(nanoseconds: Int64) {
        self.pointer.pointee = Self.timespec(nanoseconds)
    }

    private static func timespec(_ nanoseconds: Int64) -> __kernel_timespec {
        __kernel_timespec(tv_sec: nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
    }

    deinit {
        self.pointer.deallocate()
    }
}
