//===----------------------------------------------------------------------===//
// RingIO — the engine: the state of one ring and the loop of its thread.
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

/// The state of one ring. The ring thread holds a strong reference until it exits, so the
/// state outlives the `RingLoop` façade when the façade is dropped with work in flight.
internal final class _RingCore: @unchecked Sendable {
    // @unchecked: properties under "ring thread only" are touched only on the ring thread
    // (checked by `assertOnRingThread()` in debug builds); the others are immutable or atomic.

    // MARK: Immutable after start
    internal let setup: RingLoop.Setup
    private let eventFD: CInt
    private let inbox = _Inbox()
    internal let counters = _Counters()

    // MARK: Any thread, atomic
    /// Set by the ring thread right before it may block in the kernel.
    private let asleep = Atomic<Bool>(false)
    /// Set once by `stop`.
    private let stopRequested = Atomic<Bool>(false)
    /// Set by the ring thread when it has exited its loop.
    private let exited = Atomic<Bool>(false)
    private let threadState = _Lock<(thread: pthread_t?, joined: Bool)>((nil, false))
    /// The ring thread's identity, for `isRingThread`; 0 once it has exited (a new thread may
    /// get the same identity).
    private let ringThreadID = Atomic<UInt>(0)

    // MARK: Set once by `adopt`, before any job of the executors exists
    //
    // Read on the ring thread after a job reached it (the inbox push and drain, or the ring's
    // own `localJobs`, order the write before the read), and after the thread exited by
    // `runElsewhere` (ordered by `exited`).
    private var taskExecutorHandle: UnownedTaskExecutor?
    private var serialExecutorHandle: UnownedSerialExecutor?
    /// Runs the serial executor's jobs, in order, once the ring thread has exited.
    private let exitQueue: DispatchQueue
    private static let exitQueueKey = DispatchSpecificKey<UInt>()

