//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: randomized sequences of operations checked against a [UInt8]
// model after every step, with copies taken along the way re-checked (value semantics).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

/// A rope and the bytes it must hold.
private struct Modeled {
    var rope: ByteRope
    var model: [UInt8]
}

/// The operations of the randomized test.
private enum Operation: CaseIterable {
    case concat
    case prepend
    case subrange
    case partialSubrange
    case sliceAndRebase
    case appendContentsOf
    case appendRandomLayout
    case selfConcat
    case selfAppend
    case contiguous
    case copying
    case regionRoundTrip
}

private struct RandomRopeTest {
    let seed: UInt64
    var rng: SplitMix64
    var pool: [Modeled]
    /// Copies taken before mutations, with the bytes they had then.
    var snapshots: [(step: Int, value: Modeled)] = []
    let tracker: LifetimeTracker
    /// The tallest tree and the most regions seen: the test must reach real trees.
    var maxHeight = 0
    var maxRegions = 0

    init(seed: UInt64, tracker: LifetimeTracker) {
        self.seed = seed
        self.rng = SplitMix64(seed: seed)
        self.tracker = tracker
        self.pool = []
        for _ in 0..<6 {
            self.pool.append(self.randomRope(maxBytes: 40))
        }
    }

    /// A rope of random bytes in a random layout; its regions are copies, tracked owners,
    /// subranges of a shared region, or array literals.
    mutating func randomRope(maxBytes: Int) -> Modeled {
        let count = self.rng.int(in: 0...maxBytes)
        let bytes = self.rng.bytes(count)
        var rope = ByteRope()
        var start = 0
        while start < count {
            let size = self.rng.int(in: 1...Swift.min(count - start, 1 + self.rng.int(in: 0...9)))
            let part = bytes[start..<start + size]
            switch self.rng.int(in: 0..<3) {
            case 0: rope.append(ByteRope(copying: part))
            case 1: rope.append(self.tracker.rope(copying: part))
            default:
                // A middle piece of a bigger region.
                let padded = ByteRope(copying: [0xAA] + Array(part) + [0xBB])
                rope.append(padded.subrange(1..<1 + size))
            }
            start += size
        }
        return Modeled(rope: rope, model: bytes)
    }

    mutating func randomRange(in count: Int) -> Range<Int> {
        let lower = self.rng.int(in: 0...count)
        let upper = self.rng.int(in: lower...count)
        return lower..<upper
    }

    /// Keeps a copy of `pool[index]` to re-check later; the pool entry is about to change.
    mutating func snapshot(_ index: Int, step: Int) {
        guard self.rng.oneIn(3) else { return }
        let copy = self.pool[index]
        if self.snapshots.count < 48 {
            self.snapshots.append((step, copy))
        } else {
            self.snapshots[self.rng.int(in: 0..<self.snapshots.count)] = (step, copy)
        }
    }

    mutating func step(_ step: Int) {
        // Growing operations are drawn twice as often as shrinking ones, so trees get tall.
        let weighted = Operation.allCases + [.concat, .appendRandomLayout, .selfConcat, .selfAppend, .prepend]
        let operation = weighted[self.rng.int(in: 0..<weighted.count)]
        let target = self.rng.int(in: 0..<self.pool.count)
        let a = self.pool[self.rng.int(in: 0..<self.pool.count)]
        let b = self.pool[self.rng.int(in: 0..<self.pool.count)]
        self.snapshot(target, step: step)
        let context = "seed \(self.seed) step \(step) \(operation)"
        switch operation {
        case .concat:
            self.pool[target] = Modeled(rope: a.rope + b.rope, model: a.model + b.model)
        case .prepend:
            let fresh = self.randomRope(maxBytes: 30)
            self.pool[target].rope = fresh.rope + self.pool[target].rope
            self.pool[target].model = fresh.model + self.pool[target].model
        case .subrange:
            let range = self.randomRange(in: a.model.count)
            self.pool[target] = Modeled(rope: a.rope.subrange(range), model: Array(a.model[range]))
        case .partialSubrange:
            let bound = self.rng.int(in: 0...a.model.count)
            switch self.rng.int(in: 0..<3) {
            case 0: self.pool[target] = Modeled(rope: a.rope.subrange(bound...), model: Array(a.model[bound...]))
            case 1: self.pool[target] = Modeled(rope: a.rope.subrange(..<bound), model: Array(a.model[..<bound]))
            default:
                guard bound > 0 else { return }
                self.pool[target] = Modeled(rope: a.rope.subrange(...(bound - 1)), model: Array(a.model[..<bound]))
            }
        case .sliceAndRebase:
            let range = self.randomRange(in: a.model.count)
            let slice = a.rope[range]
            #expect(slice.startIndex == range.lowerBound, "\(context)")
            self.pool[target] = Modeled(rope: ByteRope(slice), model: Array(a.model[range]))
        case .appendContentsOf:
            let bytes = self.rng.bytes(self.rng.int(in: 0...20))
            let before = self.pool[target].rope.regionCount
            if self.rng.oneIn(2) {
                self.pool[target].rope.append(contentsOf: bytes)
            } else {
                self.pool[target].rope.append(contentsOf: bytes.lazy.map { $0 })
            }
            self.pool[target].model += bytes
            #expect(self.pool[target].rope.regionCount == before + (bytes.isEmpty ? 0 : 1), "\(context)")
        case .appendRandomLayout:
            let fresh = self.randomRope(maxBytes: 60)
            if self.rng.oneIn(2) {
                self.pool[target].rope.append(fresh.rope)
            } else {
                self.pool[target].rope += fresh.rope
            }
            self.pool[target].model += fresh.model
        case .selfConcat:
            self.pool[target] = Modeled(rope: a.rope + a.rope, model: a.model + a.model)
        case .selfAppend:
            self.pool[target].rope.append(self.pool[target].rope)
            self.pool[target].model += self.pool[target].model
        case .contiguous:
            self.pool[target] = Modeled(rope: a.rope.contiguous(), model: a.model)
            #expect(self.pool[target].rope.regionCount <= 1, "\(context)")
        case .copying:
            self.pool[target] = Modeled(rope: ByteRope(copying: a.rope), model: a.model)
        case .regionRoundTrip:
            // Rebuild a rope from its own regions (as one-region ropes): same regions.
            let rebuilt = a.rope.regions.reduce(ByteRope()) { $0 + $1.rope }
            #expect(regionBases(rebuilt) == regionBases(a.rope), "\(context)")
            self.pool[target] = Modeled(rope: rebuilt, model: a.model)
        }
        self.boundSize(target)
        self.check(self.pool[target], context)
    }

