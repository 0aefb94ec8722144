//===----------------------------------------------------------------------===//
// RingIO — channel test support: handler recorders, delivery contexts, descriptor makers and
// bounded waits for the IOChannel suites.
// Rule numbers (R…, D…): Sources/RingIO/RingIO.docc/DispatchIOContract.md and ComingFromDispatch.md.
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

// MARK: - Where handlers run

/// The two kinds of queue a channel test runs its handlers on.
enum QueueKind: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    /// A serial `DispatchQueue`; the channel's I/O runs on a ring of the test's own.
    case dispatch
    /// The ring itself (handlers on the ring thread, no hop); the channel is given no `ring:`.
    case ring

    var testDescription: String { self.rawValue }
}

/// A ring and a queue for one test; `shutdown()` at the end (defer).
final class ChannelContext: Sendable {
    let kind: QueueKind
    let ring: RingLoop
    let dispatchQueue: DispatchQueue
    private let label: String

    init(_ kind: QueueKind) throws {
        self.kind = kind
        self.ring = try RingLoop()
        self.label = "channel-test-\(UInt64.random(in: 0...UInt64.max))"
        self.dispatchQueue = DispatchQueue(label: self.label)
        self.dispatchQueue.setSpecific(key: queueLabelKey, value: self.label)
    }

    /// The queue handlers are given to.
    var queue: any IOQueue {
        switch self.kind {
        case .dispatch: self.dispatchQueue
        case .ring: self.ring
        }
    }

    /// Whether the caller runs on `queue`.
    var isOnQueue: Bool {
        switch self.kind {
        case .dispatch: currentDispatchQueueLabel() == self.label
        case .ring: self.ring.isCurrentThread
        }
    }

    /// A channel over `fd`, with handlers on `queue`.
    func channel(_ kind: IOChannel.Kind, _ fd: CInt, cleanup: CleanupLog) -> IOChannel {
        switch self.kind {
        case .dispatch:
            IOChannel(
                kind: kind,
                fileDescriptor: fd,
                queue: self.dispatchQueue,
                ring: self.ring,
                cleanupHandler: cleanup.handler
            )
        case .ring:
            IOChannel(kind: kind, fileDescriptor: fd, queue: self.ring, cleanupHandler: cleanup.handler)
        }
    }

    /// A path channel, with handlers on `queue`.
    func channel(
        _ kind: IOChannel.Kind,
        path: String,
        mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions? = nil,
        cleanup: CleanupLog
    ) throws(Errno) -> IOChannel {
        switch self.kind {
        case .dispatch:
            try IOChannel(
                kind: kind,
                path: FilePath(path),
                mode: mode,
                options: options,
                permissions: permissions,
                queue: self.dispatchQueue,
                ring: self.ring,
                cleanupHandler: cleanup.handler
            )
        case .ring:
            try IOChannel(
                kind: kind,
                path: FilePath(path),
                mode: mode,
                options: options,
                permissions: permissions,
                queue: self.ring,
                cleanupHandler: cleanup.handler
            )
        }
    }

    /// A channel made from `channel`, with handlers on `queue`.
    func channel(_ kind: IOChannel.Kind, from channel: IOChannel, cleanup: CleanupLog) -> IOChannel {
        switch self.kind {
        case .dispatch:
            IOChannel(kind: kind, channel: channel, queue: self.dispatchQueue, cleanupHandler: cleanup.handler)
        case .ring: IOChannel(kind: kind, channel: channel, queue: self.ring, cleanupHandler: cleanup.handler)
        }
    }

    /// A recorder that checks its handler runs on `queue`.
    func log() -> OperationLog { OperationLog(onQueue: { self.isOnQueue }) }

    /// A cleanup recorder that checks its handler runs on `queue`.
    func cleanupLog() -> CleanupLog { CleanupLog(onQueue: { self.isOnQueue }) }

    /// Submits a read and records its handler calls.
    @discardableResult
    func read(_ channel: IOChannel, offset: Int64 = 0, length: Int, into log: OperationLog? = nil) -> OperationLog {
        let log = log ?? self.log()
        log.submitting { channel.read(offset: offset, length: length, queue: self.queue, handler: log.readHandler) }
        return log
    }

