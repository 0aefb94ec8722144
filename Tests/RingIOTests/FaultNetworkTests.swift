//===----------------------------------------------------------------------===//
// RingIO — injected faults on TCP connections, with exact accounting: peers that reset
// mid-read, half-close, a slow reader (tiny SO_RCVBUF) under large vectored writes, and
// receive buffers exhausted under 1,000 connections.
//
// Each runs in a child process (an exit test), where the descriptor count is the test's own.
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

/// 100 connections; each peer sends 20,000 bytes, waits until the channel delivered them (the
/// read of everything is still pending), and resets (SO_LINGER 0). Each read delivers exactly
/// the bytes sent, once, in order, then its one final call: ECONNRESET.
func resetMidRead(_ queueKind: QueueKind) throws {
    let connections = 100
    let size = 20_000
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let pairs = try makeTCPPairs(connections)
        let ledger = FaultLedger(operations: connections)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = context.channel(.stream, pair.local, cleanup: cleanups[index])
            channel.read(offset: 0, length: .max, queue: context.queue, handler: ledger.readHandler(index, seed: index))
            channels.append(channel)
        }
        for (index, pair) in pairs.enumerated() { writeAll(pair.remote, patternBytes(size, seed: index)) }
        let delivered = eventually { ledger.entries.allSatisfy { $0.deliveredCount >= size } }
        #expect(delivered, "not every connection's bytes were delivered before the resets")
        for pair in pairs { resetAndClose(pair.remote) }
        ledger.expectEveryOperationFinalOnce("reads of peers that reset", after: context.handlerBarrier)
        let entries = ledger.entries
        let wrong = entries.indices.filter {
            !(entries[$0].delivered?.isExactly(size) ?? false) || entries[$0].error != .connectionReset
        }
        #expect(wrong.isEmpty, "\(wrong.count) connections; first: \(wrong.prefix(3).map { entries[$0] })")
        closeConnections(channels, cleanups, pairs, remotesToo: false, after: context.handlerBarrier)
    }
}

/// 20 connections with small socket buffers (64 KiB to send, 16 KiB at the peer to receive);
/// each channel writes 2 MiB (many
/// regions) and queues a second write; each peer reads 100,000 bytes and resets (SO_LINGER 0).
/// Both writes get exactly one final call, ECONNRESET or EPIPE; what each hands back is exactly
/// the tail of its data (the whole of it for the queued one); the peer read a prefix of what the
/// first write handed the kernel, every byte once, in order. (The bytes between — in the
/// kernel's buffers when the reset came — are gone with the connection: the write reports them
/// written, as the kernel did.)
func resetMidWrites(_ queueKind: QueueKind) throws {
    let connections = 20
    let size = 2 * 1_048_576
    let peerReads = 100_000
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let pairs = try makeTCPPairs(connections, remoteReceiveBuffer: 16_384)
        // Small buffers on both sides: the kernel cannot take the whole first write.
        for pair in pairs { try setOption(pair.local, SOL_SOCKET, SO_SNDBUF, 65_536) }
        let ledger = FaultLedger(operations: 2 * connections)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        let data = fragmentedRope(size, seed: 5, maxRegion: 16_384)
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = context.channel(.stream, pair.local, cleanup: cleanups[index])
            channel.write(offset: 0, data: data, queue: context.queue, handler: ledger.writeHandler(2 * index))
            channel.write(offset: 0, data: data, queue: context.queue, handler: ledger.writeHandler(2 * index + 1))
            channels.append(channel)
        }
        var peerChecks: [PatternCheck] = []
        for pair in pairs {
            setReceiveTimeout(pair.remote, seconds: 10)
            var check = PatternCheck(seed: 5)
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while check.offset < peerReads {
                let count = read(pair.remote, &buffer, min(buffer.count, peerReads - check.offset))
                guard count > 0 else { break }
                check.check(Array(buffer[..<count]))
            }
            peerChecks.append(check)
            resetAndClose(pair.remote)
        }
        ledger.expectEveryOperationFinalOnce("writes to peers that reset", after: context.handlerBarrier)
        let entries = ledger.entries
        var failures: [String] = []
        for index in 0..<connections {
            let (first, queued) = (entries[2 * index], entries[2 * index + 1])
            for entry in [first, queued] where entry.error != .connectionReset && entry.error != .brokenPipe {
                failures.append("connection \(index): a write ended with \(String(describing: entry.error))")
            }
            let remaining = first.remaining ?? ByteRope()
            if remaining.isEmpty || !isPatternTail(remaining, total: size, seed: 5) {
                failures.append("connection \(index): the first write handed back \(remaining.count) bytes, not a tail")
            }
            if queued.remaining?.count != size || !isPatternTail(queued.remaining ?? ByteRope(), total: size, seed: 5) {
                failures.append(
                    "connection \(index): the queued write handed back \(String(describing: queued.remaining?.count))"
                )
            }
            let check = peerChecks[index]
            if !check.isExactly(peerReads) || check.offset > size - remaining.count {
                failures.append(
                    "connection \(index): the peer read \(check.offset) bytes (wrong at \(String(describing: check.firstMismatch))), the write wrote \(size - remaining.count)"
                )
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(3))")
        closeConnections(channels, cleanups, pairs, remotesToo: false, after: context.handlerBarrier)
    }
}

