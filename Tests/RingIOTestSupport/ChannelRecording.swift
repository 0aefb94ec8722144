//===----------------------------------------------------------------------===//
// RingIO — test support: recorders of handler calls that check the dispatch I/O handler rules.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Recording handler calls

/// One handler call as a test sees it: `bytes` is nil exactly where the handler got nil.
package struct HandlerCall: Sendable, Equatable, CustomStringConvertible {
    package var done: Bool
    package var bytes: [UInt8]?
    package var error: Errno?

    package init(_ done: Bool, _ bytes: [UInt8]?, _ error: Errno? = nil) {
        self.done = done
        self.bytes = bytes
        self.error = error
    }

    package init(_ done: Bool, _ text: String?, _ error: Errno? = nil) {
        self.init(done, text.map { Array($0.utf8) }, error)
    }

    package var description: String {
        let data: String
        if let bytes = self.bytes {
            let shown = bytes.prefix(24)
            let printable = shown.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
            let text = printable ? "\"\(String(decoding: shown, as: UTF8.self))\"" : "\(Array(shown))"
            data = "\(bytes.count) bytes \(text)\(bytes.count > 24 ? "…" : "")"
        } else {
            data = "nil"
        }
        return "(\(self.done), \(data), \(self.error.map { "\($0)" } ?? "nil"))"
    }
}

