//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring's timers and the kernel timeouts behind them.
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

extension _RingCore {
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
    // Inlined by hand: once its file was split, the optimizer stopped (+45 instructions per
    // echo round trip).
    @inline(__always)
    func prepareTimerTimeout() {
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
    func timerTimeoutCompleted(_ timeout: _TimerTimeout) {
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
}

/// A kernel timeout the ring arms for its earliest timer (see `_RingCore.prepareTimerTimeout`);
/// reused once it completed, with its time storage.
internal final class _TimerTimeout: RingOperationTarget {
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
