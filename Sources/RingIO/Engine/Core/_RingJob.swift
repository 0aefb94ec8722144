//===----------------------------------------------------------------------===//
// RingIO — the engine: work for a ring and for the queues it delivers to.
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
    /// Work scheduled from another thread that must hear of a ring gone before it ran (a
    /// channel operation: no closure to allocate).
    case scheduled(any _RingScheduled)
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
        case .scheduled, .taskJob, .serialJob: preconditionFailure("RingIO: a ring-only job left its ring")
        }
    }
}

/// Work for the ring from another thread (``_RingJob/scheduled(_:)``): it runs there, or hears
/// that the ring's thread exited before it could.
internal protocol _RingScheduled: AnyObject {
    /// Runs on the ring thread.
    func runScheduled()
    /// The ring's thread exited before running it: its one final word, from the thread that
    /// found out.
    func ringExited()
}

/// An object delivered to a queue as itself (``_RingCore/deliver(_:on:)``): it must be safe to
/// run on that queue, as a `@Sendable` closure would be.
internal protocol _RingRunnable: AnyObject {
    /// Runs on the queue the object was delivered to.
    func runDelivered()
    /// Enqueued on a ring whose thread has exited: it never runs. On the enqueueing thread.
    func discardedByRing()
}

extension _RingRunnable {
    func discardedByRing() {}
}

/// A closure for the ring, and what to do instead when the ring is gone
/// (``_RingCore/enqueue(_:orElse:)``).
internal final class _FallibleJob: _RingRunnable, Sendable {
    let work: @Sendable () -> Void
    let orElse: @Sendable () -> Void

    init(work: @escaping @Sendable () -> Void, orElse: @escaping @Sendable () -> Void) {
        self.work = work
        self.orElse = orElse
    }

    func runDelivered() { self.work() }
    func discardedByRing() { self.orElse() }
}
