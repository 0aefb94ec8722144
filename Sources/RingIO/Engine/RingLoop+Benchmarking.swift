//===----------------------------------------------------------------------===//
// RingIO — the engine: no-op round trips for the benchmarks (SPI, not public API).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// The Benchmarks package measures the engine's own cost — a loop turn, a submission, a
// completion, a hand-off between threads — with IORING_OP_NOP, which does no I/O. The submit API
// is `package`-level and the Benchmarks package is another package, so these two entry points
// are `public` behind `@_spi(Benchmarking)`: only code that writes
// `@_spi(Benchmarking) import RingIO` sees them, and they are not part of the API.
//
// Invariants (both entry points):
//
// - The ring thread is the only thread that submits: other threads reach it with `enqueue`.
// - One completion target per `_nopRoundTrips` call, or per probe, is the target of every no-op
//   submitted for it. The engine's slot holds the target strongly while a no-op is in flight, so
//   it lives at least until its last completion. Nothing here allocates per no-op; what a
//   benchmark counts per operation is the engine's own cost (the inbox node of a cross-thread
//   `enqueue`, the hand-off to a DispatchQueue).
// - A chain has exactly one no-op in flight; its count is touched only on the ring thread.
// - A no-op cannot fail; a negative result is a broken engine and stops the process.

extension RingLoop {
    /// Runs `count` no-ops one after another on the ring thread, each submitted by the completion
    /// of the one before, then runs `completion` on the ring thread.
    ///
    /// One no-op is in flight at a time, so the rate is that of the ring's loop: one
    /// submit-and-wait per turn, one completion reaped, one handler called. Call from any thread.
    ///
    ///     let done = DispatchSemaphore(value: 0)
    ///     ring._nopRoundTrips(1_000) { done.signal() }
    ///     done.wait()
    ///
    /// - Parameters:
    ///   - count: How many no-ops to run; at least 1.
    ///   - completion: Runs once, on the ring thread, after the last no-op completed.
    /// - Complexity: One allocation per call (the chain's target) plus the `enqueue`; none per no-op.
    /// - Warning: Benchmarking SPI. Shutting the ring down while a chain runs waits for the chain
    ///   to finish (it does not stop early).
    @_spi(Benchmarking)
    public func _nopRoundTrips(_ count: Int, completion: @escaping @Sendable () -> Void) {
        precondition(count > 0, "_nopRoundTrips needs at least one no-op")
        let chain = _NopChain(core: self.core, count: count, completion: completion)
        self.enqueue { chain.submitNext() }
    }

    /// Makes a probe whose ``_NopProbe/submit()`` runs one no-op on this ring and delivers its
    /// completion to `queue`: a round trip from the calling thread to the ring and back.
    ///
    ///     let done = DispatchSemaphore(value: 0)
    ///     let probe = ring._nopProbe(deliveringOn: DispatchQueue(label: "q")) { done.signal() }
    ///     for _ in 0..<1_000 {
    ///         probe.submit()
    ///         done.wait()
    ///     }
    ///
    /// - Parameters:
    ///   - queue: Where `completion` runs: this ring (its thread, no hop), another ring, or a
    ///     `DispatchQueue` (through the engine's per-turn, per-queue batching).
    ///   - completion: Runs once per ``_NopProbe/submit()``, on `queue`.
    @_spi(Benchmarking)
    public func _nopProbe(
        deliveringOn queue: some IOQueue,
        completion: @escaping @Sendable () -> Void
    ) -> _NopProbe {
        _NopProbe(core: self.core, queue: queue, completion: completion)
    }
}

// MARK: - A chain of no-ops on the ring thread

/// The target of every no-op of one ``RingLoop/_nopRoundTrips(_:completion:)`` call.
private final class _NopChain: RingOperationTarget, @unchecked Sendable {
    // @unchecked: `remaining` is touched only on the ring thread (`submitNext` runs from a job
    // enqueued on the ring, then from this target's completions); the rest is immutable.

    // MARK: Immutable after init
    private let core: _RingCore
    private let completion: @Sendable () -> Void

    // MARK: Ring thread only
    /// No-ops still to submit.
    private var remaining: Int

    init(core: _RingCore, count: Int, completion: @escaping @Sendable () -> Void) {
        self.core = core
        self.remaining = count
        self.completion = completion
    }

    /// Submits the next no-op. Called only while no no-op of this chain is in flight.
    func submitNext() {
        self.core.assertOnRingThread()
        self.remaining -= 1
        self.core.submit(.nop, target: self)
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.assertOnRingThread()
        precondition(result >= 0, "RingIO: a no-op failed with \(result)")
        if self.remaining > 0 {
            self.submitNext()
        } else {
            self.completion()
        }
    }
}

// MARK: - One no-op from any thread, delivered to a queue

/// A reusable single no-op: ``submit()`` hands a submission to the ring thread, and the
/// completion runs the probe's handler on the probe's queue. Made by
/// ``RingLoop/_nopProbe(deliveringOn:completion:)``.
///
/// Every ``submit()`` reuses the same job closure and the same completion target, so the only
/// allocations of a round trip are the engine's.
@_spi(Benchmarking)
public final class _NopProbe: Sendable {
    // MARK: Immutable after init
    private let core: _RingCore
    /// The job `submit()` enqueues, made once: a closure literal per call could allocate a context.
    private let job: @Sendable () -> Void

    fileprivate init(core: _RingCore, queue: some IOQueue, completion: @escaping @Sendable () -> Void) {
        let target = _NopProbeTarget(core: core, queue: queue, completion: completion)
        self.core = core
        self.job = { core.submit(.nop, target: target) }
    }

    /// Submits one no-op from any thread (through the ring's inbox, waking the ring if it
    /// sleeps); its completion runs the probe's handler once, on the probe's queue.
    /// Calls may overlap: each gets its own completion.
    @_spi(Benchmarking)
    public func submit() {
        self.core.enqueue(self.job)
    }
}

/// The target of every no-op of one ``_NopProbe``: hands each completion to the probe's queue.
private final class _NopProbeTarget: RingOperationTarget, Sendable {
    // MARK: Immutable after init
    private let core: _RingCore
    private let queue: any IOQueue
    private let completion: @Sendable () -> Void

    init(core: _RingCore, queue: some IOQueue, completion: @escaping @Sendable () -> Void) {
        self.core = core
        self.queue = queue
        self.completion = completion
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        precondition(result >= 0, "RingIO: a no-op failed with \(result)")
        self.core.deliver(on: self.queue, self.completion)
    }
}
