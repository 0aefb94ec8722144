//===----------------------------------------------------------------------===//
// RingIO — tests: `IOChannel.write(contentsOf:offset:length:)`, file bytes spliced to a
// socket or a pipe.
// Rule numbers (R…, D…): Sources/RingIO/RingIO.docc/DispatchIOContract.md and ComingFromDispatch.md.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Foundation
import RingIOTestSupport
import SystemPackage
import Testing

@testable import RingIO

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Support

/// The handler calls of one file send.
private final class SendLog: Sendable {
    struct Call: Sendable, Equatable {
        let done: Bool
        let remaining: Int
        let error: Errno?
    }

    private let state = _Lock<(calls: [Call], problems: [String])>(([], []))
    private let finished = DispatchSemaphore(value: 0)
    private let onQueue: @Sendable () -> Bool

    init(onQueue: @escaping @Sendable () -> Bool) {
        self.onQueue = onQueue
    }

    var handler: @Sendable (Bool, Int, Errno?) -> Void {
        { done, remaining, error in
            let onQueue = self.onQueue()
            self.state.withLock { state in
                if !onQueue { state.problems.append("a call off its queue") }
                if state.calls.last?.done == true { state.problems.append("a call after the final one") }
                state.calls.append(Call(done: done, remaining: remaining, error: error))
            }
            if done { self.finished.signal() }
        }
    }

    /// Waits (bounded) for the final call and returns it; checks the calls before it.
    func final(sourceLocation: SourceLocation = #_sourceLocation) -> Call? {
        guard wait(self.finished, seconds: 20) else {
            Issue.record("no final call within 20 s", sourceLocation: sourceLocation)
            return nil
        }
        let (calls, problems) = self.state.withLock { ($0.calls, $0.problems) }
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        let progress = calls.dropLast()
        #expect(progress.allSatisfy { !$0.done && $0.error == nil }, "\(calls)", sourceLocation: sourceLocation)
        // Less left after each call; a failure may come right after a progress call.
        let remainders = progress.map(\.remaining) + [calls.last!.remaining]
        let decreasing = zip(remainders, remainders.dropFirst()).allSatisfy {
            $0 > $1 || $0 == $1 && calls.last!.error != nil
        }
        #expect(decreasing, "\(remainders)", sourceLocation: sourceLocation)
        return calls.last
    }
}

/// A ring, and a stream channel on `fd` with its handlers on a queue of their own.
private final class SendFixture {
    let ring: RingLoop
    let channel: IOChannel
    let queue = DispatchQueue(label: "file-send-handlers")
    private let cleanup: CleanupLog

    init(fd: CInt) throws {
        self.queue.setSpecific(key: queueLabelKey, value: self.queue.label)
        self.ring = try RingLoop()
        self.cleanup = CleanupLog(onQueue: nil)
        self.channel = IOChannel(
            kind: .stream,
            fileDescriptor: fd,
            queue: self.queue,
            ring: self.ring,
            cleanupHandler: self.cleanup.handler
        )
    }

    /// Sends `length` bytes of `file` from `offset`; returns the log of its calls.
    func send(_ file: CInt, offset: Int64, length: Int) -> SendLog {
        let label = self.queue.label
        let log = SendLog { currentDispatchQueueLabel() == label }
        self.channel.write(
            contentsOf: file,
            offset: offset,
            length: length,
            queue: self.queue,
            handler: log.handler
        )
        return log
    }

    /// Sends `length` bytes of random-access channel `file` from `offset`; returns the log.
    func send(from file: IOChannel, offset: Int64, length: Int) -> SendLog {
        let label = self.queue.label
        let log = SendLog { currentDispatchQueueLabel() == label }
        self.channel.write(contentsOf: file, offset: offset, length: length, queue: self.queue, handler: log.handler)
        return log
    }

    /// Closes the channel and expects its one cleanup call.
    func close(sourceLocation: SourceLocation = #_sourceLocation) {
        self.channel.close()
        self.cleanup.expectOnce(nil, sourceLocation: sourceLocation)
    }

    deinit {
        self.ring.shutdown()
    }
}