/// 50 connections; each peer sends 50,000 bytes and shuts down its writing side (half-close):
/// the channel's read gets them all, once, in order, then end of file; the channel then writes
/// 200,000 bytes of many regions, which the peer (still reading) gets exactly.
func halfClose(_ queueKind: QueueKind) throws {
    let connections = 50
    let incoming = 50_000
    let outgoing = 200_000
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let pairs = try makeTCPPairs(connections)
        let reads = FaultLedger(operations: connections)
        let writes = FaultLedger(operations: connections)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = context.channel(.stream, pair.local, cleanup: cleanups[index])
            channel.read(offset: 0, length: .max, queue: context.queue, handler: reads.readHandler(index, seed: index))
            channels.append(channel)
            writeAll(pair.remote, patternBytes(incoming, seed: index))
            shutdown(pair.remote, CInt(SHUT_WR))
        }
        reads.expectEveryOperationFinalOnce("reads up to a half-close", after: context.handlerBarrier)
        let readEntries = reads.entries
        let wrongReads = readEntries.indices.filter {
            !(readEntries[$0].delivered?.isExactly(incoming) ?? false) || readEntries[$0].error != nil
        }
        #expect(wrongReads.isEmpty, "\(wrongReads.count) reads; first: \(wrongReads.prefix(3).map { readEntries[$0] })")
        for (index, channel) in channels.enumerated() {
            channel.write(
                offset: 0,
                data: fragmentedRope(outgoing, seed: index + 1, maxRegion: 3_000),
                queue: context.queue,
                handler: writes.writeHandler(index)
            )
        }
        var wrongPeers: [Int] = []
        for (index, pair) in pairs.enumerated() {
            var check = PatternCheck(seed: index + 1)
            setReceiveTimeout(pair.remote, seconds: 10)
            while check.offset < outgoing {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let count = read(pair.remote, &buffer, min(buffer.count, outgoing - check.offset))
                guard count > 0 else { break }
                check.check(Array(buffer[..<count]))
            }
            if !check.isExactly(outgoing) { wrongPeers.append(index) }
        }
        #expect(wrongPeers.isEmpty, "\(wrongPeers.count) peers did not get the \(outgoing) bytes exactly")
        writes.expectEveryOperationFinalOnce("writes after the peer's half-close", after: context.handlerBarrier)
        #expect(writes.entries.allSatisfy { $0.error == nil })
        closeConnections(channels, cleanups, pairs, remotesToo: true, after: context.handlerBarrier)
    }
}

