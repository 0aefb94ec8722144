//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: the ring's requests run with epoll and non-blocking system
// calls, where io_uring is refused.
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
    private let epollFD: CInt
    /// Signalled by the pool when a result is posted.
    private let poolWakeFD: CInt
    /// Where the pool posts results.
    private let poolResults: _PoolResults
    /// The number of completions the core reaps in one batch at most (as io_uring's CQ size).
    internal let completionEntries: UInt32
    internal let submissionEntries: UInt32

    // MARK: Ring thread only
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    /// Requests pushed since the last `submit`.
    @exclusivity(unchecked) private var pushed: ContiguousArray<_ReadyOp> = []
    /// Completions ready to reap, from `reapIndex` on.
    @exclusivity(unchecked) private var completions: ContiguousArray<RingCompletion> = []
    @exclusivity(unchecked) private var reapIndex = 0
    /// The live request of each core slot (the low 32 bits of its user data).
    @exclusivity(unchecked) private var opsBySlot: ContiguousArray<_ReadyOp?> = []
    /// The registered descriptors, by number.
    @exclusivity(unchecked) private var watches: ContiguousArray<_Watch?> = []
    /// Requests to run now (woken, or started by a link), and those to run next round (a
    /// multishot that used its budget: other descriptors go first).
    @exclusivity(unchecked) private var runnable: ContiguousArray<_ReadyOp> = []
    @exclusivity(unchecked) private var deferred: ContiguousArray<_ReadyOp> = []
    /// Timeouts waiting for their deadline.
    @exclusivity(unchecked) private var timeouts: ContiguousArray<_ReadyOp> = []
    /// Provided-buffer groups, by id.
    @exclusivity(unchecked) private var groups: [UInt16: _BufferGroup] = [:]
    /// Rounds since the last look at epoll: a ring that always has completions still looks
    /// every few rounds, so readiness is never starved by work that completes at once.
    private var roundsWithoutPolling = 0
    /// `epoll_pwait2` is there (Linux 5.11+, and allowed): waits end to the nanosecond.
    private var hasNanosecondWait = true
    /// The descriptor of the core's wake-up eventfd: its registration stays.
    internal var persistentFD: CInt = -1
    private var nextGeneration: UInt32 = 1

    /// The poll budget: descriptors whose readiness one `epoll_pwait2` returns at most.
    private static let eventCapacity = 128
    private let events: UnsafeMutablePointer<epoll_event>

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
    private static let poolToken = UInt64.max

    /// Tears the engine down; requests on the pool finish there and are dropped.
    internal func close() {
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
    private var linkHead: _ReadyOp?

    /// Runs the pushed requests and, when `wait`, waits until at least one completion is
    /// ready (readiness, a timeout, a pool result). Returns the number of requests taken.
    ///
    /// - Throws: Never in practice (an `epoll_pwait2` failure other than `EINTR` is a bug);
    ///   typed like `_URing.submit(wait:)`.
    internal func submit(wait: Bool) throws(Errno) -> Int {
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

    private var hasCompletions: Bool { self.reapIndex < self.completions.count }

    /// Makes the next ``submit(wait:)`` look at epoll (without blocking) even when it has
    /// completions to hand back, so that readiness that came before this call is acted on in
    /// that submit: the tests' ring barrier (`_RingIOTesting.barrier(on:completion:)`) relies
    /// on it. The counter is read only where a submit did not poll, and a poll resets it.
    internal func pollAtNextSubmit() {
        self.roundsWithoutPolling = .max
    }

    /// One look at epoll: blocks until readiness, a pool result or the earliest timeout when
    /// `blocking`. Returns false when interrupted by a signal.
    private func poll(blocking: Bool) throws(Errno) -> Bool {
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
    private func wake(_ watch: _Watch, events: UInt32) {
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

    private func runRunnable() {
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
    private func finish(_ op: _ReadyOp, _ result: Int32, flags: UInt32 = 0) {
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
    private func emit(_ op: _ReadyOp, _ result: Int32, flags: UInt32) {
        self.completions.append(
            RingCompletion(userData: op.userData, result: result, flags: flags | UInt32(IORING_CQE_F_MORE))
        )
    }

    // MARK: Running requests

    private func run(_ op: _ReadyOp) {
        switch op.request {
        case .nop:
            self.finish(op, 0)
        case .read(let fd, let buffer, let offset):
            // A readable eventfd, signalfd or pipe the core or a source reads: registered
            // while the read waits (the core's own wake-up descriptor stays registered).
            op.transient = fd != self.persistentFD
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            self.transfer(op, fd: fd, vectors: &vector, count: 1, offset: offset, writing: false)
        case .write(let fd, let buffer, let offset):
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
            self.transfer(op, fd: fd, vectors: &vector, count: 1, offset: offset, writing: true)
        case .writev(let fd, let vectors, let offset):
            self.transfer(
                op,
                fd: fd,
                vectors: UnsafeMutablePointer(mutating: vectors.baseAddress!),
                count: vectors.count,
                offset: offset,
                writing: true
            )
        case .send(let fd, let buffer):
            let sent = Glibc.send(fd, buffer.baseAddress, buffer.count, Self.sendFlags)
            self.settle(op, sent, fd: fd, writing: true)
        case .sendmsg(let fd, let message):
            let sent = Glibc.sendmsg(fd, message, Self.sendFlags)
            self.settle(op, sent, fd: fd, writing: true)
        case .receiveMultishot(let fd, let group):
            self.receiveMultishot(op, fd: fd, group: group)
        case .receiveSelect(let fd, let group, let length, let noWait):
            self.receiveOnce(op, fd: fd, group: group, length: length, noWait: noWait, socket: true)
        case .readSelect(let fd, let group, let length, let noWait):
            self.receiveOnce(op, fd: fd, group: group, length: length, noWait: noWait, socket: false)
        case .acceptMultishot(let fd):
            self.acceptMultishot(op, fd: fd)
        case .openat:
            self.offload(op)
        case .close(let fd):
            self.forget(fd)
            self.finish(op, Glibc.close(fd) == 0 ? 0 : -errno)
        case .timeout(let spec):
            let duration = Int64(spec.pointer.pointee.tv_sec) * 1_000_000_000 + Int64(spec.pointer.pointee.tv_nsec)
            let now = _Clock.nanoseconds(realtime: false)
            op.deadline = duration > Int64.max - now ? Int64.max : now + duration
            op.state = .timing
            self.timeouts.append(op)
        case .timeoutAt(let spec, let realtime):
            var deadline = Int64(spec.pointer.pointee.tv_sec) * 1_000_000_000 + Int64(spec.pointer.pointee.tv_nsec)
            if realtime {
                deadline = _Clock.nanoseconds(realtime: false) &+ (deadline &- _Clock.nanoseconds(realtime: true))
            }
            op.deadline = deadline
            op.state = .timing
            self.timeouts.append(op)
        case .poll(let fd, let events):
            op.transient = true
            var descriptor = pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)
            let ready = Glibc.poll(&descriptor, 1, 0)
            if ready > 0 {
                if descriptor.revents & Int16(POLLNVAL) != 0 {
                    self.finish(op, -EBADF)
                } else {
                    self.finish(op, Int32(UInt16(bitPattern: descriptor.revents)))
                }
            } else if ready == 0 || errno == EINTR {
                self.park(op, fd: fd, writing: events & UInt32(POLLIN) == 0, ifRefused: -EINVAL)
            } else {
                self.finish(op, -errno)
            }
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            op.expectedResult = length
            if inputOffset >= 0 {
                self.offload(op)  // from a file: its read may wait for the disk
                return
            }
            // SPLICE_F_NONBLOCK covers the pipe's side only: a splice into a socket waits unless
            // the socket itself is non-blocking, so it is made so for the call (and restored).
            let moved = Self.nonBlocking(output) {
                CLiburing_splice(input, inputOffset, output, outputOffset, length, CLiburing_SPLICE_F_NONBLOCK)
            }
            self.settle(op, moved, fd: output, writing: true)
        case .cancel(let target):
            self.finish(op, self.cancel(userData: target))
        case .cancelAll:
            var cancelled: Int32 = 0
            for candidate in self.opsBySlot {
                guard let candidate, candidate !== op, candidate.state != .done else { continue }
                if self.cancel(candidate) { cancelled += 1 }
            }
            self.finish(op, cancelled)
        }
    }

    private static let sendFlags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)

    /// A read or write of `vectors` without waiting (RWF_NOWAIT); waits for readiness, or goes
    /// to the pool for a descriptor epoll refuses (a regular file).
    private func transfer(
        _ op: _ReadyOp,
        fd: CInt,
        vectors: UnsafeMutablePointer<iovec>,
        count: Int,
        offset: Int64,
        writing: Bool
    ) {
        let result =
            writing
            ? CLiburing_pwritev2(fd, vectors, CInt(count), offset, CLiburing_RWF_NOWAIT)
            : CLiburing_preadv2(fd, vectors, CInt(count), offset, CLiburing_RWF_NOWAIT)
        if result < 0 && errno == EOPNOTSUPP {
            // No RWF_NOWAIT here: a regular file whose file system has none for this call
            // (ext4's buffered writes) goes to the pool; a descriptor epoll takes (a terminal)
            // is made non-blocking for the call.
            guard self.watch(fd) != nil else {
                if errno == EPERM {
                    self.offload(op)
                } else {
                    self.finish(op, -errno)
                }
                return
            }
            op.transient = fd != self.persistentFD
            let plain = Self.nonBlocking(fd) {
                writing
                    ? CLiburing_pwritev2(fd, vectors, CInt(count), offset, 0)
                    : CLiburing_preadv2(fd, vectors, CInt(count), offset, 0)
            }
            self.settle(op, plain, fd: fd, writing: writing)
            return
        }
        self.settle(op, result, fd: fd, writing: writing)
    }

    /// Runs `call` with `O_NONBLOCK` set on `fd` (and restored after, `errno` kept): for the
    /// calls that take no per-call flag, where `fd` is in blocking mode.
    private static func nonBlocking(_ fd: CInt, _ call: () -> Int) -> Int {
        let flags = fcntl(fd, F_GETFL)
        let toggles = flags >= 0 && flags & O_NONBLOCK == 0
        if toggles { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let result = call()
        let error = errno
        if toggles { _ = fcntl(fd, F_SETFL, flags) }
        errno = error
        return result
    }

    /// Completes `op` with the outcome of a non-blocking call, or parks it until `fd` is ready
    /// (EAGAIN); a descriptor epoll refuses sends it to the pool.
    private func settle(_ op: _ReadyOp, _ result: Int, fd: CInt, writing: Bool) {
        if result >= 0 {
            self.finish(op, Int32(clamping: result))
            return
        }
        let error = errno
        switch error {
        case EAGAIN:
            self.park(op, fd: fd, writing: writing, ifRefused: nil)
        case EINTR:
            self.deferred.append(op)
        default:
            self.finish(op, -error)
        }
    }

    /// Receives into provided buffers until the descriptor is empty, the budget is spent (the
    /// request then runs again next round) or it ends.
    private func receiveMultishot(_ op: _ReadyOp, fd: CInt, group: UInt16) {
        for _ in 0..<8 {
            guard let buffer = self.groups[group]?.peek() else {
                self.finish(op, -ENOBUFS)
                return
            }
            let received = Glibc.recv(fd, buffer.address, buffer.length, Int32(MSG_DONTWAIT))
            if received > 0 {
                self.groups[group]!.consume()
                self.emit(op, Int32(received), flags: Self.bufferFlags(buffer.id))
                if received < buffer.length && !self.peerClosed(fd) && self.isStreamSocket(fd) {
                    // Short: the socket is empty; its next edge is new data. (Once the peer
                    // closed, the end of file is no new edge: read on until it comes.)
                    self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
                    return
                }
                continue
            }
            if received == 0 {
                self.finish(op, 0)
                return
            }
            let error = errno
            if error == EAGAIN {
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            } else if error != EINTR {
                self.finish(op, -error)
            } else {
                continue
            }
            return
        }
        op.state = .pushed
        self.deferred.append(op)
    }

    /// One receive (socket) or read at the file position into a provided buffer.
    private func receiveOnce(_ op: _ReadyOp, fd: CInt, group: UInt16, length: Int, noWait: Bool, socket: Bool) {
        guard let buffer = self.groups[group]?.peek() else {
            self.finish(op, -ENOBUFS)
            return
        }
        let count = min(length, buffer.length)
        let received: Int
        if socket {
            received = Glibc.recv(fd, buffer.address, count, Int32(MSG_DONTWAIT))
        } else {
            var vector = iovec(iov_base: buffer.address, iov_len: count)
            received = CLiburing_preadv2(fd, &vector, 1, -1, CLiburing_RWF_NOWAIT)
        }
        if received > 0 {
            self.groups[group]!.consume()
            self.finish(op, Int32(received), flags: Self.bufferFlags(buffer.id))
            return
        }
        if received == 0 {
            self.finish(op, 0)
            return
        }
        let error = errno
        switch error {
        case EAGAIN where noWait:
            self.finish(op, -EAGAIN)
        case EAGAIN:
            self.park(op, fd: fd, writing: false, ifRefused: nil)
        case EOPNOTSUPP where !socket:
            // No RWF_NOWAIT here: a descriptor epoll takes (a terminal) is read non-blocking; one
            // it refuses (a file on a file system without it) is read on the pool.
            guard self.watch(fd) != nil else {
                if errno == EPERM && !noWait {
                    self.offload(op)
                } else {
                    self.finish(op, errno == EPERM ? -EAGAIN : -errno)
                }
                return
            }
            op.transient = true
            let plain = Self.nonBlocking(fd) { Glibc.read(fd, buffer.address, count) }
            if plain > 0 {
                self.groups[group]!.consume()
                self.finish(op, Int32(plain), flags: Self.bufferFlags(buffer.id))
            } else if plain == 0 {
                self.finish(op, 0)
            } else if errno == EAGAIN {
                if noWait {
                    self.finish(op, -EAGAIN)
                } else {
                    self.park(op, fd: fd, writing: false, ifRefused: -EOPNOTSUPP)
                }
            } else {
                self.finish(op, -errno)
            }
        case EINTR:
            op.state = .pushed
            self.deferred.append(op)
        default:
            self.finish(op, -error)
        }
    }

    private static func bufferFlags(_ id: UInt16) -> UInt32 {
        UInt32(IORING_CQE_F_BUFFER) | UInt32(id) << UInt32(IORING_CQE_BUFFER_SHIFT)
    }

    /// Accepts until the backlog is empty (close-on-exec descriptors), the budget is spent or
    /// an error ends the request (as io_uring's multishot accept, which an error ends).
    private func acceptMultishot(_ op: _ReadyOp, fd: CInt) {
        if !op.prepared {
            op.prepared = true
            // Non-blocking: another ring accepting on the same socket may take the connection
            // between readiness and this accept.
            let flags = fcntl(fd, F_GETFL)
            if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        }
        for _ in 0..<16 {
            let accepted = CLiburing_accept_cloexec(fd)
            if accepted >= 0 {
                self.emit(op, accepted, flags: 0)
                continue
            }
            let error = errno
            switch error {
            case EAGAIN:
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            case EINTR, ECONNABORTED:
                continue
            default:
                self.finish(op, -error)
            }
            return
        }
        op.state = .pushed
        self.deferred.append(op)
    }

    // MARK: Waiting for readiness

    /// Parks `op` until `fd` is ready for reading or writing. A descriptor epoll refuses
    /// (EPERM: a regular file, most character devices) sends `op` to the pool, or ends it
    /// with `ifRefused` when given.
    private func park(_ op: _ReadyOp, fd: CInt, writing: Bool, ifRefused: Int32?) {
        guard let watch = self.watch(fd) else {
            let error = errno
            if error == EPERM {
                if let ifRefused {
                    self.finish(op, ifRefused)
                } else {
                    self.offload(op)
                }
            } else {
                self.finish(op, -error)
            }
            return
        }
        if writing && !watch.watchesOutput {
            var event = epoll_event()
            event.events = Self.inputEvents | EPOLLOUT.rawValue
            event.data.u64 = watch.token
            guard epoll_ctl(self.epollFD, EPOLL_CTL_MOD, fd, &event) == 0 else {
                self.finish(op, -errno)
                return
            }
            watch.watchesOutput = true
        }
        op.state = .waiting
        op.waitFD = fd
        op.watch = watch
        if writing {
            watch.writers.append(op)
        } else {
            watch.readers.append(op)
        }
    }

    private static let inputEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | CLiburing_EPOLLET

    /// The registration of `fd`, made now if there is none; `nil` with `errno` set when epoll
    /// refuses the descriptor.
    private func watch(_ fd: CInt) -> _Watch? {
        let index = Int(fd)
        if index < self.watches.count, let watch = self.watches[index] { return watch }
        let generation = self.nextGeneration
        self.nextGeneration &+= 1
        let token = UInt64(UInt32(bitPattern: fd)) | UInt64(generation) << 32
        var event = epoll_event()
        event.events = Self.inputEvents
        event.data.u64 = token
        guard epoll_ctl(self.epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else { return nil }
        let watch = _Watch(generation: generation, token: token)
        if index >= self.watches.count {
            self.watches.append(contentsOf: repeatElement(nil, count: index + 1 - self.watches.count))
        }
        self.watches[index] = watch
        return watch
    }

    /// Whether `fd` is a stream socket, whose short read means it was empty (a datagram
    /// socket's is one message of several, a message with descriptors ends a read too): asked
    /// once per registration.
    private func isStreamSocket(_ fd: CInt) -> Bool {
        guard Int(fd) < self.watches.count, let watch = self.watches[Int(fd)] else { return false }
        if let known = watch.isStreamSocket { return known }
        let type = try? _POSIX.option(fd, level: SOL_SOCKET, name: SO_TYPE)
        let stream = type == Int32(SOCK_STREAM.rawValue)
        watch.isStreamSocket = stream
        return stream
    }

    /// Whether epoll reported the peer's close (or an error) on `fd`: a state, not an edge.
    private func peerClosed(_ fd: CInt) -> Bool {
        Int(fd) < self.watches.count && self.watches[Int(fd)]?.peerClosed == true
    }

    /// The descriptor's owner is done with it (a channel's entry finished, a listener closed
    /// its socket, a close request): its registration goes, so that the number, once it names
    /// a new file, is registered afresh. Requests of others still waiting on it (a source on a
    /// channel's descriptor) run again: they find it ready, or wait on a new registration.
    internal func forget(_ fd: CInt) {
        let index = Int(fd)
        guard index >= 0, index < self.watches.count, let watch = self.watches[index] else { return }
        self.watches[index] = nil
        _ = epoll_ctl(self.epollFD, EPOLL_CTL_DEL, fd, nil)  // ENOENT/EBADF: closed already
        for op in watch.readers where op.state == .waiting { self.rerun(op) }
        for op in watch.writers where op.state == .waiting { self.rerun(op) }
        watch.readers.removeAll()
        watch.writers.removeAll()
    }

    private func rerun(_ op: _ReadyOp) {
        op.state = .pushed
        op.watch = nil
        self.runnable.append(op)
    }

    /// After a transient request (a poll, a plain read of a descriptor the core does not own
    /// for long): its registration goes when nothing else waits on it.
    private func releaseIfIdle(_ fd: CInt) {
        guard fd >= 0, fd != self.persistentFD, Int(fd) < self.watches.count,
            let watch = self.watches[Int(fd)],
            !watch.readers.contains(where: { $0.state == .waiting }),
            !watch.writers.contains(where: { $0.state == .waiting })
        else { return }
        self.forget(fd)
    }

    // MARK: Timeouts

    private var earliestDeadline: Int64? {
        var earliest: Int64?
        for op in self.timeouts where op.state == .timing {
            if earliest == nil || op.deadline < earliest! { earliest = op.deadline }
        }
        return earliest
    }

    private func expireTimeouts() {
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
    private func cancel(userData: UInt64) -> Int32 {
        let slot = Int(UInt32(truncatingIfNeeded: userData))
        guard slot < self.opsBySlot.count, let op = self.opsBySlot[slot], op.userData == userData,
            op.state != .done
        else { return -ENOENT }
        return self.cancel(op) ? 0 : -EALREADY
    }

    /// Ends `op` with ECANCELED wherever it waits; false when the pool is running it.
    private func cancel(_ op: _ReadyOp) -> Bool {
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
    private func offload(_ op: _ReadyOp) {
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

    private func collectPoolResults() {
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
        let handle = try _BufferRingHandle.allocate(entries: entries, group: group)
        self.groups[group] = _BufferGroup(handle: handle)
        return handle
    }

    internal func unregisterBufferRing(_ handle: _BufferRingHandle) {
        self.groups[handle.group] = nil
        _POSIX.deallocate(handle.ring)
    }
}

@available(*, unavailable)
extension _ReadinessEngine: Sendable {}

/// A descriptor registered with epoll, and the requests waiting for it.
private final class _Watch {
    let generation: UInt32
    /// epoll reported a hang-up, the peer's half-close or an error: it stays.
    var peerClosed = false
    /// A stream socket (its short reads mean "empty"); `nil` until asked.
    var isStreamSocket: Bool?
    /// EPOLLOUT is in the registration (added when a writer first waits: readers alone would
    /// be woken by every edge of the other side's reads).
    var watchesOutput = false
    var readers: ContiguousArray<_ReadyOp> = []
    var writers: ContiguousArray<_ReadyOp> = []

    /// Its epoll data: the descriptor and the generation.
    let token: UInt64

    init(generation: UInt32, token: UInt64) {
        self.generation = generation
        self.token = token
    }
}

/// A provided buffer taken from a group's ring.
internal struct _SelectedBuffer {
    let address: UnsafeMutableRawPointer
    let length: Int
    let id: UInt16
}

/// The consumer side of one provided-buffer ring: the published buffers, read in order, and
/// those taken and not used (a read on the pool that failed), offered first.
private struct _BufferGroup {
    let handle: _BufferRingHandle
    var head: UInt16 = 0
    var spare: [_SelectedBuffer] = []

    init(handle: _BufferRingHandle) {
        self.handle = handle
    }

    func peek() -> _SelectedBuffer? {
        if let spare = self.spare.last { return spare }
        var address: UnsafeMutableRawPointer?
        var length: UInt32 = 0
        var id: UInt16 = 0
        guard CLiburing_buf_ring_peek(self.handle.ring, self.head, UInt32(self.handle.mask), &address, &length, &id)
        else { return nil }
        return _SelectedBuffer(address: address!, length: Int(length), id: id)
    }

    /// Takes the buffer `peek` returned.
    mutating func consume() {
        if self.spare.popLast() == nil { self.head &+= 1 }
    }

    mutating func giveBack(_ buffer: _SelectedBuffer) {
        self.spare.append(buffer)
    }
}

/// One request in the readiness engine.
// @unchecked Sendable: handed to a pool thread while `state == .pooled`; the engine touches
// only `pool` (atomic) then, and reads `poolResult` after the pool posted it under the lock of
// `_PoolResults`, which orders the two threads.
internal final class _ReadyOp: @unchecked Sendable {
    enum State { case pushed, linked, waiting, timing, pooled, done }

    static let poolQueued: UInt8 = 0
    static let poolRunning: UInt8 = 1
    static let poolCancelled: UInt8 = 2

    let request: RingRequest
    let userData: UInt64
    var slot: UInt32 { UInt32(truncatingIfNeeded: self.userData) }
    var state = State.pushed
    /// The request pushed after this one with a link: it starts when this one completed in full.
    var linked: _ReadyOp?
    /// For a link: the result that counts as "in full" (-1: any non-negative).
    var expectedResult = -1
    /// The descriptor it waits on (parked), else -1, and its registration.
    var waitFD: CInt = -1
    fileprivate var watch: _Watch?
    /// Its registration goes when it completes (a descriptor the core does not hold on to).
    var transient = false
    /// One-time preparation done (a listening socket made non-blocking).
    var prepared = false
    var deadline: Int64 = 0
    /// On the pool: queued, running or cancelled.
    let pool = Atomic<UInt8>(0)
    var poolResult: Int32 = 0
    /// A read on the pool into a provided buffer: the buffer, taken before.
    var selected: _SelectedBuffer?
    var selectedLength = 0

    init(request: RingRequest, userData: UInt64) {
        self.request = request
        self.userData = userData
    }

    /// Runs the blocking call on a pool thread.
    func runBlocking() -> Int32 {
        let result: Int
        switch self.request {
        case .read(let fd, let buffer, let offset):
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            result = CLiburing_preadv2(fd, &vector, 1, offset, 0)
        case .write(let fd, let buffer, let offset):
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
            result = CLiburing_pwritev2(fd, &vector, 1, offset, 0)
        case .writev(let fd, let vectors, let offset):
            result = CLiburing_pwritev2(fd, vectors.baseAddress, CInt(vectors.count), offset, 0)
        case .readSelect(let fd, _, _, _):
            var vector = iovec(iov_base: self.selected!.address, iov_len: self.selectedLength)
            result = CLiburing_preadv2(fd, &vector, 1, -1, 0)
        case .openat(let directory, let path, let flags, let mode):
            result = Int(Glibc.openat(directory, path, flags, mode))
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            result = CLiburing_splice(input, inputOffset, output, outputOffset, length, 0)
        case .send(let fd, let buffer):
            result = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        case .sendmsg(let fd, let message):
            result = Glibc.sendmsg(fd, message, Int32(MSG_NOSIGNAL))
        default:
            return -EINVAL
        }
        return result >= 0 ? Int32(clamping: result) : -errno
    }
}

/// Results the pool posted for one engine, and the eventfd that wakes it.
internal final class _PoolResults: Sendable {
    private let wakeFD: CInt
    private let state = _Lock<(done: [_ReadyOp], closed: Bool)>(([], false))

    init(wakeFD: CInt) {
        self.wakeFD = wakeFD
    }

    func post(_ op: _ReadyOp) {
        let wake = self.state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.done.append(op)
            return state.done.count == 1
        }
        if wake { _EventFD.signal(self.wakeFD) }
    }

    func take() -> [_ReadyOp]? {
        self.state.withLock { state -> [_ReadyOp]? in
            guard !state.done.isEmpty else { return nil }
            let done = state.done
            state.done = []
            return done
        }
    }

    func close() {
        self.state.withLock { $0.closed = true }
    }
}

/// A small process-wide pool of threads for the calls that block: regular-file I/O the page
/// cache cannot serve, opens, splices from files. At most `limit` threads, started on demand;
/// they stay for the life of the process.
internal final class _BlockingPool: Sendable {
    static let shared = _BlockingPool(limit: 4)

    private let limit: Int
    private let state = _Lock<(jobs: [(op: _ReadyOp, results: _PoolResults)], head: Int, threads: Int, idle: Int)>(
        ([], 0, 0, 0)
    )
    private let available = DispatchSemaphore(value: 0)

    private init(limit: Int) {
        self.limit = limit
    }

    func run(_ op: _ReadyOp, results: _PoolResults) {
        enum Action { case signal, start, none }
        let action = self.state.withLock { state -> Action in
            state.jobs.append((op, results))
            if state.idle > 0 {
                state.idle -= 1
                return .signal
            }
            guard state.threads < self.limit else { return .none }  // a busy thread takes it next
            state.threads += 1
            return .start
        }
        switch action {
        case .signal:
            self.available.signal()
        case .none:
            break
        case .start:
            let context = Unmanaged.passRetained(self).toOpaque()
            do throws(Errno) {
                let thread = try _POSIX.startThread(context: context) { context in
                    let pool = Unmanaged<_BlockingPool>.fromOpaque(context!).takeRetainedValue()
                    // As io_uring's workers: no signal interrupts a call (EINTR) or runs here.
                    _POSIX.blockAllSignals()
                    pool.work(once: false)
                    return nil
                }
                _POSIX.detach(thread)
            } catch {
                Unmanaged<_BlockingPool>.fromOpaque(context).release()
                let none = self.state.withLock { state -> Bool in
                    state.threads -= 1
                    return state.threads == 0
                }
                // No thread could start: with none at all, the job runs here rather than wait
                // forever; otherwise a running thread takes it.
                if none { self.work(once: true) }
            }
        }
    }

    private func work(once: Bool) {
        while true {
            let job = self.state.withLock { state -> (op: _ReadyOp, results: _PoolResults)? in
                guard state.head < state.jobs.count else {
                    if !once { state.idle += 1 }  // under the lock: `run` signals it from now on
                    return nil
                }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return job
            }
            guard let job else {
                if once { return }
                self.available.wait()
                continue
            }
            if job.op.pool.compareExchange(
                expected: _ReadyOp.poolQueued,
                desired: _ReadyOp.poolRunning,
                ordering: .relaxed
            ).exchanged {
                job.op.poolResult = job.op.runBlocking()
                job.results.post(job.op)
            }
        }
    }
}
