//===----------------------------------------------------------------------===//
// RingIO — the engine: where handlers run.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch

/// Where RingIO runs a handler: a `DispatchQueue`, or a ``RingLoop`` (its own thread, with no
/// hop — the fast path for servers).
///
/// Handlers given to one queue run one at a time, in the order RingIO hands them over.
/// RingIO groups the handlers that one completion batch sends to one `DispatchQueue` into a
/// single `async`.
///
/// The protocol only marks where RingIO may run work; it adds nothing you call to
/// `DispatchQueue`. To run work yourself, use the queue's own API: `async` on a
/// `DispatchQueue`, ``RingLoop/enqueue(_:)`` on a ring.
///
/// A queue is an object (`AnyObject`): it has an identity, the one its handlers are ordered on,
/// and RingIO holds it as a reference — an `any IOQueue` is two words, copied with one retain,
/// on every operation.
public protocol IOQueue: AnyObject, Sendable {
    /// RingIO's entry point: runs `work` on this queue, asynchronously (never inside the
    /// call). Underscored because it is RingIO's, not part of the API you call; it stays
    /// out of the documentation and of code completion on `DispatchQueue`. `DispatchQueue`
    /// and ``RingLoop`` implement it; another conforming type must run `work` once, later,
    /// one job at a time in order, and never inside the call.
    func _ringIOEnqueue(_ work: @escaping @Sendable () -> Void)
}

extension DispatchQueue: IOQueue {
    /// RingIO's entry point (see ``IOQueue``): `async`.
    public func _ringIOEnqueue(_ work: @escaping @Sendable () -> Void) {
        self.async(execute: work)
    }
}

extension IOQueue {
    /// Runs `work` on this queue, asynchronously: RingIO's own spelling of the requirement,
    /// internal so that no public `enqueue` appears on every `DispatchQueue`.
    @inline(__always)
    internal func enqueue(_ work: @escaping @Sendable () -> Void) {
        self._ringIOEnqueue(work)
    }
}

extension IOQueue {
    /// This queue as a ring, when it is one. A comparison of metatypes (`RingLoop` is final),
    /// where `as? RingLoop` on an existential is a dynamic cast through the runtime — about
    /// 200 instructions, once per write on the hot path.
    @inline(__always)
    internal var asRing: RingLoop? {
        guard Self.self == RingLoop.self else { return nil }
        // Self is RingLoop: the value is that reference (an `Unmanaged` has its layout).
        return unsafeBitCast(self, to: Unmanaged<RingLoop>.self).takeUnretainedValue()
    }
}
