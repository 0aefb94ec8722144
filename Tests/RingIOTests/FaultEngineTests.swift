//===----------------------------------------------------------------------===//
// RingIO — injected faults in the engine, with exact accounting: completion-queue overflow
// forced with a tiny CQ, a group shut down with 10,000 operations in flight, close(.stop)
// racing completions, ENOSPC, and descriptor numbers reused after close.
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

// MARK: - CQ overflow

/// 20,000 no-ops in one turn on a ring whose CQ holds 8: the CQ overflows (the kernel says
/// so), and every no-op still completes exactly once; then real I/O on 200 sockets over the
/// same tiny ring, where bursts of completions overflow it again: every byte arrives once, in
/// order.
private func completionQueueOverflow() throws {
    try expectNoDescriptorLeak {
        let ring = try RingLoop(entries: 2, backend: .ioUring)
        defer { ring.shutdown() }
        try #require(ring.setup.completionEntries == 8, "completion queue: \(ring.setup.completionEntries)")
        try #require(ring.setup.noDrop, "the kernel drops completions on CQ overflow (no FEAT_NODROP)")

        let total = 20_000
        let ledger = FaultLedger(operations: total)
        let overflowed = _Lock<Bool?>(nil)
        _RingIOTesting.nops(
            total,
            on: ring,
            completion: { index, result in ledger.completed(index, error: result < 0 ? Errno(rawValue: -result) : nil)
            },
            overflowed: { value in overflowed.withLock { $0 = value } }
        )
        ledger.expectEveryOperationFinalOnce("no-ops over an overflowing CQ", after: HandlerBarrier(ring: ring))
        #expect(overflowed.withLock { $0 } == true, "the CQ did not overflow: the test proves nothing")
        #expect(ledger.entries.allSatisfy { $0.error == nil })
        #expect(ring.counters.staleCompletions == 0)

        // Real I/O through the same tiny CQ: 200 stream channels, 16 KiB each, written at once.
        let connections = 200
        let size = 16_384
        var pairs: [(CInt, CInt)] = []
        for _ in 0..<connections { pairs.append(try makeSocketPair()) }
        defer {
            for (local, remote) in pairs {
                close(local)
                close(remote)
            }
        }
        let reads = FaultLedger(operations: connections)
        var channels: [IOChannel] = []
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        for (index, (local, _)) in pairs.enumerated() {
            let channel = IOChannel(
                kind: .stream,
                fileDescriptor: local,
                queue: ring,
                cleanupHandler: cleanups[index].handler
            )
            channel.read(offset: 0, length: size, queue: ring, handler: reads.readHandler(index, seed: index))
            channels.append(channel)
        }
        let remotes = pairs.map(\.1)
        DispatchQueue.concurrentPerform(iterations: 4) { part in
            for index in stride(from: part, to: connections, by: 4) {
                writeAll(remotes[index], patternBytes(size, seed: index))
            }
        }
        reads.expectEveryOperationFinalOnce("reads over an overflowing CQ", after: HandlerBarrier(ring: ring))
        let entries = reads.entries
        let wrong = entries.indices.filter {
            !(entries[$0].delivered?.isExactly(size) ?? false) || entries[$0].error != nil
        }
        #expect(
            wrong.isEmpty,
            "\(wrong.count) connections did not get their \(size) bytes exactly; first: \(wrong.prefix(3))"
        )
        for channel in channels { channel.close() }
        expectCleanupsOnce(cleanups, after: HandlerBarrier(ring: ring))
        #expect(ring.counters.staleCompletions == 0)
    }
}

// MARK: - A group shut down under load

