//===----------------------------------------------------------------------===//
// RingIO — channels: the state all channels on one descriptor share.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A path a path channel opens lazily.
internal final class _PathToOpen {
    let path: String
    let flags: CInt
    let permissions: mode_t
    /// The path as a C string at a stable address, for openat.
    let cString: UnsafeMutablePointer<CChar>

    init(path: String, flags: CInt, permissions: mode_t) {
        self.path = path
        self.flags = flags
        self.permissions = permissions
        let utf8 = path.utf8CString  // NUL-terminated
        self.cString = .allocate(capacity: utf8.count)
        utf8.withUnsafeBufferPointer { self.cString.initialize(from: $0.baseAddress!, count: $0.count) }
    }

    deinit {
        self.cString.deallocate()
    }
}

/// The state all channels on one descriptor share (R31): operation queues per direction,
/// barriers, the cleanup point, EBADF poisoning, the receive armed for stream reads, and, for a
/// path channel, the lazily opened descriptor.
///
/// Ordering (R56, R72, R73): operations are admitted in submission order. A barrier waits until
/// every admitted operation has finished, runs, and only then are the operations and barriers
/// submitted after it admitted. Admitted operations run at once (random access) or one at a
/// time per lane: reads and writes of a stream on a pipe or socket are separate lanes, every
/// stream operation on a regular file shares one.
///
/// Confinement: everything except `liveChannels` is touched only on `ring`'s thread — every
/// method the channels and operations call checks so in debug builds
/// (`assertOnRingThread()`); `liveChannels` is guarded by the registry's lock for descriptor
/// entries (a path entry has a single channel and touches it on the ring).
internal final class _DescriptorEntry: RingOperationTarget, @unchecked Sendable {
    // MARK: Immutable after init
    let ring: RingLoop
    let core: _RingCore
    let type: _FileType
    let path: _PathToOpen?

    // MARK: Registry lock (see above)
    var liveChannels = 0

    /// The channels' state on this ring, taken on first use (on the ring thread).
    private lazy var channelRing = self.core.local(_ChannelRing.self)

