//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A node of a rope's persistent B-tree.
///
/// Invariants (checked by `ByteRope._validateInvariants()`):
/// - A leaf (`height == 0`) holds slices and no children; an inner node holds children,
///   all of height `height - 1`, and no slices.
/// - A node other than the root holds between `minEntries` and `maxEntries` entries; the
///   root holds 1…`maxEntries` (at least 2 when it is an inner node, and at least 3 regions
///   in all — smaller ropes are stored in `ByteRope` itself: `.one`, `.two`).
/// - `count` and `regionCount` are the byte and slice totals of the subtree.
///
/// Nodes are shared between ropes. A node is mutated only while uniquely referenced;
/// otherwise it is copied first (copy-on-write, one path at a time).
@usableFromInline
internal final class _Node {
    internal static let maxEntries = 16
    internal static let minEntries = maxEntries / 2

    // MARK: Immutable after init
    @usableFromInline
    internal let height: Int

    // MARK: Mutated only while uniquely referenced
    // `@exclusivity(unchecked)`: mutation happens only through a uniquely referenced node,
    // on one thread, and the recursive appends hold an access to a parent's `children` while
    // they mutate the child — dynamic enforcement would cost more than the append itself
    // (measured: 60% of an append loop in swift_beginAccess).
    @usableFromInline @exclusivity(unchecked)
    internal var count: Int
    @usableFromInline @exclusivity(unchecked)
    internal var regionCount: Int
    @usableFromInline @exclusivity(unchecked)
    internal var slices: ContiguousArray<_Slice>
    @usableFromInline @exclusivity(unchecked)
    internal var children: ContiguousArray<_Node>

    /// A leaf over `slices`. Its array is allocated once, with room for an overfull node.
    internal init(slices: some Collection<_Slice>) {
        self.height = 0
        self.slices = []
        self.slices.reserveCapacity(_Node.maxEntries + 1)
        self.slices.append(contentsOf: slices)
        self.children = []
        self.count = 0
        self.regionCount = 0
        self.recomputeTotals()
    }

    /// An inner node over `children`, which all have the same height. Its array is allocated
    /// once, with room for an overfull node.
    internal init(children: some Collection<_Node>) {
        self.height = children.first!.height + 1
        self.slices = []
        self.children = []
        self.children.reserveCapacity(_Node.maxEntries + 1)
        self.children.append(contentsOf: children)
        self.count = 0
        self.regionCount = 0
        self.recomputeTotals()
    }

    /// A leaf of three slices: a rope outgrowing its inline forms.
    internal convenience init(_ first: _Slice, _ second: _Slice, _ third: _Slice) {
        self.init(slices: CollectionOfOne(first))
        self.slices.append(second)
        self.slices.append(third)
        self.recomputeTotals()
    }

    /// An inner node of two children of the same height: a root that split, or two joined
    /// trees.
    internal convenience init(_ left: _Node, _ right: _Node) {
        self.init(children: CollectionOfOne(left))
        self.children.append(right)
        self.recomputeTotals()
    }

    private init(copying other: _Node) {
        self.height = other.height
        self.count = other.count
        self.regionCount = other.regionCount
        self.slices = other.slices
        self.children = other.children
    }

    @inlinable
    internal var entryCount: Int {
        self.height == 0 ? self.slices.count : self.children.count
    }

    private func recomputeTotals() {
        var count = 0
        var regionCount = 0
        if self.height == 0 {
            for slice in self.slices { count += slice.count }
            regionCount = self.slices.count
        } else {
            for child in self.children {
                count += child.count
                regionCount += child.regionCount
            }
        }
        self.count = count
        self.regionCount = regionCount
    }

    /// Makes `node` safe to mutate: copies it unless it is uniquely referenced.
    @inline(__always)
    private static func makeUnique(_ node: inout _Node) {
        if !isKnownUniquelyReferenced(&node) {
            node = _Node(copying: node)
        }
    }

    /// Moves the upper half of this overfull node's entries into a new right sibling.
    private func splitOffSuffix() -> _Node {
        let keep = self.entryCount / 2
        let sibling: _Node
        if self.height == 0 {
            sibling = _Node(slices: self.slices[keep...])
            self.slices.removeSubrange(keep...)
        } else {
            sibling = _Node(children: self.children[keep...])
            self.children.removeSubrange(keep...)
        }
        self.count -= sibling.count
        self.regionCount -= sibling.regionCount
        return sibling
    }

    /// Moves the lower half of this overfull node's entries into a new left sibling.
    private func splitOffPrefix() -> _Node {
        let move = self.entryCount / 2
        let sibling: _Node
        if self.height == 0 {
            sibling = _Node(slices: self.slices[..<move])
            self.slices.removeSubrange(..<move)
        } else {
            sibling = _Node(children: self.children[..<move])
            self.children.removeSubrange(..<move)
        }
        self.count -= sibling.count
        self.regionCount -= sibling.regionCount
        return sibling
    }
}

