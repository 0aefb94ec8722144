//===----------------------------------------------------------------------===//
// RingIO — channels: back-pressure and the fast-path allocation behaviour.
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

@Suite("IOChannel: back-pressure", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct IOChannelFlowTests {
    /// Writes a recognisable pattern (byte i of the stream is i % 251) into a non-blocking
    /// socket until `limit` bytes are written, or until it is full and stays full once `ring`
    /// has taken what it would (a ring barrier passed: a receive that goes on would have made
    /// room); returns the count.
    private static func writePattern(to fd: CInt, from start: Int, limit: Int, ring: RingLoop) -> Int {
        let chunk = 64 << 10
        var buffer = [UInt8](repeating: 0, count: chunk)
        var written = start
        while written < limit {
            let count = min(chunk, limit - written)
            for index in 0..<count { buffer[index] = UInt8((written + index) % 251) }
            let result = buffer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
            if result > 0 {
                written += result
                continue
            }
            guard ringBarrier(ring) else { break }
            if pollEvents(fd, Int16(POLLOUT)) & Int16(POLLOUT) == 0 { break }
        }
        return written
    }

    @Test("back-pressure: an async reader that stops taking data stops the receive; nothing is lost")
    func asyncReaderStopsTheReceive() async throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let pair = try readerAndNonBlockingWriter()
        defer { Glibc.close(pair[0]) }
        let channel = IOChannel(kind: .stream, fileDescriptor: pair[0], queue: ring) { _ in }
        defer { channel.close() }

        // Start the read with one byte.
        var written = Self.writePattern(to: pair[1], from: 0, limit: 1, ring: ring)
        var iterator = channel.reads().makeAsyncIterator()
        var received = [UInt8]()
        if let first = try await iterator.next() { received += Array(first) }

        // The consumer takes nothing now. Without back-pressure the channel would drain the
        // socket into memory and the writer would get all 64 MiB through.
        let limit = 64 << 20
        written = Self.writePattern(to: pair[1], from: written, limit: limit, ring: ring)
        #expect(written < 16 << 20, "the writer got \(written) bytes through a reader that took none")

        // Everything written arrives, once, in order.
        Glibc.close(pair[1])
        while let data = try await iterator.next() {
            received += Array(data)
        }
        #expect(received.count == written)
        #expect(received.indices.allSatisfy { received[$0] == UInt8($0 % 251) })
    }

    @Test("back-pressure: handlers on a slow DispatchQueue hold the receive back; nothing is lost")
    func slowQueueHoldsTheReceiveBack() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let pair = try readerAndNonBlockingWriter()
        defer { Glibc.close(pair[0]) }
        let queue = DispatchQueue(label: "slow")
        let channel = IOChannel(kind: .stream, fileDescriptor: pair[0], queue: queue, ring: ring) { _ in }
        defer { channel.close() }
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let received = _Lock<[UInt8]>([])
        let firstCall = Atomic<Bool>(true)
        channel.read(offset: 0, length: .max, queue: queue) { isDone, data, _ in
            // The first call blocks the queue until the writer has pushed all it could.
            if firstCall.exchange(false, ordering: .relaxed) { gate.wait() }
            if let data { received.withLock { $0 += Array(data) } }
            if isDone { done.signal() }
        }
        let written = Self.writePattern(to: pair[1], from: 0, limit: 64 << 20, ring: ring)
        #expect(written < 16 << 20, "the writer got \(written) bytes through a queue that ran no handler")
        gate.signal()
        Glibc.close(pair[1])
        #expect(wait(done, seconds: 20))
        let bytes = received.withLock { $0 }
        #expect(bytes.count == written)
        #expect(bytes.indices.allSatisfy { bytes[$0] == UInt8($0 % 251) })
    }

    @Test("operations, handlers and channels are released once done (no reference cycle)")
    func nothingLeaks() throws {
        final class Token: Sendable {}
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let queue = DispatchQueue(label: "leaks")
        var pair: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer {
            Glibc.close(pair[0])
            Glibc.close(pair[1])
        }
        weak var weakToken: Token?
        weak var weakChannel: IOChannel?
        let finished = DispatchSemaphore(value: 0)
        let cleaned = DispatchSemaphore(value: 0)
        do {
            let token = Token()
            weakToken = token
            let channel = IOChannel(kind: .stream, fileDescriptor: pair[0], queue: queue, ring: ring) { _ in
                cleaned.signal()
            }
            weakChannel = channel
            for delivery in [queue as any IOQueue, ring] {
                channel.write(offset: 0, data: ByteRope(copying: [1, 2, 3]), queue: delivery) { done, _, _ in
                    withExtendedLifetime(token) {}
                    if done { finished.signal() }
                }
                channel.read(offset: 0, length: 3, queue: delivery) { done, _, _ in
                    withExtendedLifetime(token) {}
                    if done { finished.signal() }
                }
                #expect(Glibc.write(pair[1], "abc", 3) == 3)
            }
            channel.close()
        }
        for _ in 0..<4 { #expect(wait(finished, seconds: 10)) }
        #expect(wait(cleaned, seconds: 10))
        // The last handler call may still be returning: wait for the references to go, boundedly.
        _ = eventually(seconds: 5) { weakToken == nil && weakChannel == nil }
        #expect(weakChannel == nil, "the channel outlived its last reference")
        #expect(weakToken == nil, "a handler (and so its operation) was never released")
    }
}

/// A connected pair of Unix stream sockets: `[0]` for the channel, `[1]` for the test's writer,
/// non-blocking.
private func readerAndNonBlockingWriter() throws -> [CInt] {
    let (reader, writer) = try makeSocketPair()
    _ = fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK)
    return [reader, writer]
}
