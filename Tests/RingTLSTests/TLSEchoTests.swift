//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: a RingTLS client against a RingTLS server, handlers and async.
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

/// A TLS echo server on a listener: each connection echoes what it reads and closes at the
/// peer's `close_notify`. Records every handshake's outcome and every read's end.
final class TLSEchoServer: Sendable {
    let listener: IOAcceptor
    let handshakes = Recorder<Result<TLSStream.Handshake, TLSError>>()
    let readEnds = Recorder<TLSError?>()
    /// One entry per connection whose socket the listener has closed.
    let closed = Recorder<Bool>()
    /// The plaintext bytes the server read, all connections together.
    let received = Collected()

    var port: UInt16 { self.listener.port }

    init(group: RingLoopGroup, context: TLSContext, backlog: Int32 = 511) throws {
        var options = IOListener.Options()
        options.backlog = backlog
        let (handshakes, readEnds, closed, received) = (self.handshakes, self.readEnds, self.closed, self.received)
        self.listener = try IOAcceptor(host: "127.0.0.1", port: 0, options: options, group: group, queue: nil) {
            event in
            guard case .accepted(let connection) = event else { return }
            let ring = connection.ring
            connection.whenClosed { closed.append(true) }
            guard let tls = try? TLSStream(accepting: connection, context: context) else {
                connection.channel.close()
                return
            }
            tls.handshake(queue: ring) { handshakes.append($0) }
            tls.read(queue: ring) { done, data, error in
                if let data, !data.isEmpty {
                    received.append(data)
                    tls.write(data, queue: ring) { _, _, _ in }
                }
                if done {
                    readEnds.append(error)
                    tls.close()
                }
            }
        }
    }

    deinit {
        self.listener.close()
    }
}

/// A client's exchange: writes `payload`, half-closes, reads to the server's `close_notify`.
struct EchoExchange {
    let received = Collected()
    let readEnd = Pending<TLSError?>()
    let writeEnd = Pending<TLSError?>()
    let handshake = Pending<Result<TLSStream.Handshake, TLSError>>()
    let stream: TLSStream

    init(stream: TLSStream, payload: ByteRope, queue: some IOQueue) {
        self.stream = stream
        let (received, readEnd, writeEnd, handshake) = (self.received, self.readEnd, self.writeEnd, self.handshake)
        stream.handshake(queue: queue) { handshake.set($0) }
        stream.read(queue: queue) { done, data, error in
            if let data { received.append(data) }
            if done { readEnd.set(error) }
        }
        stream.write(payload, queue: queue) { done, _, error in
            if done { writeEnd.set(error) }
        }
        stream.closeWrite()
    }
}

@Suite(
    "TLSStream: a RingTLS client against a RingTLS server",
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .opensslAvailable
)
struct TLSEchoTests {
    /// The engines to run on here: io_uring where the kernel allows it, and epoll always.
    static let backends: [RingLoop.Backend] = {
        var backends: [RingLoop.Backend] = [.epoll]
        if let ring = try? RingLoop(backend: .ioUring) {
            ring.shutdown()
            backends.insert(.ioUring, at: 0)
        }
        return backends
    }()

