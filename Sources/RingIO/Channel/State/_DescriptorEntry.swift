//===----------------------------------------------------------------------===//
// RingIO — channels: the state shared by every channel on one descriptor.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

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
    lazy var channelRing = self.core.local(_ChannelRing.self)

    // MARK: Ring thread only
    /// The descriptor; -1 while a path channel has not opened it.
    var fd: CInt
    var openState: OpenState
    var openWaiters: [() -> Void] = []
    /// EBADF: every operation on the descriptor ends with it (R65).
    var poison: Errno?
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var channels = _InlineList<_ChannelState>()
    /// The channels done, whose cleanup handlers run once the entry finishes.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var cleanups = _InlineList<_ChannelState>()
    /// Where the entry is in its ring's ``_ChannelRing/openEntries``; `nil` when it is not
    /// there (not attached yet, or finished).
    var openIndex: Int?
    /// Operations and barriers not yet retired (finished with no syscall in flight).
    var unretired = 0
    var noLiveChannels = false
    var finished = false

    // Ordering
    var admittedUnfinished = 0
    var barrier: _Barrier?
    @exclusivity(unchecked) var blocked: [_Blocked] = []
    @exclusivity(unchecked) var lanes = _OperationLanes()

    // The receive for stream reads
    /// Bytes received and not yet taken by a read: they belong to the next read (never lost).
    @exclusivity(unchecked) var carry = ByteRope()
    /// The armed receive (or poll, or fallback read); `nil` when none is in flight.
    var receive: UInt64?
    var receiveIsMultishot = false
    var receiveCancelled = false
    var multishotUnsupported = false
    var fallbackMemory: _ReadMemory?
    /// The receive ended with ENOBUFS and waits (one ring turn) for buffers to come back
    /// before reading into fresh memory.
    var awaitingBuffers = false
    /// The receive was re-armed after such a wait and has received nothing since: a second
    /// ENOBUFS in a row reads into fresh memory at once (other receives took the buffers).
    var rearmedAfterWait = false

    enum OpenState {
        case open
        case notOpened
        case opening
        case failed(Errno)
    }

    enum Tag {
        static let receive: UInt64 = 1
        static let fallbackRead: UInt64 = 2
        static let poll: UInt64 = 3
        static let open: UInt64 = 4
        static let close: UInt64 = 5
        static let ignore: UInt64 = 6
    }

    enum _Blocked {
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

    /// Whether the descriptor was opened with O_APPEND (writes go to the end whatever the
    /// offset). Asked once, after the open: the descriptor stays unchanged under a channel (R25).
    /// When they cannot be read (the descriptor was closed under the channel), `false`: the
    /// write itself then fails with the descriptor's error.
    private(set) lazy var appends: Bool = {
        self.core.assertOnRingThread()
        guard let flags = try? _POSIX.statusFlags(of: self.fd) else { return false }
        return flags & O_APPEND != 0
    }()

    // MARK: Channels

    func attach(_ channel: _ChannelState) {
        self.core.assertOnRingThread()
        self.channels.append(channel)
        if !self.finished && self.openIndex == nil { self.channelRing.opened(self) }
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
        self.cleanups.append(channel)
        self.channels.remove(channel)
        if _DescriptorRegistry.detach(self) {
            self.noLiveChannels = true
        }
        self.finishIfIdle()
    }

    /// When no channel is left and nothing is in flight: closes a path channel's descriptor,
    /// then runs every cleanup handler (R23, R29).
    func finishIfIdle() {
        guard self.noLiveChannels, self.unretired == 0, !self.finished else { return }
        if self.receive != nil {
            self.cancelReceive()
            return  // the receive's final completion calls back here
        }
        if case .opening = self.openState { return }
        self.finished = true
        if self.openIndex != nil { self.channelRing.finished(self) }
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

    func runCleanups() {
        // The channel runs its own cleanup where it is delivered: no closure to allocate.
        for channel in self.cleanups {
            self.core.deliver(channel, on: channel.cleanupQueue)
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
        self.lanes = _OperationLanes()
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

    func admit(_ operation: _Operation) {
        operation.admitted = true
        self.admittedUnfinished += 1
        guard let lane = operation.lane else {
            self.start(operation)
            return
        }
        if self.lanes[head: lane] == nil {
            self.lanes[head: lane] = operation
            self.start(operation)
        } else {
            self.lanes.withWaiting(lane) { $0.append(operation) }
        }
    }

    func start(_ operation: _Operation) {
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
                if self.lanes[head: lane] === operation {
                    self.lanes[head: lane] = nil
                    if lane == _Operation.readLane && self.type.isStreamLike {
                        self.readHeadFinished()
                    }
                    if let next = self.lanes.withWaiting(lane, { $0.popFirst() }) {
                        self.lanes[head: lane] = next
                        self.start(next)
                    }
                } else {
                    self.lanes.withWaiting(lane) { waiting in
                        if waiting.first === operation {
                            _ = waiting.popFirst()  // a write that rode the head's syscall
                        } else {
                            _ = waiting.removeAll(where: { $0 === operation })
                        }
                    }
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
        return self.lanes.withWaiting(_Operation.writeLane) { $0.count }
    }

    /// The waiting write `index` places behind the head of the write lane (0: next); `nil`
    /// for another kind of operation there (a file send).
    func waitingWrite(at index: Int) -> _WriteOperation? {
        self.core.assertOnRingThread()
        return self.lanes.withWaiting(_Operation.writeLane) { $0[index] } as? _WriteOperation
    }

    /// The write whose syscall the waiting writes may have joined.
    var writeLaneHead: _WriteOperation? {
        self.core.assertOnRingThread()
        return self.lanes[head: _Operation.writeLane] as? _WriteOperation
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

    func install(_ barrier: _Barrier) {
        self.barrier = barrier
        if self.admittedUnfinished == 0 { self.run(barrier) }
    }

    func run(_ barrier: _Barrier) {
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

    func barrierDone() {
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
}
