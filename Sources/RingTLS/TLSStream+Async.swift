//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a TLS stream for Swift concurrency.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import SystemPackage

// How an await completes: the operation is the handler form's, with a continuation in place
// of the handler; the stream resumes it from its ring thread in the turn the outcome is known.
// A task that prefers the ring (`RingLoop.taskExecutor`, as `IOListener.serve` gives each
// connection) then runs on there at once, with no hop; from another executor it is one hop
// each way.

extension TLSStream {
    /// Waits for the handshake and returns what it agreed on.
    ///
    ///     let handshake = try await stream.handshake()
    ///     print(handshake.protocolVersion, handshake.applicationProtocol ?? "no ALPN")
    ///
    /// - Throws: The handshake's error (``TLSError/Code/handshakeFailed``,
    ///   ``TLSError/Code/certificateVerificationFailed``, ``TLSError/Code/handshakeTimedOut``…);
    ///   ``TLSError/Code/canceled`` when the task is cancelled — which also stops the stream
    ///   (as ``close(flags:)`` with ``CloseFlags/stop``).
    public func handshake(isolation: isolated (any Actor)? = #isolation) async throws(TLSError) -> Handshake {
        let core = self.core
        return try await _withCancellationHandler(
            isolation: isolation,
            operation: {
                await withUnsafeContinuation(isolation: isolation) { continuation in
                    core.perform { $0.waitForHandshake(.awaiting(continuation)) }
                }
            },
            onCancel: {
                core.perform { $0.close(stop: true) }
            }
        ).get()
    }

    /// Encrypts and writes all of `data`; returns when the channel has written its last record.
    ///
    /// - Throws: The stream's error (``TLSError/Code/io`` when the socket failed,
    ///   ``TLSError/Code/closed`` after ``close(flags:)`` or ``closeWrite()``…);
    ///   ``TLSError/Code/canceled`` when the task is cancelled — which stops the stream, since
    ///   a TLS stream cannot drop part of a record.
    public func write(_ data: ByteRope, isolation: isolated (any Actor)? = #isolation) async throws(TLSError) {
        let core = self.core
        try await _withCancellationHandler(
            isolation: isolation,
            operation: {
                await withUnsafeContinuation(isolation: isolation) { continuation in
                    let write = _TLSWrite(target: .awaiting(continuation), source: .bytes(data))
                    core.perform { $0.scheduleWrite(write) }
                }
            },
            onCancel: {
                core.perform { $0.close(stop: true) }
            }
        ).get()
    }

    /// Sends `length` bytes of the file open on `file`, from `offset`, in line with the
    /// stream's writes; see ``write(contentsOf:offset:length:queue:handler:)``.
    ///
    /// - Throws: As ``write(_:isolation:)``; ``TLSError/Code/io`` with `ENODATA` when the file
    ///   ends first.
    /// - Precondition: `offset >= 0`, `length >= 0`.
    public func write(
        contentsOf file: CInt,
        offset: Int64,
        length: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(TLSError) {
        precondition(offset >= 0 && length >= 0, "TLSStream.write(contentsOf:): negative offset or length")
        let core = self.core
        let outcome: Result<Void, TLSError> = await _withCancellationHandler(
            isolation: isolation,
            operation: {
                await withUnsafeContinuation(isolation: isolation) { continuation in
                    let write = _TLSWrite(
                        target: .fileSend(
                            core.ring,
                            { _, _, error in continuation.resume(returning: error.map { .failure($0) } ?? .success(()))
                            }
                        ),
                        source: .file(descriptor: file, offset: offset, length: length)
                    )
                    core.perform { $0.scheduleWrite(write) }
                }
            },
            onCancel: {
                core.perform { $0.close(stop: true) }
            }
        )
        try outcome.get()
    }

    /// The plaintext as it arrives: an `AsyncSequence` of ropes that ends at the peer's
    /// `close_notify` and throws the stream's error.
    ///
    ///     for try await data in stream.reads() {
    ///         try await stream.write(data)
    ///     }
    ///
    /// Each `next()` returns everything decrypted by then, as one rope (no waiting for more).
    /// A peer that closes its connection without `close_notify` ends the iteration with
    /// ``TLSError/Code/uncleanShutdown`` after its last bytes. Cancelling the iterating task
    /// ends the `next()` waiting with ``TLSError/Code/canceled``; the stream goes on, and what
    /// arrives is kept for the next read. Iterate from one task at a time.
    public func reads() -> Reads {
        Reads(stream: self)
    }

    /// The plaintext of a stream, as an `AsyncSequence`; see ``TLSStream/reads()``.
    public struct Reads: AsyncSequence, Sendable {
        public typealias Element = ByteRope
        public typealias Failure = TLSError

        let stream: TLSStream

        public func makeAsyncIterator() -> Iterator {
            Iterator(stream: self.stream)
        }

        /// Produces the stream's plaintext in order.
        public struct Iterator: AsyncIteratorProtocol {
            /// Plaintext, as a rope: the bytes of one or more decrypted records.
            public typealias Element = ByteRope
            public typealias Failure = TLSError

            /// Held: the stream stays open while it is iterated.
            private let stream: TLSStream
            private var ended = false

            init(stream: TLSStream) {
                self.stream = stream
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(TLSError) -> ByteRope? {
                if self.ended { return nil }
                let core = self.stream.core
                let read = _TLSRead(target: .next, length: .max)
                let outcome: Result<ByteRope?, TLSError> = await _withCancellationHandler(
                    isolation: actor,
                    operation: {
                        await withUnsafeContinuation(isolation: actor) { continuation in
                            // Set before the read reaches the ring (the enqueue orders the two).
                            read.continuation = continuation
                            core.perform { $0.scheduleRead(read) }
                        }
                    },
                    onCancel: {
                        core.perform { $0.cancelRead(read) }
                    }
                )
                switch outcome {
                case .success(let rope?):
                    return rope
                case .success(nil):
                    self.ended = true
                    return nil
                case .failure(let error):
                    if error.code != .canceled { self.ended = true }
                    throw error
                }
            }

            public mutating func next() async throws(TLSError) -> ByteRope? {
                try await self.next(isolation: nil)
            }
        }
    }
}
