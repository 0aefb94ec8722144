//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension ByteRope {
    /// Re-validates the whole rope after a mutation when built with
    /// `-DBYTEROPES_INTERNAL_CHECKS`; compiles to nothing otherwise.
    @inline(__always)
    internal func _checkInvariants() {
        #if BYTEROPES_INTERNAL_CHECKS
        self._validateInvariants()
        #endif
    }

    /// Checks every structural invariant of the rope, trapping with a message on the first
    /// violation: no empty slice; a tree only for three regions or more; all leaves at the
    /// same depth; every non-root node between `minEntries` and `maxEntries` entries, the
    /// root 1…`maxEntries` (2… when inner); cached counts equal to the real ones.
    ///
    /// For tests and the fuzzer. - Complexity: O(*r*).
    package func _validateInvariants() {
        switch self._repr {
        case .empty:
            break
        case .one(let slice):
            precondition(slice.count > 0, "empty slice in a one-region rope")
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            precondition(first.count > 0 && second.count > 0, "empty slice in a two-region rope")
        case .tree(let root):
            precondition(root.regionCount >= 3, "tree of \(root.regionCount) regions: should be inline")
            precondition(root.entryCount >= 1 && root.entryCount <= _Node.maxEntries, "root entry count")
            precondition(root.height == 0 || root.entryCount >= 2, "inner root with one child")
            root._validate(isRoot: true)
        }
    }

    /// The height of the rope's tree (0 for inline ropes and one-leaf trees). For tests.
    package var _treeHeight: Int {
        if case .tree(let root) = self._repr { return root.height }
        return 0
    }
}

extension _Node {
    fileprivate func _validate(isRoot: Bool) {
        if !isRoot {
            precondition(
                self.entryCount >= _Node.minEntries && self.entryCount <= _Node.maxEntries,
                "node of \(self.entryCount) entries outside \(_Node.minEntries)...\(_Node.maxEntries)"
            )
        }
        var count = 0
        var regionCount = 0
        if self.height == 0 {
            precondition(self.children.isEmpty, "leaf with children")
            for slice in self.slices {
                precondition(slice.count > 0, "empty slice in a leaf")
                count += slice.count
            }
            regionCount = self.slices.count
        } else {
            precondition(self.slices.isEmpty, "inner node with slices")
            for child in self.children {
                precondition(child.height == self.height - 1, "child height \(child.height) under \(self.height)")
                child._validate(isRoot: false)
                count += child.count
                regionCount += child.regionCount
            }
        }
        precondition(count == self.count, "cached byte count \(self.count), real \(count)")
        precondition(regionCount == self.regionCount, "cached region count \(self.regionCount), real \(regionCount)")
    }
}
