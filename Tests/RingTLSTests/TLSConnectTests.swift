//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: clients that dial with IOConnection.connect, against openssl
// s_server and against a RingTLS server.
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

/// A client stream over a connection that `IOConnection.connect` (the handler form) opened to
/// 127.0.0.1:`port` on `ring`. The calling thread waits for the connect, bounded: never call
/// it on `ring`'s thread, which completes it.
func tlsClientConnecting(
    port: UInt16,
    ring: RingLoop,
    context: TLSContext,
    serverName: String = "localhost"
) throws -> TLSStream {
    let connected = Pending<Result<IOConnection, ConnectError>>()
    IOConnection.connect(host: "127.0.0.1", port: port, ring: ring, queue: ring) { connected.set($0) }
    let connection = try #require(connected.wait(seconds: 20), "the connect did not complete").get()
    #expect(connection.ring === ring)
    return try TLSStream(clientOn: connection.channel, ring: connection.ring, context: context, serverName: serverName)
}

@Suite(
    "TLSStream clients over IOConnection.connect",
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .opensslAvailable
)
struct TLSConnectTests {
    @Test("handlers: a client over IOConnection.connect against openssl s_server, TLS 1.3, lines echoed reversed")
    func opensslServer() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let server = try ChildProcess(
            "openssl",
            [
                "s_server", "-accept", "127.0.0.1:0", "-cert", pki.serverCertificate, "-key", pki.serverKey,
                "-alpn", "echo", "-rev", "-naccept", "1", "-tls1_3",
            ],
            keepStdinOpen: true
        )
        let accept = try #require(server.waitForLine(containing: "ACCEPT"), "s_server did not start: \(server.errors)")
        let port = try #require(accept.split(separator: ":").last.flatMap { UInt16($0.trimmingSpaces) })
        let stream = try tlsClientConnecting(port: port, ring: ring, context: try pki.clientContext(alpn: ["echo"]))
        let received = Collected()
        let readEnd = Pending<TLSError?>()
        let handshake = Pending<Result<TLSStream.Handshake, TLSError>>()
        stream.handshake(queue: ring) { handshake.set($0) }
        stream.read(queue: ring) { done, data, error in
            if let data { received.append(data) }
            if done { readEnd.set(error) }
        }
        let agreed = try #require(handshake.wait()).get()
        #expect(agreed.protocolVersion == .tls1_3)
        #expect(agreed.applicationProtocol == "echo")
        #expect(agreed.peerCertificate?.subject == "CN=localhost")
        stream.write(ByteRope(copying: bytes("over a ring's connect\nCLOSE\n")), queue: ring) { _, _, _ in }
        // s_server answers each line, then closes at CLOSE (with close_notify).
        let end = readEnd.wait(seconds: 30)
        #expect(end == .some(nil), "\(String(describing: end))")
        #expect(String(decoding: received.all, as: UTF8.self) == "tcennoc s'gnir a revo\n")
        stream.close()
        let result = server.wait(seconds: 30)
        #expect(result.status == 0, "\(result)")
    }

    @Test("async: a task dials with IOConnection.connect, and a RingTLS server echoes 300 KB byte for byte")
    func ringTLSServer() async throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let clientContext = try pki.clientContext()
        let ring = group.rings[1]
        let port = server.port
        let payload = pattern(300_000, seed: 11)
        let outcome = await onThread {
            runAsync(on: ring) { () async throws -> [UInt8] in
                let connection = try await IOConnection.connect(host: "127.0.0.1", port: port, ring: ring)
                let tls = try TLSStream(
                    clientOn: connection.channel,
                    ring: connection.ring,
                    context: clientContext,
                    serverName: "localhost"
                )
                let handshake = try await tls.handshake()
                #expect(handshake.peerCertificate?.subject == "CN=localhost")
                try await tls.write(ByteRope(copying: payload[..<150_000]))
                try await tls.write(ByteRope(copying: payload[150_000...]))
                tls.closeWrite()
                var echoed: [UInt8] = []
                for try await data in tls.reads() { echoed += data }
                tls.close()
                return echoed
            }
        }
        let echoed = try #require(outcome, "the exchange did not end within 30 s").get()
        let whole = echoed == payload  // not inside #expect: no diff of 300 KB
        #expect(whole, "\(echoed.count) of \(payload.count) bytes came back, or different ones")
        #expect(server.readEnds.wait(for: 1), "the server's read did not end")
        #expect(server.readEnds.all.first == .some(nil), "\(server.readEnds.all)")
    }
}
