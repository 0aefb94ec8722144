//===----------------------------------------------------------------------===//
// RingIO — the engine: one io_uring instance driven by its own thread.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One io_uring instance, owned and driven by one thread of its own — or, where io_uring is
/// refused (a default container's seccomp profile, `kernel.io_uring_disabled`), the readiness
/// engine: the same requests and completions over epoll (``Backend``, ``backend``,
/// ``backendReason``). Everything below holds on either engine.
///
/// The ring thread is the only submitter (the kernel's SINGLE_ISSUER mode where available).
/// It loops:
///
///     ┌─> run jobs from other threads (lock-free inbox) and from the ring itself
///     │   submit what they prepared, and wait for a completion — one syscall
///     │   reap the completion queue in batches
///     │   run the completion handlers bound for the ring (after the CQ is drained)
///     └── send the handlers bound for each DispatchQueue, one `async` per queue per turn
///
/// Other threads reach the ring with ``enqueue(_:)``: a push onto a lock-free list, and one
/// eventfd write only when the ring is asleep. Work enqueued from the ring thread itself joins
/// the next turn with no wake-up.
///
/// A `RingLoop` is also an ``IOQueue``: handlers given to it run on the ring thread. And it is
/// an executor for Swift concurrency, as two small objects: ``taskExecutor`` (for
/// `Task(executorPreference:)` and `withTaskExecutorPreference`) and ``serialExecutor`` (for
/// actors that live on the ring). Their jobs run on the ring thread inside the loop turn, like
/// handlers; an `await` on a channel of the same ring then completes there with no hop:
///
///     let ring = try RingLoop()
///     let task = Task(executorPreference: ring.taskExecutor) {
///         for try await data in channel.reads() {   // resumed on the ring thread
///             try await channel.write(data)         // submitted from it, no wake-up
///         }
///     }
///
/// **Do not block the ring.** A handler, a job or a task on the ring that runs long without
/// returning or suspending stops the ring's I/O for every channel on it — reaping, submitting
/// and every other handler wait. ``Counters/longestTurn`` and ``Counters/slowTurns`` show
/// when that happened; move long work to another executor (`Task.detached`, a
/// `DispatchQueue`) and come back.
///
/// Call ``shutdown()-4tdzq`` (or, from async code, `await ring.shutdown()`) to stop it: operations
/// in flight are cancelled, their final completions delivered (tasks awaiting them resume with
/// `Errno.canceled`), and the call returns once the thread has finished. Dropping the last
/// reference stops it the same way, without waiting. Jobs of its executors that arrive after
/// its thread has exited run elsewhere — a task's on the global concurrent executor, an
/// actor's on a serial queue — so that no task waits forever for a ring that is gone; channel
/// operations scheduled then end with `Errno.canceled`.
///
/// **Running under valgrind.** Set `RINGIO_VALGRIND=1` in the environment of a program you
/// run under valgrind (`RINGIO_VALGRIND=1 valgrind --tool=callgrind ./server`). Valgrind lets
/// one thread run at a time and switches only in the syscalls it knows may block, which
/// `io_uring_enter` is not: a ring waiting there would stop the whole program. With the
/// setting, rings set up from then on wait in `poll(2)` on the ring's descriptor instead, and
/// go without deferred task running and a registered ring descriptor (``setup`` shows it).
/// Without valgrind the setting only costs a little speed; it changes nothing on the
/// readiness engine.
public final class RingLoop: IOQueue, @unchecked Sendable {
    // @unchecked: every stored property is immutable; `_RingCore` documents its own
    // confinement.
    internal let core: _RingCore

    /// The ring as a `TaskExecutor`: tasks that prefer it run on the ring thread.
    ///
    ///     Task(executorPreference: ring.taskExecutor) { … }
    ///     await withTaskExecutorPreference(ring.taskExecutor) { … }
    ///     group.addTask(executorPreference: ring.taskExecutor) { … }
    ///
    /// Child tasks inherit the preference. Nonisolated async code of such a task runs on the
    /// ring; code isolated to an actor runs on that actor's executor.
    public let taskExecutor: RingTaskExecutor

