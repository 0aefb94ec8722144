//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: large ropes, to exercise the B-tree (splits, concatenation of
// trees of different heights, subranges deep inside), checked against a model.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

/// A model of a rope with many regions: its bytes and its region sizes.
///
/// The regions are 1…4-byte subranges of one shared backing rope, so building 100 000 of
/// them costs no allocation per region.
private struct BigModel {
    private(set) var bytes: [UInt8] = []
    private(set) var layout: [Int] = []
    /// The start offset of each region, plus the total at the end.
    private(set) var starts: [Int] = [0]

    init() {}

    init(bytes: [UInt8], layout: [Int]) {
        self.bytes = bytes
        self.layout = layout
        self.starts = boundaries(of: layout)
    }

    static func + (lhs: BigModel, rhs: BigModel) -> BigModel {
        var result = lhs
        result.append(rhs)
        return result
    }

    mutating func append(_ other: BigModel) {
        self.bytes += other.bytes
        self.layout += other.layout
        let shift = self.starts.removeLast()
        self.starts += other.starts.map { $0 + shift }
    }

    mutating func append(_ piece: ArraySlice<UInt8>) {
        self.bytes += piece
        self.layout.append(piece.count)
        self.starts.append(self.bytes.count)
    }

    /// The model of the subrange `range`: the regions it overlaps, trimmed at the ends
    /// (found by binary search, so that this stays cheap for 100 000 regions).
    func subrange(_ range: Range<Int>) -> BigModel {
        guard !range.isEmpty else { return BigModel() }
        let first = self.regionIndex(containing: range.lowerBound)
        let last = self.regionIndex(containing: range.upperBound - 1)
        var layout = Array(self.layout[first...last])
        if first == last {
            layout = [range.count]
        } else {
            layout[0] = self.starts[first + 1] - range.lowerBound
            layout[layout.count - 1] = range.upperBound - self.starts[last]
        }
        return BigModel(bytes: Array(self.bytes[range]), layout: layout)
    }

    /// The index of the region holding byte `offset`.
    func regionIndex(containing offset: Int) -> Int {
        var low = 0
        var high = self.layout.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if self.starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    static let backingBytes: [UInt8] = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) }
    static let backing = ByteRope(copying: backingBytes)

    /// The next region: `size` bytes of the backing rope from a position derived from `index`.
    static func piece(_ index: Int, size: Int) -> (rope: ByteRope, bytes: ArraySlice<UInt8>) {
        let start = (index &* 37) % (backingBytes.count - 4)
        return (backing.subrange(start..<start + size), backingBytes[start..<start + size])
    }
}

/// The smallest and largest height a valid tree of `regions` regions can have: leaves hold
/// 8…16 regions and inner nodes 8…16 children, the root 1…16 entries (2…16 when inner). So
/// `regions <= 16^(height + 1)`, and `regions >= 2 · 8^height` for `height >= 1`.
private func heightBounds(regions: Int) -> ClosedRange<Int> {
    var lower = 0
    var capacity = 16
    while capacity < regions {
        lower += 1
        capacity *= 16
    }
    var upper = 0
    var minimum = 16  // 2 · 8^1
    while minimum <= regions {
        upper += 1
        minimum *= 8
    }
    return lower...Swift.max(upper, lower)
}

