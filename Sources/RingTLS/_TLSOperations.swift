//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a stream's pending operations and how their results are delivered.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO

/// The handler of a read: `(done, data, error)`.
typealias _TLSReadHandler = @Sendable (_ done: Bool, _ data: ByteRope?, _ error: TLSError?) -> Void
/// The handler of a write: `(done, remaining, error)`.
typealias _TLSWriteHandler = @Sendable (_ done: Bool, _ remaining: ByteRope?, _ error: TLSError?) -> Void
/// The handler of a file send: `(done, remaining, error)`.
typealias _TLSFileSendHandler = @Sendable (_ done: Bool, _ remaining: Int, _ error: TLSError?) -> Void
/// The handler of the handshake.
typealias _TLSHandshakeHandler = @Sendable (Result<TLSStream.Handshake, TLSError>) -> Void

/// One read, waiting for plaintext. Ring thread only.
///
/// `@exclusivity(unchecked)` on its state, as on the core's (see `_TLSCore`): touched on the
/// ring thread only, by short accesses that never overlap.
internal final class _TLSRead {
    enum Target {
        /// `read(length:queue:handler:)`: calls as data arrives, up to `remaining` bytes.
        case handler(any IOQueue, _TLSReadHandler)
        /// One `next()` of `reads()`: everything at hand as one rope, `nil` at the end.
        case next
    }

    let target: Target
    /// A `next()`'s continuation: set by the awaiting task before the read is scheduled.
    @exclusivity(unchecked) var continuation: UnsafeContinuation<Result<ByteRope?, TLSError>, Never>?
    /// Bytes still to deliver (handler reads).
    @exclusivity(unchecked) var remaining: Int
    /// The final call was made (or the continuation resumed).
    @exclusivity(unchecked) var finished = false
    /// Its task was cancelled before the read reached the ring.
    @exclusivity(unchecked) var cancelRequested = false

    init(target: Target, length: Int) {
        self.target = target
        self.remaining = length
    }
}

// @unchecked: made (and its continuation set) on any thread, then touched only on the
// stream's ring thread, which it reaches through `ring.enqueue` (or on the ring itself); the
// cancellation of a `next()` reaches it the same way.
extension _TLSRead: @unchecked Sendable {}

/// One write: plaintext to encrypt, then to see acknowledged by the channel. Ring thread only;
/// `@exclusivity(unchecked)` on its state for the reason `_TLSRead` gives.
internal final class _TLSWrite {
    enum Target {
        case handler(any IOQueue, _TLSWriteHandler)
        case awaiting(UnsafeContinuation<Result<Void, TLSError>, Never>)
        /// A file send's part: the handler gets the bytes not sent.
        case fileSend(any IOQueue, _TLSFileSendHandler)
    }

    enum Source {
        /// Bytes to encrypt (or, with the kernel encrypting, to write as they are).
        case bytes(ByteRope)
        /// `length` bytes of `file` from `offset`.
        case file(descriptor: CInt, offset: Int64, length: Int)
    }

    let target: Target
    let source: Source
    /// Bytes of the source taken (encrypted, or handed to the channel) so far.
    @exclusivity(unchecked) var taken = 0
    /// The output position the last of them ends at: the write is done when the channel has
    /// written up to there.
    @exclusivity(unchecked) var completesAt: UInt64 = 0
    /// A file read (user space) is in flight for this write.
    @exclusivity(unchecked) var reading = false
    @exclusivity(unchecked) var finished = false
    /// A file send's failure, reported once what was sent of it is written.
    @exclusivity(unchecked) var error: TLSError?
    /// A file send's random-access channel on the file (user space), its descriptor's
    /// position when it was made, and the bytes of the read in flight.
    @exclusivity(unchecked) var fileChannel: IOChannel?
    @exclusivity(unchecked) var fileBase: Int64 = 0
    @exclusivity(unchecked) var fileData = ByteRope()

    init(target: Target, source: Source) {
        self.target = target
        self.source = source
    }

    var count: Int {
        switch self.source {
        case .bytes(let data): return data.count
        case .file(_, _, let length): return length
        }
    }

    /// What is left of a byte source, for a handler's `remaining`.
    var remainingBytes: ByteRope? {
        guard case .bytes(let data) = self.source, self.taken < data.count else { return nil }
        return self.taken == 0 ? data : data.subrange(self.taken..<data.count)
    }
}

// @unchecked: as `_TLSRead`.
extension _TLSWrite: @unchecked Sendable {}

/// Someone waiting for the handshake.
internal enum _TLSHandshakeWaiter {
    case handler(any IOQueue, _TLSHandshakeHandler)
    case awaiting(UnsafeContinuation<Result<TLSStream.Handshake, TLSError>, Never>)
}

/// A handler call, made after the stream's state is settled (never in the middle of a
/// change, and never inside the call that scheduled the operation).
internal enum _TLSDelivery {
    case read(any IOQueue, _TLSReadHandler, done: Bool, data: ByteRope?, error: TLSError?)
    case write(any IOQueue, _TLSWriteHandler, remaining: ByteRope?, error: TLSError?)
    case fileSend(any IOQueue, _TLSFileSendHandler, remaining: Int, error: TLSError?)
    case handshake(any IOQueue, _TLSHandshakeHandler, Result<TLSStream.Handshake, TLSError>)

    var queue: any IOQueue {
        switch self {
        case .read(let queue, _, _, _, _): return queue
        case .write(let queue, _, _, _): return queue
        case .fileSend(let queue, _, _, _): return queue
        case .handshake(let queue, _, _): return queue
        }
    }

    func run() {
        switch self {
        case .read(_, let handler, let done, let data, let error): handler(done, data, error)
        case .write(_, let handler, let remaining, let error): handler(true, remaining, error)
        case .fileSend(_, let handler, let remaining, let error): handler(true, remaining, error)
        case .handshake(_, let handler, let result): handler(result)
        }
    }
}

extension _TLSDelivery: Sendable {}
