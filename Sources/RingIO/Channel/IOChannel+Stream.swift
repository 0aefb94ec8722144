//===----------------------------------------------------------------------===//
// RingIO — IOChannel: reads and writes without an offset, for stream channels.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension IOChannel {
    /// Reads up to `length` bytes (`Int.max`, the default: until EOF) and calls `handler` as
    /// data arrives, per the low and high water marks: the stream channel's spelling of
    /// ``read(offset:length:queue:handler:)``, which a stream channel reads at its current
    /// position whatever the offset. On a random-access channel this reads at offset 0 (the
    /// channel's base position): pass an offset there.
    ///
    ///     channel.read(queue: ring) { done, data, error in … }
    ///
    /// - Parameters:
    ///   - length: How many bytes; 0 completes at once with `(true, empty, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, data, error)`; see the type's documentation.
    /// - Precondition: `length >= 0`.
    @inlinable
    public func read(
        length: Int = .max,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ data: ByteRope?, _ error: Errno?) -> Void
    ) {
        self.read(offset: 0, length: length, queue: queue, handler: handler)
    }

    /// Writes `data` and calls `handler` as it goes out: the stream channel's spelling of
    /// ``write(offset:data:queue:handler:)``, which a stream channel writes in order whatever
    /// the offset. On a random-access channel this writes at offset 0 (the channel's base
    /// position): pass an offset there.
    ///
    ///     channel.write(data, queue: ring) { done, remaining, error in … }
    ///
    /// - Parameters:
    ///   - data: What to write; empty completes at once with `(true, nil, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, remaining, error)`: intermediate calls carry the data not yet
    ///     written; the final one `nil` on success, or the remaining data with the error.
    @inlinable
    public func write(
        _ data: ByteRope,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: ByteRope?, _ error: Errno?) -> Void
    ) {
        self.write(offset: 0, data: data, queue: queue, handler: handler)
    }
}
