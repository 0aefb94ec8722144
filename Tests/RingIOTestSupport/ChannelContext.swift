//===----------------------------------------------------------------------===//
// RingIO — test support: where a channel test runs its handlers (a ring and a queue), and the
// stream endpoints channels read from.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Where handlers run

/// The two kinds of queue a channel test runs its handlers on.
package enum QueueKind: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    /// A serial `DispatchQueue`; the channel's I/O runs on a ring of the test's own.
    case dispatch
    /// The ring itself (handlers on the ring thread, no hop); the channel is given no `ring:`.
    case ring

    package var testDescription: String { self.rawValue }
}

/// A ring and a queue for one test; `shutdown()` at the end (defer). Descriptors made through
/// it (``pipe()``, ``socketPair()``, ``endpoint(_:)``) are closed by `shutdown()` after the
/// ring: no channel can act on them any more, and no other test's descriptor gets the number
/// while one does. A test that closes one of them itself does it with ``close(_:)``.
package final class ChannelContext: Sendable {
    package let kind: QueueKind
    package let ring: RingLoop
    package let dispatchQueue: DispatchQueue
    private let label: String
    /// The descriptors to close at `shutdown()`, and the endpoints to close then.
    private let owned = _Lock<(descriptors: [CInt], endpoints: [StreamEndpoint])>(([], []))

    package init(_ kind: QueueKind) throws {
        self.kind = kind
        self.ring = try RingLoop()
        self.label = "channel-test-\(UInt64.random(in: 0...UInt64.max))"
        self.dispatchQueue = DispatchQueue(label: self.label)
        self.dispatchQueue.setSpecific(key: queueLabelKey, value: self.label)
    }

    /// The queue handlers are given to.
    package var queue: any IOQueue {
        switch self.kind {
        case .dispatch: self.dispatchQueue
        case .ring: self.ring
        }
    }

    /// Whether the caller runs on `queue`.
    package var isOnQueue: Bool {
        switch self.kind {
        case .dispatch: currentDispatchQueueLabel() == self.label
        case .ring: self.ring.isCurrentThread
        }
    }

    /// The ring a channel is given: the context's own with a DispatchQueue; none on the ring,
    /// which is then the channel's queue and ring both.
    private var channelRing: RingLoop? {
        self.kind == .dispatch ? self.ring : nil
    }

    /// A channel over `fd`, with handlers on `queue`.
    package func channel(_ kind: IOChannel.Kind, _ fd: CInt, cleanup: CleanupLog) -> IOChannel {
        IOChannel(
            kind: kind,
            fileDescriptor: fd,
            queue: self.queue,
            ring: self.channelRing,
            cleanupHandler: cleanup.handler
        )
    }

    /// A channel over `fd`, with handlers on `queue`, and the log of its cleanup handler: how
    /// most channel tests begin.
    package func channelWithCleanup(_ kind: IOChannel.Kind, _ fd: CInt) -> (IOChannel, CleanupLog) {
        let cleanup = self.cleanupLog()
        return (self.channel(kind, fd, cleanup: cleanup), cleanup)
    }

    /// Two channels, over `first`'s descriptor and `second`'s, with handlers on `queue`, and
    /// their cleanup logs in that order.
    package func channels(
        _ first: (IOChannel.Kind, CInt),
        _ second: (IOChannel.Kind, CInt)
    ) -> (IOChannel, IOChannel, [CleanupLog]) {
        let cleanups = [self.cleanupLog(), self.cleanupLog()]
        return (
            self.channel(first.0, first.1, cleanup: cleanups[0]),
            self.channel(second.0, second.1, cleanup: cleanups[1]),
            cleanups
        )
    }

    /// A path channel, with handlers on `queue`.
    package func channel(
        _ kind: IOChannel.Kind,
        path: String,
        mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions? = nil,
        cleanup: CleanupLog
    ) throws(Errno) -> IOChannel {
        try IOChannel(
            kind: kind,
            path: FilePath(path),
            mode: mode,
            options: options,
            permissions: permissions,
            queue: self.queue,
            ring: self.channelRing,
            cleanupHandler: cleanup.handler
        )
    }

    /// A path channel, with handlers on `queue`, and the log of its cleanup handler.
    package func channelWithCleanup(
        _ kind: IOChannel.Kind,
        path: String,
        mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions? = nil
    ) throws(Errno) -> (IOChannel, CleanupLog) {
        let cleanup = self.cleanupLog()
        let channel = try self.channel(
            kind,
            path: path,
            mode: mode,
            options: options,
            permissions: permissions,
            cleanup: cleanup
        )
        return (channel, cleanup)
    }

    /// A channel made from `channel`, with handlers on `queue`.
    package func channel(_ kind: IOChannel.Kind, from channel: IOChannel, cleanup: CleanupLog) -> IOChannel {
        IOChannel(kind: kind, channel: channel, queue: self.queue, cleanupHandler: cleanup.handler)
    }

    /// A recorder that checks its handler runs on `queue`.
    package func log() -> OperationLog { OperationLog(onQueue: { self.isOnQueue }) }

    /// A cleanup recorder that checks its handler runs on `queue`.
    package func cleanupLog() -> CleanupLog { CleanupLog(onQueue: { self.isOnQueue }, barrier: self.handlerBarrier) }

    /// A recorder of a convenience (one-shot) handler that checks it runs on `queue`. One-shot
    /// calls with handlers on a DispatchQueue run on the shared group's rings: its barrier
    /// passes through those too.
    package func convenienceLog() -> ConvenienceLog {
        ConvenienceLog(onQueue: { self.isOnQueue }, barrier: self.sharedGroupBarrier)
    }

    /// As ``handlerBarrier``, through the shared group's rings as well when the queue is a
    /// DispatchQueue: for what the convenience calls (and other objects made without a ring)
    /// run there.
    package var sharedGroupBarrier: HandlerBarrier {
        switch self.kind {
        case .ring: self.handlerBarrier
        case .dispatch:
            HandlerBarrier(rings: [self.ring] + ((try? RingLoopGroup.shared)?.rings ?? []), queue: self.dispatchQueue)
        }
    }

    /// The ring barrier and the queue handlers run on: what recorders pass before they check
    /// that no further call came.
    package var handlerBarrier: HandlerBarrier {
        HandlerBarrier(ring: self.ring, queue: self.kind == .dispatch ? self.dispatchQueue : nil)
    }

    /// Submits a read and records its handler calls.
    @discardableResult
    package func read(
        _ channel: IOChannel,
        offset: Int64 = 0,
        length: Int,
        into log: OperationLog? = nil
    ) -> OperationLog {
        let log = log ?? self.log()
        log.submitting { channel.read(offset: offset, length: length, queue: self.queue, handler: log.readHandler) }
        return log
    }

    /// Submits a write and records its handler calls.
    @discardableResult
    package func write(
        _ channel: IOChannel,
        offset: Int64 = 0,
        _ data: ByteRope,
        into log: OperationLog? = nil
    ) -> OperationLog {
        let log = log ?? self.log()
        log.submitting { channel.write(offset: offset, data: data, queue: self.queue, handler: log.writeHandler) }
        return log
    }

    /// Submits a read of `length` bytes and a write of `data` to `channel`, and expects each to
    /// end in one call with `error`: the read with no data, the write handing `data` back (a
    /// channel that failed, or was closed).
    package func expectReadAndWriteFail(
        _ channel: IOChannel,
        with error: Errno,
        length: Int,
        data: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let read = self.read(channel, length: length)
        let write = self.write(channel, rope(data))
        read.expectFinished(sourceLocation: sourceLocation)
        write.expectFinished(sourceLocation: sourceLocation)
        #expect(read.calls == [.failed(error)], sourceLocation: sourceLocation)
        #expect(write.calls == [.failed(error, remaining: data)], sourceLocation: sourceLocation)
    }

    /// Waits until every job enqueued on the ring and on the dispatch queue so far has run.
    package func drain() {
        let ringDone = DispatchSemaphore(value: 0)
        self.ring.enqueue { ringDone.signal() }
        _ = wait(ringDone)
        self.dispatchQueue.sync {}
    }

    package func shutdown() {
        self.ring.shutdown()
        let (descriptors, endpoints) = self.owned.withLock { owned in
            defer { owned = ([], []) }
            return owned
        }
        for fd in descriptors { Glibc.close(fd) }
        for endpoint in endpoints { endpoint.close() }
    }

    /// A pipe (both ends close-on-exec), closed at `shutdown()`.
    package func pipe() throws -> (read: CInt, write: CInt) {
        let ends = try makePipe()
        self.owned.withLock { $0.descriptors += [ends.read, ends.write] }
        return ends
    }

    /// A connected pair of Unix stream sockets, closed at `shutdown()`.
    package func socketPair() throws -> (CInt, CInt) {
        let ends = try makeSocketPair()
        self.owned.withLock { $0.descriptors += [ends.0, ends.1] }
        return ends
    }

    /// A stream endpoint of `kind`, closed at `shutdown()`.
    package func endpoint(_ kind: EndpointKind) throws -> StreamEndpoint {
        let endpoint = try StreamEndpoint(kind)
        self.owned.withLock { $0.endpoints.append(endpoint) }
        return endpoint
    }

    /// Closes `fd`, one of the context's, now rather than at `shutdown()`.
    package func close(_ fd: CInt) {
        let owned = self.owned.withLock { owned in
            guard let index = owned.descriptors.firstIndex(of: fd) else { return false }
            owned.descriptors.remove(at: index)
            return true
        }
        precondition(owned, "ChannelContext.close(\(fd)): not a descriptor of the context, or closed already")
        Glibc.close(fd)
    }
}

