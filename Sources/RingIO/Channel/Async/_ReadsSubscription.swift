//===----------------------------------------------------------------------===//
// RingIO — channels: one iteration of reads().
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// One iteration of `reads()`: its read operation and the stream that buffers what the
/// operation delivers until the iteration takes it. Dropping it (the iterator is gone) stops
/// the read.
internal final class _ReadsSubscription: Sendable {
    private let operation: _ReadOperation
    private let stream: _AsyncReadStream

    /// - Parameter idleTimeout: Nanoseconds without an arrival that end the read with
    ///   ETIMEDOUT; 0: none. Its watch starts with ``started()``.
    init(_ operation: _ReadOperation, core: _RingCore, idleTimeout: Int64) {
        self.operation = operation
        self.stream = _AsyncReadStream(
            idleWatch: idleTimeout > 0 ? _IdleWatch(core: core, timeout: idleTimeout, operation: operation) : nil
        )
        operation.awaiting = .stream(self.stream)
    }

    /// The operation is scheduled: its idle timeout, if any, starts.
    func started() {
        self.stream.idleWatch?.start()
    }

    deinit {
        if !self.stream.hasEnded { self.operation.requestCancel() }
    }

    /// The next rope, `nil` at the end, or the read's error: at once when one is buffered,
    /// else when the operation delivers it.
    ///
    /// A waiting task is resumed by the first delivery, and takes what is buffered when it
    /// runs: the deliveries of the rest of that completion batch have joined the first by then
    /// (up to the high water mark), as they join one call of a handler.
    func next(isolation: isolated (any Actor)? = #isolation) async -> Result<ByteRope?, Errno> {
        var result = self.stream.take()
        while result == nil {
            // `isolation` passed on and captured, as in `_ChannelState.await`.
            await _withCancellationHandler(
                isolation: isolation,
                operation: {
                    await withUnsafeContinuation(isolation: isolation) { continuation in
                        self.stream.wait(continuation)
                    }
                },
                onCancel: {
                    self.operation.requestCancel()
                }
            )
            result = self.stream.take()
        }
        // The iteration has the bytes: they no longer hold the receive back.
        if case .success(let rope?) = result, !rope.isEmpty { self.operation.release(rope.count) }
        return result!
    }
}
