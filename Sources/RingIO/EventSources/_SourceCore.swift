//===----------------------------------------------------------------------===//
// RingIO — event sources: the state of one source, on its ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The state behind an ``IOSource``.
///
/// Confinement: properties under "ring thread only" are touched only on `ring`'s thread; public
/// calls reach it through `perform`, and the methods under "Ring thread" check the thread in
/// debug builds. The handlers are locked (set from any thread, read on the queue); the suspend
/// count, the cancel flag, the custom sources' pending value and the data of the current event
/// are atomics.
///
/// Delivery: one event handler call at a time. While a call is queued or running, or while the
/// source is suspended, events merge into `pending`; when the call returns, the queue tells the
/// ring, which delivers what merged meanwhile (one call) or, once cancelled, the cancel handler.
internal final class _SourceCore: RingOperationTarget, _RingTimerTarget, @unchecked Sendable {
    enum Kind {
        case timer(IOSource.Clock)
        case signal(CInt)
        case readable(CInt)
        case writable(CInt)
        case processExit(CInt)  // the pidfd, ours to close
        case add
        case or
    }

    struct Handlers {
        var event: (@Sendable () -> Void)?
        var cancel: (@Sendable () -> Void)?
        var registration: (@Sendable () -> Void)?
    }

    private enum Tag {
        static let timerFirst: UInt64 = 1
        /// A monotonic fire (the ring's timers; not a kernel tag).
        static let timerRepeat: UInt64 = 2
        static let poll: UInt64 = 3
        static let signalRead: UInt64 = 4
        static let ignore: UInt64 = 5
    }

    // MARK: Immutable after init
    let kind: Kind
    let queue: any IOQueue
    /// `nil` when no ring was given and `RingLoopGroup.shared` could not be set up (on either
    /// engine): the source then never fires; cancel still runs the cancel handler.
    let ring: RingLoop?

    // MARK: Any thread
    let handlers = _Lock(Handlers())
    let currentData = Atomic<UInt>(0)
    let cancelRequested = Atomic<Bool>(false)
    /// Suspensions not yet resumed; starts at 1 (created suspended).
    private let suspendCount = Atomic<Int>(1)
    /// Resumes under way: counted before `suspendCount` goes down and until the ring runs the
    /// resume. The source counts as suspended meanwhile, so the ring delivers nothing ahead of
    /// what the caller asked of it before resuming (a new schedule clears the fires pending).
    private let resumesUnderWay = Atomic<Int>(0)
    /// Custom sources: merged values not yet taken by the ring, and whether a take is queued.
    private let customPending = Atomic<UInt>(0)
    private let customScheduled = Atomic<Bool>(false)

    // MARK: Ring thread only
    private var registered = false
    private var cancelled = false
    private var cancelDelivered = false
    private var handlerRunning = false
    private var hasEvent = false
    private var pending: UInt = 0
    /// The armed timer, to cancel on reschedule or cancel.
    private var armedTimer: ArmedTimer?
    /// Its absolute deadline, in nanoseconds of its clock.
    private var timerDeadline: Int64 = 0
    /// The armed poll or signal read.
    private var armedOperation: UInt64?
    /// A process-exit source reports the exit once.
    private var exitReported = false
    private var inFlight = 0
    /// The times of wall-clock first fires' kernel timeouts, by schedule generation, each
    /// kept until its timeout completes: the kernel reads one when the turn's entries are
    /// submitted, which may come after a second schedule in the same turn replaced the first.
    private var timerSpecs: [UInt64: _KernelTimespec] = [:]
    /// The repeat interval in nanoseconds; `nil` for a one-shot timer.
    private var timerInterval: Int64?
    private var timerGeneration: UInt64 = 0
    private var signalSlot: _SignalRouter.Registration?
    private let signalBuffer = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
    private var pollArmed = false

    init(kind: Kind, queue: any IOQueue, ring: RingLoop?) {
        self.kind = kind
        self.queue = queue
        if let ring {
            self.ring = ring
        } else if let ring = queue as? RingLoop {
            self.ring = ring
        } else {
            self.ring = try? RingLoopGroup.shared.next()
        }
        self.signalBuffer.initialize(to: 0)
    }

    deinit {
        self.signalBuffer.deallocate()
        if case .processExit(let pidfd) = self.kind { _POSIX.close(pidfd) }
    }

    private var core: _RingCore? { self.ring?.core }

    /// Runs `body` on the ring thread: now when called there, else through the inbox.
    private func perform(_ body: @escaping @Sendable (_SourceCore) -> Void) {
        guard let ring = self.ring else { return }
        if ring.isCurrentThread {
            body(self)
        } else {
            ring.enqueue { body(self) }
        }
    }

    // MARK: Any thread