    /// Submits a write and records its handler calls.
    @discardableResult
    func write(_ channel: IOChannel, offset: Int64 = 0, _ data: ByteRope, into log: OperationLog? = nil) -> OperationLog
    {
        let log = log ?? self.log()
        log.submitting { channel.write(offset: offset, data: data, queue: self.queue, handler: log.writeHandler) }
        return log
    }

    /// Waits until every job enqueued on the ring and on the dispatch queue so far has run.
    func drain() {
        let ringDone = DispatchSemaphore(value: 0)
        self.ring.enqueue { ringDone.signal() }
        _ = wait(ringDone)
        self.dispatchQueue.sync {}
    }

    func shutdown() {
        self.ring.shutdown()
    }
}

/// Tags each context's dispatch queue, so a handler can tell whether it runs there.
let queueLabelKey = DispatchSpecificKey<String>()

/// The tag of the context's dispatch queue the caller runs on, if any.
func currentDispatchQueueLabel() -> String? {
    DispatchQueue.getSpecific(key: queueLabelKey)
}

// MARK: - Recording handler calls

/// One handler call as a test sees it: `bytes` is nil exactly where the handler got nil.
struct HandlerCall: Sendable, Equatable, CustomStringConvertible {
    var done: Bool
    var bytes: [UInt8]?
    var error: Errno?

    init(_ done: Bool, _ bytes: [UInt8]?, _ error: Errno? = nil) {
        self.done = done
        self.bytes = bytes
        self.error = error
    }

    init(_ done: Bool, _ text: String?, _ error: Errno? = nil) {
        self.init(done, text.map { Array($0.utf8) }, error)
    }

