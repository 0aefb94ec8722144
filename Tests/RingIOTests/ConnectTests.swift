//===----------------------------------------------------------------------===//
// RingIO tests — outbound connections: IOConnection.connect, against real peers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A resolver with fixed answers, per family, each after a delay: for the Happy Eyeballs
/// tests (no test reaches a real DNS server).
struct FixedResolver: NameResolver {
    var ipv6: Result<[SocketAddress], NameResolutionError>
    var ipv4: Result<[SocketAddress], NameResolutionError>
    var ipv6Delay: Duration = .zero
    var ipv4Delay: Duration = .zero

    func resolve(
        host: String,
        port: UInt16,
        family: SocketAddress.Family
    ) async throws(NameResolutionError)
        -> [SocketAddress]
    {
        let (answer, delay) = family == .ipv6 ? (self.ipv6, self.ipv6Delay) : (self.ipv4, self.ipv4Delay)
        // The delay stands for a DNS server's answer time: the behaviour under test is what
        // the connect does meanwhile, so no event can replace it.
        if delay > .zero { try? await Task.sleep(for: delay) }
        return try answer.get().map { $0.withPort(port) }
    }
}

extension FixedResolver {
    /// Answers with the IPv6 and the IPv4 loopback address, the IPv6 one after `ipv6Delay`.
    static func loopbacks(ipv6Delay: Duration = .zero) throws -> FixedResolver {
        FixedResolver(
            ipv6: .success([try SocketAddress(ipAddress: "::1", port: 0)]),
            ipv4: .success([try SocketAddress(ipAddress: "127.0.0.1", port: 0)]),
            ipv6Delay: ipv6Delay
        )
    }
}

/// Connects to "both.test" — a name only `options.resolver` knows — on `port`.
private func connectToBothTest(
    port: UInt16,
    options: IOConnection.ConnectOptions,
    ring: RingLoop
) async throws -> IOConnection {
    try await IOConnection.connect(host: "both.test", port: port, options: options, ring: ring)
}

extension SocketAddress {
    /// The same address with another port (IPv4 and IPv6).
    func withPort(_ port: UInt16) -> SocketAddress {
        (try? SocketAddress(ipAddress: self.ipAddress ?? "", port: port)) ?? self
    }
}

/// A listening socket whose accept queue is full and that never accepts: SYNs to it are
/// dropped, so a connect to it neither succeeds nor fails until it times out (the kernel's
/// retransmissions take seconds). Closed on deinit.
final class BlackHoleListener: @unchecked Sendable {
    // @unchecked: immutable after init.
    let fd: CInt
    let filler: CInt
    let address: SocketAddress

    init(host: String = "127.0.0.1") throws {
        let family = host.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        let any = try SocketAddress(ipAddress: host, port: 0)
        try #require(any.withUnsafeSocketAddress { bind(fd, $0, $1) } == 0)
        try #require(listen(fd, 0) == 0)
        let port = try #require(boundPort(fd))
        self.fd = fd
        self.address = try SocketAddress(ipAddress: host, port: port)
        // Backlog 0 holds one connection: this one fills it (the handshake completes in the
        // kernel, so the blocking connect returns once it is queued).
        let filler = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(filler >= 0)
        try #require(self.address.withUnsafeSocketAddress { Glibc.connect(filler, $0, $1) } == 0)
        self.filler = filler
    }

    deinit {
        close(self.filler)
        close(self.fd)
    }
}

/// The number of TCP sockets in state SYN_SENT towards `port` on the loopback addresses
/// (`/proc/net/tcp` and `tcp6`): a connect under way.
func synSentSockets(toPort port: UInt16) -> Int {
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let file = fopen(table, "r") else { continue }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let fields = String(cString: line!).split(separator: " ")
            // sl local_address rem_address st …
            guard fields.count > 3, let colon = fields[2].lastIndex(of: ":"),
                UInt16(fields[2][fields[2].index(after: colon)...], radix: 16) == port, fields[3] == "02"
            else { continue }
            count += 1
        }
        free(line)
    }
    return count
}

/// Writes `bytes` on `connection` and reads the same number back (an echo peer).
func roundTrip(_ connection: IOConnection, _ bytes: [UInt8]) async throws -> [UInt8] {
    try await connection.channel.write(ByteRope(copying: bytes))
    var received: [UInt8] = []
    for try await data in connection.channel.reads() {
        received += data
        if received.count >= bytes.count { break }
    }
    return received
}