    func resume() {
        self.resumesUnderWay.add(1, ordering: .acquiringAndReleasing)
        let now = self.suspendCount.subtract(1, ordering: .acquiringAndReleasing).newValue
        precondition(now >= 0, "IOSource.resume(): resumed more often than suspended")
        guard now == 0, self.ring != nil else {
            self.resumesUnderWay.subtract(1, ordering: .acquiringAndReleasing)
            // No ring: nothing fires; a cancelled source still gets its cancel handler.
            if now == 0 && self.cancelRequested.load(ordering: .acquiring) { self.deliverCancelWithoutRing() }
            return
        }
        self.perform { source in
            source.resumesUnderWay.subtract(1, ordering: .acquiringAndReleasing)
            source.resumed()
        }
    }

    func suspend() {
        self.suspendCount.add(1, ordering: .acquiringAndReleasing)
    }

    func requestCancel() {
        guard !self.cancelRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard self.ring != nil else {
            if self.suspendCount.load(ordering: .acquiring) == 0 { self.deliverCancelWithoutRing() }
            return
        }
        self.perform { $0.cancelOnRing() }
    }

    private func deliverCancelWithoutRing() {
        let handler = self.handlers.withLock { handlers in
            let handler = handlers.cancel
            handlers = Handlers()
            return handler
        }
        if let handler { self.queue.enqueue(handler) }
    }

    func schedule(delay: Duration, interval: Duration?) {
        self.perform { $0.armTimer(delay: delay, interval: interval) }
    }

    func merge(_ value: UInt) {
        switch self.kind {
        case .add: self.customPending.wrappingAdd(value, ordering: .acquiringAndReleasing)
        case .or: self.customPending.bitwiseOr(value, ordering: .acquiringAndReleasing)
        default: preconditionFailure("IOSource: data merged into a source of another kind")
        }
        guard value != 0, !self.customScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.perform { $0.takeCustom() }
    }

    // MARK: Ring thread

    /// Checks, in debug builds, that the caller runs on the source's ring thread (there is one
    /// whenever ring-thread code runs at all: `perform` does nothing without a ring).
    @inline(__always)
    private func assertOnRingThread() {
        assert(self.ring?.core.isRingThread ?? false, "RingIO: source state touched off its ring thread")
    }

    private var isSuspended: Bool {
        self.suspendCount.load(ordering: .acquiring) > 0 || self.resumesUnderWay.load(ordering: .acquiring) > 0
    }

    private func resumed() {
        self.assertOnRingThread()
        if self.cancelled {
            self.finishCancelIfIdle()
            return
        }
        if !self.registered {
            self.registered = true
            let registration = self.handlers.withLock { $0.registration }
            if let registration {
                // Before any event: queued first, and events wait for it as for another call
                // (what `register` finds already merged included).
                self.handlerRunning = true
                self.core?.deliver(on: self.queue) {
                    registration()
                    self.handlerReturned()
                }
            }
            self.register()
            if registration != nil { return }
        }
        self.armReadinessIfNeeded()
        self.deliverIfReady()
    }

    /// Arms what the kind needs, on first resume.
    private func register() {
        self.assertOnRingThread()
        switch self.kind {
        case .timer:
            if let pending = self.pendingSchedule {
                self.pendingSchedule = nil
                self.armTimer(delay: pending.delay, interval: pending.interval)
            }
        case .signal(let signal):
            self.signalSlot = _SignalRouter.register(signal)
            // A process started with the signal blocked (the mask is inherited through exec,
            // and by every thread) would keep it pending forever: let this ring thread take
            // it, so the handler runs.
            _POSIX.changeSignalMask(SIG_UNBLOCK, signal)
            self.armSignalRead()
        case .readable, .writable, .processExit:
            break  // armed by armReadinessIfNeeded, whenever the source is ready for an event
        case .add, .or:
            self.takeCustom()
        }
    }

    // Timer

    private var pendingSchedule: (delay: Duration, interval: Duration?)?

    private func armTimer(delay: Duration, interval: Duration?) {
        self.assertOnRingThread()
        guard !self.cancelled else { return }
        guard self.registered else {
            self.pendingSchedule = (delay, interval)
            return
        }
        // A new schedule replaces the old one: cancel what is armed, ignore its completions.
        self.cancelArmedTimer()
        self.timerGeneration &+= 1
        self.pending = 0
        self.hasEvent = false
        self.timerInterval = interval.map(Self.nanoseconds)
        guard case .timer(let clock) = self.kind, self.core != nil else { return }
        let delayNanoseconds = Self.nanoseconds(delay)
        if clock == .wallClock {
            // The first fire follows the wall clock (a clock change moves it); the repetitions
            // are intervals, measured on the monotonic clock from that fire.
            let now = _Clock.nanoseconds(realtime: true)
            let (deadline, overflow) = now.addingReportingOverflow(delayNanoseconds)
            self.armTimer(at: overflow ? Int64.max : deadline, realtime: true)
        } else {
            let now = _Clock.nanoseconds(realtime: false)
            let (deadline, overflow) = now.addingReportingOverflow(delayNanoseconds)
            self.armTimer(at: overflow ? Int64.max : deadline, realtime: false)
        }
    }