/// Spot-checks `rope` against the model: invariants, counts, the region sizes, and the bytes
/// at the ends, around region boundaries and at `samples` pseudo-random offsets.
private func spotCheck(
    _ rope: ByteRope,
    _ model: BigModel,
    samples: Int = 200,
    seed: UInt64 = 1,
    _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    rope._validateInvariants()
    #expect(rope.count == model.bytes.count, "\(context) count", sourceLocation: sourceLocation)
    #expect(rope.regionCount == model.layout.count, "\(context) regionCount", sourceLocation: sourceLocation)
    #expect(
        heightBounds(regions: model.layout.count).contains(rope._treeHeight),
        "\(context) height \(rope._treeHeight) for \(model.layout.count) regions",
        sourceLocation: sourceLocation
    )
    // Every region size for ropes of moderate size; the first and last hundred for huge ones.
    if model.layout.count <= 5_000 {
        #expect(regionSizes(rope) == model.layout, "\(context) region sizes", sourceLocation: sourceLocation)
    } else {
        let firstSizes = rope.regions.prefix(100).map(\.count)
        let lastSizes = rope.regions.suffix(100).map(\.count)
        #expect(firstSizes == Array(model.layout.prefix(100)), "\(context) sizes", sourceLocation: sourceLocation)
        #expect(lastSizes == Array(model.layout.suffix(100)), "\(context) sizes", sourceLocation: sourceLocation)
    }
    guard !model.bytes.isEmpty else { return }
    var rng = SplitMix64(seed: seed)
    var offsets = [0, model.bytes.count - 1, model.bytes.count / 2]
    for _ in 0..<samples {
        offsets.append(rng.int(in: 0..<model.bytes.count))
    }
    for offset in offsets where rope[offset] != model.bytes[offset] {
        Issue.record(
            "\(context): byte \(offset) is \(rope[offset]), model \(model.bytes[offset])",
            sourceLocation: sourceLocation
        )
        return
    }
    // A few region lookups by index and by offset.
    let starts = model.starts
    for _ in 0..<20 {
        let index = rng.int(in: 0..<model.layout.count)
        let region = rope.regions[index]
        #expect(
            region.range == starts[index]..<starts[index + 1],
            "\(context) regions[\(index)]",
            sourceLocation: sourceLocation
        )
        let (found, start) = rope.region(containing: starts[index + 1] - 1)
        #expect(start == starts[index], "\(context) region(containing:)", sourceLocation: sourceLocation)
        #expect(
            regionBases(found) == [baseAddress(of: region)],
            "\(context) region(containing:)",
            sourceLocation: sourceLocation
        )
    }
}

/// Builds a rope of `regions` regions by appending, and its model.
private func buildByAppending(regions: Int, from first: Int = 0) -> (ByteRope, BigModel) {
    var rope = ByteRope()
    var model = BigModel()
    for i in first..<first + regions {
        let (piece, bytes) = BigModel.piece(i, size: 1 + i % 4)
        rope.append(piece)
        model.append(bytes)
    }
    return (rope, model)
}

@Suite("ByteRope: large trees")
struct ByteRopeTreeTests {
    @Test("appending region by region", arguments: [10_000, 100_000])
    func appends(regions: Int) {
        let (rope, model) = buildByAppending(regions: regions)
        spotCheck(rope, model, "\(regions) appends")
        #expect(rope._treeHeight <= 8)
    }

    @Test("the tree stays valid at every size while it grows")
    func validAtEverySize() {
        var rope = ByteRope()
        var model = BigModel()
        for i in 0..<2_000 {
            let (piece, bytes) = BigModel.piece(i, size: 1 + i % 3)
            if i % 2 == 0 {
                rope.append(piece)
                model.append(bytes)
            } else {
                rope = piece + rope
                model = BigModel(bytes: Array(bytes), layout: [bytes.count]) + model
            }
            rope._validateInvariants()
            #expect(rope.count == model.bytes.count)
            if i % 97 == 0 || i < 40 {
                spotCheck(rope, model, samples: 10, "grown to \(i + 1) regions")
            }
        }
        #expect(Array(rope) == model.bytes)
    }

    @Test("prepending region by region (piece + rope)", arguments: [10_000, 30_000])
    func prepends(regions: Int) {
        var rope = ByteRope()
        var pieces: [ArraySlice<UInt8>] = []
        for i in 0..<regions {
            let (piece, bytes) = BigModel.piece(i, size: 1 + i % 4)
            rope = piece + rope
            pieces.append(bytes)
        }
        var model = BigModel()
        for bytes in pieces.reversed() {
            model.append(bytes)
        }
        spotCheck(rope, model, "\(regions) prepends")
        #expect(Array(rope) == model.bytes)
    }

    @Test("prepending trees to trees and appending trees to trees")
    func prependingAndAppendingTrees() {
        // Ropes of 3, 16, 17, 100, 300 and 2 000 regions: one leaf, a full leaf, two levels…
        let sizes = [1, 2, 3, 16, 17, 100, 300, 2_000, 5_000]
        let built = sizes.enumerated().map { index, size in buildByAppending(regions: size, from: index * 7) }
        for (leftIndex, left) in built.enumerated() {
            for (rightIndex, right) in built.enumerated() {
                let context = "\(sizes[leftIndex]) regions + \(sizes[rightIndex]) regions"
                let sum = left.0 + right.0
                let model = left.1 + right.1
                spotCheck(sum, model, samples: 30, context)
                #expect(Array(regionBases(sum).suffix(right.1.layout.count)) == regionBases(right.0), "\(context)")
            }
        }
        // The operands are untouched.
        for (index, (rope, model)) in built.enumerated() {
            spotCheck(rope, model, samples: 30, "operand of \(sizes[index]) regions after all the sums")
        }
    }

