//===----------------------------------------------------------------------===//
// RingIO — sanitizers: a ThreadSanitizer false positive (Mutex), reproduced.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// A correct program that ThreadSanitizer reports as a data race: two threads increment a
// counter, every access under a Synchronization.Mutex. Run by check-mutex-false-positive.sh.
//
// Why TSan is wrong here: Mutex's uncontended path is an atomic compare-exchange inlined into
// this (instrumented) code, and TSan sees its acquire and release. A contended lock takes the
// slow path in libswiftSynchronization.so, which is not instrumented: it spins on its own
// compare-exchange, then sleeps in futex(FUTEX_LOCK_PI) and is handed the lock by the kernel
// at the owner's futex(FUTEX_UNLOCK_PI). TSan sees neither acquisition, nothing orders the two
// critical sections for it, and it reports their accesses as a race. With `handoff` — what
// RingIO's `_Lock` (Sources/RingIO/Engine/Core/_Lock.swift) adds inside the critical section: an
// acquiring load after locking, a releasing store before unlocking — it sees the order.
//
//     swiftc -sanitize=thread -O mutex-handoff.swift -o mutex-handoff
//     ./mutex-handoff mutex      # TSan: data race (a false positive); the count is still exact
//     ./mutex-handoff handoff    # no report

import Synchronization

#if canImport(Glibc)
import Glibc
#endif

final class Counter: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock` — which is the point of the test.
    let lock = Mutex<Void>(())
    let handoff = Atomic<UInt32>(0)
    let useHandoff: Bool
    var value = 0

    init(useHandoff: Bool) { self.useHandoff = useHandoff }

    func increment() {
        self.lock.withLock { _ in
            if self.useHandoff { _ = self.handoff.load(ordering: .acquiring) }
            self.value += 1
            if self.useHandoff { self.handoff.store(0, ordering: .releasing) }
        }
    }
}

let mode = CommandLine.arguments.dropFirst().first ?? "mutex"
guard mode == "mutex" || mode == "handoff" else {
    fatalError("usage: mutex-handoff mutex|handoff")
}
let counter = Counter(useHandoff: mode == "handoff")
let threads = 4
let iterations = 200_000

var ids: [pthread_t] = []
for _ in 0..<threads {
    var thread = pthread_t()
    let context = Unmanaged.passRetained(counter).toOpaque()
    let rc = pthread_create(
        &thread,
        nil,
        { context in
            let counter = Unmanaged<Counter>.fromOpaque(context!).takeRetainedValue()
            for _ in 0..<iterations { counter.increment() }
            return nil
        },
        context
    )
    precondition(rc == 0, "pthread_create failed")
    ids.append(thread)
}
for thread in ids { pthread_join(thread, nil) }

let total = counter.lock.withLock { _ in counter.value }
precondition(total == threads * iterations, "lost increments: the lock did not exclude")
print("\(mode): \(total) increments, none lost")
