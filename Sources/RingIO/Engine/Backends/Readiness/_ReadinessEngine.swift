//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: the ring's requests with epoll and non-blocking system calls.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The second engine: it takes the same ``RingRequest``s as io_uring and posts the same
/// completions (`user_data`, result, flags — multishot `F_MORE`, provided-buffer ids), so the
/// ring core, channels, sources and listeners above it run unchanged, contract and all.
///
/// Used where io_uring is refused (a container's seccomp profile, `kernel.io_uring_disabled`,
/// gVisor) or forced with `RINGIO_BACKEND=epoll` (see `_Backend`). How each request runs:
///
/// - **Sockets, pipes, eventfds, pidfds** (anything epoll accepts): the system call is tried at
///   once without blocking (`MSG_DONTWAIT`, `RWF_NOWAIT`, `SPLICE_F_NONBLOCK`, a non-blocking
///   listening socket; a splice into a blocking socket, or a call on a descriptor without
///   `RWF_NOWAIT` such as a terminal, sets `O_NONBLOCK` for the call, as the kernel takes no
///   per-call flag there); on `EAGAIN` the request waits for readiness. A descriptor is
///   registered once, edge-triggered, for input (and for output once a write waits), and stays
///   registered until its owner lets go of it (``forget(_:)``): a read of a stream socket that
///   comes up short (fewer bytes than asked) has emptied it, so the next edge is the next data,
///   and waits cost no `epoll_ctl`; other descriptors are read until `EAGAIN`. A descriptor's
///   blocking mode is otherwise never changed, except a listening socket's, which becomes
///   non-blocking (an `accept` must never wait on the ring thread).
/// - **Regular files and other descriptors epoll refuses** (`EPERM`): a read is tried with
///   `RWF_NOWAIT` (served from the page cache without blocking); what would block, writes,
///   opens and file-to-pipe splices run on ``_BlockingPool``, whose threads post their results
///   back through the engine's eventfd.
/// - **Receives into provided buffers** take the next buffer the core published in the same
///   buffer-ring memory io_uring reads (`_BufferRingHandle`), so received bytes still become
///   rope regions without a copy.
/// - **Timeouts** are kept here and end the `epoll_pwait2` wait (nanoseconds, CLOCK_MONOTONIC;
///   a CLOCK_REALTIME deadline is converted when it is submitted and does not follow later
///   changes of the wall clock).
/// - **Cancellation** finds the request by its slot; one running on the pool cannot be
///   stopped (`EALREADY`, as io_uring answers for a request a worker is running) and completes
///   when its call returns.
/// - **Links** (`IOSQE_IO_LINK`): the second request starts when the first completed in full;
///   otherwise it ends with `ECANCELED`.
///
/// Owned by the ring thread: every method runs there, except what ``_BlockingPool`` runs.
internal final class _ReadinessEngine {
    /// The epoll instance.
    let epollFD: CInt
    /// Signalled by the pool when a result is posted.
    let poolWakeFD: CInt
    /// Where the pool posts results.
    let poolResults: _PoolResults
    /// The number of completions the core reaps in one batch at most (as io_uring's CQ size).
    internal let completionEntries: UInt32
    internal let submissionEntries: UInt32

    // MARK: Ring thread only
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    /// Requests pushed since the last `submit`.
    @exclusivity(unchecked) var pushed: ContiguousArray<_ReadyOp> = []
    /// Completions ready to reap, from `reapIndex` on.
    @exclusivity(unchecked) var completions: ContiguousArray<RingCompletion> = []
    @exclusivity(unchecked) var reapIndex = 0
    /// The live request of each core slot (the low 32 bits of its user data).
    @exclusivity(unchecked) var opsBySlot: ContiguousArray<_ReadyOp?> = []
    /// The registered descriptors, by number.
    @exclusivity(unchecked) var watches: ContiguousArray<_Watch?> = []
    /// Requests to run now (woken, or started by a link), and those to run next round (a
    /// multishot that used its budget: other descriptors go first).
    @exclusivity(unchecked) var runnable: ContiguousArray<_ReadyOp> = []
    @exclusivity(unchecked) var deferred: ContiguousArray<_ReadyOp> = []
    /// Timeouts waiting for their deadline.
    @exclusivity(unchecked) var timeouts: ContiguousArray<_ReadyOp> = []
    /// Provided-buffer groups, by id.
    @exclusivity(unchecked) var groups: [UInt16: _BufferGroup] = [:]
    /// Rounds since the last look at epoll: a ring that always has completions still looks
    /// every few rounds, so readiness is never starved by work that completes at once.
    var roundsWithoutPolling = 0
    /// `epoll_pwait2` is there (Linux 5.11+, and allowed): waits end to the nanosecond.
    var hasNanosecondWait = true
    /// The descriptor of the core's wake-up eventfd: its registration stays.
    internal var persistentFD: CInt = -1
    var nextGeneration: UInt32 = 1