    @Test("concatenating two big trees of different heights, both ways")
    func concatenatingBigTrees() {
        let (tall, tallModel) = buildByAppending(regions: 100_000)
        let (short, shortModel) = buildByAppending(regions: 700, from: 5)
        #expect(tall._treeHeight > short._treeHeight + 1)
        let tallThenShort = tall + short
        spotCheck(
            tallThenShort,
            tallModel + shortModel,
            "tall + short"
        )
        let shortThenTall = short + tall
        spotCheck(
            shortThenTall,
            shortModel + tallModel,
            "short + tall"
        )
        let doubled = tall + tall
        spotCheck(
            doubled,
            tallModel + tallModel,
            "tall + tall"
        )
        #expect(doubled._treeHeight <= 8)
        spotCheck(tall, tallModel, "tall after the sums")
        spotCheck(short, shortModel, "short after the sums")
    }

    @Test("many subranges of a big tree, and ropes rebuilt from them")
    func manySubranges() {
        let seed: UInt64 = 0x5EED_0001
        var rng = SplitMix64(seed: seed)
        let (rope, model) = buildByAppending(regions: 100_000)
        let total = model.bytes.count
        var rebuilt = ByteRope()
        var rebuiltModel = BigModel()
        for round in 0..<150 {
            let length: Int
            switch round % 3 {
            case 0: length = rng.int(in: 0...40)
            case 1: length = rng.int(in: 0...5_000)
            default: length = rng.int(in: 0...total)
            }
            let lower = rng.int(in: 0...(total - length))
            let range = lower..<lower + length
            let sub = rope.subrange(range)
            let subModel = model.subrange(range)
            spotCheck(sub, subModel, samples: 20, seed: UInt64(round), "seed \(seed) round \(round) subrange \(range)")
            if round % 10 == 0 {
                #expect(Array(sub) == subModel.bytes, "seed \(seed) round \(round)")
            }
            // A subrange of the subrange.
            if length > 2 {
                let inner = 1..<length - 1
                let subSub = sub.subrange(inner)
                spotCheck(
                    subSub,
                    subModel.subrange(inner),
                    samples: 10,
                    "seed \(seed) round \(round) subrange of subrange"
                )
            }
            if length < 10_000 {
                rebuilt.append(sub)
                rebuiltModel.append(subModel)
            }
        }
        spotCheck(rebuilt, rebuiltModel, "seed \(seed) rebuilt from subranges")
        #expect(Array(rebuilt) == rebuiltModel.bytes)
        spotCheck(rope, model, "the original after the subranges")
    }

    @Test("iteration, search and copy over a deep tree")
    func deepTreeTraversal() {
        let (rope, model) = buildByAppending(regions: 20_000)
        #expect(Array(rope) == model.bytes)
        var iterated = 0
        var mismatch: Int?
        for (offset, byte) in rope.enumerated() {
            if mismatch == nil && byte != model.bytes[offset] { mismatch = offset }
            iterated += 1
        }
        #expect(iterated == model.bytes.count)
        #expect(mismatch == nil)
        var regionsSeen = 0
        var offset = 0
        let finished = rope.apply { regionOffset, bytes in
            defer {
                regionsSeen += 1
                offset += bytes.count
            }
            return regionOffset == offset
        }
        #expect(finished)
        #expect(regionsSeen == model.layout.count)
        #expect(rope.regions.map(\.count) == model.layout)
        // A needle spanning regions near the end, and one that is absent.
        let end = model.bytes.count
        let needle = Array(model.bytes[(end - 9)..<(end - 1)])
        #expect(rope.firstRange(of: needle) == naiveFirstRange(of: needle, in: model.bytes))
        #expect(rope.firstRange(of: model.bytes + [0]) == nil)
        #expect(rope == ByteRope(copying: model.bytes))
        #expect(rope.hashValue == ByteRope(copying: model.bytes).hashValue)
        #expect(rope.contiguous().withUnsafeBytes { Array($0) } == model.bytes)
    }
}
