//===----------------------------------------------------------------------===//
// RingIO — the engine: the counters of one ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The ring's counters, updated with relaxed atomics.
internal final class _Counters: Sendable {
    let submissions = Atomic<UInt64>(0)
    let completions = Atomic<UInt64>(0)
    let batches = Atomic<UInt64>(0)
    let wakeUps = Atomic<UInt64>(0)
    let staleCompletions = Atomic<UInt64>(0)
    let discardedJobs = Atomic<UInt64>(0)
    let buffersOnLoan = Atomic<UInt64>(0)
    let fallbackReceives = Atomic<UInt64>(0)
    let longestTurnNanoseconds = Atomic<UInt64>(0)
    let slowTurns = Atomic<UInt64>(0)

    func snapshot() -> RingLoop.Counters {
        RingLoop.Counters(
            submissions: self.submissions.load(ordering: .relaxed),
            completions: self.completions.load(ordering: .relaxed),
            batches: self.batches.load(ordering: .relaxed),
            wakeUps: self.wakeUps.load(ordering: .relaxed),
            staleCompletions: self.staleCompletions.load(ordering: .relaxed),
            discardedJobs: self.discardedJobs.load(ordering: .relaxed),
            buffersOnLoan: self.buffersOnLoan.load(ordering: .relaxed),
            fallbackReceives: self.fallbackReceives.load(ordering: .relaxed),
            longestTurn: .nanoseconds(Int64(self.longestTurnNanoseconds.load(ordering: .relaxed))),
            slowTurns: self.slowTurns.load(ordering: .relaxed)
        )
    }
}
