//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: a rope is Sendable; copies shared between tasks are read and
// mutated concurrently (copy-on-write of shared tree nodes), and owners are still released
// exactly once. Meant to be run under ThreadSanitizer too.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

@Suite("ByteRope: concurrency")
struct ByteRopeConcurrencyTests {
    @Test("tasks mutate their own copies of a shared tree while others read it")
    func concurrentCopies() async {
        let tracker = LifetimeTracker()
        let model = (0..<6_000).map { UInt8(truncatingIfNeeded: $0 &* 5) }
        let layout = Array(repeating: 3, count: 2_000)
        do {
            let shared = tracker.rope(model, layout: layout)
            await self.shareBetweenTasks(shared, model: model)
            #expect(tracker.live == 2_000)
        }
        #expect(tracker.live == 0, "\(tracker.live) owners leaked")
        #expect(tracker.destroyedCount == 2_000)
    }

    private func shareBetweenTasks(_ shared: ByteRope, model: [UInt8]) async {
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for task in 0..<4 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task))
                    var mine = shared
                    var mineModel = model
                    var ok = true
                    for round in 0..<200 {
                        // Append and prepend: copies the shared path, never writes a shared node.
                        let piece = [UInt8(task), UInt8(truncatingIfNeeded: round)]
                        if round % 2 == 0 {
                            mine.append(ByteRope(copying: piece))
                            mineModel += piece
                        } else {
                            mine = ByteRope(copying: piece) + mine
                            mineModel = piece + mineModel
                        }
                        let lower = rng.int(in: 0..<mineModel.count)
                        let upper = rng.int(in: lower...mineModel.count)
                        let sub = mine.subrange(lower..<upper)
                        ok = ok && sub.count == upper - lower
                        ok = ok && (sub.isEmpty || sub[0] == mineModel[lower])
                        let i = rng.int(in: 0..<model.count)
                        ok = ok && shared[i] == model[i]
                    }
                    mine._validateInvariants()
                    ok = ok && Array(mine) == mineModel && Array(shared) == model
                    return (task, ok)
                }
            }
            var collected: [(Int, Bool)] = []
            for await result in group {
                collected.append(result)
            }
            return collected
        }
        #expect(results.count == 4)
        for (task, ok) in results {
            #expect(ok, "task \(task) saw wrong bytes")
        }
        shared._validateInvariants()
        #expect(Array(shared) == model)
    }
}
