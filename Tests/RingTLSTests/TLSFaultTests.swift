//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: bad input gets a clear error, and nothing is lost or left open.
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

/// A Python client that completes a handshake through memory BIOs, sends one good record
/// ("complete record\n"), then a bad one — `truncated` (half a record, then FIN) or
/// `corrupted` (one byte flipped) — and reports what came back: the decrypted echo, and the
/// alert if any.
private let badRecordClient = """
    import socket, ssl, sys
    port, ca, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection(("127.0.0.1", port))
    raw.settimeout(20)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    def flush():
        data = outgoing.read()
        if data:
            raw.sendall(data)
    while True:
        try:
            tls.do_handshake()
            flush()
            break
        except ssl.SSLWantReadError:
            flush()
            chunk = raw.recv(65536)
            if not chunk:
                sys.exit("EOF during the handshake")
            incoming.write(chunk)
    tls.write(b"complete record\\n")
    flush()
    tls.write(b"x" * 1000)
    record = bytearray(outgoing.read())
    if mode == "truncated":
        raw.sendall(record[: len(record) // 2])
        raw.shutdown(socket.SHUT_WR)
    else:
        record[-5] ^= 0xFF
        raw.sendall(record)
    back = b""
    while True:
        chunk = raw.recv(65536)
        if not chunk:
            break
        back += chunk
    incoming.write(back)
    incoming.write_eof()
    plain = b""
    try:
        while True:
            chunk = tls.read(65536)
            if not chunk:
                break
            plain += chunk
    except ssl.SSLError as error:
        print("alert:", error.reason)
    print("echo:", plain.decode())
    """

/// A Python client that completes a handshake, sends one record ("before the reset\n"),
/// waits for its echo, then resets the connection (`SO_LINGER` 0) instead of closing it.
private let resettingClient = """
    import socket, ssl, struct, sys
    port, ca = int(sys.argv[1]), sys.argv[2]
    context = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection(("127.0.0.1", port))
    raw.settimeout(20)
    tls = context.wrap_socket(raw, server_hostname="localhost")
    tls.sendall(b"before the reset\\n")
    echo = b""
    while len(echo) < 17:
        echo += tls.recv(65536)
    print("echo:", echo.decode().strip())
    # The SSL socket took the descriptor over; its close sends no close_notify.
    tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    tls.close()
    """

