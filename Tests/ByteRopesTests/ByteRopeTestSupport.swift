//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: shared helpers (deterministic RNG, layouts, model checks,
// lifetime tracking).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Dispatch
import Synchronization
import Testing

// MARK: - Deterministic randomness

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully determined by its seed, so a
/// failing randomized test is reproduced by its printed seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `range`, without relying on the standard library's (unspecified) sampling
    /// algorithm, so a seed means the same thing on every toolchain.
    mutating func int(in range: Range<Int>) -> Int {
        precondition(!range.isEmpty)
        return range.lowerBound + Int(self.next() % UInt64(range.count))
    }

    mutating func int(in range: ClosedRange<Int>) -> Int {
        self.int(in: range.lowerBound..<range.upperBound + 1)
    }

    mutating func byte() -> UInt8 {
        UInt8(truncatingIfNeeded: self.next())
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in self.byte() }
    }

    /// True with probability `1 / n`.
    mutating func oneIn(_ n: Int) -> Bool {
        self.int(in: 0..<n) == 0
    }
}

// MARK: - Layouts

/// Every composition of `n` into positive parts (2^(n-1) of them; one, `[]`, for 0), as region
/// sizes in order. Bit `i` of the mask set means "a region ends after byte `i + 1`".
func compositions(of n: Int) -> [[Int]] {
    guard n > 0 else { return [[]] }
    return (0..<(1 << (n - 1))).map { mask in
        var parts: [Int] = []
        var current = 1
        for bit in 0..<(n - 1) {
            if mask & (1 << bit) != 0 {
                parts.append(current)
                current = 1
            } else {
                current += 1
            }
        }
        parts.append(current)
        return parts
    }
}

/// The start offset of each region of `layout`, plus the total at the end.
func boundaries(of layout: [Int]) -> [Int] {
    var result = [0]
    for size in layout { result.append(result.last! + size) }
    return result
}

/// The region sizes that the bytes `range` of a rope with `layout` must have: the regions the
/// range overlaps, trimmed at the two ends.
func clippedLayout(_ layout: [Int], to range: Range<Int>) -> [Int] {
    var result: [Int] = []
    var start = 0
    for size in layout {
        let end = start + size
        let lower = Swift.max(start, range.lowerBound)
        let upper = Swift.min(end, range.upperBound)
        if lower < upper { result.append(upper - lower) }
        start = end
    }
    return result
}

/// One one-region rope per entry of `layout`, copying consecutive bytes of `bytes`.
func pieces(of bytes: [UInt8], layout: [Int]) -> [ByteRope] {
    precondition(layout.reduce(0, +) == bytes.count)
    var result: [ByteRope] = []
    var start = 0
    for size in layout {
        result.append(ByteRope(copying: bytes[start..<start + size]))
        start += size
    }
    return result
}

/// The rope of `bytes` whose regions have exactly the sizes `layout`, built by appending.
func makeRope(_ bytes: [UInt8], layout: [Int]) -> ByteRope {
    var rope = ByteRope()
    for piece in pieces(of: bytes, layout: layout) {
        rope.append(piece)
    }
    return rope
}

/// The same ropes concatenated as a balanced binary tree of `+`.
func balancedConcat(_ ropes: ArraySlice<ByteRope>) -> ByteRope {
    switch ropes.count {
    case 0: return ByteRope()
    case 1: return ropes.first!
    default:
        let middle = ropes.startIndex + ropes.count / 2
        return balancedConcat(ropes[..<middle]) + balancedConcat(ropes[middle...])
    }
}

/// A rope with `layout` obtained as a subrange of a bigger rope: `extraRegions` regions of
/// padding on each side, and the first and last regions of `layout` widened into the padding
/// so that the subrange must trim them.
func makeRopeBySubrange(_ bytes: [UInt8], layout: [Int], extraRegions: Int) -> ByteRope {
    var big = ByteRope()
    for i in 0..<extraRegions {
        big.append(ByteRope(copying: [0xF0, UInt8(truncatingIfNeeded: i)]))
    }
    let padding: [UInt8] = [0xE1, 0xE2, 0xE3]
    var parts = pieces(of: bytes, layout: layout).map { Array($0) }
    if parts.isEmpty {
        parts = [[]]
    }
    parts[0] = padding + parts[0]
    parts[parts.count - 1] += padding
    for part in parts where !part.isEmpty {
        big.append(ByteRope(copying: part))
    }
    for i in 0..<extraRegions {
        big.append(ByteRope(copying: [0xF1, UInt8(truncatingIfNeeded: i)]))
    }
    let start = extraRegions * 2 + padding.count
    return big.subrange(start..<start + bytes.count)
}

// MARK: - Inspecting ropes

/// The base address of the region's memory.
func baseAddress(of region: ByteRope.Region) -> UnsafeRawPointer {
    region.withUnsafeBytes { $0.baseAddress! }
}

/// The base address of each region of `rope`, in order.
func regionBases(_ rope: ByteRope) -> [UnsafeRawPointer] {
    rope.regions.map(baseAddress(of:))
}

