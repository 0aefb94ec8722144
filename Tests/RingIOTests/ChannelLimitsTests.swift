//===----------------------------------------------------------------------===//
// RingIO — IOChannel: water marks and the interval timer (R43–R52, D1).
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

@Suite("IOChannel: water marks and interval (R43–R52, D1)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelLimitsTests {
    @Test(
        "D1 R48 stream channels on pipes, sockets, FIFOs and terminals deliver as data arrives (low water 1)",
        arguments: EndpointKind.allCases,
        QueueKind.allCases
    )
    func deliverAsDataArrives(_ endpointKind: EndpointKind, _ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(endpointKind)
        let (channel, cleanup) = context.channelWithCleanup(.stream, endpoint.local)
        let read = context.read(channel, length: .max)
        for (index, piece) in ["abc", "defgh", "ij"].enumerated() {
            endpoint.send(bytes(piece))
            #expect(read.waitForCalls(index + 1), "no delivery of \(piece) with the default low water")
        }
        channel.close(flags: .stop)
        read.expectFinished()
        #expect(read.calls == [.more("abc"), .more("defgh"), .more("ij"), .failed(.canceled)])
        cleanup.expectOnce(nil)
    }

    @Test(
        "D1 R43 elsewhere the default low water is 1 MiB: regular files and character devices",
        arguments: QueueKind.allCases
    )
    func defaultLowWaterElsewhere(_ queue: QueueKind) throws {
        let size = 3 * 1_048_576 + 524_288
        let file = try makeFile(patternBytes(size, seed: 13))
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        try #require(zero >= 0)
        defer { close(zero) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (stream, device, cleanups) = context.channels((.stream, file.fd), (.stream, zero))
        let fromFile = context.read(stream, length: .max)
        let fromDevice = context.read(device, length: size)
        fromFile.expectFinished()
        fromDevice.expectFinished()
        expectSameBytes(fromFile.bytes, patternBytes(size, seed: 13), "file bytes")
        expectSameBytes(fromDevice.bytes, [UInt8](repeating: 0, count: size), "/dev/zero bytes")
        #expect(
            fromDevice.final?.bytes?.isEmpty == false,
            "a read of /dev/zero ends with its length: \(fromDevice.calls)"
        )
        // Every delivery but the flush at the end holds at least 1 MiB.
        for log in [fromFile, fromDevice] {
            let sizes = log.calls.map { $0.bytes?.count ?? 0 }
            #expect(sizes.dropLast(2).allSatisfy { $0 >= 1_048_576 }, "delivery sizes: \(sizes)")
            #expect(sizes.count <= 5, "delivery sizes: \(sizes)")
        }
        stream.close()
        device.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    /// Reads `length` bytes of `contents` (written to a pipe first) after `configure`.
    private func deliveries(
        _ queue: QueueKind,
        contents: String,
        length: Int,
        configure: (IOChannel) -> Void
    ) throws -> [HandlerCall] {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        configure(channel)
        writeAll(writer, bytes(contents))
        let read = context.read(channel, length: length)
        read.expectFinished()
        channel.close()
        cleanup.expectOnce(nil)
        return read.calls
    }

    @Test("R45 high water 0 is 1: one-byte deliveries", arguments: QueueKind.allCases)
    func highWaterZero(_ queue: QueueKind) throws {
        let calls = try self.deliveries(queue, contents: "abcde", length: 5) { $0.setLimit(highWater: 0) }
        #expect(calls == [.more("a"), .more("b"), .more("c"), .more("d"), .done("e")])
    }

    @Test("R45 low water above high water raises high water (last setter wins)", arguments: QueueKind.allCases)
    func lowRaisesHigh(_ queue: QueueKind) throws {
        let calls = try self.deliveries(queue, contents: "abcdefghij", length: 10) {
            $0.setLimit(highWater: 1)
            $0.setLimit(lowWater: 4)
        }
        #expect(calls == [.more("abcd"), .more("efgh"), .done("ij")])
    }

    @Test("R45 high water below low water lowers low water (last setter wins)", arguments: QueueKind.allCases)
    func highLowersLow(_ queue: QueueKind) throws {
        let calls = try self.deliveries(queue, contents: "abcdefghij", length: 10) {
            $0.setLimit(lowWater: 8)
            $0.setLimit(highWater: 3)
        }
        #expect(calls == [.more("abc"), .more("def"), .more("ghi"), .done("j")])
    }

    @Test("R45 low water Int.max: no partial deliveries at all", arguments: QueueKind.allCases)
    func lowWaterMax(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: .max)
        let exact = context.read(channel, length: 30)
        let toEnd = context.read(channel, length: .max)
        for round in 0..<6 {
            writeAll(writer, Array(repeating: UInt8(ascii: "a") + UInt8(round), count: 10))
            // Each arrival on its own: the channel has taken it before the next comes.
            try #require(eventually { pendingBytes(reader) == 0 })
            context.barrier()
        }
        context.close(writer)
        exact.expectFinished()
        toEnd.expectFinished()
        #expect(exact.calls == [.done("aaaaaaaaaabbbbbbbbbbcccccccccc")])
        #expect(toEnd.calls == [.more("ddddddddddeeeeeeeeeeffffffffff"), .eof])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R46 limits are taken when an operation is submitted; later setters do not change it",
        arguments: QueueKind.allCases
    )
    func limitsSnapshotted(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let before = context.read(channel, length: 6)
        channel.setLimit(highWater: 1)
        let after = context.read(channel, length: 3)
        writeAll(writer, bytes("abcdef"))
        before.expectFinished()
        #expect(before.calls == [.done("abcdef")])
        writeAll(writer, bytes("xyz"))
        after.expectFinished()
        #expect(after.calls == [.more("x"), .more("y"), .done("z")])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R47 R48 no delivery exceeds high water, and each fills up to it", arguments: QueueKind.allCases)
    func highWaterBoundsDeliveries(_ queue: QueueKind) throws {
        let contents = patternBytes(40_000, seed: 14)
        let file = try makeFile(contents)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let cleanups = [context.cleanupLog(), context.cleanupLog()]
        let random = context.channel(.randomAccess, file.fd, cleanup: cleanups[0])
        random.setLimit(highWater: 4_096)
        let fromFile = context.read(random, length: 40_000)
        fromFile.expectFinished()
        let chunks = stride(from: 0, to: 40_000, by: 4_096).map { Array(contents[$0..<min($0 + 4_096, 40_000)]) }
        #expect(fromFile.calls == chunks.dropLast().map { .more($0) } + [.done(chunks.last!)])

        let stream = context.channel(.stream, reader, cleanup: cleanups[1])
        stream.setLimit(highWater: 1_000)
        let fromPipe = context.read(stream, length: .max)
        let sent = patternBytes(100_000, seed: 15)
        writeAll(writer, sent)
        context.close(writer)
        fromPipe.expectFinished()
        expectSameBytes(fromPipe.bytes, sent)
        let sizes = fromPipe.calls.map { $0.bytes?.count ?? 0 }
        #expect(sizes.allSatisfy { $0 <= 1_000 }, "delivery sizes: \(sizes)")
        random.close()
        stream.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R48 with low water 6, small arrivals are merged until they reach it", arguments: QueueKind.allCases)
    func lowWaterMerges(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 6)
        let read = context.read(channel, length: .max)
        writeAll(writer, bytes("abc"))
        context.barrier()
        #expect(read.calls.isEmpty, "3 bytes delivered below low water 6")
        writeAll(writer, bytes("defgh"))
        #expect(read.waitForCalls(1))
        writeAll(writer, bytes("ij"))
        context.barrier()
        #expect(read.calls == [.more("abcdefgh")])
        context.close(writer)
        read.expectFinished()
        #expect(read.calls == [.more("abcdefgh"), .more("ij"), .eof])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R52 a strict interval delivers below low water, and empty (false, empty, nil) ticks when nothing arrives",
        arguments: QueueKind.allCases
    )
    func strictInterval(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 100)
        channel.setInterval(.milliseconds(20), flags: .strict)
        let read = OperationLog(onQueue: { context.isOnQueue }, allowsEmptyIntermediates: true)
        context.read(channel, length: .max, into: read)
        writeAll(writer, bytes("abc"))
        #expect(read.waitForBytes(3), "3 bytes below low water were never delivered by the strict interval")
        let afterData = read.calls.count
        #expect(read.waitForCalls(afterData + 2), "no empty ticks while nothing arrives")
        context.close(writer)
        read.expectFinished()
        let calls = read.calls
        #expect(calls.contains(.more("abc")))
        #expect(calls.last == .eof)
        let ticks = calls.dropLast().filter { $0 == .more("") }
        #expect(ticks.count >= 2, "calls: \(calls)")
        #expect(calls.dropLast().allSatisfy { !$0.done && $0.bytes != nil && $0.error == nil }, "calls: \(calls)")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R51 a non-strict interval adds no delivery below low water", arguments: QueueKind.allCases)
    func nonStrictInterval(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 100)
        channel.setInterval(.milliseconds(20))
        let read = context.read(channel, length: .max)
        writeAll(writer, bytes("abc"))
        // Three intervals go by on the ring's clock, below low water.
        context.waitForTimers(after: .milliseconds(60))
        #expect(read.calls.isEmpty, "a delivery below low water: \(read.calls)")
        writeAll(writer, [UInt8](repeating: UInt8(ascii: "z"), count: 97))
        #expect(read.waitForCalls(1))
        context.close(writer)
        read.expectFinished()
        #expect(read.calls == [.more("abc" + String(repeating: "z", count: 97)), .eof])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R50 an interval of zero turns the timer off, even strict", arguments: QueueKind.allCases)
    func zeroInterval(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 100)
        channel.setInterval(.milliseconds(10), flags: .strict)
        channel.setInterval(.zero, flags: .strict)
        let read = context.read(channel, length: .max)
        writeAll(writer, bytes("abc"))
        // Three of the replaced 10 ms intervals go by on the ring's clock.
        context.waitForTimers(after: .milliseconds(30))
        #expect(read.calls.isEmpty, "calls: \(read.calls)")
        context.close(writer)
        read.expectFinished()
        #expect(read.calls == [.more("abc"), .eof])
        channel.close()
        cleanup.expectOnce(nil)
    }
}
