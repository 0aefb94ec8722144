//===----------------------------------------------------------------------===//
// RingIO — channels: a first-in, first-out queue.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - A first-in, first-out queue

/// A FIFO over an array with a moving head: O(1) amortized push and pop.
internal struct _FIFO<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { self.head == self.storage.count }
    var first: Element? { self.isEmpty ? nil : self.storage[self.head] }
    var count: Int { self.storage.count - self.head }

    /// The element `index` places behind the first (0: the first).
    subscript(index: Int) -> Element {
        precondition(index >= 0 && index < self.count, "_FIFO index out of range")
        return self.storage[self.head + index]!
    }

    mutating func append(_ element: Element) {
        self.storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard !self.isEmpty else { return nil }
        let element = self.storage[self.head]
        self.storage[self.head] = nil
        self.head += 1
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head >= 32 && self.head * 2 >= self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
        return element
    }

    /// Removes and returns every element, in order.
    mutating func removeAll() -> [Element] {
        let elements = self.storage[self.head...].map { $0! }
        self.storage.removeAll()
        self.head = 0
        return elements
    }

    /// Removes the elements matching `predicate`, keeping the order of the others.
    mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element?] = []
        for element in self.storage[self.head...] {
            if predicate(element!) { removed.append(element!) } else { kept.append(element) }
        }
        self.storage = kept
        self.head = 0
        return removed
    }
}
