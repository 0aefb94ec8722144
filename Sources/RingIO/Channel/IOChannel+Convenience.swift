//===----------------------------------------------------------------------===//
// RingIO — channels: one-shot reads and writes of a descriptor (dispatch_read, dispatch_write).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

extension IOChannel {
    /// Reads what is available from `fd`, up to `maxLength` bytes, and calls `handler` once
    /// with all of it (R77–R79): on a pipe or socket, as soon as something was read and the
    /// next read would block; on a file, `maxLength` bytes or up to EOF.
    ///
    /// The descriptor is read as a stream, in order with other channels on it (R81). Unlike
    /// dispatch (R80), the handler runs as soon as this read is done, not when every operation
    /// on the descriptor is (D5).
    ///
    /// - Parameters:
    ///   - fd: An open descriptor; it stays open (close it after `handler` has run).
    ///   - maxLength: The most bytes to read.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(data, error)`: everything read (empty at EOF), and `nil` or the
    ///     error (with the data read before it; empty for a bad descriptor).
    public static func read(
        fromFileDescriptor fd: CInt,
        maxLength: Int,
        queue: some IOQueue,
        handler: @escaping @Sendable (ByteRope, Errno?) -> Void
    ) {
        precondition(maxLength >= 0, "IOChannel.read(maxLength: \(maxLength)) must not be negative")
        let channel = IOChannel(kind: .stream, fileDescriptor: fd, queue: queue) { _ in }
        channel.setLimit(lowWater: .max)
        let collected = _Collected()
        _ = channel.state.scheduleRead(offset: 0, length: maxLength, queue: queue, mode: .untilWouldBlock) {
            done,
            data,
            error in
            if let data { collected.append(data) }
            if done { handler(collected.take(), error) }
        }
        channel.close()
    }

    /// Writes all of `data` to `fd` and calls `handler` once (R77): `(nil, nil)` on success,
    /// `(remaining, error)` on failure, `(nil, error)` when `fd` is not usable at all.
    ///
    /// In order with other channels' writes on the descriptor (R81); the handler runs when
    /// this write is done (D5).
    public static func write(
        toFileDescriptor fd: CInt,
        data: ByteRope,
        queue: some IOQueue,
        handler: @escaping @Sendable (ByteRope?, Errno?) -> Void
    ) {
        let channel = IOChannel(kind: .stream, fileDescriptor: fd, queue: queue) { _ in }
        if let error = channel.state.creationFailure {
            queue.enqueue { handler(nil, error) }
            return
        }
        channel.write(offset: 0, data: data, queue: queue) { done, remaining, error in
            if done { handler(error == nil ? nil : remaining, error) }
        }
        channel.close()
    }
}

/// The data of one operation's handler calls, gathered. Handler calls of one operation never
/// overlap and follow each other in order (R32), but may run on different threads of a
/// concurrent queue: the lock orders them.
internal final class _Collected: Sendable {
    private let rope = _Lock(ByteRope())

    func append(_ data: ByteRope) {
        self.rope.withLock { $0.append(data) }
    }

    func take() -> ByteRope {
        self.rope.withLock { rope in
            let taken = rope
            rope = ByteRope()
            return taken
        }
    }
}