/// A group of two rings, 500 socket channels, 10,000 operations queued or in flight (per
/// channel: 10 reads of 100 bytes with 150 bytes sent, 10 writes of 256 KiB nobody reads),
/// then the group shuts down. Every operation gets exactly one final call; every byte the peer
/// sent is either delivered (in order, once) or still in the socket; every byte a write handed
/// the kernel is exactly what the peer finds, in order; every cleanup handler runs once.
func groupShutdownUnderLoad(_ queueKind: QueueKind) throws {
    let channelsCount = 500
    let readsPerChannel = 10
    let writesPerChannel = 10
    let readLength = 100
    let sentPerChannel = 150
    let writeSize = 65_536
    try raiseDescriptorLimit(to: 4_096)
    try expectNoDescriptorLeak {
        let group = try RingLoopGroup(count: 2, entries: 64)
        var pairs: [(local: CInt, remote: CInt)] = []
        for _ in 0..<channelsCount { pairs.append(try makeSocketPair()) }
        let perChannel = readsPerChannel + writesPerChannel
        let ledger = FaultLedger(operations: channelsCount * perChannel)
        let cleanups = (0..<channelsCount).map { _ in CleanupLog() }
        let dispatchQueue = DispatchQueue(label: "fault-group-shutdown")
        let data = fragmentedRope(writeSize, seed: 7, maxRegion: 16_384)
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let ring = group.next()
            let queue: any IOQueue = queueKind == .ring ? ring : dispatchQueue
            let channel = IOChannel(
                kind: .stream,
                fileDescriptor: pair.local,
                queue: queue,
                ring: ring,
                cleanupHandler: cleanups[index].handler
            )
            channels.append(channel)
            writeAll(pair.remote, patternBytes(sentPerChannel, seed: index))
            for read in 0..<readsPerChannel {
                // Read k gets bytes k × 100 on, if any: the reads of a stream take them in turn.
                channel.read(
                    offset: 0,
                    length: readLength,
                    queue: queue,
                    handler: ledger.readHandler(index * perChannel + read, seed: index, from: read * readLength)
                )
            }
            for write in 0..<writesPerChannel {
                channel.write(
                    offset: 0,
                    data: data,
                    queue: queue,
                    handler: ledger.writeHandler(index * perChannel + readsPerChannel + write)
                )
            }
        }
        // Let the rings take it all in: the first reads complete, the first writes fill the sockets.
        HandlerBarrier(rings: group.rings, queue: dispatchQueue).pass()
        // Closed (without stop: the operations may finish) right before the shutdown, which
        // then cancels them. (A channel still open when its ring is gone never gets its
        // cleanup handler: its close would be a job for a ring that is gone.)
        for channel in channels { channel.close() }
        group.shutdown()
        ledger.expectEveryOperationFinalOnce(
            "\(channelsCount * perChannel) operations through a group shutdown",
            after: HandlerBarrier(rings: [], queue: queueKind == .dispatch ? dispatchQueue : nil)
        )
        expectCleanupsOnce(
            cleanups,
            after: HandlerBarrier(rings: [], queue: queueKind == .dispatch ? dispatchQueue : nil)
        )

        // The accounting, connection by connection.
        let entries = ledger.entries
        var failures: [String] = []
        var outcomes = (readsDone: 0, readsCanceled: 0, writesDone: 0, writesPartial: 0, writesCanceled: 0)
        for (index, pair) in pairs.enumerated() {
            let base = index * perChannel
            // Reads, in order: each delivered the pattern from where the one before stopped
            // (the ledger checked), and what they delivered, then what is still in the socket,
            // is exactly what the peer sent.
            var delivered = 0
            for read in 0..<readsPerChannel {
                let entry = entries[base + read]
                switch entry.error {
                case nil: outcomes.readsDone += 1
                case .canceled?: outcomes.readsCanceled += 1
                case let error?: failures.append("connection \(index) read \(read): \(error)")
                }
                if entry.deliveredCount > 0 && delivered != read * readLength {
                    failures.append("connection \(index) read \(read): data after a read that was not full")
                }
                if entry.delivered?.firstMismatch != nil {
                    failures.append("connection \(index) read \(read): wrong bytes")
                }
                delivered += entry.deliveredCount
            }
            _ = fcntl(pair.local, F_SETFL, fcntl(pair.local, F_GETFL) | O_NONBLOCK)
            var left = PatternCheck(seed: index, from: delivered)
            left.check(readAvailable(pair.local))
            if left.firstMismatch != nil || delivered + left.offset != sentPerChannel {
                failures.append(
                    "connection \(index): \(delivered) delivered, \(left.offset) left, sent \(sentPerChannel)"
                )
            }
            // Writes: the peer holds, in order, exactly what each write did not hand back.
            var writtenCounts: [Int] = []
            for write in 0..<writesPerChannel {
                let entry = entries[base + readsPerChannel + write]
                let remaining = entry.remaining?.count ?? 0
                switch entry.error {
                case nil: outcomes.writesDone += 1
                case .canceled? where remaining == writeSize: outcomes.writesCanceled += 1
                case .canceled?: outcomes.writesPartial += 1
                case let error?: failures.append("connection \(index) write \(write): \(error)")
                }
                if let tail = entry.remaining, !isPatternTail(tail, total: writeSize, seed: 7) {
                    failures.append("connection \(index) write \(write): what came back is not the data's tail")
                }
                writtenCounts.append(writeSize - remaining)
            }
            _ = fcntl(pair.remote, F_SETFL, fcntl(pair.remote, F_GETFL) | O_NONBLOCK)
            let received = readAvailable(pair.remote)
            var offset = 0
            var right = received.count == writtenCounts.reduce(0, +)
            received.withUnsafeBytes { bytes in
                for count in writtenCounts where right {
                    let piece = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
                    right = patternMismatch(piece, from: 0, seed: 7) == nil
                    offset += count
                }
            }
            if !right {
                failures.append(
                    "connection \(index): the peer got \(received.count) bytes, the writes wrote \(writtenCounts)"
                )
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(5))")
        #expect(outcomes.readsDone >= channelsCount, "outcomes: \(outcomes)")
        #expect(outcomes.writesCanceled > 0, "no write was still queued at the shutdown: \(outcomes)")
        closePairs(pairs)
    }
}