@Suite("IOConnection.connect: outbound stream connections", .timeLimit(.minutes(2)))
struct ConnectTests {
    @Test("connects to a Python server over IPv4, and the connection is a working channel")
    func pythonIPv4() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let peer = try PeerProcess.pythonEcho(bind: "('127.0.0.1', 0)")
            defer { peer.stop() }
            let port = try peer.port()
            let connection = try await IOConnection.connect(host: "127.0.0.1", port: port, ring: ring)
            #expect(connection.ring === ring)
            #expect(connection.remoteAddress == (try SocketAddress(ipAddress: "127.0.0.1", port: port)))
            let local = try #require(connection.localAddress)
            #expect(local.family == .ipv4 && local.ipAddress == "127.0.0.1" && local.port != 0)
            let payload = pattern(100_000)
            #expect(try await roundTrip(connection, payload) == payload)
            connection.channel.close()
        }
    }

    @Test("connects to a Python server over IPv6 (::1)", .ipv6LoopbackAvailable)
    func pythonIPv6() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let peer = try PeerProcess.pythonEcho(family: "AF_INET6", bind: "('::1', 0)")
            defer { peer.stop() }
            let port = try peer.port()
            let connection = try await IOConnection.connect(host: "::1", port: port, ring: ring)
            #expect(connection.remoteAddress?.description == "[::1]:\(port)")
            #expect(try await roundTrip(connection, Array("hello over IPv6".utf8)) == Array("hello over IPv6".utf8))
            connection.channel.close()
        }
    }

    @Test("connects to socat, and half-closes: socat sees the end of input and answers it")
    func socat() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            try #require(peerToolExists("socat"), "socat is not installed")
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let directory = try TemporaryDirectory()
            let path = directory.file("socat.sock")
            // socat reads until our half-close, then `wc -c` prints the count and socat closes.
            let peer = try PeerProcess("socat", ["UNIX-LISTEN:\(path)", "EXEC:wc -c"])
            defer { peer.stop() }
            let address = try SocketAddress(unixPath: path)
            // socat listens once it has bound: until then the connect is refused (or the file is
            // missing); a refused attempt is the event that says "not yet".
            var connection: IOConnection?
            let deadline = monotonicSeconds() + 20
            while connection == nil && monotonicSeconds() < deadline {
                let attempt = await connectResult(to: address, ring: ring)
                switch attempt {
                case .success(let made):
                    connection = made
                case .failure(let error):
                    try #require(error.reason == .refused || error.errno == .noSuchFileOrDirectory, "\(error)")
                    try await Task.sleep(for: .milliseconds(20))  // socat starting: no event to wait on
                }
            }
            let connected = try #require(connection)
            #expect(connected.remoteAddress?.unixPath == path)
            try await connected.channel.write(ByteRope(copying: pattern(12_345)))
            try await connected.channel.shutdownOutput()
            let answer = try await connected.channel.read(length: .max)
            #expect(String(decoding: answer, as: UTF8.self).trimmingSpaces == "12345")
            connected.channel.close()
        }
    }

    @Test("handler form: the result on a DispatchQueue and on the ring, the connection usable there")
    func handlers() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let peer = try PeerProcess.pythonEcho(bind: "('127.0.0.1', 0)")
        defer { peer.stop() }
        let port = try peer.port()
        for queue in [DispatchQueue(label: "connect") as any IOQueue, ring] {
            let done = DispatchSemaphore(value: 0)
            let echoed = _TestLock<[UInt8]>([])
            IOConnection.connect(host: "127.0.0.1", port: port, ring: ring, queue: queue) { result in
                if let dispatchQueue = queue as? DispatchQueue {
                    dispatchPrecondition(condition: .onQueue(dispatchQueue))
                } else {
                    #expect(ring.isCurrentThread)
                }
                guard case .success(let connection) = result else {
                    Issue.record("connect failed: \(result)")
                    done.signal()
                    return
                }
                connection.channel.write(offset: 0, data: ByteRope(copying: "ping".utf8), queue: queue) { _, _, _ in }
                connection.channel.read(offset: 0, length: 4, queue: queue) { finished, data, _ in
                    if let data { echoed.withLock { $0 += data } }
                    if finished {
                        connection.channel.close()
                        done.signal()
                    }
                }
            }
            #expect(wait(done, seconds: 20))
            #expect(echoed.withLock { $0 } == Array("ping".utf8))
        }
    }

    @Test("a port with no listener: refused, with the address and ECONNREFUSED")
    func refused() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let port = try freePort()
            let thrown = await thrownError {
                _ = try await IOConnection.connect(host: "127.0.0.1", port: port, ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { error in
                error.reason == .refused && error.errno == .connectionRefused
                    && error.attempts.map(\.error) == [.connectionRefused]
                    && error.attempts.first?.address.port == port
                    && error.description.contains("connection refused")
            }
        }
    }

    @Test("a listener that never accepts: the connect times out, and its socket is closed")
    func timesOut() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let hole = try BlackHoleListener()
            var options = IOConnection.ConnectOptions()
            options.timeout = .milliseconds(300)
            let port = try #require(hole.address.port)
            let thrown = await thrownError {
                _ = try await IOConnection.connect(to: hole.address, options: options, ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { error in
                error.reason == .timedOut && error.errno == .timedOut
                    && error.attempts.map(\.error) == [.timedOut]
            }
            // The half-open socket is closed: no SYN_SENT socket towards the port is left.
            #expect(eventually { synSentSockets(toPort: port) == 0 })
        }
    }

    @Test("cancelling the task mid-connect closes the half-open socket and throws .canceled")
    func taskCancellation() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let hole = try BlackHoleListener()
            let port = try #require(hole.address.port)
            // On the ring's executor, not the test's: under AddressSanitizer in CI, with the
            // whole suite beside it, a connect task on the test's executor did not start within
            // 10 s.
            // A connect that only the cancellation ends: with the default 10 s timeout, under
            // ThreadSanitizer in CI the connect timed out before this test had seen its SYN_SENT
            // socket and cancelled it.
            var options = IOConnection.ConnectOptions()
            options.timeout = .seconds(600)
            let task = Task(executorPreference: ring.taskExecutor) { [options] in
                try await IOConnection.connect(to: hole.address, options: options, ring: ring)
            }
            // Mid-connect: the kernel holds a socket in SYN_SENT towards the port. Polled on this
            // thread, as the handler form does.
            let connecting = eventually(seconds: 30) { synSentSockets(toPort: port) == 1 }
            #expect(connecting)
            task.cancel()
            let result = await task.result
            guard case .failure(let error as ConnectError) = result else {
                Issue.record("expected a ConnectError, got \(result)")
                return
            }
            #expect(error.reason == .canceled)
            let closed = eventually { synSentSockets(toPort: port) == 0 }
            #expect(closed)
        }
    }

    @Test("Connecting.cancel() mid-connect: the handler gets .canceled once, the socket is closed")
    func handleCancellation() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let hole = try BlackHoleListener()
        let port = try #require(hole.address.port)
        let calls = _TestLock<[Result<IOConnection, ConnectError>]>([])
        let done = DispatchSemaphore(value: 0)
        // Only the cancellation ends this connect (see the async test above).
        var options = IOConnection.ConnectOptions()
        options.timeout = .seconds(600)
        let connecting = IOConnection.connect(to: hole.address, options: options, queue: ring) { result in
            calls.withLock { $0.append(result) }
            done.signal()
        }
        #expect(eventually { synSentSockets(toPort: port) == 1 })
        connecting.cancel()
        connecting.cancel()
        #expect(wait(done, seconds: 10))
        #expect(eventually { synSentSockets(toPort: port) == 0 })
        // A barrier through the ring: anything else the connect delivered would be there.
        let barrier = DispatchSemaphore(value: 0)
        ring.enqueue { barrier.signal() }
        barrier.wait()
        let results = calls.withLock { $0 }
        #expect(results.count == 1)
        if case .failure(let error) = results.first {
            #expect(error.reason == .canceled)
        } else {
            Issue.record("expected .canceled, got \(results)")
        }
    }

    @Test("Happy Eyeballs: a name with IPv6 and IPv4 connects over IPv6 first", .ipv6LoopbackAvailable)
    func bothFamiliesPreferIPv6() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "::", port: 0, ring: ring)
            defer { listener.close() }
            var options = IOConnection.ConnectOptions()
            options.resolver = try FixedResolver.loopbacks()
            let connection = try await connectToBothTest(port: listener.port, options: options, ring: ring)
            #expect(connection.remoteAddress?.family == .ipv6)
            connection.channel.close()
        }
    }

    @Test("Happy Eyeballs: IPv6 refused, IPv4 answers: connected over IPv4 at once", .ipv6LoopbackAvailable)
    func ipv6RefusedFallsBack() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            defer { listener.close() }
            var options = IOConnection.ConnectOptions()
            options.connectionAttemptDelay = .seconds(30)  // the fallback must not wait for it
            options.resolver = try FixedResolver.loopbacks()
            let connection = try await connectToBothTest(port: listener.port, options: options, ring: ring)
            #expect(connection.remoteAddress?.family == .ipv4)
            connection.channel.close()
        }
    }

    @Test(
        "Happy Eyeballs: an IPv6 address that never answers is raced by IPv4 after the attempt delay",
        .ipv6LoopbackAvailable
    )
    func raceAfterAttemptDelay() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IOConnection.ConnectOptions()
            options.connectionAttemptDelay = .milliseconds(100)
            // Both resolve to the same port number: the black hole's on ::1, the listener's on
            // 127.0.0.1 — a listener is made on the hole's port. That port may be taken on
            // 127.0.0.1 (another test's socket, in a parallel run: EADDRINUSE): then another.
            var made: (hole: BlackHoleListener, listener: IOListener)?
            for _ in 0..<20 where made == nil {
                let hole = try BlackHoleListener(host: "::1")
                do {
                    made = (hole, try IOListener(host: "127.0.0.1", port: try #require(hole.address.port), ring: ring))
                } catch Errno.addressInUse {
                    continue
                }
            }
            let (hole, second) = try #require(made, "no port free on both ::1 and 127.0.0.1")
            let holePort = try #require(hole.address.port)
            defer { second.close() }
            options.resolver = FixedResolver(
                ipv6: .success([hole.address]),
                ipv4: .success([try SocketAddress(ipAddress: "127.0.0.1", port: holePort)])
            )
            let connection = try await connectToBothTest(port: holePort, options: options, ring: ring)
            #expect(connection.remoteAddress == (try SocketAddress(ipAddress: "127.0.0.1", port: holePort)))
            // The losing IPv6 attempt is cancelled and its socket closed.
            let loserClosed = eventually { synSentSockets(toPort: holePort) == 0 }
            #expect(loserClosed)
            connection.channel.close()
        }
    }

    @Test(
        "Happy Eyeballs: IPv4 answers first, IPv6 soon after: IPv6 is waited for (resolution delay)",
        .ipv6LoopbackAvailable
    )
    func resolutionDelay() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "::", port: 0, ring: ring)
            defer { listener.close() }
            var options = IOConnection.ConnectOptions()
            options.resolutionDelay = .seconds(5)
            options.resolver = try FixedResolver.loopbacks(ipv6Delay: .milliseconds(50))
            let connection = try await connectToBothTest(port: listener.port, options: options, ring: ring)
            #expect(connection.remoteAddress?.family == .ipv6)
            connection.channel.close()
        }
    }

    @Test("\"localhost\" through getaddrinfo connects to a dual-stack listener")
    func localhostSystemResolver() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: ipv6LoopbackIsAvailable ? "::" : "127.0.0.1", port: 0, ring: ring)
            defer { listener.close() }
            let connection = try await IOConnection.connect(host: "localhost", port: listener.port, ring: ring)
            let remote = try #require(connection.remoteAddress)
            #expect(remote.ipAddress == "127.0.0.1" || remote.ipAddress == "::1")
            connection.channel.close()
        }
    }

    @Test("a name that does not resolve: .nameNotResolved with the resolver's reason, nothing dialled")
    func nameNotResolved() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IOConnection.ConnectOptions()
            let failure = NameResolutionError(
                host: "nowhere.test",
                family: .ipv6,
                code: EAI_NONAME,
                message: "Name or service not known"
            )
            options.resolver = FixedResolver(
                ipv6: .failure(failure),
                ipv4: .failure(
                    NameResolutionError(host: "nowhere.test", family: .ipv4, code: EAI_NONAME, message: "no A")
                )
            )
            let thrown = await thrownError {
                _ = try await IOConnection.connect(host: "nowhere.test", port: 80, options: options, ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { error in
                guard case .nameNotResolved(let reason) = error.reason else { return false }
                return reason == failure && error.attempts.isEmpty && error.host == "nowhere.test"
                    && error.description.contains("Name or service not known")
            }
        }
    }

    @Test("the system resolver reports getaddrinfo's reason for a name it cannot resolve")
    func systemResolverFailure() async {
        await withTaskExecutorPreference(testTaskExecutor) {
            // An empty name is refused by getaddrinfo itself, before any lookup.
            let thrown = await thrownError {
                _ = try await SystemResolver().resolve(host: "", port: 80, family: .ipv4)
            }
            expectThrown(thrown, as: NameResolutionError.self) { error in
                error.code == EAI_NONAME && !error.message.isEmpty
            }
        }
    }

    @Test("a local address of another family: EAFNOSUPPORT for that attempt, nothing dialled")
    func localAddressOfAnotherFamily() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IOConnection.ConnectOptions()
            options.localAddress = try SocketAddress(ipAddress: "::1", port: 0)
            let thrown = await thrownError {
                _ = try await IOConnection.connect(host: "127.0.0.1", port: 9, options: options, ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { error in
                error.reason == .other(.addressFamilyNotSupported)
                    && error.attempts.map(\.error) == [.addressFamilyNotSupported]
            }
        }
    }

    @Test("a local address and port are bound before connecting")
    func localAddressBound() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            defer { listener.close() }
            var options = IOConnection.ConnectOptions()
            options.keepAlive = true
            // The port is free when chosen; another test may bind it before the connect does
            // (it happened in CI's ThreadSanitizer lane): then another port.
            var connected: IOConnection?
            var localPort: UInt16 = 0
            for _ in 0..<20 where connected == nil {
                localPort = try freePort()
                options.localAddress = try SocketAddress(ipAddress: "127.0.0.1", port: localPort)
                do throws(ConnectError) {
                    connected = try await IOConnection.connect(
                        host: "127.0.0.1",
                        port: listener.port,
                        options: options,
                        ring: ring
                    )
                } catch {
                    guard error.attempts.contains(where: { $0.error == .addressInUse }) else { throw error }
                }
            }
            let connection = try #require(connected, "every local port tried was in use")
            #expect(connection.localAddress?.port == localPort)
            let fd = connection.channel.fileDescriptor
            var value: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            #expect(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, &length) == 0 && value == 1)
            #expect(getsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 && value == 1)
            connection.channel.close()
        }
    }

    @Test("a Unix path too long, or empty: a clear error before anything is made")
    func badUnixPaths() throws {
        let long = "/tmp/" + String(repeating: "x", count: 200)
        #expect {
            _ = try SocketAddress(unixPath: long)
        } throws: { error in
            guard let error = error as? SocketAddressError else { return false }
            return error.reason == .pathTooLong && error.errno == .fileNameTooLong && error.description.contains("108")
                || error.description.contains("107")
        }
        #expect(throws: SocketAddressError.self) { try SocketAddress(unixPath: "") }
        #expect(throws: SocketAddressError.self) { try SocketAddress(ipAddress: "localhost", port: 1) }
        #expect(throws: SocketAddressError.self) { try SocketAddress(ipAddress: "fe80::1%no-such-interface0", port: 1) }
    }

    @Test("a connect on a ring that has shut down ends with .canceled, not a hang")
    func ringShutDown() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            await ring.shutdown()
            let thrown = await thrownError {
                _ = try await IOConnection.connect(host: "127.0.0.1", port: 9, ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { $0.reason == .canceled }
        }
    }
}

/// `IOConnection.connect(to:ring:)` as a `Result`.
func connectResult(to address: SocketAddress, ring: RingLoop) async -> Result<IOConnection, ConnectError> {
    do throws(ConnectError) {
        return .success(try await IOConnection.connect(to: address, ring: ring))
    } catch {
        return .failure(error)
    }
}

extension String {
    /// Without leading and trailing spaces and newlines.
    var trimmingSpaces: String {
        String(self.drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
    }
}

/// The error `body` throws, or `nil`: await into a local, then check it with `#expect` (never
/// `#expect` around an `await` of a closure; see Tests/RingIOTestSupport/Waiting.swift).
func thrownError(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// Expects `thrown` to be an `E` for which `predicate` holds.
func expectThrown<E: Error>(
    _ thrown: (any Error)?,
    as type: E.Type,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ predicate: (E) -> Bool
) {
    let holds = (thrown as? E).map(predicate) ?? false
    #expect(holds, "\(String(describing: thrown))", sourceLocation: sourceLocation)
}
