//===----------------------------------------------------------------------===//
// RingIO — IOListener's graceful shutdown, with completion handlers and async/await: no
// connection, idle connections, a large write to a slow reader that finishes within the grace
// period (every byte arrives) and one that does not (stopped at the deadline).
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

// MARK: - Support

/// How the test shuts the listener down.
enum ShutdownStyle: String, CaseIterable, CustomTestStringConvertible, Sendable {
    /// `shutdown(gracePeriod:queue:completion:)`.
    case completion
    /// `await shutdown(gracePeriod:)`.
    case async

    var testDescription: String { self.rawValue }
}

/// What the shutdown tests do with a listener of either kind.
private protocol ShuttingDown: Sendable {
    var port: UInt16 { get }
    func shutdown(gracePeriod: Duration, queue: some IOQueue, completion: @escaping @Sendable () -> Void)
    func shutdown(gracePeriod: Duration) async
}

extension IOListener: ShuttingDown {}
extension IOAcceptor: ShuttingDown {}

/// Shuts `listener` down in `style`; whether it completed within `seconds`.
private func shutDown(_ listener: some ShuttingDown, _ style: ShutdownStyle, grace: Duration, seconds: Int = 20) -> Bool
{
    beginShutdown(listener, style, grace: grace)(seconds)
}

/// Begins shutting `listener` down in `style`; the result waits (at most `seconds`) for it to
/// complete. When this returns the shutdown has begun: the listening socket is closed.
private func beginShutdown(
    _ listener: some ShuttingDown,
    _ style: ShutdownStyle,
    grace: Duration
) -> @Sendable (_ seconds: Int) -> Bool {
    let completed = DispatchSemaphore(value: 0)
    switch style {
    case .completion:
        listener.shutdown(gracePeriod: grace, queue: DispatchQueue(label: "listener-shutdown-tests")) {
            completed.signal()
        }
    case .async:
        Task(executorPreference: testTaskExecutor) {
            await listener.shutdown(gracePeriod: grace)
            completed.signal()
        }
    }
    let port = listener.port
    _ = eventually { listeningSocketCount(port: port) == 0 }
    return { seconds in wait(completed, seconds: Double(seconds)) }
}

/// A client whose receive buffer is small (the server's large writes stay in flight until it
/// reads), connected to 127.0.0.1:`port`.
private func slowClient(_ port: UInt16) throws -> CInt {
    let fd = clientSocket("127.0.0.1")
    var size: CInt = 16_384
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
    return try connectClient("127.0.0.1", port, socket: fd).get()
}

/// Reads `fd` until the end of the stream or an error (a reset), on a thread of its own; the
/// result waits for the bytes. (The write tests start it once the shutdown has begun, so that
/// the shutdown finds the write pending however fast the reads go.)
private func readOnThread(_ fd: CInt) -> @Sendable () -> [UInt8] {
    let result = _Lock<[UInt8]?>(nil)
    startThread {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        result.withLock { $0 = bytes }
    }
    return {
        _ = eventually(seconds: 30) { result.withLock { $0 != nil } }
        return result.withLock { $0 } ?? []
    }
}

/// The bytes the server writes to each connection in the write tests: far more than the
/// socket buffers hold, so the write is in flight while the client does not read.
private let largeReply = patternBytes(24 << 20, seed: 17)

// MARK: - Tests

