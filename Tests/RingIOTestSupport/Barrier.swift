//===----------------------------------------------------------------------===//
// RingIO — test support: waits on events instead of the clock — the ring barrier, and the
// ring's own timers for tests whose subject is time.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

// How a test proves that something did *not* happen: it makes the thing that could have
// caused it happen first (a write to the peer, a merge, a close, a deadline passing), then
// passes a barrier, then checks. A handler that should not have run would have run before the
// barrier passed — so the check can fail — where a pause only makes a wrong call likely to
// show up, and makes every run wait.

/// Waits (bounded) until `ring` has done everything that what happened before this call asks
/// of it (`_RingIOTesting.barrier(on:completion:)`): earlier jobs have run, every completion
/// the kernel had for the ring has been handled, and the handlers they sent to the ring have
/// run. Handlers sent to a DispatchQueue have been sent, not run: wait for the queue as well
/// (``ringBarrier(_:queue:rounds:sourceLocation:)``, ``ChannelContext/barrier(sourceLocation:)``).
///
/// Not on the ring's own thread (it would wait for itself). Records an issue and returns false
/// when the barrier does not pass within 10 s (scaled by ``testTimeScale``).
/// A ring that has shut down runs nothing more: the barrier passes at once (and one that shuts
/// down meanwhile, once its thread has exited).
@discardableResult
package func ringBarrier(_ ring: RingLoop, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    precondition(!ring.isCurrentThread, "ringBarrier(_:) on the ring's own thread")
    let passed = DispatchSemaphore(value: 0)
    _RingIOTesting.barrier(on: ring) { passed.signal() }
    let deadline = DispatchTime.now() + scaled(10)
    while passed.wait(timeout: min(.now() + .milliseconds(10), deadline)) != .success {
        // Gone: it runs nothing more, and the barrier's jobs were discarded.
        if _RingIOTesting.hasExited(ring) { return true }
        if DispatchTime.now() >= deadline {
            Issue.record("the ring barrier did not pass within \(scaled(10)) s", sourceLocation: sourceLocation)
            return false
        }
    }
    return true
}

/// As ``ringBarrier(_:sourceLocation:)``, without blocking a thread of the caller's executor
/// (the wait runs on a thread of its own).
@discardableResult
package func ringBarrier(_ ring: RingLoop, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
    await onThread { ringBarrier(ring, sourceLocation: sourceLocation) }
}

/// A ring barrier, then every block enqueued on `queue` so far, `rounds` times: a handler that
/// returns on the queue may hand the ring more to deliver (a source's next event, a channel's
/// next operation), and each round follows that one hop further.
@discardableResult
package func ringBarrier(
    _ ring: RingLoop,
    queue: DispatchQueue?,
    rounds: Int = 2,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    for _ in 0..<rounds {
        guard ringBarrier(ring, sourceLocation: sourceLocation) else { return false }
        queue?.sync(flags: .barrier) {}
    }
    return true
}

extension ChannelContext {
    /// Waits until everything that happened before this call has reached the handlers on the
    /// context's queue (``ringBarrier(_:queue:rounds:sourceLocation:)``, two rounds): what a
    /// test passes before it checks that a handler did *not* run.
    @discardableResult
    package func barrier(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        ringBarrier(self.ring, queue: self.dispatchQueue, sourceLocation: sourceLocation)
    }
}

/// Waits (bounded) until `ring`'s timers have passed `duration` from now: a timer of the
/// ring's own, armed for then, has fired — after every timer of the ring due no later (they
/// fire in deadline order: a source timer's fires due meanwhile, a channel's interval) — and a
/// ring barrier has passed after it.
///
/// For tests whose subject is time (a timer that must not fire while suspended, fires that
/// coalesce): the wait is for the ring's clock, the clock those timers run on, not for a sleep
/// of the test's that a loaded machine can make end before the ring got there.
@discardableResult
package func waitForRingTimers(
    _ ring: RingLoop,
    after duration: Duration,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    let (seconds, attoseconds) = duration.components
    let deadline = _RingIOTesting.monotonicNanoseconds() + seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    let fired = DispatchSemaphore(value: 0)
    ring.enqueue {
        _ = _RingIOTesting.armTimer(on: ring, at: deadline) { fired.signal() }
    }
    guard wait(fired, seconds: 10 + Double(seconds)) else {
        Issue.record("the ring's timer for \(duration) from now did not fire", sourceLocation: sourceLocation)
        return false
    }
    return ringBarrier(ring, sourceLocation: sourceLocation)
}

extension ChannelContext {
    /// Waits until the ring's timers have passed `duration` from the moment the work already
    /// asked of the ring has been done (a barrier first, so that what the test just scheduled
    /// is armed), then until their handlers have run (``waitForRingTimers(_:after:sourceLocation:)``).
    @discardableResult
    package func waitForTimers(after duration: Duration, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        self.barrier(sourceLocation: sourceLocation)
            && waitForRingTimers(self.ring, after: duration, sourceLocation: sourceLocation)
            && self.barrier(sourceLocation: sourceLocation)
    }
}