    /// Where the armed timer is: a monotonic deadline in the ring's timers, or a wall-clock
    /// first fire's own kernel timeout.
    private enum ArmedTimer {
        case ring(_RingTimerToken)
        case kernel(UInt64)
    }

    /// Arms the timer for one fire at an absolute time. On the monotonic clock, a timer of the
    /// ring's (``_RingCore/armTimer(at:target:context:)``: no syscall to arm, re-arm or cancel),
    /// re-armed after each fire. A wall-clock first fire keeps a kernel timeout of its own
    /// (CLOCK_REALTIME, which follows clock changes; the ring's timers are monotonic): one-shot,
    /// never multishot — an async cancel that lands while a multishot timeout is between its
    /// fire and its re-arm finds nothing, and the timeout then runs forever.
    private func armTimer(at deadline: Int64, realtime: Bool) {
        self.assertOnRingThread()
        self.timerDeadline = deadline
        if realtime {
            let spec = _KernelTimespec(nanoseconds: deadline)
            self.timerSpecs[self.timerGeneration] = spec
            self.armedTimer = .kernel(
                self.submit(.timeoutAt(spec: spec, realtime: true), tag: self.timerTag(Tag.timerFirst))
            )
        } else {
            self.armedTimer = .ring(self.core!.armTimer(at: deadline, target: self, context: self.timerGeneration))
        }
    }

    /// Cancels the armed timer, if any (its completion, for a kernel timeout, is ignored).
    private func cancelArmedTimer() {
        switch self.armedTimer {
        case .ring(let token): self.core?.cancelTimer(token)
        case .kernel(let userData): self.submit(.cancel(userData: userData), tag: Tag.ignore)
        case nil: break
        }
        self.armedTimer = nil
    }

    /// A monotonic deadline of the ring's timers passed (on the ring thread).
    func ringTimerFired(context: UInt64) {
        self.assertOnRingThread()
        guard context == self.timerGeneration else { return }  // a replaced schedule
        self.armedTimer = nil
        guard !self.cancelled else { return }
        self.timerFired(tag: Tag.timerRepeat)
    }

