//===----------------------------------------------------------------------===//
// RingIO — the engine: where handlers run.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch

/// Where RingIO runs a handler: a ``RingLoop`` (its own thread, with no hop — the fast path
/// for servers), a `DispatchQueue`, or a queue of your own (``IOCustomQueue``).
///
/// Handlers given to one queue run one at a time, in the order RingIO hands them over.
/// RingIO groups the handlers that one completion batch sends to one `DispatchQueue` into a
/// single `async`.
///
/// The protocol only marks where RingIO may run work: it has no requirement, and adds nothing
/// to `DispatchQueue`. To run work yourself, use the queue's own API: `async` on a
/// `DispatchQueue`, ``RingLoop/enqueue(_:)`` on a ring.
///
/// A queue is an object (`AnyObject`): it has an identity, the one its handlers are ordered on,
/// and RingIO holds it as a reference — an `any IOQueue` is two words, copied with one retain,
/// on every operation.
///
/// - Important: Conform a type of your own to ``IOCustomQueue``, which says how to run work
///   on it; a type that conforms to `IOQueue` alone stops the program when RingIO hands it a
///   handler.
public protocol IOQueue: AnyObject, Sendable {}

/// A queue of your own for RingIO's handlers: a serial executor of another library, a
/// thread with a run loop.
///
///     final class Worker: IOCustomQueue {
///         func enqueue(_ work: @escaping @Sendable () -> Void) { … }   // later, in order
///     }
///     channel.read(length: .max, queue: worker) { done, data, error in … }
public protocol IOCustomQueue: IOQueue {
    /// Runs `work` on this queue, later: never inside this call, once, and one job at a time
    /// in the order they were enqueued.
    func enqueue(_ work: @escaping @Sendable () -> Void)
}

extension DispatchQueue: IOQueue {}

extension IOQueue {
    /// Runs `work` on this queue, asynchronously: the ring's inbox, the `DispatchQueue`'s
    /// `async`, or the custom queue's ``IOCustomQueue/enqueue(_:)``.
    @inline(__always)
    internal func enqueue(_ work: @escaping @Sendable () -> Void) {
        if let ring = self.asRing {
            ring.core.enqueue(work)
        } else if let queue = self.asDispatchQueue {
            queue.async(execute: work)
        } else {
            self.enqueueCustom(work)
        }
    }

    /// This queue as a `DispatchQueue`, when it is one: a comparison of metatypes.
    @inline(__always)
    internal var asDispatchQueue: DispatchQueue? {
        guard Self.self == DispatchQueue.self else { return nil }
        return unsafeBitCast(self, to: Unmanaged<DispatchQueue>.self).takeUnretainedValue()
    }

    @inline(never)
    private func enqueueCustom(_ work: @escaping @Sendable () -> Void) {
        guard let custom = self as? any IOCustomQueue else {
            preconditionFailure("RingIO: \(Self.self) is an IOQueue but no IOCustomQueue: it cannot run handlers")
        }
        custom.enqueue(work)
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

extension IOQueue {
    /// ``enqueue(_:)``, for the package's other modules (RingTLS delivers its handlers with it).
    package func _enqueue(_ work: @escaping @Sendable () -> Void) {
        self.enqueue(work)
    }
}
