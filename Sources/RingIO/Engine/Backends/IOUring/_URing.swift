//===----------------------------------------------------------------------===//
// RingIO — io_uring: one instance as liburing sees it. liburing's functions are called in
// Engine/Backends/IOUring only (the readiness engine and the POSIX layer call the kernel).
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
/// start, first). A ring set up with `RINGIO_VALGRIND=1` in the environment (the documented
/// switch, see ``RingLoop``) therefore never waits inside `io_uring_enter`: it
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
    /// Whether waits go through `poll(2)` rather than `io_uring_enter` (`RINGIO_VALGRIND=1`,
    /// see above). Decided once, at set-up.
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
        let waitsInPoll = _POSIX.valgrindCompatibility
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
