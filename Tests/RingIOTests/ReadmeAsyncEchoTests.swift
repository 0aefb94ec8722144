//===----------------------------------------------------------------------===//
// RingIO — the README's async echo server, as written there, against real clients.
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

@Suite("README: the async echo server", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ReadmeAsyncEchoTests {
    /// README.md, "Swift concurrency on the rings", with port 0 for `7000` and two rings:
    /// keep the two in step.
    private static func serve(group: RingLoopGroup, announce: @escaping @Sendable (UInt16) -> Void) async throws {
        var options = IOListener.Options()
        options.reusePort = true  // a socket per ring
        let listener = try IOListener(host: "127.0.0.1", port: 0, options: options, group: group)
        announce(listener.port)
        await listener.serve { connection in  // a task on the accepting ring
            let channel = connection.channel
            for try await data in channel.reads() {  // the kernel's buffers, no copy
                try await channel.write(data)  // resumed on the ring: no hop
            }
        }
    }

    @Test("echoes every client's bytes on the rings, and stops when its task is cancelled")
    func echoes() async throws {
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let port = AsyncPort()
        // Off the cooperative pool, which the suite's synchronous tests may keep busy for seconds.
        let server = Task(executorPreference: testTaskExecutor) {
            try await Self.serve(group: group) { port.set($0) }
        }
        let listening = try #require(port.value(seconds: 30), "the server never listened")

        // Clients at once, each with its own bytes, some larger than a receive buffer.
        let clients = try connectClients(32, "127.0.0.1", listening)
        expectEchoes(from: clients, size: { 1 + $0 * 4_099 })
        for client in clients { close(client) }

        server.cancel()
        let outcome = await bounded(seconds: 10) { try await server.value }
        #expect(outcome != nil, "serve did not return after its task was cancelled")
        // The listener is closed: a new connection is refused.
        #expect(connectClient("127.0.0.1", listening).map { close($0) } == .failure(.connectionRefused))
    }
}

/// A port reported by one task and awaited by another.
final class AsyncPort: Sendable {
    private let port = _Lock<UInt16?>(nil)
    private let reported = DispatchSemaphore(value: 0)

    func set(_ value: UInt16) {
        self.port.withLock { $0 = value }
        self.reported.signal()
    }

    /// Waits for the port, blocking the calling thread (no timer that needs the cooperative
    /// pool).
    func value(seconds: Double) -> UInt16? {
        guard wait(self.reported, seconds: seconds) else { return nil }
        self.reported.signal()
        return self.port.withLock { $0 }
    }
}
