//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: every public member, on empty, one-region, two-region and tree
// ropes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

/// The shapes every member is tried on: the four representations of a rope (empty, one
/// region, two regions, a tree) plus a tree with inner nodes.
enum Shape: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case empty
    case oneRegion
    case twoRegions
    case leafTree
    case deepTree

    /// The region sizes.
    var layout: [Int] {
        switch self {
        case .empty: return []
        case .oneRegion: return [5]
        case .twoRegions: return [5, 6]
        case .leafTree: return [3, 1, 4, 1, 5]
        case .deepTree: return (0..<40).map { 1 + $0 % 4 }
        }
    }

    var model: [UInt8] {
        (0..<self.layout.reduce(0, +)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
    }

    var rope: ByteRope { makeRope(self.model, layout: self.layout) }

    var testDescription: String { self.rawValue }
}

// MARK: - Creating

@Suite("ByteRope: creating")
struct ByteRopeCreationTests {
    @Test("init() and .empty are the empty rope")
    func emptyRope() {
        for rope in [ByteRope(), ByteRope.empty] {
            #expect(rope.count == 0)
            #expect(rope.isEmpty)
            #expect(rope.regionCount == 0)
            #expect(rope.startIndex == 0)
            #expect(rope.endIndex == 0)
            #expect(rope.indices == 0..<0)
            #expect(Array(rope) == [])
            #expect(rope.regions.isEmpty)
            var iterator = rope.makeIterator()
            #expect(iterator.next() == nil)
            rope._validateInvariants()
        }
        #expect(ByteRope() == ByteRope.empty)
        #expect(ByteRope().hashValue == ByteRope.empty.hashValue)
    }

    @Test("init(copying:) an array, a String's UTF-8 view and an empty sequence")
    func copyingContiguousSequences() {
        let array: [UInt8] = [1, 2, 3, 250]
        let fromArray = ByteRope(copying: array)
        expectMatchesModel(fromArray, array, "array")
        #expect(fromArray.regionCount == 1)

        let fromString = ByteRope(copying: "héllo, wörld".utf8)
        expectMatchesModel(fromString, Array("héllo, wörld".utf8), "String.utf8")
        #expect(fromString.regionCount == 1)

        let fromEmpty = ByteRope(copying: [UInt8]())
        expectMatchesModel(fromEmpty, [], "empty array")
        #expect(fromEmpty.regionCount == 0)
        #expect(ByteRope(copying: "".utf8).isEmpty)
    }

    @Test("init(copying:) sequences without contiguous storage")
    func copyingNonContiguousSequences() {
        let lazyMapped = (0..<300).lazy.map { UInt8(truncatingIfNeeded: $0 * 3) }
        let rope = ByteRope(copying: lazyMapped)
        expectMatchesModel(rope, Array(lazyMapped), "lazy map")
        #expect(rope.regionCount == 1)

        let stride = ByteRope(copying: Swift.stride(from: UInt8(0), to: 200, by: 5))
        expectMatchesModel(stride, Array(Swift.stride(from: UInt8(0), to: 200, by: 5)), "stride")
        #expect(stride.regionCount == 1)

        // A sequence that is only a Sequence, not a Collection.
        let unfolded = sequence(first: UInt8(1)) { $0 < 64 ? $0 * 2 : nil }
        expectMatchesModel(ByteRope(copying: unfolded), [1, 2, 4, 8, 16, 32, 64], "sequence(first:next:)")
    }

    @Test("init(copying:) another rope copies it into one new region", arguments: Shape.allCases)
    func copyingARope(shape: Shape) {
        let source = shape.rope
        let copy = ByteRope(copying: source)
        expectMatchesModel(copy, shape.model, "copy of \(shape)")
        #expect(copy.regionCount == (shape.model.isEmpty ? 0 : 1))
        #expect(copy == source)
        // New memory, even for a single region: "copying" means a copy.
        if let copyBase = copy.regions.first.map(baseAddress(of:)) {
            #expect(!regionBases(source).contains(copyBase))
        }
        // Also through a slice of it, which keeps the base's indices.
        if source.count >= 3 {
            let slice = source[1..<source.count - 1]
            let fromSlice = ByteRope(copying: slice)
            expectMatchesModel(fromSlice, Array(shape.model[1..<shape.model.count - 1]), "copy of a slice of \(shape)")
            #expect(fromSlice.regionCount == 1)
        }
    }