/// Records every call of one operation's handler, and what breaks the handler protocol:
/// overlapping calls (R32), calls inside the submitting call (D7), calls after the final one
/// (R33), calls off the expected queue, and the nil/empty rules of R35–R42.
package final class OperationLog: Sendable {
    private struct State {
        var calls: [HandlerCall] = []
        var ropes: [ByteRope] = []
        var problems: [String] = []
        var inside = false
    }

    private let state = _Lock(State())
    private let submitter = SubmittingThread()
    private let finished = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?
    private let allowsEmptyIntermediates: Bool
    private let onCall: (@Sendable (HandlerCall) -> Void)?

    /// - Parameters:
    ///   - onQueue: Whether the handler runs where it should; nil skips the check.
    ///   - allowsEmptyIntermediates: Empty non-final deliveries are allowed (strict interval, R52).
    ///   - onCall: Runs inside the handler, after the call is recorded.
    package init(
        onQueue: (@Sendable () -> Bool)? = nil,
        allowsEmptyIntermediates: Bool = false,
        onCall: (@Sendable (HandlerCall) -> Void)? = nil
    ) {
        self.onQueue = onQueue
        self.allowsEmptyIntermediates = allowsEmptyIntermediates
        self.onCall = onCall
    }

    /// Runs `body` (the submitting call) and notes the thread, so that a handler called from
    /// inside it is caught.
    package func submitting(_ body: () -> Void) {
        self.submitter.submitting(body)
    }

    package var readHandler: @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, data, error in self.record(done, data, error, isWrite: false) }
    }

    package var writeHandler: @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, remaining, error in self.record(done, remaining, error, isWrite: true) }
    }

    private func record(_ done: Bool, _ data: ByteRope?, _ error: Errno?, isWrite: Bool) {
        let call = HandlerCall(done, data.map { Array($0) }, error)
        let wrongQueue = self.onQueue.map { !$0() } ?? false
        let insideSubmission = self.submitter.isCurrent
        self.state.withLock { state in
            if state.inside { state.problems.append("overlapping handler calls (R32) at \(call)") }
            if insideSubmission { state.problems.append("handler called inside the submitting call (D7): \(call)") }
            if state.calls.last?.done == true { state.problems.append("call after the final call (R33): \(call)") }
            if wrongQueue { state.problems.append("handler ran off the channel's queue (D7): \(call)") }
            if isWrite {
                if done && error == nil && data != nil {
                    state.problems.append("write success with data (R39): \(call)")
                }
                if done && error != nil && data == nil {
                    state.problems.append("write error with nil data (R40): \(call)")
                }
                if !done && data == nil {
                    state.problems.append("intermediate write call with nil data (R38): \(call)")
                }
            } else {
                if done && error == nil && data == nil {
                    state.problems.append("read success with nil data (R34/R35): \(call)")
                }
                if done && error != nil && data != nil { state.problems.append("read error with data (R36): \(call)") }
                if !done && data == nil { state.problems.append("intermediate read call with nil data: \(call)") }
            }
            if !done && error != nil { state.problems.append("intermediate call with an error: \(call)") }
            if !done && data?.isEmpty == true && !self.allowsEmptyIntermediates {
                state.problems.append("empty intermediate delivery (R42): \(call)")
            }
            state.inside = true
            state.calls.append(call)
            if let data { state.ropes.append(data) }
        }
        holdForOverlap(microseconds: 200)
        self.onCall?(call)
        self.state.withLock { $0.inside = false }
        if done { self.finished.signal() }
    }

    /// Every call so far.
    package var calls: [HandlerCall] { self.state.withLock { $0.calls } }
    /// Everything delivered, concatenated.
    package var bytes: [UInt8] { self.state.withLock { $0.calls.flatMap { $0.bytes ?? [] } } }
    /// The ropes as delivered, kept alive.
    package var ropes: [ByteRope] { self.state.withLock { $0.ropes } }
    /// The bytes of each non-empty delivery, in order.
    package var deliveries: [[UInt8]] { self.calls.compactMap(\.bytes).filter { !$0.isEmpty } }
    package var problems: [String] { self.state.withLock { $0.problems } }
    package var final: HandlerCall? { self.state.withLock { $0.calls.last(where: \.done) } }
    package var isFinished: Bool { self.final != nil }

    /// Waits for the final call, as long as the operation makes progress: false once `seconds`
    /// pass with no call at all (a stalled operation), not after `seconds` in all — a large
    /// write on a loaded machine, under a sanitizer, may take longer and still be fine.
    package func waitForFinal(seconds: Double = 10) -> Bool {
        var calls = self.state.withLock { $0.calls.count }
        while !waitLeavingSignalled(self.finished, seconds: seconds) {
            let now = self.state.withLock { $0.calls.count }
            if now == calls { return false }
            calls = now
        }
        return true
    }

    /// Waits (bounded) until at least `count` calls have been made.
    package func waitForCalls(_ count: Int, seconds: Double = 10) -> Bool {
        eventually(seconds: seconds) { self.calls.count >= count }
    }

    /// Waits (bounded) until `count` bytes have been delivered.
    package func waitForBytes(_ count: Int, seconds: Double = 10) -> Bool {
        eventually(seconds: seconds) { self.bytes.count >= count }
    }

    /// Waits for the final call, then checks the protocol: no problem recorded, exactly one
    /// final call, and it is the last.
    package func expectFinished(
        _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard self.waitForFinal() else {
            Issue.record(
                "no final call, and no call for 10 s; calls: \(self.calls) \(comment.map { "— \($0)" } ?? "")",
                sourceLocation: sourceLocation
            )
            return
        }
        self.expectWellFormed(comment, sourceLocation: sourceLocation)
    }

    /// Checks the protocol as of now (see ``expectFinished(_:sourceLocation:)``).
    package func expectWellFormed(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let (calls, problems) = self.state.withLock { ($0.calls, $0.problems) }
        #expect(problems.isEmpty, "\(problems) \(comment.map { "— \($0)" } ?? "")", sourceLocation: sourceLocation)
        #expect(
            calls.filter(\.done).count == 1 && calls.last?.done == true,
            "exactly one final call, last (R33): \(calls)",
            sourceLocation: sourceLocation
        )
    }
}

extension OperationLog {
    /// Checks a successful write of `data`: the last call is `(true, nil, nil)` and every
    /// intermediate call carries a non-empty tail of `data` that shrinks from call to call (R38).
    package func expectWriteProgress(of data: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let calls = self.calls
        #expect(calls.last == .written, "calls: \(calls)", sourceLocation: sourceLocation)
        var previous = data.count + 1
        for call in calls.dropLast() {
            let remaining = call.bytes ?? []
            #expect(
                !remaining.isEmpty && remaining.count < previous && remaining == Array(data.suffix(remaining.count)),
                "an intermediate call that is not a shrinking, non-empty tail of the data: \(call)",
                sourceLocation: sourceLocation
            )
            previous = remaining.count
        }
    }
}

