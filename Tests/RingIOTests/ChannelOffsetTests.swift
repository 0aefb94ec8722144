//===----------------------------------------------------------------------===//
// RingIO — IOChannel: offsets, stream against random access (R59–R63).
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

@Suite("IOChannel: offsets, stream vs random (R59–R63)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelOffsetTests {
    @Test(
        "R59 random reads and writes are at the creation position + offset and never move the position",
        arguments: QueueKind.allCases
    )
    func randomBase(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        try #require(lseek(file.fd, 4, SEEK_SET) == 4)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        let first = context.read(channel, offset: 0, length: 4)
        first.expectFinished()
        #expect(first.calls == [.done("4567")])
        let second = context.read(channel, offset: 6, length: 3)
        let write = context.write(channel, offset: 2, rope("xy"))
        second.expectFinished()
        write.expectFinished()
        #expect(second.calls == [.done("ABC")])
        #expect(write.calls == [.written])
        #expect(contentsOfFile(file.path) == bytes("012345xy89ABCDEF"))
        #expect(position(file.fd) == 4)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R60 negative offsets reach below the base; below 0 is EINVAL and only ends that read",
        arguments: QueueKind.allCases
    )
    func negativeOffsets(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        try #require(lseek(file.fd, 4, SEEK_SET) == 4)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        let below = context.read(channel, offset: -2, length: 3)
        below.expectFinished()
        #expect(below.calls == [.done("234")])
        let invalid = context.read(channel, offset: -5, length: 3)
        let invalidWrite = context.write(channel, offset: -5, rope("no"))
        invalid.expectFinished()
        invalidWrite.expectFinished()
        #expect(invalid.calls == [.failed(.invalidArgument)])
        #expect(invalidWrite.calls == [.failed(.invalidArgument, remaining: "no")])
        // R66: the channel is still usable.
        let after = context.read(channel, offset: 0, length: 2)
        after.expectFinished()
        #expect(after.calls == [.done("45")])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R60 a random write past the end leaves a hole of zeros", arguments: QueueKind.allCases)
    func writePastEnd(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        let write = context.write(channel, offset: 100, rope("z"))
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(contentsOfFile(file.path) == bytes("0123456789ABCDEF") + [UInt8](repeating: 0, count: 84) + bytes("z"))
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R61 stream reads ignore offsets and continue from the file position, advancing it",
        arguments: QueueKind.allCases
    )
    func streamReadsIgnoreOffsets(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        try #require(lseek(file.fd, 4, SEEK_SET) == 4)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, file.fd)
        let reads = [
            context.read(channel, offset: 100, length: 4),
            context.read(channel, offset: 0, length: 3),
            context.read(channel, offset: 7, length: 2),
        ]
        for read in reads { read.expectFinished() }
        #expect(reads.map(\.calls) == [[.done("4567")], [.done("89A")], [.done("BC")]])
        #expect(position(file.fd) == 13)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R61 stream writes ignore offsets: they go to the file position, in order, advancing it",
        arguments: QueueKind.allCases
    )
    func streamWritesIgnoreOffsets(_ queue: QueueKind) throws {
        let file = try makeFile([])
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, file.fd)
        let writes = [
            context.write(channel, offset: 50, rope("abc")),
            context.write(channel, offset: 0, rope("def")),
            context.write(channel, offset: 1_000, rope("gh")),
        ]
        for write in writes { write.expectFinished() }
        #expect(writes.map(\.calls) == [[.written], [.written], [.written]])
        #expect(contentsOfFile(file.path) == bytes("abcdefgh"))
        #expect(position(file.fd) == 8)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R62 random access on a character device is allowed", arguments: QueueKind.allCases)
    func randomOnCharacterDevice(_ queue: QueueKind) throws {
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        try #require(zero >= 0 && null >= 0)
        defer { closeAll(zero, null) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reading, writing, cleanups) = context.channels((.randomAccess, zero), (.randomAccess, null))
        let read = context.read(reading, offset: 4_096, length: 100)
        let write = context.write(writing, offset: 12, rope("discarded"))
        read.expectFinished()
        write.expectFinished()
        #expect(read.calls == [.done([UInt8](repeating: 0, count: 100))])
        #expect(write.calls == [.written])
        reading.close()
        writing.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R63 with O_APPEND a random write appends whatever its offset", arguments: QueueKind.allCases)
    func appendMode(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789"))
        let fd = open(file.path, O_WRONLY | O_APPEND | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, fd)
        let write = context.write(channel, offset: 0, rope("xyz"))
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(contentsOfFile(file.path) == bytes("0123456789xyz"))
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R74 R75 concurrent random reads each get their own bytes, in order within each (no order between them)",
        arguments: QueueKind.allCases
    )
    func concurrentRandomReads(_ queue: QueueKind) throws {
        let contents = patternBytes(4 * 1_048_576, seed: 19)
        let file = try makeFile(contents)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        channel.setLimit(highWater: 65_536)
        let ranges = (0..<32).map { index in (index * 131_072 + index * 7)..<((index + 1) * 131_072) }
        let reads = ranges.map { context.read(channel, offset: Int64($0.lowerBound), length: $0.count) }
        for (read, range) in zip(reads, ranges) {
            read.expectFinished()
            expectSameBytes(read.bytes, Array(contents[range]), "bytes at \(range)")
            #expect(read.calls.last?.done == true && read.calls.last?.error == nil)
        }
        channel.close()
        cleanup.expectOnce(nil)
    }
}