    @Test("init(copying:) a raw buffer copies it; empty buffers, with or without a base, give the empty rope")
    func copyingRawBuffers() {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        defer { memory.deallocate() }
        memory.copyBytes(from: [9, 8, 7, 6, 5, 4, 3, 2] as [UInt8])
        let rope = ByteRope(copying: UnsafeRawBufferPointer(memory))
        memory[0] = 0  // later writes to the source are not seen
        expectMatchesModel(rope, [9, 8, 7, 6, 5, 4, 3, 2], "raw buffer")
        #expect(regionBases(rope) != [UnsafeRawPointer(memory.baseAddress!)])

        let nilBase = ByteRope(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(nilBase.isEmpty)
        #expect(nilBase.regionCount == 0)
        let emptyWithBase = ByteRope(copying: UnsafeRawBufferPointer(start: memory.baseAddress, count: 0))
        #expect(emptyWithBase.isEmpty)
        #expect(emptyWithBase.regionCount == 0)
        emptyWithBase._validateInvariants()
    }

    @Test("init(bytesNoCopy:deallocator:) references the caller's memory without copying")
    func bytesNoCopy() {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 6, alignment: 8)
        defer { memory.deallocate() }
        memory.copyBytes(from: Array("nocopy".utf8))
        do {
            let rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(memory), deallocator: .none)
            expectMatchesModel(rope, Array("nocopy".utf8), "bytesNoCopy")
            #expect(regionBases(rope) == [UnsafeRawPointer(memory.baseAddress!)])
            #expect(rope.withUnsafeBytes { $0.baseAddress } == UnsafeRawPointer(memory.baseAddress!))
        }
    }

    @Test("array literals")
    func arrayLiteral() {
        let crlf: ByteRope = [0x0D, 0x0A]
        expectMatchesModel(crlf, [0x0D, 0x0A], "literal")
        #expect(crlf.regionCount == 1)
        let empty: ByteRope = []
        #expect(empty.isEmpty)
        #expect(empty.regionCount == 0)
    }
}

// MARK: - Size

@Suite("ByteRope: size")
struct ByteRopeSizeTests {
    @Test("count, isEmpty and regionCount", arguments: Shape.allCases)
    func size(shape: Shape) {
        let rope = shape.rope
        #expect(rope.count == shape.model.count)
        #expect(rope.isEmpty == shape.model.isEmpty)
        #expect(rope.regionCount == shape.layout.count)
        #expect(regionSizes(rope) == shape.layout)
        rope._validateInvariants()
    }

    @Test("the tree is used from three regions on and stays one leaf up to sixteen")
    func treeHeightForSmallRopes() {
        var rope = ByteRope()
        for i in 0..<17 {
            rope.append(ByteRope(copying: [UInt8(i)]))
            rope._validateInvariants()
            #expect(rope._treeHeight == (i < 16 ? 0 : 1), "after \(i + 1) regions")
        }
    }

    /// A rope is three words, and an optional rope too: every copy and destroy of one on the
    /// engine's delivery path is then a retain or release in line. Above four words the
    /// compiler copies and destroys through value-witness calls (see `_Pair`).
    @Test("a rope and an optional rope are three words")
    func layout() {
        #expect(MemoryLayout<ByteRope>.size == 3 * MemoryLayout<Int>.size)
        #expect(MemoryLayout<ByteRope?>.size == 3 * MemoryLayout<Int>.size)
    }
}

// MARK: - Appending

