//===----------------------------------------------------------------------===//
// RingIO — IOChannel: one-shot reads and writes on a descriptor (R77–R81, D5).
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

extension ChannelContext {
    /// A one-shot read of `fd`, recorded.
    func readOnce(_ fd: CInt, maxLength: Int) -> ConvenienceLog {
        let log = self.convenienceLog()
        log.submitting {
            IOChannel.read(fromFileDescriptor: fd, maxLength: maxLength, queue: self.queue, handler: log.readHandler)
        }
        return log
    }

    /// A one-shot write to `fd`, recorded.
    func writeOnce(_ fd: CInt, _ data: ByteRope) -> ConvenienceLog {
        let log = self.convenienceLog()
        log.submitting {
            IOChannel.write(toFileDescriptor: fd, data: data, queue: self.queue, handler: log.writeHandler)
        }
        return log
    }
}

/// A write to a pipe with no reader through the one-shot API: (remaining, EPIPE), no signal.
func writeOnceToPipeWithoutReader(_ queue: QueueKind) throws {
    try #require(sigpipeIsDefault())
    let (reader, writer) = try makePipe()
    defer { close(writer) }
    close(reader)
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let write = context.writeOnce(writer, rope("nobody reads this"))
    write.expectOneCall()
    #expect(write.calls == [HandlerCall(true, "nobody reads this", .brokenPipe)])
}

@Suite("IOChannel: convenience reads and writes (R77–R81, D5)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelConvenienceTests {
    @Test("R77 a one-shot read: one call with everything read; at EOF (empty, nil)", arguments: QueueKind.allCases)
    func readOnce(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        writeAll(writer, bytes("hello"))
        context.close(writer)
        let first = context.readOnce(reader, maxLength: 100)
        first.expectOneCall()
        #expect(first.calls == [HandlerCall(true, "hello")])
        let atEnd = context.readOnce(reader, maxLength: 100)
        atEnd.expectOneCall()
        #expect(atEnd.calls == [HandlerCall(true, [UInt8]())])
    }

    @Test("R77 a one-shot read of a bad descriptor: (empty, EBADF), not nil", arguments: QueueKind.allCases)
    func readOnceBadDescriptor(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let read = context.readOnce(descriptorThatIsNeverOpen(), maxLength: 10)
        read.expectOneCall()
        #expect(read.calls == [HandlerCall(true, [UInt8](), .badFileDescriptor)])
    }

    @Test("R77 a one-shot write: (nil, nil), and the peer gets every byte", arguments: QueueKind.allCases)
    func writeOnce(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try context.socketPair()
        let sent = patternBytes(500_000, seed: 28)
        let received = _Lock<[UInt8]>([])
        let readerDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            received.withLock { $0 = readExactly(right, sent.count) }
            readerDone.signal()
        }
        let write = context.writeOnce(left, fragmentedRope(sent.count, seed: 28, maxRegion: 3_000))
        write.expectOneCall()
        #expect(write.calls == [.written])
        try #require(wait(readerDone))
        expectSameBytes(received.withLock { $0 }, sent)
    }

    @Test("R77 a one-shot write to a bad descriptor: (nil, EBADF)", arguments: QueueKind.allCases)
    func writeOnceBadDescriptor(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let write = context.writeOnce(descriptorThatIsNeverOpen(), rope("data"))
        write.expectOneCall()
        #expect(write.calls == [.failed(.badFileDescriptor)])
    }

    @Test(
        "R78 on a pipe a one-shot read returns what is available, without waiting for maxLength",
        arguments: QueueKind.allCases
    )
    func readWhatIsAvailable(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        writeAll(writer, bytes("some"))
        let read = context.readOnce(reader, maxLength: 1_000)
        read.expectOneCall()
        #expect(read.calls == [HandlerCall(true, "some")])
    }

    @Test(
        "R78 R79 on a regular file a one-shot read takes maxLength or to EOF, from the file position",
        arguments: QueueKind.allCases
    )
    func readOnceFile(_ queue: QueueKind) throws {
        let contents = patternBytes(300_000, seed: 29)
        let file = try makeFile(contents)
        try #require(lseek(file.fd, 4, SEEK_SET) == 4)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let first = context.readOnce(file.fd, maxLength: 200_000)
        first.expectOneCall()
        #expect(first.calls.first?.error == nil)
        expectSameBytes(first.calls.first?.bytes ?? [], Array(contents[4..<200_004]))
        #expect(position(file.fd) == 200_004)
        let rest = context.readOnce(file.fd, maxLength: 1_048_576)
        rest.expectOneCall()
        expectSameBytes(rest.calls.first?.bytes ?? [], Array(contents[200_004...]))
        #expect(position(file.fd) == 300_000)
    }

    @Test("R79 a one-shot write to a regular file goes to the file position", arguments: QueueKind.allCases)
    func writeOnceFile(_ queue: QueueKind) throws {
        let file = try makeFile(bytes("0123456789"))
        try #require(lseek(file.fd, 3, SEEK_SET) == 3)
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let write = context.writeOnce(file.fd, rope("abc"))
        write.expectOneCall()
        #expect(write.calls == [.written])
        #expect(contentsOfFile(file.path) == bytes("012abc6789"))
        #expect(position(file.fd) == 6)
    }

    @Test(
        "D5 a one-shot handler runs when its own read completes, not when the descriptor goes idle",
        arguments: QueueKind.allCases
    )
    func handlerNotDeferred(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        // A channel stays open on the descriptor the whole time.
        let (channel, cleanup) = context.channelWithCleanup(.stream, reader)
        let first = context.readOnce(reader, maxLength: 100)
        let second = context.readOnce(reader, maxLength: 100)
        writeAll(writer, bytes("one"))
        first.expectOneCall()
        #expect(first.calls == [HandlerCall(true, "one")])
        #expect(!second.wasCalled)
        writeAll(writer, bytes("two"))
        second.expectOneCall()
        #expect(second.calls == [HandlerCall(true, "two")])
        #expect(!cleanup.wasCalled)
        channel.close()
        cleanup.expectOnce(nil)
    }

    @Test("R81 one-shot writes on one descriptor are performed in submission order", arguments: QueueKind.allCases)
    func writesInOrder(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        var expected: [UInt8] = []
        var writes: [ConvenienceLog] = []
        for index in 0..<320 {
            let piece = patternBytes(32, seed: index * 5)
            expected += piece
            writes.append(context.writeOnce(writer, ByteRope(copying: piece)))
        }
        let received = readExactly(reader, expected.count)
        for write in writes { _ = write.wait() }
        context.sharedGroupBarrier.pass()
        for write in writes {
            write.expectOneCall(passingBarrier: false)
            #expect(write.calls == [.written])
        }
        expectSameBytes(received, expected)
    }
}