// MARK: - close(.stop) racing completions

/// 300 socket channels, each with a read of everything and a 1 MiB write in flight while the
/// peer sends 32 KiB; close(.stop) from four other threads, at varied moments. Exactly one
/// final call per operation; the read's bytes, then what is left in the socket, are exactly
/// what the peer sent; what the peer received is exactly what the write did not hand back.
func stopRacingCompletions(_ queueKind: QueueKind) throws {
    let connections = 300
    let incomingSize = 32_768
    let outgoingSize = 1_048_576
    try raiseDescriptorLimit(to: 4_096)
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        var pairs: [(local: CInt, remote: CInt)] = []
        for _ in 0..<connections { pairs.append(try makeSocketPair()) }
        let ledger = FaultLedger(operations: connections * 2)
        let cleanups = (0..<connections).map { _ in CleanupLog() }
        // One rope for every write: more than a socket pair holds, so that stops catch writes.
        let outgoing = fragmentedRope(outgoingSize, seed: 1, maxRegion: 8_192)
        var channels: [IOChannel] = []
        for (index, pair) in pairs.enumerated() {
            let channel = context.channel(.stream, pair.local, cleanup: cleanups[index])
            channel.read(
                offset: 0,
                length: .max,
                queue: context.queue,
                handler: ledger.readHandler(2 * index, seed: index)
            )
            channel.write(
                offset: 0,
                data: outgoing,
                queue: context.queue,
                handler: ledger.writeHandler(2 * index + 1)
            )
            channels.append(channel)
        }
        let remotes = pairs.map(\.remote)
        let stopping = channels
        let stopped = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { part in
            if part < 4 {
                // Peers: send, and read some of what the channels write.
                for index in stride(from: part, to: connections, by: 4) {
                    writeAll(remotes[index], patternBytes(incomingSize, seed: index))
                }
            } else {
                // Stoppers: a varied head start, then stop.
                for index in stride(from: part - 4, to: connections, by: 4) {
                    for _ in 0..<(index % 11) * 30 { _ = getpid() }
                    stopping[index].close(flags: .stop)
                    stopped.increment()
                }
            }
        }
        #expect(stopped.count == connections)
        ledger.expectEveryOperationFinalOnce("reads and writes stopped while completing", after: context.handlerBarrier)
        expectCleanupsOnce(cleanups, after: context.handlerBarrier)

        let entries = ledger.entries
        var failures: [String] = []
        var outcomes = (readsCanceled: 0, writesDone: 0, writesCanceled: 0)
        var lost: [String] = []
        for (index, pair) in pairs.enumerated() {
            let read = entries[2 * index]
            if read.error == .canceled {
                outcomes.readsCanceled += 1
            } else {
                failures.append("connection \(index): the read ended with \(String(describing: read.error))")
            }
            // Delivered (checked as pattern bytes from 0 by the ledger), then what is left.
            var check = read.delivered ?? PatternCheck(seed: index)
            _ = fcntl(pair.local, F_SETFL, fcntl(pair.local, F_GETFL) | O_NONBLOCK)
            check.check(readAvailable(pair.local))
            if check.firstMismatch != nil || check.offset > incomingSize {
                failures.append("connection \(index): bytes delivered twice or out of order")
            }
            if !check.isExactly(incomingSize) {
                lost.append(
                    "connection \(index): \(read.deliveredCount) delivered + what was left is \(check.offset) bytes (first wrong byte: \(String(describing: check.firstMismatch))), sent \(incomingSize)"
                )
            }
            let write = entries[2 * index + 1]
            let remaining = write.remaining?.count ?? 0
            switch write.error {
            case nil: outcomes.writesDone += 1
            case .canceled?: outcomes.writesCanceled += 1
            case let error?: failures.append("connection \(index): the write ended with \(error)")
            }
            if let tail = write.remaining, !isPatternTail(tail, total: outgoingSize, seed: 1) {
                failures.append("connection \(index): what the write handed back is not the data's tail")
            }
            _ = fcntl(pair.remote, F_SETFL, fcntl(pair.remote, F_GETFL) | O_NONBLOCK)
            var received = PatternCheck(seed: 1)
            received.check(readAvailable(pair.remote))
            if !received.isExactly(outgoingSize - remaining) {
                failures.append(
                    "connection \(index): the peer got \(received.offset) bytes, the write wrote \(outgoingSize - remaining)"
                )
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(5))")
        #expect(outcomes.writesCanceled > 0, "stop never caught a write: \(outcomes)")
        #expect(lost.isEmpty, "\(lost.count) of \(connections) connections lost bytes; first: \(lost.prefix(3))")
        closePairs(pairs)
    }
}

