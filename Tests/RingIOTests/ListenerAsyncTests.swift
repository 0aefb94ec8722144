//===----------------------------------------------------------------------===//
// RingIO — IOListener for Swift concurrency: connections() and serve(_:) under load, the
// connection cap counted by the listener, cancellation, close, group shutdown, and the
// preconditions of the async listener.
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

// Each test's body, and every task of its own off the rings, runs on `testTaskExecutor`
// (threads of its own), and the blocking clients on threads of their own (`onThread`), not on
// dispatch's global queues, where the cooperative pool runs too: synchronous tests running in
// parallel block their threads (two on this machine) for seconds at a time, and an accepting
// loop starved of a thread looks like a listener that stopped accepting (a client of the
// 10,000-connection test once waited 5 s for its echo that way).

/// Connects a client to 127.0.0.1:`port` within 5 s, retrying for a while when descriptors
/// run out (another test may hold many at the moment).
private func connectRetrying(_ port: UInt16) -> Result<CInt, Errno> {
    func attempt() -> Result<CInt, Errno> {
        let fd = clientSocket("127.0.0.1")
        guard fd >= 0 else { return .failure(Errno(rawValue: errno)) }
        // A blocking connect gives up after SO_SNDTIMEO.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return connectClient("127.0.0.1", port, socket: fd)
    }
    var outcome = attempt()
    _ = eventually(seconds: 5) {
        guard case .failure(let error) = outcome,
            error == .tooManyOpenFiles || error == .tooManyOpenFilesInSystem || error == .noBufferSpace
        else { return true }
        outcome = attempt()
        return false
    }
    return outcome
}

/// What the clients of ``echoInWaves(port:count:wave:)`` saw.
private struct WavesOutcome: Sendable {
    var echoed = 0
    var failures: [String] = []
}

/// Connects `count` clients to 127.0.0.1:`port`, `wave` at a time: each client of a wave
/// sends its number (8 bytes) and expects it back; then the wave's clients are reset (no
/// TIME_WAIT left behind) and the next wave starts. Blocking sockets; every read is bounded.
private func echoInWaves(port: UInt16, count: Int, wave: Int) -> WavesOutcome {
    var outcome = WavesOutcome()
    var next = 0
    while next < count && outcome.failures.count < 10 {
        var clients: [(fd: CInt, number: Int)] = []
        for number in next..<min(next + wave, count) {
            switch connectRetrying(port) {
            case .success(let fd): clients.append((fd, number))
            case .failure(let error): outcome.failures.append("connect \(number): \(error)")
            }
        }
        next += wave
        for client in clients {
            let message = withUnsafeBytes(of: UInt64(client.number).bigEndian) { Array($0) }
            // MSG_NOSIGNAL: a server end gone by mistake must fail the test, not kill it (SIGPIPE).
            let written = message.withUnsafeBytes { send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written != message.count { outcome.failures.append("write \(client.number): \(written)") }
        }
        for client in clients {
            let message = withUnsafeBytes(of: UInt64(client.number).bigEndian) { Array($0) }
            let echoed = readExactly(client.fd, message.count)
            if echoed == message {
                outcome.echoed += 1
            } else {
                outcome.failures.append("echo \(client.number): \(echoed) (errno \(errno))")
            }
        }
        for client in clients { resetAndClose(client.fd) }
    }
    return outcome
}

/// Whether a new connection to 127.0.0.1:`port` is refused (tried for a while).
private func refusesConnections(_ port: UInt16) -> Bool {
    eventually(seconds: 5) {
        switch connectClient("127.0.0.1", port) {
        case .success(let fd):
            close(fd)
            return false
        case .failure(let error):
            return error == .connectionRefused
        }
    }
}

/// Whether the server end of `fd` is gone: a read sees the end of the stream (bounded).
func seesEndOfStream(_ fd: CInt) -> Bool {
    setReceiveTimeout(fd, seconds: 5)
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count == 0 { return true }
        if count < 0 && errno == EINTR { continue }
        // A server that closes with bytes of ours unread resets the connection: that ends the
        // stream too (in CI's ThreadSanitizer lane, serve was cancelled before some handlers
        // had read their client's byte).
        if count < 0 && errno == ECONNRESET { return true }
        if count < 0 { return false }
    }
}

/// Live connections of a server under a cap, as the connections' own tasks count them.
private final class LiveCount: Sendable {
    private let state = _Lock<(live: Int, most: Int, served: Int)>((0, 0, 0))

    func begin() {
        self.state.withLock { state in
            state.live += 1
            state.served += 1
            state.most = max(state.most, state.live)
        }
    }

    func end() { self.state.withLock { $0.live -= 1 } }

    var served: Int { self.state.withLock { $0.served } }
    var most: Int { self.state.withLock { $0.most } }
}

