//===----------------------------------------------------------------------===//
// RingIO — IOChannel: errors and faults (R64–R70, D3).
// Rule numbers (R…, D…): Sources/RingIO/RingIO.docc/DispatchIOContract.md and ComingFromDispatch.md.
//
// Faults that touch the whole process run in a child process (an exit test): SIGPIPE (a
// regression would end the process, and with it every other test), closing a descriptor
// under the ring (its number could be reused at once by a test running in parallel), a
// file-size limit (it applies to every thread), and counting the process's descriptors.
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

@Suite("IOChannel: errors (R64–R70)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelErrorTests {
    @Test(
        "R65 EBADF poisons the descriptor: a read on a write-only descriptor fails every channel on it, now and later",
        arguments: QueueKind.allCases
    )
    func badDescriptorPoisons(_ queue: QueueKind) throws {
        let file = try makeFile([])
        let fd = open(file.path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reading, writing, cleanups) = context.channels((.stream, fd), (.stream, fd))
        let read = context.read(reading, length: 10)
        read.expectFinished()
        #expect(read.calls == [.failed(.badFileDescriptor)])
        // A write would work on this descriptor, but it is poisoned now.
        let write = context.write(writing, rope("never"))
        let again = context.read(reading, length: 10)
        let ownWrite = context.write(reading, rope("never"))
        for log in [write, again, ownWrite] { log.expectFinished() }
        #expect(write.calls == [.failed(.badFileDescriptor, remaining: "never")])
        #expect(again.calls == [.failed(.badFileDescriptor)])
        #expect(ownWrite.calls == [.failed(.badFileDescriptor, remaining: "never")])
        #expect(contentsOfFile(file.path) == [])
        // R22: not a creation error, so the cleanup handlers get nil.
        reading.close()
        writing.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R65 EBADF ends the operations in flight on every channel of the descriptor", arguments: QueueKind.allCases)
    func badDescriptorEndsOutstanding(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (writing, other, cleanups) = context.channels((.stream, writer), (.stream, writer))
        let sent = patternBytes(1_048_576, seed: 20)
        let blocked = context.write(writing, ByteRope(copying: sent))
        try #require(waitUntilFull(pipe: reader))
        // A read on the write end of a pipe: EBADF.
        let read = context.read(other, length: 10)
        read.expectFinished()
        blocked.expectFinished()
        #expect(read.calls == [.failed(.badFileDescriptor)])
        let final = try #require(blocked.final)
        #expect(final.error == .badFileDescriptor, "the blocked write: \(final)")
        let remaining = final.bytes ?? []
        expectSameBytes(readAvailable(reader) + remaining, sent, "written + remaining")
        let later = context.write(writing, rope("later"))
        later.expectFinished()
        #expect(later.calls == [.failed(.badFileDescriptor, remaining: "later")])
        #expect(pendingBytes(reader) == 0)
        writing.close()
        other.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test("R67 EAGAIN never surfaces: on non-blocking descriptors reads and writes wait", arguments: QueueKind.allCases)
    func nonBlockingDescriptors(_ queue: QueueKind) throws {
        let (reader, writer) = try makePipe()
        let (left, right) = try makeSocketPair()
        defer {
            for fd in [reader, writer, left, right] { close(fd) }
        }
        for fd in [reader, writer, left] {
            try #require(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
        }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanups = (0..<3).map { _ in context.cleanupLog() }
        let pipeReader = context.channel(.stream, reader, cleanup: cleanups[0])
        let pipeWriter = context.channel(.stream, writer, cleanup: cleanups[1])
        let socket = context.channel(.stream, left, cleanup: cleanups[2])
        let fromPipe = context.read(pipeReader, length: 5)
        let fromSocket = context.read(socket, length: 5)
        context.barrier()
        #expect(fromPipe.calls.isEmpty, "calls: \(fromPipe.calls)")
        #expect(fromSocket.calls.isEmpty, "calls: \(fromSocket.calls)")
        writeAll(right, bytes("hello"))
        fromSocket.expectFinished()
        #expect(fromSocket.calls == [.done("hello")])
        // A write larger than the pipe waits for the reader: the channel itself drains it.
        let sent = patternBytes(300_000, seed: 21)
        let write = context.write(pipeWriter, ByteRope(copying: sent))
        let drain = context.read(pipeReader, length: sent.count - 5)
        fromPipe.expectFinished()
        write.expectFinished()
        drain.expectFinished()
        #expect(fromPipe.calls == [.done(Array(sent[..<5]))])
        write.expectWriteProgress(of: sent)
        expectSameBytes(drain.bytes, Array(sent[5...]))
        for channel in [pipeReader, pipeWriter, socket] { channel.close() }
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R68 the writer's close is EOF: (false, tail) then (true, empty, nil)",
        arguments: EndpointKind.endingWithEOF,
        QueueKind.allCases
    )
    func peerCloseIsEndOfFile(_ endpointKind: EndpointKind, _ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(endpointKind)
        let (channel, cleanup) = context.channelWithCleanup(.stream, endpoint.local)
        channel.setLimit(lowWater: 100)
        let read = context.read(channel, length: .max)
        endpoint.send(bytes("tail"))
        // The channel has taken the tail before the end of the stream comes.
        try #require(eventually { pendingBytes(endpoint.local) == 0 })
        context.barrier()
        endpoint.closeRemote()
        read.expectFinished()
        #expect(read.calls == [.more("tail"), .eof])
        let after = context.read(channel, length: 10)
        after.expectFinished()
        #expect(after.calls == [.eof])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R36 R66 a peer reset mid-read: the data first, then (true, nil, ECONNRESET)",
        arguments: QueueKind.allCases
    )
    func resetMidRead(_ queue: QueueKind) throws {
        let (client, server) = try makeTCPPair()
        defer { close(client) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, client)
        let read = context.read(channel, length: .max)
        let sent = patternBytes(10_000, seed: 22)
        writeAll(server, sent)
        #expect(read.waitForBytes(sent.count))
        resetAndClose(server)
        read.expectFinished()
        expectSameBytes(read.bytes, sent)
        #expect(read.calls.last == .failed(.connectionReset))
        #expect(read.calls.dropLast().allSatisfy { !$0.done && $0.error == nil })
        channel.close()
        cleanup.expectOnce(nil)
    }
}

// MARK: - Faults, each in a child process

/// The process-wide signal state a fault test starts from: SIGPIPE at its default action, so
/// that a stray SIGPIPE would end the (child) process and fail the test.
private func requireDefaultSIGPIPE() throws {
    try #require(sigpipeIsDefault(), "SIGPIPE is not at its default action: the test could not see it")
}

/// A write to a socket whose peer is gone: EPIPE, all data back, the channel still usable.
func writeToClosedSocket(_ queue: QueueKind) throws {
    try requireDefaultSIGPIPE()
    let (left, right) = try makeSocketPair()
    defer { close(left) }
    close(right)
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (channel, cleanup) = context.channelWithCleanup(.stream, left)
    let sent = patternBytes(100_000, seed: 23)
    let write = context.write(channel, ByteRope(copying: sent))
    write.expectFinished()
    #expect(write.final?.error == .brokenPipe, "write to a closed socket: \(write.calls)")
    expectSameBytes(write.final?.bytes ?? [], sent, "remaining")
    let again = context.write(channel, rope("again"))
    again.expectFinished()
    #expect(again.calls == [.failed(.brokenPipe, remaining: "again")])
    channel.close()
    cleanup.expectOnce(nil)
}

/// A TCP peer that closed: the writes end with EPIPE or ECONNRESET, never a signal.
func writeToClosedTCPPeer(_ queue: QueueKind) throws {
    try requireDefaultSIGPIPE()
    let (client, server) = try makeTCPPair()
    defer { close(client) }
    close(server)
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (channel, cleanup) = context.channelWithCleanup(.stream, client)
    var errors: [Errno?] = []
    // The first write may be accepted before the peer's reset arrives.
    for round in 0..<20 {
        let sent = patternBytes(65_536, seed: round)
        let write = context.write(channel, ByteRope(copying: sent))
        write.expectFinished()
        let final = write.final
        errors.append(final?.error)
        if let error = final?.error {
            #expect(error == .brokenPipe || error == .connectionReset, "\(error)")
            let remaining = final?.bytes ?? []
            #expect(
                remaining == Array(sent.suffix(remaining.count)) && !remaining.isEmpty,
                "remaining: \(remaining.count)"
            )
            break
        }
        // The next write fails once the peer's reset has come back.
        _ = eventually(seconds: 5) { sawReset(client) }
    }
    #expect(errors.last != nil, "writes to a closed TCP peer never failed: \(errors)")
    channel.close()
    cleanup.expectOnce(nil)
}

/// A write to a pipe or FIFO with no reader: EPIPE at once; a write blocked on a full one:
/// EPIPE when the reader closes (dispatch spins instead).
func writeToPipeWithoutReader(_ queue: QueueKind, fifo: Bool) throws {
    try requireDefaultSIGPIPE()
    let directory = try TemporaryDirectory()
    let (reader, writer) = try fifo ? directory.fifo() : makePipe()
    defer { close(writer) }
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (channel, cleanup) = context.channelWithCleanup(.stream, writer)

    let sent = patternBytes(1_048_576, seed: 24)
    let blocked = context.write(channel, fragmentedRope(sent.count, seed: 24, maxRegion: 100_000))
    try #require(waitUntilFull(pipe: reader))
    let capacity = pipeCapacity(reader)
    context.barrier()
    #expect(!blocked.isFinished)
    close(reader)
    blocked.expectFinished()
    let final = try #require(blocked.final)
    #expect(final.error == .brokenPipe, "the blocked write: \(blocked.calls)")
    let remaining = final.bytes ?? []
    #expect(remaining.count == sent.count - capacity, "remaining \(remaining.count), pipe took \(capacity)")
    expectSameBytes(remaining, Array(sent.suffix(remaining.count)), "remaining")

    let after = context.write(channel, rope("after"))
    after.expectFinished()
    #expect(after.calls == [.failed(.brokenPipe, remaining: "after")])
    channel.close()
    cleanup.expectOnce(nil)
}

/// A peer reset while a large write is blocked: the rest comes back with ECONNRESET or EPIPE.
func resetMidLargeWrite(_ queue: QueueKind) throws {
    try requireDefaultSIGPIPE()
    let (client, server) = try makeTCPPair()
    defer { close(client) }
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (channel, cleanup) = context.channelWithCleanup(.stream, client)
    let sent = patternBytes(32 * 1_048_576, seed: 25)
    let write = context.write(channel, ByteRope(copying: sent))
    try #require(eventually { pendingBytes(server) > 0 })
    context.barrier()
    #expect(!write.isFinished, "32 MiB went out with nobody reading")
    resetAndClose(server)
    write.expectFinished()
    let final = try #require(write.final)
    #expect(final.error == .connectionReset || final.error == .brokenPipe, "the write: \(final)")
    let remaining = final.bytes ?? []
    #expect(!remaining.isEmpty && remaining.count < sent.count, "remaining \(remaining.count)")
    expectSameBytes(remaining, Array(sent.suffix(remaining.count)), "remaining")
    channel.close()
    cleanup.expectOnce(nil)
}

/// Closing the descriptor under a pending read: the next operation finds EBADF, which
/// poisons the descriptor and ends the pending read too.
func closeUnderPendingRead(_ queue: QueueKind) throws {
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (left, right) = try context.socketPair()
    let cleanups = [context.cleanupLog(), context.cleanupLog()]
    let channel = context.channel(.stream, left, cleanup: cleanups[0])
    let sibling = context.channel(.stream, from: channel, cleanup: cleanups[1])
    let pending = context.read(channel, length: 10)
    context.barrier()
    context.close(left)
    let write = context.write(sibling, rope("x"))
    write.expectFinished()
    pending.expectFinished()
    #expect(write.calls == [.failed(.badFileDescriptor, remaining: "x")])
    #expect(pending.calls == [.failed(.badFileDescriptor)])
    let later = [context.read(channel, length: 1), context.read(sibling, length: 1)]
    for log in later {
        log.expectFinished()
        #expect(log.calls == [.failed(.badFileDescriptor)])
    }
    #expect(pendingBytes(right) == 0)
    channel.close()
    sibling.close()
    for cleanup in cleanups { cleanup.expectOnce(nil) }
}

/// A thousand channels on a thousand pipes, plus path channels, opened and closed: no
/// descriptor left open.
func thousandChannels(_ queue: QueueKind) throws {
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let directory = try TemporaryDirectory()
    /// One round: `pipes` pipes with a channel on each end, `paths` path channels.
    func round(pipes: Int, paths: Int) throws {
        var channels: [IOChannel] = []
        var cleanups: [CleanupLog] = []
        var reads: [(OperationLog, [UInt8])] = []
        for index in 0..<pipes {
            let (reader, writer) = try makePipe()
            let readCleanup = CleanupLog(onCall: { _ in close(reader) })
            let writeCleanup = CleanupLog(onCall: { _ in close(writer) })
            let readChannel = context.channel(.stream, reader, cleanup: readCleanup)
            let writeChannel = context.channel(.stream, writer, cleanup: writeCleanup)
            let message = bytes("message \(index)")
            context.write(writeChannel, ByteRope(copying: message))
            reads.append((context.read(readChannel, length: message.count), message))
            channels += [readChannel, writeChannel]
            cleanups += [readCleanup, writeCleanup]
        }
        var pathWrites: [(IOChannel, OperationLog)] = []
        for index in 0..<paths {
            let cleanup = CleanupLog()
            let channel = try context.channel(
                .randomAccess,
                path: directory.file("file-\(index)"),
                mode: .readWrite,
                options: .create,
                permissions: .ownerReadWrite,
                cleanup: cleanup
            )
            pathWrites.append((channel, context.write(channel, rope("path \(index)"))))
            channels.append(channel)
            cleanups.append(cleanup)
        }
        // Random-access operations are not ordered (R74): read back once the write is done.
        for (index, (channel, write)) in pathWrites.enumerated() {
            _ = write.waitForFinal()
            reads.append((context.read(channel, length: 100), bytes("path \(index)")))
        }
        var wrong = 0
        for (read, expected) in reads {
            if !read.waitForFinal() || read.bytes != expected { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) reads of \(reads.count) did not get their bytes")
        for channel in channels { channel.close() }
        let missing = cleanups.filter { !$0.wait() }.count
        #expect(missing == 0, "\(missing) cleanup handlers did not run")
        #expect(cleanups.allSatisfy { $0.calls == [nil] })
    }
    // A warm-up round, so that whatever the ring sets up once is there before counting.
    try round(pipes: 4, paths: 4)
    context.drain()
    try expectNoDescriptorLeak {
        try round(pipes: 1_000, paths: 200)
        context.drain()
    }
}

@Suite(
    "IOChannel: faults, in a child process (R65, R66, R69, D3)",
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct ChannelFaultTests {
    @Test("D3 no SIGPIPE, and the process's SIGPIPE disposition is left alone")
    func sigpipeDispositionUntouched() async {
        await #expect(processExitsWith: .success) {
            try writeToClosedSocket(.ring)
            try writeToPipeWithoutReader(.dispatch, fifo: false)
            #expect(sigpipeIsDefault(), "RingIO changed the process's SIGPIPE disposition")
        }
    }
}

/// A write that reaches RLIMIT_FSIZE: the kernel takes what fits, then EFBIG.
private func writePastFileSizeLimit(_ queue: QueueKind) throws {
    let limit = 65_536
    var saved = rlimit()
    try #require(getrlimit(Int32(RLIMIT_FSIZE.rawValue), &saved) == 0)
    var lowered = saved
    lowered.rlim_cur = rlim_t(limit)
    try #require(setrlimit(Int32(RLIMIT_FSIZE.rawValue), &lowered) == 0)
    let previousHandler = signal(SIGXFSZ, SIG_IGN)
    defer {
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &saved)
        signal(SIGXFSZ, previousHandler)
    }
    let file = try makeFile([])
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let cleanups = [context.cleanupLog(), context.cleanupLog()]
    let stream = context.channel(.stream, file.fd, cleanup: cleanups[0])
    let sent = patternBytes(100_000, seed: 26)
    let write = context.write(stream, fragmentedRope(sent.count, seed: 26, maxRegion: 9_000))
    write.expectFinished()
    let final = try #require(write.final)
    #expect(final.error == .fileTooLarge, "the write: \(write.calls)")
    expectSameBytes(final.bytes ?? [], Array(sent[limit...]), "remaining")
    expectSameBytes(contentsOfFile(file.path) ?? [], Array(sent[..<limit]), "the file")
    // R66: the channel is still usable.
    let read = context.read(stream, length: 10)
    read.expectFinished()
    #expect(read.calls == [.eof])

    let random = context.channel(.randomAccess, file.fd, cleanup: cleanups[1])
    let beyond = context.write(random, offset: Int64(limit + 10), rope("beyond"))
    beyond.expectFinished()
    #expect(beyond.calls == [.failed(.fileTooLarge, remaining: "beyond")])
    stream.close()
    random.close()
    for cleanup in cleanups { cleanup.expectOnce(nil) }
}

@Suite(
    "IOChannel: RLIMIT_FSIZE (R66), in a child process",
    .serialized,
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct ChannelFileSizeLimitTests {
    @Test(
        "R66 a write that reaches RLIMIT_FSIZE ends with EFBIG and hands back exactly the rest",
        arguments: QueueKind.allCases
    )
    func fileTooLarge(_ queue: QueueKind) async {
        await #expect(processExitsWith: .success) { [queue] in try writePastFileSizeLimit(queue) }
    }
}