@Suite("ByteRope: appending")
struct ByteRopeAppendTests {
    @Test("+ and += concatenate the regions without copying", arguments: Shape.allCases, Shape.allCases)
    func concatenation(left: Shape, right: Shape) {
        let a = left.rope
        let b = right.rope
        let sum = a + b
        expectMatchesModel(sum, left.model + right.model, "\(left) + \(right)")
        #expect(sum.regionCount == a.regionCount + b.regionCount)
        #expect(regionSizes(sum) == left.layout + right.layout)
        #expect(regionBases(sum) == regionBases(a) + regionBases(b))

        var accumulated = a
        accumulated += b
        #expect(accumulated == sum)
        #expect(regionBases(accumulated) == regionBases(sum))

        var appended = a
        appended.append(b)
        #expect(regionBases(appended) == regionBases(sum))
        appended._validateInvariants()

        // The operands are unchanged (value semantics).
        expectMatchesModel(a, left.model, "left operand after +")
        expectMatchesModel(b, right.model, "right operand after +")
    }

    @Test("appending the empty rope changes nothing; appending to the empty rope gives the other")
    func emptyOperands() {
        for shape in Shape.allCases {
            let rope = shape.rope
            var copy = rope
            copy.append(ByteRope())
            copy += .empty
            #expect(regionBases(copy) == regionBases(rope))
            #expect(regionBases(ByteRope() + rope) == regionBases(rope))
            #expect(regionBases(rope + ByteRope()) == regionBases(rope))
            copy._validateInvariants()
        }
    }

    @Test("append(contentsOf:) adds one copied region (none for empty input)", arguments: Shape.allCases)
    func appendContentsOf(shape: Shape) {
        var rope = shape.rope
        let before = regionBases(rope)
        rope.append(contentsOf: [0xAA, 0xBB] as [UInt8])
        rope.append(contentsOf: "xyz".utf8)
        rope.append(contentsOf: (1...3).lazy.map { UInt8($0) })
        rope.append(contentsOf: [UInt8]())
        rope.append(contentsOf: EmptyCollection<UInt8>())
        // A rope of several regions is copied into one new region.
        rope.append(contentsOf: ByteRope(copying: [7, 7] as [UInt8]) + ByteRope(copying: [8] as [UInt8]))
        rope.append(contentsOf: ByteRope())
        expectMatchesModel(
            rope,
            shape.model + [0xAA, 0xBB] + Array("xyz".utf8) + [1, 2, 3, 7, 7, 8],
            "append(contentsOf:)"
        )
        #expect(regionSizes(rope) == shape.layout + [2, 3, 3, 3])
        #expect(Array(regionBases(rope).prefix(before.count)) == before)
    }

    @Test("a rope appended to itself", arguments: Shape.allCases)
    func selfAppend(shape: Shape) {
        var rope = shape.rope
        let original = rope
        rope.append(rope)
        expectMatchesModel(rope, shape.model + shape.model, "append(self)")
        rope += rope
        expectMatchesModel(rope, Array(repeating: shape.model, count: 4).flatMap { $0 }, "+= self")
        rope = rope + rope
        expectMatchesModel(rope, Array(repeating: shape.model, count: 8).flatMap { $0 }, "self + self")
        #expect(rope.regionCount == 8 * shape.layout.count)
        expectMatchesModel(original, shape.model, "copy taken before")
    }
}

// MARK: - Collection

