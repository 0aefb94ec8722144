//===----------------------------------------------------------------------===//
// RingIO — channels: Swift concurrency on the rings (D8).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

// How an await completes. The operation is the channel's own (the one a handler would get);
// instead of handler calls on a queue it resumes the awaiting task from the ring thread, in the
// turn its completion is reaped (`_Operation.awaiting`). A continuation resumed there enqueues
// the task on its executor: when the task prefers this ring (`RingLoop.taskExecutor`) or is
// isolated to an actor on it (`RingLoop.serialExecutor`), that is the ring's own job list — no
// syscall, no other thread — and the task schedules its next operation from the ring thread,
// which submits it directly. Nothing is allocated per await beyond the operation itself (the
// continuation and the cancellation record live in the task's own allocator). From any other
// executor it is one hop each way: the operation through the ring's inbox, the task back to its
// executor.

extension IOChannel {
    /// The data of one read as it arrives, per the channel's water marks: an `AsyncSequence`
    /// of ropes that ends at EOF (or after `length` bytes) and throws the read's error.
    ///
    ///     for try await data in channel.reads() {
    ///         process(data)
    ///     }
    ///
    /// The read starts with the first `next()` and takes the channel's water marks and
    /// interval as they are then (R46). With a strict interval, a tick with nothing pending
    /// produces an empty rope, as it gives a handler empty data (R52).
    ///
    /// When the iterating task runs on the channel's ring (it prefers ``RingLoop/taskExecutor``,
    /// or is isolated to an actor on ``RingLoop/serialExecutor``), a `next()` that waits
    /// resumes on the ring thread in the turn the bytes arrive — no hop, no allocation.
    ///
    /// Cancelling the iterating task stops the read: the bytes already read are still
    /// produced, then the iteration throws `Errno.canceled`. Ending the iteration early
    /// (`break`, or dropping the iterator) stops the read too; bytes the kernel receives after
    /// that are kept for the channel's next read.
    ///
    /// Ropes are buffered until the iteration takes them. On sockets and pipes, a consumer
    /// more than 4 MiB behind pauses the receive (the peer slows down); a file read is not
    /// paused.
    ///
    /// **Idle timeout.** With `idleTimeout`, the iteration throws `Errno.timedOut` (ETIMEDOUT)
    /// once no byte has arrived for that long — from the read's start, or from the last bytes
    /// received — whether or not the iteration is waiting: the way to drop a silent peer.
    ///
    ///     for try await data in connection.channel.reads(idleTimeout: .seconds(60)) { … }
    ///
    /// The read is stopped as by cancellation: the bytes received before are still produced,
    /// and bytes that arrive after it are kept for the channel's next read. The timeout is
    /// measured on the ring, with one timer per iteration that moves only when it fires; it
    /// may end up to a kernel tick (1–10 ms) late.
    ///
    /// - Parameters:
    ///   - offset: For random access, where to read, relative to the channel's base position;
    ///     ignored by stream channels.
    ///   - length: How many bytes at most; `Int.max`: until EOF.
    ///   - idleTimeout: How long the iteration may go without an arrival; `nil`: forever.
    /// - Precondition: `length >= 0`; `idleTimeout`, when given, is positive.
    public func reads(offset: Int64 = 0, length: Int = .max, idleTimeout: Duration? = nil) -> Reads {
        precondition(length >= 0, "IOChannel.reads(length: \(length)) must not be negative")
        var nanoseconds: Int64 = 0
        if let idleTimeout {
            precondition(idleTimeout > .zero, "IOChannel.reads(idleTimeout: \(idleTimeout)) must be positive")
            let (seconds, attoseconds) = idleTimeout.components
            nanoseconds =
                seconds >= Int64.max / 1_000_000_000
                ? Int64.max / 2 : max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        return Reads(channel: self, offset: offset, length: length, idleTimeout: nanoseconds)
    }

    /// Reads `length` bytes, or up to EOF, and returns them.
    ///
    /// On the channel's ring (see ``reads(offset:length:idleTimeout:)``) the task resumes on the ring
    /// thread in the turn the read ends.
    ///
    /// - Throws: The read's error (the bytes read before it are dropped); `Errno.canceled`
    ///   when the task is cancelled (the read is stopped) or the ring has shut down; the
    ///   channel's creation error.
    /// - Precondition: `length >= 0`.
    public func read(
        offset: Int64 = 0,
        length: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(Errno) -> ByteRope {
        precondition(length >= 0, "IOChannel.read(length: \(length)) must not be negative")
        guard let entry = self.state.entry else { throw self.state.creationFailure! }
        let operation = self.state.makeRead(
            entry: entry,
            offset: offset,
            length: length,
            queue: entry.ring,
            mode: .normal,
            handler: _Operation.noHandler
        )
        return try await self.state.await(operation, collecting: true).get()
    }

    /// Writes all of `data`.
    ///
    ///     try await channel.write(data)                  // a stream: at the position
    ///     try await file.write(header, offset: 0)        // random access: at an offset
    ///
    /// On the channel's ring (see ``reads(offset:length:idleTimeout:)``) the write is submitted at once and
    /// the task resumes on the ring thread in the turn it completes.
    ///
    /// - Parameters:
    ///   - data: What to write; empty returns at once.
    ///   - offset: For random access, where to write, relative to the channel's base position;
    ///     ignored by stream channels (as in ``write(offset:data:queue:handler:)``).
    ///   - isolation: The caller's actor, which the call inherits; leave it out.
    /// - Throws: The write's error; `Errno.canceled` when the task is cancelled (the write is
    ///   stopped; part of the data may have been written) or the ring has shut down; the
    ///   channel's creation error.
    public func write(
        _ data: ByteRope,
        offset: Int64 = 0,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(Errno) {
        guard let entry = self.state.entry else { throw self.state.creationFailure! }
        let operation = _WriteOperation.make(
            channel: self.state,
            entry: entry,
            queue: entry.ring,
            offset: offset,
            data: data,
            handler: _Operation.noHandler
        )
        _ = try await self.state.await(operation, collecting: false).get()
    }

    /// Sends `length` bytes of the file open on `file`, from `offset`, to this channel's
    /// socket or pipe without the bytes passing through user memory; see
    /// ``write(contentsOf:offset:length:queue:handler:)-(CInt,_,_,_,_)``. When the task runs on the channel's
    /// ring, it resumes there in the turn the send completes.
    ///
    /// - Throws: The send's error (ENODATA: the file ended first; EPIPE, ECONNRESET: the peer
    ///   is gone); `Errno.canceled` when the task is cancelled (the send is stopped; part of
    ///   the range may have been sent) or the ring has shut down; the channel's creation error.
    /// - Precondition: `offset >= 0`, `length >= 0`, and `offset + length` does not overflow.
    public func write(
        contentsOf file: CInt,
        offset: Int64,
        length: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(Errno) {
        Self.checkFileRange(offset: offset, length: length)
        guard let entry = self.state.entry else { throw self.state.creationFailure! }
        let operation = self.state.makeFileSend(
            entry: entry,
            file: file,
            offset: offset,
            length: length,
            queue: entry.ring,
            progress: nil,
            handler: _Operation.noHandler
        )
        _ = try await self.state.await(operation, collecting: false).get()
    }

    /// Sends `length` bytes of the file of the random-access channel `file`, from `offset`
    /// (from its base), to this channel's socket or pipe without the bytes passing through
    /// user memory; see ``write(contentsOf:offset:length:queue:handler:)-(IOChannel,_,_,_,_)``.
    ///
    /// - Throws: As ``write(contentsOf:offset:length:isolation:)-(CInt,_,_,_)``;
    ///   ECANCELED also when `file` was closed first; `file`'s creation, open or EBADF error.
    /// - Precondition: `file` is a random-access channel; `offset >= 0`, `length >= 0`, and
    ///   `offset + length` does not overflow.
    public func write(
        contentsOf file: IOChannel,
        offset: Int64,
        length: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(Errno) {
        Self.checkFileRange(offset: offset, length: length)
        precondition(
            file.kind == .randomAccess,
            "IOChannel.write(contentsOf:): the source must be a random-access channel"
        )
        guard let entry = self.state.entry else { throw self.state.creationFailure! }
        let (start, overflow) = file.state.base.addingReportingOverflow(offset)
        let operation = self.state.makeFileSend(
            entry: entry,
            file: nil,
            offset: overflow ? 0 : start,
            length: length,
            queue: entry.ring,
            progress: nil,
            handler: _Operation.noHandler
        )
        Self.lendDescriptor(of: file, to: operation, failing: overflow ? .invalidArgument : nil)
        _ = try await self.state.await(operation, collecting: false).get()
    }

    /// The data of one read, as an `AsyncSequence`; see
    /// ``IOChannel/reads(offset:length:idleTimeout:)``.
    public struct Reads: AsyncSequence, Sendable {
        public typealias Element = ByteRope
        public typealias Failure = Errno

        let channel: IOChannel
        let offset: Int64
        let length: Int
        /// Nanoseconds; 0: none.
        let idleTimeout: Int64

        public func makeAsyncIterator() -> Iterator {
            Iterator(channel: self.channel, offset: self.offset, length: self.length, idleTimeout: self.idleTimeout)
        }

        /// Produces the read's data in order.
        public struct Iterator: AsyncIteratorProtocol {
            /// One delivery of the read: a rope of the bytes it carried.
            public typealias Element = ByteRope
            public typealias Failure = Errno

            private let channel: IOChannel
            private let offset: Int64
            private let length: Int
            private let idleTimeout: Int64
            private var subscription: _ReadsSubscription?
            /// The end was produced (`nil` or an error): every later `next()` returns `nil`.
            private var ended = false

            init(channel: IOChannel, offset: Int64, length: Int, idleTimeout: Int64) {
                self.channel = channel
                self.offset = offset
                self.length = length
                self.idleTimeout = idleTimeout
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(Errno) -> ByteRope? {
                if self.ended { return nil }
                let subscription: _ReadsSubscription
                if let existing = self.subscription {
                    subscription = existing
                } else {
                    let state = self.channel.state
                    guard let entry = state.entry else {
                        self.ended = true
                        throw state.creationFailure!
                    }
                    let operation = state.makeRead(
                        entry: entry,
                        offset: self.offset,
                        length: self.length,
                        queue: entry.ring,
                        mode: .normal,
                        handler: _Operation.noHandler
                    )
                    subscription = _ReadsSubscription(operation, core: entry.core, idleTimeout: self.idleTimeout)
                    self.subscription = subscription
                    state.schedule(operation)
                    subscription.started()
                }
                let result = await subscription.next()
                switch result {
                case .success(let rope?):
                    return rope
                case .success(nil):
                    self.ended = true
                    return nil
                case .failure(let error):
                    self.ended = true
                    throw error
                }
            }

            public mutating func next() async throws(Errno) -> ByteRope? {
                try await self.next(isolation: nil)
            }
        }
    }
}

extension IOChannel {
    /// Half-closes the connection: once every write scheduled before it has finished, shuts
    /// down the sending side of the channel's socket; see
    /// ``shutdownOutput(queue:handler:)``.
    ///
    /// - Throws: ENOTSOCK when the descriptor is not a socket, ENOTCONN when it is not
    ///   connected; `Errno.canceled` when the task is cancelled before the shutdown ran, or the
    ///   channel is stopped; the channel's creation error.
    public func shutdownOutput(isolation: isolated (any Actor)? = #isolation) async throws(Errno) {
        guard let entry = self.state.entry else { throw self.state.creationFailure! }
        let operation = _ShutdownOutputOperation(
            channel: self.state,
            entry: entry,
            queue: entry.ring,
            handler: _Operation.noHandler
        )
        _ = try await self.state.await(operation, collecting: false).get()
    }
}

extension _ChannelState {
    /// Schedules `operation` (made for this channel, with no handler) and waits for its final
    /// call: a write's outcome, or a read's bytes to the end when `collecting`.
    internal func await(
        _ operation: _Operation,
        collecting: Bool,
        isolation: isolated (any Actor)? = #isolation
    ) async -> Result<ByteRope, Errno> {
        // `isolation` passed on, and captured: the closures stay on the caller's actor (an
        // actor on the ring schedules from the ring thread, with no hop and no wake-up).
        let scheduled = operation
        return await _withCancellationHandler(
            isolation: isolation,
            operation: {
                await withUnsafeContinuation(isolation: isolation) { continuation in
                    self.park(scheduled, continuation, collecting: collecting)
                }
            },
            onCancel: {
                scheduled.requestCancel()
            }
        )
    }

    /// Hands `operation` its awaiting task and schedules it.
    private func park(
        _ operation: _Operation,
        _ continuation: UnsafeContinuation<Result<ByteRope, Errno>, Never>,
        collecting: Bool
    ) {
        operation.awaiting = collecting ? .collect(continuation) : .write(continuation)
        self.schedule(operation)
    }
}
