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
/// Each kind is a type of its own, made by a factory named as `DispatchSource`'s, so that a
/// call that does not fit the kind does not compile:
///
/// | factory | type | what it adds |
/// |---|---|---|
/// | ``makeTimerSource(clock:queue:ring:)`` | ``IOSourceTimer`` | ``IOSourceTimer/schedule(after:repeating:leeway:)`` |
/// | ``makeSignalSource(signal:queue:ring:)`` | ``IOSourceSignal`` | |
/// | ``makeReadSource(fileDescriptor:queue:ring:)`` | ``IOSourceRead`` | |
/// | ``makeWriteSource(fileDescriptor:queue:ring:)`` | ``IOSourceWrite`` | |
/// | ``makeProcessSource(identifier:queue:ring:)`` | ``IOSourceProcess`` | a typed event, ``ProcessEvent`` |
/// | ``makeUserDataAddSource(queue:ring:)`` | ``IOSourceUserDataAdd`` | ``IOSourceUserDataAdd/add(data:)`` |
/// | ``makeUserDataOrSource(queue:ring:)`` | ``IOSourceUserDataOr`` | ``IOSourceUserDataOr/or(data:)`` |
///
/// What all kinds share — the handlers and the life below — is here, on `IOSource`; each kind
/// has its own `data`, the merged value of the event being handled.
///
///     let timer = IOSource.makeTimerSource(queue: ring)
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
/// handler is queued or running, or while the source is suspended, coalesce into one, and the
/// kind's `data` (read it inside the handler) holds the merged value.
///
/// A source on a descriptor never closes it; close it in the cancel handler.
///
/// **Queue and ring.** Every factory takes the queue the handlers run on and, optionally, the
/// ring that drives the source: by default the queue itself when it is a ``RingLoop``, else
/// the next ring of ``RingLoopGroup/shared``. Sources work alike on both engines: where
/// io_uring is refused, the rings run on the readiness engine (``RingLoop/Backend``) and
/// sources fire as usual. Only a source that takes a ring of ``RingLoopGroup/shared`` when
/// that group cannot be set up at all (it throws a ``RingSetupError``: io_uring forced where it
/// is refused, a resource limit) never fires; cancelling it still runs its cancel handler.
// @unchecked: a class with subclasses (the kinds, all in this module) cannot be checked
// Sendable. Its only state is `core`, immutable and itself safe from any thread (its own
// comment says how); the kinds add immutable values only.
public class IOSource: @unchecked Sendable {
    /// The clock of a timer.
    public enum Clock: Sendable, Hashable {
        /// Does not jump and does not advance while the system is suspended.
        case monotonic
        /// The wall clock: follows clock changes.
        case wallClock
    }

    /// The events of a process source: ``IOSourceProcess/data``.
    ///
    /// The raw values are `DispatchSource.ProcessEvent`'s.
    public struct ProcessEvent: OptionSet, Sendable, Hashable {
        /// The bits; `exit` is `0x8000_0000`, as in `DispatchSource.ProcessEvent`.
        public let rawValue: UInt

        /// An event of the raw value `rawValue`.
        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// The process exited.
        public static let exit = ProcessEvent(rawValue: 0x8000_0000)
    }

    internal let core: _SourceCore

    internal init(kind: _SourceCore.Kind, queue: any IOQueue, ring: RingLoop?) {
        self.core = _SourceCore(kind: kind, queue: queue, ring: ring)
    }

    deinit {
        // A source that is dropped without cancel stops (its handlers may hold it otherwise).
        self.core.requestCancel()
    }

    // MARK: Making sources

    /// A timer; set it with ``IOSourceTimer/schedule(after:repeating:leeway:)``.
    ///
    /// - Parameters:
    ///   - clock: The clock its deadlines are measured on.
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    public static func makeTimerSource(
        clock: Clock = .monotonic,
        queue: some IOQueue,
        ring: RingLoop? = nil
    ) -> IOSourceTimer {
        IOSourceTimer(kind: .timer(clock), queue: queue, ring: ring)
    }