@Suite("TLSStream: bad input and broken peers", .enabled(if: ringIsAvailable, ringUnavailableReason), .opensslAvailable)
struct TLSFaultTests {
    @Test(
        "garbage instead of a ClientHello: the handshake fails with OpenSSL's reason; the socket closes",
        arguments: [
            (Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), "http request"),
            // A handshake record whose body is not a ClientHello.
            ([0x16, 0x03, 0x01, 0x00, 0x08, 0x01, 0x00, 0x00, 0x04, 0xDE, 0xAD, 0xBE, 0xEF], "length mismatch"),
        ]
    )
    func garbageClientHello(garbage: [UInt8], reason: String) throws {
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try TestPKI.shared.serverContext())
        let fd = try connectLoopback(port: server.port)
        defer { close(fd) }
        setReceiveTimeout(fd, seconds: 20)
        #expect(writeAll(fd, garbage))
        // The server answers with its alert (a record of type 21) when it has one, then closes.
        let (answer, ended) = readUntilEOF(fd)
        #expect(ended, "the server did not close the connection")
        #expect(answer.isEmpty || answer.first == 21, "not an alert: \(answer.prefix(8))")
        #expect(server.handshakes.wait(for: 1))
        let outcome = try #require(server.handshakes.all.first)
        guard case .failure(let error) = outcome else {
            Issue.record("the handshake succeeded on garbage")
            return
        }
        #expect(error.code == .handshakeFailed)
        #expect(error.reason.contains(reason), "\(error)")
        #expect(server.closed.wait(for: 1), "the connection was not closed")
        #expect(server.readEnds.all.first??.code == .handshakeFailed)
    }

    @Test(
        "a bad record from the peer: the records before it are delivered, then the error",
        .installed("python3"),
        arguments: BadRecord.all
    )
    func badRecord(_ record: BadRecord) throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let result = runPython(badRecordClient, ["\(server.port)", pki.caCertificate, record.mode])
        #expect(result.status == 0, "\(result)")
        #expect(result.text.contains(record.clientSees), "\(result)")
        #expect(server.readEnds.wait(for: 1))
        let end = try #require(server.readEnds.all.first)
        #expect(end?.code == record.code, "\(String(describing: end))")
        if let reason = record.reason {
            #expect(end?.reason.contains(reason) == true, "\(String(describing: end))")
        }
        #expect(server.received.all == bytes("complete record\n"))
        #expect(server.closed.wait(for: 1), "the connection was not closed")
    }

    @Test(
        "a peer that resets the connection: the read ends with .io and ECONNRESET, put in words when asked",
        .installed("python3")
    )
    func peerReset() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let result = runPython(resettingClient, ["\(server.port)", pki.caCertificate])
        #expect(result.status == 0, "\(result)")
        #expect(result.text.contains("echo: before the reset"), "\(result)")
        #expect(server.readEnds.wait(for: 1))
        let end = try #require(server.readEnds.all.first)
        let error = try #require(end, "the read ended cleanly")
        #expect(error.code == .io, "\(error)")
        #expect(error.errno == .connectionReset, "\(error)")
        #expect(error.reason == "reading from the socket: \(Errno.connectionReset)", "\(error)")
        #expect(error.verificationFailure == nil)
        // Equal to, and hashed as, the same error made from its words.
        let spelledOut = TLSError(.io, reason: error.reason, errno: .connectionReset)
        #expect(error == spelledOut)
        #expect(Set([error, spelledOut]).count == 1)
        let otherAction = TLSError(
            .io,
            reason: "writing to the socket: \(Errno.connectionReset)",
            errno: .connectionReset
        )
        #expect(error != otherAction)
        #expect(server.received.all == bytes("before the reset\n"))
        #expect(server.closed.wait(for: 1), "the connection was not closed")
    }

    @Test("a client that stops mid-handshake is cut off at the handshake timeout")
    func stalledClient() throws {
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let context = try TestPKI.shared.serverContext(configure: { $0.handshakeTimeout = .milliseconds(300) })
        let server = try TLSEchoServer(group: group, context: context)
        let fd = try connectLoopback(port: server.port)
        defer { close(fd) }
        setReceiveTimeout(fd, seconds: 20)
        // The start of a ClientHello record that announces 200 bytes, and then nothing.
        #expect(writeAll(fd, [0x16, 0x03, 0x01, 0x00, 0xC8, 0x01, 0x00, 0x00, 0xC4, 0x03, 0x03]))
        let started = ContinuousClock.now
        #expect(readToEnd(fd).isEmpty, "the server answered a partial ClientHello")
        let waited = ContinuousClock.now - started
        #expect(server.handshakes.wait(for: 1))
        let outcome = try #require(server.handshakes.all.first)
        guard case .failure(let error) = outcome else {
            Issue.record("the handshake succeeded")
            return
        }
        #expect(error.code == .handshakeTimedOut, "\(error)")
        #expect(waited >= .milliseconds(250), "cut off before the timeout: \(waited)")
        #expect(server.closed.wait(for: 1), "the connection was not closed")
    }

    @Test("a server that never answers: the client's handshake times out and its channel closes")
    func stalledServer() throws {
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        // A listening socket that never accepts: the kernel completes the connection (its
        // backlog), and nobody ever speaks.
        let (silent, port) = try listeningSocket()
        defer { close(silent) }
        let fd = try connectLoopback(port: port)
        let context = try TestPKI.shared.clientContext(configure: { $0.handshakeTimeout = .milliseconds(200) })
        let stream = try TLSStream(
            clientOn: fd,
            ring: ring,
            context: context,
            serverName: "localhost"
        )
        guard let error = try handshakeFailure(stream, on: ring, else: "a silent server completed a handshake") else {
            return
        }
        #expect(error.code == .handshakeTimedOut)
        // Reads and writes after it end with the same error.
        let write = Pending<TLSError?>()
        stream.write(ByteRope(copying: [1]), queue: ring) { _, _, error in write.set(error) }
        #expect(write.wait()??.code == .handshakeTimedOut)
        #expect(eventually(seconds: 20) { stream.channel.fileDescriptor == -1 }, "the channel was not closed")
    }

    @Test(
        "the client refuses a certificate for another host, or from an unknown CA; the server hears its alert",
        arguments: [
            ("other", "localhost", "hostname"), ("server", "127.0.0.2", "address"), ("rogue", "localhost", "issuer"),
        ]
    )
    func clientRefuses(leaf: String, serverName: String, why: String) throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let server = try TLSEchoServer(group: group, context: try pki.serverContext(leaf: leaf))
        let stream = try tlsClient(
            port: server.port,
            ring: ring,
            context: try pki.clientContext(),
            serverName: serverName
        )
        guard
            let error = try handshakeFailure(
                stream,
                on: ring,
                else: "the client accepted the \(leaf) certificate as \(serverName)"
            )
        else { return }
        #expect(error.code == .certificateVerificationFailed, "\(error)")
        let failure = try #require(error.verificationFailure)
        switch why {
        case "hostname":
            #expect(failure.isHostnameMismatch && failure.code == TLSError.VerificationFailure.hostnameMismatchCode)
        case "address":
            #expect(failure.code == TLSError.VerificationFailure.ipAddressMismatchCode, "\(failure)")
        default:
            #expect(failure.isUntrustedIssuer, "\(failure)")
        }
        #expect(server.handshakes.wait(for: 1))
        let serverOutcome = try #require(server.handshakes.all.first)
        if case .failure(let serverError) = serverOutcome {
            #expect(serverError.code == .handshakeFailed)
            #expect(serverError.reason.contains("alert"), "\(serverError)")
        } else {
            Issue.record("the server finished a handshake the client refused")
        }
        #expect(server.closed.wait(for: 1))
        #expect(eventually(seconds: 20) { stream.channel.fileDescriptor == -1 }, "the client's channel was not closed")
    }

    @Test("without host name checking the chain is still checked; with none, anything goes (tests only)")
    func verificationModes() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let cases: [(leaf: String, mode: TLSConfiguration.CertificateVerification, accepted: Bool)] = [
            ("other", .noHostnameVerification, true),
            ("rogue", .noHostnameVerification, false),
            ("rogue", .none, true),
        ]
        for (leaf, mode, accepted) in cases {
            let server = try TLSEchoServer(group: group, context: try pki.serverContext(leaf: leaf))
            let stream = try tlsClient(
                port: server.port,
                ring: ring,
                context: try pki.clientContext(configure: { $0.certificateVerification = mode })
            )
            let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: bytes(leaf)), queue: ring)
            let outcome = try #require(exchange.handshake.wait())
            let succeeded = (try? outcome.get()) != nil
            #expect(succeeded == accepted, "\(leaf) with \(mode): \(outcome)")
            if accepted {
                #expect(exchange.readEnd.wait() == .some(nil))
                #expect(exchange.received.all == bytes(leaf))
            }
        }
    }

    @Test(
        "a client that never sends close_notify: every byte is delivered, then .uncleanShutdown",
        .installed("python3")
    )
    func noCloseNotify() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let script = """
            import socket, ssl, sys
            port, ca = int(sys.argv[1]), sys.argv[2]
            context = ssl.create_default_context(cafile=ca)
            tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
            payload = bytes(i & 0xFF for i in range(100_000))
            tls.sendall(payload)
            received = 0
            while received < len(payload):
                received += len(tls.recv(65536))
            tls.close()   # no unwrap(): no close_notify, just the socket's FIN
            print("done", received)
            """
        let result = runPython(script, ["\(server.port)", pki.caCertificate])
        #expect(result.text == "done 100000\n", "\(result)")
        #expect(server.readEnds.wait(for: 1))
        let end = try #require(server.readEnds.all.first)
        #expect(end?.code == .uncleanShutdown, "\(String(describing: end))")
        expectSameBytes(server.received.all, (0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(server.closed.wait(for: 1))
    }

    @Test("configuration errors say what is wrong")
    func configurationErrors() throws {
        let pki = TestPKI.shared
        func expectError(_ fragment: String, _ body: () throws(TLSError) -> Void) {
            do throws(TLSError) {
                try body()
                Issue.record("no error; expected one about \(fragment)")
            } catch {
                #expect(error.code == .invalidConfiguration)
                #expect(error.reason.contains(fragment), "\(error)")
            }
        }
        expectError("No such file or directory") { () throws(TLSError) in
            _ = try TLSCertificate.chain(fromPEMFile: "/nonexistent/chain.pem")
        }
        expectError("no certificate") { () throws(TLSError) in _ = try TLSCertificate(pem: bytes("not a certificate")) }
        expectError("no private key") { () throws(TLSError) in
            _ = try TLSPrivateKey(pem: bytes("-----BEGIN PRIVATE KEY-----\nAAAA\n"))
        }
        expectError("does not match") { () throws(TLSError) in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try TLSCertificate.chain(fromPEMFile: FilePath(pki.serverCertificate)),
                privateKey: try TLSPrivateKey(pemFile: FilePath(pki.otherKey))
            )
            configuration.applicationProtocols = ["http/1.1"]
            _ = try TLSContext(configuration: configuration)
        }
        expectError("cipher list") { () throws(TLSError) in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.cipherList = "NO-SUCH-CIPHER"
            _ = try TLSContext(configuration: configuration)
        }
        expectError("ALPN name") { () throws(TLSError) in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.applicationProtocols = [String(repeating: "x", count: 256)]
            _ = try TLSContext(configuration: configuration)
        }
        expectError("maximum version") { () throws(TLSError) in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumVersion = .tls1_3
            configuration.maximumVersion = .tls1_2
            _ = try TLSContext(configuration: configuration)
        }
        // A server stream on a context without a certificate.
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let (left, right) = try socketPair()
        defer { close(right) }
        let channel = IOChannel(kind: .stream, fileDescriptor: left, queue: group.rings[0]) { _ in close(left) }
        defer { channel.close() }
        expectError("certificate chain") { () throws(TLSError) in
            _ = try TLSStream(
                serverOn: channel,
                ring: group.rings[0],
                context: try TLSContext(configuration: TLSConfiguration.makeClientConfiguration())
            )
        }
    }
}

