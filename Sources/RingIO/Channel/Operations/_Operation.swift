//===----------------------------------------------------------------------===//
// RingIO — channels: what every read and write operation shares.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One read or write of a channel: the target of its own ring operations (no closure per
/// syscall), the owner of its handler calls.
///
/// Life: created on the scheduling thread; everything after `snapshotPolicies` happens on the
/// entry's ring thread. It *finishes* when its final handler call is on its way (the lane
/// moves on), and *retires* when, in addition, no syscall of its is in flight (the entry may
/// then close a descriptor and run cleanup handlers).
internal class _Operation: RingOperationTarget {
    static let readLane = 0
    static let writeLane = 1
    static let fileLane = 2

    enum Tag {
        static let io: UInt64 = 0
        static let ignore: UInt64 = 1 << 63
    }

    // MARK: Immutable after init
    let channel: _ChannelState
    let entry: _DescriptorEntry
    /// The lane it waits in (`_Operation.readLane`…), or `nil` for random access (no lane).
    let lane: Int?

    // MARK: Set for each life (see "Reuse"), before the operation reaches the ring
    // @exclusivity(unchecked): written only where no one else refers to the operation
    // (`init`, `reuse`, `dropHandler`), so no access overlaps a write.
    @exclusivity(unchecked) private(set) var queue: any IOQueue
    @exclusivity(unchecked) private(set) var handler: @Sendable (Bool, ByteRope?, Errno?) -> Void
    @exclusivity(unchecked) private(set) var offset: Int64

    // MARK: Ring thread only
    var lowWater = 1
    var highWater = Int.max
    private var intervalNanoseconds: Int64 = 0
    var strictInterval = false
    /// A write's bytes: what it counts in its channel's queued write bytes from the moment
    /// the channel takes it until it finishes; 0 for every other operation.
    var writeLength = 0
    /// Handed to its channel on the ring (submitted or refused).
    var scheduled = false
    var admitted = false
    var started = false
    var isFinished = false
    private var retired = false
    /// Its final handler call has run (or its awaiting task was resumed with the end) on the
    /// ring thread, and no drain is running: together with `retired`, nothing of the ring
    /// refers to it any more (see "Reuse").
    private var finalCallRan = false
    private var inFlight = 0
    /// The armed tick, in the ring's timers (no syscall to arm or cancel).
    private var timer: _RingTimerToken?
    /// The armed tick's deadline, in monotonic nanoseconds.
    private var timerDeadline: Int64 = 0

    // MARK: Async (set by the scheduling thread before the operation reaches the ring)
    /// The task awaiting this operation, for the async API: its handler calls go there,
    /// from the ring thread in the turn they happen, instead of to `handler` on `queue`.
    var awaiting: _Awaiting?
    /// Read (reads only): the bytes of an `.collect` await so far.
    private var collected = ByteRope()

    // MARK: Any thread, atomic
    /// The awaiting task was cancelled (see `requestCancel`).
    private let cancelRequested = Atomic<Bool>(false)

