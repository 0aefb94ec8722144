//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: every region layout up to 7 bytes, compared against a [UInt8]
// model (swift-collections' `withEveryDeque` idea), under a lifetime tracker.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

/// The contents every layout is tried with: distinct bytes (so a byte taken from the wrong
/// place shows), and a run of repeated bytes (so searches meet overlapping prefixes).
private func contents(count: Int) -> [(name: String, bytes: [UInt8])] {
    [
        ("distinct", (0..<count).map { UInt8(0x30 + $0) }),
        ("aabaaab", Array(Array("aabaaab".utf8).prefix(count))),
    ]
}

/// The ways of building a rope of a given layout: each must give exactly those regions.
private enum Construction: CaseIterable, CustomStringConvertible {
    case appendLoop
    case appendContentsOf
    case leftFold
    case rightFold
    case balanced
    case trackedOwners
    case subrangeOfInline
    case subrangeOfTree

    var description: String {
        switch self {
        case .appendLoop: return "append(_:) loop"
        case .appendContentsOf: return "append(contentsOf:) loop"
        case .leftFold: return "left fold of +"
        case .rightFold: return "right fold of +"
        case .balanced: return "balanced +"
        case .trackedOwners: return "unsafeOwner regions"
        case .subrangeOfInline: return "subrange of a slightly bigger rope"
        case .subrangeOfTree: return "subrange of a deep tree"
        }
    }

    func build(_ bytes: [UInt8], layout: [Int], tracker: LifetimeTracker) -> ByteRope {
        let parts = pieces(of: bytes, layout: layout)
        switch self {
        case .appendLoop:
            return makeRope(bytes, layout: layout)
        case .appendContentsOf:
            var rope = ByteRope()
            var start = 0
            for size in layout {
                rope.append(contentsOf: bytes[start..<start + size])
                start += size
            }
            return rope
        case .leftFold:
            return parts.reduce(ByteRope(), +)
        case .rightFold:
            return parts.reversed().reduce(ByteRope()) { $1 + $0 }
        case .balanced:
            return balancedConcat(parts[...])
        case .trackedOwners:
            return tracker.rope(bytes, layout: layout)
        case .subrangeOfInline:
            return makeRopeBySubrange(bytes, layout: layout, extraRegions: 0)
        case .subrangeOfTree:
            return makeRopeBySubrange(bytes, layout: layout, extraRegions: 20)
        }
    }
}

@Suite("ByteRope: every layout up to 7 bytes")
struct ByteRopeLayoutTests {
    @Test("every operation agrees with the [UInt8] model", arguments: 0...7)
    func everyLayout(byteCount: Int) {
        withLifetimeTracking { tracker in
            for (name, model) in contents(count: byteCount) {
                var built: [(context: String, rope: ByteRope)] = []
                for layout in compositions(of: byteCount) {
                    for construction in Construction.allCases {
                        let context = "\(name) layout \(layout) by \(construction)"
                        let rope = construction.build(model, layout: layout, tracker: tracker)
                        self.check(rope, model: model, layout: layout, context)
                        built.append((context, rope))
                    }
                }
                self.checkEquality(built, model: model)
            }
        }
    }

    /// Every layout built by subranges of a layout of more bytes: each subrange's regions are
    /// the clipped layout, with the same memory.
    @Test("subranges of every layout keep the clipped regions", arguments: 0...7)
    func subrangesOfEveryLayout(byteCount: Int) {
        let model = (0..<byteCount).map { UInt8(0x61 + $0) }
        for layout in compositions(of: byteCount) {
            let rope = makeRope(model, layout: layout)
            let bases = regionBases(rope)
            let starts = boundaries(of: layout)
            for lower in 0...byteCount {
                for upper in lower...byteCount {
                    let context = "layout \(layout) subrange \(lower)..<\(upper)"
                    let sub = rope.subrange(lower..<upper)
                    let clipped = clippedLayout(layout, to: lower..<upper)
                    self.check(sub, model: Array(model[lower..<upper]), layout: clipped, context)
                    // Each region of the subrange lies in the original region's memory.
                    var expectedBases: [UnsafeRawPointer] = []
                    for (index, start) in starts.dropLast().enumerated() {
                        let end = starts[index + 1]
                        if Swift.max(start, lower) < Swift.min(end, upper) {
                            expectedBases.append(bases[index] + (Swift.max(start, lower) - start))
                        }
                    }
                    #expect(regionBases(sub) == expectedBases, "\(context)")
                    // The Slice view agrees and keeps the base's indices.
                    let slice = rope[lower..<upper]
                    #expect(slice.startIndex == lower, "\(context)")
                    #expect(Array(slice) == Array(model[lower..<upper]), "\(context)")
                    #expect(ByteRope(slice) == sub, "\(context)")
                }
            }
        }
    }

    // MARK: Checks