    var description: String {
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
final class OperationLog: Sendable {
    private struct State {
        var calls: [HandlerCall] = []
        var ropes: [ByteRope] = []
        var problems: [String] = []
        var inside = false
        var submitter: pthread_t?
    }

    private let state = _Lock(State())
    private let finished = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?
    private let allowsEmptyIntermediates: Bool
    private let onCall: (@Sendable (HandlerCall) -> Void)?

    /// - Parameters:
    ///   - onQueue: Whether the handler runs where it should; nil skips the check.
    ///   - allowsEmptyIntermediates: Empty non-final deliveries are allowed (strict interval, R52).
    ///   - onCall: Runs inside the handler, after the call is recorded.
    init(
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
    func submitting(_ body: () -> Void) {
        self.state.withLock { $0.submitter = pthread_self() }
        body()
        self.state.withLock { $0.submitter = nil }
    }

    var readHandler: @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, data, error in self.record(done, data, error, isWrite: false) }
    }

    var writeHandler: @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, remaining, error in self.record(done, remaining, error, isWrite: true) }
    }

    private func record(_ done: Bool, _ data: ByteRope?, _ error: Errno?, isWrite: Bool) {
        let call = HandlerCall(done, data.map { Array($0) }, error)
        let wrongQueue = self.onQueue.map { !$0() } ?? false
        self.state.withLock { state in
            if state.inside { state.problems.append("overlapping handler calls (R32) at \(call)") }
            if let submitter = state.submitter, pthread_equal(submitter, pthread_self()) != 0 {
                state.problems.append("handler called inside the submitting call (D7): \(call)")
            }
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
        // Long enough for a second, overlapping call to show up.
        usleep(200)
        self.onCall?(call)
        self.state.withLock { $0.inside = false }
        if done { self.finished.signal() }
    }

    /// Every call so far.
    var calls: [HandlerCall] { self.state.withLock { $0.calls } }
    /// Everything delivered, concatenated.
    var bytes: [UInt8] { self.state.withLock { $0.calls.flatMap { $0.bytes ?? [] } } }
    /// The ropes as delivered, kept alive.
    var ropes: [ByteRope] { self.state.withLock { $0.ropes } }
    /// The bytes of each non-empty delivery, in order.
    var deliveries: [[UInt8]] { self.calls.compactMap(\.bytes).filter { !$0.isEmpty } }
    var problems: [String] { self.state.withLock { $0.problems } }
    var final: HandlerCall? { self.state.withLock { $0.calls.last(where: \.done) } }
    var isFinished: Bool { self.final != nil }

    /// Waits (bounded) for the final call.
    func waitForFinal(seconds: Double = 10) -> Bool {
        guard self.finished.wait(timeout: .now() + seconds) == .success else { return false }
        self.finished.signal()
        return true
    }

    /// Waits (bounded) until at least `count` calls have been made.
    func waitForCalls(_ count: Int, seconds: Double = 10) -> Bool {
        eventually(seconds: seconds) { self.calls.count >= count }
    }

    /// Waits (bounded) until `count` bytes have been delivered.
    func waitForBytes(_ count: Int, seconds: Double = 10) -> Bool {
        eventually(seconds: seconds) { self.bytes.count >= count }
    }

    /// Waits for the final call, then checks the protocol: no problem recorded, exactly one
    /// final call, and it is the last.
    func expectFinished(
        _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard self.waitForFinal() else {
            Issue.record(
                "no final call within 10 s; calls: \(self.calls) \(comment.map { "— \($0)" } ?? "")",
                sourceLocation: sourceLocation
            )
            return
        }
        self.expectWellFormed(comment, sourceLocation: sourceLocation)
    }

    /// Checks the protocol as of now (see ``expectFinished(_:sourceLocation:)``).
    func expectWellFormed(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
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
    func expectWriteProgress(of data: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
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
final class ConvenienceLog: Sendable {
    private let state = _Lock<(calls: [HandlerCall], problems: [String], submitter: pthread_t?)>(([], [], nil))
    private let called = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?

    init(onQueue: (@Sendable () -> Bool)? = nil) {
        self.onQueue = onQueue
    }

    func submitting(_ body: () -> Void) {
        self.state.withLock { $0.submitter = pthread_self() }
        body()
        self.state.withLock { $0.submitter = nil }
    }

    var readHandler: @Sendable (ByteRope, Errno?) -> Void {
        { data, error in self.record(HandlerCall(true, Array(data), error)) }
    }

    var writeHandler: @Sendable (ByteRope?, Errno?) -> Void {
        { remaining, error in self.record(HandlerCall(true, remaining.map { Array($0) }, error)) }
    }

    private func record(_ call: HandlerCall) {
        let wrongQueue = self.onQueue.map { !$0() } ?? false
        self.state.withLock { state in
            if let submitter = state.submitter, pthread_equal(submitter, pthread_self()) != 0 {
                state.problems.append("handler called inside the submitting call (D7): \(call)")
            }
            if wrongQueue { state.problems.append("handler ran off the given queue (D7): \(call)") }
            state.calls.append(call)
        }
        self.called.signal()
    }

    var calls: [HandlerCall] { self.state.withLock { $0.calls } }
    var problems: [String] { self.state.withLock { $0.problems } }
    var wasCalled: Bool { !self.calls.isEmpty }

    func wait(seconds: Double = 10) -> Bool {
        guard self.called.wait(timeout: .now() + seconds) == .success else { return false }
        self.called.signal()
        return true
    }

    /// Waits for the call, then checks there was exactly one, on the right queue.
    ///
    /// - Parameter settling: Wait a little for a second call before checking.
    func expectOneCall(settling: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        guard self.wait() else {
            Issue.record("the convenience handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        if settling { usleep(20_000) }
        #expect(self.calls.count == 1, "one call (R77): \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.problems.isEmpty, "\(self.problems)", sourceLocation: sourceLocation)
    }
}

/// Records calls of a cleanup handler.
final class CleanupLog: Sendable {
    private let state = _Lock<(calls: [Errno?], problems: [String])>(([], []))
    private let called = DispatchSemaphore(value: 0)
    private let onQueue: (@Sendable () -> Bool)?
    private let onCall: (@Sendable (Errno?) -> Void)?

    init(onQueue: (@Sendable () -> Bool)? = nil, onCall: (@Sendable (Errno?) -> Void)? = nil) {
        self.onQueue = onQueue
        self.onCall = onCall
    }

    var handler: @Sendable (Errno?) -> Void {
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

    var calls: [Errno?] { self.state.withLock { $0.calls } }
    var problems: [String] { self.state.withLock { $0.problems } }
    var wasCalled: Bool { !self.calls.isEmpty }

    /// Waits (bounded) for the first call.
    func wait(seconds: Double = 10) -> Bool {
        guard self.called.wait(timeout: .now() + seconds) == .success else { return false }
        self.called.signal()
        return true
    }

    /// As ``expectOnce(_:sourceLocation:)``, for async tests: without blocking a thread.
    func expectOnceAsync(_ error: Errno?, sourceLocation: SourceLocation = #_sourceLocation) async {
        guard await eventuallyAsync({ self.wasCalled }) else {
            Issue.record("the cleanup handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(20))
        #expect(self.calls.count == 1, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.calls.first == error, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.problems.isEmpty, "\(self.problems)", sourceLocation: sourceLocation)
    }

    /// Waits for the cleanup handler and checks it ran exactly once, with `error`, on its queue.
    func expectOnce(
        _ error: Errno?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard self.wait() else {
            Issue.record("the cleanup handler did not run within 10 s", sourceLocation: sourceLocation)
            return
        }
        // A second call would come from the same turn of work; give it a moment.
        usleep(20_000)
        #expect(self.calls.count == 1, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.calls.first == error, "cleanup calls: \(self.calls)", sourceLocation: sourceLocation)
        #expect(self.problems.isEmpty, "\(self.problems)", sourceLocation: sourceLocation)
    }
}

// MARK: - Waiting, bounded

// Never write `#expect(await f { … })` or `#require(await f { … })`: await into a local
// first (`let holds = await f { … }; #expect(holds)`). With Swift 6.3.1, inside a
// `withTaskExecutorPreference` body, such an `#expect` made a later call of the same kind of
// function with another trailing closure (`await waitUntil { B }`) run the *first* closure
// instead — B never ran, and the wait returned A's answer. Tests passed that checked nothing.
// Seen with a plain actor and a dispatch-backed task executor, no RingIO involved; `.ci/run`
// rejects the pattern.

/// Polls `condition` until it holds or `seconds` pass.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(1_000)
    }
    return true
}

/// A pause for "nothing happens" checks: long enough for a wrong delivery to show up.
func settle(_ milliseconds: Int = 60) {
    usleep(UInt32(milliseconds) * 1_000)
}

/// Polls `condition` until it holds or `seconds` pass, without blocking a thread.
func eventuallyAsync(seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// Runs tasks on threads of its own, one more whenever all of them are busy: a test that
/// blocks one never delays another test's tasks. Dispatch's global queues (and the cooperative
/// pool, which runs on them on Linux) have as many threads as cores and add one only after
/// they have all been blocked a while; in a parallel run, synchronous tests block them, and a
/// task waiting there for seconds looks like a server that did not answer.
final class ThreadsTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `state` is under its lock; `available` is a semaphore.
    /// Jobs not yet taken, and the threads waiting on `available` no job was signalled for.
    private let state = _Lock<(jobs: [UnownedJob], idle: Int)>(([], 0))
    private let available = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let wakesIdle = self.state.withLock { state in
            state.jobs.append(job)
            guard state.idle > 0 else { return false }
            state.idle -= 1
            return true
        }
        // Each job gets a thread: an idle one, signalled, or a new one. A thread takes jobs
        // until none is left before it waits again.
        if wakesIdle { self.available.signal() } else { startThread { self.work() } }
    }

    private func work() {
        while true {
            let job: UnownedJob? = self.state.withLock { state in
                if state.jobs.isEmpty {
                    state.idle += 1
                    return nil
                }
                return state.jobs.removeFirst()
            }
            if let job {
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            } else {
                self.available.wait()
            }
        }
    }
}

let testTaskExecutor = ThreadsTaskExecutor()

/// Runs `body` on a new detached thread.
func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Work: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    var thread = pthread_t()
    let started = pthread_create(
        &thread,
        nil,
        { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        },
        Unmanaged.passRetained(Work(body)).toOpaque()
    )
    precondition(started == 0, "pthread_create: \(started)")
    pthread_detach(thread)
}

/// Runs the blocking `body` on a thread of its own and returns its result: not on dispatch's
/// global queues, whose few threads the tasks of the suite need.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        startThread { continuation.resume(returning: body()) }
    }
}

/// Runs `body` in a task and waits at most `seconds` for it; nil on time-out (the task is then
/// cancelled and abandoned).
func bounded<T: Sendable>(
    seconds: Double = 10,
    _ body: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    typealias Outcome = Result<T, any Error>?
    // Whichever comes first — the body's result or the time-out — resumes the waiter, once.
    let state = _Lock<(waiter: CheckedContinuation<Outcome, Never>?, outcome: Outcome?)>((nil, nil))
    @Sendable func finish(_ outcome: Outcome) {
        let waiter: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = .some(outcome)
            return state.waiter.take()
        }
        waiter?.resume(returning: outcome)
    }
    // Not on the cooperative pool: synchronous tests running in parallel block its threads,
    // and a body starved of a thread must not look like a hang.
    let task = Task(executorPreference: testTaskExecutor) {
        do {
            finish(.success(try await body()))
        } catch {
            finish(.failure(error))
        }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
        finish(nil)
        task.cancel()
    }
    return await withCheckedContinuation { continuation in
        let ready: Outcome?? = state.withLock { state in
            if let outcome = state.outcome { return .some(outcome) }
            state.waiter = continuation
            return .none
        }
        if case .some(let outcome) = ready { continuation.resume(returning: outcome ?? nil) }
    }
}

// MARK: - Descriptors

/// glibc's `pipe2` and `accept4`, which the Glibc module hides without _GNU_SOURCE: descriptors
/// must be close-on-exec from the start, or an exit test's child process, started meanwhile by
/// another test, would hold a pipe's write end open and keep its reader from ever seeing EOF.
private let pipe2Function = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2"),
    to: (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt).self
)
private let accept4Function = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4"),
    to: (@convention(c) (CInt, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, CInt) -> CInt).self
)