    /// Counts deliveries of `signal` to the process.
    ///
    /// While the source is active, RingIO's own handler catches the signal for the whole
    /// process: see ``IOSourceSignal``.
    ///
    /// - Parameters:
    ///   - signal: The signal number, such as `SIGINT`.
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    /// - Precondition: `signal` is a signal that can be caught (not SIGKILL or SIGSTOP).
    public static func makeSignalSource(signal: CInt, queue: some IOQueue, ring: RingLoop? = nil) -> IOSourceSignal {
        precondition(
            signal > 0 && signal < _SignalRouter.signalLimit && signal != SIGKILL && signal != SIGSTOP,
            "IOSource.makeSignalSource(signal: \(signal)): not a signal that can be caught"
        )
        return IOSourceSignal(signal: signal, queue: queue, ring: ring)
    }

    /// Fires while `fileDescriptor` has data to read (or EOF, or an error, or — on a listening
    /// socket — a connection to accept).
    ///
    /// - Parameters:
    ///   - fileDescriptor: The descriptor to watch; the source never closes it.
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    public static func makeReadSource(
        fileDescriptor: CInt,
        queue: some IOQueue,
        ring: RingLoop? = nil
    ) -> IOSourceRead {
        IOSourceRead(fileDescriptor: fileDescriptor, queue: queue, ring: ring)
    }

    /// Fires while `fileDescriptor` can take data.
    ///
    /// - Parameters:
    ///   - fileDescriptor: The descriptor to watch; the source never closes it.
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    public static func makeWriteSource(
        fileDescriptor: CInt,
        queue: some IOQueue,
        ring: RingLoop? = nil
    ) -> IOSourceWrite {
        IOSourceWrite(fileDescriptor: fileDescriptor, queue: queue, ring: ring)
    }

    /// Fires once, with ``ProcessEvent/exit``, when process `identifier` (a child or any
    /// process this one may signal) exits. Reap a child with `waitpid` in the handler.
    ///
    /// Exit is the one event a process source reports (it watches a pidfd), so there is no
    /// event mask to give.
    ///
    /// - Parameters:
    ///   - identifier: The process ID.
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    /// - Throws: `Errno.noSuchProcess` when there is no such process; the errno of
    ///   `pidfd_open` otherwise.
    public static func makeProcessSource(
        identifier: pid_t,
        queue: some IOQueue,
        ring: RingLoop? = nil
    ) throws(Errno) -> IOSourceProcess {
        let pidfd = try _PidFD.open(identifier)
        return IOSourceProcess(identifier: identifier, pidfd: pidfd, queue: queue, ring: ring)
    }

    /// A custom source whose ``IOSourceUserDataAdd/add(data:)`` adds values.
    ///
    /// - Parameters:
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    public static func makeUserDataAddSource(queue: some IOQueue, ring: RingLoop? = nil) -> IOSourceUserDataAdd {
        IOSourceUserDataAdd(kind: .add, queue: queue, ring: ring)
    }

    /// A custom source whose ``IOSourceUserDataOr/or(data:)`` ors values.
    ///
    /// - Parameters:
    ///   - queue: Where its handlers run.
    ///   - ring: The ring that drives it (see "Queue and ring" above).
    public static func makeUserDataOrSource(queue: some IOQueue, ring: RingLoop? = nil) -> IOSourceUserDataOr {
        IOSourceUserDataOr(kind: .or, queue: queue, ring: ring)
    }

    // MARK: Handlers

    /// Sets the handler run for each (coalesced) event.
    public final func setEventHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.event = handler }
    }

    /// Sets the handler run once after cancellation, after the last event handler.
    public final func setCancelHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.cancel = handler }
    }

    /// Sets the handler run once when the source is first resumed, before any event.
    public final func setRegistrationHandler(_ handler: (@Sendable () -> Void)?) {
        self.core.handlers.withLock { $0.registration = handler }
    }

    // MARK: Life

    /// Undoes one ``suspend()`` (or the suspension the source is created with).
    ///
    /// - Precondition: Not resumed more often than suspended.
    public final func resume() {
        self.core.resume()
    }

    /// Stops delivering events until the matching ``resume()``; events meanwhile coalesce.
    public final func suspend() {
        self.core.suspend()
    }

    /// Cancels the source, asynchronously: no event handler starts after the cancel handler,
    /// which runs once, after the last event handler has returned.
    public final func cancel() {
        self.core.requestCancel()
    }

    /// Whether ``cancel()`` was called.
    public final var isCancelled: Bool {
        self.core.cancelRequested.load(ordering: .acquiring)
    }

    /// The merged value of the event being handled, as the core holds it.
    @inline(__always)
    internal final var rawData: UInt {
        self.core.currentData.load(ordering: .acquiring)
    }
}
