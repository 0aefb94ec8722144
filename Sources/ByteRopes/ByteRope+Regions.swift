//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension ByteRope {
    /// Calls `body` with each region's logical offset and bytes, in order, until it returns
    /// false (dispatch's `dispatch_data_apply`).
    ///
    ///     var total = 0
    ///     rope.apply { offset, bytes in
    ///         total += bytes.count
    ///         return true   // keep going
    ///     }
    ///
    /// - Parameter body: Receives the offset of the region in the rope and its bytes. The
    ///   buffer is valid only for the duration of the call: do not let it escape. Return
    ///   `false` to stop after this region.
    /// - Returns: `true` when every region was visited (always, for an empty rope, which calls
    ///   `body` zero times); `false` when `body` stopped early.
    /// - Complexity: O(*r*) for *r* regions, plus `body`; allocates nothing.
    @inlinable
    public func apply(_ body: (_ offset: Int, _ bytes: UnsafeRawBufferPointer) throws -> Bool) rethrows -> Bool {
        switch self._repr {
        case .empty:
            return true
        case .one(let slice):
            return try body(0, slice.bytes)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            guard try body(0, first.bytes) else { return false }
            return try body(first.count, second.bytes)
        case .tree(let root):
            // Leaf by leaf, with no closure context and no retain per region: the rope,
            // borrowed for the call, keeps every node and region alive.
            var offset = 0
            return try root.forEachLeaf { leaf in
                for slot in 0..<leaf.slices.count {
                    let base = leaf.slices[slot].base
                    let count = leaf.slices[slot].count
                    guard try body(offset, UnsafeRawBufferPointer(start: base, count: count)) else { return false }
                    offset &+= count
                }
                return true
            }
        }
    }

    /// The contiguous region holding byte `offset`, as a one-region rope, and the offset in
    /// this rope where that region starts (dispatch's `dispatch_data_copy_region`).
    ///
    ///     let rope = ByteRope(copying: "hello".utf8) + ByteRope(copying: " world".utf8)
    ///     let (region, start) = rope.region(containing: 7)   // " world", 5
    ///
    /// - Parameter offset: A byte offset in `0..<count`.
    /// - Returns: The whole region (not trimmed to `offset`) and its start offset.
    /// - Precondition: `0 <= offset < count` (dispatch returns an empty rope instead).
    /// - Complexity: O(log *r*) for *r* regions; allocates nothing.
    public func region(containing offset: Int) -> (region: ByteRope, offset: Int) {
        let count = self.count
        precondition(
            offset >= 0 && offset < count,
            "ByteRope.region(containing: \(offset)) out of bounds 0..<\(count)"
        )
        switch self._repr {
        case .empty:
            preconditionFailure("unreachable: an empty rope has no valid offset")
        case .one:
            return (self, 0)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            if offset < first.count {
                return (ByteRope(_repr: .one(first)), 0)
            }
            return (ByteRope(_repr: .one(second)), first.count)
        case .tree(let root):
            let (slice, _, start) = root.locate(byte: offset)
            return (ByteRope(_repr: .one(slice)), start)
        }
    }

    /// The regions of the rope, in order, each with its offset.
    ///
    ///     for region in rope.regions {
    ///         print(region.offset, region.count)
    ///     }
    ///
    /// - Complexity: O(1) to get; iterating is O(1) amortized per region, and subscripting
    ///   O(log *r*).
    @inlinable
    public var regions: Regions {
        Regions(rope: self)
    }

    /// The regions of a rope, as a random-access collection indexed from 0.
    public struct Regions: RandomAccessCollection, Sendable {
        public typealias Index = Int
        public typealias Indices = Range<Int>
        public typealias Element = Region

        @usableFromInline
        internal let rope: ByteRope

        @inlinable
        internal init(rope: ByteRope) {
            self.rope = rope
        }

        /// Always 0.
        ///
        /// - Complexity: O(1).
        @inlinable
        public var startIndex: Int { 0 }

        /// The number of regions.
        ///
        /// - Complexity: O(1).
        @inlinable
        public var endIndex: Int { self.rope.regionCount }

        /// The region at `index`.
        ///
        /// - Precondition: `0 <= index < count`.
        /// - Complexity: O(log *r*).
        public subscript(index: Int) -> Region {
            let regionCount = self.rope.regionCount
            precondition(
                index >= 0 && index < regionCount,
                "ByteRope.regions index \(index) out of bounds 0..<\(regionCount)"
            )
            switch self.rope._repr {
            case .empty:
                preconditionFailure("unreachable: an empty rope has no regions")
            case .one(let slice):
                return Region(slice: slice, offset: 0)
            case .two(let pair):
                let first = pair.first
                let second = pair.second
                return index == 0 ? Region(slice: first, offset: 0) : Region(slice: second, offset: first.count)
            case .tree(let root):
                let (leaf, slot, leafStart) = root.leaf(containingRegion: index)
                var offset = leafStart
                for slice in leaf.slices[..<slot] {
                    offset += slice.count
                }
                return Region(slice: leaf.slices[slot], offset: offset)
            }
        }

        /// An iterator over the regions.
        ///
        /// - Complexity: O(1); each step is O(1) amortized.
        @inlinable
        public func makeIterator() -> Iterator {
            Iterator(cursor: _SliceCursor(self.rope), offset: 0)
        }

        /// Iterates over the regions of a rope.
        public struct Iterator: IteratorProtocol {
            @usableFromInline
            internal var cursor: _SliceCursor
            @usableFromInline
            internal var offset: Int

            @inlinable
            internal init(cursor: _SliceCursor, offset: Int) {
                self.cursor = cursor
                self.offset = offset
            }

            /// The next region, or `nil` after the last.
            ///
            /// - Complexity: O(1) amortized.
            @inlinable
            public mutating func next() -> Region? {
                guard let slice = self.cursor.next() else { return nil }
                defer { self.offset += slice.count }
                return Region(slice: slice, offset: self.offset)
            }
        }
    }

    /// One contiguous region of a rope: its offset in the rope and its bytes.
    ///
    /// A region retains its memory: it stays valid as long as the `Region` (or its ``rope``)
    /// lives, whatever happens to the rope it came from.
    public struct Region: Sendable {
        @usableFromInline
        internal let slice: _Slice

        /// The offset in the rope at which this region starts.
        public let offset: Int

        @inlinable
        internal init(slice: _Slice, offset: Int) {
            self.slice = slice
            self.offset = offset
        }

        /// The number of bytes in the region (never 0).
        ///
        /// - Complexity: O(1).
        @inlinable
        public var count: Int { self.slice.count }

        /// The offsets in the rope this region covers.
        ///
        /// - Complexity: O(1).
        @inlinable
        public var range: Range<Int> { self.offset..<self.offset + self.slice.count }

        /// The region as a one-region rope that retains it.
        ///
        /// - Complexity: O(1); allocates nothing.
        @inlinable
        public var rope: ByteRope { ByteRope(_repr: .one(self.slice)) }

        /// Calls `body` with the region's bytes.
        ///
        /// - Parameter body: Receives the bytes; the buffer must not escape the call.
        /// - Complexity: O(1) plus `body`.
        @inlinable
        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try withExtendedLifetime(self.slice.owner) {
                try body(self.slice.bytes)
            }
        }
    }
}