// MARK: - ENOSPC

/// Writes to /dev/full end with ENOSPC and hand back exactly all of their data; the channel
/// stays usable; reads from it still work.
func writeToFullDevice(_ queueKind: QueueKind) throws {
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let fd = open("/dev/full", O_RDWR | O_CLOEXEC)
        try #require(fd >= 0, "/dev/full: \(errno)")
        defer { close(fd) }
        let cleanups = [CleanupLog(), CleanupLog()]
        let stream = context.channel(.stream, fd, cleanup: cleanups[0])
        let random = context.channel(.randomAccess, fd, cleanup: cleanups[1])
        let sizes = [1, 4_096, 100_000, 3 * 1_048_576]
        let ledger = FaultLedger(operations: 2 * sizes.count + 1)
        for (index, size) in sizes.enumerated() {
            let data = fragmentedRope(size, seed: index, maxRegion: 50_000)
            stream.write(offset: 0, data: data, queue: context.queue, handler: ledger.writeHandler(2 * index))
            random.write(
                offset: Int64(index),
                data: data,
                queue: context.queue,
                handler: ledger.writeHandler(2 * index + 1)
            )
        }
        stream.read(offset: 0, length: 1_000, queue: context.queue, handler: ledger.readHandler(2 * sizes.count))
        ledger.expectEveryOperationFinalOnce("writes to /dev/full", after: context.handlerBarrier)
        let entries = ledger.entries
        for (index, size) in sizes.enumerated() {
            for entry in [entries[2 * index], entries[2 * index + 1]] {
                #expect(entry.error == .noSpace, "a write of \(size) bytes: \(String(describing: entry.error))")
                #expect(entry.remaining?.count == size && isPatternTail(entry.remaining!, total: size, seed: index))
                #expect(entry.calls == 1, "a write that wrote nothing reported progress: \(entry.calls) calls")
            }
        }
        // /dev/full reads as zeros, forever.
        #expect(entries[2 * sizes.count].error == nil && entries[2 * sizes.count].deliveredCount == 1_000)
        stream.close()
        random.close()
        expectCleanupsOnce(cleanups, after: context.handlerBarrier)
    }
}

