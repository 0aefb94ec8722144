//===----------------------------------------------------------------------===//
// RingIO — IOChannel: close, stop and barriers (R53–R58).
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

@Suite("IOChannel: close, stop, barrier (R53–R58)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelCloseTests {
    // MARK: A ring that shuts down with channels open

    @Test(
        "a ring's shutdown closes the channels still open on it: reads end with ECANCELED, cleanup handlers run, a path channel's descriptor is closed",
        arguments: QueueKind.allCases
    )
    func ringShutdownClosesOpenChannels(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let directory = try TemporaryDirectory()
        let path = try directory.create("file", bytes("contents"))
        let streamCleanup = context.cleanupLog()
        let stream = context.channel(.stream, left, cleanup: streamCleanup)
        let fileCleanup = context.cleanupLog()
        let file = try context.channel(.randomAccess, path: path, mode: .readOnly, cleanup: fileCleanup)
        let opened = context.read(file, length: 8)  // opens the file, on the ring
        opened.expectFinished()
        #expect(opened.bytes == bytes("contents"))
        #expect(openDescriptorTargets().contains { $0.hasSuffix(" \(path)") }, "the file is not open")
        let read = context.read(stream, length: 100)  // waits for bytes that never come
        #expect(read.waitForCalls(0))

        context.ring.shutdown()
        read.expectFinished()
        #expect(read.final?.error == .canceled)
        streamCleanup.expectOnce(nil)
        fileCleanup.expectOnce(nil)
        #expect(
            !openDescriptorTargets().contains { $0.hasSuffix(" \(path)") },
            "the path channel's descriptor is still open"
        )
        #expect(stream.fileDescriptor == -1)
        #expect(file.fileDescriptor == -1)
        // Closing them afterwards changes nothing.
        stream.close()
        file.close(flags: .stop)
        context.barrier()
        #expect(streamCleanup.calls.count == 1 && fileCleanup.calls.count == 1)
    }

    // MARK: close() and close(.stop)

    @Test(
        "R53 close() lets submitted operations finish; later ones get ECANCELED; fileDescriptor becomes -1",
        arguments: QueueKind.allCases
    )
    func closeLetsOperationsFinish(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let warmUp = context.write(channel, rope("up"))
        warmUp.expectFinished()
        #expect(channel.fileDescriptor == left)
        let read = context.read(channel, length: 5)
        let write = context.write(channel, rope("queued"))
        channel.close()
        context.expectReadAndWriteFail(channel, with: .canceled, length: 5, data: "late")
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(readExactly(right, 8) == bytes("upqueued"))
        writeAll(right, bytes("hello"))
        read.expectFinished()
        #expect(read.calls == [.done("hello")])
        cleanup.expectOnce(nil)
        #expect(eventually { channel.fileDescriptor == -1 }, "fileDescriptor after close: \(channel.fileDescriptor)")
        #expect(pendingBytes(right) == 0, "a write after close reached the socket")
    }

    @Test(
        "R54 stop cancels the channel's operations with ECANCELED, delivering pending bytes first",
        arguments: QueueKind.allCases
    )
    func stopCancels(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        channel.setLimit(lowWater: 1_000)
        let inFlight = context.read(channel, length: .max)
        let queued = context.read(channel, length: 10)
        writeAll(writer, bytes("0123456789"))
        try #require(eventually { pendingBytes(reader) == 0 })
        channel.close(flags: .stop)
        inFlight.expectFinished()
        queued.expectFinished()
        #expect(inFlight.calls == [.more("0123456789"), .failed(.canceled)])
        #expect(queued.calls == [.failed(.canceled)])
        let after = context.read(channel, length: 1)
        after.expectFinished()
        #expect(after.calls == [.failed(.canceled)])
        cleanup.expectOnce(nil)
    }

    @Test("R54 stop leaves the other channels on the descriptor alone", arguments: QueueKind.allCases)
    func stopIsPerChannel(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let stoppedCleanup = context.cleanupLog()
        let otherCleanup = context.cleanupLog()
        let stopped = context.channel(.stream, reader, cleanup: stoppedCleanup)
        let other = context.channel(.stream, reader, cleanup: otherCleanup)
        let first = context.read(stopped, length: 5)
        let second = context.read(other, length: 5)
        context.barrier()
        stopped.close(flags: .stop)
        first.expectFinished()
        #expect(first.calls == [.failed(.canceled)])
        writeAll(writer, bytes("hello"))
        second.expectFinished()
        #expect(second.calls == [.done("hello")])
        context.barrier()
        #expect(!stoppedCleanup.wasCalled, "the other channel on the descriptor is still open")
        other.close()
        stoppedCleanup.expectOnce(nil)
        otherCleanup.expectOnce(nil)
    }

    @Test("R54 R40 a stopped write hands back exactly what it did not write", arguments: QueueKind.allCases)
    func stoppedWriteAccounting(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, writer)
        let sent = patternBytes(1_048_576, seed: 16)
        let write = context.write(channel, fragmentedRope(sent.count, seed: 16, maxRegion: 50_000))
        try #require(waitUntilFull(pipe: reader))
        channel.close(flags: .stop)
        write.expectFinished()
        let final = try #require(write.final)
        #expect(final.error == .canceled)
        let remaining = final.bytes ?? []
        let written = readAvailable(reader)
        #expect(
            written.count + remaining.count == sent.count,
            "written \(written.count) + remaining \(remaining.count)"
        )
        expectSameBytes(written + remaining, sent, "written + remaining")
        cleanup.expectOnce(nil)
    }

    @Test(
        "R55 a second close is a no-op; stop after close cancels what is still pending; the cleanup handler runs once",
        arguments: QueueKind.allCases
    )
    func stopAfterClose(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let read = context.read(channel, length: .max)
        channel.close()
        channel.close()
        context.barrier()
        #expect(read.calls.isEmpty)
        #expect(!cleanup.wasCalled)
        channel.close(flags: .stop)
        read.expectFinished()
        #expect(read.calls == [.failed(.canceled)])
        channel.close(flags: .stop)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R55 close after stop is a no-op, and reads after stop get ECANCELED", arguments: QueueKind.allCases)
    func closeAfterStop(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        channel.close(flags: .stop)
        channel.close()
        writeAll(right, bytes("ignored"))
        let read = context.read(channel, length: 7)
        read.expectFinished()
        #expect(read.calls == [.failed(.canceled)])
        cleanup.expectOnce(nil)
        #expect(pendingBytes(left) == 7)
    }

    @Test(
        "R33 R54 stop racing completion: every operation gets exactly one final call, no byte lost or doubled",
        arguments: QueueKind.allCases
    )
    func stopRacingCompletion(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        var failures: [String] = []
        var outcomes = (readDone: 0, readCanceled: 0, writeDone: 0, writeCanceled: 0)
        for round in 0..<150 {
            let (left, right) = try makeSocketPair()
            defer { closeAll(left, right) }
            let incoming = patternBytes(96, seed: round)
            let outgoing = patternBytes(round % 3 == 0 ? 600_000 : 3_000, seed: round + 1)
            let (channel, cleanup) = context.channelWithCleanup(.stream, left)
            if round % 2 == 0 { writeAll(right, incoming) }
            let read = context.read(channel, length: incoming.count)
            let write = context.write(channel, fragmentedRope(outgoing.count, seed: round + 1))
            for _ in 0..<(round % 7) * 40 { _ = getpid() }  // a varying head start
            if round % 2 == 1 { writeAll(right, incoming) }
            channel.close(flags: .stop)
            guard read.waitForFinal(), write.waitForFinal(), cleanup.wait() else {
                failures.append("round \(round): read \(read.calls), write \(write.calls), cleanup \(cleanup.calls)")
                continue
            }
            let problems = read.problems + write.problems
            if !problems.isEmpty { failures.append("round \(round): \(problems)") }
            // Read: all of it, or a prefix and ECANCELED.
            switch read.final?.error {
            case nil:
                outcomes.readDone += 1
                if read.bytes != incoming { failures.append("round \(round): read bytes differ") }
            case .canceled?:
                outcomes.readCanceled += 1
                if !incoming.starts(with: read.bytes) { failures.append("round \(round): read bytes not a prefix") }
            case let error?:
                failures.append("round \(round): read ended with \(error)")
            }
            // Write: what the peer got plus what came back is exactly the data.
            let final = write.final
            let received = readAvailable(right)
            switch final?.error {
            case nil:
                outcomes.writeDone += 1
                if received != outgoing { failures.append("round \(round): written bytes differ") }
            case .canceled?:
                outcomes.writeCanceled += 1
                if received + (final?.bytes ?? []) != outgoing {
                    failures.append(
                        "round \(round): \(received.count) received + \(final?.bytes?.count ?? -1) remaining"
                    )
                }
            case let error?:
                failures.append("round \(round): write ended with \(error)")
            }
            context.barrier()
            if cleanup.calls != [nil] { failures.append("round \(round): cleanup calls \(cleanup.calls)") }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(5))")
        #expect(outcomes.writeCanceled > 0, "stop never caught a write: \(outcomes)")
    }

    @Test(
        "R33 R54 stop racing random reads of a file: one final call each, bytes a prefix",
        arguments: QueueKind.allCases
    )
    func stopRacingFileReads(_ queue: QueueKind) throws {
        let contents = patternBytes(2 * 1_048_576, seed: 17)
        let file = try makeFile(contents)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        var failures: [String] = []
        for round in 0..<60 {
            let (channel, cleanup) = context.channelWithCleanup(.randomAccess, file.fd)
            channel.setLimit(highWater: 65_536)
            let offset = Int64(round * 1_000)
            let read = context.read(channel, offset: offset, length: .max)
            for _ in 0..<(round % 10) * 40 { _ = getpid() }  // a varying head start
            if round % 3 == 1 { ringBarrier(context.ring) }  // or a ring turn and more
            channel.close(flags: .stop)
            guard read.waitForFinal(), cleanup.wait() else {
                failures.append("round \(round): calls \(read.calls.count), cleanup \(cleanup.calls)")
                continue
            }
            if !read.problems.isEmpty { failures.append("round \(round): \(read.problems)") }
            let expected = contents[Int(offset)...]
            let got = read.bytes
            switch read.final?.error {
            case nil:
                if got != Array(expected) { failures.append("round \(round): bytes differ") }
            case .canceled?:
                if got != Array(expected.prefix(got.count)) { failures.append("round \(round): bytes not a prefix") }
            case let error?:
                failures.append("round \(round): ended with \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(5))")
    }

    // MARK: Barriers

    @Test(
        "R56 a barrier waits for earlier operations on every channel of the descriptor, and runs asynchronously",
        arguments: QueueKind.allCases
    )
    func barrierWaitsForOperations(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (reading, other, cleanups) = context.channels((.stream, left), (.stream, left))
        let read = context.read(reading, length: 5)
        let ran = Counter()
        let inCall = Atomic<Bool>(true)
        let ranInsideCall = Atomic<Bool>(false)
        other.barrier {
            if inCall.load(ordering: .acquiring) { ranInsideCall.store(true, ordering: .relaxed) }
            ran.increment()
        }
        inCall.store(false, ordering: .releasing)
        context.barrier()
        #expect(ran.count == 0, "the barrier ran while a read on the descriptor was pending")
        writeAll(right, bytes("hello"))
        read.expectFinished()
        #expect(read.calls == [.done("hello")])
        #expect(eventually { ran.count == 1 })
        let insideCall = ranInsideCall.load(ordering: .relaxed)
        #expect(!insideCall, "the barrier ran inside barrier()")
        reading.close()
        other.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R56 operations submitted after a barrier wait until it returns", arguments: QueueKind.allCases)
    func operationsWaitForBarrier(_ queue: QueueKind) throws {
        let file = try makeFile([])
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, file.fd)
        let sizeInBarrier = _Lock<Int?>(nil)
        let fd = file.fd
        let writeSubmitted = DispatchSemaphore(value: 0)
        channel.barrier {
            // The write below has been submitted and, on a DispatchQueue, the ring has taken it
            // (a barrier through the ring): a write that did not wait for this block would have
            // been issued by now. (On the ring, nothing of the ring runs while this block does.)
            _ = wait(writeSubmitted)
            if queue == .dispatch { ringBarrier(context.ring) }
            var info = stat()
            fstat(fd, &info)
            sizeInBarrier.withLock { $0 = Int(info.st_size) }
        }
        let write = context.write(channel, rope("xyz"))
        writeSubmitted.signal()
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(sizeInBarrier.withLock { $0 } == 0, "the write ran before the barrier returned")
        #expect(contentsOfFile(file.path) == bytes("xyz"))
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R56 a barrier sees every earlier write, made on any channel of the descriptor",
        arguments: QueueKind.allCases
    )
    func barrierSeesEarlierWrites(_ queue: QueueKind) throws {
        let file = try makeFile([])
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (writing, other, cleanups) = context.channels((.stream, file.fd), (.stream, file.fd))
        let big = patternBytes(2 * 1_048_576 + 3, seed: 18)
        let write = context.write(writing, ByteRope(copying: big))
        let seen = _Lock<[UInt8]?>(nil)
        let ran = DispatchSemaphore(value: 0)
        let path = file.path
        other.barrier {
            seen.withLock { $0 = contentsOfFile(path) }
            ran.signal()
        }
        try #require(wait(ran))
        expectSameBytes(seen.withLock { $0 } ?? [], big, "the file as the barrier saw it")
        write.expectFinished()
        writing.close()
        other.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R58 a barrier may move the file position; later stream reads start there", arguments: QueueKind.allCases)
    func barrierSeek(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, file.fd)
        let fd = file.fd
        channel.barrier { _ = lseek(fd, 10, SEEK_SET) }
        let read = context.read(channel, length: 3)
        read.expectFinished()
        #expect(read.calls == [.done("ABC")])
        #expect(position(file.fd) == 13)
        channel.close()
        cleanup.expectOnce(nil)
    }
}
