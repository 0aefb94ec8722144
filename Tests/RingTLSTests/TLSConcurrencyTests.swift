//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: many handshakes at once, every byte checked.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import RingTLS
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("TLSStream: concurrency", .enabled(if: ringIsAvailable, ringUnavailableReason), .opensslAvailable)
struct TLSConcurrencyTests {
    @Test("1,000 handshakes at once, each connection echoing its own bytes, on two rings a side")
    func thousandHandshakes() throws {
        let count = 1_000
        let pki = TestPKI.shared
        let serverGroup = try RingLoopGroup(count: 2)
        defer { serverGroup.shutdown() }
        let clientGroup = try RingLoopGroup(count: 2)
        defer { clientGroup.shutdown() }
        let server = try TLSEchoServer(group: serverGroup, context: try pki.serverContext(), backlog: 2_048)
        let clientContext = try pki.clientContext()

        // Connected first (blocking connects complete in the kernel's backlog), so that the
        // handshakes all start together below.
        var sockets: [CInt] = []
        for _ in 0..<count { sockets.append(try connectLoopback(port: server.port)) }

        let started = ContinuousClock.now
        var exchanges: [(EchoExchange, [UInt8])] = []
        for (index, fd) in sockets.enumerated() {
            let ring = clientGroup.rings[index % 2]
            let stream = try TLSStream(
                clientOn: fd,
                ring: ring,
                context: clientContext,
                serverName: "localhost"
            )
            let payload = pattern(1 + (index * 37) % 3_000, seed: index)
            exchanges.append((EchoExchange(stream: stream, payload: ByteRope(copying: payload), queue: ring), payload))
        }
        var failures = 0
        for (index, (exchange, payload)) in exchanges.enumerated() {
            guard case .success = exchange.handshake.wait(seconds: 120) else {
                failures += 1
                Issue.record("connection \(index): handshake \(String(describing: exchange.handshake.value))")
                continue
            }
            let end = exchange.readEnd.wait(seconds: 120)
            if end != .some(nil) || exchange.received.all != payload {
                failures += 1
                Issue.record("connection \(index): end \(String(describing: end)), \(exchange.received.count) bytes")
            }
            if failures > 5 { break }
        }
        let elapsed = ContinuousClock.now - started
        #expect(failures == 0)
        #expect(server.closed.wait(for: count, seconds: 60), "\(server.closed.count) of \(count) closed")
        #expect(server.readEnds.all.allSatisfy { $0 == nil })
        let expectedTotal = (0..<count).reduce(0) { $0 + 1 + ($1 * 37) % 3_000 }
        #expect(server.received.count == expectedTotal)
        // Closed, every client stream closes its channel (and so its socket) at once: its
        // close_notify is out and no read waits.
        for (exchange, _) in exchanges { exchange.stream.close() }
        #expect(eventually(seconds: 20) { exchanges.allSatisfy { $0.0.stream.channel.fileDescriptor == -1 } })
        print("RingTLS: \(count) concurrent handshakes and echoes in \(elapsed)")
    }
}
