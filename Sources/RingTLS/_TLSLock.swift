//===----------------------------------------------------------------------===//
// RingIO — RingTLS: the module's lock, specialized where it is used.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization

/// RingIO's `_Lock` for RingTLS's own state: a `Synchronization.Mutex` with an acquiring load
/// after locking and a releasing store before unlocking, so that ThreadSanitizer sees the order
/// the mutex gives (see `_Lock` in RingIO for why it cannot otherwise).
///
/// A copy rather than RingIO's own: `_Lock` is a `package` declaration, and a package
/// declaration's body is not serialized for the package's other modules — called from here it
/// ran unspecialized, through the generic `Mutex`'s metadata: about 1,400 instructions to make
/// one and 1,600 per `withLock`, every connection (the stream's published state). Declared in
/// this module, it is specialized to each value it holds.
internal struct _TLSLock<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    private let handoff = Atomic<UInt32>(0)

    init(_ initialValue: consuming sending Value) {
        self.mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, under the lock (as `Mutex.withLock`).
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try self.mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            _ = self.handoff.load(ordering: .acquiring)
            defer { self.handoff.store(0, ordering: .releasing) }
            return try body(&value)
        }
    }
}