    /// Keeps ropes small enough for a fast test: a big rope is cut down to a random window.
    mutating func boundSize(_ index: Int) {
        let entry = self.pool[index]
        guard entry.model.count > 3_000 || entry.rope.regionCount > 600 else { return }
        let length = self.rng.int(in: 0...Swift.min(entry.model.count, 1_500))
        let lower = self.rng.int(in: 0...(entry.model.count - length))
        let range = lower..<lower + length
        self.pool[index] = Modeled(rope: entry.rope.subrange(range), model: Array(entry.model[range]))
    }

    mutating func check(_ entry: Modeled, _ context: String) {
        expectMatchesModel(entry.rope, entry.model, context)
        self.maxHeight = Swift.max(self.maxHeight, entry.rope._treeHeight)
        self.maxRegions = Swift.max(self.maxRegions, entry.rope.regionCount)
        guard !entry.model.isEmpty else {
            #expect(entry.rope == ByteRope(), "\(context)")
            return
        }
        for _ in 0..<4 {
            let i = self.rng.int(in: 0..<entry.model.count)
            #expect(entry.rope[i] == entry.model[i], "\(context) byte \(i)")
        }
        let flat = ByteRope(copying: entry.model)
        #expect(entry.rope == flat, "\(context) ==")
        #expect(entry.rope.hashValue == flat.hashValue, "\(context) hash")
        let range = self.randomRange(in: entry.model.count)
        let needle = Array(entry.model[range])
        #expect(
            entry.rope.firstRange(of: needle) == naiveFirstRange(of: needle, in: entry.model),
            "\(context) firstRange(of: \(range))"
        )
        #expect(
            entry.rope.firstIndex(of: needle.first ?? 0) == entry.model.firstIndex(of: needle.first ?? 0),
            "\(context)"
        )
    }

    func checkSnapshots(_ context: String) {
        for (step, snapshot) in self.snapshots {
            expectMatchesModel(
                snapshot.rope,
                snapshot.model,
                "seed \(self.seed) snapshot of step \(step) at \(context)"
            )
        }
    }
}

@Suite("ByteRope: randomized model test")
struct ByteRopeModelTests {
    @Test(
        "random operations agree with a [UInt8] model; earlier copies never change",
        arguments: [0x0000_0000_0000_0001, 0xC0FF_EE00_1234_5678, 0x0BAD_F00D_DEAD_BEEF, 42] as [UInt64]
    )
    func randomOperations(seed: UInt64) {
        withLifetimeTracking { tracker in
            var test = RandomRopeTest(seed: seed, tracker: tracker)
            for step in 0..<1_500 {
                test.step(step)
                if step % 100 == 99 {
                    test.checkSnapshots("step \(step)")
                }
            }
            test.checkSnapshots("the end")
            #expect(test.maxHeight >= 2, "seed \(seed): the operations never built a tree of height 2")
            print("seed \(seed): max height \(test.maxHeight), max regions \(test.maxRegions)")
            for (index, entry) in test.pool.enumerated() {
                expectMatchesModel(entry.rope, entry.model, "seed \(seed) pool[\(index)] at the end")
            }
        }
    }

    @Test("mutating a copy never changes the original (copy-on-write of shared tree nodes)")
    func copyOnWrite() {
        let seed: UInt64 = 7
        var rng = SplitMix64(seed: seed)
        var rope = ByteRope()
        var model: [UInt8] = []
        var history: [(ByteRope, [UInt8])] = []
        for step in 0..<600 {
            history.append((rope, model))
            let bytes = rng.bytes(rng.int(in: 1...3))
            if rng.oneIn(5) {
                rope = ByteRope(copying: bytes) + rope
                model = bytes + model
            } else {
                rope.append(ByteRope(copying: bytes))
                model += bytes
            }
            if step % 100 == 99 {
                // Mutate an old copy too: it must not disturb the current rope.
                var old = history[rng.int(in: 0..<history.count)]
                old.0.append(rope)
                old.1 += model
                expectMatchesModel(old.0, old.1, "seed \(seed) step \(step): extended old copy")
                expectMatchesModel(rope, model, "seed \(seed) step \(step): current")
            }
        }
        for (index, (copy, bytes)) in history.enumerated() {
            copy._validateInvariants()
            #expect(copy.regionCount <= index)
            #expect(Array(copy) == bytes, "seed \(seed): copy taken at step \(index)")
        }
    }
}
