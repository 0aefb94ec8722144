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
public protocol IOQueue: Sendable {
    /// Runs `work` on this queue, asynchronously: never inside the call.
    func enqueue(_ work: @escaping @Sendable () -> Void)
}

extension DispatchQueue: IOQueue {
    /// Runs `work` with `async`.
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.async(execute: work)
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
