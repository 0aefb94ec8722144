//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ByteRope: RandomAccessCollection {
    public typealias Element = UInt8
    public typealias Index = Int
    public typealias Indices = Range<Int>
    public typealias SubSequence = Slice<ByteRope>

    /// Always 0.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var startIndex: Int { 0 }

    /// The number of bytes, ``count``.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var endIndex: Int { self.count }

    /// The byte at `position`.
    ///
    /// - Precondition: `0 <= position < count`.
    /// - Complexity: O(1) for ropes of one or two regions, O(log *r*) for *r* regions.
    @inlinable
    public subscript(position: Int) -> UInt8 {
        let count = self.count
        precondition(position >= 0 && position < count, "ByteRope index \(position) out of bounds 0..<\(count)")
        switch self._repr {
        case .empty:
            preconditionFailure("unreachable: an empty rope has no valid index")
        case .one(let slice):
            return slice.base.load(fromByteOffset: position, as: UInt8.self)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            if position < first.count {
                return first.base.load(fromByteOffset: position, as: UInt8.self)
            }
            return second.base.load(fromByteOffset: position &- first.count, as: UInt8.self)
        case .tree(let root):
            let (slice, _, start) = root.locate(byte: position)
            return slice.base.load(fromByteOffset: position &- start, as: UInt8.self)
        }
    }

    /// A byte iterator: walks each region's memory directly.
    ///
    /// - Complexity: O(1) amortized per byte.
    @inlinable
    public func makeIterator() -> Iterator {
        Iterator(self)
    }

    /// Iterates over the bytes of a rope, region by region.
    public struct Iterator: IteratorProtocol {
        @usableFromInline
        internal var _regions: _SliceCursor
        @usableFromInline
        internal var _next: UnsafeRawPointer?
        @usableFromInline
        internal var _end: UnsafeRawPointer?

        @inlinable
        internal init(_ rope: ByteRope) {
            self._regions = _SliceCursor(rope)
            self._next = nil
            self._end = nil
        }

        /// The next byte, or `nil` at the end.
        ///
        /// - Complexity: O(1) amortized.
        @inlinable
        public mutating func next() -> UInt8? {
            if let next = self._next, next != self._end {
                self._next = next + 1
                return next.load(as: UInt8.self)
            }
            return self._nextRegion()
        }

        @inline(never)
        @usableFromInline
        internal mutating func _nextRegion() -> UInt8? {
            guard let slice = self._regions.next() else { return nil }
            self._next = slice.base + 1
            self._end = slice.base + slice.count
            return slice.base.load(as: UInt8.self)
        }
    }

    /// Copies the bytes into `buffer`, region by region (used by `Array(rope)` and friends).
    ///
    /// - Complexity: O(*n*).
    public func _copyContents(
        initializing buffer: UnsafeMutableBufferPointer<UInt8>
    ) -> (Iterator, UnsafeMutableBufferPointer<UInt8>.Index) {
        guard let destination = buffer.baseAddress else {
            return (self.makeIterator(), 0)
        }
        let copied = self.copyBytes(
            to: UnsafeMutableRawBufferPointer(start: destination, count: buffer.count),
            from: 0..<self.count
        )
        var iterator = self.makeIterator()
        if copied == self.count {
            iterator = ByteRope().makeIterator()
        } else {
            // Only part fits: hand back an iterator positioned after what was copied.
            iterator = self.subrange(copied..<self.count).makeIterator()
        }
        return (iterator, copied)
    }

    /// Calls `body` with the bytes when they are contiguous (at most one region).
    ///
    /// - Returns: `body`'s result, or `nil` for a rope of two or more regions.
    /// - Complexity: O(1) plus `body`.
    @inlinable
    public func withContiguousStorageIfAvailable<R>(
        _ body: (UnsafeBufferPointer<UInt8>) throws -> R
    ) rethrows -> R? {
        switch self._repr {
        case .empty:
            return try body(UnsafeBufferPointer(start: _emptyRopeBase.assumingMemoryBound(to: UInt8.self), count: 0))
        case .one(let slice):
            return try withExtendedLifetime(slice.owner) {
                try body(UnsafeBufferPointer(start: slice.base.assumingMemoryBound(to: UInt8.self), count: slice.count))
            }
        case .two, .tree:
            return nil
        }
    }
}