/// Records the calls of a convenience (one-shot) handler, as final `HandlerCall`s: exactly one
/// is expected (R77), on the given queue, never inside the submitting call (D7).
package final class ConvenienceLog: Sendable {
    private let state = _Lock<(calls: [HandlerCall], problems: [String])>(([], []))
    private let submitter = SubmittingThread()
    private let called = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?
    private let barrier: HandlerBarrier?

    /// - Parameters:
    ///   - onQueue: Whether the handler runs where it should; nil skips the check.
    ///   - barrier: What ``expectOneCall(sourceLocation:)`` passes before it checks that no
    ///     second call came: the ring of the channel and the handler's queue.
    package init(onQueue: (@Sendable () -> Bool)? = nil, barrier: HandlerBarrier?) {
        self.onQueue = onQueue
        self.barrier = barrier
    }

    package func submitting(_ body: () -> Void) {
        self.submitter.submitting(body)
    }

    package var readHandler: @Sendable (ByteRope, Errno?) -> Void {
        { data, error in self.record(HandlerCall(true, Array(data), error)) }
    }

    package var writeHandler: @Sendable (ByteRope?, Errno?) -> Void {
        { remaining, error in self.record(HandlerCall(true, remaining.map { Array($0) }, error)) }
    }

    private func record(_ call: HandlerCall) {
        let wrongQueue = self.onQueue.map { !$0() } ?? false
        let insideSubmission = self.submitter.isCurrent
        self.state.withLock { state in
            if insideSubmission { state.problems.append("handler called inside the submitting call (D7): \(call)") }
            if wrongQueue { state.problems.append("handler ran off the given queue (D7): \(call)") }
            state.calls.append(call)
        }
        self.called.signal()
    }

    package var calls: [HandlerCall] { self.state.withLock { $0.calls } }
    package var problems: [String] { self.state.withLock { $0.problems } }
    package var wasCalled: Bool { !self.calls.isEmpty }

    package func wait(seconds: Double = 10) -> Bool {
        waitLeavingSignalled(self.called, seconds: seconds)
    }

    /// Waits for the call, passes the barrier (a second call would have come before it), then
    /// checks there was exactly one, on the right queue.
    ///
    /// - Parameter passingBarrier: Pass the barrier first; false when the caller has passed one
    ///   for many logs at once.
    package func expectOneCall(passingBarrier: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        guard self.wait() else {
            Issue.record("the convenience handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        if passingBarrier { self.barrier?.pass(sourceLocation: sourceLocation) }
        #expect(self.calls.count == 1, "one call (R77): \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.problems.isEmpty, "\(self.problems)", sourceLocation: sourceLocation)
    }
}

/// Records calls of a cleanup handler.
package final class CleanupLog: Sendable {
    private let state = _Lock<(calls: [Errno?], problems: [String])>(([], []))
    private let called = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?
    private let onCall: (@Sendable (Errno?) -> Void)?
    private let barrier: HandlerBarrier?

    /// - Parameters:
    ///   - onQueue: Whether the handler runs where it should; nil skips the check.
    ///   - barrier: What ``expectOnce(_:sourceLocation:)`` passes before it checks that no
    ///     second call came: the ring of the channel and the cleanup handler's queue. Without
    ///     one, a log only counts the calls made by the time it is asked.
    ///   - onCall: Runs inside the handler, after the call is recorded.
    package init(
        onQueue: (@Sendable () -> Bool)? = nil,
        barrier: HandlerBarrier? = nil,
        onCall: (@Sendable (Errno?) -> Void)? = nil
    ) {
        self.onQueue = onQueue
        self.barrier = barrier
        self.onCall = onCall
    }

    package var handler: @Sendable (Errno?) -> Void {
        { error in
            let wrongQueue = self.onQueue.map { !$0() } ?? false
            self.state.withLock {
                $0.calls.append(error)
                if wrongQueue { $0.problems.append("cleanup handler ran off the creation queue (R23)") }
            }
            self.onCall?(error)
            self.called.signal()
        }
    }

    package var calls: [Errno?] { self.state.withLock { $0.calls } }
    package var problems: [String] { self.state.withLock { $0.problems } }
    package var wasCalled: Bool { !self.calls.isEmpty }

    /// Waits (bounded) for the first call.
    package func wait(seconds: Double = 10) -> Bool {
        waitLeavingSignalled(self.called, seconds: seconds)
    }

    /// As ``expectOnce(_:sourceLocation:)``, for async tests: without blocking a thread.
    package func expectOnceAsync(_ error: Errno?, sourceLocation: SourceLocation = #_sourceLocation) async {
        guard await eventuallyAsync({ self.wasCalled }) else {
            Issue.record("the cleanup handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        await self.barrier?.pass(sourceLocation: sourceLocation)
        self.expectCalledOnce(error, sourceLocation: sourceLocation)
    }

    /// Waits for the cleanup handler, passes the barrier (a second call would have come before
    /// it), and checks it ran exactly once, with `error`, on its queue.
    package func expectOnce(
        _ error: Errno?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard self.wait() else {
            Issue.record("the cleanup handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        self.barrier?.pass(sourceLocation: sourceLocation)
        self.expectCalledOnce(error, sourceLocation: sourceLocation)
    }

    private func expectCalledOnce(_ error: Errno?, sourceLocation: SourceLocation) {
        #expect(self.calls.count == 1, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.calls.first == error, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.problems.isEmpty, "\(self.problems)", sourceLocation: sourceLocation)
    }
}

/// What a recorder passes before it checks that a handler was *not* called again: a ring
/// barrier through each ring that may deliver the handler, then the handler's DispatchQueue,
/// if any (``ringBarrier(_:queue:rounds:sourceLocation:)``).
package struct HandlerBarrier: Sendable {
    package let rings: [RingLoop]
    package let queue: DispatchQueue?

    /// The barrier of a channel on `ring` with handlers on `queue` (nil: on the ring).
    package init(ring: RingLoop, queue: DispatchQueue? = nil) {
        self.init(rings: [ring], queue: queue)
    }

    /// The barrier of channels on any of `rings` (a group's: the shared group runs the
    /// channels made without a ring).
    package init(rings: [RingLoop], queue: DispatchQueue? = nil) {
        self.rings = rings
        self.queue = queue
    }

    /// Passes it, blocking the caller.
    package func pass(sourceLocation: SourceLocation = #_sourceLocation) {
        for _ in 0..<2 {
            for ring in self.rings where !ringBarrier(ring, sourceLocation: sourceLocation) { return }
            self.queue?.sync(flags: .barrier) {}
        }
    }

    /// Passes it without blocking a thread.
    package func pass(sourceLocation: SourceLocation = #_sourceLocation) async {
        for _ in 0..<2 {
            for ring in self.rings where !(await ringBarrier(ring, sourceLocation: sourceLocation)) { return }
            if let queue = self.queue {
                await withCheckedContinuation { continuation in queue.async(flags: .barrier) { continuation.resume() } }
            }
        }
    }
}

extension HandlerCall {
    /// A non-final delivery.
    package static func more(_ text: String) -> HandlerCall { HandlerCall(false, text) }
    package static func more(_ bytes: [UInt8]) -> HandlerCall { HandlerCall(false, bytes) }
    /// The final call of a read that got its length.
    package static func done(_ text: String) -> HandlerCall { HandlerCall(true, text) }
    package static func done(_ bytes: [UInt8]) -> HandlerCall { HandlerCall(true, bytes) }
    /// The final call at the end of the file: empty, not nil (R35).
    package static let eof = HandlerCall(true, [UInt8]())
    /// The final call of a write that wrote everything (R39).
    package static let written = HandlerCall(true, nil as [UInt8]?)
    /// A final call with an error: no data for a read (R36), the remaining data for a write (R40).
    package static func failed(_ error: Errno) -> HandlerCall { HandlerCall(true, nil as [UInt8]?, error) }
    package static func failed(_ error: Errno, remaining: String) -> HandlerCall { HandlerCall(true, remaining, error) }
    package static func failed(_ error: Errno, remaining: [UInt8]) -> HandlerCall {
        HandlerCall(true, remaining, error)
    }
}

/// The bytes of `pattern(count, seed:)`, made fast enough for megabytes in a debug build.

/// The thread running a submitting call, if any: recorders check that a handler is never called
/// from inside the call that caused it (D7).
package final class SubmittingThread: Sendable {
    private let thread = _Lock<pthread_t?>(nil)

    package init() {}

    /// Runs `body` (the submitting call) and notes the thread meanwhile.
    package func submitting(_ body: () -> Void) {
        self.thread.withLock { $0 = pthread_self() }
        body()
        self.thread.withLock { $0 = nil }
    }

    /// Whether the caller runs inside a submitting call now.
    package var isCurrent: Bool {
        self.thread.withLock { thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }
}

/// Waits (at most `seconds`, scaled by ``testTimeScale``) for `semaphore`, and leaves it
/// signalled: a recorder's "was it called", asked as often as a test likes.
package func waitLeavingSignalled(_ semaphore: DispatchSemaphore, seconds: Double) -> Bool {
    guard wait(semaphore, seconds: seconds) else { return false }
    semaphore.signal()
    return true
}
