//===----------------------------------------------------------------------===//
// RingIO — channels: a short ordered list whose first two elements need no allocation.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// An ordered list whose first two elements live in the value itself; the rest go to an array.
///
/// For the lists of one connection's life that hold one or two elements almost always — a
/// descriptor's channels, a channel's operations in flight (a read and a write), the channels
/// whose cleanup waits: an array grown from empty allocated its buffer once per connection
/// for each of them.
///
/// Invariant: `slot1` is set only when `slot0` is, and `rest` has elements only when
/// `slot1` is set; the order is `slot0`, `slot1`, then `rest`.
internal struct _InlineList<Element>: RandomAccessCollection {
    private var slot0: Element?
    private var slot1: Element?
    private var rest: [Element] = []

    init() {}

    var startIndex: Int { 0 }

    var endIndex: Int {
        guard self.slot1 != nil else { return self.slot0 == nil ? 0 : 1 }
        return 2 + self.rest.count
    }

    /// - Complexity: O(1).
    subscript(position: Int) -> Element {
        switch position {
        case 0: return self.slot0!
        case 1: return self.slot1!
        default: return self.rest[position - 2]
        }
    }

    /// - Complexity: O(1) amortized.
    mutating func append(_ element: Element) {
        if self.slot0 == nil {
            self.slot0 = element
        } else if self.slot1 == nil {
            self.slot1 = element
        } else {
            self.rest.append(element)
        }
    }

    /// Removes the element at `position`, keeping the others' order.
    ///
    /// - Complexity: O(`count`).
    @discardableResult
    mutating func remove(at position: Int) -> Element {
        precondition(position >= 0 && position < self.endIndex, "_InlineList index out of range")
        let removed: Element
        switch position {
        case 0:
            removed = self.slot0.take()!
            self.slot0 = self.slot1.take()
            if !self.rest.isEmpty { self.slot1 = self.rest.removeFirst() }
        case 1:
            removed = self.slot1.take()!
            if !self.rest.isEmpty { self.slot1 = self.rest.removeFirst() }
        default:
            removed = self.rest.remove(at: position - 2)
        }
        return removed
    }

    /// Removes every element (and the array's storage, when there was one).
    mutating func removeAll() {
        self.slot0 = nil
        self.slot1 = nil
        if !self.rest.isEmpty { self.rest = [] }
    }
}

extension _InlineList where Element: AnyObject {
    /// Removes `element` (the first occurrence of this object); returns whether it was there.
    ///
    /// - Complexity: O(`count`).
    @discardableResult
    mutating func remove(_ element: Element) -> Bool {
        guard let index = self.firstIndex(where: { $0 === element }) else { return false }
        self.remove(at: index)
        return true
    }
}