@available(*, unavailable)
extension _Node: Sendable {}

// MARK: - Appending and prepending

// Why the results stay balanced: a node that receives entries is either a non-root node
// (≥ minEntries already) or the root; an overfull node (maxEntries + 1 … 2·maxEntries
// entries) splits into two halves of at least (maxEntries + 1) / 2 ≥ minEntries each. So
// every node but the root keeps minEntries…maxEntries entries, and the height of a rope of
// r regions stays within log_minEntries(r) + 1.

extension _Node {
    /// Appends `slice` at the right edge of the subtree `node`.
    ///
    /// - Returns: A new right sibling of `node` when `node` overflowed and split.
    /// - Complexity: O(height); amortized O(1) allocations when `node`'s right spine is
    ///   uniquely referenced.
    internal static func append(_ slice: _Slice, to node: inout _Node) -> _Node? {
        self.makeUnique(&node)
        node.count += slice.count
        node.regionCount += 1
        if node.height == 0 {
            node.slices.append(slice)
            return node.slices.count > maxEntries ? node.splitOffSuffix() : nil
        }
        guard let sibling = self.append(slice, to: &node.children[node.children.count - 1]) else {
            return nil
        }
        node.children.append(sibling)
        return node.children.count > maxEntries ? node.splitOffSuffix() : nil
    }

    /// Inserts `slice` at the left edge of the subtree `node`.
    ///
    /// - Returns: A new left sibling of `node` when `node` overflowed and split.
    /// - Complexity: O(height).
    internal static func prepend(_ slice: _Slice, to node: inout _Node) -> _Node? {
        self.makeUnique(&node)
        node.count += slice.count
        node.regionCount += 1
        if node.height == 0 {
            node.slices.insert(slice, at: 0)
            return node.slices.count > maxEntries ? node.splitOffPrefix() : nil
        }
        guard let sibling = self.prepend(slice, to: &node.children[0]) else {
            return nil
        }
        node.children.insert(sibling, at: 0)
        return node.children.count > maxEntries ? node.splitOffPrefix() : nil
    }

    /// Appends the tree `other`, no taller than `node`, at the right edge of `node`.
    ///
    /// A full `other` (≥ minEntries entries) becomes a new child of the spine node one level
    /// above it, shared as it is; a smaller one (a root) is merged with the node of its own
    /// height on `node`'s right spine, which is the root or holds ≥ minEntries itself.
    ///
    /// - Returns: A new right sibling of `node` when `node` overflowed and split.
    /// - Complexity: O(node.height − other.height + 1).
    private static func append(_ other: _Node, to node: inout _Node) -> _Node? {
        assert(other.height <= node.height)
        self.makeUnique(&node)
        node.count += other.count
        node.regionCount += other.regionCount
        if node.height == other.height {
            if node.height == 0 {
                node.slices.append(contentsOf: other.slices)
            } else {
                node.children.append(contentsOf: other.children)
            }
            return node.entryCount > maxEntries ? node.splitOffSuffix() : nil
        }
        if node.height == other.height + 1 && other.entryCount >= minEntries {
            node.children.append(other)
        } else {
            guard let sibling = self.append(other, to: &node.children[node.children.count - 1]) else {
                return nil
            }
            node.children.append(sibling)
        }
        return node.children.count > maxEntries ? node.splitOffSuffix() : nil
    }

    /// Inserts the tree `other`, no taller than `node`, at the left edge of `node`; the mirror
    /// image of `append(_:to:)`.
    ///
    /// - Returns: A new left sibling of `node` when `node` overflowed and split.
    /// - Complexity: O(node.height − other.height + 1).
    private static func prepend(_ other: _Node, to node: inout _Node) -> _Node? {
        assert(other.height <= node.height)
        self.makeUnique(&node)
        node.count += other.count
        node.regionCount += other.regionCount
        if node.height == other.height {
            if node.height == 0 {
                node.slices.insert(contentsOf: other.slices, at: 0)
            } else {
                node.children.insert(contentsOf: other.children, at: 0)
            }
            return node.entryCount > maxEntries ? node.splitOffPrefix() : nil
        }
        if node.height == other.height + 1 && other.entryCount >= minEntries {
            node.children.insert(other, at: 0)
        } else {
            guard let sibling = self.prepend(other, to: &node.children[0]) else {
                return nil
            }
            node.children.insert(sibling, at: 0)
        }
        return node.children.count > maxEntries ? node.splitOffPrefix() : nil
    }