@Suite("ByteRope: collection")
struct ByteRopeCollectionTests {
    @Test("subscript, indices, iteration and index arithmetic", arguments: Shape.allCases)
    func collection(shape: Shape) {
        let rope = shape.rope
        let model = shape.model
        #expect(rope.startIndex == 0)
        #expect(rope.endIndex == model.count)
        #expect(rope.indices == 0..<model.count)
        for i in rope.indices {
            #expect(rope[i] == model[i], "byte \(i)")
        }
        var iterated: [UInt8] = []
        for byte in rope {
            iterated.append(byte)
        }
        #expect(iterated == model)
        #expect(Array(rope) == model)
        #expect(Array(rope.reversed()) == Array(model.reversed()))
        #expect(rope.map { $0 } == model)
        #expect(rope.reduce(0) { $0 &+ Int($1) } == model.reduce(0) { $0 &+ Int($1) })
        if !model.isEmpty {
            #expect(rope.index(rope.startIndex, offsetBy: model.count - 1) == model.count - 1)
            #expect(rope.index(after: 0) == 1)
            #expect(rope.index(before: model.count) == model.count - 1)
            #expect(rope.first == model.first)
            #expect(rope.last == model.last)
        }
        #expect(rope.index(rope.endIndex, offsetBy: -model.count) == 0)
        #expect(rope.distance(from: 0, to: model.count) == model.count)
        // An iterator that is exhausted stays exhausted.
        var iterator = rope.makeIterator()
        for _ in model {
            _ = iterator.next()
        }
        #expect(iterator.next() == nil)
        #expect(iterator.next() == nil)
    }

    @Test("copying into a buffer that is too small hands back an iterator over the rest", arguments: Shape.allCases)
    func partialCopyContents(shape: Shape) {
        let model = shape.model
        for capacity in [0, model.count / 2, model.count, model.count + 3] {
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: capacity)
            defer { buffer.deallocate() }
            var (rest, copied) = buffer.initialize(from: shape.rope)
            let expectedCopied = Swift.min(capacity, model.count)
            #expect(copied == expectedCopied, "capacity \(capacity)")
            #expect(Array(buffer[..<copied]) == Array(model[..<expectedCopied]), "capacity \(capacity)")
            var remaining: [UInt8] = []
            while let byte = rest.next() {
                remaining.append(byte)
            }
            #expect(remaining == Array(model[expectedCopied...]), "capacity \(capacity)")
        }
    }

    @Test(
        "withContiguousStorageIfAvailable: the region itself for one region, nil for several",
        arguments: Shape.allCases
    )
    func contiguousStorage(shape: Shape) {
        let rope = shape.rope
        let result = rope.withContiguousStorageIfAvailable { buffer in
            (Array(buffer), buffer.baseAddress.map(UnsafeRawPointer.init))
        }
        switch shape.layout.count {
        case 0:
            #expect(result?.0 == [])
            #expect(result?.1 != nil)
        case 1:
            #expect(result?.0 == shape.model)
            #expect(result?.1 == regionBases(rope).first)
        default:
            #expect(result == nil)
        }
    }

    @Test("String(decoding:as:) reads a rope split inside multi-byte characters")
    func stringDecoding() {
        let text = "añ€😀 — ropes"
        let utf8 = Array(text.utf8)
        for cut in 0...utf8.count {
            let rope = ByteRope(copying: utf8[..<cut]) + ByteRope(copying: utf8[cut...])
            #expect(String(decoding: rope, as: UTF8.self) == text, "cut at \(cut)")
        }
        let tree = makeRope(utf8, layout: Array(repeating: 1, count: utf8.count))
        #expect(String(decoding: tree, as: UTF8.self) == text)
        #expect(String(decoding: ByteRope(), as: UTF8.self) == "")
    }
}

// MARK: - Slicing

@Suite("ByteRope: slicing")
struct ByteRopeSlicingTests {
    @Test("rope[a..<b] is a Slice<ByteRope> that keeps the base's indices")
    func sliceKeepsIndices() {
        let rope = Shape.deepTree.rope
        let model = Shape.deepTree.model
        let slice: Slice<ByteRope> = rope[7..<30]
        #expect(slice.startIndex == 7)
        #expect(slice.endIndex == 30)
        #expect(slice.count == 23)
        #expect(slice[7] == model[7])
        #expect(slice[29] == model[29])
        #expect(Array(slice) == Array(model[7..<30]))
        #expect(slice.firstIndex(of: model[12]) == 12)
        let nested = slice[10..<20]
        #expect(nested.startIndex == 10)
        #expect(Array(nested) == Array(model[10..<20]))

        let rebased = ByteRope(slice)
        expectMatchesModel(rebased, Array(model[7..<30]), "ByteRope(slice)")
        #expect(rebased.startIndex == 0)
        #expect(rebased == rope.subrange(7..<30))
        #expect(regionBases(rebased) == regionBases(rope.subrange(7..<30)))
        #expect(ByteRope(rope[3..<3]).isEmpty)
        #expect(ByteRope(rope[...]) == rope)
    }

