//===----------------------------------------------------------------------===//
// RingIO — IOChannel: ordering of operations (R71–R75).
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

@Suite("IOChannel: ordering (R71–R75)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelOrderingTests {
    @Test(
        "R72 reads on a stream socket run one at a time, in submission order, across the channels of the descriptor",
        arguments: QueueKind.allCases
    )
    func readsInOrder(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (first, second, cleanups) = context.channels((.stream, left), (.stream, left))
        let reads = [
            context.read(first, length: 4),
            context.read(second, length: 4),
            context.read(first, length: 4),
            context.read(second, length: 4),
        ]
        writeAll(right, bytes("aaaabbbbccccdddd"))
        for read in reads { read.expectFinished() }
        #expect(reads.map(\.calls) == [[.done("aaaa")], [.done("bbbb")], [.done("cccc")], [.done("dddd")]])
        first.close()
        second.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R71 R72 writes on a stream socket go out in submission order, across the channels of the descriptor",
        arguments: QueueKind.allCases
    )
    func writesInOrder(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let cleanups = [context.cleanupLog(), context.cleanupLog()]
        let channels = [
            context.channel(.stream, left, cleanup: cleanups[0]), context.channel(.stream, left, cleanup: cleanups[1]),
        ]
        var expected: [UInt8] = []
        var writes: [OperationLog] = []
        for index in 0..<400 {
            // Sizes vary so that some writes are large enough to need several syscalls.
            let piece = patternBytes(index % 50 == 0 ? 150_000 : 32, seed: index)
            expected += piece
            writes.append(context.write(channels[index % 2], ByteRope(copying: piece)))
        }
        let received = _Lock<[UInt8]>([])
        let readerDone = DispatchSemaphore(value: 0)
        let total = expected.count
        DispatchQueue.global().async {
            received.withLock { $0 = readExactly(right, total) }
            readerDone.signal()
        }
        for write in writes { write.expectFinished() }
        try #require(wait(readerDone))
        expectSameBytes(received.withLock { $0 }, expected)
        for channel in channels { channel.close() }
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R72 a read and a write are in flight at the same time on one socket", arguments: QueueKind.allCases)
    func readAndWriteTogether(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let read = context.read(channel, length: 4)
        let write = context.write(channel, rope("ping"))
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(read.calls.isEmpty, "the read finished before any data")
        #expect(readExactly(right, 4) == bytes("ping"))
        writeAll(right, bytes("pong"))
        read.expectFinished()
        #expect(read.calls == [.done("pong")])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R73 stream operations on a regular file form one queue, reads and writes together",
        arguments: QueueKind.allCases
    )
    func fileStreamIsOneQueue(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (first, second, cleanups) = context.channels((.stream, file.fd), (.stream, file.fd))
        let logs = [
            context.read(first, length: 3),
            context.write(second, rope("ab")),
            context.read(first, length: 2),
            context.write(first, rope("Z")),
            context.read(second, length: 100),
        ]
        for log in logs { log.expectFinished() }
        #expect(logs.map(\.calls) == [[.done("012")], [.written], [.done("56")], [.written], [.more("89"), .eof]])
        #expect(contentsOfFile(file.path) == bytes("012ab56Z89"))
        first.close()
        second.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R74 random operations run concurrently and each completes correctly; no order is assumed",
        arguments: QueueKind.allCases
    )
    func randomOperationsConcurrently(_ queue: QueueKind) throws {
        let contents = patternBytes(1_048_576, seed: 27)
        let file = try makeFile(contents)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        var reads: [(OperationLog, Range<Int>)] = []
        var writes: [OperationLog] = []
        for index in 0..<16 {
            // Reads in the first half, writes in the second: they never overlap.
            let range = (index * 32_768)..<(index * 32_768 + 20_000)
            reads.append((context.read(channel, offset: Int64(range.lowerBound), length: range.count), range))
            writes.append(
                context.write(
                    channel,
                    offset: Int64(524_288 + index * 32_768),
                    ByteRope(copying: patternBytes(1_000, seed: index))
                )
            )
        }
        for (read, range) in reads {
            read.expectFinished()
            #expect(read.calls == [.done(Array(contents[range]))])
        }
        for write in writes {
            write.expectFinished()
            #expect(write.calls == [.written])
        }
        let after = contentsOfFile(file.path) ?? []
        for index in 0..<16 {
            let start = 524_288 + index * 32_768
            #expect(Array(after[start..<start + 1_000]) == patternBytes(1_000, seed: index), "write \(index)")
        }
        #expect(position(file.fd) == 0)
        channel.close()
        cleanup.expectOnce(nil)
    }
}