    // MARK: Handler calls (any thread, see `deliver`)
    /// Whether its queue is its own ring, decided at its first delivery (`nil` before; an
    /// awaited operation never asks): it then goes on the ring's jobs directly, with no cast
    /// per delivery. Written on the ring thread once per life; read by the drains after.
    @exclusivity(unchecked) private var deliversOnRing: Bool?
    private let calls = _Lock(_HandlerCalls())
    /// The calls being run; touched only by the one running drain (`runDelivered`), on the
    /// handler queue. The `running` flag, set and cleared under `calls`' lock, admits one
    /// drainer at a time, and that lock orders one drainer's accesses before the next one's.
    // @exclusivity(unchecked): one drainer at a time, so accesses never overlap.
    @exclusivity(unchecked) private var draining: [_HandlerCall] = []

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        lane: Int?,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.channel = channel
        self.entry = entry
        self.queue = queue
        self.offset = offset
        self.lane = lane
        self.handler = handler
    }

    /// Whether `queue` is the ring `entry` lives on.
    private static func isRing(of entry: _DescriptorEntry, _ queue: any IOQueue) -> Bool {
        queue.asRing?.core === entry.core
    }

    // MARK: Reuse

    /// Starts a new life of an operation taken from its channel's pool: the per-life fields
    /// of `init`, and every variable of "Ring thread only" back to its initial value (keep
    /// the two lists in step); `awaiting`, `collected` and the handler calls are back to theirs
    /// once the final call ran. Ring thread; the pool hands out only operations no one else
    /// refers to (see ``_WriteOperationPool``).
    func reuse(
        queue: any IOQueue,
        offset: Int64,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.entry.core.assertOnRingThread()
        assert(self.retired && self.finalCallRan && self.inFlight == 0 && self.timer == nil)
        assert(self.awaiting == nil && self.collected.isEmpty)
        self.queue = queue
        self.offset = offset
        self.handler = handler
        self.deliversOnRing = nil
        self.lowWater = 1
        self.highWater = Int.max
        self.intervalNanoseconds = 0
        self.strictInterval = false
        self.scheduled = false
        self.admitted = false
        self.started = false
        self.isFinished = false
        self.retired = false
        self.finalCallRan = false
        self.timerDeadline = 0
        self.cancelRequested.store(false, ordering: .relaxed)
    }

    /// Called once the operation is retired and its final call has run: a pooled kind gives
    /// itself back to its channel here (after letting go of its data and handler). Ring
    /// thread.
    func recycle() {}

    /// Recycles the operation when both its retirement and its final call are behind it.
    private func recycleIfDone() {
        guard self.retired && self.finalCallRan else { return }
        self.recycle()
    }

    /// Lets go of the handler: an operation waiting in its channel's pool keeps nothing of
    /// the caller's alive. Ring thread, from `recycle`.
    final func dropHandler() {
        self.handler = Self.noHandler
    }

    /// The lane of an operation on `entry` for a channel of `kind`.
    static func lane(kind: IOChannel.Kind, entry: _DescriptorEntry, isRead: Bool) -> Int? {
        if entry.type.isStreamLike {
            if kind == .stream || entry.type != .terminal {
                return isRead ? Self.readLane : Self.writeLane
            }
            return nil
        }
        return kind == .stream ? Self.fileLane : nil
    }

    /// Takes the channel's water marks and interval as they are now (R46).
    func snapshotPolicies(of channel: _ChannelState) {
        self.entry.core.assertOnRingThread()
        self.lowWater = channel.lowWater
        self.highWater = channel.highWater
        self.intervalNanoseconds = channel.intervalNanoseconds
        self.strictInterval = channel.strictInterval
    }

    // MARK: To override

    /// Completes without I/O (a zero-length read, an empty write).
    var completesAtOnce: Bool { false }
    func completeAtOnce() {}
    /// Starts the I/O: the operation is at the head of its lane and the descriptor is open.
    func begin() {}
    /// A completion of one of its syscalls (tag `Tag.io` and up).
    func completed(result: Int32, flags: CompletionFlags, context: UInt64) {}
    /// An interval tick.
    func tick() {}
    /// The final call for an operation refused or ended before or during its I/O.
    func finalCall(error: Errno) {}

    /// Ends the operation with `error` (stop, EBADF, a failed open): pending bytes first.
    /// Subclasses with a syscall that must return first override this.
    func terminate(_ error: Errno) {
        guard !self.isFinished else { return }
        self.finalCall(error: error)
        self.finish()
    }

    // MARK: Ring operations

    /// Submits `request` with this operation as its target.
    @discardableResult
    final func submit(_ request: RingRequest, tag: UInt64 = Tag.io) -> UInt64 {
        self.entry.core.assertOnRingThread()
        self.inFlight += 1
        return self.entry.core.submit(request, target: self, context: tag)
    }

    /// Submits two requests as a chain (`_RingCore.submitLinked`), with this operation as
    /// the target of both.
    final func submitLinked(
        _ first: RingRequest,
        tag firstTag: UInt64,
        then second: RingRequest,
        tag secondTag: UInt64
    ) -> (first: UInt64, second: UInt64) {
        self.entry.core.assertOnRingThread()
        self.inFlight += 2
        return self.entry.core.submitLinked(first, context: firstTag, then: second, context: secondTag, target: self)
    }

    final func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        if !flags.hasMore { self.inFlight -= 1 }
        if context != Tag.ignore {
            self.completed(result: result, flags: flags, context: context)
        }
        self.retireIfIdle()
    }

    /// Starts the interval timer, if the channel has an interval (R50).
    final func startIntervalTimer() {
        self.entry.core.assertOnRingThread()
        guard self.intervalNanoseconds > 0 && self.intervalNanoseconds < Int64.max / 2 else { return }
        self.armIntervalTimer(after: _Clock.nanoseconds(realtime: false))
    }

    /// Arms the next tick, one interval after `previous` (monotonic nanoseconds) — or after now,
    /// when the ring fell behind. A timer of the ring's (``_RingCore/armTimer(at:target:context:)``):
    /// arming and cancelling it costs no syscall, and it never keeps the operation from retiring.
    private func armIntervalTimer(after previous: Int64) {
        var deadline = previous &+ self.intervalNanoseconds
        let now = _Clock.nanoseconds(realtime: false)
        if deadline <= now { deadline = now &+ self.intervalNanoseconds }
        self.timerDeadline = deadline
        self.timer = self.entry.core.armTimer(at: deadline, target: self)
    }

    /// An interval tick is due (the ring's timers, on the ring thread): ticks, and arms the next.
    final func ringTimerFired(context: UInt64) {
        self.entry.core.assertOnRingThread()
        self.timer = nil
        guard !self.isFinished else { return }
        self.tick()
        if !self.isFinished { self.armIntervalTimer(after: self.timerDeadline) }
    }

    // MARK: Handler calls

    /// The handler of operations whose calls go to an awaiting task: never called.
    static let noHandler: @Sendable (Bool, ByteRope?, Errno?) -> Void = { _, _, _ in }

    /// Sends one handler call to the operation's queue, after the calls before it (R32, D7).
    ///
    /// The call's arguments wait in the operation's call list; the operation itself is the job
    /// that runs them on the queue in order (``_RingRunnable``: no closure). A drain already
    /// scheduled or running picks up calls added meanwhile, so a busy operation (a long read)
    /// allocates nothing per call and its calls never overlap, even on a concurrent
    /// `DispatchQueue`. A read's bytes that arrive while its previous call still waits join
    /// that call (up to the high water mark): one handler call per batch of completions.
    final func deliver(done: Bool, data: consuming ByteRope?, error: Errno?) {
        self.entry.core.assertOnRingThread()
        if let awaiting = self.awaiting {
            self.resume(awaiting, done: done, data: data, error: error)
            return
        }
        if self.countsHeldBytes, let count = data?.count, count > 0 {
            self.heldBytes.add(count, ordering: .relaxed)
        }
        // Moved into the call, then into the list: no copy of the rope on the way.
        var call: _HandlerCall? = _HandlerCall(done: done, data: data, error: error)
        let mergeLimit = self.mergesDeliveries ? self.highWater : 0
        let mustSchedule = self.calls.withLock { calls in
            calls.append(call.take()!, mergingUpTo: mergeLimit)
            if calls.running { return false }
            calls.running = true
            return true
        }
        // The delivered job holds the operation strongly until it has run.
        if mustSchedule {
            let onRing: Bool
            if let known = self.deliversOnRing {
                onRing = known
            } else {
                // Written once, before the first drain is scheduled (which orders it before
                // the drains' reads, on any queue).
                onRing = Self.isRing(of: self.entry, self.queue)
                self.deliversOnRing = onRing
            }
            if onRing {
                self.entry.core.deliverOnRing(self)
            } else {
                self.entry.core.deliver(self, on: self.queue)
            }
        }
    }

    /// A handler call of an async operation, on the ring thread: the awaiting task gets it at
    /// once (a continuation resumed here enqueues the task on its executor — the ring's own,
    /// with no syscall, when the task runs on this ring).
    private func resume(_ awaiting: _Awaiting, done: Bool, data: ByteRope?, error: Errno?) {
        switch awaiting {
        case .stream(let stream):
            if self.countsHeldBytes, let data, !data.isEmpty {
                self.heldBytes.add(data.count, ordering: .relaxed)
            }
            if done { self.awaiting = nil }  // the stream no longer needs the operation
            stream.operationDelivered(done: done, data: data, error: error, mergeLimit: self.highWater)
        case .write(let continuation):
            guard done else { return }  // progress calls: a task waits for the end
            self.awaiting = nil
            continuation.resume(returning: error.map { .failure($0) } ?? .success(ByteRope()))
            self.finalCallRan = true
            self.recycleIfDone()
        case .collect(let continuation):
            if let data, !data.isEmpty { self.collected.append(data) }
            guard done else { return }
            self.awaiting = nil
            let collected = self.collected
            self.collected = ByteRope()
            continuation.resume(returning: error.map { .failure($0) } ?? .success(collected))
        }
    }

    /// The awaiting task was cancelled: the operation stops (ECANCELED, after the bytes it read),
    /// on the ring thread — or, when it has not reached the ring yet, as soon as it does.
    /// Any thread; once.
    final func requestCancel() {
        guard !self.cancelRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.channel.perform { _ in
            if self.scheduled { self.terminate(.canceled) }
        }
    }

    /// Whether the awaiting task was cancelled before the operation reached the ring.
    final var cancelledBeforeScheduling: Bool {
        self.cancelRequested.load(ordering: .acquiring)
    }

    /// The ring's thread exited before the operation reached it: its one final call, with
    /// ECANCELED, from the calling thread. An awaiting task resumes; a handler runs if its
    /// queue is a DispatchQueue (a ring that is gone runs nothing).
    final func ringExited() {
        switch self.awaiting {
        case .write(let continuation), .collect(let continuation):
            self.awaiting = nil
            continuation.resume(returning: .failure(.canceled))
        case .stream(let stream):
            self.awaiting = nil
            stream.operationDelivered(done: true, data: nil, error: .canceled, mergeLimit: 0)
        case nil:
            let handler = self.handler
            let remaining = self.unsentData
            self.queue.enqueue { handler(true, remaining, .canceled) }
        }
    }

    /// What a final call that ends the operation before it started carries: a write's data,
    /// `nil` for a read.
    var unsentData: ByteRope? { nil }

    /// Whether a data call may join the previous one while it waits (stream and file reads:
    /// any split of the bytes is a valid delivery; never a write's progress calls, R38).
    var mergesDeliveries: Bool { false }

    /// Runs the queued handler calls until none is left. On the handler queue; one drainer at
    /// a time (the `running` flag), so `draining` needs no lock of its own.
    final func runDelivered() {
        var ranFinal = false
        // Calls are swapped into `call` and their ropes moved out to the handler: no copy.
        var call = _HandlerCall(done: false, data: nil, error: nil)
        while true {
            let took = self.calls.withLock { calls in
                calls.take(into: &call, restInto: &self.draining)
            }
            guard took else { break }
            ranFinal = self.run(&call) || ranFinal
            for index in self.draining.indices {
                ranFinal = self.run(&self.draining[index]) || ranFinal
            }
            self.draining.removeAll(keepingCapacity: true)
        }
        // On the ring thread (its queue is its ring), the end of its life on the ring side:
        // it may go back to its channel's pool. Elsewhere nothing is touched.
        if ranFinal && self.deliversOnRing == true {
            self.finalCallRan = true
            self.recycleIfDone()
        }
    }

    /// Runs one handler call; returns whether it was the final one.
    @inline(__always)
    private func run(_ call: inout _HandlerCall) -> Bool {
        let count = call.rope.count
        // The rope moves from the call into the handler's argument (the call keeps an empty
        // one): no copy.
        let rope = exchange(&call.rope, with: ByteRope())
        self.handler(call.done, call.hasData ? rope : nil, call.error)
        if self.countsHeldBytes, count > 0 {
            self.release(count)
        }
        return call.done
    }

    // MARK: Back-pressure

    /// Whether delivered bytes count as held until released (stream reads). They are released
    /// when the handler returns, or, for `reads()`, when the iteration takes them.
    var countsHeldBytes: Bool { false }
    /// Bytes handed to handler calls (queued or running) or to a `reads()` stream and not yet
    /// released.
    let heldBytes = Atomic<Int>(0)

    /// Releases `count` delivered bytes. Any thread. When that brings the held bytes under
    /// the limit, tells the ring (which resumes a paused receive).
    final func release(_ count: Int) {
        let now = self.heldBytes.subtract(count, ordering: .relaxed).newValue
        if now < _ChannelLimits.heldBytesLimit && now + count >= _ChannelLimits.heldBytesLimit {
            self.channel.perform { _ in self.heldBytesDropped() }
        }
    }

    /// The held bytes fell under the limit. Ring thread.
    func heldBytesDropped() {}

    /// Refuses an operation of a closed or failed channel: one final call with `error`.
    final func refuse(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        self.isFinished = true
        self.retired = true
        self.finalCall(error: error)
    }

    /// After the final call: tells the entry and the channel, cancels the timer.
    func finish() {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        self.isFinished = true
        if let timer = self.timer {
            self.entry.core.cancelTimer(timer)
            self.timer = nil
        }
        self.entry.operationFinished(self)
        self.channel.operationFinished(self)
        self.retireIfIdle()
    }

    // Inlined by hand: once its file was split, the optimizer stopped (+45 instructions per
    // echo round trip).
    @inline(__always)
    private func retireIfIdle() {
        guard self.isFinished, !self.retired, self.inFlight == 0 else { return }
        self.retired = true
        self.entry.operationRetired()
        self.recycleIfDone()
    }
}