/// A TCP pair whose client end, the test's, gives up a blocking read after 10 s; `server` is
/// for the channel.
private func tcpPairForSending() throws -> (client: CInt, server: CInt) {
    let (client, server) = try makeTCPPair()
    setReceiveTimeout(client, seconds: 10)
    return (client, server)
}

/// Writes `bytes` to the channel and waits (bounded) for the final call.
private func writeAndWait(_ channel: IOChannel, _ bytes: String, queue: DispatchQueue) -> Errno?? {
    let result = _Lock<Errno??>(nil)
    let done = DispatchSemaphore(value: 0)
    channel.write(offset: 0, data: rope(bytes), queue: queue) { finished, _, error in
        guard finished else { return }
        result.withLock { $0 = .some(error) }
        done.signal()
    }
    return wait(done, seconds: 10) ? result.withLock { $0 } : nil
}

/// A send to a TCP peer that reset the connection, with SIGPIPE at its default action (in a
/// child process): it must end with EPIPE or ECONNRESET, and the process must survive.
private func sendToResetPeer() throws {
    try #require(sigpipeIsDefault(), "SIGPIPE is not at its default action: the test could not see it")
    let file = try makeFile(patternBytes(4 << 20, seed: 9))
    let (client, server) = try makeTCPPair()
    defer { close(server) }
    resetAndClose(client)
    try #require(eventually { sawReset(server) }, "the reset did not reach the server end")
    let fixture = try SendFixture(fd: server)
    var failed = false
    for _ in 0..<5 where !failed {
        let final = fixture.send(file.fd, offset: 0, length: 4 << 20).final()
        if let error = final?.error {
            #expect(error == .brokenPipe || error == .connectionReset, "\(error)")
            #expect(final!.remaining > 0)
            failed = true
        }
    }
    #expect(failed, "sends to a reset peer never failed")
    fixture.close()
}

// MARK: - Tests

