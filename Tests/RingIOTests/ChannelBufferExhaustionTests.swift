//===----------------------------------------------------------------------===//
// RingIO — channels: stream reads when every provided receive buffer is on loan.
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

/// A ring with 4 receive buffers of 256 bytes: a few kilobytes exhaust them.
@Suite("IOChannel: receive buffers exhausted", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelBufferExhaustionTests {
    /// Byte `i` of every test stream.
    private static func pattern(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: index % 251) }

    /// A ring with 4 receive buffers of 256 bytes, a stream channel on one end of a socketpair
    /// (its cleanup closes that end), and the other end.
    private static func streamOnSmallPool() throws -> (RingLoop, IOChannel, peer: CInt) {
        let ring = try RingLoop(entries: 64, receiveBuffers: 4, receiveBufferSize: 256)
        var pair: [CInt] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let local = pair[0]
        let channel = IOChannel(kind: .stream, fileDescriptor: local, queue: ring, ring: ring) { _ in
            Glibc.close(local)
        }
        return (ring, channel, pair[1])
    }

    /// Writes `count` pattern bytes to blocking `fd` from another thread.
    private static func writeInBackground(_ fd: CInt, count: Int, closeAfter: Bool) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let bytes = (0..<count).map(Self.pattern)
            var offset = 0
            while offset < count {
                let written = bytes[offset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                guard written > 0 else { break }
                offset += written
            }
            if closeAfter { Glibc.shutdown(fd, Int32(SHUT_WR)) }
            done.signal()
        }
        return done
    }

    @Test("a reader that keeps every rope: the rest is read into fresh memory, nothing lost")
    func heldRopesFallBackToFreshMemory() throws {
        let (ring, channel, peer) = try Self.streamOnSmallPool()
        defer { ring.shutdown() }
        defer { Glibc.close(peer) }
        let held = _Lock<[ByteRope]>([])
        let finished = DispatchSemaphore(value: 0)
        channel.read(offset: 0, length: .max, queue: ring) { done, data, error in
            if let data, !data.isEmpty { held.withLock { $0.append(data) } }  // never released
            if done {
                #expect(error == nil)
                finished.signal()
            }
        }
        let count = 64 << 10
        let writer = Self.writeInBackground(peer, count: count, closeAfter: true)
        #expect(wait(finished, seconds: 20), "the read never reached the end")
        #expect(wait(writer, seconds: 5))
        let received = held.withLock { $0.reduce(into: [UInt8]()) { $0 += Array($1) } }
        #expect(received.count == count)
        #expect(received.indices.allSatisfy { received[$0] == Self.pattern($0) })
        #expect(ring.counters.fallbackReceives > 0, "4 buffers of 256 bytes cannot hold 64 KiB")
        channel.close()
    }

    @Test("an echo whose writes give the buffers back: every byte returns once, in order")
    func echoReturnsBuffers() throws {
        let (ring, channel, peer) = try Self.streamOnSmallPool()
        defer { ring.shutdown() }
        defer { Glibc.close(peer) }
        channel.read(offset: 0, length: .max, queue: ring) { done, data, _ in
            if let data, !data.isEmpty {
                channel.write(offset: 0, data: data, queue: ring) { _, _, error in #expect(error == nil) }
            }
            if done { channel.close() }
        }
        let count = 1 << 20
        let writer = Self.writeInBackground(peer, count: count, closeAfter: true)
        var received = [UInt8]()
        received.reserveCapacity(count)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while received.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.recv(peer, $0.baseAddress, $0.count, 0) }
            guard got > 0 else { break }
            received += buffer[..<got]
        }
        #expect(wait(writer, seconds: 5))
        #expect(received.count == count)
        #expect(received.indices.allSatisfy { received[$0] == Self.pattern($0) })
    }
}
