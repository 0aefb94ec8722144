//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: real peers on loopback (curl, openssl s_client and s_server,
// Python's ssl module), against a RingTLS server and with a RingTLS client.
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

/// A minimal HTTP/1.1 server over TLS (async API): answers each request on a connection (keep-
/// alive) with "hello <path>", and records each connection's ALPN protocol and requests.
final class TLSHelloServer: Sendable {
    let listener: IOListener
    let task: Task<Void, Never>
    let connections = Recorder<String>()
    let requests = Recorder<String>()

    var port: UInt16 { self.listener.port }

    init(group: RingLoopGroup, context: TLSContext) throws {
        let listener = try IOListener(host: "127.0.0.1", port: 0, group: group)
        self.listener = listener
        let (connections, requests) = (self.connections, self.requests)
        // On a ring, not the cooperative pool, which the suites' synchronous tests may keep busy
        // for seconds (the accepting loop runs on the task's executor).
        self.task = Task(executorPreference: group.rings[0].taskExecutor) {
            await listener.serve { connection in
                let tls = try TLSStream(accepting: connection, context: context)
                defer { tls.close() }
                let handshake = try await tls.handshake()
                connections.append(handshake.applicationProtocol ?? "none")
                var pending = ByteRope()
                for try await data in tls.reads() {
                    pending.append(data)
                    while let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                        let head = String(decoding: pending.subrange(0..<end.lowerBound), as: UTF8.self)
                        pending = pending.subrange(end.upperBound..<pending.count)
                        let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                        requests.append(path)
                        let body = "hello \(path)\n"
                        let response =
                            "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nContent-Type: text/plain\r\n\r\n"
                        // Head and body as two regions: one record, not two.
                        try await tls.write(ByteRope(copying: response.utf8) + ByteRope(copying: body.utf8))
                    }
                }
            }
        }
    }

    deinit {
        self.task.cancel()
    }
}

/// A server that reads one line, answers it reversed and closes (with `close_notify`).
final class TLSLineServer: Sendable {
    let listener: IOAcceptor
    let outcomes = Recorder<Result<TLSStream.Handshake, TLSError>>()

    var port: UInt16 { self.listener.port }

    init(group: RingLoopGroup, context: TLSContext) throws {
        let outcomes = self.outcomes
        self.listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: group, queue: nil) { event in
            guard case .accepted(let connection) = event,
                let tls = try? TLSStream(accepting: connection, context: context)
            else { return }
            let ring = connection.ring
            tls.handshake(queue: ring) { outcomes.append($0) }
            let line = _Lock(ByteRope())
            tls.read(queue: ring) { done, data, error in
                if let data {
                    let complete: ByteRope? = line.withLock { line in
                        line.append(data)
                        guard let newline = line.firstIndex(of: 10) else { return nil }
                        return line.subrange(0..<newline)
                    }
                    if let complete {
                        tls.write(ByteRope(copying: Array(complete).reversed() + [10]), queue: ring) { _, _, _ in }
                        tls.close()
                    }
                }
                if done { tls.close() }
            }
        }
    }

    deinit {
        self.listener.close()
    }
}

@Suite(
    "TLSStream with real peers: curl, openssl, Python",
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .opensslAvailable
)
struct TLSPeerTests {
    @Test("curl: --cacert verifies the chain, ALPN picks http/1.1, two requests on one connection", .installed("curl"))
    func curl() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let server = try TLSHelloServer(group: group, context: try pki.serverContext(alpn: ["http/1.1"]))
        let port = server.port
        let result = runTool(
            "curl",
            [
                "-sS", "-v", "--cacert", pki.caCertificate, "--resolve", "localhost:\(port):127.0.0.1",
                "https://localhost:\(port)/first", "https://localhost:\(port)/second",
            ],
            seconds: 30
        )
        #expect(result.status == 0, "\(result)")
        #expect(result.text == "hello /first\nhello /second\n", "\(result)")
        #expect(result.errorText.contains("ALPN: server accepted http/1.1"), "\(result)")
        #expect(result.errorText.contains("SSL certificate verify ok"), "\(result)")
        #expect(server.requests.wait(for: 2))
        #expect(server.requests.all == ["/first", "/second"])
        #expect(server.connections.all == ["http/1.1"], "curl did not keep its connection alive")

