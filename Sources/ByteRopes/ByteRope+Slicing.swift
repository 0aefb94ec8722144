//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension ByteRope {
    /// The bytes at `range` as a new rope re-based at index 0, sharing this rope's regions.
    ///
    /// No bytes are copied: the result references the same regions, trimmed at its two ends,
    /// and keeps each of those regions alive *whole* (dispatch's R9).
    ///
    ///     let request = ByteRope(copying: "GET /index.html HTTP/1.1".utf8)
    ///     let path = request.subrange(4..<15) // "/index.html", startIndex 0
    ///
    /// - Parameter range: A range within `0...count`.
    /// - Returns: The bytes at `range`; `self` when `range` covers the whole rope; the empty
    ///   rope when `range` is empty.
    /// - Precondition: `range` lies within `0...count` (dispatch clamps instead).
    /// - Complexity: O(log *r*) for *r* regions (O(log² *r*) node visits in the worst case);
    ///   allocates nothing when the result has one region, one small object when it has two.
    public func subrange(_ range: Range<Int>) -> ByteRope {
        let count = self.count
        precondition(
            range.lowerBound >= 0 && range.upperBound <= count,
            "ByteRope.subrange(\(range)) out of bounds 0..<\(count)"
        )
        if range.isEmpty { return ByteRope() }
        if range.count == count { return self }
        switch self._repr {
        case .empty:
            return self  // unreachable: an empty rope has only the empty range
        case .one(let slice):
            return ByteRope(_repr: .one(slice.slice(range)))
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            if range.upperBound <= first.count {
                return ByteRope(_repr: .one(first.slice(range)))
            }
            if range.lowerBound >= first.count {
                return ByteRope(
                    _repr: .one(second.slice(range.lowerBound - first.count..<range.upperBound - first.count))
                )
            }
            return ByteRope(
                _repr: .two(
                    _Pair(
                        first.slice(range.lowerBound..<first.count),
                        second.slice(0..<range.upperBound - first.count)
                    )
                )
            )
        case .tree(let root):
            var result = ByteRope()
            root.appendBytes(range, to: &result)
            result._checkInvariants()
            return result
        }
    }

    /// The bytes at `range` as a new rope re-based at index 0, sharing this rope's regions.
    ///
    ///     rope.subrange(4...)   // everything from byte 4
    ///     rope.subrange(..<10)  // the first 10 bytes
    ///
    /// - Precondition: `range` lies within `0...count`.
    /// - Complexity: See ``subrange(_:)-(Range<Int>)``.
    public func subrange(_ range: some RangeExpression<Int>) -> ByteRope {
        self.subrange(range.relative(to: 0..<self.count))
    }

    /// The bytes from `range.lowerBound` to the end, as a new rope re-based at index 0.
    ///
    /// - Precondition: `0 <= range.lowerBound <= count`.
    /// - Complexity: See ``subrange(_:)-(Range<Int>)``.
    public func subrange(_ range: PartialRangeFrom<Int>) -> ByteRope {
        let count = self.count
        precondition(
            range.lowerBound >= 0 && range.lowerBound <= count,
            "ByteRope.subrange(\(range.lowerBound)...) out of bounds 0..<\(count)"
        )
        return self.subrange(range.lowerBound..<count)
    }

    /// Creates a rope of the bytes of `slice`, re-based at index 0, sharing the base rope's
    /// regions.
    ///
    /// - Complexity: See ``subrange(_:)-(Range<Int>)``.
    public init(_ slice: Slice<ByteRope>) {
        self = slice.base.subrange(slice.startIndex..<slice.endIndex)
    }
}
