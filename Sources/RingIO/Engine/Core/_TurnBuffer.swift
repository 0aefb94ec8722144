//===----------------------------------------------------------------------===//
// RingIO — the engine: a reusable buffer for one turn's work.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Elements gathered during a ring turn (appended), then each moved out once, in order
/// (``take(at:)``), and forgotten together (``removeTaken()``) — with no allocation once it
/// has grown to a turn's size.
///
/// An `Array` emptied with `removeAll(keepingCapacity:)` after its elements were read costs
/// about 150 instructions per turn in the generic `replaceSubrange` and the runtime's
/// `swift_arrayDestroy` (a value-witness call per element); here each element is moved out as
/// it is used, its release inlined, and emptying is setting a count.
///
/// Invariants (the only unsafe code is in this type): `storage[0..<taken]` is uninitialized
/// (moved out), `storage[taken..<count]` initialized, `taken <= count <= capacity`. Ring
/// thread only, like the core that holds it.
internal struct _TurnBuffer<Element>: ~Copyable {
    private var storage: UnsafeMutablePointer<Element>
    private var capacity: Int
    private(set) var count = 0
    private var taken = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        self.storage = .allocate(capacity: self.capacity)
    }

    deinit {
        (self.storage + self.taken).deinitialize(count: self.count - self.taken)
        self.storage.deallocate()
    }

    var isEmpty: Bool { self.count == 0 }

    mutating func append(_ element: consuming Element) {
        if self.count == self.capacity { self.grow() }
        (self.storage + self.count).initialize(to: element)
        self.count += 1
    }

    /// Moves out element `index`, the next not yet taken.
    mutating func take(at index: Int) -> Element {
        precondition(index == self.taken && index < self.count, "_TurnBuffer: elements are taken once, in order")
        self.taken += 1
        return (self.storage + index).move()
    }

    /// Forgets the elements once every one was taken.
    mutating func removeTaken() {
        precondition(self.taken == self.count, "_TurnBuffer: an element was not taken")
        self.count = 0
        self.taken = 0
    }

    private mutating func grow() {
        let capacity = self.capacity * 2
        let storage = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        (storage + self.taken).moveInitialize(from: self.storage + self.taken, count: self.count - self.taken)
        self.storage.deallocate()
        self.storage = storage
        self.capacity = capacity
    }
}
