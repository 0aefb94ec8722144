//===----------------------------------------------------------------------===//
// RingIO — IOChannel: writes (R38–R41, D2).
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

/// Where a write test's bytes go.
enum WriteTarget: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pipe
    case socketPair
    case tcp
    case streamFile
    case randomFile

    var testDescription: String { self.rawValue }
}

/// Memory handed to a rope without a copy; the rope's deallocator frees it.
private final class RawMemory: @unchecked Sendable {
    // @unchecked: written before the rope exists, then only read, until the deallocator
    // (which runs once, after the last reference) frees it.
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) {
        self.bytes = .allocate(byteCount: count, alignment: 16)
    }
}

@Suite("IOChannel: writes (R38–R41, D2)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelWriteTests {
    @Test("R39 a write that completes: only (true, nil, nil); the peer gets the bytes", arguments: QueueKind.allCases)
    func writeCompletes(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let write = context.write(channel, rope("hello"))
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(readExactly(right, 5) == bytes("hello"))
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R39 an empty write: (true, nil, nil), asynchronously, nothing written", arguments: QueueKind.allCases)
    func emptyWrite(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile([])
        let (stream, random, cleanups) = context.channels((.stream, writer), (.randomAccess, file.fd))
        let logs = [context.write(stream, ByteRope()), context.write(random, offset: 10, ByteRope())]
        for log in logs {
            log.expectFinished()
            #expect(log.calls == [.written])
        }
        #expect(pendingBytes(reader) == 0)
        var info = stat()
        #expect(fstat(file.fd, &info) == 0 && info.st_size == 0, "an empty write at offset 10 extended the file")
        stream.close()
        random.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R40 a write on a closed channel hands back all its data with ECANCELED; empty data comes back empty",
        arguments: QueueKind.allCases
    )
    func writeOnClosedChannel(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        channel.close()
        let data = fragmentedRope(10_000, seed: 3)
        let write = context.write(channel, data)
        let empty = context.write(channel, ByteRope())
        write.expectFinished()
        empty.expectFinished()
        #expect(write.calls == [.failed(.canceled, remaining: patternBytes(10_000, seed: 3))])
        #expect(empty.calls == [.failed(.canceled, remaining: [])])
        #expect(pendingBytes(right) == 0)
        cleanup.expectOnce(nil)
    }

    @Test(
        "R38 intermediate calls carry the data still to be written: a shrinking suffix; the reader gets every byte",
        arguments: QueueKind.allCases
    )
    func intermediateRemaining(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, writer)
        let sent = patternBytes(1_048_576, seed: 6)
        let write = context.write(channel, fragmentedRope(sent.count, seed: 6, maxRegion: 70_000))
        // A slow reader: the pipe (64 KiB) fills up many times.
        let received = _Lock<[UInt8]>([])
        let readerDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var all: [UInt8] = []
            while all.count < sent.count {
                let piece = readExactly(reader, min(16_384, sent.count - all.count))
                if piece.isEmpty { break }
                all += piece
            }
            received.withLock { $0 = all }
            readerDone.signal()
        }
        write.expectFinished()
        try #require(wait(readerDone))
        expectSameBytes(received.withLock { $0 }, sent)
        write.expectWriteProgress(of: sent)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "D2 R49 multi-region data (more regions than IOV_MAX, regions above a chunk) arrives intact",
        arguments: WriteTarget.allCases,
        QueueKind.allCases
    )
    func multiRegionWrite(_ target: WriteTarget, _ queue: QueueKind) throws {
        let small = fragmentedRope(400_000, seed: 8, maxRegion: 300)
        try #require(small.regionCount > 1_024)
        let big = ByteRope(copying: patternBytes(3 * 1_048_576 + 5, seed: 10))
        let data = small + big + fragmentedRope(5_000, seed: 11, maxRegion: 7)
        let expected =
            patternBytes(400_000, seed: 8) + patternBytes(3 * 1_048_576 + 5, seed: 10) + patternBytes(5_000, seed: 11)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanup = context.cleanupLog()

        switch target {
        case .pipe, .socketPair, .tcp:
            let endpoint: (local: CInt, remote: CInt)
            switch target {
            case .pipe:
                let (reader, writer) = try makePipe()
                endpoint = (writer, reader)
            case .socketPair: endpoint = try makeSocketPair()
            default:
                let (client, server) = try makeTCPPair()
                endpoint = (client, server)
            }
            defer {
                close(endpoint.local)
                close(endpoint.remote)
            }
            let channel = context.channel(.stream, endpoint.local, cleanup: cleanup)
            let received = _Lock<[UInt8]>([])
            let readerDone = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                received.withLock { $0 = readExactly(endpoint.remote, expected.count) }
                readerDone.signal()
            }
            let write = context.write(channel, data)
            write.expectFinished()
            write.expectWriteProgress(of: expected)
            try #require(wait(readerDone))
            let got = received.withLock { $0 }
            expectSameBytes(got, expected)
            channel.close()
        case .streamFile, .randomFile:
            let file = try makeFile(bytes("head"))
            try #require(lseek(file.fd, 4, SEEK_SET) == 4)
            let channel = context.channel(target == .streamFile ? .stream : .randomAccess, file.fd, cleanup: cleanup)
            // Stream: at the file position (4); random: at offset 10 from the base (4).
            let write = context.write(channel, offset: 10, data)
            write.expectFinished()
            write.expectWriteProgress(of: expected)
            let contents = contentsOfFile(file.path) ?? []
            let start = target == .streamFile ? 4 : 14
            #expect(contents.count == start + expected.count)
            expectSameBytes(Array(contents.dropFirst(start)), expected, "file bytes")
            #expect(Array(contents.prefix(4)) == bytes("head"))
            channel.close()
        }
        cleanup.expectOnce(nil)
    }

    @Test("R41 a write keeps its data alive until it completes, then lets it go", arguments: QueueKind.allCases)
    func writeRetainsData(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, writer)
        let count = 512 * 1_024
        let sent = patternBytes(count, seed: 12)
        let released = Counter()
        let memory = RawMemory(count: count)
        memory.bytes.copyBytes(from: sent)
        let final = _Lock<HandlerCall?>(nil)
        let finished = DispatchSemaphore(value: 0)
        do {
            let data = ByteRope(
                bytesNoCopy: UnsafeRawBufferPointer(memory.bytes),
                deallocator: .custom(queue: nil) {
                    // The memory is scribbled over first: a late use by the write would show.
                    memory.bytes.initializeMemory(as: UInt8.self, repeating: 0xEE)
                    memory.bytes.deallocate()
                    released.increment()
                }
            )
            // A handler that keeps no rope, so that only the operation holds the data.
            channel.write(offset: 0, data: data, queue: context.queue) { done, remaining, error in
                guard done else { return }
                final.withLock { $0 = HandlerCall(done, remaining.map { Array($0) }, error) }
                finished.signal()
            }
        }
        try #require(waitUntilFull(pipe: reader))
        context.barrier()
        #expect(released.count == 0, "the data was released while the write was blocked")
        let received = readExactly(reader, count)
        try #require(wait(finished))
        #expect(final.withLock { $0 } == .written)
        expectSameBytes(received, sent)
        channel.close()
        cleanup.expectOnce(nil)
        #expect(eventually { released.count == 1 }, "the data was never released")
    }
}