/// A pipe, both ends close-on-exec.
func makePipe() throws -> (read: CInt, write: CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(pipe2Function(&fds, O_CLOEXEC) == 0)
    return (fds[0], fds[1])
}

/// A connected TCP pair over 127.0.0.1.
func makeTCPPair() throws -> (client: CInt, server: CInt) {
    let (listener, address) = try makeListener()
    defer { close(listener) }
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(client >= 0)
    var target = address
    let connected = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    try #require(connected == 0)
    let server = accept4Function(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
    try #require(server >= 0)
    var one: CInt = 1
    _ = setsockopt(client, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    _ = setsockopt(server, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    return (client, server)
}

/// Closes `fd` with SO_LINGER 0: the peer gets a reset (RST), not an orderly end.
func resetAndClose(_ fd: CInt) {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    close(fd)
}

/// A pseudo-terminal in raw mode: bytes written to `master` are read from `terminal` as is.
func makeTerminal() throws -> (master: CInt, terminal: CInt) {
    // posix_openpt, unlockpt and ptsname, spelled out (the Glibc module hides them):
    // TIOCSPTLCK = _IOW('T', 0x31, int), TIOCGPTN = _IOR('T', 0x30, unsigned int).
    let TIOCSPTLCK: UInt = 0x4004_5431
    let TIOCGPTN: UInt = 0x8004_5430
    let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    try #require(master >= 0)
    var unlock: CInt = 0
    try #require(ioctl(master, TIOCSPTLCK, &unlock) == 0)
    var number: CUnsignedInt = 0
    try #require(ioctl(master, TIOCGPTN, &number) == 0)
    let terminal = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
    try #require(terminal >= 0)
    var attributes = termios()
    try #require(tcgetattr(terminal, &attributes) == 0)
    cfmakeraw(&attributes)
    try #require(tcsetattr(terminal, TCSANOW, &attributes) == 0)
    return (master, terminal)
}

/// A temporary directory, removed with everything in it when the last reference goes.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/ringio-channel-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil)
        self.path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        removeTree(self.path)
    }

    /// The absolute path of `name` inside the directory.
    func file(_ name: String) -> String { "\(self.path)/\(name)" }

    /// Creates a FIFO named `name` and opens its two ends (blocking, close-on-exec).
    func fifo(_ name: String = "fifo") throws -> (read: CInt, write: CInt) {
        let path = self.file(name)
        try #require(mkfifo(path, 0o600) == 0)
        // Non-blocking so that opening the reader does not wait for a writer; then blocking again.
        let reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        try #require(writer >= 0)
        try #require(fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) & ~O_NONBLOCK) == 0)
        return (reader, writer)
    }

    /// Creates a regular file with `contents`.
    @discardableResult
    func create(_ name: String, _ contents: [UInt8]) throws -> String {
        let path = self.file(name)
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        writeAll(fd, contents)
        close(fd)
        return path
    }
}

/// Removes `path` and, for a directory, everything below it.
func removeTree(_ path: String) {
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            removeTree("\(path)/\(name)")
        }
        closedir(directory)
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// A regular file with `contents`, open read-write, positioned at 0; removed at the end.
func makeFile(_ contents: [UInt8]) throws -> TemporaryFile {
    let file = try TemporaryFile()
    writeAll(file.fd, contents)
    try #require(lseek(file.fd, 0, SEEK_SET) == 0)
    return file
}

/// The whole contents of the file at `path`.
func contentsOfFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    return readToEnd(fd)
}

