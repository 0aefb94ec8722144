//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring as a Swift concurrency serial executor.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A ring as a `SerialExecutor`: an actor whose `unownedExecutor` is this one runs on the
/// ring thread, its jobs in the order they were enqueued, inside the loop turn. Get it from
/// ``RingLoop/serialExecutor``.
///
///     actor Session {
///         let ring: RingLoop
///         let channel: IOChannel   // on `ring`: its awaits complete with no hop
///         nonisolated var unownedExecutor: UnownedSerialExecutor {
///             self.ring.serialExecutor.asUnownedSerialExecutor()
///         }
///     }
///
/// Keep the ring (or this executor) alive as long as such an actor exists: an
/// `UnownedSerialExecutor` does not retain its executor.
public final class RingSerialExecutor: SerialExecutor {
    internal let core: _RingCore

    internal init(core: _RingCore) {
        self.core = core
    }

    /// Runs `job` on the ring thread, after the jobs enqueued before it. Any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        self.core.enqueue(.serialJob(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether the caller runs on this executor: on the ring thread (or, after the ring shut
    /// down, on the queue that runs this executor's jobs since).
    public func isIsolatingCurrentContext() -> Bool? {
        self.core.isRunningSerialExecutorJobs
    }

    /// Stops the program unless the caller runs on this executor.
    public func checkIsolated() {
        precondition(
            self.core.isRunningSerialExecutorJobs,
            "RingIO: expected to run on the ring's serial executor (the ring's thread)"
        )
    }
}