        // A CA curl does not know: it refuses, and the server sees the handshake fail.
        let refused = runTool(
            "curl",
            [
                "-sS", "--resolve", "localhost:\(port):127.0.0.1", "--cacert", pki.rogueCertificate,
                "https://localhost:\(port)/",
            ],
            seconds: 30
        )
        #expect(refused.status == 60, "curl's 'peer certificate cannot be authenticated': \(refused)")
    }

    @Test(
        "openssl s_client: verified, ALPN, an echoed line, and resumed sessions (TLS 1.3 and 1.2)"
    )
    func opensslClient() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = try TLSLineServer(group: group, context: try pki.serverContext(alpn: ["echo"]))
        let arguments = [
            "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
            "-CAfile", pki.caCertificate, "-verify_return_error", "-alpn", "echo", "-ign_eof",
        ]
        let result = runTool("openssl", arguments, stdin: bytes("hello ringtls\n"), seconds: 30)
        #expect(result.status == 0, "\(result)")
        #expect(result.text.contains("Verify return code: 0 (ok)"), "\(result)")
        #expect(result.text.contains("ALPN protocol: echo"), "\(result)")
        #expect(result.text.contains("sltgnir olleh\n"), "\(result)")
        let handshake = try #require(server.outcomes.wait(for: 1) ? server.outcomes.all.first : nil).get()
        #expect(handshake.serverName == "localhost")
        #expect(handshake.applicationProtocol == "echo")

        // TLS 1.3: the session saved from one run (its ticket came with the echo) resumes the next.
        let session = "\(pki.directory)/s_client-session.pem"
        let first = runTool("openssl", arguments + ["-sess_out", session], stdin: bytes("one\n"), seconds: 30)
        #expect(first.status == 0 && first.text.contains("New, TLSv1.3"), "\(first)")
        let resumed = runTool("openssl", arguments + ["-sess_in", session], stdin: bytes("two\n"), seconds: 30)
        #expect(resumed.status == 0, "\(resumed)")
        #expect(resumed.text.contains("Reused, TLSv1.3"), "\(resumed)")
        #expect(resumed.text.contains("owt\n"), "\(resumed)")

        // TLS 1.2 (tickets come within the handshake): -reconnect resumes at once.
        let again = runTool("openssl", arguments + ["-reconnect", "-tls1_2"], stdin: bytes("again\n"), seconds: 30)
        #expect(again.status == 0, "\(again)")
        #expect(again.text.contains("Reused, TLSv1.2"), "\(again)")
        #expect(again.text.contains("niaga\n"), "\(again)")
    }

    @Test(
        "Python's ssl client: verified, ALPN, 1 MB echoed, close_notify both ways, a resumed session",
        .installed("python3")
    )
    func pythonClient() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext(alpn: ["echo"]))
        let script = """
            import socket, ssl, sys, hashlib
            port, ca = int(sys.argv[1]), sys.argv[2]
            context = ssl.create_default_context(cafile=ca)
            context.set_alpn_protocols(["echo"])
            payload = bytes((i * 31 + (i >> 8) + 7) & 0xFF for i in range(1_000_000))
            session = None
            for attempt in range(2):
                raw = socket.create_connection(("127.0.0.1", port))
                tls = context.wrap_socket(raw, server_hostname="localhost", session=session)
                tls.sendall(payload)
                received = bytearray()
                while len(received) < len(payload):
                    chunk = tls.recv(65536)
                    if not chunk:
                        break
                    received += chunk
                print(attempt, tls.selected_alpn_protocol(), tls.version(), tls.session_reused,
                      hashlib.sha256(received).hexdigest() == hashlib.sha256(payload).hexdigest())
                session = tls.session
                tls.unwrap()   # close_notify, and the server's in answer
                raw.close()
            """
        let result = runPython(script, ["\(server.port)", pki.caCertificate], seconds: 60)
        #expect(result.status == 0, "\(result)")
        #expect(result.text == "0 echo TLSv1.3 False True\n1 echo TLSv1.3 True True\n", "\(result)")
        #expect(server.readEnds.wait(for: 2))
        #expect(server.readEnds.all.allSatisfy { $0 == nil }, "\(server.readEnds.all)")
    }

    @Test(
        "a RingTLS client against Python's ssl server: verified, ALPN, echoed bytes, clean ends",
        .installed("python3")
    )
    func pythonServer() throws {
        let pki = TestPKI.shared
        let script = """
            import socket, ssl, sys
            cert, key = sys.argv[1], sys.argv[2]
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            context.set_alpn_protocols(["echo"])
            listener = socket.create_server(("127.0.0.1", 0))
            print(listener.getsockname()[1], flush=True)
            raw, _ = listener.accept()
            tls = context.wrap_socket(raw, server_side=True)
            total = 0
            alpn = tls.selected_alpn_protocol()
            while True:
                chunk = tls.recv(65536)
                if not chunk:
                    break   # the client's close_notify
                total += len(chunk)
                tls.sendall(chunk)
            tls.unwrap()
            raw.close()
            print("echoed", total, alpn, flush=True)
            """
        let python = try ChildProcess("python3", ["-c", script, pki.serverCertificate, pki.serverKey])
        let portLine = try #require(python.waitForLine(containing: ""), "the Python server did not start")
        let port = try #require(UInt16(portLine.trimmingSpaces), "no port: \(python.output) \(python.errors)")

        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let stream = try tlsClient(port: port, ring: ring, context: try pki.clientContext(alpn: ["echo"]))
        let payload = pattern(500_000, seed: 3)
        let exchange = EchoExchange(stream: stream, payload: fragmentedRope(payload), queue: ring)
        let handshake = try #require(exchange.handshake.wait()).get()
        #expect(handshake.applicationProtocol == "echo")
        #expect(handshake.peerCertificate?.subject == "CN=localhost")
        #expect(exchange.readEnd.wait(seconds: 30) == .some(nil))
        expectSameBytes(exchange.received.all, payload)
        let result = python.wait(seconds: 30)
        #expect(result.status == 0, "\(result)")
        #expect(result.text.contains("echoed 500000 echo"), "\(result)")
    }

    @Test("a RingTLS client against openssl s_server: TLS 1.3 and 1.2, lines echoed reversed")
    func opensslServer() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        for version in ["-tls1_3", "-tls1_2"] {
            let server = try ChildProcess(
                "openssl",
                [
                    "s_server", "-accept", "127.0.0.1:0", "-cert", pki.serverCertificate, "-key", pki.serverKey,
                    "-alpn", "echo", "-rev", "-naccept", "1", version,
                ],
                keepStdinOpen: true
            )
            let accept = try #require(
                server.waitForLine(containing: "ACCEPT"),
                "s_server did not start: \(server.errors)"
            )
            let port = try #require(accept.split(separator: ":").last.flatMap { UInt16($0.trimmingSpaces) })
            let stream = try tlsClient(port: port, ring: ring, context: try pki.clientContext(alpn: ["echo"]))
            let received = Collected()
            let readEnd = Pending<TLSError?>()
            let handshake = Pending<Result<TLSStream.Handshake, TLSError>>()
            stream.handshake(queue: ring) { handshake.set($0) }
            stream.read(queue: ring) { done, data, error in
                if let data { received.append(data) }
                if done { readEnd.set(error) }
            }
            let agreed = try #require(handshake.wait()).get()
            #expect(agreed.protocolVersion == (version == "-tls1_3" ? .tls1_3 : .tls1_2))
            #expect(agreed.applicationProtocol == "echo")
            stream.write(ByteRope(copying: bytes("first line\nsecond\nCLOSE\n")), queue: ring) { _, _, _ in }
            // s_server answers each line, then closes at CLOSE (with close_notify).
            let end = readEnd.wait(seconds: 30)
            #expect(end == .some(nil), "\(String(describing: end))")
            #expect(String(decoding: received.all, as: UTF8.self) == "enil tsrif\ndnoces\n")
            stream.close()
            let result = server.wait(seconds: 30)
            #expect(result.status == 0, "\(result)")
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(
            self.drop { $0 == " " || $0 == "\r" || $0 == "\n" }.reversed().drop {
                $0 == " " || $0 == "\r" || $0 == "\n"
            }.reversed()
        )
    }
}
