//===----------------------------------------------------------------------===//
// RingIO — event sources: a timer.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A timer source: fires at a deadline, once or repeatedly — `DispatchSourceTimer`.
///
/// Make one with ``IOSource/makeTimerSource(clock:queue:ring:)``, set it with
/// ``schedule(after:repeating:leeway:)``, and resume it (in either order).
///
///     let timer = IOSource.makeTimerSource(queue: ring)
///     timer.schedule(after: .milliseconds(500), repeating: .seconds(1))
///     timer.setEventHandler { print("fired \(timer.data) time(s)") }
///     timer.resume()
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceTimer: IOSource, @unchecked Sendable {
    /// Sets the timer: first fire after `delay`, then every `interval` (or once when `nil`).
    /// Replaces an earlier schedule, and drops the fires of the earlier one not yet delivered.
    ///
    /// `DispatchSourceTimer`'s `schedule(deadline:repeating:leeway:)` with a delay from now
    /// instead of a deadline; the clock is the one the timer was made with. `leeway` is
    /// accepted for `DispatchSource` compatibility: the ring's timers fire on time, well within
    /// any leeway. A monotonic timer is a deadline in its ring's timer queue (no syscall to
    /// schedule, re-arm or cancel it); a wall-clock timer's first fire is a kernel timeout on
    /// `CLOCK_REALTIME` of its own, so that it follows changes of the clock, and its
    /// repetitions are monotonic. (On the readiness engine, that first deadline is converted to
    /// the monotonic clock when it is armed, and does not follow later changes of the clock.)
    ///
    /// - Parameters:
    ///   - delay: How long from now until the first fire.
    ///   - interval: The time between fires after the first; `nil` for a one-shot timer.
    ///   - leeway: How late a fire may come; see above.
    /// - Precondition: `delay`, `interval` and `leeway` are not negative and `interval` is not
    ///   zero.
    public func schedule(after delay: Duration, repeating interval: Duration? = nil, leeway: Duration = .zero) {
        precondition(delay >= .zero && leeway >= .zero, "IOSourceTimer.schedule: negative delay or leeway")
        precondition(interval.map { $0 > .zero } ?? true, "IOSourceTimer.schedule: the interval must be positive")
        self.core.schedule(delay: delay, interval: interval)
    }

    /// The times the timer fired since the last event; read it inside the event handler.
    ///
    /// More than 1 when fires came while the handler was queued or running, or the timer was
    /// suspended.
    public var data: UInt {
        self.rawData
    }
}