    /// The ring thread, which made the engine and is the only one to call it.
    let owner = _POSIX.currentThread

    /// Checks, in debug builds, that the caller is the ring thread (every entry point does).
    @inline(__always)
    func assertOnRingThread() {
        assert(_POSIX.currentThread == self.owner, "RingIO: the readiness engine called off its ring thread")
    }

    /// The poll budget: descriptors whose readiness one `epoll_pwait2` returns at most.
    static let eventCapacity = 128
    let events: UnsafeMutablePointer<epoll_event>

    /// Sets the engine up: an epoll instance and the pool's eventfd.
    ///
    /// - Throws: `EMFILE`, `ENFILE`, `ENOMEM`.
    internal init(entries: UInt32) throws(Errno) {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw Errno(rawValue: errno) }
        let wakeFD: CInt
        do throws(Errno) {
            wakeFD = try _EventFD.make()
        } catch {
            _POSIX.close(epollFD)
            throw error
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.poolToken
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let error = Errno(rawValue: errno)
            _POSIX.close(wakeFD)
            _POSIX.close(epollFD)
            throw error
        }
        self.epollFD = epollFD
        self.poolWakeFD = wakeFD
        self.poolResults = _PoolResults(wakeFD: wakeFD)
        self.submissionEntries = entries
        self.completionEntries = entries &* 4
        self.events = .allocate(capacity: Self.eventCapacity)
    }

    /// The epoll data of the pool's eventfd (a watch's is its descriptor and generation).
    static let poolToken = UInt64.max

    /// Tears the engine down; requests on the pool finish there and are dropped.
    internal func close() {
        self.assertOnRingThread()
        self.poolResults.close()
        _POSIX.close(self.poolWakeFD)
        _POSIX.close(self.epollFD)
        for group in self.groups.values { _POSIX.deallocate(group.handle.ring) }
        self.groups.removeAll()
        self.events.deallocate()
    }

    // MARK: Submission

    /// Takes a request for the next `submit`; `linkedToNext`: the request pushed right after
    /// this one starts when this one completed in full (IOSQE_IO_LINK).
    internal func push(_ request: RingRequest, userData: UInt64, linkedToNext: Bool = false) {
        self.assertOnRingThread()
        let op = _ReadyOp(request: request, userData: userData)
        let slot = Int(op.slot)
        if slot >= self.opsBySlot.count {
            self.opsBySlot.append(contentsOf: repeatElement(nil, count: slot + 1 - self.opsBySlot.count))
        }
        self.opsBySlot[slot] = op
        if let head = self.linkHead {
            // The second of a chain: it waits for the first (only chains of two are made).
            self.linkHead = nil
            head.linked = op
            op.state = .linked
        } else {
            self.pushed.append(op)
        }
        if linkedToNext { self.linkHead = op }
    }

    /// The first request of a chain just pushed: the next push is linked to it.
    var linkHead: _ReadyOp?

    /// Runs the pushed requests and, when `wait`, waits until at least one completion is
    /// ready (readiness, a timeout, a pool result). Returns the number of requests taken.
    ///
    /// - Throws: Never in practice (an `epoll_pwait2` failure other than `EINTR` is a bug);
    ///   typed like `_URing.submit(wait:)`.
    internal func submit(wait: Bool) throws(Errno) -> Int {
        self.assertOnRingThread()
        let submitted = self.pushed.count
        if submitted > 0 {
            // Index loop: running a request never pushes (only the core does).
            for index in self.pushed.indices {
                let op = self.pushed[index]
                if op.state == .pushed { self.run(op) }
            }
            self.pushed.removeAll(keepingCapacity: true)
        }
        var polled = false
        while true {
            if !self.deferred.isEmpty {
                // After what the pushed requests started (a link's second), not instead of it.
                self.runnable.append(contentsOf: self.deferred)
                self.deferred.removeAll(keepingCapacity: true)
            }
            self.runRunnable()
            if !self.timeouts.isEmpty { self.expireTimeouts() }
            if self.hasCompletions || !wait { break }
            polled = true
            if !(try self.poll(blocking: self.deferred.isEmpty)) { return submitted }
        }
        if !polled {
            // Work that completes at once must not keep readiness waiting for long.
            if self.roundsWithoutPolling >= 8 || !self.deferred.isEmpty {
                _ = try self.poll(blocking: false)
            } else {
                self.roundsWithoutPolling += 1
            }
        }
        return submitted
    }

    var hasCompletions: Bool { self.reapIndex < self.completions.count }

    /// Makes the next ``submit(wait:)`` look at epoll (without blocking) even when it has
    /// completions to hand back, so that readiness that came before this call is acted on in
    /// that submit: the tests' ring barrier (`_RingIOTesting.barrier(on:completion:)`) relies
    /// on it. The counter is read only where a submit did not poll, and a poll resets it.
    func pollAtNextSubmit() {
        self.roundsWithoutPolling = .max
    }

    /// One look at epoll: blocks until readiness, a pool result or the earliest timeout when
    /// `blocking`. Returns false when interrupted by a signal.
    func poll(blocking: Bool) throws(Errno) -> Bool {
        self.roundsWithoutPolling = 0
        var timeout = timespec(tv_sec: 0, tv_nsec: 0)
        var infinite = false
        if blocking {
            if let earliest = self.earliestDeadline {
                let left = max(earliest - _Clock.nanoseconds(realtime: false), 0)
                timeout = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
            } else {
                infinite = true
            }
        }
        var count: CInt
        if self.hasNanosecondWait {
            count =
                infinite
                ? epoll_pwait2(self.epollFD, self.events, CInt(Self.eventCapacity), nil, nil)
                : epoll_pwait2(self.epollFD, self.events, CInt(Self.eventCapacity), &timeout, nil)
            if count < 0 && (errno == ENOSYS || errno == EPERM) {
                // Before Linux 5.11, or a seccomp profile that predates the call: whole
                // milliseconds from now on, rounded up (a timer never fires early).
                self.hasNanosecondWait = false
                return try self.poll(blocking: blocking)
            }
        } else {
            let milliseconds =
                infinite ? -1 : CInt(clamping: (timeout.tv_sec * 1_000) + (timeout.tv_nsec + 999_999) / 1_000_000)
            count = epoll_wait(self.epollFD, self.events, CInt(Self.eventCapacity), milliseconds)
        }
        if count < 0 {
            let error = Errno(rawValue: errno)
            if error == .interrupted { return false }
            throw error
        }
        for index in 0..<Int(count) {
            let event = self.events[index]
            let token = event.data.u64
            if token == Self.poolToken {
                _EventFD.drain(self.poolWakeFD)
                self.collectPoolResults()
                continue
            }
            let fd = Int(UInt32(truncatingIfNeeded: token))
            guard fd < self.watches.count, let watch = self.watches[fd],
                watch.generation == UInt32(truncatingIfNeeded: token >> 32)
            else { continue }  // forgotten since
            self.wake(watch, events: event.events)
        }
        self.runRunnable()
        if !self.timeouts.isEmpty { self.expireTimeouts() }
        return true
    }

    /// Moves the requests waiting on `watch` for what `events` says to the runnable list.
    func wake(_ watch: _Watch, events: UInt32) {
        let hangUp = EPOLLHUP.rawValue | EPOLLERR.rawValue
        if events & (EPOLLRDHUP.rawValue | hangUp) != 0 { watch.peerClosed = true }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | hangUp) != 0, !watch.readers.isEmpty {
            for op in watch.readers where op.state == .waiting {
                op.state = .pushed
                self.runnable.append(op)
            }
            watch.readers.removeAll(keepingCapacity: true)
        }
        if events & (EPOLLOUT.rawValue | hangUp) != 0, !watch.writers.isEmpty {
            for op in watch.writers where op.state == .waiting {
                op.state = .pushed
                self.runnable.append(op)
            }
            watch.writers.removeAll(keepingCapacity: true)
        }
    }

    func runRunnable() {
        // Index loop: running a request may append (a link's second request).
        var index = 0
        while index < self.runnable.count {
            let op = self.runnable[index]
            if op.state == .pushed { self.run(op) }
            index += 1
        }
        self.runnable.removeAll(keepingCapacity: true)
    }

    // MARK: Completion

    /// Copies up to `buffer.count` ready completions into `buffer` and forgets them.
    internal func reap(into buffer: UnsafeMutableBufferPointer<RingCompletion>) -> Int {
        self.assertOnRingThread()
        let count = min(buffer.count, self.completions.count - self.reapIndex)
        for index in 0..<count {
            buffer[index] = self.completions[self.reapIndex + index]
        }
        self.reapIndex += count
        if self.reapIndex == self.completions.count {
            self.completions.removeAll(keepingCapacity: true)
            self.reapIndex = 0
        }
        return count
    }

    /// The final completion of `op`; starts or cancels the request linked to it.
    func finish(_ op: _ReadyOp, _ result: Int32, flags: UInt32 = 0) {
        op.state = .done
        if Int(op.slot) < self.opsBySlot.count, self.opsBySlot[Int(op.slot)] === op {
            self.opsBySlot[Int(op.slot)] = nil
        }
        self.completions.append(RingCompletion(userData: op.userData, result: result, flags: flags))
        if let next = op.linked {
            op.linked = nil
            if result < 0 || (op.expectedResult >= 0 && Int(result) != op.expectedResult) {
                self.finish(next, -ECANCELED)
            } else {
                next.state = .pushed
                self.runnable.append(next)
            }
        }
        if op.transient { self.releaseIfIdle(op.waitFD) }
    }

    /// A completion of a multishot request that goes on.
    func emit(_ op: _ReadyOp, _ result: Int32, flags: UInt32) {
        self.completions.append(
            RingCompletion(userData: op.userData, result: result, flags: flags | UInt32(IORING_CQE_F_MORE))
        )
    }

    // MARK: Timeouts

    var earliestDeadline: Int64? {
        var earliest: Int64?
        for op in self.timeouts where op.state == .timing {
            if earliest == nil || op.deadline < earliest! { earliest = op.deadline }
        }
        return earliest
    }

    func expireTimeouts() {
        let now = _Clock.nanoseconds(realtime: false)
        var index = 0
        while index < self.timeouts.count {
            let op = self.timeouts[index]
            if op.state != .timing || op.deadline <= now {
                self.timeouts.swapAt(index, self.timeouts.count - 1)
                self.timeouts.removeLast()
                if op.state == .timing { self.finish(op, -ETIME) }
            } else {
                index += 1
            }
        }
    }

    // MARK: Cancellation

    /// Cancels the request with `userData`: 0 when it was, `-ENOENT` when there is none,
    /// `-EALREADY` when the pool is running it.
    func cancel(userData: UInt64) -> Int32 {
        let slot = Int(UInt32(truncatingIfNeeded: userData))
        guard slot < self.opsBySlot.count, let op = self.opsBySlot[slot], op.userData == userData,
            op.state != .done
        else { return -ENOENT }
        return self.cancel(op) ? 0 : -EALREADY
    }

    /// Ends `op` with ECANCELED wherever it waits; false when the pool is running it.
    func cancel(_ op: _ReadyOp) -> Bool {
        switch op.state {
        case .pooled:
            guard
                op.pool.compareExchange(
                    expected: _ReadyOp.poolQueued,
                    desired: _ReadyOp.poolCancelled,
                    ordering: .relaxed
                ).exchanged
            else { return false }
            if let buffer = op.selected, case .readSelect(_, let group, _, _) = op.request {
                op.selected = nil
                self.groups[group]?.giveBack(buffer)  // taken for the read that never ran
            }
        case .waiting:
            if let watch = op.watch {
                watch.readers.removeAll { $0 === op }
                watch.writers.removeAll { $0 === op }
                op.watch = nil
            }
        case .linked:
            // The second of a chain not started: its first goes on alone.
            for case let head? in self.opsBySlot where head.linked === op { head.linked = nil }
        case .done:
            return true
        case .pushed, .timing:
            break  // skipped where it is listed
        }
        self.finish(op, -ECANCELED)
        return true
    }

    // MARK: The pool

    /// Runs `op` on the blocking pool; its result comes back through `collectPoolResults`.
    func offload(_ op: _ReadyOp) {
        if case .readSelect(_, let group, let length, _) = op.request {
            guard let buffer = self.groups[group]?.peek() else {
                self.finish(op, -ENOBUFS)
                return
            }
            self.groups[group]!.consume()
            op.selected = buffer
            op.selectedLength = min(length, buffer.length)
        }
        op.state = .pooled
        op.pool.store(_ReadyOp.poolQueued, ordering: .relaxed)
        _BlockingPool.shared.run(op, results: self.poolResults)
    }

    func collectPoolResults() {
        guard let done = self.poolResults.take() else { return }
        for op in done {
            guard op.state == .pooled else { continue }  // cancelled before it ran
            let result = op.poolResult
            if let buffer = op.selected, case .readSelect(_, let group, _, _) = op.request {
                op.selected = nil
                if result > 0 {
                    self.finish(op, result, flags: Self.bufferFlags(buffer.id))
                } else {
                    self.groups[group]?.giveBack(buffer)
                    self.finish(op, result)
                }
            } else {
                self.finish(op, result)
            }
        }
    }

    // MARK: Provided buffers

    /// Allocates a buffer ring for `group` in the layout io_uring reads, read here instead.
    internal func registerBufferRing(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        self.assertOnRingThread()
        let handle = try _BufferRingHandle.allocate(entries: entries, group: group)
        self.groups[group] = _BufferGroup(handle: handle)
        return handle
    }

    internal func unregisterBufferRing(_ handle: _BufferRingHandle) {
        self.assertOnRingThread()
        self.groups[handle.group] = nil
        _POSIX.deallocate(handle.ring)
    }
}

@available(*, unavailable)
extension _ReadinessEngine: Sendable {}