// MARK: - Descriptor reuse after close

/// 200 rounds: a channel with a read and a blocked write in flight is stopped; once its
/// cleanup handler ran, its descriptors are closed and the kernel hands the same numbers to a
/// new pipe at once; a channel on them must see nothing of the old one (no late completion,
/// no poisoned state, no stolen byte) and move its own bytes exactly.
func descriptorReuseAfterClose(_ queueKind: QueueKind) throws {
    try expectNoDescriptorLeak {
        let context = try ChannelContext(queueKind)
        defer { context.shutdown() }
        let rounds = 200
        var failures: [String] = []
        var reusedNumbers = 0
        for round in 0..<rounds where failures.count < 3 {
            let (reader, writer) = try makePipe()
            let old = FaultLedger(operations: 2)
            let oldCleanups = [CleanupLog(), CleanupLog()]
            let oldReader = context.channel(.stream, reader, cleanup: oldCleanups[0])
            let oldWriter = context.channel(.stream, writer, cleanup: oldCleanups[1])
            oldReader.read(offset: 0, length: 1_000_000, queue: context.queue, handler: old.readHandler(0))
            // More than the pipe holds, and nobody reads but the read above.
            oldWriter.write(
                offset: 0,
                data: fragmentedRope(300_000, seed: round),
                queue: context.queue,
                handler: old.writeHandler(1)
            )
            for _ in 0..<(round % 7) * 40 { _ = getpid() }  // a varying head start
            if round % 4 == 3 { ringBarrier(context.ring) }  // or a ring turn and more
            oldReader.close(flags: .stop)
            oldWriter.close(flags: .stop)
            guard oldCleanups.allSatisfy({ $0.wait() }), old.waitForAll() else {
                failures.append("round \(round): the old channels did not finish")
                continue
            }
            close(reader)
            close(writer)

            let (newReader, newWriter) = try makePipe()
            if newReader == reader || newReader == writer || newWriter == reader || newWriter == writer {
                reusedNumbers += 1
            }
            let new = FaultLedger(operations: 2)
            let newCleanups = [CleanupLog(), CleanupLog()]
            let readChannel = context.channel(.stream, newReader, cleanup: newCleanups[0])
            let writeChannel = context.channel(.stream, newWriter, cleanup: newCleanups[1])
            let size = 70_000 + round
            readChannel.read(offset: 0, length: size, queue: context.queue, handler: new.readHandler(0, seed: round))
            writeChannel.write(
                offset: 0,
                data: fragmentedRope(size, seed: round),
                queue: context.queue,
                handler: new.writeHandler(1)
            )
            guard new.waitForAll(seconds: 10) else {
                failures.append("round \(round): the new channels' operations did not finish: \(new.entries)")
                readChannel.close(flags: .stop)
                writeChannel.close(flags: .stop)
                continue
            }
            let entries = new.entries
            if !(entries[0].delivered?.isExactly(size) ?? false) || entries[0].error != nil || entries[1].error != nil {
                failures.append("round \(round): the new channels moved the wrong bytes: \(entries)")
            }
            if !new.problems.isEmpty || !old.problems.isEmpty {
                failures.append("round \(round): \(old.problems + new.problems)")
            }
            if old.entries.contains(where: { $0.finals != 1 }) {
                failures.append("round \(round): old finals \(old.entries)")
            }
            readChannel.close()
            writeChannel.close()
            if !newCleanups.allSatisfy({ $0.wait() }) {
                failures.append("round \(round): no cleanup for the new channels")
            }
            close(newReader)
            close(newWriter)
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(3))")
        #expect(reusedNumbers == rounds, "descriptor numbers reused in \(reusedNumbers) of \(rounds) rounds")
    }
}

@Suite("Faults: the engine, in a child process", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct FaultEngineTests {
    @Test(
        "CQ overflow forced with an 8-entry CQ: 20,000 no-ops and 200 sockets, every completion once, every byte once",
        .enabled(if: _RingIOTesting.ioUringAvailable, "io_uring only: the kernel's completion queue overflows")
    )
    func completionQueueOverflows() async {
        await #expect(processExitsWith: .success) { try completionQueueOverflow() }
    }
}
