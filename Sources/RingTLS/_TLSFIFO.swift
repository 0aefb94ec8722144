//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a first-in first-out queue, for _TLSCore.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A first-in first-out queue with O(1) amortized operations at both ends used here.
internal struct _TLSFIFO<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { self.head == self.storage.count }
    var first: Element? { self.isEmpty ? nil : self.storage[self.head] }
    var last: Element? { self.isEmpty ? nil : self.storage[self.storage.count - 1] }

    mutating func append(_ element: Element) {
        self.storage.append(element)
    }

    mutating func prepend(_ element: Element) {
        if self.head > 0 {
            self.head -= 1
            self.storage[self.head] = element
        } else {
            self.storage.insert(element, at: 0)
        }
    }

    mutating func replaceLast(_ element: Element) {
        precondition(!self.isEmpty)
        self.storage[self.storage.count - 1] = element
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

    mutating func removeAll() {
        self.storage.removeAll()
        self.head = 0
    }
}

extension _TLSFIFO where Element: AnyObject {
    /// Removes `element` (by identity); whether it was there.
    mutating func remove(_ element: Element) -> Bool {
        guard let index = self.storage[self.head...].firstIndex(where: { $0 === element }) else { return false }
        self.storage.remove(at: index)
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        }
        return true
    }
}
