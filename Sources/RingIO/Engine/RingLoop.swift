//===----------------------------------------------------------------------===//
// RingIO — the engine: one io_uring instance driven by its own thread.
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One io_uring instance, owned and driven by one thread of its own.
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
/// An `RingLoop` is also an ``IOQueue``: handlers given to it run on the ring thread.
///
/// Call ``shutdown()`` to stop it: operations in flight are cancelled, their final completions
/// delivered, and the thread joined. Dropping the last reference does the same, without the
/// join when that happens on the ring thread itself.
public final class RingLoop: IOQueue, @unchecked Sendable {
    // @unchecked: the only stored property is immutable; `_RingCore` documents its own
    // confinement.
    internal let core: _RingCore

    /// Sets up a ring and starts its thread.
    ///
    /// - Parameters:
    ///   - entries: The submission queue size (rounded up to a power of two by the kernel);
    ///     the completion queue is four times larger.
    ///   - receiveBuffers: How many provided receive buffers the ring registers (a power of
    ///     two, at most 32,768) on first use. This caps the bytes received and not yet
    ///     released at `receiveBuffers × receiveBufferSize`.
    ///   - receiveBufferSize: The size of each receive buffer.
    /// - Throws: ``RingSetupError`` naming the cause and the remedy when the kernel refuses
    ///   io_uring (too old, disabled, seccomp, memory limits).
    public convenience init(
        entries: UInt32 = 256,
        receiveBuffers: Int = 256,
        receiveBufferSize: Int = 16_384
    ) throws(RingSetupError) {
        try self.init(
            entries: entries,
            receiveBuffers: receiveBuffers,
            receiveBufferSize: receiveBufferSize,
            _forcedSetupFailure: nil
        )
    }

    /// As ``init(entries:receiveBuffers:receiveBufferSize:)``, failing set-up with
    /// `_forcedSetupFailure` when it is not `nil` — a test hook for the error path on machines
    /// where io_uring works.
    package init(
        entries: UInt32,
        receiveBuffers: Int = 256,
        receiveBufferSize: Int = 16_384,
        _forcedSetupFailure: Errno?
    ) throws(RingSetupError) {
        precondition(
            receiveBuffers > 0 && receiveBuffers <= 32_768 && receiveBuffers & (receiveBuffers - 1) == 0,
            "receiveBuffers must be a power of two in 1...32768"
        )
        precondition(receiveBufferSize > 0, "receiveBufferSize must be positive")
        self.core = try _RingCore.start(
            entries: entries,
            receiveBufferCount: receiveBuffers,
            receiveBufferSize: receiveBufferSize,
            forcedFailure: _forcedSetupFailure
        )
    }

    deinit {
        self.core.stop(join: !self.core.isRingThread)
    }

    /// Runs `work` on the ring thread, asynchronously.
    ///
    /// From another thread: a lock-free push and at most one wake-up. From the ring thread:
    /// appended to the current turn's work, no syscall.
    ///
    /// Work enqueued after ``shutdown()`` has begun still runs, on the ring thread, until the
    /// thread exits; after that it is discarded and counted in ``Counters/discardedJobs``.
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.core.enqueue(work)
    }

    /// Cancels every operation in flight, delivers their final completions, stops the thread
    /// and waits for it. Idempotent.
    ///
    /// - Precondition: Not called on this ring's own thread (it cannot wait for itself).
    public func shutdown() {
        precondition(!self.core.isRingThread, "RingLoop.shutdown() called on the ring's own thread")
        self.core.stop(join: true)
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
        /// Single-issuer mode with deferred task running (the fastest completion path).
        public var deferredTaskRun: Bool
        /// Cooperative task running (no inter-processor interrupt per completion).
        public var cooperativeTaskRun: Bool
        /// The kernel never drops completions when the CQ overflows (FEAT_NODROP).
        public var noDrop: Bool
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
    }
}

// MARK: - Completion targets

/// Receives the completions of the operations it submitted, on the ring thread.
///
/// Completions dispatch through this protocol and an `OperationKind`, never through a closure
/// allocated per operation: a channel or source object is the target of all of its operations.
internal protocol RingOperationTarget: AnyObject {
    /// - Parameters:
    ///   - result: The CQE's `res`: a count or `-errno`.
    ///   - flags: The CQE's flags (`IORING_CQE_F_MORE`, buffer ids…).
    ///   - context: The value given at submission.
    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64)
}

/// A target that runs a closure: for cold paths and tests (it allocates).
internal final class _ClosureTarget: RingOperationTarget {
    private let body: (Int32, CompletionFlags) -> Void

    internal init(_ body: @escaping (Int32, CompletionFlags) -> Void) {
        self.body = body
    }

    internal func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.body(result, flags)
    }
}