    /// Timer tags carry the schedule's generation, so completions of a replaced schedule are
    /// told apart.
    private func timerTag(_ tag: UInt64) -> UInt64 { tag | (self.timerGeneration << 8) }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        if seconds >= Int64.max / 1_000_000_000 { return Int64.max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    private func timerFired(tag: UInt64) {
        self.assertOnRingThread()
        var fires: UInt = 1
        if let interval = self.timerInterval, !self.cancelled {
            let now = _Clock.nanoseconds(realtime: false)
            var next: Int64
            if tag == Tag.timerFirst {
                next = now &+ interval  // after a wall-clock first fire: from now, monotonic
            } else {
                next = self.timerDeadline &+ interval
                if next <= now {
                    // The ring was late: count the intervals that passed, fire once for all.
                    let missed = (now - next) / interval + 1
                    fires &+= UInt(missed)
                    next = next &+ missed &* interval
                }
            }
            self.armTimer(at: next, realtime: false)
        }
        self.pending &+= fires
        self.hasEvent = true
        self.deliverIfReady()
    }

    // Signals

    private func armSignalRead() {
        self.assertOnRingThread()
        guard let slot = self.signalSlot, !self.cancelled else { return }
        let buffer = UnsafeMutableRawBufferPointer(start: self.signalBuffer, count: 8)
        self.armedOperation = self.submit(.read(fd: slot.eventFD, buffer: buffer, offset: -1), tag: Tag.signalRead)
    }

    // Readiness and process exit

    /// Level-triggered readiness: one poll at a time, armed only when an event could be
    /// delivered (resumed, no call in flight), so a handler that leaves data behind is called
    /// again and a suspended source costs nothing.
    private func armReadinessIfNeeded() {
        self.assertOnRingThread()
        guard !self.cancelled, !self.pollArmed, !self.handlerRunning, !self.isSuspended, !self.hasEvent else {
            return
        }
        let request: RingRequest
        switch self.kind {
        case .readable(let fd): request = .poll(fd: fd, events: UInt32(POLLIN))
        case .writable(let fd): request = .poll(fd: fd, events: UInt32(POLLOUT))
        case .processExit(let pidfd):
            guard !self.exitReported else { return }  // it exits once
            request = .poll(fd: pidfd, events: UInt32(POLLIN))
        default: return
        }
        self.pollArmed = true
        self.armedOperation = self.submit(request, tag: Tag.poll)
    }

    private func pollCompleted(result: Int32) {
        self.assertOnRingThread()
        self.pollArmed = false
        guard !self.cancelled else { return }
        guard result >= 0 else {
            if result != -ECANCELED { self.hasEvent = true }  // EBADF…: tell the handler; it will look
            self.deliverIfReady()
            return
        }
        switch self.kind {
        case .readable(let fd):
            // A descriptor that cannot tell (not a file, socket or pipe) reports 1.
            self.pending = (try? _POSIX.readableByteCount(fd)).map { UInt(max($0, 0)) } ?? 1
        case .writable(let fd):
            self.pending = Self.writableEstimate(fd)
        case .processExit:
            self.pending = IOSource.ProcessEvent.exit.rawValue
            self.exitReported = true
        default:
            break
        }
        self.hasEvent = true
        self.deliverIfReady()
    }

    /// Free space in the socket's send buffer, or 1 when the descriptor cannot tell.
    private static func writableEstimate(_ fd: CInt) -> UInt {
        guard let size = try? _POSIX.option(fd, level: SOL_SOCKET, name: SO_SNDBUF),
            let queued = try? _POSIX.unsentByteCount(fd)
        else { return 1 }
        return UInt(max(Int(size) - queued, 1))
    }

    // Custom

    private func takeCustom() {
        self.assertOnRingThread()
        self.customScheduled.store(false, ordering: .sequentiallyConsistent)
        let value = self.customPending.exchange(0, ordering: .acquiringAndReleasing)
        guard value != 0, !self.cancelled else { return }
        if case .or = self.kind { self.pending |= value } else { self.pending &+= value }
        self.hasEvent = true
        self.deliverIfReady()
    }

    // Delivering

    private func deliverIfReady() {
        self.assertOnRingThread()
        guard self.hasEvent, !self.handlerRunning, !self.cancelled, self.registered, !self.isSuspended,
            let core = self.core
        else { return }
        let data = self.pending
        self.pending = 0
        self.hasEvent = false
        self.handlerRunning = true
        core.deliver(on: self.queue) {
            self.currentData.store(data, ordering: .releasing)
            if let handler = self.handlers.withLock({ $0.event }) { handler() }
            self.handlerReturned()
        }
    }

    /// On the queue, after an event (or the registration) handler returned.
    private func handlerReturned() {
        self.perform { source in
            source.assertOnRingThread()
            source.handlerRunning = false
            if source.cancelled {
                source.finishCancelIfIdle()
            } else {
                source.armReadinessIfNeeded()
                source.deliverIfReady()
            }
        }
    }

    // Cancelling

    private func cancelOnRing() {
        self.assertOnRingThread()
        guard !self.cancelled else { return }
        self.cancelled = true
        self.cancelArmedTimer()
        if let armed = self.armedOperation {
            self.submit(.cancel(userData: armed), tag: Tag.ignore)
            self.armedOperation = nil
        }
        if let slot = self.signalSlot {
            _SignalRouter.unregister(slot)
            self.signalSlot = nil
        }
        self.finishCancelIfIdle()
    }

    /// The cancel handler, once: after the last event handler returned and, as dispatch, once
    /// the source is resumed.
    private func finishCancelIfIdle() {
        self.assertOnRingThread()
        guard self.cancelled, !self.cancelDelivered, !self.handlerRunning, !self.isSuspended,
            let core = self.core
        else { return }
        self.cancelDelivered = true
        // Drop the handlers (and what they capture) once they can no longer run.
        let cancel = self.handlers.withLock { handlers in
            let cancel = handlers.cancel
            handlers = Handlers()
            return cancel
        }
        if let cancel { core.deliver(on: self.queue, cancel) }
    }

    // MARK: Ring operations

    @discardableResult
    private func submit(_ request: RingRequest, tag: UInt64) -> UInt64 {
        self.assertOnRingThread()
        self.inFlight += 1
        return self.core!.submit(request, target: self, context: tag)
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.assertOnRingThread()
        if !flags.hasMore { self.inFlight -= 1 }
        let tag = context & 0xff
        switch tag {
        case Tag.timerFirst:
            self.timerSpecs[context >> 8] = nil  // the kernel is done with it
            guard context >> 8 == self.timerGeneration else { return }  // a replaced schedule
            self.armedTimer = nil
            guard !self.cancelled, result == -ETIME else { return }
            self.timerFired(tag: tag)
        case Tag.poll:
            self.armedOperation = nil
            self.pollCompleted(result: result)
        case Tag.signalRead:
            self.armedOperation = nil
            guard !self.cancelled else { return }
            if result == 8 {
                self.pending &+= UInt(self.signalBuffer.pointee)
                self.hasEvent = true
                self.deliverIfReady()
            }
            if result != -ECANCELED { self.armSignalRead() }
        default:
            break
        }
    }
}
