//===----------------------------------------------------------------------===//
// RingIO — IOChannel: the async surface (D8).
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

/// Reads `channel` to the end through `reads()`, collecting the bytes.
private func collect(_ channel: IOChannel, offset: Int64 = 0, length: Int = .max) async throws -> [UInt8] {
    var all: [UInt8] = []
    for try await rope in channel.reads(offset: offset, length: length) {
        all += Array(rope)
    }
    return all
}

@Suite("IOChannel: async surface (D8)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelAsyncTests {
    @Test("D8 reads() yields the stream's bytes in order and ends at EOF", arguments: QueueKind.allCases)
    func readsToEnd(_ queue: QueueKind) async throws {
        let (reader, writer) = try makePipe()
        defer { close(reader) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let sent = patternBytes(300_000, seed: 30)
        DispatchQueue.global().async {
            for start in stride(from: 0, to: sent.count, by: 7_000) {
                writeAll(writer, Array(sent[start..<min(start + 7_000, sent.count)]))
            }
            close(writer)
        }
        let outcome = Outcome(await bounded { try await collect(channel) })
        #expect(outcome == .bytes(sent), "\(outcome)")
        channel.close()
        await cleanup.expectOnceAsync(nil)
    }

    @Test("D8 reads(offset:length:) on a random-access channel stops at length", arguments: QueueKind.allCases)
    func readsWithLength(_ queue: QueueKind) async throws {
        let contents = patternBytes(3 * 1_048_576, seed: 31)
        let file = try makeFile(contents)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        let outcome = Outcome(await bounded { try await collect(channel, offset: 1_000, length: 2_500_000) })
        #expect(outcome == .bytes(Array(contents[1_000..<2_501_000])), "\(outcome)")
        channel.close()
        await cleanup.expectOnceAsync(nil)
    }

    @Test("D8 read(length:) returns everything up to length, or up to EOF", arguments: QueueKind.allCases)
    func readUpToLength(_ queue: QueueKind) async throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let file = try makeFile(patternBytes(10_000, seed: 32))
        let (stream, random, cleanups) = context.channels((.stream, reader), (.randomAccess, file.fd))
        writeAll(writer, bytes("hello"))
        // The rest once the read has taken "hello" and waits for more.
        startThread {
            _ = eventually { pendingBytes(reader) == 0 }
            ringBarrier(context.ring)
            writeAll(writer, bytes(" world"))
        }
        let exact = Outcome(await bounded { Array(try await stream.read(length: 11)) })
        #expect(exact == .bytes(bytes("hello world")), "\(exact)")
        writeAll(writer, bytes("tail"))
        context.close(writer)
        let toEnd = Outcome(await bounded { Array(try await stream.read(length: 100)) })
        #expect(toEnd == .bytes(bytes("tail")), "\(toEnd)")
        let fromFile = Outcome(await bounded { Array(try await random.read(offset: 9_000, length: 5_000)) })
        #expect(fromFile == .bytes(Array(patternBytes(10_000, seed: 32)[9_000...])), "\(fromFile)")
        stream.close()
        random.close()
        for cleanup in cleanups { await cleanup.expectOnceAsync(nil) }
    }

    @Test("D8 write(_:) writes every byte", arguments: QueueKind.allCases)
    func writeAsync(_ queue: QueueKind) async throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let sent = patternBytes(600_000, seed: 33)
        let received = _Lock<[UInt8]?>(nil)
        DispatchQueue.global().async {
            let bytes = readExactly(right, sent.count)
            received.withLock { $0 = bytes }
        }
        let data = fragmentedRope(sent.count, seed: 33, maxRegion: 5_000)
        let outcome = Outcome(await bounded { try await channel.write(data) }.map { $0.map { [] } })
        #expect(outcome == .bytes([]), "\(outcome)")
        let holds1 = await eventuallyAsync { received.withLock { $0 != nil } }
        try #require(holds1)
        expectSameBytes(received.withLock { $0 } ?? [], sent)
        channel.close()
        await cleanup.expectOnceAsync(nil)
    }

    @Test(
        "D8 write(_:offset:) writes at the offset of a random-access channel; an empty write returns",
        arguments: QueueKind.allCases
    )
    func writeAsyncAtOffset(_ queue: QueueKind) async throws {
        let file = try makeFile(patternBytes(10_000, seed: 34))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
        let patch = patternBytes(3_000, seed: 35)
        let written = Outcome(
            await bounded { try await channel.write(fragmentedRope(3_000, seed: 35, maxRegion: 700), offset: 4_000) }
                .map { $0.map { [] } }
        )
        #expect(written == .bytes([]), "\(written)")
        let empty = Outcome(await bounded { try await channel.write(ByteRope(), offset: 9_999) }.map { $0.map { [] } })
        #expect(empty == .bytes([]), "\(empty)")
        channel.close()
        await cleanup.expectOnceAsync(nil)
        var expected = patternBytes(10_000, seed: 34)
        expected.replaceSubrange(4_000..<7_000, with: patch)
        expectSameBytes(contentsOfFile(file.path) ?? [], expected)
    }

    @Test(
        "D6 D8 errors are thrown as Errno: ECANCELED on a closed channel, EBADF from a failed one",
        arguments: QueueKind.allCases
    )
    func errorsThrown(_ queue: QueueKind) async throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let cleanups = [context.cleanupLog(), context.cleanupLog()]
        let closed = context.channel(.stream, left, cleanup: cleanups[0])
        closed.close()
        let write = Outcome(await bounded { try await closed.write(rope("x")) }.map { $0.map { [] } })
        #expect(write == .error(.canceled), "\(write)")
        let read = Outcome(await bounded { Array(try await closed.read(length: 4)) })
        #expect(read == .error(.canceled), "\(read)")
        let failed = context.channel(.stream, descriptorThatIsNeverOpen(), cleanup: cleanups[1])
        let sequence = Outcome(await bounded { try await collect(failed) })
        #expect(sequence == .error(.badFileDescriptor), "\(sequence)")
        await cleanups[0].expectOnceAsync(nil)
        await cleanups[1].expectOnceAsync(.badFileDescriptor)
    }

    @Test(
        "D8 cancelling the task stops reads(): the bytes so far, then ECANCELED is thrown",
        arguments: QueueKind.allCases
    )
    func cancelReads(_ queue: QueueKind) async throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let seen = _Lock<[UInt8]>([])
        let task = Task(executorPreference: testTaskExecutor) {
            for try await rope in channel.reads() {
                seen.withLock { $0 += Array(rope) }
            }
        }
        writeAll(writer, bytes("abc"))
        let holds2 = await eventuallyAsync { seen.withLock { $0 } == bytes("abc") }
        #expect(holds2)
        task.cancel()
        let outcome = Outcome(await bounded { try await task.value }.map { $0.map { [] } })
        #expect(outcome == .error(.canceled), "\(outcome)")
        #expect(seen.withLock { $0 } == bytes("abc"))
        channel.close()
        await cleanup.expectOnceAsync(nil)
    }

    @Test("D8 cancelling the task stops read(length:): ECANCELED is thrown", arguments: QueueKind.allCases)
    func cancelRead(_ queue: QueueKind) async throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let task = Task(executorPreference: testTaskExecutor) { Array(try await channel.read(length: 100)) }
        // Suspended in the read by now: its submission has reached the ring.
        await ringBarrier(context.ring)
        await ringBarrier(context.ring)
        task.cancel()
        let outcome = Outcome(await bounded { try await task.value })
        #expect(outcome == .error(.canceled), "\(outcome)")
        channel.close()
        await cleanup.expectOnceAsync(nil)
    }
}