    @Test("subrange(_:) shares the regions, trimmed at both ends", arguments: Shape.allCases)
    func subrangeSharesRegions(shape: Shape) {
        let rope = shape.rope
        let model = shape.model
        let bases = regionBases(rope)
        let starts = boundaries(of: shape.layout)
        for lower in 0...model.count {
            for upper in lower...model.count {
                let sub = rope.subrange(lower..<upper)
                expectMatchesModel(sub, Array(model[lower..<upper]), "\(shape) subrange \(lower)..<\(upper)")
                #expect(regionSizes(sub) == clippedLayout(shape.layout, to: lower..<upper))
                // The first region of the subrange points into the original region, no copy.
                if let first = sub.regions.first {
                    let region = starts.lastIndex { $0 <= lower }!
                    #expect(baseAddress(of: first) == bases[region] + (lower - starts[region]))
                }
            }
        }
        // The whole range gives the same regions; empty ranges give the empty rope.
        #expect(regionBases(rope.subrange(0..<model.count)) == bases)
        #expect(rope.subrange(model.count..<model.count).regionCount == 0)
    }

    @Test("subrange(_:) of partial and closed ranges")
    func subrangeOfRangeExpressions() {
        let rope = Shape.leafTree.rope
        let model = Shape.leafTree.model  // 14 bytes
        #expect(Array(rope.subrange(3...)) == Array(model[3...]))
        #expect(Array(rope.subrange(..<5)) == Array(model[..<5]))
        #expect(Array(rope.subrange(...5)) == Array(model[...5]))
        #expect(Array(rope.subrange(2...9)) == Array(model[2...9]))
        #expect(rope.subrange(14...).isEmpty)
        #expect(rope.subrange(..<0).isEmpty)
        #expect(rope.subrange(0...) == rope)
        #expect(rope.subrange(...13) == rope)
        rope.subrange(4...)._validateInvariants()
    }
}

// MARK: - Regions

@Suite("ByteRope: regions")
struct ByteRopeRegionTests {
    @Test("regions: offsets, counts, ranges, bytes; subscripting agrees with iteration", arguments: Shape.allCases)
    func regions(shape: Shape) {
        let rope = shape.rope
        let model = shape.model
        let regions = rope.regions
        let starts = boundaries(of: shape.layout)
        #expect(regions.count == shape.layout.count)
        #expect(regions.startIndex == 0)
        #expect(regions.endIndex == shape.layout.count)
        var iterated: [ByteRope.Region] = []
        for region in regions {
            iterated.append(region)
        }
        #expect(iterated.count == shape.layout.count)
        for (index, region) in iterated.enumerated() {
            let byIndex = regions[index]
            #expect(region.offset == starts[index])
            #expect(region.count == shape.layout[index])
            #expect(region.range == starts[index]..<starts[index + 1])
            #expect(byIndex.offset == region.offset)
            #expect(byIndex.count == region.count)
            #expect(byIndex.range == region.range)
            #expect(baseAddress(of: byIndex) == baseAddress(of: region))
            #expect(region.withUnsafeBytes { Array($0) } == Array(model[region.range]))
            let asRope = region.rope
            #expect(asRope.regionCount == 1)
            #expect(Array(asRope) == Array(model[region.range]))
            #expect(regionBases(asRope) == [baseAddress(of: region)])
        }
        #expect(Array(regions.reversed()).map(\.offset) == Array(starts.dropLast().reversed()))
    }

