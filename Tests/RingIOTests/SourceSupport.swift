//===----------------------------------------------------------------------===//
// RingIO — event source test support: sources on a test's queue, a recorder of handler calls
// that checks the source rules, threads, signals and child processes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Sources on a test's queue

extension ChannelContext {
    /// The ring a source is given: the context's own with a dispatch queue; none on the ring,
    /// which then drives the source itself.
    var sourceRing: RingLoop? {
        switch self.kind {
        case .dispatch: self.ring
        case .ring: nil
        }
    }

    func timerSource(clock: IOSource.Clock = .monotonic) -> IOSourceTimer {
        IOSource.makeTimerSource(clock: clock, queue: self.queue, ring: self.sourceRing)
    }

    func signalSource(_ signal: CInt) -> IOSourceSignal {
        IOSource.makeSignalSource(signal: signal, queue: self.queue, ring: self.sourceRing)
    }

    func readSource(_ fd: CInt) -> IOSourceRead {
        IOSource.makeReadSource(fileDescriptor: fd, queue: self.queue, ring: self.sourceRing)
    }

    func writeSource(_ fd: CInt) -> IOSourceWrite {
        IOSource.makeWriteSource(fileDescriptor: fd, queue: self.queue, ring: self.sourceRing)
    }

    func processSource(_ pid: pid_t) throws(Errno) -> IOSourceProcess {
        try IOSource.makeProcessSource(identifier: pid, queue: self.queue, ring: self.sourceRing)
    }

    func userDataAddSource() -> IOSourceUserDataAdd {
        IOSource.makeUserDataAddSource(queue: self.queue, ring: self.sourceRing)
    }

    func userDataOrSource() -> IOSourceUserDataOr {
        IOSource.makeUserDataOrSource(queue: self.queue, ring: self.sourceRing)
    }

    /// `source` with a recorder attached (``sourceLog(holdMicroseconds:onEvent:)``).
    func recorded<Source: RecordedSource>(
        _ source: Source,
        holdMicroseconds: UInt32 = 200
    ) -> (Source, SourceLog) {
        let log = self.sourceLog(holdMicroseconds: holdMicroseconds)
        log.attach(to: source)
        return (source, log)
    }

    /// A recorder that checks its handlers run on `queue`.
    func sourceLog(holdMicroseconds: UInt32 = 200, onEvent: (@Sendable (UInt) -> Void)? = nil) -> SourceLog {
        SourceLog(
            onQueue: { self.isOnQueue },
            barrier: self.handlerBarrier,
            holdMicroseconds: holdMicroseconds,
            onEvent: onEvent
        )
    }
}

// MARK: - Recording handler calls

/// A source whose event data a ``SourceLog`` records, as a number: each kind's `data`.
protocol RecordedSource: IOSource {
    var recordedData: UInt { get }
}

extension IOSourceTimer: RecordedSource {
    var recordedData: UInt { self.data }
}

extension IOSourceSignal: RecordedSource {
    var recordedData: UInt { self.data }
}

extension IOSourceRead: RecordedSource {
    var recordedData: UInt { self.data }
}

extension IOSourceWrite: RecordedSource {
    var recordedData: UInt { self.data }
}

/// The raw value of the typed event (`ProcessEvent.exit` is 0x8000_0000).
extension IOSourceProcess: RecordedSource {
    var recordedData: UInt { self.data.rawValue }
}

extension IOSourceUserDataAdd: RecordedSource {
    var recordedData: UInt { self.data }
}

extension IOSourceUserDataOr: RecordedSource {
    var recordedData: UInt { self.data }
}

/// Records the calls of a source's event, cancel and registration handlers, and what breaks
/// the source rules: overlapping event handlers, an event after the cancel handler, a cancel
/// handler while an event handler runs or more than once, a registration handler after an
/// event or more than once, a handler off the expected queue, a handler run inside the call
/// that caused it.
final class SourceLog: Sendable {
    /// One call of the event handler.
    struct Event: Sendable, CustomStringConvertible {
        /// `data` as read inside the handler.
        var data: UInt
        var started: ContinuousClock.Instant
        /// CLOCK_REALTIME when the handler started.
        var wallClock: Duration
        var ended: ContinuousClock.Instant?

        var description: String { "\(self.data)" }
    }

    private struct State {
        var events: [Event] = []
        var registrations: [ContinuousClock.Instant] = []
        var cancellations: [ContinuousClock.Instant] = []
        var problems: [String] = []
        var inside = false
    }

    private let state = _Lock(State())
    private let submitter = SubmittingThread()
    private let onQueue: (@Sendable () -> Bool)?
    private let holdMicroseconds: UInt32
    private let onEvent: (@Sendable (UInt) -> Void)?
    private let barrier: HandlerBarrier?

    /// - Parameters:
    ///   - onQueue: Whether a handler runs where it should; nil skips the check.
    ///   - barrier: What ``expectCancelledOnce(sourceLocation:)`` passes before it checks that
    ///     the cancel handler ran once: the source's ring and queue.
    ///   - holdMicroseconds: How long each event handler lasts: long enough for an overlapping
    ///     call to show up.
    ///   - onEvent: Runs inside the event handler, after the event is recorded, with its data.
    init(
        onQueue: (@Sendable () -> Bool)? = nil,
        barrier: HandlerBarrier? = nil,
        holdMicroseconds: UInt32 = 200,
        onEvent: (@Sendable (UInt) -> Void)? = nil
    ) {
        self.onQueue = onQueue
        self.barrier = barrier
        self.holdMicroseconds = holdMicroseconds
        self.onEvent = onEvent
    }