    /// The ring as a `SerialExecutor`, for actors that live on the ring thread:
    ///
    ///     actor Connection {
    ///         let ring: RingLoop
    ///         nonisolated var unownedExecutor: UnownedSerialExecutor {
    ///             self.ring.serialExecutor.asUnownedSerialExecutor()
    ///         }
    ///     }
    ///
    /// The actor's jobs run on the ring thread, in order. Call into such an actor from tasks
    /// that prefer ``taskExecutor``: an await on a channel resumes on the task's executor
    /// first and then hops to the actor's, and with both on the ring that hop stays on the
    /// ring thread (from any other executor, each await costs a hop there and back). Keep the
    /// ring (or this executor) alive as long as such an actor exists: an
    /// `UnownedSerialExecutor` does not retain it.
    public let serialExecutor: RingSerialExecutor

    /// The ring's actor, for ``run(_:)``.
    internal let isolation: _RingIsolation

    /// The submission queue sizes a ring takes: its completion queue, four times larger, is at
    /// most io_uring's limit of 65,536 entries. The readiness engine takes the same range.
    public static let entriesRange: ClosedRange<UInt32> = 1...16_384

    /// Sets up a ring and starts its thread.
    ///
    /// - Parameters:
    ///   - entries: The submission queue size, in ``entriesRange`` (rounded up to a power of two
    ///     by the kernel); the completion queue is four times larger.
    ///   - receiveBuffers: How many provided receive buffers the ring registers (a power of
    ///     two, at most 32,768) on first use. This caps the bytes received and not yet
    ///     released at `receiveBuffers × receiveBufferSize`.
    ///   - receiveBufferSize: The size of each receive buffer.
    ///   - backend: The engine to run on; `nil` (the default): `RINGIO_BACKEND` when it is set,
    ///     else io_uring where the kernel allows it and the readiness engine (epoll) where it
    ///     refuses it (see ``Backend``).
    /// - Throws: ``RingSetupError`` naming the cause and the remedy when io_uring is forced
    ///   and refused, when `entries` is outside ``entriesRange`` (EINVAL, on either engine), or
    ///   for a resource error (ENOMEM from a low locked-memory limit, EMFILE).
    public convenience init(
        entries: UInt32 = 256,
        receiveBuffers: Int = 256,
        receiveBufferSize: Int = 16_384,
        backend: Backend? = nil
    ) throws(RingSetupError) {
        try self.init(
            entries: entries,
            receiveBuffers: receiveBuffers,
            receiveBufferSize: receiveBufferSize,
            backend: backend,
            _forcedSetupFailure: nil
        )
    }

    /// As ``init(entries:receiveBuffers:receiveBufferSize:backend:)``, failing set-up with
    /// `_forcedSetupFailure` when it is not `nil` — a test hook for the error path on machines
    /// where io_uring works.
    package init(
        entries: UInt32,
        receiveBuffers: Int = 256,
        receiveBufferSize: Int = 16_384,
        backend: Backend? = nil,
        _forcedSetupFailure: Errno?
    ) throws(RingSetupError) {
        precondition(
            receiveBuffers > 0 && receiveBuffers <= 32_768 && receiveBuffers & (receiveBuffers - 1) == 0,
            "receiveBuffers must be a power of two in 1...32768"
        )
        precondition(receiveBufferSize > 0, "receiveBufferSize must be positive")
        // Checked here, for both engines: io_uring would answer EINVAL, which automatic
        // selection reads as io_uring refused, and would quietly take epoll.
        guard Self.entriesRange.contains(entries) else { throw RingSetupError(badEntries: entries) }
        let core = try _RingCore.start(
            entries: entries,
            receiveBufferCount: receiveBuffers,
            receiveBufferSize: receiveBufferSize,
            backend: backend,
            forcedFailure: _forcedSetupFailure
        )
        self.core = core
        self.taskExecutor = RingTaskExecutor(core: core)
        self.serialExecutor = RingSerialExecutor(core: core)
        self.isolation = _RingIsolation(executor: self.serialExecutor)
        core.adopt(self.taskExecutor, self.serialExecutor)
    }

    /// Dropping the last reference to a ring stops it as ``shutdown()`` does, without waiting:
    /// the thread finishes on its own (a deinit never blocks the thread that runs it, which
    /// may be one of Swift concurrency's).
    deinit {
        self.core.stop(join: false)
        self.core.detachThread()
    }