@Suite("IOChannel: file sends spliced to a socket or a pipe", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelFileSendTests {
    @Test(
        "a range of a file reaches a TCP peer byte for byte; progress per chunk, then (true, 0, nil)",
        arguments: [0, 1, 16_384, 1_048_577, 3 << 20 + 5]
    )
    func rangeToTCP(size: Int) throws {
        let contents = patternBytes(size + 100, seed: size % 251)
        let file = try makeFile(contents)
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        let log = fixture.send(file.fd, offset: 50, length: size)
        let received = readExactly(client, size)
        expectSameBytes(received, Array(contents[50..<50 + size]))
        let final = log.final()
        #expect(final == SendLog.Call(done: true, remaining: 0, error: nil))
        ringBarrier(fixture.ring)
        #expect(pendingBytes(client) == 0, "bytes past the range")
        fixture.close()
    }

    @Test("to a pipe, in line with the channel's writes: head, file, tail")
    func orderedWithWritesToPipe() throws {
        let contents = patternBytes(200_000, seed: 4)
        let file = try makeFile(contents)
        let (reader, writer) = try makePipe()
        defer { closeAll(reader, writer) }
        let fixture = try SendFixture(fd: writer)
        let head = _Lock<Errno??>(nil)
        let tail = _Lock<Errno??>(nil)
        fixture.channel.write(offset: 0, data: rope("head"), queue: fixture.queue) { done, _, error in
            if done { head.withLock { $0 = .some(error) } }
        }
        let log = fixture.send(file.fd, offset: 0, length: contents.count)
        fixture.channel.write(offset: 0, data: rope("tail"), queue: fixture.queue) { done, _, error in
            if done { tail.withLock { $0 = .some(error) } }
        }
        // The pipe holds 64 KiB: the reader runs while the sends wait for room.
        let received = readExactly(reader, 4 + contents.count + 4)
        expectSameBytes(received, bytes("head") + contents + bytes("tail"))
        #expect(log.final() == SendLog.Call(done: true, remaining: 0, error: nil))
        #expect(head.withLock { $0 } == .some(nil))
        #expect(eventually { tail.withLock { $0 } == .some(nil) })
        fixture.close()
    }

    @Test("a file shorter than the range: every byte it has, then ENODATA with what is left")
    func shortFile() throws {
        let contents = patternBytes(10_000, seed: 5)
        let file = try makeFile(contents)
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        let log = fixture.send(file.fd, offset: 1_000, length: 50_000)
        expectSameBytes(readExactly(client, 9_000), Array(contents[1_000...]))
        #expect(log.final() == SendLog.Call(done: true, remaining: 41_000, error: .noData))
        // The channel goes on.
        #expect(writeAndWait(fixture.channel, "next", queue: fixture.queue) == .some(nil))
        #expect(readExactly(client, 4) == bytes("next"))
        fixture.close()
    }

    @Test("a peer that stops reading, then a stop: ECANCELED with what is left, promptly")
    func stopWhileBlocked() throws {
        let length = 16 << 20
        let file = try makeFile(patternBytes(length, seed: 6))
        let (client, server) = try makeTCPPair()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        let log = fixture.send(file.fd, offset: 0, length: length)
        // The socket buffers fill and the splice waits; then the channel is stopped.
        #expect(eventually { pendingBytes(client) > 0 && unsentBytes(server) > 0 })
        ringBarrier(fixture.ring)
        fixture.channel.close(flags: .stop)
        let final = log.final()
        #expect(final?.done == true && final?.error == .canceled, "\(String(describing: final))")
        #expect((final?.remaining ?? 0) > 0 && (final?.remaining ?? 0) < length)
        fixture.close()
    }

    @Test("a non-blocking socket that fills up is waited for; every byte arrives")
    func nonBlockingSocket() throws {
        let contents = patternBytes(6 << 20, seed: 7)
        let file = try makeFile(contents)
        let (client, server) = try makeTCPPair()
        defer { closeAll(client, server) }
        try #require(fcntl(server, F_SETFL, fcntl(server, F_GETFL) | O_NONBLOCK) == 0)
        setReceiveTimeout(client, seconds: 10)
        let fixture = try SendFixture(fd: server)
        let log = fixture.send(file.fd, offset: 0, length: contents.count)
        // The socket fills before the client reads (or the file fits in the buffers).
        #expect(eventually { unsentBytes(server) > 0 || pendingBytes(client) == contents.count })
        expectSameBytes(readExactly(client, contents.count), contents)
        #expect(log.final() == SendLog.Call(done: true, remaining: 0, error: nil))
        fixture.close()
    }

    @Test("twenty sends in a row on one channel: each its own range, in order")
    func manySends() throws {
        let contents = patternBytes(70_000, seed: 8)
        let file = try makeFile(contents)
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        var logs: [SendLog] = []
        for round in 0..<20 { logs.append(fixture.send(file.fd, offset: Int64(round), length: 60_000)) }
        for round in 0..<20 {
            expectSameBytes(readExactly(client, 60_000), Array(contents[round..<round + 60_000]), "send \(round)")
        }
        for log in logs { #expect(log.final() == SendLog.Call(done: true, remaining: 0, error: nil)) }
        fixture.close()
    }

    @Test("a channel on a regular file, or a source that is no file: EINVAL")
    func invalidEnds() throws {
        let file = try makeFile(patternBytes(1_000))
        let target = try makeFile([])
        let toFile = try SendFixture(fd: target.fd)
        #expect(toFile.send(file.fd, offset: 0, length: 100).final()?.error == .invalidArgument)
        toFile.close()

        let (left, right) = try makeSocketPair()
        let (client, server) = try makeTCPPair()
        defer {
            for fd in [left, right, client, server] { close(fd) }
        }
        let fixture = try SendFixture(fd: server)
        let final = fixture.send(left, offset: 0, length: 100).final()
        #expect(final?.error == .invalidArgument || final?.error == .illegalSeek, "\(String(describing: final))")
        fixture.close()
    }

    @Test("EBADF: a bad channel descriptor poisons it (R65); a bad source file ends that send only")
    func badDescriptors() throws {
        let file = try makeFile(patternBytes(10_000))
        // The channel on a pipe's read end: the splice into it fails with EBADF.
        let pipe = try makePipe()
        defer { close(pipe.write) }
        let poisoned = try SendFixture(fd: pipe.read)
        #expect(poisoned.send(file.fd, offset: 0, length: 5_000).final()?.error == .badFileDescriptor)
        // Poisoned: even a read, which the descriptor could serve, ends with EBADF at once.
        writeAll(pipe.write, bytes("readable"))
        let readError = _Lock<Errno??>(nil)
        let readDone = DispatchSemaphore(value: 0)
        poisoned.channel.read(offset: 0, length: 8, queue: poisoned.queue) { done, _, error in
            guard done else { return }
            readError.withLock { $0 = .some(error) }
            readDone.signal()
        }
        #expect(wait(readDone, seconds: 10))
        #expect(readError.withLock { $0 } == .some(.badFileDescriptor))
        poisoned.close()
        close(pipe.read)

        // The source open for writing only: EBADF for the send; the channel goes on.
        let writeOnly = open(file.path, O_WRONLY | O_CLOEXEC)
        try #require(writeOnly >= 0)
        defer { close(writeOnly) }
        let (client, server) = try makeTCPPair()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        let final = fixture.send(writeOnly, offset: 0, length: 5_000).final()
        #expect(final == SendLog.Call(done: true, remaining: 5_000, error: .badFileDescriptor))
        #expect(writeAndWait(fixture.channel, "still", queue: fixture.queue) == .some(nil))
        #expect(readExactly(client, 5) == bytes("still"))
        fixture.close()
    }

    @Test("from a random-access path channel on another ring, opened by the send: in line with the writes")
    func fromPathChannel() throws {
        let contents = patternBytes(300_000, seed: 12)
        let directory = try TemporaryDirectory()
        let path = try directory.create("source.bin", contents)
        let sourceRing = try RingLoop()
        defer { sourceRing.shutdown() }
        let source = try IOChannel(kind: .randomAccess, path: FilePath(path), mode: .readOnly, queue: sourceRing) { _ in
        }
        #expect(source.fileDescriptor == -1)  // not opened yet (R27)
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        fixture.channel.write(offset: 0, data: rope("head"), queue: fixture.queue) { _, _, _ in }
        let log = fixture.send(from: source, offset: 1_000, length: 250_000)
        fixture.channel.write(offset: 0, data: rope("tail"), queue: fixture.queue) { _, _, _ in }
        // The source may be closed once the send has its descriptor: the send keeps its own.
        source.close()
        let received = readExactly(client, 4 + 250_000 + 4)
        expectSameBytes(received, bytes("head") + Array(contents[1_000..<251_000]) + bytes("tail"))
        #expect(log.final() == SendLog.Call(done: true, remaining: 0, error: nil))
        fixture.close()
    }

    @Test("from a random-access descriptor channel: offsets from its base (R59)")
    func fromDescriptorChannelBase() throws {
        let contents = patternBytes(100_000, seed: 13)
        let file = try makeFile(contents)
        try #require(lseek(file.fd, 10_000, SEEK_SET) == 10_000)
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        // Its base is the position at creation: offset 5,000 is byte 15,000 of the file.
        let source = IOChannel(kind: .randomAccess, fileDescriptor: file.fd, queue: fixture.ring) { _ in }
        let log = fixture.send(from: source, offset: 5_000, length: 20_000)
        expectSameBytes(readExactly(client, 20_000), Array(contents[15_000..<35_000]))
        #expect(log.final() == SendLog.Call(done: true, remaining: 0, error: nil))
        source.close()
        fixture.close()
    }

    @Test("from a source channel closed first, whose path is missing, or whose open fails: its error")
    func fromFailingSources() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.create("source.bin", patternBytes(1_000))
        let (client, server) = try makeTCPPair()
        defer { closeAll(client, server) }
        let fixture = try SendFixture(fd: server)
        let closed = try IOChannel(kind: .randomAccess, path: FilePath(path), mode: .readOnly, queue: fixture.ring) {
            _ in
        }
        closed.close()
        #expect(
            fixture.send(from: closed, offset: 0, length: 500).final()
                == SendLog.Call(done: true, remaining: 500, error: .canceled)
        )
        let missing = try IOChannel(
            kind: .randomAccess,
            path: FilePath(directory.file("missing.bin")),
            mode: .readOnly,
            queue: fixture.ring
        ) { _ in }
        #expect(fixture.send(from: missing, offset: 0, length: 500).final()?.error == .noSuchFileOrDirectory)
        // A directory's path opened for writing with O_CREAT fails at open (EISDIR) — here a
        // file opened as a directory: ENOTDIR when opened.
        let notADirectory = try IOChannel(
            kind: .randomAccess,
            path: FilePath(path),
            mode: .readOnly,
            options: [.directory],
            queue: fixture.ring
        ) { _ in }
        #expect(fixture.send(from: notADirectory, offset: 0, length: 500).final()?.error == .notDirectory)
        // A source whose ring has shut down cannot lend its descriptor: ECANCELED, no hang —
        // made before the shutdown (the ring closed it as it exited) or after (it never
        // reached the ring).
        let goneRing = try RingLoop()
        let orphan = try IOChannel(kind: .randomAccess, path: FilePath(path), mode: .readOnly, queue: goneRing) { _ in }
        goneRing.shutdown()
        let lateOrphan = try IOChannel(kind: .randomAccess, path: FilePath(path), mode: .readOnly, queue: goneRing) {
            _ in
        }
        #expect(fixture.send(from: orphan, offset: 0, length: 500).final()?.error == .canceled)
        #expect(fixture.send(from: lateOrphan, offset: 0, length: 500).final()?.error == .canceled)
        // The channel goes on.
        #expect(writeAndWait(fixture.channel, "fine", queue: fixture.queue) == .some(nil))
        #expect(readExactly(client, 4) == bytes("fine"))
        fixture.close()
    }

    @Test("async: the send is awaited on the channel's ring and resumes there")
    func asyncOnRing() async throws {
        let contents = patternBytes(300_000, seed: 10)
        let file = try makeFile(contents)
        let fd = file.fd
        let (client, server) = try tcpPairForSending()
        defer { closeAll(client, server) }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let channel = IOChannel(kind: .stream, fileDescriptor: server, queue: ring) { _ in }
        let reader = Task(executorPreference: testTaskExecutor) { await onThread { readExactly(client, 300_004) } }
        let outcome = await Task(executorPreference: ring.taskExecutor) { () -> Result<Bool, Errno> in
            do throws(Errno) {
                try await channel.write(contentsOf: fd, offset: 0, length: 300_000)
                let onRing = ring.isCurrentThread
                try await channel.write(rope("done"))
                return .success(onRing)
            } catch {
                return .failure(error)
            }
        }.value
        #expect(try outcome.get() == true, "resumed on the ring")
        let received = await reader.value
        expectSameBytes(received, contents + bytes("done"))
        let short = await Task(executorPreference: ring.taskExecutor) { () -> Errno? in
            do throws(Errno) {
                try await channel.write(contentsOf: fd, offset: 299_999, length: 10)
                return nil
            } catch {
                return error
            }
        }.value
        #expect(short == .noData)
        // From a random-access channel on the file.
        let source = IOChannel(kind: .randomAccess, fileDescriptor: fd, queue: ring) { _ in }
        // After the byte the short send had (the file's last), the channel source's range.
        let reader2 = Task(executorPreference: testTaskExecutor) { await onThread { readExactly(client, 1_001) } }
        let fromChannel = await Task(executorPreference: ring.taskExecutor) { () -> Errno? in
            do throws(Errno) {
                try await channel.write(contentsOf: source, offset: 200_000, length: 1_000)
                return nil
            } catch {
                return error
            }
        }.value
        #expect(fromChannel == nil)
        expectSameBytes(await reader2.value, [contents[299_999]] + Array(contents[200_000..<201_000]))
        source.close()
        channel.close()
    }

    @Test("a send to a TCP peer that reset: EPIPE or ECONNRESET; the process survives (child process)")
    func resetPeer() async {
        await #expect(processExitsWith: .success) { try sendToResetPeer() }
    }
}
