//===----------------------------------------------------------------------===//
// RingIO — IOChannel's stream spellings without an offset: read(length:queue:handler:) and
// write(_:queue:handler:).
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

@Suite(
    "IOChannel: read(length:queue:handler:) and write(_:queue:handler:)",
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct ChannelStreamSpellingTests {
    @Test(
        "on a socket: writes go out whole and in order; a read of a length takes that many",
        arguments: QueueKind.allCases
    )
    func roundTrip(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (local, peer) = try context.socketPair()
        setReceiveTimeout(peer, seconds: 10)
        let cleanup = context.cleanupLog()
        let channel = context.channel(.stream, local, cleanup: cleanup)

        // More than the socket holds, then a little: the peer reads them in order.
        let first = patternBytes(300_000, seed: 110)
        let writes = [context.log(), context.log()]
        writes[0].submitting {
            channel.write(fragmentedRope(first.count, seed: 110), queue: context.queue, handler: writes[0].writeHandler)
        }
        writes[1].submitting { channel.write(rope(" and more"), queue: context.queue, handler: writes[1].writeHandler) }
        let received = readExactly(peer, first.count + 9)
        expectSameBytes(received, first + bytes(" and more"), "the peer's bytes")
        for log in writes {
            #expect(log.waitForFinal())
            #expect(log.final == .written, "\(log.calls.suffix(2))")
            #expect(log.problems.isEmpty, "\(log.problems)")
        }
        writes[0].expectWriteProgress(of: first)

        // A read of 5 takes 5 of the 11 bytes there; the next read the rest.
        writeAll(peer, bytes("hello world"))
        let five = context.log()
        five.submitting { channel.read(length: 5, queue: context.queue, handler: five.readHandler) }
        #expect(five.waitForFinal())
        #expect(five.bytes == bytes("hello"), "\(five.calls)")
        #expect(five.final?.error == nil, "\(five.calls)")
        let six = context.log()
        six.submitting { channel.read(length: 6, queue: context.queue, handler: six.readHandler) }
        #expect(six.waitForFinal())
        #expect(six.bytes == bytes(" world"), "\(six.calls)")
        for log in [five, six] { #expect(log.problems.isEmpty, "\(log.problems)") }

        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("on a socket: a read without a length reads to EOF", arguments: QueueKind.allCases)
    func readToEndOfFile(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (local, peer) = try context.socketPair()
        let cleanup = context.cleanupLog()
        let channel = context.channel(.stream, local, cleanup: cleanup)
        let sent = patternBytes(500_000, seed: 111)
        let log = context.log()
        log.submitting { channel.read(queue: context.queue, handler: log.readHandler) }
        // Sent in parts, more than the socket holds at once, then the end of the stream.
        let writerDone = DispatchSemaphore(value: 0)
        startThread {
            for start in stride(from: 0, to: sent.count, by: 50_000) {
                guard writeAllUnlessClosed(peer, Array(sent[start..<min(start + 50_000, sent.count)])) else { break }
            }
            shutdown(peer, Int32(SHUT_WR))
            writerDone.signal()
        }
        #expect(log.waitForFinal())
        expectSameBytes(log.bytes, sent, "what the read delivered")
        #expect(log.final?.done == true)
        #expect(log.final?.error == nil, "\(log.calls.suffix(2))")
        #expect(log.problems.isEmpty, "\(log.problems)")

        channel.close()
        cleanup.expectOnce(nil)
        // A writer left blocked (the read ended early) fails, and ends, once the socket is shut.
        shutdown(local, Int32(SHUT_RDWR))
        #expect(wait(writerDone), "the writer did not end")
    }

    @Test(
        "on a random-access channel, the spellings read and write at its base position",
        arguments: QueueKind.allCases
    )
    func randomAccessAtBase(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789"))
        // The base is the file position when the channel is made.
        try #require(lseek(file.fd, 2, SEEK_SET) == 2)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanup = context.cleanupLog()
        let channel = context.channel(.randomAccess, file.fd, cleanup: cleanup)
        let read = context.log()
        read.submitting { channel.read(length: 3, queue: context.queue, handler: read.readHandler) }
        #expect(read.waitForFinal())
        #expect(read.bytes == bytes("234"), "\(read.calls)")
        let write = context.log()
        write.submitting { channel.write(rope("ab"), queue: context.queue, handler: write.writeHandler) }
        #expect(write.waitForFinal())
        #expect(write.final == .written, "\(write.calls)")
        channel.close()
        cleanup.expectOnce(nil)
        #expect(contentsOfFile(file.path) == bytes("01ab456789"))
    }
}
