//===----------------------------------------------------------------------===//
// RingIO — channels: a channel's finished writes, for reuse.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A channel's write operations that finished their life, for reuse: a write scheduled on
/// the ring thread (a handler on the ring, a task on its executor) allocates nothing. Per
/// channel, so an operation's channel and entry never change (they stay `let`s, read with
/// no reference counting); a channel pools at most `capacity`, and lets go of them when it
/// is done (the pooled operations hold it: `_ChannelState.finishIfDone` breaks the cycle).
///
/// Invariant: an operation enters the pool on the ring thread once it is retired (no syscall
/// in flight, out of every lane and list) and its final call has run there, with its data
/// and handler let go of. Others may still hold it for a while — the job that ran its final
/// call, the task that awaited it until its `write` returns, a cancellation handler — so
/// `take` hands out only an operation the pool holds alone (`isKnownUniquelyReferenced`,
/// then an acquiring fence, which orders the last holder's release before the reuse, as the
/// provided buffers do). Ring thread only (it lives in the channel's ring-only state).
internal struct _WriteOperationPool {
    /// Operations kept at most: a connection writes one message at a time, or a few that
    /// leave together (gathered), and each pooled one costs memory while the channel idles.
    static let capacity = 2

    // Two slots rather than an array: no allocation of its own, and no loop.
    private var first: _WriteOperation?
    private var second: _WriteOperation?

    /// How many operations wait for reuse.
    var count: Int { (self.first == nil ? 0 : 1) + (self.second == nil ? 0 : 1) }

    /// An operation no one else refers to, or `nil` (the caller allocates one).
    mutating func take() -> _WriteOperation? {
        if self.first != nil && isKnownUniquelyReferenced(&self.first!) {
            atomicMemoryFence(ordering: .acquiring)
            defer { self.first = nil }
            return self.first
        }
        if self.second != nil && isKnownUniquelyReferenced(&self.second!) {
            atomicMemoryFence(ordering: .acquiring)
            defer { self.second = nil }
            return self.second
        }
        return nil
    }

    /// Keeps `operation` for reuse (see the invariant above), unless the pool is full.
    mutating func give(_ operation: _WriteOperation) {
        if self.first == nil {
            self.first = operation
        } else if self.second == nil {
            self.second = operation
        }
    }

    /// Lets go of every pooled operation.
    mutating func removeAll() {
        self.first = nil
        self.second = nil
    }
}