/// The base address handed out for empty ropes: valid, never read or written through.
@usableFromInline
nonisolated(unsafe) internal let _emptyRopeBase = UnsafeRawPointer(
    UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
)

// MARK: - Walking regions

/// Visits the slices of a rope in order, from a given region on.
///
/// Holds the rope, so the slices it returns stay valid while the cursor lives.
@usableFromInline
internal struct _SliceCursor {
    @usableFromInline
    internal let rope: ByteRope
    /// The index of the next region to return.
    @usableFromInline
    internal var regionIndex: Int
    /// For trees: the leaf of the next region and its slot; `nil` until looked up.
    @usableFromInline
    internal var leaf: _Node?
    @usableFromInline
    internal var slot: Int

    @inlinable
    internal init(_ rope: ByteRope, startingAtRegion regionIndex: Int = 0) {
        self.rope = rope
        self.regionIndex = regionIndex
        self.leaf = nil
        self.slot = 0
    }

    /// The next slice, or `nil` after the last.
    ///
    /// - Complexity: O(1) amortized: one root-to-leaf descent per leaf of ≥ 8 slices.
    @inlinable
    internal mutating func next() -> _Slice? {
        switch self.rope._repr {
        case .empty:
            return nil
        case .one(let slice):
            guard self.regionIndex == 0 else { return nil }
            self.regionIndex = 1
            return slice
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            switch self.regionIndex {
            case 0:
                self.regionIndex = 1
                return first
            case 1:
                self.regionIndex = 2
                return second
            default:
                return nil
            }
        case .tree(let root):
            if let leaf = self.leaf, self.slot < leaf.slices.count {
                defer {
                    self.slot += 1
                    self.regionIndex += 1
                }
                return leaf.slices[self.slot]
            }
            guard self.regionIndex < root.regionCount else { return nil }
            let found = root.leaf(containingRegion: self.regionIndex)
            self.leaf = found.leaf
            self.slot = found.slot + 1
            self.regionIndex += 1
            return found.leaf.slices[found.slot]
        }
    }
}

// MARK: - Equality and hashing

extension ByteRope: Equatable {
    /// Whether two ropes hold the same bytes, whatever their regions.
    ///
    /// - Complexity: O(*n*) with `memcmp` over overlapping region pieces; O(1) when the counts
    ///   differ.
    public static func == (lhs: ByteRope, rhs: ByteRope) -> Bool {
        let count = lhs.count
        guard count == rhs.count else { return false }
        if case .one(let left) = lhs._repr, case .one(let right) = rhs._repr, left.base == right.base {
            return true
        }
        var leftRegions = _SliceCursor(lhs)
        var rightRegions = _SliceCursor(rhs)
        var left = UnsafeRawBufferPointer(start: nil, count: 0)
        var right = UnsafeRawBufferPointer(start: nil, count: 0)
        var remaining = count
        while remaining > 0 {
            if left.isEmpty { left = leftRegions.next()!.bytes }
            if right.isEmpty { right = rightRegions.next()!.bytes }
            let step = Swift.min(left.count, right.count)
            if left.baseAddress! != right.baseAddress!, memcmp(left.baseAddress!, right.baseAddress!, step) != 0 {
                return false
            }
            left = UnsafeRawBufferPointer(rebasing: left[step...])
            right = UnsafeRawBufferPointer(rebasing: right[step...])
            remaining -= step
        }
        return true
    }
}

extension ByteRope: Hashable {
    /// Hashes the bytes, so that equal ropes hash equally whatever their regions.
    ///
    /// - Complexity: O(*n*).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.count)
        _ = self.apply { _, bytes in
            hasher.combine(bytes: bytes)
            return true
        }
    }
}
