//===----------------------------------------------------------------------===//
// RingIO — event sources: dispatch sources on the rings.
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

/// An event source: timers, signals, descriptor readiness, process exit and custom coalesced
/// events, driven by a ring — `DispatchSource`'s semantics.
///
///     let timer = IOSource.timer(queue: ring)
///     timer.schedule(after: .seconds(1), repeating: .seconds(1))
///     timer.setEventHandler { print("fired \(timer.data) time(s)") }
///     timer.resume()
///
/// **Life.** A source is created suspended: set its handlers, then ``resume()``. ``suspend()``
/// and ``resume()`` are counted and must balance; resuming more than suspended is a
/// precondition failure. ``cancel()`` is asynchronous and final: the cancel handler runs once,
/// after the last event handler has returned, and no event follows it. A suspended source runs
/// its cancel handler when it is resumed.
///
/// **Events.** The event handler runs on the source's queue (a `DispatchQueue`, or a
/// ``RingLoop`` — on its thread, no hop), never twice at once. Events that arrive while the
/// handler is queued or running, or while the source is suspended, coalesce into one, and
/// ``data`` (read it inside the handler) holds the merged value:
///
/// | source | ``data`` |
/// |---|---|
/// | timer | times it fired since the last event |
/// | signal | signals received since the last event |
/// | readable | an estimate of the bytes available (level-triggered: fires again while data remains) |
/// | writable | an estimate of the space available |
/// | process exit | ``processExited`` |
/// | `dataAdd` / `dataOr` | the sum / the bitwise or of the values merged |
///
/// A source on a descriptor never closes it; close it in the cancel handler.
///
/// **Signals.** While a signal source is active, RingIO's own handler catches the signal for
/// the whole process (whatever thread it lands on) and counts it; the disposition the process
/// had before is restored when the last source for that signal is cancelled. (A signalfd
/// sees only signals blocked in every thread, which a library cannot arrange once threads
/// exist; a handler works whatever the threads' masks.) The source's ring thread unblocks the
/// signal, so that it is delivered even in a process started with it blocked.
public final class IOSource: Sendable {
    /// The clock of a timer.
    public enum Clock: Sendable, Hashable {
        /// Does not jump and does not advance while the system is suspended.
        case monotonic
        /// The wall clock: follows clock changes.
        case wallClock
    }

    /// ``data`` of a process-exit event.
    public static let processExited: UInt = 0x8000_0000

    internal let core: _SourceCore

    private init(kind: _SourceCore.Kind, queue: any IOQueue, ring: RingLoop?) {
        self.core = _SourceCore(kind: kind, queue: queue, ring: ring)
    }

    deinit {
        // A source that is dropped without cancel stops (its handlers may hold it otherwise).
        self.core.requestCancel()
    }

    // MARK: Making sources

    /// A timer; set it with ``schedule(after:repeating:leeway:)``.
    public static func timer(clock: Clock = .monotonic, queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        IOSource(kind: .timer(clock), queue: queue, ring: ring)
    }

    /// Counts deliveries of `signal` to the process.
    ///
    /// - Precondition: `signal` is a signal that can be caught (not SIGKILL or SIGSTOP).
    public static func signal(_ signal: CInt, queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        precondition(
            signal > 0 && signal < _SignalRouter.signalLimit && signal != SIGKILL && signal != SIGSTOP,
            "IOSource.signal(\(signal)): not a signal that can be caught"
        )
        return IOSource(kind: .signal(signal), queue: queue, ring: ring)
    }

    /// Fires while `fileDescriptor` has data to read (or EOF, or an error, or — on a listening
    /// socket — a connection to accept).
    public static func readable(fileDescriptor: CInt, queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        IOSource(kind: .readable(fileDescriptor), queue: queue, ring: ring)
    }

    /// Fires while `fileDescriptor` can take data.
    public static func writable(fileDescriptor: CInt, queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        IOSource(kind: .writable(fileDescriptor), queue: queue, ring: ring)
    }

    /// Fires once when process `pid` (a child or any process this one may signal) exits.
    /// Reap a child with `waitpid` in the handler.
    ///
    /// - Throws: `Errno.noSuchProcess` when there is no such process; the errno of
    ///   `pidfd_open` otherwise.
    public static func processExit(pid: pid_t, queue: some IOQueue, ring: RingLoop? = nil) throws(Errno) -> IOSource {
        let pidfd = try _PidFD.open(pid)
        return IOSource(kind: .processExit(pidfd), queue: queue, ring: ring)
    }

    /// A custom source whose ``merge(_:)`` adds values.
    public static func dataAdd(queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        IOSource(kind: .add, queue: queue, ring: ring)
    }

    /// A custom source whose ``merge(_:)`` ors values.
    public static func dataOr(queue: some IOQueue, ring: RingLoop? = nil) -> IOSource {
        IOSource(kind: .or, queue: queue, ring: ring)
    }

    // MARK: Configuring

    /// Sets a timer: first fire after `delay`, then every `interval` (or once when `nil`).
    /// Replaces an earlier schedule.
    ///
    /// `leeway` is accepted for `DispatchSource` compatibility: the ring's timers fire on time,
    /// well within any leeway. A monotonic timer is a deadline in its ring's timer queue (no
    /// syscall to schedule, re-arm or cancel it); a wall-clock timer's first fire is an io_uring
    /// timeout on `CLOCK_REALTIME` of its own, so that it follows changes of the clock, and its
    /// repetitions are monotonic.
    ///
    /// - Precondition: A timer source; `delay`, `interval` and `leeway` are not negative and
    ///   `interval` is not zero.
    public func schedule(after delay: Duration, repeating interval: Duration? = nil, leeway: Duration = .zero) {
        guard case .timer = self.core.kind else {
            preconditionFailure("IOSource.schedule: not a timer source")
        }
        precondition(delay >= .zero && leeway >= .zero, "IOSource.schedule: negative delay or leeway")
        precondition(interval.map { $0 > .zero } ?? true, "IOSource.schedule: the interval must be positive")
        self.core.schedule(delay: delay, interval: interval)
    }

    /// Merges `value` into a custom source's pending data (added or ored) and delivers an
    /// event. Any thread; lock-free. A value of 0 has no effect.
    ///
    /// - Precondition: A `dataAdd` or `dataOr` source.
    public func merge(_ value: UInt) {
        self.core.merge(value)
    }

    /// The merged value of the event being handled; read it inside the event handler.
    public var data: UInt {
        self.core.currentData.load(ordering: .acquiring)
    }

    /// Sets the handler run for each (coalesced) event.
    public func setEventHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.event = handler }
    }

    /// Sets the handler run once after cancellation, after the last event handler.
    public func setCancelHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.cancel = handler }
    }

    /// Sets the handler run once when the source is first resumed, before any event.
    public func setRegistrationHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.registration = handler }
    }

    // MARK: Life

    /// Undoes one ``suspend()`` (or the suspension the source is created with).
    ///
    /// - Precondition: Not resumed more often than suspended.
    public func resume() {
        self.core.resume()
    }

    /// Stops delivering events until the matching ``resume()``; events meanwhile coalesce.
    public func suspend() {
        self.core.suspend()
    }

    /// Cancels the source, asynchronously: no event handler starts after the cancel handler,
    /// which runs once, after the last event handler has returned.
    public func cancel() {
        self.core.requestCancel()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool {
        self.core.cancelRequested.load(ordering: .acquiring)
    }
}
