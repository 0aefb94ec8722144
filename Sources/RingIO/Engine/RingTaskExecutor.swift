//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring as a Swift concurrency task executor.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A ring as a `TaskExecutor`: tasks that prefer it run their nonisolated code on the ring
/// thread, inside the loop turn, as the ring's handlers do. Get it from
/// ``RingLoop/taskExecutor``.
///
///     let ring = try RingLoop()
///     Task(executorPreference: ring.taskExecutor) {
///         for try await data in channel.reads() {   // channel on `ring`: no hop
///             try await channel.write(data)
///         }
///     }
///
/// A job enqueued from the ring thread itself (a task resumed by a completion, a child task
/// started there) joins the next turn with no syscall; from another thread it costs a
/// lock-free push and at most one wake-up. Jobs take their turn with the ring's completions and
/// handlers: a task that never suspends blocks the ring (see ``RingLoop``).
///
/// A separate type from ``RingSerialExecutor`` on purpose: the runtime takes a slower path
/// for an executor that is both a task executor and a serial executor.
public final class RingTaskExecutor: TaskExecutor {
    internal let core: _RingCore

    internal init(core: _RingCore) {
        self.core = core
    }

    /// Runs `job` on the ring thread. Any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        self.core.enqueue(.taskJob(UnownedJob(job)))
    }

    /// This executor as the runtime's unowned reference to it.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Whether the caller is on the ring thread.
    public var isCurrentThread: Bool {
        self.core.isRingThread
    }
}
