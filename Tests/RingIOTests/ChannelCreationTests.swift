//===----------------------------------------------------------------------===//
// RingIO — IOChannel: creation, descriptor ownership and the cleanup handler (R20–R31, D4).
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

@Suite("IOChannel: creation and cleanup (R20–R31)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelCreationTests {
    // MARK: Creation

    @Test("R20 creation returns at once; a read submitted right away is served", arguments: QueueKind.allCases)
    func readRightAfterCreation(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let read = context.read(channel, length: 5)
        writeAll(writer, bytes("hello"))
        read.expectFinished()
        #expect(read.calls == [.done("hello")])
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("the channel's ring: the one given, else the queue when it is a ring, else a shared ring")
    func ringChoice() throws {
        // One descriptor each: channels on one descriptor share its state (R31), and its ring.
        let pairs = try (0..<3).map { _ in try makeSocketPair() }
        defer {
            for (left, right) in pairs {
                close(left)
                close(right)
            }
        }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let other = try RingLoop()
        defer { other.shutdown() }
        let queue = DispatchQueue(label: "ring-choice")
        let cleanups = (0..<3).map { _ in CleanupLog() }

        let given = IOChannel(
            kind: .stream,
            fileDescriptor: pairs[0].0,
            queue: queue,
            ring: other,
            cleanupHandler: cleanups[0].handler
        )
        #expect(_RingIOTesting.ring(of: given) === other)
        let onRing = IOChannel(
            kind: .stream,
            fileDescriptor: pairs[1].0,
            queue: ring,
            cleanupHandler: cleanups[1].handler
        )
        #expect(_RingIOTesting.ring(of: onRing) === ring)
        let shared = IOChannel(
            kind: .stream,
            fileDescriptor: pairs[2].0,
            queue: queue,
            cleanupHandler: cleanups[2].handler
        )
        let sharedRings = try RingLoopGroup.shared.rings
        #expect(sharedRings.contains { $0 === _RingIOTesting.ring(of: shared) })
        for channel in [given, onRing, shared] { channel.close() }
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R21 fstat failure: EBADF goes to the cleanup handler at once, and every operation fails with it",
        arguments: QueueKind.allCases
    )
    func badDescriptor(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = context.channelWithCleanup(.stream, descriptorThatIsNeverOpen())
        // Submitted before the failure can have been noticed, and after.
        let early = context.read(channel, length: 10)
        cleanup.expectOnce(.badFileDescriptor)
        let read = context.read(channel, length: 10)
        let write = context.write(channel, rope("data"))
        for log in [early, read, write] { log.expectFinished() }
        #expect(early.calls == [.failed(.badFileDescriptor)])
        #expect(read.calls == [.failed(.badFileDescriptor)])
        #expect(write.calls == [.failed(.badFileDescriptor, remaining: "data")])
        channel.close()
        context.barrier()
        #expect(cleanup.calls.count == 1, "the cleanup handler runs once: \(cleanup.calls)")
    }

    @Test(
        "R21 R62 a directory: EISDIR to the cleanup handler at once and to every operation, for both kinds",
        arguments: QueueKind.allCases,
        [IOChannel.Kind.stream, .randomAccess]
    )
    func directory(_ queue: QueueKind, kind: IOChannel.Kind) throws {
        let directory = try TemporaryDirectory()
        let fd = open(directory.path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanup = context.cleanupLog()
        let channel = context.channel(kind, fd, cleanup: cleanup)
        cleanup.expectOnce(.isDirectory)
        context.expectReadAndWriteFail(channel, with: .isDirectory, length: 10, data: "data")
        channel.close()
    }

    @Test(
        "R21 R62 random access on a pipe, FIFO or socket: ESPIPE to the cleanup handler at once and to every operation",
        arguments: EndpointKind.unseekable,
        QueueKind.allCases
    )
    func randomAccessRefused(_ endpointKind: EndpointKind, _ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(endpointKind)
        let (channel, cleanup) = context.channelWithCleanup(.randomAccess, endpoint.local)
        cleanup.expectOnce(.illegalSeek)
        endpoint.send(bytes("ready"))
        context.expectReadAndWriteFail(channel, with: .illegalSeek, length: 5, data: "data")
        // Nothing was read: the bytes are still there.
        #expect(readAvailable(endpoint.local) == bytes("ready"))
        channel.close()
    }

    // MARK: The cleanup handler

    @Test(
        "R22 R23 the cleanup handler runs once, with nil, on the creation queue, only after close",
        arguments: QueueKind.allCases
    )
    func cleanupAfterClose(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let write = context.write(channel, rope("x"))
        write.expectFinished()
        context.barrier()
        #expect(!cleanup.wasCalled, "no cleanup before close")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R23 R31 the cleanup handler waits until every channel on the descriptor is closed",
        arguments: QueueKind.allCases
    )
    func cleanupWaitsForSiblings(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, _) = try context.pipe()
        let firstCleanup = context.cleanupLog()
        let secondCleanup = context.cleanupLog()
        let first = context.channel(.stream, reader, cleanup: firstCleanup)
        let second = context.channel(.stream, reader, cleanup: secondCleanup)
        first.close()
        context.barrier()
        #expect(!firstCleanup.wasCalled, "another channel on the descriptor is still open")
        #expect(!secondCleanup.wasCalled)
        second.close()
        firstCleanup.expectOnce(nil)
        secondCleanup.expectOnce(nil)
    }

    @Test(
        "R23 R53 after close() an operation in flight finishes first; the cleanup handler follows its final call",
        arguments: QueueKind.allCases
    )
    func cleanupWaitsForOperations(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let read = context.log()
        let finalSeenFirst = _Lock<Bool?>(nil)
        let cleanup = CleanupLog(
            onQueue: { context.isOnQueue },
            onCall: { _ in
                finalSeenFirst.withLock { $0 = read.isFinished }
            }
        )
        let channel = context.channel(.stream, reader, cleanup: cleanup)
        context.read(channel, length: .max, into: read)
        channel.close()
        context.barrier()
        #expect(read.calls.isEmpty)
        #expect(!cleanup.wasCalled, "a read is still in flight")
        writeAll(writer, bytes("late"))
        context.close(writer)
        read.expectFinished()
        #expect(read.calls == [.more("late"), .eof])
        cleanup.expectOnce(nil)
        #expect(finalSeenFirst.withLock { $0 } == true, "the cleanup handler ran before the read's final call")
    }

    @Test("R23 a convenience read on the descriptor holds the cleanup handler back", arguments: QueueKind.allCases)
    func cleanupWaitsForConvenienceRead(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let oneShot = context.convenienceLog()
        oneShot.submitting {
            IOChannel.read(
                fromFileDescriptor: reader,
                maxLength: 100,
                queue: context.queue,
                handler: oneShot.readHandler
            )
        }
        channel.close()
        context.sharedGroupBarrier.pass()
        #expect(!cleanup.wasCalled, "a convenience read on the descriptor is still in flight")
        writeAll(writer, bytes("data"))
        oneShot.expectOneCall()
        #expect(oneShot.calls == [HandlerCall(true, "data")])
        cleanup.expectOnce(nil)
    }

    @Test(
        "R23 R-S3 dropping the last reference closes the channel: the cleanup handler runs",
        arguments: QueueKind.allCases
    )
    func dropWithoutClose(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let cleanup = context.cleanupLog()
        do {
            let channel = context.channel(.stream, left, cleanup: cleanup)
            context.write(channel, rope("x")).expectFinished()
        }
        cleanup.expectOnce(nil)
    }

    @Test("R-S3 a pending operation keeps a dropped channel alive until it completes", arguments: QueueKind.allCases)
    func pendingOperationKeepsChannel(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let cleanup = context.cleanupLog()
        let read: OperationLog
        do {
            let channel = context.channel(.stream, left, cleanup: cleanup)
            read = context.read(channel, length: 4)
        }
        context.barrier()
        #expect(read.calls.isEmpty)
        #expect(!cleanup.wasCalled, "the read is still pending")
        writeAll(right, bytes("pong"))
        read.expectFinished()
        #expect(read.calls == [.done("pong")])
        cleanup.expectOnce(nil)
    }

    @Test("R25 a descriptor channel never closes its descriptor", arguments: QueueKind.allCases)
    func descriptorStaysOpen(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        context.write(channel, rope("one")).expectFinished()
        channel.close(flags: .stop)
        cleanup.expectOnce(nil)
        #expect(isOpen(left))
        writeAll(left, bytes("two"))
        #expect(readExactly(right, 6) == bytes("onetwo"))
    }

    @Test(
        "R23 R31 once the cleanup handler has run, a channel on the reused descriptor number starts afresh",
        arguments: QueueKind.allCases
    )
    func descriptorNumberReuse(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        var failures: [String] = []
        for round in 0..<100 {
            // Closed and reopened each round: the kernel hands out the same numbers again.
            let (reader, writer) = try makePipe()
            defer { closeAll(reader, writer) }
            let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
            if round % 3 == 0 { channel.setLimit(lowWater: 1_000) }
            let read = context.read(channel, length: 3)
            writeAll(writer, bytes("abc"))
            if !read.waitForFinal(seconds: 5) {
                failures.append("round \(round), fd \(reader): no final call, calls \(read.calls)")
            } else if read.calls != [.done("abc")] {
                failures.append("round \(round), fd \(reader): \(read.calls)")
            }
            if round % 2 == 0 { channel.close() } else { channel.close(flags: .stop) }
            if !cleanup.wait(seconds: 5) { failures.append("round \(round), fd \(reader): no cleanup") }
        }
        #expect(failures.isEmpty, "\(failures.count) failures; first: \(failures.prefix(3))")
    }

    // MARK: Path channels

    @Test("D4 a relative path throws invalidArgument at once; no cleanup follows", arguments: QueueKind.allCases)
    func relativePath(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanup = context.cleanupLog()
        #expect(throws: Errno.invalidArgument) {
            _ = try context.channel(.stream, path: "relative/file", mode: .readOnly, cleanup: cleanup)
        }
        #expect(throws: Errno.invalidArgument) {
            _ = try context.channel(.randomAccess, path: "", mode: .readOnly, cleanup: cleanup)
        }
        context.barrier()
        #expect(cleanup.calls.isEmpty)
    }

    @Test(
        "R26 a missing path: ENOENT to the cleanup handler at once, and to every operation",
        arguments: QueueKind.allCases
    )
    func missingPath(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(
            .stream,
            path: directory.file("missing"),
            mode: .readOnly
        )
        cleanup.expectOnce(.noSuchFileOrDirectory)
        context.expectReadAndWriteFail(channel, with: .noSuchFileOrDirectory, length: 10, data: "data")
        // Without O_CREAT nothing is created, and O_CREAT under a missing directory fails the same way.
        #expect(contentsOfFile(directory.file("missing")) == nil)
        let deeper = context.cleanupLog()
        let creating = try context.channel(
            .stream,
            path: directory.file("none/file"),
            mode: .writeOnly,
            options: .create,
            permissions: .ownerReadWrite,
            cleanup: deeper
        )
        deeper.expectOnce(.noSuchFileOrDirectory)
        let creatingWrite = context.write(creating, rope("data"))
        creatingWrite.expectFinished()
        #expect(creatingWrite.calls == [.failed(.noSuchFileOrDirectory, remaining: "data")])
        channel.close()
        creating.close()
    }

    @Test(
        "R26 a path through a regular file: ENOTDIR to the cleanup handler and to every operation",
        arguments: QueueKind.allCases
    )
    func notDirectory(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.create("file", bytes("x"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(.randomAccess, path: file + "/child", mode: .readOnly)
        cleanup.expectOnce(.notDirectory)
        let read = context.read(channel, length: 10)
        read.expectFinished()
        #expect(read.calls == [.failed(.notDirectory)])
        channel.close()
    }

    @Test(
        "R26 R62 a directory path: EISDIR to the cleanup handler, for both kinds",
        arguments: QueueKind.allCases,
        [IOChannel.Kind.stream, .randomAccess]
    )
    func directoryPath(_ queue: QueueKind, kind: IOChannel.Kind) throws {
        let directory = try TemporaryDirectory()
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(kind, path: directory.path, mode: .readOnly)
        cleanup.expectOnce(.isDirectory)
        let read = context.read(channel, length: 10)
        read.expectFinished()
        #expect(read.calls == [.failed(.isDirectory)])
        channel.close()
    }

    @Test(
        "R26 R27 with O_CREAT a missing file is created lazily: no file and fileDescriptor -1 until the first write",
        arguments: QueueKind.allCases
    )
    func lazyCreate(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("created")
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(
            .randomAccess,
            path: path,
            mode: .readWrite,
            options: .create,
            permissions: .ownerReadWrite
        )
        context.barrier()
        #expect(!cleanup.wasCalled)
        #expect(contentsOfFile(path) == nil, "the file exists before any operation")
        #expect(channel.fileDescriptor == -1)
        let write = context.write(channel, offset: 3, rope("abc"))
        write.expectFinished()
        #expect(write.calls == [.written])
        #expect(contentsOfFile(path) == [0, 0, 0] + bytes("abc"))
        #expect(channel.fileDescriptor >= 0)
        let read = context.read(channel, offset: 3, length: 3)
        read.expectFinished()
        #expect(read.calls == [.done("abc")])
        channel.close()
        cleanup.expectOnce(nil)
        #expect(channel.fileDescriptor == -1)
    }

    @Test("R27 R57 reading fileDescriptor inside a barrier performs the open", arguments: QueueKind.allCases)
    func barrierOpens(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("opened-by-barrier")
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(
            .stream,
            path: path,
            mode: .writeOnly,
            options: .create,
            permissions: .ownerReadWrite
        )
        let seen = _Lock<CInt?>(nil)
        let ran = DispatchSemaphore(value: 0)
        channel.barrier {
            seen.withLock { $0 = channel.fileDescriptor }
            ran.signal()
        }
        try #require(wait(ran))
        let fd = try #require(seen.withLock { $0 })
        #expect(fd >= 0)
        #expect(contentsOfFile(path) == [], "the open in the barrier created the file")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R28 R22 an open failure goes to each operation and sticks; the cleanup handler gets nil",
        arguments: QueueKind.allCases
    )
    func openFailureSticks(_ queue: QueueKind) throws {
        // The path exists (so the stat succeeds) but O_CREAT|O_EXCL makes the open fail: EEXIST.
        let directory = try TemporaryDirectory()
        let path = try directory.create("exists", bytes("old"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (channel, cleanup) = try context.channelWithCleanup(
            .stream,
            path: path,
            mode: .readWrite,
            options: [.create, .exclusiveCreate],
            permissions: .ownerReadWrite
        )
        let write = context.write(channel, rope("new"))
        write.expectFinished()
        #expect(write.calls == [.failed(.fileExists, remaining: "new")])
        let read = context.read(channel, length: 3)
        read.expectFinished()
        #expect(read.calls == [.failed(.fileExists)])
        let again = context.write(channel, rope("again"))
        again.expectFinished()
        #expect(again.calls == [.failed(.fileExists, remaining: "again")])
        #expect(contentsOfFile(path) == bytes("old"))
        #expect(!cleanup.wasCalled, "an open failure is not a creation failure")
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test(
        "R29 a path channel closes the descriptor it opened before its cleanup handler runs",
        arguments: QueueKind.allCases
    )
    func pathChannelClosesItsDescriptor(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.create("owned", patternBytes(100))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let opened = _Lock<(fd: CInt, identity: [UInt64]?)?>(nil)
        let stillOpenInCleanup = _Lock<Bool?>(nil)
        let cleanup = CleanupLog(
            onQueue: { context.isOnQueue },
            onCall: { _ in
                // Compared by inode, not by number: another test may reuse the number at once.
                guard let (fd, identity) = opened.withLock({ $0 }) else { return }
                stillOpenInCleanup.withLock { $0 = identity != nil && RingIOTestSupport.identity(of: fd) == identity }
            }
        )
        let channel = try context.channel(.randomAccess, path: path, mode: .readOnly, cleanup: cleanup)
        let read = context.read(channel, length: 100)
        read.expectFinished()
        #expect(read.calls == [.done(patternBytes(100))])
        let ran = DispatchSemaphore(value: 0)
        channel.barrier {
            let fd = channel.fileDescriptor
            opened.withLock { $0 = (fd, RingIOTestSupport.identity(of: fd)) }
            ran.signal()
        }
        try #require(wait(ran))
        var fileInfo = stat()
        try #require(stat(path, &fileInfo) == 0)
        #expect(opened.withLock { $0?.identity } == [UInt64(fileInfo.st_dev), UInt64(fileInfo.st_ino)])
        channel.close()
        cleanup.expectOnce(nil)
        #expect(stillOpenInCleanup.withLock { $0 } == false, "the descriptor was still open in the cleanup handler")
    }

    // MARK: Channels made from channels

    @Test("R30 a channel made from another shares its descriptor but not its policies", arguments: QueueKind.allCases)
    func fromChannelDefaults(_ queue: QueueKind) throws {
        let file = try makeFile(patternBytes(10))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let sourceCleanup = context.cleanupLog()
        let derivedCleanup = context.cleanupLog()
        let source = context.channel(.randomAccess, file.fd, cleanup: sourceCleanup)
        source.setLimit(highWater: 2)
        let derived = context.channel(.randomAccess, from: source, cleanup: derivedCleanup)
        let fromSource = context.read(source, length: 10)
        let fromDerived = context.read(derived, length: 10)
        fromSource.expectFinished()
        fromDerived.expectFinished()
        let chunks = stride(from: 0, to: 10, by: 2).map { Array(patternBytes(10)[$0..<$0 + 2]) }
        #expect(fromSource.calls == chunks.dropLast().map { .more($0) } + [.done(chunks[4])])
        #expect(fromDerived.calls == [.done(patternBytes(10))], "high water was inherited")
        #expect(derived.fileDescriptor == file.fd)
        // R23: one cleanup point for both.
        source.close()
        context.barrier()
        #expect(!sourceCleanup.wasCalled)
        derived.close()
        sourceCleanup.expectOnce(nil)
        derivedCleanup.expectOnce(nil)
    }

    @Test(
        "R30 R59 a random channel made from another snapshots the file position at its own creation",
        arguments: QueueKind.allCases
    )
    func fromChannelBase(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789ABCDEF"))
        try #require(lseek(file.fd, 4, SEEK_SET) == 4)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let cleanups = [context.cleanupLog(), context.cleanupLog()]
        let source = context.channel(.randomAccess, file.fd, cleanup: cleanups[0])
        // The base is taken asynchronously (R20): let an operation through before moving on.
        let first = context.read(source, length: 2)
        first.expectFinished()
        #expect(first.calls == [.done("45")])
        try #require(lseek(file.fd, 8, SEEK_SET) == 8)
        let derived = context.channel(.randomAccess, from: source, cleanup: cleanups[1])
        let fromDerived = context.read(derived, length: 2)
        let fromSource = context.read(source, length: 2)
        fromDerived.expectFinished()
        fromSource.expectFinished()
        #expect(fromDerived.calls == [.done("89")])
        #expect(fromSource.calls == [.done("45")])
        #expect(position(file.fd) == 8)
        source.close()
        derived.close()
        for cleanup in cleanups { cleanup.expectOnce(nil) }
    }

    @Test(
        "R30 R64 a channel made from a closed channel: ECANCELED to its cleanup handler and operations",
        arguments: QueueKind.allCases
    )
    func fromClosedChannel(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, _) = try context.socketPair()
        let sourceCleanup = context.cleanupLog()
        let source = context.channel(.stream, left, cleanup: sourceCleanup)
        source.close()
        let derivedCleanup = context.cleanupLog()
        let derived = context.channel(.stream, from: source, cleanup: derivedCleanup)
        derivedCleanup.expectOnce(.canceled)
        let read = context.read(derived, length: 4)
        read.expectFinished()
        #expect(read.calls == [.failed(.canceled)])
        sourceCleanup.expectOnce(nil)
        derived.close()
    }

    @Test("R30 a channel made from a failed channel gets its error", arguments: QueueKind.allCases)
    func fromFailedChannel(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let sourceCleanup = context.cleanupLog()
        let source = context.channel(.stream, descriptorThatIsNeverOpen(), cleanup: sourceCleanup)
        sourceCleanup.expectOnce(.badFileDescriptor)
        let derivedCleanup = context.cleanupLog()
        let derived = context.channel(.stream, from: source, cleanup: derivedCleanup)
        derivedCleanup.expectOnce(.badFileDescriptor)
        let read = context.read(derived, length: 4)
        read.expectFinished()
        #expect(read.calls == [.failed(.badFileDescriptor)])
        source.close()
        derived.close()
    }

    @Test(
        "R30 a channel made from a path channel opens the path again and cleans up on its own",
        arguments: QueueKind.allCases
    )
    func fromPathChannel(_ queue: QueueKind) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.create("shared", bytes("0123456789"))
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let sourceCleanup = context.cleanupLog()
        let derivedCleanup = context.cleanupLog()
        let source = try context.channel(.randomAccess, path: path, mode: .readOnly, cleanup: sourceCleanup)
        let derived = context.channel(.randomAccess, from: source, cleanup: derivedCleanup)
        let descriptors = Recorder<CInt>()
        let ran = DispatchSemaphore(value: 0)
        for channel in [source, derived] {
            channel.barrier {
                descriptors.append(channel.fileDescriptor)
                ran.signal()
            }
        }
        try #require(wait(ran))
        try #require(wait(ran))
        let fds = descriptors.all
        #expect(fds.count == 2 && fds.allSatisfy { $0 >= 0 } && Set(fds).count == 2, "descriptors: \(fds)")
        let read = context.read(derived, offset: 5, length: 5)
        read.expectFinished()
        #expect(read.calls == [.done("56789")])
        derived.close()
        derivedCleanup.expectOnce(nil)
        #expect(!sourceCleanup.wasCalled)
        let sourceRead = context.read(source, length: 3)
        sourceRead.expectFinished()
        #expect(sourceRead.calls == [.done("012")])
        source.close()
        sourceCleanup.expectOnce(nil)
    }
}