/// Reads `fd` until end of file (blocking).
func readToEnd(_ fd: CInt) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        result += buffer[..<count]
    }
    return result
}

/// Reads what `fd` has now, without waiting (the descriptor stays blocking).
func readAvailable(_ fd: CInt) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while pendingBytes(fd) > 0 {
        let count = read(fd, &buffer, min(buffer.count, pendingBytes(fd)))
        guard count > 0 else { break }
        result += buffer[..<count]
    }
    return result
}

/// Reads exactly `count` bytes from `fd` (blocking), or fewer at end of file.
func readExactly(_ fd: CInt, _ count: Int) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while result.count < count {
        let got = read(fd, &buffer, min(buffer.count, count - result.count))
        if got < 0 && errno == EINTR { continue }
        guard got > 0 else { break }
        result += buffer[..<got]
    }
    return result
}

/// Bytes waiting to be read on a pipe, FIFO or socket (FIONREAD).
func pendingBytes(_ fd: CInt) -> Int {
    var count: CInt = 0
    guard ioctl(fd, UInt(FIONREAD), &count) == 0 else { return -1 }
    return Int(count)
}

/// Whether `fd` is open.
func isOpen(_ fd: CInt) -> Bool {
    fcntl(fd, F_GETFD) != -1
}

/// The device and inode `fd` refers to, or nil when it is not open.
func identity(of fd: CInt) -> [UInt64]? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
}