    @Test("region(containing:) returns the whole region and its start", arguments: Shape.allCases)
    func regionContaining(shape: Shape) {
        let rope = shape.rope
        let starts = boundaries(of: shape.layout)
        let bases = regionBases(rope)
        for offset in rope.indices {
            let index = starts.lastIndex { $0 <= offset }!
            let (region, start) = rope.region(containing: offset)
            #expect(start == starts[index], "offset \(offset)")
            #expect(region.count == shape.layout[index], "offset \(offset)")
            #expect(region.regionCount == 1)
            #expect(regionBases(region) == [bases[index]], "offset \(offset)")
            #expect(Array(region) == Array(shape.model[starts[index]..<starts[index + 1]]))
        }
    }

    @Test("apply visits the regions in order with their offsets", arguments: Shape.allCases)
    func apply(shape: Shape) {
        let rope = shape.rope
        var visits: [(Int, [UInt8], UnsafeRawPointer?)] = []
        let finished = rope.apply { offset, bytes in
            visits.append((offset, Array(bytes), bytes.baseAddress))
            return true
        }
        #expect(finished)
        #expect(visits.map(\.0) == Array(boundaries(of: shape.layout).dropLast()))
        #expect(visits.map(\.1).flatMap { $0 } == shape.model)
        #expect(visits.map(\.2) == regionBases(rope).map(Optional.some))
        if shape == .empty {
            #expect(visits.isEmpty)  // the body is not called at all
        }
    }

    @Test("apply stops after the region whose body returns false", arguments: Shape.allCases)
    func applyEarlyStop(shape: Shape) {
        let rope = shape.rope
        for stopAt in 0..<shape.layout.count {
            var calls = 0
            let finished = rope.apply { _, _ in
                defer { calls += 1 }
                return calls != stopAt
            }
            #expect(!finished, "stop at \(stopAt)")
            #expect(calls == stopAt + 1, "stop at \(stopAt)")
        }
    }

    @Test("apply rethrows the body's error and stops")
    func applyRethrows() {
        struct Stop: Error {}
        let rope = Shape.deepTree.rope
        var calls = 0
        #expect(throws: Stop.self) {
            _ = try rope.apply { _, _ in
                calls += 1
                if calls == 3 { throw Stop() }
                return true
            }
        }
        #expect(calls == 3)
    }
}

// MARK: - Contiguous access and copying

@Suite("ByteRope: contiguous access")
struct ByteRopeContiguousTests {
    @Test("withUnsafeBytes: the region itself for one region, a copy for several", arguments: Shape.allCases)
    func withUnsafeBytes(shape: Shape) {
        let rope = shape.rope
        let (bytes, base, count) = rope.withUnsafeBytes { ($0.map { $0 }, $0.baseAddress, $0.count) }
        #expect(bytes == shape.model)
        #expect(count == shape.model.count)
        #expect(base != nil)  // also for the empty rope
        if shape.layout.count == 1 {
            #expect(base == regionBases(rope).first)
        }
    }

    @Test("contiguous(): one region; the same memory when there already was one", arguments: Shape.allCases)
    func contiguous(shape: Shape) {
        let rope = shape.rope
        let flat = rope.contiguous()
        expectMatchesModel(flat, shape.model, "contiguous()")
        #expect(flat.regionCount == Swift.min(shape.layout.count, 1))
        if shape.layout.count == 1 {
            #expect(regionBases(flat) == regionBases(rope))
        } else if let base = regionBases(flat).first {
            #expect(!regionBases(rope).contains(base))
        }
        #expect(flat == rope)
        #expect(flat.contiguous().withUnsafeBytes { $0.baseAddress } == flat.withUnsafeBytes { $0.baseAddress })
    }