/// A record the Python client (`badRecordClient`) spoils after a good one, and what each side
/// then sees.
struct BadRecord: Sendable, CustomTestStringConvertible {
    /// The client's mode.
    let mode: String
    /// What the client prints.
    let clientSees: String
    /// How the server's read ends.
    let code: TLSError.Code
    /// What the error's reason says, where it is checked.
    let reason: String?
    let testDescription: String

    static let all = [
        // The good record comes back whole, before the end.
        BadRecord(
            mode: "truncated",
            clientSees: "echo: complete record\n",
            code: .uncleanShutdown,
            reason: nil,
            testDescription: "a truncated record, then EOF: .uncleanShutdown"
        ),
        BadRecord(
            mode: "corrupted",
            clientSees: "alert: SSLV3_ALERT_BAD_RECORD_MAC",
            code: .protocolError,
            reason: "bad record mac",
            testDescription: "a corrupted record: .protocolError (bad record MAC), the peer gets the alert"
        ),
    ]
}

/// Starts `stream`'s handshake and waits (bounded) for its outcome: the error it failed with;
/// nil, with the issue `unexpected` recorded, when it succeeded.
func handshakeFailure(
    _ stream: TLSStream,
    on queue: some IOQueue,
    else unexpected: Comment,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> TLSError? {
    let outcome = Pending<Result<TLSStream.Handshake, TLSError>>()
    stream.handshake(queue: queue) { outcome.set($0) }
    let result = try #require(outcome.wait(), sourceLocation: sourceLocation)
    guard case .failure(let error) = result else {
        Issue.record(unexpected, sourceLocation: sourceLocation)
        return nil
    }
    return error
}

/// Reads until EOF (or an error, or the receive time-out); whether it was EOF.
func readUntilEOF(_ fd: CInt) -> ([UInt8], Bool) {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count == 0 { return (bytes, true) }
        if count < 0 { return (bytes, errno == ECONNRESET) }
        bytes += buffer[..<count]
    }
}

/// A TCP socket listening on 127.0.0.1 and a port of its own, and the port.
func listeningSocket() throws -> (CInt, UInt16) {
    let fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw Errno(rawValue: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else {
        close(fd)
        throw Errno(rawValue: errno)
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A connected pair of Unix stream sockets, close-on-exec.
func socketPair() throws -> (CInt, CInt) {
    var fds: [CInt] = [-1, -1]
    guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw Errno(rawValue: errno)
    }
    return (fds[0], fds[1])
}
