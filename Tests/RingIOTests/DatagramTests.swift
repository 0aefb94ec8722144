//===----------------------------------------------------------------------===//
// RingIO tests — datagram channels: UDP and Unix datagram sockets, against real peers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
@_spi(Testing) import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A datagram `[number (8 bytes, little endian)] + filler` of `size` bytes (at least 8), or
/// `size` bytes of the number's low byte for smaller sizes. The filler depends on the size
/// only, so that a test makes it once (`fillers`).
func numberedDatagram(_ number: Int, size: Int) -> [UInt8] {
    guard size >= 8 else { return [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: size) }
    var bytes = datagramFiller(size)
    withUnsafeBytes(of: UInt64(number).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
    return bytes
}

private let fillers = _TestLock<[Int: [UInt8]]>([:])

/// The bytes of a numbered datagram of `size` bytes, before its number is written.
private func datagramFiller(_ size: Int) -> [UInt8] {
    fillers.withLock { fillers in
        if let known = fillers[size] { return known }
        let made = pattern(size, seed: 7)
        fillers[size] = made
        return made
    }
}

/// Whether `data` holds exactly `expected` (a byte comparison, fast in debug builds too).
func sameBytes(_ data: ByteRope, _ expected: [UInt8]) -> Bool {
    guard data.count == expected.count else { return false }
    return data.withUnsafeBytes { bytes in
        expected.withUnsafeBytes {
            memcmp(
                bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                expected.count
            ) == 0
        }
    }
}

/// The number in a datagram made by ``numberedDatagram(_:size:)`` of 8 bytes or more.
func datagramNumber(_ data: ByteRope) -> Int {
    var value: UInt64 = 0
    withUnsafeMutableBytes(of: &value) { _ = data.copyBytes(to: $0, from: 0..<8) }
    return Int(UInt64(littleEndian: value))
}

/// An echo server on a datagram channel: each datagram goes back to its source, as it came
/// (its rope sent on: no copy), with handlers on the channel's ring.
func startEcho(_ channel: IODatagramChannel) {
    channel.receive(queue: channel.ring) { done, datagram, _ in
        guard !done, let datagram, let source = datagram.source else { return }
        channel.send(datagram.data, to: source, queue: channel.ring) { _ in }
    }
}

@Suite("IODatagramChannel: UDP and Unix datagram sockets", .timeLimit(.minutes(3)))
struct DatagramTests {
    @Test(
        "10,000 numbered datagrams of 0, 1, 1,472 and 65,507 bytes echo back, none lost",
        arguments: [0, 1, 1_472, 65_507]
    )
    func numbered(size: Int) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IODatagramChannel.Options()
            options.maximumDatagramSize = max(size, 1)
            options.socketReceiveBufferSize = 4 << 20
            let server = try IODatagramChannel(
                bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: 0),
                options: options,
                ring: ring
            )
            defer { server.close() }
            startEcho(server)
            let client = try IODatagramChannel(connectedTo: server.localAddress, options: options, ring: ring)
            defer { client.close() }
            let count = size >= 65_507 ? 2_000 : 10_000
            let window = 32
            var received = 0
            var sent = 0
            var numbers: [Int] = []
            var iterator = client.datagrams().makeAsyncIterator()
            // A window of datagrams in flight: a rate the receivers keep up with.
            while received < count {
                while sent < count && sent - received < window {
                    try await client.send(ByteRope(copying: numberedDatagram(sent, size: size)))
                    sent += 1
                }
                let datagram = try #require(try await iterator.next())
                #expect(datagram.data.count == size && !datagram.isTruncated && datagram.length == size)
                #expect(datagram.source == server.localAddress)
                if size >= 8 {
                    numbers.append(datagramNumber(datagram.data))
                    #expect(sameBytes(datagram.data, numberedDatagram(numbers.last!, size: size)))
                }
                received += 1
            }
            if size >= 8 { #expect(numbers == Array(0..<count)) }
            #expect(server.statistics.received == UInt64(count))
            #expect(server.statistics.sent == UInt64(count))
            #expect(server.statistics.kernelDrops == 0 && client.statistics.kernelDrops == 0)
            #expect(client.statistics.received == UInt64(count))
        }
    }

    @Test("a Python UDP client gets every datagram back from a RingIO echo server (IPv4 and IPv6)")
    func pythonPeer() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        for host in ipv6LoopbackIsAvailable ? ["127.0.0.1", "::1"] : ["127.0.0.1"] {
            let server = try IODatagramChannel(bindingTo: SocketAddress(ipAddress: host, port: 0), ring: ring)
            defer { server.close() }
            startEcho(server)
            let family = host.contains(":") ? "AF_INET6" : "AF_INET"
            let script = """
                import socket
                s = socket.socket(socket.\(family), socket.SOCK_DGRAM)
                s.settimeout(10)
                s.connect(("\(host)", \(server.localAddress.port!)))
                for i in range(500):
                    payload = i.to_bytes(4, "little") * (1 + i % 300)
                    s.send(payload)
                    assert s.recv(65536) == payload, i
                s.send(b"")
                assert s.recv(10) == b""
                print("ok", flush=True)
                """
            let peer = try PeerProcess("python3", ["-c", script])
            defer { peer.stop() }
            #expect(peer.readLine(seconds: 30) == "ok")
            #expect(server.statistics.received == 501)
        }
    }

    @Test("a datagram longer than the buffer is truncated and says so")
    func truncation() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IODatagramChannel.Options()
            options.maximumDatagramSize = 100
            let (receiver, sender) = try loopbackPair(ring: ring, options: options)
            defer {
                sender.close()
                receiver.close()
            }
            try await sender.send(ByteRope(copying: pattern(150)))
            try await sender.send(ByteRope(copying: pattern(100)))
            var iterator = receiver.datagrams().makeAsyncIterator()
            let long = try #require(try await iterator.next())
            #expect(long.isTruncated && long.length == 150 && Array(long.data) == pattern(100))
            let exact = try #require(try await iterator.next())
            #expect(!exact.isTruncated && exact.length == 100 && Array(exact.data) == pattern(100))
            #expect(receiver.statistics.truncated == 1)
        }
    }

    @Test("received bytes are the channel's provided buffers: no copy")
    func zeroCopy() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let (receiver, sender) = try loopbackPair(ring: ring)
            defer {
                sender.close()
                receiver.close()
            }
            try await sender.send(ByteRope(copying: pattern(1_000)))
            let datagram = try await receiver.receive()
            let memory = _RingIOTesting.receiveBufferMemory(of: receiver)
            let address = datagram.data.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            #expect(memory.contains(address) && datagram.data.regionCount == 1)
        }
    }

    @Test("every provided buffer held by ropes: receives go on into fresh memory, counted, none lost")
    func bufferExhaustion() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            var options = IODatagramChannel.Options()
            options.receiveBuffers = 4
            let (receiver, sender) = try loopbackPair(ring: ring, options: options)
            defer {
                sender.close()
                receiver.close()
            }
            var held: [Datagram] = []
            var iterator = receiver.datagrams().makeAsyncIterator()
            for number in 0..<12 {
                try await sender.send(ByteRope(copying: numberedDatagram(number, size: 64)))
                held.append(try #require(try await iterator.next()))  // kept: the buffers stay on loan
            }
            #expect(held.map { datagramNumber($0.data) } == Array(0..<12))
            #expect(receiver.statistics.fallbackReceives > 0)
            #expect(receiver.statistics.kernelDrops == 0)
        }
    }

    @Test("a connected UDP channel hears ECONNREFUSED from the peer's port, and goes on receiving")
    func connectionRefused() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let port = try freeUDPPort()
            let client = try IODatagramChannel(
                connectedTo: SocketAddress(ipAddress: "127.0.0.1", port: port),
                ring: ring
            )
            defer { client.close() }
            let events = _TestLock<[String]>([])
            let refused = DispatchSemaphore(value: 0)
            let heard = DispatchSemaphore(value: 0)
            client.receive(queue: ring) { done, datagram, error in
                events.withLock {
                    $0.append(
                        "\(done) \(datagram.map { String(decoding: $0.data, as: UTF8.self) } ?? "-") \(error.map { "\($0)" } ?? "-")"
                    )
                }
                if error == .connectionRefused { refused.signal() }
                if datagram != nil { heard.signal() }
            }
            // The send reaches the closed port; its ICMP answer comes back as the error. The
            // wait is long: the peer below must send only after it (a datagram queued on the
            // socket is received before its pending error), and in CI's ThreadSanitizer lane,
            // with the whole suite in parallel on two cores, this test once took 358 s and its
            // ring did not report the error within 30 s.
            try await client.send(ByteRope(copying: "anyone?".utf8))
            #expect(wait(refused, seconds: 60))
            // The receive goes on: a peer that binds the port now is heard.
            let peer = try IODatagramChannel(
                bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: port),
                ring: ring
            )
            defer { peer.close() }
            try await peer.send(ByteRope(copying: "here".utf8), to: client.localAddress)
            #expect(wait(heard, seconds: 10))
            let log = events.withLock { $0 }
            #expect(log == ["false - \(Errno.connectionRefused)", "false here -"])
        }
    }

    @Test("Unix datagram sockets: bound paths both ways, an abstract name, an unnamed sender")
    func unixDatagrams() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let directory = try TemporaryDirectory()
            let serverPath = directory.file("server.sock")
            let server = try IODatagramChannel(bindingTo: SocketAddress(unixPath: serverPath), ring: ring)
            startEcho(server)
            let client = try IODatagramChannel(
                connectedTo: SocketAddress(unixPath: serverPath),
                from: SocketAddress(unixPath: directory.file("client.sock")),
                ring: ring
            )
            try await client.send(ByteRope(copying: "over a path".utf8))
            let answer = try await client.receive()
            #expect(Array(answer.data) == Array("over a path".utf8))
            #expect(answer.source?.unixPath == serverPath)
            #expect(client.localAddress.unixPath == directory.file("client.sock"))

            let abstract = try IODatagramChannel(
                bindingTo: SocketAddress(
                    abstractUnixName: "ringio-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                ),
                ring: ring
            )
            defer { abstract.close() }
            let unnamed = try IODatagramChannel(connectedTo: abstract.localAddress, ring: ring)
            defer { unnamed.close() }
            try await unnamed.send(ByteRope(copying: "no name".utf8))
            let fromUnnamed = try await abstract.receive()
            #expect(Array(fromUnnamed.data) == Array("no name".utf8))
            #expect(fromUnnamed.source == nil)
            #expect(abstract.localAddress.abstractUnixName?.hasPrefix("ringio-test-") == true)

            // Closing removes the socket files the channels bound.
            server.close()
            client.close()
            #expect(eventually { access(serverPath, F_OK) != 0 && access(directory.file("client.sock"), F_OK) != 0 })
        }
    }

    @Test("close: the receive ends with ECANCELED once, later sends are refused")
    func close() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let channel = try IODatagramChannel(bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: 0), ring: ring)
        let calls = _TestLock<[String]>([])
        let ended = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "datagrams")
        channel.receive(queue: queue) { done, _, error in
            calls.withLock { $0.append("\(done) \(error.map { "\($0)" } ?? "nil")") }
            if done { ended.signal() }
        }
        let busy = DispatchSemaphore(value: 0)
        let busyError = _TestLock<Errno?>(nil)
        channel.receive(queue: queue) { done, _, error in
            if done {
                busyError.withLock { $0 = error }
                busy.signal()
            }
        }
        #expect(wait(busy, seconds: 10))
        #expect(busyError.withLock { $0 } == .resourceBusy)
        channel.close()
        #expect(wait(ended, seconds: 10))
        let refused = DispatchSemaphore(value: 0)
        let sendError = _TestLock<Errno?>(nil)
        channel.send(ByteRope(copying: "late".utf8), to: channel.localAddress, queue: queue) { error in
            sendError.withLock { $0 = error }
            refused.signal()
        }
        #expect(wait(refused, seconds: 10))
        #expect(sendError.withLock { $0 } == .canceled)
        queue.sync {}
        #expect(calls.withLock { $0 } == ["true \(Errno.canceled)"])
        // The port is free again: the socket is closed.
        let port = channel.localAddress.port!
        #expect(
            eventually {
                (try? IODatagramChannel(bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: port), ring: ring))?
                    .close() != nil
            }
        )
    }

    @Test("an iteration that stops early leaves the datagrams it did not take to the next one")
    func iterationCarry() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let (receiver, sender) = try loopbackPair(ring: ring)
            defer {
                sender.close()
                receiver.close()
            }
            for number in 0..<20 {
                try await sender.send(ByteRope(copying: numberedDatagram(number, size: 16)))
            }
            var first: [Int] = []
            for try await datagram in receiver.datagrams() {
                first.append(datagramNumber(datagram.data))
                if first.count == 5 { break }
            }
            var second: [Int] = []
            for try await datagram in receiver.datagrams() {
                second.append(datagramNumber(datagram.data))
                if first.count + second.count == 20 { break }
            }
            #expect(first + second == Array(0..<20))
        }
    }

    @Test("bad input: a local address of another family, a send of another family")
    func badInput() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            #expect(throws: Errno.addressFamilyNotSupported) {
                _ = try IODatagramChannel(
                    connectedTo: SocketAddress(ipAddress: "127.0.0.1", port: 9),
                    from: SocketAddress(ipAddress: "::1", port: 0),
                    ring: ring
                )
            }
            let channel = try IODatagramChannel(bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: 0), ring: ring)
            defer { channel.close() }
            let thrown = await thrownError {
                try await channel.send(ByteRope(copying: "x".utf8), to: SocketAddress(unixPath: "/nonexistent/socket"))
            }
            #expect(thrown is Errno, "\(String(describing: thrown))")
            let unaddressed = await thrownError {
                try await channel.send(ByteRope(copying: "x".utf8))
            }
            #expect((unaddressed as? Errno) == Errno.addressRequired, "\(String(describing: unaddressed))")
        }
    }
}

/// A UDP port on 127.0.0.1 with no socket bound to it right now.
func freeUDPPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    try #require(fd >= 0)
    defer { close(fd) }
    let address = try SocketAddress(ipAddress: "127.0.0.1", port: 0)
    try #require(address.withUnsafeSocketAddress { bind(fd, $0, $1) } == 0)
    return try #require(boundPort(fd))
}

/// A datagram channel bound to 127.0.0.1 (port 0) on `ring` with `options`, and one on `ring`
/// connected to it: the caller's to close, sender first.
private func loopbackPair(
    ring: RingLoop,
    options: IODatagramChannel.Options = IODatagramChannel.Options()
) throws -> (receiver: IODatagramChannel, sender: IODatagramChannel) {
    let receiver = try IODatagramChannel(
        bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: 0),
        options: options,
        ring: ring
    )
    do {
        return (receiver, try IODatagramChannel(connectedTo: receiver.localAddress, ring: ring))
    } catch {
        receiver.close()
        throw error
    }
}
