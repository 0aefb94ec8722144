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
    let eventFD: CInt
    let inbox = _Inbox()
    internal let counters = _Counters()

    // MARK: Any thread, atomic
    /// Set by the ring thread right before it may block in the kernel.
    let asleep = Atomic<Bool>(false)
    /// Set once by `stop`.
    let stopRequested = Atomic<Bool>(false)
    /// Set by the ring thread when it has exited its loop.
    let exited = Atomic<Bool>(false)
    let threadState = _Lock<(thread: pthread_t?, joined: Bool)>((nil, false))
    /// Called once the ring thread has finished (``whenFinished(_:)``); `nil` once it has.
    let finishWaiters = _Lock<[@Sendable () -> Void]?>([])
    /// The ring thread's identity, for `isRingThread`; 0 once it has exited (a new thread may
    /// get the same identity).
    let ringThreadID = Atomic<UInt>(0)

    // MARK: Set once by `adopt`, before any job of the executors exists
    //
    // Read on the ring thread after a job reached it (the inbox push and drain, or the ring's
    // own `localJobs`, order the write before the read), and after the thread exited by
    // `runElsewhere` (ordered by `exited`).
    var taskExecutorHandle: UnownedTaskExecutor?
    var serialExecutorHandle: UnownedSerialExecutor?
    /// Runs the serial executor's jobs, in order, once the ring thread has exited.
    let exitQueue: DispatchQueue
    static let exitQueueKey = DispatchSpecificKey<UInt>()

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
    /// io_uring or the readiness engine: the core submits, waits and reaps through it.
    let engine: _Engine
    /// Which engine the ring runs on, and why.
    internal let backendSelection: _BackendSelection
    @exclusivity(unchecked) var slots: ContiguousArray<_Slot> = []
    @exclusivity(unchecked) var freeSlots: [UInt32] = []
    @exclusivity(unchecked) var inFlight = 0
    /// Completions of the current batch, run after the CQ is drained.
    @exclusivity(unchecked) var ready: _TurnBuffer<_ReadyCompletion>
    /// Work enqueued on the ring from the ring thread: runs next turn, no wake-up.
    @exclusivity(unchecked) var localJobs = _TurnBuffer<_RingJob>(capacity: 64)
    /// The jobs of the turn being run, from the inbox and `localJobs`; both buffers keep their
    /// storage (swapped, never freed), so neither allocates in the steady state.
    @exclusivity(unchecked) var runningJobs = _TurnBuffer<_RingJob>(capacity: 64)
    /// The target of the eventfd read, made once.
    var wakeUpTarget: _WakeUpTarget?
    /// Handlers bound for DispatchQueues in this turn, grouped per queue.
    @exclusivity(unchecked) var dispatchBatches: [(queue: DispatchQueue, work: [_RingJob])] = []
    /// The eventfd read's buffer.
    let wakeBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
    /// The provided receive buffers, registered on first use.
    @exclusivity(unchecked) var _providedBuffers: _ProvidedBuffers?
    /// Pools of buffer groups of their own (``makeBufferPool(count:size:)``).
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see above); read at
    // every turn's end, where a checked access cost about 2% of an echo round trip.
    @exclusivity(unchecked) var ownedPools: [_ProvidedBuffers] = []
    @exclusivity(unchecked) var hasOwnedPools = false
    /// Buffer group ids for them: released ones, then the next never used (group 0 is the
    /// ring's own; `UInt16.max` is the probe's).
    var freeBufferGroups: [UInt16] = []
    var nextBufferGroup: UInt16? = 1
    let receiveBufferCount: Int
    let receiveBufferSize: Int
    /// The state the layers above keep per ring (``local(_:)``), by type.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see above); read
    // once per descriptor entry.
    @exclusivity(unchecked) var locals: [(type: ObjectIdentifier, local: any _RingLocal)] = []
    var cancelAllIssued = false
    /// Operations were submitted after the last cancel-all (while stopping, they need another).
    var submittedSinceCancelAll = false
    /// A cancel-all is in flight (stopping).
    var cancelAllInFlight = false
    /// Operations outlived the last cancel-all: time to issue another (stopping).
    var cancelAllRetryDue = false
    /// The ring's executors, held while the thread may run their jobs and let go when it exits:
    /// they hold the core, so this breaks the cycle.
    var executors: (task: RingTaskExecutor, serial: RingSerialExecutor)?
    /// The longest turn so far, in coarse-clock nanoseconds (see `Counters.longestTurn`).
    var longestTurn: Int64 = 0
    /// The ring's timers (channel intervals, source timers): one queue, one kernel timeout.
    @exclusivity(unchecked) var timers = _RingTimers()
    /// Kernel timeouts in flight for the timers, and the spare ones (reused: no allocation).
    @exclusivity(unchecked) var timerTimeoutsInFlight: ContiguousArray<_TimerTimeout> = []
    @exclusivity(unchecked) var spareTimerTimeouts: ContiguousArray<_TimerTimeout> = []
    /// When the current turn began: the ring thread came back from the kernel.
    var turnStart: Int64 = 0
    /// The earliest deadline of the kernel timeouts in flight; `Int64.max` when none is.
    var armedTimerDeadline = Int64.max

    init(
        engine: _Engine,
        selection: _BackendSelection,
        eventFD: CInt,
        receiveBufferCount: Int,
        receiveBufferSize: Int
    ) {
        self.engine = engine
        self.backendSelection = selection
        self.eventFD = eventFD
        self.receiveBufferCount = receiveBufferCount
        self.receiveBufferSize = receiveBufferSize
        let flags = engine.setupFlags
        self.setup = RingLoop.Setup(
            submissionEntries: engine.submissionEntries,
            completionEntries: engine.completionEntries,
            deferredTaskRun: flags & IORING_SETUP_DEFER_TASKRUN != 0,
            cooperativeTaskRun: flags & IORING_SETUP_COOP_TASKRUN != 0,
            noDrop: engine.features & IORING_FEAT_NODROP != 0,
            registeredRingDescriptor: engine.registeredRingDescriptor
        )
        engine.adoptWakeUpDescriptor(eventFD)
        self.ready = _TurnBuffer(capacity: Int(engine.completionEntries))
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

    static func threadMain(_ handshake: _StartHandshake) {
        let core: _RingCore
        do throws(RingSetupError) {
            if let forced = handshake.forcedFailure { throw RingSetupError(errno: forced) }
            let (engine, selection) = try _Engine.make(entries: handshake.entries, forced: handshake.backend)
            let eventFD: CInt
            do throws(Errno) {
                eventFD = try _EventFD.make()
            } catch {
                engine.close()
                throw RingSetupError(errno: error)
            }
            core = _RingCore(
                engine: engine,
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
        // kills the process; the write completes with EPIPE (D3, RingIO.docc/ComingFromDispatch.md).
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

    /// Runs `work` on the ring thread, as ``enqueue(_:)``; when the ring's thread has exited
    /// and `work` can never run there, runs `orElse` instead, on the calling thread — for work
    /// that someone waits for (a connect's next step), which must end either way.
    internal func enqueue(_ work: @escaping @Sendable () -> Void, orElse: @escaping @Sendable () -> Void) {
        self.enqueue(.runnable(_FallibleJob(work: work, orElse: orElse)))
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
    func runElsewhere(_ job: _RingJob) {
        switch job {
        case .closure:
            self.counters.discardedJobs.add(1, ordering: .relaxed)
        case .runnable(let runnable):
            self.counters.discardedJobs.add(1, ordering: .relaxed)
            runnable.discardedByRing()
        case .scheduled(let work):
            self.counters.discardedJobs.add(1, ordering: .relaxed)
            work.ringExited()
        case .taskJob(let job):
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        case .serialJob(let job):
            let executor = self.serialExecutorHandle!
            self.exitQueue.async { job.runSynchronously(on: executor) }
        }
    }

    func wakeIfAsleep() {
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
        } else if !self.isRingThread {
            // Joined or detached by another shutdown: wait for the thread to finish all the same.
            let finished = DispatchSemaphore(value: 0)
            self.whenFinished { finished.signal() }
            finished.wait()
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

    /// Calls `waiter` once the ring thread has finished (its last act, on that thread), or at
    /// once, on the calling thread, when it already has. Any thread.
    internal func whenFinished(_ waiter: @escaping @Sendable () -> Void) {
        let finished = self.finishWaiters.withLock { waiters -> Bool in
            guard waiters != nil else { return true }
            waiters!.append(waiter)
            return false
        }
        if finished { waiter() }
    }

    /// The ring thread, once: whoever gets it joins or detaches it.
    func takeJoinableThread() -> pthread_t? {
        self.threadState.withLock { state in
            guard !state.joined, let thread = state.thread else { return nil }
            state.joined = true
            return thread
        }
    }
}

/// Carries the set-up outcome from the new ring thread back to the thread that started it.
internal final class _StartHandshake: @unchecked Sendable {
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