// MARK: - Tests

@Suite(
    "IOListener: connections() and serve(_:)",
    .serialized,
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct ListenerAsyncTests {
    @Test("10,000 connections through connections() on two rings, a child task each, clients in waves of 100")
    func tenThousandConnections() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 2, entries: 256)
            defer { group.shutdown() }
            var options = IOListener.Options()
            options.reusePort = true  // a socket per ring: the kernel spreads the connections
            let listener = try IOListener(host: "127.0.0.1", port: 0, options: options, group: group)
            let port = listener.port
            let total = 10_000

            let echoed = Counter()
            let perRing = [Counter(), Counter()]
            let offRing = Counter()
            let failures = Recorder<String>()
            let server = Task(executorPreference: testTaskExecutor) { () -> Errno? in
                await withDiscardingTaskGroup { tasks in
                    do throws(Errno) {
                        for try await connection in listener.connections() {
                            tasks.addTask(executorPreference: connection.ring.taskExecutor) {
                                if !connection.ring.isCurrentThread { offRing.increment() }
                                if let index = group.rings.firstIndex(where: { $0 === connection.ring }) {
                                    perRing[index].increment()
                                }
                                do {
                                    let data = try await connection.channel.read(length: 8)
                                    try await connection.channel.write(data)
                                    echoed.increment()
                                } catch {
                                    failures.append("\(error)")
                                }
                                connection.channel.close()
                            }
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
            }

            let started = ContinuousClock.now
            let clients = await onThread { echoInWaves(port: port, count: total, wave: 100) }
            let elapsed = ContinuousClock.now - started
            #expect(clients.failures.isEmpty, "client failures (first ones): \(clients.failures)")
            #expect(clients.echoed == total, "echoed \(clients.echoed) of \(total) in \(elapsed)")
            #expect(elapsed < .seconds(120), "10,000 connections took \(elapsed)")

            listener.close()
            let ended = await bounded(seconds: 10) { await server.value }
            switch ended {
            case .success(let error)?: #expect(error == nil, "connections() threw \(error.map { "\($0)" } ?? "")")
            default: Issue.record("connections() did not end within 10 s of close()")
            }
            #expect(echoed.count == total)
            #expect(failures.all.isEmpty, "server failures: \(failures.all.prefix(10))")
            #expect(offRing.count == 0, "connection tasks off their ring")
            let counts = perRing.map(\.count)
            #expect(counts.reduce(0, +) == total)
            #expect(counts.allSatisfy { $0 >= total / 10 }, "connections per ring: \(counts)")
            await expectOpenConnections(listener, 0)
        }
    }

    @Test("maxConnections on the async path: at most 4 served at once, the rest once those close")
    func maxConnectionsWithoutConnectionClosed() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            var options = IOListener.Options()
            options.maxConnections = 4
            let listener = try IOListener(host: "127.0.0.1", port: 0, options: options, ring: ring)
            defer { listener.close() }
            let live = LiveCount()
            let server = Task(executorPreference: testTaskExecutor) {
                await withDiscardingTaskGroup { tasks in
                    do {
                        for try await connection in listener.connections() {
                            tasks.addTask(executorPreference: connection.ring.taskExecutor) {
                                live.begin()
                                // "Served": the client gets a byte, then the task waits for its end.
                                try? await connection.channel.write(rope("S"))
                                do {
                                    for try await _ in connection.channel.reads() {}
                                } catch {}
                                live.end()
                                connection.channel.close()  // the listener counts it closed once cleaned up
                            }
                        }
                    } catch {}
                }
            }

            // All eight complete the handshake (the backlog holds them); four are served.
            let clients = try connectClients(8, "127.0.0.1", listener.port)
            defer { for fd in clients { close(fd) } }
            let holds2 = await waitUntil { live.served >= 4 }
            #expect(holds2, "served: \(live.served)")
            // A fifth accepted connection would be counted open once the ring took it.
            await ringBarrier(ring)
            #expect(live.served == 4, "served past the cap of 4")
            #expect(listener.openConnections == 4)
            var served: [CInt] = []
            #expect(
                await waitUntil {
                    served = clients.filter { pendingBytes($0) > 0 }
                    return served.count == 4
                },
                "clients that got their byte: \(served.count)"
            )

            // The served clients leave: their tasks end, their channels close, and the listener
            // accepts the others.
            for fd in served { shutdown(fd, Int32(SHUT_WR)) }
            let holds3 = await waitUntil { live.served == 8 }
            #expect(holds3, "served after the first four left: \(live.served)")
            let waiting = clients.filter { !served.contains($0) }
            #expect(
                await waitUntil { waiting.allSatisfy { pendingBytes($0) > 0 } },
                "the other four were not served"
            )
            #expect(live.most <= 4, "live at once: \(live.most)")
            for fd in waiting { shutdown(fd, Int32(SHUT_WR)) }
            await expectOpenConnections(listener, 0)

            listener.close()
            let holds5 = await bounded(seconds: 10) { await server.value } != nil
            #expect(holds5, "connections() did not end after close()")
        }
    }

    @Test(
        "cancelling the task that runs serve(_:): accepting stops, the connections' awaits throw ECANCELED, serve returns"
    )
    func cancelServe() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 2, entries: 64)
            defer { group.shutdown() }
            var options = IOListener.Options()
            options.reusePort = true
            let listener = try IOListener(host: "127.0.0.1", port: 0, options: options, group: group)
            let port = listener.port
            let started = Counter()
            let onRing = Counter()
            let ends = Recorder<String>()
            let server = Task(executorPreference: testTaskExecutor) {
                await listener.serve { connection in
                    started.increment()
                    if connection.ring.isCurrentThread { onRing.increment() }
                    do {
                        for try await _ in connection.channel.reads() {}
                        ends.append("end of stream")
                    } catch {
                        ends.append("\(error)")
                        throw error
                    }
                }
            }
            let clients = try connectClients(6, "127.0.0.1", port)
            defer { for fd in clients { close(fd) } }
            for fd in clients { writeAll(fd, bytes("x")) }
            let holds6 = await waitUntil { started.count == 6 }
            #expect(holds6, "handlers started: \(started.count)")
            #expect(onRing.count == 6, "handlers on their connection's ring: \(onRing.count)")

            server.cancel()
            let returned = await bounded(seconds: 10) { await server.value }
            #expect(returned != nil, "serve did not return within 10 s of the cancellation")
            #expect(ends.all == Array(repeating: "\(Errno.canceled)", count: 6), "how the handlers ended: \(ends.all)")
            // serve closed each channel and the listener: the clients see the end, new ones are refused.
            let ended = await onThread { clients.filter { seesEndOfStream($0) }.count }
            #expect(ended == 6, "clients that saw the end of the stream: \(ended)")
            let holds7 = await onThread { refusesConnections(port) }
            #expect(holds7, "connections are still accepted")
            await expectOpenConnections(listener, 0)
        }
    }

    @Test("close() ends connections(): after the connections already accepted, normally (nil)")
    func closeEndsIteration() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            let port = listener.port

            // Accepted before close(), not yet taken: still produced, then the end.
            let early = try connectClients(3, "127.0.0.1", port)
            defer { for fd in early { close(fd) } }
            await expectOpenConnections(listener, 3, "accepted")
            listener.close()
            let drained = await drainConnections(listener)
            #expect(try drained?.get() == 3, "connections after close(): \(String(describing: drained))")
            let holds10 = await onThread { refusesConnections(port) }
            #expect(holds10, "connections are still accepted after close()")

            // A task waiting in connections() when the listener is closed: its loop ends normally.
            let second = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            let taken = Counter()
            let waiting = Task(executorPreference: ring.taskExecutor) { () async throws -> Int in
                for try await connection in second.connections() {
                    taken.increment()
                    connection.channel.close()
                }
                return taken.count
            }
            let late = try connectClients(1, "127.0.0.1", second.port)
            defer { for fd in late { close(fd) } }
            let holds11 = await waitUntil { taken.count == 1 }
            #expect(holds11)
            // The iteration has closed the connection and waits for the next one: the rest of its
            // body runs in the same job of the ring as the count, before the barrier's.
            await ringBarrier(ring)
            second.close()
            let ended = await bounded(seconds: 10) { try await waiting.value }
            #expect(try ended?.get() == 1, "the waiting iteration: \(String(describing: ended))")
        }
    }

    @Test("close() while clients connect: every connection counted before it is produced, 400 rounds")
    func closeWhileAccepting() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            var failures: [String] = []
            for round in 0..<400 where failures.count < 5 {
                let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
                let port = listener.port
                // Clients connect back to back on a thread of their own while the listener is
                // closed after a few of them: some accepts are on their way when it closes.
                let clients = Task(executorPreference: testTaskExecutor) {
                    await onThread { () -> [CInt] in
                        var fds: [CInt] = []
                        for _ in 0..<24 {
                            guard case .success(let fd) = connectClient("127.0.0.1", port) else { break }
                            fds.append(fd)
                        }
                        return fds
                    }
                }
                let threshold = 1 + round % 12
                _ = await waitUntil(seconds: 5) { listener.openConnections >= threshold }
                let counted = listener.openConnections
                listener.close()
                let drained = await drainConnections(listener)
                for fd in await clients.value { close(fd) }
                let produced = (try? drained?.get()) ?? -1
                if produced < counted {
                    failures.append("round \(round): \(counted) counted before close(), \(produced) produced")
                }
                let released = await waitUntil(seconds: 5) { listener.openConnections == 0 }
                if !released { failures.append("round \(round): \(listener.openConnections) still open") }
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    @Test("group.shutdown() with handler listeners open returns promptly")
    func shutdownWithHandlerListeners() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 2, entries: 64)
            let log = ListenerLog()
            let ringLog = ListenerLog()
            let onQueue = try reusePortAcceptor(
                group: group,
                queue: DispatchQueue(label: "listener-async-tests"),
                handler: log.handler
            )
            let onRing = try IOAcceptor(host: "127.0.0.1", port: 0, queue: group.rings[1], handler: ringLog.handler)
            let clients =
                try connectClients(4, "127.0.0.1", onQueue.port) + connectClients(4, "127.0.0.1", onRing.port)
            defer {
                for fd in clients { close(fd) }
                log.closeAll()
                ringLog.closeAll()
            }
            let holds12 = await waitUntil { log.accepted.count == 4 && ringLog.accepted.count == 4 }
            #expect(holds12)

            let elapsed = await Self.shutDown(group)
            #expect(elapsed != nil, "group.shutdown() did not return within 10 s")
            withExtendedLifetime((onQueue, onRing)) {}
        }
    }

    @Test("group.shutdown() while a task iterates connections(): shutdown returns, the iteration throws ECANCELED")
    func shutdownWithAsyncListener() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 2, entries: 64)
            var options = IOListener.Options()
            options.reusePort = true
            let listener = try IOListener(host: "127.0.0.1", port: 0, options: options, group: group)
            let served = Counter()
            let connectionEnds = Recorder<String>()
            let iteration = Task(executorPreference: testTaskExecutor) { () async throws -> Int in
                try await withThrowingDiscardingTaskGroup { tasks in
                    for try await connection in listener.connections() {
                        tasks.addTask(executorPreference: connection.ring.taskExecutor) {
                            served.increment()
                            do {
                                _ = try await connection.channel.read(length: 100)
                                connectionEnds.append("read")
                            } catch {
                                connectionEnds.append("\(error)")
                            }
                        }
                    }
                }
                return served.count
            }
            let clients = try connectClients(2, "127.0.0.1", listener.port)
            defer { for fd in clients { close(fd) } }
            let holds13 = await waitUntil { served.count == 2 }
            #expect(holds13)
            // The iteration waits for the next one: the rings have run what the connections' tasks
            // started.
            for ring in group.rings { await ringBarrier(ring) }

            let elapsed = await Self.shutDown(group)
            #expect(elapsed != nil, "group.shutdown() did not return within 10 s")
            let outcome = await bounded(seconds: 10) { try await iteration.value }
            switch outcome {
            case .failure(let error as Errno)?: #expect(error == .canceled)
            default: Issue.record("the iteration did not throw ECANCELED: \(String(describing: outcome))")
            }
            #expect(connectionEnds.all == ["\(Errno.canceled)", "\(Errno.canceled)"], "\(connectionEnds.all)")
            // Nothing leaks: the connections' sockets are closed.
            let ended = await onThread { clients.filter { seesEndOfStream($0) }.count }
            #expect(ended == 2, "clients that saw the end of the stream after the shutdown: \(ended)")
            #expect(listener.openConnections == 0)
        }
    }

    /// Shuts `group` down from a dispatch thread; its duration, or nil when it did not return
    /// within 10 s (the thread is then left behind, so the suite goes on).
    private static func shutDown(_ group: RingLoopGroup) async -> Duration? {
        let returned = Atomic<Bool>(false)
        let started = ContinuousClock.now
        DispatchQueue.global().async {
            group.shutdown()
            returned.store(true, ordering: .releasing)
        }
        guard await waitUntil(seconds: 10, { returned.load(ordering: .acquiring) }) else { return nil }
        return ContinuousClock.now - started
    }
}

/// Waits (bounded) until `listener` has `count` connections open, and expects it has.
private func expectOpenConnections(
    _ listener: IOListener,
    _ count: Int,
    _ what: String = "open",
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let holds = await waitUntil { listener.openConnections == count }
    #expect(holds, "\(what): \(listener.openConnections)", sourceLocation: sourceLocation)
}

/// Takes (bounded) every connection `listener.connections()` still produces, closing each, to
/// the end of the sequence: how many there were, or the error that ended it; nil on time-out.
private func drainConnections(_ listener: IOListener) async -> Result<Int, any Error>? {
    await bounded(seconds: 10) { () async throws -> Int in
        var count = 0
        for try await connection in listener.connections() {
            count += 1
            connection.channel.close()
        }
        return count
    }
}