    /// Installs the event, cancel and registration handlers on `source`.
    func attach(to source: some RecordedSource) {
        source.setRegistrationHandler { self.registered() }
        // Weak: the source keeps its handler, the test keeps the source.
        source.setEventHandler { [weak source] in self.event(source) }
        source.setCancelHandler { self.cancelled() }
    }

    /// Runs `body` (a call such as `merge` or `resume`) and notes the thread, so that a handler
    /// called from inside it is caught.
    func submitting(_ body: () -> Void) {
        self.submitter.submitting(body)
    }

    private func checkCaller(_ what: String, _ state: inout State) {
        if self.onQueue.map({ !$0() }) ?? false { state.problems.append("\(what) ran off the source's queue") }
        if self.submitter.isCurrent { state.problems.append("\(what) ran inside the call that caused it") }
    }

    private func event(_ source: (some RecordedSource)?) {
        guard let source else {
            self.state.withLock { $0.problems.append("event handler called after the source was released") }
            return
        }
        let data = source.recordedData
        let started = ContinuousClock.now
        let index = self.state.withLock { state in
            self.checkCaller("event handler", &state)
            if state.inside { state.problems.append("overlapping event handlers (data \(data))") }
            if !state.cancellations.isEmpty { state.problems.append("event (data \(data)) after the cancel handler") }
            state.inside = true
            state.events.append(Event(data: data, started: started, wallClock: wallClockNow(), ended: nil))
            return state.events.count - 1
        }
        holdForOverlap(microseconds: self.holdMicroseconds)
        self.onEvent?(data)
        self.state.withLock { state in
            state.inside = false
            state.events[index].ended = .now
        }
    }

    private func cancelled() {
        self.state.withLock { state in
            self.checkCaller("cancel handler", &state)
            if state.inside { state.problems.append("cancel handler while an event handler runs") }
            if !state.cancellations.isEmpty { state.problems.append("cancel handler called again") }
            state.cancellations.append(.now)
        }
    }

    private func registered() {
        self.state.withLock { state in
            self.checkCaller("registration handler", &state)
            if !state.events.isEmpty { state.problems.append("registration handler after an event") }
            if !state.cancellations.isEmpty { state.problems.append("registration handler after the cancel handler") }
            if !state.registrations.isEmpty { state.problems.append("registration handler called again") }
            state.registrations.append(.now)
        }
    }

    // MARK: What was recorded

    var events: [Event] { self.state.withLock { $0.events } }
    /// The data of each event, in order.
    var data: [UInt] { self.events.map(\.data) }
    var count: Int { self.state.withLock { $0.events.count } }
    /// The sum of all data delivered.
    var total: UInt { self.state.withLock { $0.events.reduce(0) { $0 &+ $1.data } } }
    /// The union of all data delivered.
    var union: UInt { self.state.withLock { $0.events.reduce(0) { $0 | $1.data } } }
    var registrations: [ContinuousClock.Instant] { self.state.withLock { $0.registrations } }
    var cancellations: [ContinuousClock.Instant] { self.state.withLock { $0.cancellations } }
    var problems: [String] { self.state.withLock { $0.problems } }

    /// The events whose handler started after `instant`.
    func events(after instant: ContinuousClock.Instant) -> [Event] {
        self.events.filter { $0.started > instant }
    }

    // MARK: Waiting, bounded

    func waitForEvents(_ count: Int, seconds: Double = 5) -> Bool {
        eventually(seconds: seconds) { self.count >= count }
    }

    func waitForTotal(_ total: UInt, seconds: Double = 5) -> Bool {
        eventually(seconds: seconds) { self.total >= total }
    }

    func waitForRegistration(seconds: Double = 5) -> Bool {
        eventually(seconds: seconds) { !self.registrations.isEmpty }
    }

    func waitForCancel(seconds: Double = 5) -> Bool {
        eventually(seconds: seconds) { !self.cancellations.isEmpty }
    }

    /// Waits for the cancel handler, then checks it ran exactly once and nothing broke the rules.
    func expectCancelledOnce(sourceLocation: SourceLocation = #_sourceLocation) {
        guard self.waitForCancel() else {
            Issue.record(
                "the cancel handler did not run within 5 s; events: \(self.data)",
                sourceLocation: sourceLocation
            )
            return
        }
        // A second call would have come before the barrier passed.
        self.barrier?.pass(sourceLocation: sourceLocation)
        #expect(
            self.cancellations.count == 1,
            "cancel handler calls: \(self.cancellations.count)",
            sourceLocation: sourceLocation
        )
        self.expectWellFormed(sourceLocation: sourceLocation)
    }

    /// Checks that no rule was broken so far.
    func expectWellFormed(sourceLocation: SourceLocation = #_sourceLocation) {
        let problems = self.problems
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }
}

/// Cancels `source` and waits (bounded) for its cancel handler: the end of every source test.
func cancel(_ source: IOSource, _ log: SourceLog, sourceLocation: SourceLocation = #_sourceLocation) {
    source.cancel()
    log.expectCancelledOnce(sourceLocation: sourceLocation)
}
