//===----------------------------------------------------------------------===//
// RingIO — server tests: echo-server, as a process, with many clients.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("echo-server", .serialized, .enabled(if: ringIsAvailable, ringUnavailableReason))
struct EchoServerTests {
    /// Every way of serving a connection: handlers on the accepting ring, handlers on a
    /// DispatchQueue per connection, a task per connection on the accepting ring.
    static let modes = ["ring", "dispatch", "async"]

    /// The options that select `mode`.
    static func options(_ mode: String) -> [String] {
        mode == "async" ? ["--api", "async"] : ["--queue", mode]
    }

    /// `connections` clients at once, each sending `messages` messages of random sizes (1 byte
    /// to 64 KiB) and checking each echo byte for byte.
    private func echo(port: UInt16, connections: Int, messages: Int, seed: UInt64) -> [String] {
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: connections) { index in
            var generator = SplitMix64(seed: seed &+ UInt64(index))
            guard let fd = try? connectClient(port: port) else {
                failures.withLock { $0.append("connection \(index): connect failed") }
                return
            }
            defer { close(fd) }
            for message in 0..<messages {
                let size = Int(generator.next() % 65_536) + 1
                let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                guard sendAll(fd, bytes) else {
                    failures.withLock { $0.append("connection \(index) message \(message): send failed") }
                    return
                }
                let echoed = receiveExactly(fd, size)
                if echoed != bytes {
                    failures.withLock {
                        $0.append(
                            "connection \(index) message \(message): \(echoed.count) of \(size) bytes, equal prefix: \(echoed == Array(bytes.prefix(echoed.count)))"
                        )
                    }
                    return
                }
            }
        }
        return failures.withLock { $0 }
    }

    @Test(
        "echoes random-size messages on 64 connections byte for byte, then exits 0 on SIGTERM",
        arguments: modes
    )
    func manyConnections(_ mode: String) throws {
        let server = try ServerProcess("echo-server", ["--port", "0", "--rings", "2"] + Self.options(mode))
        let failures = self.echo(port: server.port, connections: 64, messages: 20, seed: 7)
        #expect(failures.isEmpty, "\(failures.count) failures: \(failures.prefix(3))")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test("a client that streams without reading back gets every byte once it reads", arguments: modes)
    func streamingClient(_ mode: String) throws {
        let server = try ServerProcess("echo-server", ["--port", "0", "--rings", "1"] + Self.options(mode))
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        // 8 MiB out before reading anything back: the server's back-pressure must hold the
        // rest in the sockets, not lose it.
        let total = 8 << 20
        let bytes = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
        let sent = DispatchSemaphore(value: 0)
        let sentAll = Atomic<Bool>(false)
        DispatchQueue.global().async {
            sentAll.store(sendAll(fd, bytes), ordering: .relaxed)
            sent.signal()
        }
        let echoed = receiveExactly(fd, total)
        #expect(sent.wait(timeout: .now() + 20) == .success)
        let allSent = sentAll.load(ordering: .relaxed)
        #expect(allSent)
        #expect(echoed.count == total)
        #expect(echoed == bytes)
        #expect(server.stop(with: SIGINT) == 0)
    }

    @Test("SIGTERM with connections open: stops accepting, closes them, exits 0", arguments: modes)
    func gracefulShutdown(_ mode: String) throws {
        let server = try ServerProcess("echo-server", ["--port", "0", "--rings", "2"] + Self.options(mode))
        let clients = try (0..<10).map { _ in try connectClient(port: server.port) }
        defer { for fd in clients { close(fd) } }
        #expect(sendAll(clients[0], [1, 2, 3]))
        #expect(receiveExactly(clients[0], 3) == [1, 2, 3])
        #expect(server.stop(with: SIGTERM) == 0)
        // Every connection was closed by the server: reads see EOF (or a reset), not a hang.
        for fd in clients {
            var byte: UInt8 = 0
            #expect(recv(fd, &byte, 1, 0) <= 0)
        }
    }

    @Test("--idle-timeout closes a connection that sends nothing", arguments: modes)
    func idleTimeout(_ mode: String) throws {
        let server = try ServerProcess(
            "echo-server",
            ["--port", "0", "--rings", "1", "--idle-timeout", "1"] + Self.options(mode)
        )
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        let start = ContinuousClock.now
        var byte: UInt8 = 0
        let result = recv(fd, &byte, 1, 0)  // blocks until the server closes (10 s timeout)
        let waited = ContinuousClock.now - start
        #expect(result == 0, "recv returned \(result), errno \(errno)")
        #expect(waited >= .milliseconds(900) && waited < .seconds(5), "closed after \(waited)")
        #expect(server.stop() == 0)
    }
}
