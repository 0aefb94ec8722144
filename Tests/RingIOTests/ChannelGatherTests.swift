//===----------------------------------------------------------------------===//
// RingIO — IOChannel: writes queued behind a send in flight leave together.
// Rule numbers (R…, D…): Sources/RingIO/RingIO.docc/DispatchIOContract.md and ComingFromDispatch.md.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `count` bytes of a pattern that tells writes apart: byte `i` of write `n` is `n &+ i`.
private func gatherData(_ write: Int, _ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: write &+ $0) }
}

@Suite("IOChannel: gathered writes", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelGatherTests {
    @Test(
        "writes queued behind a send in flight leave in fewer syscalls; each its own calls, in order",
        arguments: [WriteTarget.socketPair, .tcp, .pipe]
    )
    func queuedWritesGather(_ target: WriteTarget) throws {
        let (writer, reader): (CInt, CInt)
        switch target {
        case .pipe:
            let pipe = try makePipe()
            (writer, reader) = (pipe.write, pipe.read)
        case .tcp:
            let pair = try makeTCPPair()
            (writer, reader) = (pair.client, pair.server)
        default:
            (writer, reader) = try makeSocketPair()
        }
        defer { closeAll(writer, reader) }
        let context = try ChannelContext(.ring)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, writer)
        // A first write larger than the kernel buffers: its send returns short while the
        // peer is not reading, and everything queued behind it waits.
        let sizes = [4 << 20] + (1...200).map { 1 + ($0 * 37) % 500 }
        let data = sizes.enumerated().map { gatherData($0.offset, $0.element) }
        let logs = (0..<sizes.count).map { _ in context.log() }
        let before = context.ring.counters.submissions
        context.ring.enqueue {
            submitWrites(data, to: channel, logs: logs, queue: context.ring)
        }
        let received = readExactly(reader, sizes.reduce(0, +))
        for log in logs { #expect(log.waitForFinal()) }
        #expect(received == data.flatMap { $0 }, "the bytes did not arrive whole and in order")
        for (index, log) in logs.enumerated() {
            log.expectWriteProgress(of: data[index])
        }
        // One syscall per small write would be 200 more than the big write's own; gathered,
        // they leave with the big write's last sends.
        let submissions = context.ring.counters.submissions - before
        #expect(submissions < 100, "\(submissions) submissions for \(sizes.count) writes")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("writes stopped while they ride another's send: exact accounting, the rest goes on")
    func ridersStopped() throws {
        let (writer, reader) = try makeSocketPair()
        defer { closeAll(writer, reader) }
        let context = try ChannelContext(.ring)
        defer { context.shutdown() }
        // Two channels on one descriptor share its write lane: the first's big write leads,
        // the second's small writes wait behind it and ride its sends; then the second stops.
        let (leader, riders, cleanups) = context.channels((.stream, writer), (.stream, writer))
        let big = gatherData(0, 900 << 10)  // one buffer (R49): riders may join its sends
        let small = (1...50).map { gatherData($0, 100 + $0) }
        let leaderLog = context.log()
        let riderLogs = small.map { _ in context.log() }
        let tailLog = context.log()
        let tail = gatherData(99, 1_000)
        context.ring.enqueue {
            leader.write(offset: 0, data: ByteRope(copying: big), queue: context.ring, handler: leaderLog.writeHandler)
            submitWrites(small, to: riders, logs: riderLogs, queue: context.ring)
            leader.write(offset: 0, data: ByteRope(copying: tail), queue: context.ring, handler: tailLog.writeHandler)
        }
        // The big write's first send fills the socket and returns short; its next one carries
        // the riders, and blocks while no one reads.
        #expect(eventually { _RingIOTesting.ridingWrites(of: riders) > 0 }, "no write rode the big write's send")
        riders.close(flags: .stop)
        let expectedLength = big.count + tail.count
        var received = readExactly(reader, expectedLength)
        #expect(leaderLog.waitForFinal() && tailLog.waitForFinal())
        #expect(leaderLog.final == .written && tailLog.final == .written)
        // What each stopped write did not send is its remaining data; what it sent is in the
        // stream, in lane order, between the big write's bytes and the tail's.
        var expected = big
        for (index, log) in riderLogs.enumerated() {
            #expect(log.waitForFinal())
            guard let final = log.final else { continue }
            if final == .written {
                expected += small[index]
            } else {
                #expect(final.error == .canceled, "rider \(index): \(final)")
                let remaining = final.bytes ?? []
                #expect(remaining == Array(small[index].suffix(remaining.count)), "rider \(index) remaining")
                expected += small[index].prefix(small[index].count - remaining.count)
            }
        }
        expected += tail
        received += readExactly(reader, expected.count - received.count)
        #expect(received.count == expected.count)
        #expect(received == expected, "the stream is not the big write, what the riders sent, then the tail")
        // Cleanup handlers run once no channel is left on the descriptor (R23).
        leader.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }
}

/// Submits a write of each of `data` to `channel`, in order, with its handler on `queue`, each
/// recorded by the log of the same index.
private func submitWrites(_ data: [[UInt8]], to channel: IOChannel, logs: [OperationLog], queue: some IOQueue) {
    for (index, bytes) in data.enumerated() {
        channel.write(offset: 0, data: ByteRope(copying: bytes), queue: queue, handler: logs[index].writeHandler)
    }
}
