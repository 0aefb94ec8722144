//===----------------------------------------------------------------------===//
// RingIO — channels: what every read shares.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What every read shares: the bytes read and not yet delivered, and the delivery rules.
///
///     accept(data) ─> pending ─┬─ total == length ──> (true, rest)                   R34
///                              ├─ pending ≥ low ────> (false, ≤ high) …              R48
///                              ├─ EOF ──────────────> (false, rest) (true, empty)    R35
///                              └─ error / stop ─────> (false, rest) (true, nil, e)   R36
internal class _ReadOperation: _Operation, @unchecked Sendable {
    /// How many bytes to read (`Int.max`: until EOF).
    let length: Int
    /// Bytes read and not yet delivered.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var pending = ByteRope()
    /// Bytes read so far, delivered or not.
    var received = 0

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        length: Int,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.length = length
        super.init(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: offset,
            lane: _Operation.lane(kind: channel.kind, entry: entry, isRead: true),
            handler: handler
        )
    }

    var remaining: Int { self.length - self.received }

    override var mergesDeliveries: Bool { true }

    override var completesAtOnce: Bool { self.length == 0 }

    override func completeAtOnce() {
        self.entry.core.assertOnRingThread()
        self.isFinished = true
        self.deliver(done: true, data: ByteRope(), error: nil)  // R37
    }

    override func finalCall(error: Errno) {
        self.entry.core.assertOnRingThread()
        self.flushPending()
        self.deliver(done: true, data: nil, error: error)
    }

    /// Adds bytes read; delivers per the water marks or finishes when `length` is reached.
    final func accept(_ data: consuming ByteRope) {
        self.entry.core.assertOnRingThread()
        guard !data.isEmpty else { return }
        self.received += data.count
        self.pending.append(data)
        if self.received >= self.length {
            // Length satisfied: one final call with the rest (R34), in high-water pieces.
            while self.pending.count > self.highWater { self.deliverPiece() }
            self.deliver(done: true, data: exchange(&self.pending, with: ByteRope()), error: nil)
            self.finish()
        } else {
            self.deliverReady()
        }
    }

    /// Delivers while the pending bytes reach the low water mark (R48).
    final func deliverReady() {
        while !self.pending.isEmpty && self.pending.count >= self.lowWater {
            self.deliverPiece()
        }
    }

    /// Delivers everything pending, in high-water pieces.
    final func flushPending() {
        while !self.pending.isEmpty { self.deliverPiece() }
    }

    private func deliverPiece() {
        let count = min(self.pending.count, self.highWater)
        if count == self.pending.count {
            self.deliver(done: false, data: exchange(&self.pending, with: ByteRope()), error: nil)
        } else {
            let piece = self.pending.subrange(0..<count)
            self.pending = self.pending.subrange(count...)
            self.deliver(done: false, data: piece, error: nil)
        }
    }

    /// EOF: the pending bytes, then `(true, empty, nil)` (R35).
    final func endOfFile() {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        self.flushPending()
        self.deliver(done: true, data: ByteRope(), error: nil)
        self.finish()
    }

    override func tick() {
        self.entry.core.assertOnRingThread()
        if self.strictInterval {
            // R52: deliver what is pending, even nothing.
            if self.pending.isEmpty {
                self.deliver(done: false, data: ByteRope(), error: nil)
            } else {
                self.flushPending()
            }
        } else {
            self.deliverReady()
        }
    }
}