/// Tags each context's dispatch queue, so a handler can tell whether it runs there.
package let queueLabelKey = DispatchSpecificKey<String>()

/// The tag of the context's dispatch queue the caller runs on, if any.
package func currentDispatchQueueLabel() -> String? {
    DispatchQueue.getSpecific(key: queueLabelKey)
}

// MARK: - Stream endpoints

/// The kinds of stream descriptor a channel test reads from.
package enum EndpointKind: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    case pipe
    case socketPair
    case tcp
    case fifo
    case terminal

    package var testDescription: String { self.rawValue }

    /// The kinds whose writer can end the stream with an end of file (a terminal's reader gets
    /// EIO at hang-up instead).
    package static let endingWithEOF: [EndpointKind] = [.pipe, .socketPair, .tcp, .fifo]
    /// The kinds random access refuses (R62).
    package static let unseekable: [EndpointKind] = [.pipe, .socketPair, .tcp, .fifo]
}

/// A stream for a channel to read: the channel gets `local`, the test writes to `remote`.
package final class StreamEndpoint: Sendable {
    package let kind: EndpointKind
    package let local: CInt
    package let remote: CInt
    private let directory: TemporaryDirectory?
    private let remoteClosed = Atomic<Bool>(false)

    package init(_ kind: EndpointKind) throws {
        self.kind = kind
        var directory: TemporaryDirectory?
        switch kind {
        case .pipe: (self.local, self.remote) = try makePipe()
        case .socketPair: (self.local, self.remote) = try makeSocketPair()
        case .tcp: (self.local, self.remote) = try makeTCPPair()
        case .fifo:
            let made = try TemporaryDirectory()
            directory = made
            (self.local, self.remote) = try made.fifo()
        case .terminal:
            let (master, terminal) = try makeTerminal()
            (self.local, self.remote) = (terminal, master)
        }
        self.directory = directory
    }

    /// Writes `bytes` to the remote side.
    package func send(_ bytes: [UInt8]) { writeAll(self.remote, bytes) }

    /// Closes the remote side once: the channel's reads then see the end of the stream.
    package func closeRemote() {
        if !self.remoteClosed.exchange(true, ordering: .relaxed) { Glibc.close(self.remote) }
    }

    /// Closes both sides.
    package func close() {
        self.closeRemote()
        Glibc.close(self.local)
    }
}