    /// Runs `work` on the ring thread, asynchronously.
    ///
    /// From another thread: a lock-free push and at most one wake-up. From the ring thread:
    /// appended to the current turn's work, no syscall.
    ///
    /// Work enqueued after ``shutdown()-4tdzq`` has begun still runs, on the ring thread, until the
    /// thread exits; after that it is discarded and counted in ``Counters/discardedJobs``.
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.core.enqueue(work)
    }

    /// Cancels every operation in flight, delivers their final completions, stops the thread
    /// and waits for it. Idempotent.
    ///
    /// Channels still open on the ring are closed as it exits, as by `close(flags: .stop)`:
    /// their operations end with ECANCELED, a descriptor the channel opened from a path is
    /// closed, and each channel's cleanup handler runs (on its queue; one given this ring runs
    /// on the ring thread before it exits). A channel made on the ring once its shutdown has
    /// begun may never reach it: its operations end with ECANCELED.
    ///
    /// This call blocks its thread until the ring's has finished: from async code, use
    /// `await ring.shutdown()`, which suspends instead.
    ///
    /// - Precondition: Not called on this ring's own thread (it cannot wait for itself).
    public func shutdown() {
        precondition(!self.core.isRingThread, "RingLoop.shutdown() called on the ring's own thread")
        self.core.stop(join: true)
    }

    /// Shuts the ring down as ``shutdown()`` does, and returns once its thread has finished —
    /// suspending the calling task, never blocking a thread. Idempotent.
    ///
    ///     await ring.shutdown()
    ///
    /// It may be called from a task that runs on this ring: the task resumes on the global
    /// concurrent executor (the ring runs nothing any more).
    public func shutdown() async {
        let core = self.core
        core.stop(join: false)
        // Nothing is left to join: the thread finishes on its own.
        core.detachThread()
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            core.whenFinished { continuation.resume() }
        }
    }

    /// Whether the caller is running on this ring's thread.
    public var isCurrentThread: Bool {
        self.core.isRingThread
    }

    /// What the kernel accepted when the ring was set up.
    public var setup: Setup {
        self.core.setup
    }

    /// A snapshot of the ring's counters.
    public var counters: Counters {
        self.core.counters.snapshot()
    }
}

extension RingLoop {
    /// The ring's configuration as the kernel accepted it.
    public struct Setup: Sendable {
        /// Submission and completion queue sizes.
        public var submissionEntries: UInt32
        public var completionEntries: UInt32
        /// Single-issuer mode with deferred task running (the fastest completion path). Never
        /// with `RINGIO_VALGRIND=1`, where the ring waits in `poll(2)` and the kernel must post
        /// completions while it does.
        public var deferredTaskRun: Bool
        /// Cooperative task running (no inter-processor interrupt per completion).
        public var cooperativeTaskRun: Bool
        /// The kernel never drops completions when the CQ overflows (FEAT_NODROP).
        public var noDrop: Bool
        /// The ring's descriptor is registered with its thread (Linux 5.18), so each
        /// `io_uring_enter` names the ring by index, with no descriptor lookup. Never with
        /// `RINGIO_VALGRIND=1`, nor on the readiness engine.
        public var registeredRingDescriptor: Bool
    }

    /// Counts kept by a ring, readable from any thread (relaxed: each is exact, but a snapshot
    /// is not taken atomically across counters).
    public struct Counters: Sendable, Equatable {
        /// Submission entries handed to the kernel.
        public var submissions: UInt64
        /// Completions reaped.
        public var completions: UInt64
        /// Loop turns that reaped at least one completion.
        public var batches: UInt64
        /// eventfd writes by other threads to wake the ring.
        public var wakeUps: UInt64
        /// Completions whose slot had been recycled (must stay 0).
        public var staleCompletions: UInt64
        /// Jobs enqueued after the ring's thread exited.
        public var discardedJobs: UInt64
        /// Receive buffers held by ropes (not yet handed back to the kernel), as of the end of
        /// the ring's last turn.
        public var buffersOnLoan: UInt64
        /// Stream receives that went into fresh memory because every provided buffer was held
        /// by ropes (no data waits and none is lost; the bytes are still not copied).
        public var fallbackReceives: UInt64
        /// The longest turn so far: the longest time the ring thread ran handlers, jobs and
        /// tasks without going back to the kernel — the longest its I/O waited for them.
        /// Measured with the coarse monotonic clock (a resolution of one kernel tick, 1–10 ms):
        /// short turns read as zero.
        public var longestTurn: Duration
        /// Turns that ran for ``RingLoop/slowTurnThreshold`` or longer: each is a handler, job
        /// or task that blocked the ring (see "Do not block the ring" on ``RingLoop``).
        public var slowTurns: UInt64
    }

    /// How long a turn may run before it counts in ``Counters/slowTurns``: 10 ms.
    public static let slowTurnThreshold: Duration = .nanoseconds(slowTurnNanoseconds)

    internal static let slowTurnNanoseconds: Int64 = 10_000_000
}