/// The region sizes of `rope`, in order.
func regionSizes(_ rope: ByteRope) -> [Int] {
    rope.regions.map(\.count)
}

/// The range of the first occurrence of `needle` in `haystack`, found naively: the model
/// `firstRange(of:)` is checked against.
func naiveFirstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
    if needle.isEmpty { return 0..<0 }
    guard needle.count <= haystack.count else { return nil }
    for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
        return start..<start + needle.count
    }
    return nil
}

/// Checks the cheap whole-rope properties against the model: invariants, count, bytes
/// (through iteration, `Array`, and a few indices), region offsets and sizes adding up.
func expectMatchesModel(
    _ rope: ByteRope,
    _ model: [UInt8],
    _ context: @autoclosure () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    rope._validateInvariants()
    #expect(rope.count == model.count, "count — \(context())", sourceLocation: sourceLocation)
    #expect(rope.isEmpty == model.isEmpty, "isEmpty — \(context())", sourceLocation: sourceLocation)
    #expect(Array(rope) == model, "bytes — \(context())", sourceLocation: sourceLocation)
    var offset = 0
    var regionCount = 0
    for region in rope.regions {
        #expect(region.offset == offset, "region offset — \(context())", sourceLocation: sourceLocation)
        #expect(region.count > 0, "empty region — \(context())", sourceLocation: sourceLocation)
        offset += region.count
        regionCount += 1
    }
    #expect(offset == model.count, "region sizes add up — \(context())", sourceLocation: sourceLocation)
    #expect(regionCount == rope.regionCount, "regionCount — \(context())", sourceLocation: sourceLocation)
    #expect(
        rope.isEmpty == (rope.regionCount == 0),
        "empty iff no region — \(context())",
        sourceLocation: sourceLocation
    )
}

// MARK: - Lifetime tracking

/// A thread-safe counter.
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)

    var value: Int { self.storage.load(ordering: .acquiring) }

    func increment() {
        self.storage.add(1, ordering: .releasing)
    }
}

/// Counts live `TrackedOwner`s, like swift-collections' `LifetimeTracker`: every owner made
/// through it must be deinitialized exactly once by the end of the test.
final class LifetimeTracker: Sendable {
    private let created = Atomic<Int>(0)
    private let destroyed = Atomic<Int>(0)

    var live: Int { self.created.load(ordering: .acquiring) - self.destroyed.load(ordering: .acquiring) }
    var createdCount: Int { self.created.load(ordering: .acquiring) }
    var destroyedCount: Int { self.destroyed.load(ordering: .acquiring) }

    fileprivate func didCreate() {
        self.created.add(1, ordering: .relaxed)
    }

    fileprivate func didDestroy() {
        self.destroyed.add(1, ordering: .releasing)
    }

    /// A one-region rope holding a copy of `bytes` in memory owned by a tracked owner
    /// (the kernel-buffer style of `ByteRope(unsafeOwner:bytes:)`).
    func rope(copying bytes: some Collection<UInt8>) -> ByteRope {
        let owner = TrackedOwner(bytes, tracker: self)
        return ByteRope(unsafeOwner: owner, bytes: UnsafeRawBufferPointer(owner.memory))
    }

    /// The rope of `bytes` with regions `layout`, each region its own tracked owner.
    func rope(_ bytes: [UInt8], layout: [Int]) -> ByteRope {
        var rope = ByteRope()
        var start = 0
        for size in layout {
            rope.append(self.rope(copying: bytes[start..<start + size]))
            start += size
        }
        return rope
    }
}

/// Owns some heap memory for a rope region; frees it and reports to its tracker on deinit.
final class TrackedOwner {
    let memory: UnsafeMutableRawBufferPointer
    private let tracker: LifetimeTracker

    init(_ bytes: some Collection<UInt8>, tracker: LifetimeTracker) {
        self.memory = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(bytes.count, 1), alignment: 8)
        self.memory.initializeMemory(as: UInt8.self, repeating: 0)
        self.memory.copyBytes(from: bytes)
        self.tracker = tracker
        tracker.didCreate()
    }

    deinit {
        self.memory.deallocate()
        self.tracker.didDestroy()
    }
}

/// Runs `body` with a fresh tracker and expects every owner it made to be gone afterwards.
func withLifetimeTracking<R>(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (LifetimeTracker) throws -> R
) rethrows -> R {
    let tracker = LifetimeTracker()
    let result = try body(tracker)
    #expect(tracker.live == 0, "\(tracker.live) region owners leaked", sourceLocation: sourceLocation)
    return result
}

// MARK: - Waiting, bounded

/// Waits until `condition` holds, for at most `seconds`; returns whether it held.
func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + seconds
    while !condition() {
        if DispatchTime.now() > deadline { return false }
        usleepMilliseconds(1)
    }
    return true
}

private func usleepMilliseconds(_ milliseconds: Int) {
    let semaphore = DispatchSemaphore(value: 0)
    _ = semaphore.wait(timeout: .now() + .milliseconds(milliseconds))
}