/// A slow reader: 4 peers with a 4 KiB SO_RCVBUF, reading 4 KiB at a time with pauses,
/// under three 1 MiB vectored writes each (regions of 1 byte to 16 KiB, far more than IOV_MAX
/// per write): every byte arrives once, in order; every write's intermediate calls hand back a
/// shrinking tail and its one final call succeeds.
func slowReaders(_ queueKind: QueueKind) throws {
    let connections = 4
    let writesPerConnection = 3
    let size = 1_048_576
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let pairs = try makeTCPPairs(connections, remoteReceiveBuffer: 4_096)
        for pair in pairs {
            let size = socketOption(pair.remote, SOL_SOCKET, SO_RCVBUF) ?? -1
            try #require(size > 0 && size <= 16_384, "SO_RCVBUF of the slow reader: \(size)")
        }
        let ledger = FaultLedger(operations: connections * writesPerConnection)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        let data = fragmentedRope(size, seed: 3, maxRegion: 16_384)
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = context.channel(.stream, pair.local, cleanup: cleanups[index])
            for write in 0..<writesPerConnection {
                channel.write(
                    offset: 0,
                    data: data,
                    queue: context.queue,
                    handler: ledger.writeHandler(index * writesPerConnection + write)
                )
            }
            channels.append(channel)
        }
        let remotes = pairs.map(\.remote)
        let wrong = Counter()
        DispatchQueue.concurrentPerform(iterations: connections) { index in
            let fd = remotes[index]
            setReceiveTimeout(fd, seconds: 10)
            // A slow reader: each read waits until a full buffer's worth has arrived, so the
            // writer waits for it between reads.
            var lowWater: CInt = 4_096
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowWater, socklen_t(MemoryLayout<CInt>.size))
            var checks = (0..<writesPerConnection).map { _ in PatternCheck(seed: 3) }
            var buffer = [UInt8](repeating: 0, count: 4_096)
            var total = 0
            while total < size * writesPerConnection {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                // Bytes total..<total+count span the writes in turn.
                var offset = 0
                while offset < count {
                    let write = (total + offset) / size
                    let take = min(count - offset, size - (total + offset) % size)
                    checks[write].check(Array(buffer[offset..<(offset + take)]))
                    offset += take
                }
                total += count
            }
            if !checks.allSatisfy({ $0.isExactly(size) }) { wrong.increment() }
        }
        #expect(wrong.count == 0, "\(wrong.count) slow readers did not get every byte once, in order")
        ledger.expectEveryOperationFinalOnce("vectored writes to slow readers", after: context.handlerBarrier)
        #expect(ledger.entries.allSatisfy { $0.error == nil && $0.calls >= 1 })
        closeConnections(channels, cleanups, pairs, remotesToo: true, after: context.handlerBarrier)
    }
}

/// 1,000 connections on one ring with 16 receive buffers of 4 KiB; every peer sends 12,000
/// bytes at once and every read keeps what it was given: the buffers run out, the rest is read
/// into fresh memory, and every connection gets its bytes exactly, once, in order.
private func receiveBuffersExhausted() throws {
    let connections = 1_000
    let size = 12_000
    try raiseDescriptorLimit(to: 4_096)
    try expectNoDescriptorLeak {
        let ring = try RingLoop(entries: 64, receiveBuffers: 16, receiveBufferSize: 4_096)
        defer { ring.shutdown() }
        let pairs = try makeTCPPairs(connections)
        let ledger = FaultLedger(operations: connections)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        let kept = Recorder<ByteRope>()
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = IOChannel(
                kind: .stream,
                fileDescriptor: pair.local,
                queue: ring,
                cleanupHandler: cleanups[index].handler
            )
            let record = ledger.readHandler(index, seed: index)
            channel.read(offset: 0, length: size, queue: ring) { done, data, error in
                if let data { kept.append(data) }  // held: the buffers stay on loan
                record(done, data, error)
            }
            channels.append(channel)
        }
        let remotes = pairs.map(\.remote)
        DispatchQueue.concurrentPerform(iterations: 4) { part in
            for index in stride(from: part, to: connections, by: 4) {
                writeAll(remotes[index], patternBytes(size, seed: index))
            }
        }
        ledger.expectEveryOperationFinalOnce(
            "reads of 1,000 connections over 16 receive buffers",
            after: HandlerBarrier(ring: ring)
        )
        let entries = ledger.entries
        let wrong = entries.indices.filter {
            !(entries[$0].delivered?.isExactly(size) ?? false) || entries[$0].error != nil
        }
        #expect(wrong.isEmpty, "\(wrong.count) connections did not get their bytes exactly; first: \(wrong.prefix(3))")
        #expect(ring.counters.fallbackReceives > 0, "the receive buffers never ran out: the test proves nothing")
        _ = kept
        for channel in channels { channel.close() }
        expectCleanupsOnce(cleanups, after: HandlerBarrier(ring: ring))
        closePairs(pairs)
    }
}

@Suite("Faults: TCP connections, in a child process", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct FaultNetworkTests {
    @Test("receive buffers exhausted under 1,000 connections: every byte once, in order")
    func buffersExhausted() async {
        await #expect(processExitsWith: .success) { try receiveBuffersExhausted() }
    }
}