// @unchecked: each stored property has one owner, marked by the MARK above it —
// - "Immutable after init": read anywhere.
// - "Set for each life": written by `init`, or by `reuse` on the ring thread when the
//   channel's pool hands the operation out (it then has no other holder:
//   `_WriteOperationPool`), and by `dropHandler` on the ring thread when it goes back (its
//   final call has run there and it is retired: no other thread touches it any more); read
//   anywhere in between.
// - "Ring thread only": touched only on the entry's ring thread (the methods that touch them
//   check so in debug builds); other threads only carry the reference there.
// - `awaiting`, `collected`: set by the scheduling thread before the operation is handed to the
//   ring (the inbox orders that), then touched only on the ring thread — or, when the ring exited
//   before the operation reached it, by `ringExited` on the thread that took it back out of the
//   inbox (the ring thread never saw it).
// - `cancelRequested`, `heldBytes`: atomics.
// - `calls`: a lock (`_Lock`); `draining`: the one drainer's, on the handler queue (see `runDelivered`).
extension _Operation: @unchecked Sendable {}

extension _Operation: _RingRunnable {}

extension _Operation: _RingScheduled {
    /// Scheduled from another thread: admitted (or refused) on the ring thread.
    func runScheduled() {
        self.channel.submitOnRingThread(self)
    }
}

extension _Operation: _RingTimerTarget {}

/// Where an async operation's handler calls go (see `_Operation.awaiting`).
internal enum _Awaiting {
    /// A write: the task resumes with its outcome at the final call.
    case write(UnsafeContinuation<Result<ByteRope, Errno>, Never>)
    /// A read to the end (`read(length:)`): the bytes are collected and the task resumes with
    /// them (or the error) at the final call.
    case collect(UnsafeContinuation<Result<ByteRope, Errno>, Never>)
    /// `reads()`: every call goes to the sequence's stream.
    case stream(_AsyncReadStream)
}
