//===----------------------------------------------------------------------===//
// RingIO — the engine: state confined to one ring's thread, shared as Sendable.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A box for state that only one ring's thread touches: `Sendable`, so handlers and jobs on
/// that ring can share it, and checked — every access traps off the ring's thread.
///
/// Handlers given a ring as their queue (and tasks on its executor) all run on its thread,
/// one at a time: state they share needs no lock, only a way past Swift's `Sendable` checks
/// that does not give up safety. This is that way (SwiftNIO calls it `NIOLoopBoundBox`):
///
///     let queued = RingBound(0, ring: connection.ring)
///     channel.read(offset: 0, length: .max, queue: connection.ring) { _, data, _ in
///         queued.value += data?.count ?? 0       // on the ring: checked, no lock
///     }
///
/// Make it anywhere; read and write ``value`` on the ring's thread only.
public final class RingBound<Value>: @unchecked Sendable {
    // @unchecked: `storage` is touched only on `ring`'s thread — every access checks so
    // (`precondition`, also in release builds: a race here would be silent corruption).
    /// The ring whose thread may touch the value.
    public let ring: RingLoop
    private var storage: Value

    /// A box holding `value`, for `ring`'s thread. Any thread.
    public init(_ value: Value, ring: RingLoop) {
        self.ring = ring
        self.storage = value
    }

    /// The value.
    ///
    /// - Precondition: The caller runs on ``ring``'s thread.
    public var value: Value {
        get {
            precondition(self.ring.isCurrentThread, "RingBound.value read off its ring's thread")
            return self.storage
        }
        _modify {
            precondition(self.ring.isCurrentThread, "RingBound.value written off its ring's thread")
            yield &self.storage
        }
        set {
            precondition(self.ring.isCurrentThread, "RingBound.value written off its ring's thread")
            self.storage = newValue
        }
    }
}