@Suite("IOListener: graceful shutdown", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ListenerShutdownTests {
    @Test("with no connection: completes, and connecting is refused", arguments: ShutdownStyle.allCases)
    func noConnections(_ style: ShutdownStyle) throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { _ in }
        let port = listener.port
        #expect(shutDown(listener, style, grace: .seconds(30)), "the shutdown did not complete")
        #expect(eventually { listeningSocketCount(port: port) == 0 })
        #expect(connectClient("127.0.0.1", port) == .failure(.connectionRefused))
        // A second shutdown completes at once.
        #expect(shutDown(listener, style, grace: .seconds(30)), "the second shutdown did not complete")
    }

    @Test(
        "idle connections (handler listener): each is closed at once, then the shutdown completes",
        arguments: ShutdownStyle.allCases
    )
    func idleConnections(_ style: ShutdownStyle) throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let reads = _Lock<[OperationLog]>([])
        let closed = Counter()
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            guard case .accepted(let connection) = event else { return }
            let log = OperationLog(onQueue: { ring.isCurrentThread })
            reads.withLock { $0.append(log) }
            connection.whenClosed { closed.increment() }
            log.submitting {
                connection.channel.read(offset: 0, length: .max, queue: ring, handler: log.readHandler)
            }
        }
        let clients = try connectClients(5, "127.0.0.1", listener.port)
        defer { for fd in clients { close(fd) } }
        try #require(eventually { listener.openConnections == 5 && reads.withLock { $0.count } == 5 })
        // A grace period far longer than the test: idle connections do not wait for it.
        #expect(shutDown(listener, style, grace: .seconds(600)), "the shutdown did not complete")
        #expect(listener.openConnections == 0)
        #expect(closed.count == 5)
        for log in reads.withLock({ $0 }) {
            #expect(log.final?.error == .canceled, "\(log.calls)")
        }
        for fd in clients { #expect(seesEndOfStream(fd)) }
    }

    @Test(
        "idle connections (async listener, serve): their tasks end, serve returns",
        arguments: ShutdownStyle.allCases
    )
    func idleAsyncConnections(_ style: ShutdownStyle) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            let ends = Recorder<String>()
            let serving = Task(executorPreference: ring.taskExecutor) {
                await listener.serve { connection in
                    do {
                        for try await _ in connection.channel.reads() {}
                        ends.append("end")
                    } catch {
                        ends.append("\(error)")
                    }
                }
            }
            let clients = try connectClients(3, "127.0.0.1", listener.port)
            defer { for fd in clients { close(fd) } }
            let open = await onThread { eventually { listener.openConnections == 3 } }
            try #require(open)
            let completed = await onThread { shutDown(listener, style, grace: .seconds(600)) }
            #expect(completed, "the shutdown did not complete")
            let served = await bounded(seconds: 10) { await serving.value }
            #expect(served != nil, "serve did not return")
            #expect(ends.all == Array(repeating: "\(Errno.canceled)", count: 3), "\(ends.all)")
            let ended = await onThread { clients.filter { seesEndOfStream($0) }.count }
            #expect(ended == 3)
        }
    }

    @Test(
        "a large write to a slow reader finishes within the grace period: every byte arrives",
        arguments: ShutdownStyle.allCases
    )
    func writeFinishesInTime(_ style: ShutdownStyle) throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let write = OperationLog(onQueue: { ring.isCurrentThread })
        let read = OperationLog(onQueue: { ring.isCurrentThread })
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            guard case .accepted(let connection) = event else { return }
            let channel = connection.channel
            read.submitting { channel.read(offset: 0, length: .max, queue: ring, handler: read.readHandler) }
            write.submitting {
                channel.write(offset: 0, data: ByteRope(copying: largeReply), queue: ring, handler: write.writeHandler)
            }
        }
        let client = try slowClient(listener.port)
        defer { close(client) }
        try #require(eventually { listener.openConnections == 1 })
        // The write is under way and blocked: the client's small buffer holds some of it.
        try #require(eventually { pendingBytes(client) > 0 })
        ringBarrier(ring)
        try #require(!write.isFinished, "the write finished before the shutdown: the test proves nothing")
        let completion = beginShutdown(listener, style, grace: .seconds(60))
        let received = readOnThread(client)
        #expect(completion(20), "the shutdown did not complete")
        #expect(write.isFinished && write.final?.error == nil, "\(String(describing: write.final))")
        #expect(read.final?.error == .canceled, "\(read.calls)")
        let bytes = received()
        #expect(bytes.count == largeReply.count)
        let same = bytes == largeReply  // not inside #expect: a failure would diff 24 MiB
        #expect(same, "the bytes differ")
        #expect(listener.openConnections == 0)
    }

    @Test(
        "a write that does not finish within the grace period is stopped at the deadline",
        arguments: ShutdownStyle.allCases
    )
    func writeStoppedAtDeadline(_ style: ShutdownStyle) throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let write = OperationLog(onQueue: { ring.isCurrentThread })
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            guard case .accepted(let connection) = event else { return }
            write.submitting {
                connection.channel.write(
                    offset: 0,
                    data: ByteRope(copying: largeReply),
                    queue: ring,
                    handler: write.writeHandler
                )
            }
        }
        let client = try slowClient(listener.port)  // and never reads until the shutdown is over
        defer { close(client) }
        try #require(eventually { listener.openConnections == 1 })
        // The write is under way and blocked: the client's small buffer holds some of it.
        try #require(eventually { pendingBytes(client) > 0 })
        ringBarrier(ring)
        try #require(!write.isFinished, "the write finished before the shutdown: the test proves nothing")
        #expect(shutDown(listener, style, grace: .milliseconds(200)), "the shutdown did not complete")
        let final = write.final
        #expect(final?.error == .canceled, "\(String(describing: final))")
        let remaining = final?.bytes?.count ?? 0
        #expect(remaining > 0 && remaining < largeReply.count, "remaining: \(remaining)")
        #expect(listener.openConnections == 0)
        // The client gets what the kernel took, then the end of the stream.
        let bytes = readOnThread(client)()
        #expect(bytes.count == largeReply.count - remaining)
        let prefix = bytes == Array(largeReply.prefix(bytes.count))  // no diff of MiB on failure
        #expect(prefix, "the bytes differ from the reply's first ones")
    }

    @Test(
        "whenShuttingDown: a connection finishes by itself (a last write, then close); one that does not is stopped at the deadline",
        arguments: ShutdownStyle.allCases
    )
    func connectionFinishesItself(_ style: ShutdownStyle) throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let asked = Counter()
        let accepted = Counter()
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            guard case .accepted(let connection) = event else { return }
            let channel = connection.channel
            // The first connection says goodbye and closes; the second does nothing when asked
            // (it is stopped at the end of the grace period).
            let polite = accepted.count == 0
            accepted.increment()
            channel.read(offset: 0, length: .max, queue: ring) { done, _, _ in
                if done { channel.close() }
            }
            connection.whenShuttingDown {
                #expect(ring.isCurrentThread, "whenShuttingDown ran off the accepting ring")
                asked.increment()
                guard polite else { return }
                channel.write(offset: 0, data: ByteRope(copying: "bye".utf8), queue: ring) { _, _, _ in }
                channel.close()  // a plain close: the write goes out first; the read waits for EOF
            }
        }
        let polite = try connectClient("127.0.0.1", listener.port).get()
        defer { close(polite) }
        try #require(eventually { accepted.count == 1 })
        let silent = try connectClient("127.0.0.1", listener.port).get()
        defer { close(silent) }
        try #require(eventually { listener.openConnections == 2 })
        // The polite connection's read ends when its client shuts its side down after "bye".
        let politeBytes = readOnThread(polite)
        startThread {
            _ = eventually { asked.count == 2 }
            shutdown(polite, CInt(SHUT_WR))
        }
        #expect(shutDown(listener, style, grace: .milliseconds(300)), "the shutdown did not complete")
        #expect(asked.count == 2)
        #expect(String(decoding: politeBytes(), as: UTF8.self) == "bye")
        #expect(seesEndOfStream(silent))
        #expect(listener.openConnections == 0)
    }

    @Test("async: a task's write finishes within the grace period, then its read ends and serve returns")
    func asyncWriteFinishesInTime() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            let outcome = Recorder<String>()
            let writing = Atomic<Bool>(false)
            let serving = Task(executorPreference: ring.taskExecutor) {
                await listener.serve { connection in
                    writing.store(true, ordering: .releasing)
                    do {
                        try await connection.channel.write(ByteRope(copying: largeReply))
                        outcome.append("written")
                        for try await _ in connection.channel.reads() {}
                        outcome.append("end")
                    } catch {
                        outcome.append("\(error)")
                    }
                }
            }
            let client = try slowClient(listener.port)
            defer { close(client) }
            // The write is under way and blocked: the client's small buffer holds some of it.
            let started = await onThread {
                eventually { writing.load(ordering: .acquiring) && pendingBytes(client) > 0 }
            }
            try #require(started)
            await ringBarrier(ring)
            try #require(outcome.all.isEmpty, "the write finished before the shutdown: the test proves nothing")
            let completion = await onThread { beginShutdown(listener, .async, grace: .seconds(60)) }
            let received = readOnThread(client)
            let completed = await onThread { completion(20) }
            #expect(completed, "the shutdown did not complete")
            #expect(outcome.all == ["written", "\(Errno.canceled)"], "\(outcome.all)")
            let bytes = await onThread { received() }
            #expect(bytes.count == largeReply.count)
            let same = bytes == largeReply  // not inside #expect: a failure would diff 24 MiB
            #expect(same, "the bytes differ")
            let served = await bounded(seconds: 10) { await serving.value }
            #expect(served != nil, "serve did not return")
        }
    }
}