    @Test("echoes every byte both ways, handlers on the rings, on each engine", arguments: Self.backends)
    func echoOnEachEngine(backend: RingLoop.Backend) throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2, backend: backend)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext(alpn: ["echo"]))
        let clientContext = try pki.clientContext(alpn: ["echo"])

        // Sizes around a record (16 KiB), a read chunk (64 KiB) and the output limit (256 KiB).
        let sizes = [1, 100, 16_384, 16_385, 65_537, 300_000, 1_100_000]
        var exchanges: [(EchoExchange, [UInt8])] = []
        for (index, size) in sizes.enumerated() {
            let ring = group.rings[index % 2]
            let stream = try tlsClient(port: server.port, ring: ring, context: clientContext)
            let payload = pattern(size, seed: index)
            // A rope of many regions, as a server's response is: the write must not flatten it.
            let rope = fragmentedRope(payload)
            exchanges.append((EchoExchange(stream: stream, payload: rope, queue: ring), payload))
        }
        for (exchange, payload) in exchanges {
            let handshake = try #require(exchange.handshake.wait(), "no handshake outcome").get()
            #expect(handshake.applicationProtocol == "echo")
            #expect(handshake.protocolVersion == .tls1_3)
            #expect(handshake.peerCertificate?.subject == "CN=localhost")
            #expect(exchange.writeEnd.wait() == .some(nil), "the write failed")
            let end = exchange.readEnd.wait(seconds: 30)
            #expect(end == .some(nil), "the read ended with \(String(describing: end))")
            expectSameBytes(exchange.received.all, payload, "size \(payload.count)")
        }
        #expect(server.readEnds.wait(for: sizes.count))
        #expect(server.readEnds.all.allSatisfy { $0 == nil }, "a server read ended with an error")
        #expect(server.handshakes.all.allSatisfy { (try? $0.get())?.serverName == "localhost" })
    }

    /// A write made on the ring's thread with nothing ahead of it goes to the channel at once;
    /// one made while another waits for room in the output is queued behind it. Either way the
    /// bytes reach the peer in order and the handlers run in order.
    @Test("writes on the ring thread, direct and queued, small and large, arrive and complete in order")
    func ringThreadWritesKeepOrder() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let ring = group.rings[1]
        let tls = try tlsClient(port: server.port, ring: ring, context: try pki.clientContext())
        let handshake = Pending<Result<TLSStream.Handshake, TLSError>>()
        tls.handshake(queue: ring) { handshake.set($0) }
        _ = try #require(handshake.wait(), "no handshake outcome").get()

        // Around a record (16 KiB), the direct limit (64 KiB) and the output limit (256 KiB).
        let sizes = [10, 70_000, 5, 300_000, 1, 16_385, 2, 65_536, 3, 700_000, 4]
        let payloads = sizes.enumerated().map { pattern($0.element, seed: $0.offset) }
        let received = Collected()
        let readEnd = Pending<TLSError?>()
        let completions = Recorder<Int>()
        let errors = Recorder<TLSError>()
        tls.read(queue: ring) { done, data, error in
            if let data { received.append(data) }
            if done { readEnd.set(error) }
        }
        ring.enqueue {
            for (index, payload) in payloads.enumerated() {
                // Every other write a rope of many regions, as a server's response is.
                let rope = index % 2 == 0 ? ByteRope(copying: payload) : fragmentedRope(payload)
                tls.write(rope, queue: ring) { done, _, error in
                    if let error { errors.append(error) }
                    if done { completions.append(index) }
                }
            }
            tls.closeWrite()
        }
        #expect(completions.wait(for: sizes.count))
        #expect(completions.all == Array(0..<sizes.count), "the write handlers ran out of order")
        #expect(errors.all.isEmpty, "\(errors.all)")
        #expect(readEnd.wait(seconds: 30) == .some(nil))
        expectSameBytes(received.all, Array(payloads.joined()), "the echo")
        tls.close()
    }

    /// With `.keptUntilReleased`, OpenSSL's record buffers stay between records, and
    /// `releaseRecordBuffers()` gives them back between exchanges — or is refused while a
    /// record is in them: either way every byte arrives, exchange after exchange.
    @Test("record buffers kept until released: releasing between and during exchanges loses nothing")
    func recordBuffersKeptUntilReleased() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let keep: (inout TLSConfiguration) -> Void = { $0.recordBuffers = .keptUntilReleased }
        let serverContext = try pki.serverContext(configure: keep)
        // The server releases after every piece it echoes, whether or not a record is half in.
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: group, queue: nil) { event in
            guard case .accepted(let connection) = event else { return }
            let ring = connection.ring
            guard let tls = try? TLSStream(accepting: connection, context: serverContext) else {
                connection.channel.close()
                return
            }
            tls.read(queue: ring) { done, data, _ in
                if let data, !data.isEmpty {
                    tls.write(data, queue: ring) { _, _, _ in }
                    tls.releaseRecordBuffers()
                }
                if done { tls.close() }
            }
        }
        defer { listener.close() }
        let ring = group.rings[1]
        let tls = try tlsClient(port: listener.port, ring: ring, context: try pki.clientContext(configure: keep))
        let received = Collected()
        let receivedCount = _Lock(0)
        let arrived = DispatchSemaphore(value: 0)
        tls.read(queue: ring) { _, data, _ in
            guard let data, !data.isEmpty else { return }
            received.append(data)
            receivedCount.withLock { $0 += data.count }
            arrived.signal()
        }
        var expected: [UInt8] = []
        for (round, size) in [1, 100, 16_385, 100_000, 7].enumerated() {
            let payload = pattern(size, seed: round)
            expected += payload
            let written = Pending<TLSError?>()
            tls.write(ByteRope(copying: payload), queue: ring) { _, _, error in written.set(error) }
            #expect(written.wait() == .some(nil), "round \(round)")
            // Everything echoed so far, then the client's buffers go back too.
            while receivedCount.withLock({ $0 }) < expected.count {
                guard arrived.wait(timeout: .now() + scaled(20)) == .success else { break }
            }
            expectSameBytes(received.all, expected, "after round \(round)")
            tls.releaseRecordBuffers()
        }
        tls.close()
    }

    @Test("the async API: handshake, reads() and write, served by IOListener.serve")
    func asyncEcho() async throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 2)
        defer { group.shutdown() }
        let context = try pki.serverContext(alpn: ["http/1.1"])
        let listener = try IOListener(host: "127.0.0.1", port: 0, group: group)
        let served = Recorder<String>()
        // On a ring, not the cooperative pool, which the suites' synchronous tests may keep busy.
        let server = Task(executorPreference: group.rings[0].taskExecutor) {
            await listener.serve { connection in
                let tls = try TLSStream(accepting: connection, context: context)
                let handshake = try await tls.handshake()
                served.append(handshake.applicationProtocol ?? "none")
                do {
                    for try await data in tls.reads() {
                        try await tls.write(data)
                    }
                } catch {
                    served.append("error: \(error)")
                }
                tls.close()
            }
        }
        defer { server.cancel() }

        let clientContext = try pki.clientContext(alpn: ["h2", "http/1.1"])
        let ring = group.rings[0]
        let payload = pattern(200_000, seed: 7)
        let outcome = await onThread {
            runAsync(on: ring) { () async throws -> [UInt8] in
                let tls = try tlsClient(port: listener.port, ring: ring, context: clientContext)
                let handshake = try await tls.handshake()
                #expect(handshake.applicationProtocol == "http/1.1")
                try await tls.write(ByteRope(copying: payload[..<100_000]))
                try await tls.write(ByteRope(copying: payload[100_000...]))
                return try await tls.closeWriteAndReadEcho()
            }
        }
        let received = try #require(outcome, "the client did not finish").get()
        expectSameBytes(received, payload)
        #expect(served.wait(for: 1))
        #expect(served.all.first == "http/1.1")
    }

    @Test("cancelling a task waiting in reads() ends that wait with .canceled; the stream goes on")
    func readsCancellation() async throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let clientContext = try pki.clientContext()
        let outcome = await onThread {
            runAsync(on: ring) { () async throws -> [UInt8] in
                let tls = try tlsClient(port: server.port, ring: ring, context: clientContext)
                _ = try await tls.handshake()
                // A task waits for data that does not come, and is cancelled.
                let waiting = Task(executorPreference: ring.taskExecutor) { () async -> TLSError? in
                    do throws(TLSError) {
                        for try await _ in tls.reads() {}
                        return nil
                    } catch {
                        return error
                    }
                }
                waiting.cancel()
                let error = await waiting.value
                #expect(error?.code == .canceled, "\(String(describing: error))")
                // The stream is intact: an echo still comes back whole.
                try await tls.write(ByteRope(copying: bytes("after the cancellation")))
                return try await tls.closeWriteAndReadEcho()
            }
        }
        let received = try #require(outcome, "the client did not finish").get()
        #expect(received == bytes("after the cancellation"))
    }

    @Test("a read with a length ends with its last bytes; writes after closeWrite fail; stop cancels")
    func handlerSemantics() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        // The certificate names the address too.
        let tls = try tlsClient(
            port: server.port,
            ring: ring,
            context: try pki.clientContext(),
            serverName: "127.0.0.1"
        )
        let payload = pattern(10_000)
        let written = Pending<TLSError?>()
        tls.write(ByteRope(copying: payload), queue: ring) { _, _, error in written.set(error) }
        #expect(written.wait() == .some(nil))

        // Exactly 6,000 bytes: one or more calls, the last with done and the last bytes.
        let first = Collected()
        let firstEnd = Pending<(Bool, TLSError?)>()
        tls.read(length: 6_000, queue: ring) { done, data, error in
            if let data { first.append(data) }
            if done { firstEnd.set((data?.isEmpty == false, error)) }
        }
        let (lastCallHadData, firstError) = try #require(firstEnd.wait())
        #expect(firstError == nil && lastCallHadData)
        #expect(first.all == Array(payload[..<6_000]))

        // A zero-length read completes at once.
        let zero = Pending<Bool>()
        tls.read(length: 0, queue: DispatchQueue(label: "zero")) { done, data, error in
            zero.set(done && data?.isEmpty == true && error == nil)
        }
        #expect(zero.wait() == true)

        // After closeWrite: writes fail with .closed; the rest of the echo still arrives, then
        // the server's close_notify ends the read cleanly.
        tls.closeWrite()
        let refused = Pending<TLSError?>()
        tls.write(ByteRope(copying: [1, 2, 3]), queue: ring) { _, remaining, error in
            refused.set(error)
            #expect(remaining?.count == 3)
        }
        #expect(refused.wait()??.code == .closed)
        let rest = Collected()
        let restEnd = Pending<TLSError?>()
        tls.read(queue: ring) { done, data, error in
            if let data { rest.append(data) }
            if done { restEnd.set(error) }
        }
        #expect(restEnd.wait() == .some(nil))
        #expect(rest.all == Array(payload[6_000...]))

        // A stopped stream ends what is pending with .canceled, and later operations with it too.
        tls.close(flags: .stop)
        let late = Pending<TLSError?>()
        tls.read(queue: ring) { done, _, error in if done { late.set(error) } }
        #expect(late.wait()??.code == .canceled)
    }

    @Test("a client resumes its session from the server's ticket, and a second context cannot")
    func sessionResumption() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let server = try TLSEchoServer(group: group, context: try pki.serverContext())
        let clientContext = try pki.clientContext()

        func exchange(_ context: TLSContext) throws -> TLSStream.Handshake {
            let fd = try connectLoopback(port: server.port)
            let stream = try TLSStream(
                clientOn: fd,
                ring: ring,
                context: context,
                serverName: "localhost"
            )
            let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: bytes("ticket")), queue: ring)
            let handshake = try #require(exchange.handshake.wait()).get()
            // Reading to the end also takes the ticket the server sent after the handshake.
            #expect(exchange.readEnd.wait() == .some(nil))
            #expect(exchange.received.all == bytes("ticket"))
            return handshake
        }
        #expect(try exchange(clientContext).isResumed == false)
        #expect(try exchange(clientContext).isResumed == true, "the second connection did not resume")
        #expect(try exchange(clientContext).isResumed == true, "the ticket of the resumed one did not resume")
        #expect(try exchange(try pki.clientContext()).isResumed == false)

        // Without resumption on the server, nothing resumes.
        let plain = try TLSEchoServer(
            group: group,
            context: try pki.serverContext(configure: { $0.sessionResumption = false })
        )
        for _ in 0..<2 {
            let stream = try tlsClient(port: plain.port, ring: ring, context: clientContext)
            let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: [7]), queue: ring)
            #expect(try #require(exchange.handshake.wait()).get().isResumed == false)
            #expect(exchange.readEnd.wait() == .some(nil))
        }
    }

    @Test("SNI: the server's handler picks the certificate by the name the client sent")
    func serverNameIndication() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let other = try pki.serverContext(leaf: "other", alpn: ["echo"])
        let names = Recorder<String>()
        let context = try pki.serverContext(
            alpn: ["echo"],
            serverNameHandler: { name in
                names.append(name)
                return name == "other.example" ? other : nil
            }
        )
        let server = try TLSEchoServer(group: group, context: context)
        for name in ["other.example", "localhost"] {
            let stream = try tlsClient(
                port: server.port,
                ring: ring,
                context: try pki.clientContext(alpn: ["echo"]),
                serverName: name
            )
            let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: bytes(name)), queue: ring)
            let handshake = try #require(exchange.handshake.wait()).get()
            #expect(handshake.peerCertificate?.subject == "CN=\(name)")
            #expect(handshake.applicationProtocol == "echo")
            #expect(exchange.readEnd.wait() == .some(nil))
            #expect(exchange.received.all == bytes(name))
        }
        #expect(names.all == ["other.example", "localhost"])
    }

    @Test("client certificates: a server that verifies clients takes the test CA's, refuses none")
    func clientCertificates() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let serverContext = try pki.serverContext(configure: {
            $0.certificateVerification = .noHostnameVerification  // a client certificate is required
            $0.trustRoots = .certificates((try? TLSCertificate.chain(fromPEMFile: FilePath(pki.caCertificate))) ?? [])
        })
        let server = try TLSEchoServer(group: group, context: serverContext)
        let withCertificate = try pki.clientContext(configure: {
            $0.certificateChain = (try? TLSCertificate.chain(fromPEMFile: FilePath(pki.clientCertificate))) ?? []
            $0.privateKey = try? TLSPrivateKey(pemFile: FilePath(pki.clientKey))
        })
        for (context, accepted) in [(withCertificate, true), (try pki.clientContext(), false)] {
            let stream = try tlsClient(port: server.port, ring: ring, context: context)
            let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: bytes("mutual")), queue: ring)
            // TLS 1.3: the client's handshake is over before the server has checked its
            // certificate; a refusal reaches the client as an alert on its read.
            _ = exchange.handshake.wait()
            let end = exchange.readEnd.wait()
            if accepted {
                #expect(end == .some(nil))
                #expect(exchange.received.all == bytes("mutual"))
            } else {
                #expect(end??.code == .protocolError, "\(String(describing: end))")
                #expect(end??.reason.contains("certificate required") == true, "\(String(describing: end))")
            }
        }
        #expect(server.handshakes.wait(for: 2))
        let outcomes = server.handshakes.all
        #expect((try? outcomes[0].get())?.peerCertificate?.subject == "CN=RingTLS Test Client")
        guard case .failure(let error) = outcomes[1] else {
            Issue.record("the server accepted a client without a certificate")
            return
        }
        #expect(error.code == .handshakeFailed, "\(error)")
        #expect(error.reason.contains("peer did not return a certificate"), "\(error)")
    }

    @Test("TLS 1.2 when the server allows no more, with its own cipher list")
    func tls12() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let context = try pki.serverContext(configure: {
            $0.maximumVersion = .tls1_2
            $0.cipherList = "ECDHE-ECDSA-AES128-GCM-SHA256"
        })
        let server = try TLSEchoServer(group: group, context: context)
        let stream = try tlsClient(port: server.port, ring: ring, context: try pki.clientContext())
        let payload = pattern(50_000)
        let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: payload), queue: ring)
        let handshake = try #require(exchange.handshake.wait()).get()
        #expect(handshake.protocolVersion == .tls1_2)
        #expect(handshake.cipherSuite == "ECDHE-ECDSA-AES128-GCM-SHA256")
        #expect(exchange.readEnd.wait() == .some(nil))
        expectSameBytes(exchange.received.all, payload)
    }
}

/// `bytes` as a rope of regions of 1 to 3,000 bytes.
func fragmentedRope(_ bytes: [UInt8]) -> ByteRope {
    var rope = ByteRope()
    var offset = 0
    var step = 1
    while offset < bytes.count {
        let end = min(bytes.count, offset + step)
        rope.append(ByteRope(copying: bytes[offset..<end]))
        offset = end
        step = step * 7 % 3_001 + 1
    }
    return rope
}

extension TLSStream {
    /// Ends the writing side, reads everything the peer sends until the end of its stream, then
    /// closes: what an echo gave back.
    func closeWriteAndReadEcho() async throws -> [UInt8] {
        self.closeWrite()
        var received: [UInt8] = []
        for try await data in self.reads() { received += Array(data) }
        self.close()
        return received
    }
}
