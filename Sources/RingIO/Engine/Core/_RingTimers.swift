//===----------------------------------------------------------------------===//
// RingIO — the engine: the timers of one ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Something a ring timer calls back when its deadline has passed: on the ring thread, while
/// the ring runs the completion of its kernel timeout (see ``_RingCore/armTimer(at:target:context:)``).
internal protocol _RingTimerTarget: AnyObject {
    /// The deadline armed with `context` has passed. The timer is already gone (its token is
    /// stale): a repeating timer arms again from here.
    func ringTimerFired(context: UInt64)
}

/// Names one armed timer, for cancelling it. A token whose timer fired or was cancelled is
/// stale: its node's generation has moved on, and cancelling with it does nothing.
internal struct _RingTimerToken: Equatable, Sendable {
    fileprivate let index: UInt32
    fileprivate let generation: UInt32
}

/// The timers of one ring: a binary min-heap of deadlines (monotonic nanoseconds), ordered by
/// deadline and then by arming order.
///
/// Storage: `nodes` holds every timer, armed or free; `heap` holds the indices of the armed
/// ones in heap order, and each armed node knows its place there (`heapIndex`), so a cancel
/// by token removes it in O(log n) without a search. Freed nodes go to `freeNodes` and are
/// reused, and the three arrays keep their capacity: once they have grown to the most timers
/// armed at once, arming, firing and cancelling allocate nothing — and no syscall: the ring
/// keeps one kernel timeout armed for the earliest deadline (``_RingCore``).
///
/// Ownership: an armed node holds its target strongly, as an operation in flight is held by
/// its slot, so a repeating timer whose owner dropped every other reference still fires until
/// cancelled. A node lets go of its target when it fires, when it is cancelled, and, for the
/// timers still armed when the ring thread exits, in ``removeAll()`` — so no reference cycle
/// through the ring (target → ring core → timers → target) outlives the ring.
///
/// Confinement: a value in ``_RingCore``'s ring-thread-only state.
internal struct _RingTimers {
    private struct Node {
        var deadline: Int64 = 0
        /// Arming order, for timers with the same deadline: the first armed fires first (a
        /// 64-bit count does not wrap).
        var sequence: UInt64 = 0
        var target: (any _RingTimerTarget)?
        var context: UInt64 = 0
        /// Its place in `heap`; -1 while free.
        var heapIndex: Int32 = -1
        /// Bumped each time the node is freed, so older tokens go stale.
        var generation: UInt32 = 0
    }

    private var nodes: ContiguousArray<Node> = []
    private var heap: ContiguousArray<UInt32> = []
    private var freeNodes: ContiguousArray<UInt32> = []
    private var nextSequence: UInt64 = 0

    /// How many timers are armed.
    var count: Int { self.heap.count }

    /// The earliest deadline armed, or `nil` when none is.
    var earliestDeadline: Int64? {
        self.heap.first.map { self.nodes[Int($0)].deadline }
    }

    /// Arms a timer for `deadline` (monotonic nanoseconds) that calls `target` with `context`.
    mutating func arm(at deadline: Int64, target: any _RingTimerTarget, context: UInt64) -> _RingTimerToken {
        let index: UInt32
        if let free = self.freeNodes.popLast() {
            index = free
        } else {
            index = UInt32(self.nodes.count)
            self.nodes.append(Node())
        }
        self.nodes[Int(index)].deadline = deadline
        self.nodes[Int(index)].sequence = self.nextSequence
        self.nextSequence &+= 1
        self.nodes[Int(index)].target = target
        self.nodes[Int(index)].context = context
        let position = self.heap.count
        self.heap.append(index)
        self.nodes[Int(index)].heapIndex = Int32(position)
        self.siftUp(position)
        return _RingTimerToken(index: index, generation: self.nodes[Int(index)].generation)
    }

    /// Cancels the timer of `token`; returns whether it was still armed (a stale token — the
    /// timer fired or was cancelled already — changes nothing).
    @discardableResult
    mutating func cancel(_ token: _RingTimerToken) -> Bool {
        let index = Int(token.index)
        guard index < self.nodes.count, self.nodes[index].generation == token.generation,
            self.nodes[index].heapIndex >= 0
        else { return false }
        self.remove(at: Int(self.nodes[index].heapIndex))
        return true
    }

    /// Removes the earliest timer if its deadline is at or before `now`, and returns what to
    /// call. The caller calls it after this returns (the target may arm or cancel timers).
    mutating func popExpired(now: Int64) -> (target: any _RingTimerTarget, context: UInt64)? {
        guard let first = self.heap.first, self.nodes[Int(first)].deadline <= now else { return nil }
        let target = self.nodes[Int(first)].target!
        let context = self.nodes[Int(first)].context
        self.remove(at: 0)
        return (target, context)
    }

    /// Drops every timer (and its target), armed or not; the storage goes too.
    mutating func removeAll() {
        self.nodes = []
        self.heap = []
        self.freeNodes = []
    }

    // MARK: The heap

    /// Takes the node at heap position `position` out of the heap and frees it.
    private mutating func remove(at position: Int) {
        let index = Int(self.heap[position])
        let last = self.heap.removeLast()
        if position < self.heap.count {
            self.heap[position] = last
            self.nodes[Int(last)].heapIndex = Int32(position)
            if position > 0 && self.precedes(Int(last), Int(self.heap[(position - 1) / 2])) {
                self.siftUp(position)
            } else {
                self.siftDown(position)
            }
        }
        self.nodes[index].heapIndex = -1
        self.nodes[index].target = nil
        self.nodes[index].generation &+= 1
        self.freeNodes.append(UInt32(index))
    }

    /// Whether node `a` fires before node `b`.
    @inline(__always)
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        // Field by field: copying a whole node would retain and release its target.
        let (left, right) = (self.nodes[a].deadline, self.nodes[b].deadline)
        return left < right || (left == right && self.nodes[a].sequence < self.nodes[b].sequence)
    }

    private mutating func siftUp(_ start: Int) {
        var position = start
        let moving = self.heap[position]
        while position > 0 {
            let parent = (position - 1) / 2
            guard self.precedes(Int(moving), Int(self.heap[parent])) else { break }
            self.heap[position] = self.heap[parent]
            self.nodes[Int(self.heap[position])].heapIndex = Int32(position)
            position = parent
        }
        self.heap[position] = moving
        self.nodes[Int(moving)].heapIndex = Int32(position)
    }

    private mutating func siftDown(_ start: Int) {
        var position = start
        let moving = self.heap[position]
        let count = self.heap.count
        while true {
            var child = 2 * position + 1
            guard child < count else { break }
            if child + 1 < count && self.precedes(Int(self.heap[child + 1]), Int(self.heap[child])) {
                child += 1
            }
            guard self.precedes(Int(self.heap[child]), Int(moving)) else { break }
            self.heap[position] = self.heap[child]
            self.nodes[Int(self.heap[position])].heapIndex = Int32(position)
            position = child
        }
        self.heap[position] = moving
        self.nodes[Int(moving)].heapIndex = Int32(position)
    }
}
