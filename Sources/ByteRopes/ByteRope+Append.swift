//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension ByteRope {
    /// Appends the regions of `other` to this rope, without copying any bytes.
    ///
    /// The regions of the result are those of `self` followed by those of `other`; adjacent
    /// regions are never merged.
    ///
    ///     var message = ByteRope(copying: "Hello, ".utf8)
    ///     message.append(ByteRope(copying: "World!".utf8))
    ///     message.regionCount // 2
    ///
    /// - Parameter other: The rope to append.
    /// - Complexity: O(log *r*) for *r* regions in the result. Appending a rope of one or two
    ///   regions to a rope this value owns alone is amortized O(1) in allocations, so an
    ///   append loop is linear.
    public mutating func append(_ other: consuming ByteRope) {
        if self.isEmpty {
            // The other rope moves in: nothing retained, nothing released.
            self = other
            return
        }
        switch other._repr {
        case .empty:
            return
        case .one(let slice):
            self._append(slice)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            self._append(first)
            self._append(second)
        case .tree(let otherRoot):
            self._append(tree: otherRoot, whole: other)
        }
        self._checkInvariants()
    }

    /// Appends a copy of the bytes of `bytes` as one new region.
    ///
    /// - Parameter bytes: The bytes to copy. Nothing is appended when it is empty.
    /// - Complexity: O(*n* + log *r*); one allocation for the new region.
    public mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        self.append(ByteRope(copying: bytes))
    }

    /// A rope of the regions of `lhs` followed by those of `rhs`; no bytes are copied.
    ///
    /// - Complexity: O(log *r*) for *r* regions in the result.
    @inlinable
    public static func + (lhs: ByteRope, rhs: ByteRope) -> ByteRope {
        var result = lhs
        result.append(rhs)
        return result
    }

    /// Appends the regions of `rhs` to `lhs`; no bytes are copied.
    ///
    /// - Complexity: O(log *r*) for *r* regions in the result.
    @inlinable
    public static func += (lhs: inout ByteRope, rhs: ByteRope) {
        lhs.append(rhs)
    }

    /// Appends one slice.
    internal mutating func _append(_ slice: _Slice) {
        switch self._repr {
        case .empty:
            self._repr = .one(slice)
        case .one(let first):
            self._repr = .two(_Pair(first, slice))
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            self._repr = .tree(_Node(first, second, slice))
        case .tree(var root):
            // Drop our own reference first so that `root` can be uniquely referenced.
            self._repr = .empty
            if let sibling = _Node.append(slice, to: &root) {
                root = _Node(root, sibling)
            }
            self._repr = .tree(root)
        }
    }

    /// Appends a rope of three or more regions whose tree is `otherRoot`.
    private mutating func _append(tree otherRoot: _Node, whole other: ByteRope) {
        switch self._repr {
        case .empty:
            self = other
        case .one(let first):
            var root = otherRoot
            if let sibling = _Node.prepend(first, to: &root) {
                root = _Node(sibling, root)
            }
            self._repr = .tree(root)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            var root = otherRoot
            if let sibling = _Node.prepend(second, to: &root) {
                root = _Node(sibling, root)
            }
            if let sibling = _Node.prepend(first, to: &root) {
                root = _Node(sibling, root)
            }
            self._repr = .tree(root)
        case .tree(var root):
            self._repr = .empty
            _Node.concat(&root, otherRoot)
            self._repr = .tree(root)
        }
    }
}