/// The capacity of the pipe `fd` belongs to (F_GETPIPE_SZ).
package func pipeCapacity(_ fd: CInt) -> Int {
    Int(fcntl(fd, 1_032))  // F_GETPIPE_SZ, hidden without _GNU_SOURCE
}

/// Waits (bounded) until the pipe `reader` belongs to is full.
package func waitUntilFull(pipe reader: CInt) -> Bool {
    let capacity = pipeCapacity(reader)
    return eventually { pendingBytes(reader) >= capacity }
}

// MARK: - A channel on a socket pair, handlers on the ring

/// A stream channel on one end (`local`) of a socket pair, with its handlers on `ring`; the test
/// plays the peer (`peer`). ``finish(sourceLocation:)`` at the end.
package final class RingSocketPair: Sendable {
    package let ring: RingLoop
    package let local: CInt
    package let peer: CInt
    package let channel: IOChannel
    package let cleanup: CleanupLog
    private let ownsRing: Bool

    /// A pair on `ring`; on a ring of its own, shut down by ``finish(sourceLocation:)`` (or when
    /// the pair goes), when `ring` is nil. A test that does not call `finish` closes the
    /// descriptors itself.
    package init(on ring: RingLoop? = nil) throws {
        self.ownsRing = ring == nil
        let ring = try ring ?? RingLoop()
        self.ring = ring
        (self.local, self.peer) = try makeSocketPair()
        self.cleanup = CleanupLog(onQueue: { ring.isCurrentThread }, barrier: HandlerBarrier(ring: ring))
        self.channel = IOChannel(
            kind: .stream,
            fileDescriptor: self.local,
            queue: ring,
            cleanupHandler: self.cleanup.handler
        )
    }

    // The descriptors are not closed here: a test that closes one itself (to end the stream)
    // would have its number closed again, under whatever another test opened with it; and one
    // whose channel was not cleaned up must stay open while the channel may act on it.
    deinit {
        if self.ownsRing { self.ring.shutdown() }
    }

    /// Closes the channel, checks that its cleanup handler ran once, with no error, then closes
    /// both descriptors — not before the cleanup: a channel still on the descriptor would act on
    /// whatever another test opens with the same number.
    package func finish(sourceLocation: SourceLocation = #_sourceLocation) {
        self.channel.close()
        self.cleanup.expectOnce(nil, sourceLocation: sourceLocation)
        self.finished()
    }

    /// As ``finish(sourceLocation:)``, without blocking a thread.
    package func finish(sourceLocation: SourceLocation = #_sourceLocation) async {
        self.channel.close()
        await self.cleanup.expectOnceAsync(nil, sourceLocation: sourceLocation)
        self.finished()
    }

    private func finished() {
        guard self.cleanup.wasCalled else { return }
        close(self.local)
        close(self.peer)
        if self.ownsRing { self.ring.shutdown() }
    }
}