    /// Concatenates two valid trees; the result replaces `left`.
    ///
    /// - Complexity: O(|left.height − right.height| + 1).
    internal static func concat(_ left: inout _Node, _ right: _Node) {
        if left.height == right.height && left.entryCount >= minEntries && right.entryCount >= minEntries {
            // Two full trees of one height: share both whole under a new root.
            left = _Node(left, right)
        } else if left.height >= right.height {
            if let sibling = self.append(right, to: &left) {
                left = _Node(left, sibling)
            }
        } else {
            var root = right
            if let sibling = self.prepend(left, to: &root) {
                root = _Node(sibling, root)
            }
            left = root
        }
    }
}

// MARK: - Lookup

extension _Node {
    /// The slice holding byte `offset` of this subtree, its region index and its start.
    ///
    /// - Precondition: `0 <= offset < count` (checked by the caller).
    /// - Complexity: O(height · maxEntries).
    @usableFromInline
    internal func locate(byte offset: Int) -> (slice: _Slice, index: Int, start: Int) {
        var node = self
        var remaining = offset
        var index = 0
        var start = 0
        while node.height > 0 {
            for child in node.children {
                if remaining < child.count {
                    node = child
                    break
                }
                remaining -= child.count
                start += child.count
                index += child.regionCount
            }
        }
        for slice in node.slices {
            if remaining < slice.count {
                return (slice, index, start)
            }
            remaining -= slice.count
            start += slice.count
            index += 1
        }
        preconditionFailure("ByteRope: corrupt tree (byte offset past the end of a node)")
    }

    /// The leaf holding region `index` of this subtree, the position of that region in the
    /// leaf, and the byte offset at which the leaf starts.
    ///
    /// - Precondition: `0 <= index < regionCount` (checked by the caller).
    /// - Complexity: O(height · maxEntries).
    @usableFromInline
    internal func leaf(containingRegion index: Int) -> (leaf: _Node, slot: Int, leafStart: Int) {
        var node = self
        var remaining = index
        var start = 0
        while node.height > 0 {
            for child in node.children {
                if remaining < child.regionCount {
                    node = child
                    break
                }
                remaining -= child.regionCount
                start += child.count
            }
        }
        precondition(remaining < node.slices.count, "ByteRope: corrupt tree (region index past a leaf)")
        return (node, remaining, start)
    }

    /// Appends the bytes `range` (relative to this subtree) to `result`, sharing every whole
    /// child the range covers and trimming the slices at its two ends.
    ///
    /// - Complexity: O(height²) node visits in the worst case: the two boundary paths, plus
    ///   the joins of the shared children into `result`.
    internal func appendBytes(_ range: Range<Int>, to result: inout ByteRope) {
        if range.lowerBound == 0 && range.upperBound == self.count {
            result.append(ByteRope(_root: self))
            return
        }
        var start = 0
        if self.height == 0 {
            for slice in self.slices {
                let end = start + slice.count
                if end > range.lowerBound {
                    let lower = Swift.max(range.lowerBound - start, 0)
                    let upper = Swift.min(range.upperBound - start, slice.count)
                    result._append(slice.slice(lower..<upper))
                }
                start = end
                if start >= range.upperBound { return }
            }
        } else {
            for child in self.children {
                let end = start + child.count
                if end > range.lowerBound {
                    let lower = Swift.max(range.lowerBound - start, 0)
                    let upper = Swift.min(range.upperBound - start, child.count)
                    child.appendBytes(lower..<upper, to: &result)
                }
                start = end
                if start >= range.upperBound { return }
            }
        }
    }

    /// Calls `body` with each leaf of the subtree, in order, until it returns false.
    ///
    /// - Returns: Whether every leaf was visited.
    /// - Complexity: O(nodes); recursion depth `height`; allocates nothing.
    @inlinable
    internal func forEachLeaf(_ body: (_Node) throws -> Bool) rethrows -> Bool {
        if self.height == 0 {
            return try body(self)
        }
        for index in 0..<self.children.count {
            guard try self.children[index].forEachLeaf(body) else { return false }
        }
        return true
    }
}

extension ByteRope {
    /// A rope whose content is the subtree `root`, which satisfies the root invariants or is
    /// a non-root node of a valid tree.
    internal init(_root root: _Node) {
        switch root.regionCount {
        case 1:
            self._repr = .one(root.height == 0 ? root.slices[0] : root.leaf(containingRegion: 0).leaf.slices[0])
        case 2:
            let first = root.leaf(containingRegion: 0)
            let second = root.leaf(containingRegion: 1)
            self._repr = .two(_Pair(first.leaf.slices[first.slot], second.leaf.slices[second.slot]))
        default:
            self._repr = .tree(root)
        }
    }
}