    // MARK: Ring thread only
    /// The descriptor; -1 while a path channel has not opened it.
    var fd: CInt
    private var openState: OpenState
    private var openWaiters: [() -> Void] = []
    /// EBADF: every operation on the descriptor ends with it (R65).
    private var poison: Errno?
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) private var channels: [_ChannelState] = []
    private var cleanups: [(queue: any IOQueue, handler: @Sendable (Errno?) -> Void)] = []
    /// Operations and barriers not yet retired (finished with no syscall in flight).
    private var unretired = 0
    private var noLiveChannels = false
    private var finished = false

    // Ordering
    private var admittedUnfinished = 0
    private var barrier: _Barrier?
    @exclusivity(unchecked) private var blocked: [_Blocked] = []
    @exclusivity(unchecked) private var lanes: [_FIFO<_Operation>] = [_FIFO(), _FIFO(), _FIFO()]
    @exclusivity(unchecked) private var laneHeads: [_Operation?] = [nil, nil, nil]

    // The receive for stream reads
    /// Bytes received and not yet taken by a read: they belong to the next read (never lost).
    @exclusivity(unchecked) private var carry = ByteRope()
    /// The armed receive (or poll, or fallback read); `nil` when none is in flight.
    private var receive: UInt64?
    private var receiveIsMultishot = false
    private var receiveCancelled = false
    private var multishotUnsupported = false
    private var fallbackMemory: _ReadMemory?
    /// The receive ended with ENOBUFS and waits (one ring turn) for buffers to come back
    /// before reading into fresh memory.
    private var awaitingBuffers = false
    /// The receive was re-armed after such a wait and has received nothing since: a second
    /// ENOBUFS in a row reads into fresh memory at once (other receives took the buffers).
    private var rearmedAfterWait = false

    private enum OpenState {
        case open
        case notOpened
        case opening
        case failed(Errno)
    }

    private enum Tag {
        static let receive: UInt64 = 1
        static let fallbackRead: UInt64 = 2
        static let poll: UInt64 = 3
        static let open: UInt64 = 4
        static let close: UInt64 = 5
        static let ignore: UInt64 = 6
    }

    private enum _Blocked {
        case operation(_Operation)
        case barrier(_Barrier)
    }

    init(ring: RingLoop, fd: CInt, type: _FileType, path: _PathToOpen?) {
        self.ring = ring
        self.core = ring.core
        self.fd = fd
        self.type = type
        self.path = path
        self.openState = path == nil ? .open : .notOpened
    }

    // MARK: Channels

    func attach(_ channel: _ChannelState) {
        self.core.assertOnRingThread()
        self.channels.append(channel)
        if !self.finished { self.channelRing.openEntries[ObjectIdentifier(self)] = self }
    }

    /// The ring is exiting with this entry's channels open (``_RingCore``): set once it has
    /// stopped them.
    private(set) var closingForRingExit = false

    /// Closes and stops every channel of this entry, as the ring exits: their operations end
    /// with ECANCELED, then the entry finishes as after any last close (the descriptor, when
    /// opened from a path, is closed; the cleanup handlers run).
    func closeForRingExit() {
        self.core.assertOnRingThread()
        self.closingForRingExit = true
        for channel in self.channels { channel.closeForRingExit() }
    }

    /// An error every new operation ends with at once: EBADF poisoning, a failed open (R28).
    var stickyError: Errno? {
        self.core.assertOnRingThread()
        if let poison = self.poison { return poison }
        if case .failed(let error) = self.openState { return error }
        return nil
    }

    func channelDone(_ channel: _ChannelState) {
        self.core.assertOnRingThread()
        self.cleanups.append((channel.cleanupQueue, channel.cleanupHandler))
        if let index = self.channels.firstIndex(where: { $0 === channel }) {
            self.channels.remove(at: index)
        }
        if _DescriptorRegistry.detach(self) {
            self.noLiveChannels = true
        }
        self.finishIfIdle()
    }

    /// When no channel is left and nothing is in flight: closes a path channel's descriptor,
    /// then runs every cleanup handler (R23, R29).
    private func finishIfIdle() {
        guard self.noLiveChannels, self.unretired == 0, !self.finished else { return }
        if self.receive != nil {
            self.cancelReceive()
            return  // the receive's final completion calls back here
        }
        if case .opening = self.openState { return }
        self.finished = true
        self.channelRing.openEntries[ObjectIdentifier(self)] = nil
        self.awaitingBuffers = false
        if self.path != nil, self.fd >= 0 {
            let fd = self.fd
            self.fd = -1
            self.core.submit(.close(fd: fd), target: self, context: Tag.close)
        } else {
            if self.fd >= 0 { self.core.releaseDescriptor(self.fd) }  // the owner closes it next
            self.runCleanups()
        }
    }

    private func runCleanups() {
        for cleanup in self.cleanups {
            let handler = cleanup.handler
            self.core.deliver(on: cleanup.queue) { handler(nil) }
        }
        self.cleanups.removeAll()
    }

    /// Lets go of the channels and queued operations of an entry whose ring thread has
    /// finished. Its channels can no longer be cleaned up there, and they, their operations
    /// and the entry hold each other: once the registry drops the entry (its number names a
    /// new descriptor), this breaks the cycle. Called by the registry, off the ring, after the
    /// ring thread's last access (``_RingCore/hasFinished``).
    func ringFinished() {
        precondition(self.core.hasFinished, "RingIO: an entry let go of while its ring runs")
        self.channels.removeAll()
        self.blocked.removeAll()
        self.lanes = [_FIFO(), _FIFO(), _FIFO()]
        self.laneHeads = [nil, nil, nil]
        self.barrier = nil
        self.openWaiters.removeAll()
    }

    // MARK: Admitting and ordering operations

    func enqueue(_ operation: _Operation) {
        self.core.assertOnRingThread()
        self.unretired += 1
        operation.startIntervalTimer()
        if self.barrier != nil || !self.blocked.isEmpty {
            self.blocked.append(.operation(operation))
        } else {
            self.admit(operation)
        }
    }

    private func admit(_ operation: _Operation) {
        operation.admitted = true
        self.admittedUnfinished += 1
        guard let lane = operation.lane else {
            self.start(operation)
            return
        }
        if self.laneHeads[lane] == nil {
            self.laneHeads[lane] = operation
            self.start(operation)
        } else {
            self.lanes[lane].append(operation)
        }
    }

    private func start(_ operation: _Operation) {
        if let error = self.stickyError {
            operation.terminate(error)
            return
        }
        self.withDescriptor { error in
            if let error {
                operation.terminate(error)
            } else {
                operation.begin()
            }
        }
    }

    /// Called by an operation when its final handler call is on its way (before it retires).
    func operationFinished(_ operation: _Operation) {
        self.core.assertOnRingThread()
        if operation.admitted {
            self.admittedUnfinished -= 1
            if let lane = operation.lane {
                if self.laneHeads[lane] === operation {
                    self.laneHeads[lane] = nil
                    if lane == _Operation.readLane && self.type.isStreamLike {
                        self.readHeadFinished()
                    }
                    if let next = self.lanes[lane].popFirst() {
                        self.laneHeads[lane] = next
                        self.start(next)
                    }
                } else if self.lanes[lane].first === operation {
                    _ = self.lanes[lane].popFirst()  // a write that rode the head's syscall
                } else {
                    _ = self.lanes[lane].removeAll(where: { $0 === operation })
                }
            }
        } else {
            self.blocked.removeAll { item in
                if case .operation(let blocked) = item { return blocked === operation }
                return false
            }
        }
        if self.admittedUnfinished == 0, let barrier = self.barrier, !barrier.running {
            self.run(barrier)
        }
    }

    /// Called by an operation when it is finished and no syscall of its is in flight.
    func operationRetired() {
        self.core.assertOnRingThread()
        self.unretired -= 1
        self.finishIfIdle()
    }

    // MARK: Gathered writes

    /// The writes waiting behind the head of the write lane (stream-like descriptors), which
    /// may join the head's syscall.
    var waitingWriteCount: Int {
        self.core.assertOnRingThread()
        return self.lanes[_Operation.writeLane].count
    }

    /// The waiting write `index` places behind the head of the write lane (0: next); `nil`
    /// for another kind of operation there (a file send).
    func waitingWrite(at index: Int) -> _WriteOperation? {
        self.core.assertOnRingThread()
        return self.lanes[_Operation.writeLane][index] as? _WriteOperation
    }

    /// The write whose syscall the waiting writes may have joined.
    var writeLaneHead: _WriteOperation? {
        self.core.assertOnRingThread()
        return self.laneHeads[_Operation.writeLane] as? _WriteOperation
    }

    // MARK: Barriers

    func enqueueBarrier(_ work: @escaping @Sendable () -> Void, queue: any IOQueue) {
        self.core.assertOnRingThread()
        let barrier = _Barrier(work: work, queue: queue)
        self.unretired += 1
        if self.barrier != nil || !self.blocked.isEmpty {
            self.blocked.append(.barrier(barrier))
        } else {
            self.install(barrier)
        }
    }

    private func install(_ barrier: _Barrier) {
        self.barrier = barrier
        if self.admittedUnfinished == 0 { self.run(barrier) }
    }

    private func run(_ barrier: _Barrier) {
        barrier.running = true
        // Inside a barrier, a path channel's descriptor is open (R57).
        self.withDescriptor { _ in
            let work = barrier.work
            let ring = self.ring
            self.core.deliver(on: barrier.queue) {
                work()
                if ring.isCurrentThread {
                    self.barrierDone()
                } else {
                    ring.enqueue { self.barrierDone() }
                }
            }
        }
    }

    private func barrierDone() {
        self.core.assertOnRingThread()
        self.barrier = nil
        self.unretired -= 1
        while self.barrier == nil, !self.blocked.isEmpty {
            switch self.blocked.removeFirst() {
            case .operation(let operation): self.admit(operation)
            case .barrier(let barrier): self.install(barrier)
            }
        }
        self.finishIfIdle()
    }

    // MARK: EBADF

    /// Ends every operation of every channel on the descriptor with `error`; later ones end
    /// with it at once (R65).
    func poison(_ error: Errno) {
        self.core.assertOnRingThread()
        guard self.poison == nil else { return }
        self.poison = error
        for channel in self.channels {
            for operation in channel.operations { operation.terminate(error) }
        }
    }

    // MARK: Lazy open

    /// Calls `body` with `nil` once the descriptor is open, or with the open's error.
    @inline(__always)
    func withDescriptor(_ body: @escaping (Errno?) -> Void) {
        switch self.openState {
        case .open:
            body(nil)
        case .failed(let error):
            body(error)
        case .opening, .notOpened:
            self.waitForOpen(body)
        }
    }

    /// A path channel's descriptor is not open yet: `body` waits for the open, which starts
    /// now (or when the ring's open-path budget allows) if it has not.
    @inline(never)
    private func waitForOpen(_ body: @escaping (Errno?) -> Void) {
        self.openWaiters.append({ [unowned self] in
            if case .failed(let error) = self.openState { body(error) } else { body(nil) }
        })
        guard case .notOpened = self.openState else { return }
        self.openState = .opening
        if self.channelRing.openPaths < _ChannelLimits.openPathsPerRing {
            self.submitOpen()
        } else {
            self.channelRing.openQueue.append(self)
        }
    }

    private func submitOpen() {
        self.channelRing.openPaths += 1
        let path = self.path!
        self.core.submit(
            .openat(directory: AT_FDCWD, path: path.cString, flags: path.flags, mode: path.permissions),
            target: self,
            context: Tag.open
        )
    }

    private func opened(result: Int32) {
        if result >= 0 {
            self.fd = result
            self.openState = .open
            // Only where the channel is not closed: a close on another thread stores
            // `closedDescriptor` first, and the exchange then leaves it (a check of
            // `closeRequested` before a store would race with a close between the two).
            for channel in self.channels {
                _ = channel.descriptor.compareExchange(expected: -1, desired: result, ordering: .acquiringAndReleasing)
            }
        } else {
            self.openState = .failed(Errno(rawValue: -result))
            self.releaseOpenBudget()
        }
        let waiters = self.openWaiters
        self.openWaiters.removeAll()
        for waiter in waiters { waiter() }
        self.finishIfIdle()
    }

    private func releaseOpenBudget() {
        self.channelRing.openPaths -= 1
        if !self.channelRing.openQueue.isEmpty {
            self.channelRing.openQueue.removeFirst().submitOpen()
        }
    }

    // MARK: The receive for stream reads

    /// The read at the head of the read lane, when it reads a stream.
    private var readHead: _StreamReadOperation? {
        self.laneHeads[_Operation.readLane] as? _StreamReadOperation
    }

    /// Moves up to `maximum` bytes of what was received and not yet taken to the caller.
    func takeReceived(upTo maximum: Int) -> ByteRope {
        self.core.assertOnRingThread()
        if self.carry.count <= maximum {
            // Moved out, not copied: no retain and release of the regions' owners.
            return exchange(&self.carry, with: ByteRope())
        }
        let taken = self.carry.subrange(0..<maximum)
        self.carry = self.carry.subrange(maximum...)
        return taken
    }

    var hasReceived: Bool {
        self.core.assertOnRingThread()
        return !self.carry.isEmpty
    }

    /// Whether the descriptor was opened with O_APPEND (writes go to the end whatever the
    /// offset). Asked once, after the open: the flags must not change under a channel (R24).
    /// When they cannot be read (the descriptor was closed under the channel), `false`: the
    /// write itself then fails with the descriptor's error.
    private(set) lazy var appends: Bool = {
        self.core.assertOnRingThread()
        guard let flags = try? _POSIX.statusFlags(of: self.fd) else { return false }
        return flags & O_APPEND != 0
    }()

    /// Whether a receive is in flight for `read`, the head of the read lane.
    func isReceiving(for read: _StreamReadOperation) -> Bool {
        self.core.assertOnRingThread()
        return self.receive != nil && self.readHead === read
    }

    /// Arms a receive for the head read if it wants data and none is armed.
    func receiveWanted() {
        self.core.assertOnRingThread()
        guard self.receive == nil, !self.awaitingBuffers, let head = self.readHead, head.wantsData else { return }
        let pool = self.core.providedBuffers
        let remaining = head.remaining
        let request: RingRequest
        if head.untilWouldBlock {
            let noWait = head.received > 0
            let length = min(remaining, pool.bufferSize)
            request =
                self.type == .socket
                ? .receiveSelect(fd: self.fd, group: pool.group, length: length, noWait: noWait)
                : .readSelect(fd: self.fd, group: pool.group, length: length, noWait: noWait)
            self.receiveIsMultishot = false
        } else if self.type == .socket && remaining > 4 * pool.bufferSize && !self.multishotUnsupported {
            // Multishot on sockets only: on Linux 6.18 a multishot read of a FIFO whose reader
            // was opened before its writer never reports the writer's close (EOF), where
            // single reads do; pipes and terminals take one read per buffer.
            request = .receiveMultishot(fd: self.fd, group: pool.group)
            self.receiveIsMultishot = true
        } else {
            let length = min(remaining, pool.bufferSize)
            request =
                self.type == .socket
                ? .receiveSelect(fd: self.fd, group: pool.group, length: length, noWait: false)
                : .readSelect(fd: self.fd, group: pool.group, length: length, noWait: false)
            self.receiveIsMultishot = false
        }
        self.receiveCancelled = false
        self.receive = self.core.submit(request, target: self, context: Tag.receive)
    }

    /// The head read finished: the receive stays armed for the next read in the lane, and is
    /// cancelled when there is none (bytes still arriving go to `carry`).
    private func readHeadFinished() {
        if self.lanes[_Operation.readLane].isEmpty { self.cancelReceive() }
    }

    /// Cancels the armed receive (the head read paused, the lane emptied, the entry is
    /// finishing); bytes still arriving wait in `carry`.
    func cancelReceive() {
        self.core.assertOnRingThread()
        guard let receive = self.receive, !self.receiveCancelled else { return }
        self.receiveCancelled = true
        self.core.submit(.cancel(userData: receive), target: self, context: Tag.ignore)
    }

    private func received(_ data: ByteRope) {
        self.carry.append(data)
        self.readHead?.takeReceivedBytes()
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.assertOnRingThread()
        switch context {
        case Tag.receive:
            if !flags.hasMore { self.receive = nil }
            if result > 0 {
                guard let id = flags.bufferID else {
                    preconditionFailure("RingIO: a buffer-select receive completed without a buffer")
                }
                self.rearmedAfterWait = false
                self.received(self.core.providedBuffers.lend(id, length: Int(result)))
            } else {
                self.receiveEnded(result: result)
                if self.receive != nil { return }  // a poll or a fallback read is armed
            }
            if self.receive == nil { self.receiveWanted() }
        case Tag.fallbackRead:
            self.receive = nil
            let memory = self.fallbackMemory!
            self.fallbackMemory = nil
            if result > 0 {
                self.received(memory.rope(count: Int(result)))
            } else {
                self.receiveEnded(result: result)
                if self.receive != nil { return }
            }
            self.receiveWanted()
        case Tag.poll:
            self.receive = nil
            if result < 0 && (result != -ECANCELED || !self.receiveCancelled) {
                // Cancelled by someone else than us (the ring shutting down) is the end, too.
                self.readHead?.receiveFailed(Errno(rawValue: -result))
            }
            self.receiveWanted()
        case Tag.open:
            self.opened(result: result)
            return
        case Tag.close:
            self.releaseOpenBudget()
            self.runCleanups()
            return
        default:
            break
        }
        if self.receive == nil, let head = self.readHead, head.stopping != nil {
            head.receiveEndedWhileStopping()
        }
        if self.receive == nil { self.finishIfIdle() }
    }

    /// One read into fresh memory, when the provided buffers stay exhausted; multishot
    /// resumes after it.
    private func readIntoFreshMemory() {
        guard self.receive == nil, let head = self.readHead, head.wantsData else {
            self.finishIfIdle()
            return
        }
        let memory = _ReadMemory(size: _ChannelLimits.fallbackReceiveSize)
        self.fallbackMemory = memory
        self.core.counters.fallbackReceives.add(1, ordering: .relaxed)
        self.receive = self.core.submit(
            .read(fd: self.fd, buffer: memory.buffer, offset: -1),
            target: self,
            context: Tag.fallbackRead
        )
    }

    /// A receive completed without data.
    private func receiveEnded(result: Int32) {
        let error = -result
        switch error {
        case 0:
            self.readHead?.receivedEndOfFile()
        case ECANCELED:
            // Ours (the read lane emptied): nothing to report. Anyone else's (the ring shutting
            // down) ends the read — re-arming would fight the cancellation.
            if !self.receiveCancelled { self.readHead?.receiveFailed(.canceled) }
        case ENOBUFS:
            // Every provided buffer is held by ropes. Those released in this turn (writes that
            // completed, handlers that returned) go back to the kernel at its end. At the start
            // of the next turn: receive into them if any came back, else (or if this is the
            // second ENOBUFS in a row) read into fresh memory — a wait of one turn, never a
            // stall, no timer, and no loss either way.
            guard self.readHead != nil, self.readHead?.stopping == nil, !self.awaitingBuffers else { return }
            if self.rearmedAfterWait {
                self.rearmedAfterWait = false
                self.readIntoFreshMemory()
                return
            }
            self.awaitingBuffers = true
            self.core.enqueue { [self] in
                guard self.awaitingBuffers else { return }
                self.awaitingBuffers = false
                let pool = self.core.providedBuffers
                if pool.buffersOnLoan < pool.bufferCount {
                    self.rearmedAfterWait = true
                    self.receiveWanted()
                    if self.receive == nil { self.finishIfIdle() }
                } else {
                    self.readIntoFreshMemory()
                }
            }
        case EAGAIN:
            guard let head = self.readHead, head.stopping == nil else { return }
            if head.untilWouldBlock && head.received > 0 {
                head.wouldBlock()
            } else {
                self.receive = self.core.submit(
                    .poll(fd: self.fd, events: UInt32(POLLIN)),
                    target: self,
                    context: Tag.poll
                )
            }
        case EINTR:
            break
        case EINVAL where self.receiveIsMultishot, EOPNOTSUPP where self.receiveIsMultishot:
            self.multishotUnsupported = true
        default:
            let errno = Errno(rawValue: error)
            if errno == .badFileDescriptor {
                self.poison(errno)
            } else {
                self.readHead?.receiveFailed(errno)
            }
        }
    }
}

/// A barrier: its work and where it runs.
internal final class _Barrier {
    let work: @Sendable () -> Void
    let queue: any IOQueue
    var running = false

    init(work: @escaping @Sendable () -> Void, queue: any IOQueue) {
        self.work = work
        self.queue = queue
    }
}