    @Test("copyBytes(to:from:) copies min(range, destination) bytes and leaves the rest", arguments: Shape.allCases)
    func copyBytes(shape: Shape) {
        let rope = shape.rope
        let model = shape.model
        let sentinel: UInt8 = 0xEE
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: model.count + 4, alignment: 1)
        defer { destination.deallocate() }
        for lower in 0...model.count {
            for upper in lower...model.count {
                for room in Set([0, (upper - lower) / 2, upper - lower, upper - lower + 4]) {
                    destination.initializeMemory(as: UInt8.self, repeating: sentinel)
                    let target = UnsafeMutableRawBufferPointer(rebasing: destination[..<room])
                    let copied = rope.copyBytes(to: target, from: lower..<upper)
                    let expected = Swift.min(room, upper - lower)
                    #expect(copied == expected, "\(lower)..<\(upper) into \(room)")
                    #expect(Array(destination[..<expected]) == Array(model[lower..<lower + expected]))
                    #expect(destination[expected...].allSatisfy { $0 == sentinel }, "bytes past the copy untouched")
                }
            }
        }
        // An empty destination without a base address.
        #expect(rope.copyBytes(to: UnsafeMutableRawBufferPointer(start: nil, count: 0), from: 0..<model.count) == 0)
    }
}

// MARK: - Searching

@Suite("ByteRope: searching")
struct ByteRopeSearchTests {
    @Test("firstIndex(of:) across regions", arguments: Shape.allCases)
    func firstIndex(shape: Shape) {
        let rope = shape.rope
        for byte in Set(shape.model).union([0, 0xFF, 0x7F]) {
            #expect(rope.firstIndex(of: byte) == shape.model.firstIndex(of: byte), "byte \(byte)")
        }
    }

    @Test("firstRange(of:) with the needle split across 1 to 4 regions")
    func firstRangeAcrossBoundaries() {
        let text = Array("xx\r\n\r\nyy".utf8)
        // The needle \r\n\r\n at 2..<6, cut into 1, 2, 3 and 4 pieces in every way.
        for layout in compositions(of: 4) {
            let rope =
                ByteRope(copying: text[..<2]) + makeRope(Array(text[2..<6]), layout: layout)
                + ByteRope(copying: text[6...])
            #expect(rope.firstRange(of: "\r\n\r\n".utf8) == 2..<6, "layout \(layout)")
            #expect(rope.firstRange(of: "\n\r\ny".utf8) == 3..<7, "layout \(layout)")
            #expect(rope.firstRange(of: "\r\n\r\n\r".utf8) == nil, "layout \(layout)")
        }
        // Split across four regions inside a deep tree.
        let pieces = (0..<50).map { ByteRope(copying: "<\($0)>".utf8) }
        let tree = pieces.reduce(ByteRope(), +)
        let model = Array(tree)
        for needle in ["<3><4><5><6", "9><40><41><4", "<49>", "<0>", "><"] {
            #expect(tree.firstRange(of: needle.utf8) == naiveFirstRange(of: Array(needle.utf8), in: model), "\(needle)")
        }
    }

    @Test("firstRange(of:) edge cases: empty needle, needle longer than the rope, overlapping prefixes")
    func firstRangeEdgeCases() {
        let rope = ByteRope(copying: "aa".utf8) + ByteRope(copying: "ab".utf8)  // "aaab"
        #expect(rope.firstRange(of: "aab".utf8) == 1..<4)
        #expect(rope.firstRange(of: "aaab".utf8) == 0..<4)
        #expect(rope.firstRange(of: "aaabx".utf8) == nil)
        #expect(rope.firstRange(of: "b".utf8) == 3..<4)
        #expect(rope.firstRange(of: "ba".utf8) == nil)
        #expect(rope.firstRange(of: [UInt8]()) == 0..<0)
        #expect(ByteRope().firstRange(of: [UInt8]()) == 0..<0)
        #expect(ByteRope().firstRange(of: [1] as [UInt8]) == nil)
        // A prefix of the needle at the very end.
        let tail = ByteRope(copying: "xya".utf8) + ByteRope(copying: "a".utf8)
        #expect(tail.firstRange(of: "aab".utf8) == nil)
        #expect(tail.firstRange(of: "aa".utf8) == 2..<4)
    }