/// The number of descriptors this process has open.
func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    closedir(directory)
    return count - 3  // ".", ".." and the directory's own descriptor
}

/// A descriptor number that cannot be open: above the process's descriptor limit.
func descriptorThatIsNeverOpen() -> CInt {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    return CInt(clamping: min(UInt64(limit.rlim_cur), 1 << 20) + 1_000)
}

/// The file position of `fd`.
func position(_ fd: CInt) -> Int64 {
    Int64(lseek(fd, 0, SEEK_CUR))
}

/// Whether SIGPIPE is at its default action (so that a stray one would end the process).
func sigpipeIsDefault() -> Bool {
    var action = sigaction()
    sigaction(SIGPIPE, nil, &action)
    return action.__sigaction_handler.sa_handler == nil
}

// MARK: - Bytes

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func rope(_ text: String) -> ByteRope { ByteRope(copying: text.utf8) }

/// A rope of `count` bytes of `pattern(count, seed:)` made of many regions of varied sizes
/// (1 byte to a few KiB), so that vectored writes have something to do.
func fragmentedRope(_ count: Int, seed: Int = 0, maxRegion: Int = 4_096) -> ByteRope {
    let source = patternBytes(count, seed: seed)
    var result = ByteRope()
    var offset = 0
    var size = 1
    while offset < source.count {
        let end = min(offset + size, source.count)
        result += ByteRope(copying: source[offset..<end])
        offset = end
        size = size * 7 % maxRegion + 1
    }
    return result
}

// MARK: - Stream endpoints