    private func check(_ rope: ByteRope, model: [UInt8], layout: [Int], _ context: String) {
        expectMatchesModel(rope, model, context)
        #expect(rope.regionCount == layout.count, "\(context)")
        #expect(regionSizes(rope) == layout, "\(context)")
        let starts = boundaries(of: layout)

        // Indexing and iteration.
        for i in model.indices {
            #expect(rope[i] == model[i], "\(context) [\(i)]")
        }
        #expect(Array(rope.reversed()) == Array(model.reversed()), "\(context)")

        // Regions by subscript, by iteration, by offset, by apply.
        let regions = rope.regions
        var applied: [(Int, [UInt8])] = []
        let finished = rope.apply { offset, bytes in
            applied.append((offset, Array(bytes)))
            return true
        }
        #expect(finished, "\(context)")
        #expect(applied.map(\.0) == Array(starts.dropLast()), "\(context)")
        for (index, region) in regions.enumerated() {
            #expect(regions[index].range == region.range, "\(context) region \(index)")
            #expect(baseAddress(of: regions[index]) == baseAddress(of: region), "\(context) region \(index)")
            #expect(region.range == starts[index]..<starts[index + 1], "\(context) region \(index)")
            #expect(region.withUnsafeBytes { Array($0) } == Array(model[region.range]), "\(context)")
            #expect(applied[index].1 == Array(model[region.range]), "\(context) apply \(index)")
        }
        for stop in layout.indices {
            var calls = 0
            let completed = rope.apply { _, _ in
                calls += 1
                return calls <= stop
            }
            #expect(!completed && calls == stop + 1, "\(context) apply stopping at \(stop)")
        }
        for offset in model.indices {
            let index = starts.lastIndex { $0 <= offset }!
            let (region, start) = rope.region(containing: offset)
            #expect(start == starts[index], "\(context) region(containing: \(offset))")
            #expect(
                regionBases(region) == [baseAddress(of: regions[index])],
                "\(context) region(containing: \(offset))"
            )
        }

        // Contiguous views.
        #expect(rope.withUnsafeBytes { Array($0) } == model, "\(context)")
        #expect(rope.contiguous() == rope, "\(context)")
        #expect(rope.contiguous().regionCount == Swift.min(layout.count, 1), "\(context)")
        #expect((rope.withContiguousStorageIfAvailable { Array($0) } != nil) == (layout.count <= 1), "\(context)")

        // Every subrange, and copyBytes of every range.
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: model.count + 1, alignment: 1)
        defer { destination.deallocate() }
        for lower in 0...model.count {
            for upper in lower...model.count {
                let sub = rope.subrange(lower..<upper)
                sub._validateInvariants()
                #expect(Array(sub) == Array(model[lower..<upper]), "\(context) subrange \(lower)..<\(upper)")
                #expect(regionSizes(sub) == clippedLayout(layout, to: lower..<upper), "\(context) \(lower)..<\(upper)")
                destination.initializeMemory(as: UInt8.self, repeating: 0xEE)
                let copied = rope.copyBytes(to: destination, from: lower..<upper)
                #expect(copied == upper - lower, "\(context) copyBytes \(lower)..<\(upper)")
                #expect(Array(destination[..<copied]) == Array(model[lower..<upper]), "\(context)")
                #expect(destination[copied...].allSatisfy { $0 == 0xEE }, "\(context)")
            }
        }

        // Searching: every byte value present and one absent; every substring as a needle,
        // plus needles that are absent, longer than the rope, or empty.
        for byte in Set(model).union([0x00]) {
            #expect(rope.firstIndex(of: byte) == model.firstIndex(of: byte), "\(context) firstIndex(of: \(byte))")
        }
        var needles: [[UInt8]] = [[], [0x00], model + [0x61], Array("aab".utf8), Array("ba".utf8), Array("aaa".utf8)]
        for lower in 0..<model.count {
            for upper in (lower + 1)...model.count {
                needles.append(Array(model[lower..<upper]))
            }
        }
        for needle in needles {
            #expect(
                rope.firstRange(of: needle) == naiveFirstRange(of: needle, in: model),
                "\(context) firstRange(of: \(needle))"
            )
        }
    }

    /// All ropes of the same bytes are equal and hash alike, whatever their layout; changing
    /// any one byte makes them differ.
    private func checkEquality(_ built: [(context: String, rope: ByteRope)], model: [UInt8]) {
        guard let reference = built.first else { return }
        let referenceHash = reference.rope.hashValue
        for (context, rope) in built {
            #expect(rope == reference.rope, "\(context) == \(reference.context)")
            #expect(rope.hashValue == referenceHash, "\(context) hash")
        }
        // Pairwise across layouts (each construction's first representative).
        let layouts = stride(from: 0, to: built.count, by: Construction.allCases.count).map { built[$0] }
        for a in layouts {
            for b in layouts {
                #expect(a.rope == b.rope, "\(a.context) == \(b.context)")
            }
        }
        for position in model.indices {
            var changed = model
            changed[position] &+= 1
            for (context, rope) in layouts {
                let other = makeRope(changed, layout: regionSizes(rope).reversed())
                #expect(rope != other, "\(context) != with byte \(position) changed")
            }
        }
        #expect(reference.rope != ByteRope(copying: model + [0]), "one byte longer")
    }
}
