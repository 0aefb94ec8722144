//===----------------------------------------------------------------------===//
// RingIO — IOChannel: the read handler protocol (R32–R37, R41–R42, D7).
// Rule numbers (R…, D…): Sources/RingIO/RingIO.docc/DispatchIOContract.md and ComingFromDispatch.md.
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

@Suite("IOChannel: read handler protocol (R32–R37, R41–R42)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelReadTests {
    @Test(
        "R32 D7 a handler is never called inside the submitting call: data ready, channel closed, zero length",
        arguments: QueueKind.allCases
    )
    func neverSynchronous(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        writeAll(right, bytes("abcdef"))
        let ready = context.read(channel, length: 3)
        ready.expectFinished()
        #expect(ready.calls == [.done("abc")])
        let empty = context.read(channel, length: 0)
        empty.expectFinished()
        #expect(empty.calls == [.eof])

        // From the ring thread itself: a handler for the ring must still wait for a later turn.
        let fromRing = context.log()
        let submitted = DispatchSemaphore(value: 0)
        context.ring.enqueue {
            context.read(channel, length: 3, into: fromRing)
            submitted.signal()
        }
        try #require(wait(submitted))
        fromRing.expectFinished()
        #expect(fromRing.calls == [.done("def")])

        channel.close()
        context.expectReadAndWriteFail(channel, with: .canceled, length: 3, data: "x")
        cleanup.expectOnce(nil)
    }

    @Test("R32 calls of one operation never overlap, even on a concurrent queue")
    func serializedOnConcurrentQueue() throws {
        let (reader, writer) = try makePipe()
        defer { closeAll(reader, writer) }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let concurrent = DispatchQueue(label: "concurrent-handlers", attributes: .concurrent)
        let cleanup = CleanupLog()
        let channel = IOChannel(
            kind: .stream,
            fileDescriptor: reader,
            queue: concurrent,
            ring: ring,
            cleanupHandler: cleanup.handler
        )
        channel.setLimit(highWater: 512)
        let sent = patternBytes(64 * 1_024, seed: 5)
        let logs = (0..<2).map { _ in OperationLog() }
        for log in logs {
            log.submitting {
                channel.read(offset: 0, length: sent.count / 2, queue: concurrent, handler: log.readHandler)
            }
        }
        writeAll(writer, sent)
        for log in logs { log.expectFinished() }
        expectSameBytes(logs[0].bytes + logs[1].bytes, sent)
        #expect(logs.allSatisfy { $0.calls.count >= 64 }, "at most 512 bytes per call")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R33 R34 a read that gets its length ends with one call (true, data, nil)", arguments: QueueKind.allCases)
    func lengthSatisfied(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile(patternBytes(100, seed: 1))
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))
        writeAll(writer, bytes("0123456789"))
        let fromPipe = context.read(stream, length: 10)
        let fromFile = context.read(random, offset: 20, length: 40)
        fromPipe.expectFinished()
        fromFile.expectFinished()
        #expect(fromPipe.calls == [.done("0123456789")])
        #expect(fromFile.calls == [.done(Array(patternBytes(100, seed: 1)[20..<60]))])
        stream.close()
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R34 R47 a stream read takes no more than its length: the rest is left for the next read",
        arguments: QueueKind.allCases
    )
    func readTakesOnlyItsLength(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        writeAll(writer, bytes("abcdefghijklmno"))
        let first = context.read(channel, length: 10)
        first.expectFinished()
        #expect(first.calls == [.done("abcdefghij")])
        #expect(pendingBytes(reader) == 5, "the channel read past its length")
        let second = context.read(channel, length: 5)
        second.expectFinished()
        #expect(second.calls == [.done("klmno")])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R35 EOF is two calls: (false, tail) then (true, empty, nil)", arguments: QueueKind.allCases)
    func endOfFile(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile(patternBytes(100, seed: 2))
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))
        writeAll(writer, bytes("hello"))
        context.close(writer)
        let fromPipe = context.read(stream, length: .max)
        let fromFile = context.read(random, offset: 90, length: 50)
        fromPipe.expectFinished()
        fromFile.expectFinished()
        #expect(fromPipe.calls == [.more("hello"), .eof])
        #expect(fromFile.calls == [.more(Array(patternBytes(100, seed: 2)[90...])), .eof])
        stream.close()
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R35 a read at or past EOF is only (true, empty, nil)", arguments: QueueKind.allCases)
    func readAtEndOfFile(_ queue: QueueKind) throws {
        let (reader, writer) = try makePipe()
        defer { close(reader) }
        close(writer)
        let file = try makeFile(patternBytes(100))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))
        let logs = [
            context.read(stream, length: .max),
            context.read(random, offset: 100, length: 10),
            context.read(random, offset: 200, length: .max),
        ]
        for log in logs {
            log.expectFinished()
            #expect(log.calls == [.eof])
        }
        stream.close()
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R36 an error after data: (false, pending) first, then (true, nil, error)", arguments: QueueKind.allCases)
    func errorAfterData(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 1_000)
        let read = context.read(channel, length: .max)
        writeAll(writer, bytes("0123456789"))
        // The channel has taken the bytes from the pipe, below low water: they are pending.
        try #require(eventually { pendingBytes(reader) == 0 })
        context.barrier()
        #expect(read.calls.isEmpty, "a delivery below low water")
        channel.close(flags: .stop)
        read.expectFinished()
        #expect(read.calls == [.more("0123456789"), .failed(.canceled)])
        cleanup.expectOnce(nil)
    }

    @Test(
        "R37 a zero-length read: (true, empty, nil) with no I/O; on a closed channel (true, nil, ECANCELED)",
        arguments: QueueKind.allCases
    )
    func zeroLength(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile(patternBytes(10))
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))
        writeAll(writer, bytes("abc"))
        let logs = [context.read(stream, length: 0), context.read(random, offset: 4, length: 0)]
        for log in logs {
            log.expectFinished()
            #expect(log.calls == [.eof])
        }
        #expect(pendingBytes(reader) == 3, "a zero-length read consumed bytes")
        stream.close()
        let closed = context.read(stream, length: 0)
        closed.expectFinished()
        #expect(closed.calls == [.failed(.canceled)])
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R41 delivered ropes stay valid after the handler returns, through later reads that reuse buffers",
        arguments: QueueKind.allCases
    )
    func deliveredDataStaysValid(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile(patternBytes(3 * 1_048_576 + 17, seed: 9))
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))

        // Round one: keep every rope.
        let first = patternBytes(200_000, seed: 1)
        let firstRead = context.read(stream, length: first.count)
        let firstFile = context.read(random, length: .max)
        DispatchQueue.global().async { writeAll(writer, first) }
        firstRead.expectFinished()
        firstFile.expectFinished()
        let keptPipe = firstRead.ropes
        let keptFile = firstFile.ropes
        // Round two on the same channels, with different bytes.
        let second = patternBytes(200_000, seed: 2)
        let secondRead = context.read(stream, length: second.count)
        let secondFile = context.read(random, length: .max)
        DispatchQueue.global().async { writeAll(writer, second) }
        secondRead.expectFinished()
        secondFile.expectFinished()
        expectSameBytes(secondRead.bytes, second)
        // The ropes kept from round one are unchanged.
        expectSameBytes(keptPipe.flatMap { Array($0) }, first, "kept pipe ropes")
        expectSameBytes(keptFile.flatMap { Array($0) }, patternBytes(3 * 1_048_576 + 17, seed: 9), "kept file ropes")
        stream.close()
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R42 R75 a long read delivers every byte once, in order, with no empty intermediate call",
        arguments: QueueKind.allCases
    )
    func longRead(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(.socketPair)
        let (channel, cleanup) = context.channelWithCleanup(.stream, endpoint.local)
        let sent = patternBytes(1_048_576 + 333, seed: 4)
        let read = context.read(channel, length: .max)
        DispatchQueue.global().async {
            var offset = 0
            var size = 1
            while offset < sent.count {
                let end = min(offset + size, sent.count)
                endpoint.send(Array(sent[offset..<end]))
                offset = end
                size = size * 13 % 40_000 + 1
            }
            endpoint.closeRemote()
        }
        read.expectFinished()
        expectSameBytes(read.bytes, sent)
        #expect(read.calls.last == .eof)
        channel.close()
        cleanup.expectOnce(nil)
    }
}