    @Test("firstRange(of:) with patterns that have no contiguous storage")
    func firstRangeNonContiguousPatterns() {
        let rope = Shape.deepTree.rope
        let model = Shape.deepTree.model
        let expected = 17..<29
        let multiRegionPattern = makeRope(Array(model[expected]), layout: [2, 5, 5])
        #expect(multiRegionPattern.withContiguousStorageIfAvailable { _ in true } == nil)
        #expect(rope.firstRange(of: multiRegionPattern) == expected)
        #expect(rope.firstRange(of: model[expected].lazy.map { $0 }) == expected)
        #expect(rope.firstRange(of: rope[expected]) == expected)
        #expect(rope.firstRange(of: ByteRope()) == 0..<0)
        #expect(rope.firstRange(of: rope) == 0..<model.count)
    }
}

// MARK: - Equality, hashing, descriptions

@Suite("ByteRope: equality, hashing and descriptions")
struct ByteRopeEquatableTests {
    @Test("equal by content, whatever the regions; hashes agree")
    func equalityIgnoresLayout() {
        let bytes = Array("The quick brown fox".utf8)
        let layouts: [[Int]] = [[19], [1, 18], [18, 1], [5, 5, 5, 4], Array(repeating: 1, count: 19), [10, 9]]
        let ropes = layouts.map { makeRope(bytes, layout: $0) } + [ByteRope(copying: bytes).subrange(0..<19)]
        for a in ropes {
            for b in ropes {
                #expect(a == b)
                #expect(a.hashValue == b.hashValue)
            }
        }
        #expect(Set(ropes).count == 1)
        // One byte different, or one byte more, in any position: not equal.
        for layout in layouts {
            let rope = makeRope(bytes, layout: layout)
            for position in bytes.indices {
                var changed = bytes
                changed[position] ^= 0x20
                #expect(rope != makeRope(changed, layout: layout.reversed()), "position \(position)")
            }
            #expect(rope != ByteRope(copying: bytes + [0]))
            #expect(rope != ByteRope(copying: bytes.dropLast()))
        }
        #expect(ByteRope() != ByteRope(copying: [0] as [UInt8]))
        #expect(Set([ByteRope(), ByteRope(copying: [0] as [UInt8]), ByteRope(copying: [0, 0] as [UInt8])]).count == 3)
    }

    @Test("description: size, regions and the first 32 bytes in hex")
    func description() {
        let rope = ByteRope(copying: "hello".utf8) + ByteRope(copying: " ".utf8) + ByteRope(copying: "world".utf8)
        #expect(rope.description == "ByteRope(11 bytes, 3 regions: 68656c6c6f20776f726c64)")
        #expect(ByteRope().description == "ByteRope(0 bytes, 0 regions)")
        #expect(ByteRope(copying: [0xAB] as [UInt8]).description == "ByteRope(1 byte, 1 region: ab)")
        let long = ByteRope(copying: Array(repeating: 0x0F, count: 40))
        #expect(long.description == "ByteRope(40 bytes, 1 region: \(String(repeating: "0f", count: 32))...)")
        #expect("\(rope)" == rope.description)
    }

    @Test("debugDescription lists every region's range")
    func debugDescription() {
        let rope = ByteRope(copying: "hello".utf8) + ByteRope(copying: " ".utf8) + ByteRope(copying: "world".utf8)
        let lines = rope.debugDescription.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first?.contains("11 bytes") == true)
        #expect(lines.first?.contains("3 regions") == true)
        #expect(lines[1].contains("[0..<5]") && lines[1].contains("copied"))
        #expect(lines[2].contains("[5..<6]"))
        #expect(lines[3].contains("[6..<11]"))

        let many = makeRope(Array(repeating: 1, count: 70), layout: Array(repeating: 1, count: 70))
        let manyLines = many.debugDescription.split(separator: "\n")
        #expect(manyLines.count == 1 + 64 + 1)
        #expect(manyLines.last?.contains("6 more regions") == true)
        #expect(ByteRope().debugDescription.split(separator: "\n").count == 1)
    }
}