/// The kinds of stream descriptor a channel test reads from.
enum EndpointKind: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    case pipe
    case socketPair
    case tcp
    case fifo
    case terminal

    var testDescription: String { self.rawValue }

    /// The kinds whose writer can end the stream with an end of file (a terminal's reader gets
    /// EIO at hang-up instead).
    static let endingWithEOF: [EndpointKind] = [.pipe, .socketPair, .tcp, .fifo]
    /// The kinds random access refuses (R62).
    static let unseekable: [EndpointKind] = [.pipe, .socketPair, .tcp, .fifo]
}

/// A stream for a channel to read: the channel gets `local`, the test writes to `remote`.
final class StreamEndpoint: Sendable {
    let kind: EndpointKind
    let local: CInt
    let remote: CInt
    private let directory: TemporaryDirectory?
    private let remoteClosed = Atomic<Bool>(false)

    init(_ kind: EndpointKind) throws {
        self.kind = kind
        var directory: TemporaryDirectory?
        switch kind {
        case .pipe: (self.local, self.remote) = try makePipe()
        case .socketPair: (self.local, self.remote) = try makeSocketPair()
        case .tcp: (self.local, self.remote) = try makeTCPPair()
        case .fifo:
            let made = try TemporaryDirectory()
            directory = made
            (self.local, self.remote) = try made.fifo()
        case .terminal:
            let (master, terminal) = try makeTerminal()
            (self.local, self.remote) = (terminal, master)
        }
        self.directory = directory
    }

    /// Writes `bytes` to the remote side.
    func send(_ bytes: [UInt8]) { writeAll(self.remote, bytes) }

    /// Closes the remote side once: the channel's reads then see the end of the stream.
    func closeRemote() {
        if !self.remoteClosed.exchange(true, ordering: .relaxed) { Glibc.close(self.remote) }
    }

    /// Closes both sides.
    func close() {
        self.closeRemote()
        Glibc.close(self.local)
    }
}

/// The capacity of the pipe `fd` belongs to (F_GETPIPE_SZ).
func pipeCapacity(_ fd: CInt) -> Int {
    Int(fcntl(fd, 1_032))  // F_GETPIPE_SZ, hidden without _GNU_SOURCE
}

/// Waits (bounded) until the pipe `reader` belongs to is full.
func waitUntilFull(pipe reader: CInt) -> Bool {
    let capacity = pipeCapacity(reader)
    return eventually { pendingBytes(reader) >= capacity }
}

extension HandlerCall {
    /// A non-final delivery.
    static func more(_ text: String) -> HandlerCall { HandlerCall(false, text) }
    static func more(_ bytes: [UInt8]) -> HandlerCall { HandlerCall(false, bytes) }
    /// The final call of a read that got its length.
    static func done(_ text: String) -> HandlerCall { HandlerCall(true, text) }
    static func done(_ bytes: [UInt8]) -> HandlerCall { HandlerCall(true, bytes) }
    /// The final call at the end of the file: empty, not nil (R35).
    static let eof = HandlerCall(true, [UInt8]())
    /// The final call of a write that wrote everything (R39).
    static let written = HandlerCall(true, nil as [UInt8]?)
    /// A final call with an error: no data for a read (R36), the remaining data for a write (R40).
    static func failed(_ error: Errno) -> HandlerCall { HandlerCall(true, nil as [UInt8]?, error) }
    static func failed(_ error: Errno, remaining: String) -> HandlerCall { HandlerCall(true, remaining, error) }
    static func failed(_ error: Errno, remaining: [UInt8]) -> HandlerCall { HandlerCall(true, remaining, error) }
}

/// The bytes of `pattern(count, seed:)`, made fast enough for megabytes in a debug build.
func patternBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var value = UInt8(truncatingIfNeeded: seed &* 31 &+ 7)
        for index in 0..<count {
            buffer[index] = value
            value &+= 31
        }
        initialized = count
    }
}

/// Checks `got == expected` for byte arrays of any size. (A failing `#expect(a == b)` on
/// megabytes makes the testing library compute a diff, which takes minutes.)
func expectSameBytes(
    _ got: [UInt8],
    _ expected: [UInt8],
    _ what: String = "bytes",
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard got != expected else { return }
    let firstDifference = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
    Issue.record(
        "\(what) differ: got \(got.count) bytes, expected \(expected.count); first difference at \(firstDifference.map(String.init) ?? "the end of the shorter")",
        sourceLocation: sourceLocation
    )
}
