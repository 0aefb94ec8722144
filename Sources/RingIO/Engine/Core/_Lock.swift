//===----------------------------------------------------------------------===//
// RingIO — the library's lock: Synchronization.Mutex, made visible to ThreadSanitizer.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization

/// A `Synchronization.Mutex` with one more atomic, which lets ThreadSanitizer see what the
/// mutex orders.
///
/// TSan follows `Mutex`'s uncontended path (an atomic compare-exchange inlined into the
/// caller), not its contended one: on Linux a waiter sleeps in `futex(FUTEX_LOCK_PI)` and the
/// kernel hands it the lock when the owner calls `futex(FUTEX_UNLOCK_PI)`, inside
/// libswiftSynchronization, which is not instrumented. TSan then sees nothing order two
/// critical sections and reports their accesses as races (a false positive; the small
/// program `Tools/sanitizers/mutex-handoff.swift` shows it). `_Lock` adds an acquiring load
/// right after locking and a releasing store right before unlocking, both inside the critical
/// section, so the previous holder's store happens before the next holder's load — the order
/// the mutex guarantees, in a form TSan follows.
///
/// The lock itself is the `Mutex`, unchanged; the extra load and store are plain moves on
/// x86-64 (an `ldar`/`stlr` pair on arm64) and touch a word no other thread uses outside the
/// lock.
package struct _Lock<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    private let handoff = Atomic<UInt32>(0)

    package init(_ initialValue: consuming sending Value) {
        self.mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, under the lock (as `Mutex.withLock`).
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try self.mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            _ = self.handoff.load(ordering: .acquiring)
            defer { self.handoff.store(0, ordering: .releasing) }
            return try body(&value)
        }
    }
}