    // MARK: Ring thread only
    //
    // `@exclusivity(unchecked)` here and on the hot ring-thread state of channels (operations,
    // descriptor entries, the buffer pool): Swift checks at run time that two accesses to a
    // class's stored property never overlap, and that check (a thread-local lookup per access)
    // was 4% of an echo server's CPU. The invariant that makes it unnecessary: the property is
    // touched only on the ring thread (or by an operation's single drainer), and every access
    // is short — no inout access spans a call that could reach the same property again (the
    // loops over job and completion arrays use indices for that reason). The whole test suite
    // passed with these checks on (debug builds trap on a violation) before they were turned
    // off; a new overlapping access to one of these properties would not be caught.
    private let backend: _Backend
    /// The engine's two cases apart, for the hot path: testing an optional costs one compare
    /// and no copy, where switching over `backend` copies the enum (and retains its engine)
    /// on every submission — measured at +2% instructions per echo round trip.
    private let uring: _URing?
    private let readiness: _ReadinessEngine?
    /// Which engine the ring runs on, and why.
    internal let backendSelection: _BackendSelection
    @exclusivity(unchecked) private var slots: ContiguousArray<_Slot> = []
    @exclusivity(unchecked) private var freeSlots: [UInt32] = []
    @exclusivity(unchecked) private var inFlight = 0
    /// Completions of the current batch, run after the CQ is drained.
    @exclusivity(unchecked) private var ready: _TurnBuffer<_ReadyCompletion>
    /// Work enqueued on the ring from the ring thread: runs next turn, no wake-up.
    @exclusivity(unchecked) private var localJobs = _TurnBuffer<_RingJob>(capacity: 64)
    /// The jobs of the turn being run, from the inbox and `localJobs`; both buffers keep their
    /// storage (swapped, never freed), so neither allocates in the steady state.
    @exclusivity(unchecked) private var runningJobs = _TurnBuffer<_RingJob>(capacity: 64)
    /// The target of the eventfd read, made once.
    private var wakeUpTarget: _WakeUpTarget?
    /// Handlers bound for DispatchQueues in this turn, grouped per queue.
    @exclusivity(unchecked) private var dispatchBatches: [(queue: DispatchQueue, work: [_RingJob])] = []
    /// The eventfd read's buffer.
    private let wakeBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
    /// The provided receive buffers, registered on first use.
    private var _providedBuffers: _ProvidedBuffers?
    private let receiveBufferCount: Int
    private let receiveBufferSize: Int
    /// State the channels keep per ring (open-path budget, chunk pool).
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see above).
    @exclusivity(unchecked) internal var channelSupport = _ChannelRingSupport()
    private var cancelAllIssued = false
    /// Operations were submitted after the last cancel-all (while stopping, they need another).
    private var submittedSinceCancelAll = false
    /// A cancel-all is in flight (stopping).
    private var cancelAllInFlight = false
    /// Operations outlived the last cancel-all: time to issue another (stopping).
    private var cancelAllRetryDue = false
    /// The descriptor entries with channels on this ring that are not finished (see
    /// `_DescriptorEntry.attach` and `finishIfIdle`): the ring closes their channels as it exits.
    @exclusivity(unchecked) internal var openEntries: [ObjectIdentifier: _DescriptorEntry] = [:]
    /// The ring's executors, held while the thread may run their jobs and let go when it exits:
    /// they hold the core, so this breaks the cycle.
    private var executors: (task: RingTaskExecutor, serial: RingSerialExecutor)?
    /// The longest turn so far, in coarse-clock nanoseconds (see `Counters.longestTurn`).
    private var longestTurn: Int64 = 0
    /// The ring's timers (channel intervals, source timers): one queue, one kernel timeout.
    @exclusivity(unchecked) private var timers = _RingTimers()
    /// Kernel timeouts in flight for the timers, and the spare ones (reused: no allocation).
    @exclusivity(unchecked) private var timerTimeoutsInFlight: ContiguousArray<_TimerTimeout> = []
    @exclusivity(unchecked) private var spareTimerTimeouts: ContiguousArray<_TimerTimeout> = []
    /// The earliest deadline of the kernel timeouts in flight; `Int64.max` when none is.
    private var armedTimerDeadline = Int64.max

    private init(
        backend: _Backend,
        selection: _BackendSelection,
        eventFD: CInt,
        receiveBufferCount: Int,
        receiveBufferSize: Int
    ) {
        self.backend = backend
        switch backend {
        case .uring(let uring):
            self.uring = uring
            self.readiness = nil
        case .readiness(let engine):
            self.uring = nil
            self.readiness = engine
        }
        self.backendSelection = selection
        self.eventFD = eventFD
        self.receiveBufferCount = receiveBufferCount
        self.receiveBufferSize = receiveBufferSize
        let flags = backend.setupFlags
        self.setup = RingLoop.Setup(
            submissionEntries: backend.submissionEntries,
            completionEntries: backend.completionEntries,
            deferredTaskRun: flags & IORING_SETUP_DEFER_TASKRUN != 0,
            cooperativeTaskRun: flags & IORING_SETUP_COOP_TASKRUN != 0,
            noDrop: backend.features & IORING_FEAT_NODROP != 0,
            registeredRingDescriptor: backend.registeredRingDescriptor
        )
        if case .readiness(let engine) = backend { engine.persistentFD = eventFD }
        self.ready = _TurnBuffer(capacity: Int(backend.completionEntries))
        self.exitQueue = DispatchQueue(label: "RingIO.ring-exited.serial-executor")
        self.exitQueue.setSpecific(key: Self.exitQueueKey, value: UInt(bitPattern: ObjectIdentifier(self)))
    }

    deinit {
        self.wakeBuffer.deallocate()
    }

    // MARK: Starting

    /// Starts a ring thread, which sets the ring up (SINGLE_ISSUER wants the submitter to be
    /// the creator), and waits for the outcome.
    internal static func start(
        entries: UInt32,
        receiveBufferCount: Int,
        receiveBufferSize: Int,
        backend: RingLoop.Backend?,
        forcedFailure: Errno?
    ) throws(RingSetupError) -> _RingCore {
        let handshake = _StartHandshake(
            entries: entries,
            receiveBufferCount: receiveBufferCount,
            receiveBufferSize: receiveBufferSize,
            backend: backend,
            forcedFailure: forcedFailure
        )
        let context = Unmanaged.passRetained(handshake).toOpaque()
        let thread: pthread_t
        do throws(Errno) {
            thread = try _POSIX.startThread(context: context) { context in
                let handshake = Unmanaged<_StartHandshake>.fromOpaque(context!).takeRetainedValue()
                _RingCore.threadMain(handshake)
                return nil
            }
        } catch {
            Unmanaged<_StartHandshake>.fromOpaque(context).release()
            throw RingSetupError(errno: error)
        }
        handshake.done.wait()
        switch handshake.outcome! {
        case .failure(let error):
            _POSIX.join(thread)
            throw error
        case .success(let core):
            core.threadState.withLock { $0.thread = thread }
            return core
        }
    }

    private static func threadMain(_ handshake: _StartHandshake) {
        let core: _RingCore
        do throws(RingSetupError) {
            if let forced = handshake.forcedFailure { throw RingSetupError(errno: forced) }
            let (backend, selection) = try _Backend.make(entries: handshake.entries, forced: handshake.backend)
            let eventFD: CInt
            do throws(Errno) {
                eventFD = try _EventFD.make()
            } catch {
                backend.close()
                throw RingSetupError(errno: error)
            }
            core = _RingCore(
                backend: backend,
                selection: selection,
                eventFD: eventFD,
                receiveBufferCount: handshake.receiveBufferCount,
                receiveBufferSize: handshake.receiveBufferSize
            )
        } catch {
            handshake.outcome = .failure(error)
            handshake.done.signal()
            return
        }
        // Writes to a broken pipe raise SIGPIPE at the submitting thread (or an io_uring worker,
        // which blocks every signal): blocked here, it stays pending on this thread and never
        // kills the process; the write completes with EPIPE (DESIGN D3).
        _POSIX.changeSignalMask(SIG_BLOCK, SIGPIPE)
        core.ringThreadID.store(_POSIX.currentThread, ordering: .releasing)
        core.armWakeUp()
        handshake.outcome = .success(core)
        handshake.done.signal()
        core.run()
    }

    // MARK: Any thread

    internal var isRingThread: Bool {
        self.ringThreadID.load(ordering: .acquiring) == _POSIX.currentThread
    }

    /// Whether the ring thread has finished: it touches no ring state any more, and what it
    /// did happens before the caller's next access. Any thread. (The identity is set before
    /// the core is handed out, and cleared last when the thread exits.)
    internal var hasFinished: Bool {
        self.ringThreadID.load(ordering: .acquiring) == 0
    }

    @inline(__always)
    internal func assertOnRingThread() {
        assert(self.isRingThread, "RingIO: ring state touched off the ring thread")
    }

    /// Whether ``stop(join:)`` was called: the ring is cancelling what is in flight and about to
    /// exit. Owners of repeating operations stop re-arming them when they see it. Any thread.
    internal var isStopping: Bool {
        self.stopRequested.load(ordering: .relaxed)
    }

    /// Whether the caller runs a job of the ring's serial executor: on the ring thread, or,
    /// once it has exited, on the queue that runs them since.
    internal var isRunningSerialExecutorJobs: Bool {
        self.isRingThread
            || DispatchQueue.getSpecific(key: Self.exitQueueKey)
                == UInt(bitPattern: ObjectIdentifier(self))
    }

    /// Takes the executors' handles and holds the executors until the thread exits. Once, by
    /// `RingLoop.init`, before the executors are handed to anyone.
    internal func adopt(_ task: RingTaskExecutor, _ serial: RingSerialExecutor) {
        self.taskExecutorHandle = task.asUnownedTaskExecutor()
        self.serialExecutorHandle = serial.asUnownedSerialExecutor()
        // On the ring thread, which owns `executors`, at its next turn — with no wake-up: the
        // executors' own jobs come after this one in the inbox, and a stop wakes the thread,
        // which takes every job before it exits.
        self.inbox.push(.closure { [self] in self.executors = (task, serial) })
    }

    internal func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.enqueue(.closure(work))
    }

    /// Runs `job` on the ring thread: next turn when called there (no syscall), else through
    /// the inbox and at most one wake-up. Once the thread has exited, `job` runs elsewhere or
    /// fails (see `runElsewhere`).
    internal func enqueue(_ job: _RingJob) {
        if self.isRingThread {
            // One order for all: jobs other threads pushed before this one go first (a serial
            // executor's jobs run in the order they were enqueued, from whatever thread).
            if !self.inbox.isEmpty { self.inbox.drain(into: &self.localJobs) }
            self.localJobs.append(job)
            return
        }
        if self.exited.load(ordering: .acquiring) {
            self.runElsewhere(job)
            return
        }
        self.inbox.push(job)
        if self.exited.load(ordering: .sequentiallyConsistent) {
            // The thread stopped taking jobs after our first check and may have missed the
            // push: whatever is left in the inbox now is ours to dispose of.
            for job in self.inbox.drain() { self.runElsewhere(job) }
            return
        }
        self.wakeIfAsleep()
    }

    /// A job that reached the ring after its thread stopped taking jobs from other threads:
    /// Swift concurrency jobs run elsewhere (a task's on the global concurrent executor, an
    /// actor's on a serial queue of the ring's, in order), so no task waits forever for a ring
    /// that is gone; an operation ends with ECANCELED; a closure is discarded and counted.
    private func runElsewhere(_ job: _RingJob) {
        switch job {
        case .closure, .runnable:
            self.counters.discardedJobs.add(1, ordering: .relaxed)
        case .submission(let operation):
            self.counters.discardedJobs.add(1, ordering: .relaxed)
            operation.ringExited()
        case .taskJob(let job):
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        case .serialJob(let job):
            let executor = self.serialExecutorHandle!
            self.exitQueue.async { job.runSynchronously(on: executor) }
        }
    }

    private func wakeIfAsleep() {
        // Pairs with the ring thread's store of `asleep` and re-check of the inbox (both
        // sequentially consistent): either it sees our push, or we see it asleep.
        if self.asleep.exchange(false, ordering: .sequentiallyConsistent) {
            self.counters.wakeUps.add(1, ordering: .relaxed)
            _EventFD.signal(self.eventFD)
        }
    }

    /// Asks the ring to cancel everything, drain and exit; joins its thread when `join`.
    internal func stop(join: Bool) {
        if !self.stopRequested.exchange(true, ordering: .sequentiallyConsistent) {
            if self.isRingThread {
                // Seen at the end of this turn; nothing to wake.
            } else if !self.exited.load(ordering: .acquiring) {
                self.inbox.push(.closure({}))
                self.wakeIfAsleep()
            }
        }
        guard join else { return }
        if let thread = self.takeJoinableThread() {
            _POSIX.join(thread)
        }
    }

    /// The ring thread is stopping and no one will join it — its `RingLoop` went away on the
    /// ring thread itself (the last reference dropped by a handler or a job there): it frees
    /// its own resources when it exits, rather than leaving a thread never joined.
    internal func detachThread() {
        if let thread = self.takeJoinableThread() {
            _POSIX.detach(thread)
        }
    }

    /// The ring thread, once: whoever gets it joins or detaches it.
    private func takeJoinableThread() -> pthread_t? {
        self.threadState.withLock { state in
            guard !state.joined, let thread = state.thread else { return nil }
            state.joined = true
            return thread
        }
    }

    // MARK: Ring thread: submitting

    /// Prepares one operation for the next flush.
    ///
    /// - Parameters:
    ///   - request: What to ask the kernel; its pointers must stay valid until the final
    ///     completion.
    ///   - target: Receives the completion(s) on the ring thread, after the CQ batch is drained.
    ///   - context: Handed back with the completion.
    /// - Returns: The operation's user data (for cancellation).
    @discardableResult
    internal func submit(_ request: RingRequest, target: any RingOperationTarget, context: UInt64 = 0) -> UInt64 {
        self.assertOnRingThread()
        let userData = self.occupySlot(kind: request.kind, target: target, context: context)
        self.push(request, userData: userData)
        return userData
    }

    /// Hands a request to the engine for the next flush: an SQE for io_uring, a queued request
    /// for the readiness engine.
    @inline(__always)
    private func push(_ request: RingRequest, userData: UInt64) {
        if let engine = self.readiness {
            engine.push(request, userData: userData)
        } else {
            request.prepare(self.nextSQE(), userData: userData)
        }
    }

    /// Submits `first` and `second` as a chain (IOSQE_IO_LINK), both for `target`: `second`
    /// starts once `first` has completed in full; a `first` that fails or comes up short
    /// (fewer bytes than asked) ends `second` with ECANCELED. Returns both user data.
    internal func submitLinked(
        _ first: RingRequest,
        context firstContext: UInt64,
        then second: RingRequest,
        context secondContext: UInt64,
        target: any RingOperationTarget
    ) -> (first: UInt64, second: UInt64) {
        self.assertOnRingThread()
        if let engine = self.readiness {
            let firstUserData = self.occupySlot(kind: first.kind, target: target, context: firstContext)
            engine.push(first, userData: firstUserData, linkedToNext: true)
            let secondUserData = self.occupySlot(kind: second.kind, target: target, context: secondContext)
            engine.push(second, userData: secondUserData)
            return (firstUserData, secondUserData)
        }
        // Both in one submission: a chain cut by a flush between its entries is no chain.
        self.ensureSubmissionSpace(2)
        let firstUserData = self.occupySlot(kind: first.kind, target: target, context: firstContext)
        let firstEntry = self.nextSQE()
        first.prepare(firstEntry, userData: firstUserData)
        firstEntry.pointee.flags |= CLiburing_IOSQE_IO_LINK
        let secondUserData = self.occupySlot(kind: second.kind, target: target, context: secondContext)
        second.prepare(self.nextSQE(), userData: secondUserData)
        return (firstUserData, secondUserData)
    }

    private func occupySlot(kind: OperationKind, target: any RingOperationTarget, context: UInt64) -> UInt64 {
        let slotIndex: UInt32
        if let free = self.freeSlots.popLast() {
            slotIndex = free
        } else {
            slotIndex = UInt32(self.slots.count)
            self.slots.append(_Slot())
        }
        self.slots[Int(slotIndex)].target = target
        self.slots[Int(slotIndex)].context = context
        self.inFlight += 1
        self.submittedSinceCancelAll = true
        return UserData(slot: slotIndex, generation: self.slots[Int(slotIndex)].generation, kind: kind).raw
    }

    /// Flushes the SQ until it has room for `count` entries.
    private func ensureSubmissionSpace(_ count: UInt32) {
        guard let uring = self.uring else { return }
        while uring.submissionSpaceLeft < count {
            self.flushSubmissionQueue()
        }
    }

    /// A free SQE; when the SQ is full, flushes it to the kernel first (and, if the kernel
    /// pushes back because the CQ overflowed, reaps completions to make room). io_uring only.
    private func nextSQE() -> UnsafeMutablePointer<io_uring_sqe> {
        let uring = self.uring.unsafelyUnwrapped  // only called when there is a ring
        while true {
            if let sqe = uring.nextSQE() { return sqe }
            self.flushSubmissionQueue()
        }
    }

    /// Hands the prepared entries to the kernel without waiting; when the kernel pushes back
    /// because the CQ overflowed, reaps completions to make room.
    private func flushSubmissionQueue() {
        do throws(Errno) {
            let submitted = try self.submitToEngine(wait: false)
            self.counters.submissions.add(UInt64(submitted), ordering: .relaxed)
        } catch  where error == .resourceBusy || error == .resourceTemporarilyUnavailable {
            self.reapCompletions()
        } catch {
            preconditionFailure("RingIO: io_uring_submit failed: \(error)")
        }
    }

    private func armWakeUp() {
        let target: _WakeUpTarget
        if let existing = self.wakeUpTarget {
            target = existing
        } else {
            target = _WakeUpTarget(self)
            self.wakeUpTarget = target
        }
        let userData = self.occupySlot(kind: .wakeUp, target: target, context: 0)
        self.push(.read(fd: self.eventFD, buffer: self.wakeBuffer, offset: -1), userData: userData)
    }

    fileprivate func wakeUpCompleted(result: Int32) {
        // Re-arm unless the ring is stopping (then the read was cancelled, or is moot).
        if !self.stopRequested.load(ordering: .relaxed) && result != -ECANCELED {
            self.armWakeUp()
        }
    }

    /// Whether completions wait in the kernel's overflow list: the CQ was full when they were
    /// posted (FEAT_NODROP keeps them; the next reap flushes them). For the tests.
    internal var completionQueueHasOverflow: Bool {
        self.assertOnRingThread()
        return self.hasOverflow
    }

    /// Whether completions wait in io_uring's overflow list (never on the readiness engine).
    @inline(__always)
    private var hasOverflow: Bool {
        self.uring?.hasOverflow ?? false
    }

    @inline(__always)
    private func submitToEngine(wait: Bool) throws(Errno) -> Int {
        if let engine = self.readiness { return try engine.submit(wait: wait) }
        return try self.uring.unsafelyUnwrapped.submit(wait: wait)
    }

    // MARK: Ring thread: timers

    /// Arms a timer: at `deadline` (CLOCK_MONOTONIC nanoseconds) or soon after, `target`'s
    /// ``_RingTimerTarget/ringTimerFired(context:)`` runs on the ring thread, with `context`.
    /// The timer holds `target` until it fires or is cancelled, or the ring thread exits.
    ///
    /// No syscall and, in the steady state, no allocation: the timer joins the ring's queue,
    /// and before its next flush the ring arms one kernel timeout for the earliest deadline
    /// when none in flight fires by then (``prepareTimerTimeout()``). Once the ring is stopping,
    /// no kernel timeout is armed any more, so timers armed then never fire.
    internal func armTimer(at deadline: Int64, target: any _RingTimerTarget, context: UInt64 = 0) -> _RingTimerToken {
        self.assertOnRingThread()
        return self.timers.arm(at: deadline, target: target, context: context)
    }

    /// Cancels a timer: it will not fire, and lets go of its target. A stale token (the timer
    /// fired or was cancelled) changes nothing. No syscall: a kernel timeout armed for it stays,
    /// and its completion finds nothing due and arms one for the new earliest deadline.
    internal func cancelTimer(_ token: _RingTimerToken) {
        self.assertOnRingThread()
        self.timers.cancel(token)
    }

    /// How many timers are armed.
    internal var armedTimerCount: Int {
        self.assertOnRingThread()
        return self.timers.count
    }

    /// Before a flush: arms a kernel timeout (absolute, CLOCK_MONOTONIC) for the earliest
    /// deadline, unless one in flight fires by then or the ring is stopping. The timeouts that
    /// fire later than needed (their deadline was cancelled, or an earlier one came) stay: their
    /// completions only check the clock. Beyond two in flight, the one firing last is
    /// cancelled, so deadlines that keep moving earlier leave a bounded number behind.
    private func prepareTimerTimeout() {
        guard let earliest = self.timers.earliestDeadline, earliest < self.armedTimerDeadline,
            !self.cancelAllIssued
        else { return }
        let timeout = self.spareTimerTimeouts.popLast() ?? _TimerTimeout(self)
        timeout.deadline = earliest
        timeout.cancelRequested = false
        timeout.spec.reset(nanoseconds: earliest)
        timeout.userData = self.submit(.timeoutAt(spec: timeout.spec, realtime: false), target: timeout)
        self.timerTimeoutsInFlight.append(timeout)
        self.armedTimerDeadline = earliest
        if self.timerTimeoutsInFlight.count > 2 {
            var latest: _TimerTimeout?
            for candidate in self.timerTimeoutsInFlight where !candidate.cancelRequested {
                if latest == nil || candidate.deadline > latest!.deadline { latest = candidate }
            }
            if let latest, latest !== timeout {
                latest.cancelRequested = true
                self.submit(.cancel(userData: latest.userData), target: latest, context: _TimerTimeout.cancelContext)
            }
        }
    }

    /// A kernel timeout of the timers completed (fired, or cancelled): runs the timers that are
    /// due. The clock is read here only — a timer never fires before its kernel timeout does.
    fileprivate func timerTimeoutCompleted(_ timeout: _TimerTimeout) {
        if let index = self.timerTimeoutsInFlight.firstIndex(where: { $0 === timeout }) {
            self.timerTimeoutsInFlight.remove(at: index)
        }
        self.spareTimerTimeouts.append(timeout)
        var earliest = Int64.max
        for other in self.timerTimeoutsInFlight where other.deadline < earliest { earliest = other.deadline }
        self.armedTimerDeadline = earliest
        let now = _Clock.nanoseconds(realtime: false)
        // At most the timers armed now: one that arms itself again for a time already past
        // waits for the next kernel timeout (armed at once, for then) instead of looping here.
        var budget = self.timers.count
        while budget > 0, let expired = self.timers.popExpired(now: now) {
            expired.target.ringTimerFired(context: expired.context)
            budget -= 1
        }
    }

    /// Makes the next flush act on everything the kernel has for the ring: io_uring's always
    /// does (each flush asks for events, which runs the completions the kernel queued as task
    /// work); the readiness engine looks at epoll then even when the turn has completions
    /// already. For the tests' ring barrier (`_RingIOTesting.barrier(on:completion:)`).
    internal func actOnReadinessAtNextFlush() {
        self.assertOnRingThread()
        self.readiness?.pollAtNextSubmit()
    }

    // MARK: Ring thread: descriptors

    /// The caller is done with `fd` (a channel's entry finished, a listener closes its
    /// socket, a source was cancelled): the readiness engine lets go of its registration, so
    /// that the number may name a new file. Nothing for io_uring, which registers nothing.
    internal func releaseDescriptor(_ fd: CInt) {
        self.assertOnRingThread()
        self.readiness?.forget(fd)
    }

    // MARK: Ring thread: provided buffers

    /// The ring's provided receive buffers, registered on first use (buffer group 0).
    internal var providedBuffers: _ProvidedBuffers {
        self.assertOnRingThread()
        if let pool = self._providedBuffers { return pool }
        do throws(Errno) {
            let pool = try _ProvidedBuffers(
                backend: self.backend,
                group: 0,
                bufferCount: self.receiveBufferCount,
                bufferSize: self.receiveBufferSize
            )
            self._providedBuffers = pool
            return pool
        } catch {
            preconditionFailure("RingIO: registering the receive buffer ring failed: \(error)")
        }
    }

    /// Hands released buffers back to the kernel. (A receive that found none waits one turn and
    /// then reads into fresh memory: see `_DescriptorEntry.receiveEnded`.)
    private func collectReturnedBuffers() {
        guard let pool = self._providedBuffers else { return }
        pool.collectReturned()
        self.counters.buffersOnLoan.store(UInt64(pool.buffersOnLoan), ordering: .relaxed)
    }

    // MARK: Ring thread: delivering to queues

    /// Runs `work` on `queue`: inline after the current batch when `queue` is this ring,
    /// otherwise grouped with the turn's other work for the same DispatchQueue into one `async`.
    internal func deliver(on queue: some IOQueue, _ work: @escaping @Sendable () -> Void) {
        self.deliver(.closure(work), on: queue)
    }

    /// As ``deliver(on:_:)`` for an object that runs itself: no closure is made on the ring's
    /// own queue or a DispatchQueue (a channel operation's handler calls, once per batch).
    internal func deliver(_ runnable: some _RingRunnable, on queue: some IOQueue) {
        self.deliver(.runnable(runnable), on: queue)
    }

    /// As ``deliver(_:on:)`` with this ring as the queue, known by the caller: no cast.
    internal func deliverOnRing(_ runnable: some _RingRunnable) {
        self.assertOnRingThread()
        self.localJobs.append(.runnable(runnable))
    }

    private func deliver(_ job: _RingJob, on queue: some IOQueue) {
        self.assertOnRingThread()
        if let ring = queue.asRing, ring.core === self {
            self.localJobs.append(job)
        } else if let dispatchQueue = queue as? DispatchQueue {
            if let index = self.dispatchBatches.firstIndex(where: { $0.queue === dispatchQueue }) {
                self.dispatchBatches[index].work.append(job)
            } else {
                self.dispatchBatches.append((dispatchQueue, [job]))
            }
        } else {
            queue.enqueue { job.run() }
        }
    }

    private func flushDispatchBatches() {
        // Most turns have none (handlers on the ring itself): no array work then.
        guard !self.dispatchBatches.isEmpty else { return }
        for batch in self.dispatchBatches {
            let work = batch.work
            batch.queue.async {
                for item in work { item.run() }
            }
        }
        self.dispatchBatches.removeAll(keepingCapacity: true)
    }

    // MARK: Ring thread: the loop

    private func run() {
        while true {
            self.runJobs()
            if self.stopRequested.load(ordering: .sequentiallyConsistent) && !self.cancelAllInFlight
                && (!self.cancelAllIssued || self.submittedSinceCancelAll || self.cancelAllRetryDue)
            {
                // Cancel everything in flight; again whenever a handler submitted more, and, while
                // operations remain that a cancel could not reach yet (one in the middle of
                // completing, one an io-wq worker is running), every 10 ms until none is left.
                self.cancelAllIssued = true
                self.cancelAllInFlight = true
                self.cancelAllRetryDue = false
                self.submit(
                    .cancelAll,
                    target: _ClosureTarget { [unowned self] _, _ in
                        self.cancelAllInFlight = false
                        guard self.inFlight > 0 else { return }
                        let spec = _KernelTimespec(nanoseconds: 10_000_000)
                        self.submit(
                            .timeout(spec: spec),
                            target: _ClosureTarget { [unowned self] _, _ in
                                withExtendedLifetime(spec) {}
                                self.cancelAllRetryDue = true
                            }
                        )
                        // The retry timer itself is not a reason to cancel again.
                        self.submittedSinceCancelAll = false
                    }
                )
                self.submittedSinceCancelAll = false
            }
            if self.cancelAllIssued && self.inFlight == 0 && self.localJobs.isEmpty && self.inbox.isEmpty {
                // Channels still open: closed (stopped) here, so that their descriptors opened
                // from a path are closed and their cleanup handlers run — after the ring there
                // is nowhere left to do it, and an entry, its channels and this ring would keep
                // each other alive. Then round again for what that starts.
                if self.closeOpenEntries() { continue }
                if self.exited.load(ordering: .relaxed) { break }
                // From now on other threads keep their jobs (see `enqueue`). Those pushed
                // before they saw this, and whatever they start (a task resumed by a cancelled
                // read that reads again), still run here: one more pass until nothing is left.
                self.exited.store(true, ordering: .sequentiallyConsistent)
                continue
            }
            // Work delivered to DispatchQueues by jobs goes out before the ring may sleep.
            self.flushDispatchBatches()
            self.endTurn()
            self.prepareTimerTimeout()
            self.flush(mayWait: self.localJobs.isEmpty)
            self.turnStart = _Clock.coarseNanoseconds()
            self.reapCompletions()
            self.runReady()
            self.collectReturnedBuffers()
            self.flushDispatchBatches()
        }
        self.flushDispatchBatches()
        // An entry that could not finish (none should be left) is let go of: it holds the ring.
        self.openEntries.removeAll()
        // Timers still armed never fire: their targets go (no cycle through the core is left).
        self.timers.removeAll()
        self.spareTimerTimeouts.removeAll()
        self._providedBuffers?.close(backend: self.backend)
        self._providedBuffers = nil
        self.backend.close()
        _POSIX.close(self.eventFD)
        self.executors = nil
        self.ringThreadID.store(0, ordering: .releasing)
    }

    /// Stops every channel of the entries still open on this ring (exiting, nothing in
    /// flight); returns whether there was any.
    private func closeOpenEntries() -> Bool {
        let entries = self.openEntries.values.filter { !$0.closingForRingExit }
        for entry in entries { entry.closeForRingExit() }
        return !entries.isEmpty
    }

    /// Runs the jobs from other threads and those the ring gave itself before this turn; jobs
    /// they enqueue in turn wait for the next turn, so a job that re-enqueues itself cannot
    /// keep the ring from reaping.
    private func runJobs() {
        // The ring's own jobs from before this turn first, then other threads'. In enqueue
        // order: a job enqueued on the ring thread first moves what the inbox holds into
        // `localJobs`, so whatever is left in the inbox came after every local job. Jobs
        // enqueued while these run go to `localJobs` (swapped out here) and wait for the next
        // turn.
        if !self.localJobs.isEmpty {
            swap(&self.runningJobs, &self.localJobs)
        }
        self.inbox.drain(into: &self.runningJobs)
        // Index loop: a job may append to `localJobs`, never to `runningJobs`. Each job is
        // let go of as it runs, not at the end of the batch: an operation whose last call a
        // job ran is then free for reuse by the jobs after it (`_WriteOperationPool`).
        var index = 0
        while index < self.runningJobs.count {
            self.run(self.runningJobs.take(at: index))
            index += 1
        }
        guard index > 0 else { return }
        self.runningJobs.removeTaken()
        // Jobs drop ropes too — a task resumed by a write's completion lets go of what it
        // wrote: their receive buffers go back to the kernel in this flush, not the next.
        self.collectReturnedBuffers()
    }

    @inline(__always)
    private func run(_ job: _RingJob) {
        switch job {
        case .closure(let work):
            work()
        case .runnable(let runnable):
            runnable.runDelivered()
        case .submission(let operation):
            operation.channel.submitOnRingThread(operation)
        case .taskJob(let job):
            job.runSynchronously(on: self.taskExecutorHandle!)
        case .serialJob(let job):
            job.runSynchronously(on: self.serialExecutorHandle!)
        }
    }

    /// When the current turn began: the ring thread came back from the kernel.
    private var turnStart: Int64 = 0

    /// The ring thread is about to enter the kernel: records how long it ran since it left it
    /// (reaping, handlers, jobs). A turn that runs long is a handler or a task that does not
    /// return or suspend, and every operation of the ring waits for it.
    @inline(__always)
    private func endTurn() {
        guard self.turnStart != 0 else { return }
        let length = _Clock.coarseNanoseconds() &- self.turnStart
        if length > self.longestTurn {
            self.longestTurn = length
            self.counters.longestTurnNanoseconds.store(UInt64(length), ordering: .relaxed)
        }
        if length >= RingLoop.slowTurnNanoseconds {
            self.counters.slowTurns.add(1, ordering: .relaxed)
        }
    }

    /// Submits prepared entries; when `mayWait` and nothing else is pending, sleeps in the
    /// kernel until a completion (a wake-up from another thread is one: the eventfd read).
    private func flush(mayWait: Bool) {
        var wait = mayWait
        if wait {
            self.asleep.store(true, ordering: .sequentiallyConsistent)
            if !self.inbox.isEmpty { wait = false }
        }
        do throws(Errno) {
            let submitted = try self.submitToEngine(wait: wait)
            self.counters.submissions.add(UInt64(submitted), ordering: .relaxed)
        } catch  where error == .resourceBusy || error == .resourceTemporarilyUnavailable {
            // CQ overflow: the reap that follows makes room.
        } catch {
            preconditionFailure("RingIO: io_uring_enter failed: \(error)")
        }
        if wait {
            self.asleep.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Reaps every ready completion into `ready`, recycling the slots of final completions.
    private func reapCompletions() {
        var reapedAny = false
        withUnsafeTemporaryAllocation(of: RingCompletion.self, capacity: 64) { buffer in
            while true {
                let count: Int
                if let engine = self.readiness {
                    count = engine.reap(into: buffer)
                } else {
                    count = self.uring.unsafelyUnwrapped.reap(into: buffer)
                }
                if count == 0 { break }
                reapedAny = true
                self.counters.completions.add(UInt64(count), ordering: .relaxed)
                for completion in buffer[..<count] {
                    self.accept(completion)
                }
                if count < buffer.count && !self.hasOverflow { break }
            }
        }
        if reapedAny { self.counters.batches.add(1, ordering: .relaxed) }
    }

    private func accept(_ completion: RingCompletion) {
        guard let userData = UserData(raw: completion.userData),
            Int(userData.slot) < self.slots.count,
            self.slots[Int(userData.slot)].generation == userData.generation,
            let target = self.slots[Int(userData.slot)].target
        else {
            self.counters.staleCompletions.add(1, ordering: .relaxed)
            return
        }
        let context = self.slots[Int(userData.slot)].context
        if !completion.hasMore {
            self.slots[Int(userData.slot)].recycle()
            self.freeSlots.append(userData.slot)
            self.inFlight -= 1
        }
        self.ready.append(
            _ReadyCompletion(target: target, result: completion.result, flags: completion.flags, context: context)
        )
    }

    @inline(__always)
    private func runReady() {
        // Index loop: a handler may submit, which never touches `ready`.
        var index = 0
        while index < self.ready.count {
            let item = self.ready.take(at: index)
            item.target.ringOperationCompleted(
                result: item.result,
                flags: CompletionFlags(item.flags),
                context: item.context
            )
            index += 1
        }
        self.ready.removeTaken()
    }
}

// MARK: - Pieces of the core

/// One operation slot. The generation changes each time the slot is recycled.
private struct _Slot {
    var generation: UInt32 = 0
    var target: (any RingOperationTarget)?
    var context: UInt64 = 0

    mutating func recycle() {
        self.generation = (self.generation &+ 1) & UserData.generationMask
        self.target = nil
        self.context = 0
    }
}

private struct _ReadyCompletion {
    let target: any RingOperationTarget
    let result: Int32
    let flags: UInt32
    let context: UInt64
}

/// The target of the ring's own eventfd read.
private final class _WakeUpTarget: RingOperationTarget {
    unowned let core: _RingCore

    init(_ core: _RingCore) {
        self.core = core
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.wakeUpCompleted(result: result)
    }
}

/// A kernel timeout the ring arms for its earliest timer (see `_RingCore.prepareTimerTimeout`);
/// reused once it completed, with its time storage.
private final class _TimerTimeout: RingOperationTarget {
    /// The context of the cancel a timeout that fires too late may get.
    static let cancelContext: UInt64 = 1

    unowned let core: _RingCore
    /// Its time: written only while the timeout is spare (not in flight).
    let spec = _KernelTimespec(nanoseconds: 0)
    var deadline: Int64 = 0
    var userData: UInt64 = 0
    var cancelRequested = false

    init(_ core: _RingCore) {
        self.core = core
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        guard context != Self.cancelContext else { return }
        self.core.timerTimeoutCompleted(self)
    }
}

/// Carries the set-up outcome from the new ring thread back to the thread that started it.
private final class _StartHandshake: @unchecked Sendable {
    // @unchecked: `outcome` is written by the ring thread before `done.signal()` and read by
    // the starter after `done.wait()` — the semaphore orders the two.
    let entries: UInt32
    let receiveBufferCount: Int
    let receiveBufferSize: Int
    let backend: RingLoop.Backend?
    let forcedFailure: Errno?
    let done = DispatchSemaphore(value: 0)
    var outcome: Result<_RingCore, RingSetupError>?

    init(
        entries: UInt32,
        receiveBufferCount: Int,
        receiveBufferSize: Int,
        backend: RingLoop.Backend?,
        forcedFailure: Errno?
    ) {
        self.entries = entries
        self.receiveBufferCount = receiveBufferCount
        self.receiveBufferSize = receiveBufferSize
        self.backend = backend
        self.forcedFailure = forcedFailure
    }
}

/// The ring's counters, updated with relaxed atomics.
internal final class _Counters: Sendable {
    let submissions = Atomic<UInt64>(0)
    let completions = Atomic<UInt64>(0)
    let batches = Atomic<UInt64>(0)
    let wakeUps = Atomic<UInt64>(0)
    let staleCompletions = Atomic<UInt64>(0)
    let discardedJobs = Atomic<UInt64>(0)
    let buffersOnLoan = Atomic<UInt64>(0)
    let fallbackReceives = Atomic<UInt64>(0)
    let longestTurnNanoseconds = Atomic<UInt64>(0)
    let slowTurns = Atomic<UInt64>(0)

    func snapshot() -> RingLoop.Counters {
        RingLoop.Counters(
            submissions: self.submissions.load(ordering: .relaxed),
            completions: self.completions.load(ordering: .relaxed),
            batches: self.batches.load(ordering: .relaxed),
            wakeUps: self.wakeUps.load(ordering: .relaxed),
            staleCompletions: self.staleCompletions.load(ordering: .relaxed),
            discardedJobs: self.discardedJobs.load(ordering: .relaxed),
            buffersOnLoan: self.buffersOnLoan.load(ordering: .relaxed),
            fallbackReceives: self.fallbackReceives.load(ordering: .relaxed),
            longestTurn: .nanoseconds(Int64(self.longestTurnNanoseconds.load(ordering: .relaxed))),
            slowTurns: self.slowTurns.load(ordering: .relaxed)
        )
    }
}

/// Work for the ring's own queue or a DispatchQueue: a closure, or an object that runs itself
/// (no closure context to allocate); and, for the ring only, a channel operation to submit and
/// the jobs of its Swift concurrency executors.
internal enum _RingJob: @unchecked Sendable {
    // @unchecked: a runnable is made on the ring thread and run on the queue it was delivered
    // to; `_RingRunnable` requires what running it there needs. An operation is handed to the
    // ring once, by the thread that made it, and touched only there afterwards. Jobs are the
    // runtime's, which hands them to exactly one executor.
    case closure(@Sendable () -> Void)
    case runnable(any _RingRunnable)
    /// An operation scheduled from another thread (no closure to allocate).
    case submission(_Operation)
    /// A job of the ring's `TaskExecutor`.
    case taskJob(UnownedJob)
    /// A job of the ring's `SerialExecutor`.
    case serialJob(UnownedJob)

    /// Runs a job bound for a DispatchQueue (only closures and runnables go there).
    @inline(__always)
    func run() {
        switch self {
        case .closure(let work): work()
        case .runnable(let runnable): runnable.runDelivered()
        case .submission, .taskJob, .serialJob: preconditionFailure("RingIO: a ring-only job left its ring")
        }
    }
}

/// An object delivered to a queue as itself (``_RingCore/deliver(_:on:)``): it must be safe to
/// run on that queue, as a `@Sendable` closure would be.
internal protocol _RingRunnable: AnyObject {
    /// Runs on the queue the object was delivered to.
    func runDelivered()
}
