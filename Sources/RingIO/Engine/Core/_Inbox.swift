//===----------------------------------------------------------------------===//
// RingIO — the engine: the lock-free inbox through which other threads reach a ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization

/// A multi-producer, single-consumer list of jobs: closures, operations to submit, and Swift
/// concurrency jobs for the ring's executors.
///
/// Producers push with one compare-and-exchange on the head; the ring thread takes the whole
/// list with one exchange and reverses it into push order. There is no pop of a single node,
/// so there is no ABA problem, and no lock anywhere. Once the ring thread has exited, a
/// producer may take the list itself (``drain()``): whoever exchanges the head takes those
/// nodes, so each job is taken exactly once.
internal final class _Inbox: @unchecked Sendable {
    // @unchecked: the head is an atomic; a node is written only before the exchange that
    // publishes it and read only after the exchange that takes it.
    /// The most recently pushed node (a retained `_Node`), or nil.
    private let head = Atomic<UnsafeMutableRawPointer?>(nil)

    private final class _Node {
        let job: _RingJob
        var next: UnsafeMutableRawPointer?

        init(_ job: _RingJob) {
            self.job = job
        }
    }

    deinit {
        _ = self.drain()
    }

    /// Adds `job`. Any thread.
    internal func push(_ job: _RingJob) {
        let node = _Node(job)
        let pointer = Unmanaged.passRetained(node).toOpaque()
        var expected = self.head.load(ordering: .relaxed)
        while true {
            node.next = expected
            let (exchanged, current) = self.head.compareExchange(
                expected: expected,
                desired: pointer,
                ordering: .sequentiallyConsistent
            )
            if exchanged { return }
            expected = current
        }
    }

    /// Whether no job is waiting. Any thread; exact only for the consumer.
    internal var isEmpty: Bool {
        self.head.load(ordering: .sequentiallyConsistent) == nil
    }

    /// Takes every waiting job, oldest first. The consumer, or any thread once the ring thread
    /// has exited.
    internal func drain() -> [_RingJob] {
        var jobs: [_RingJob] = []
        self.takeAll { jobs.append($0) }
        return jobs
    }

    /// Appends every waiting job to `jobs`, oldest first. The consumer only.
    internal func drain(into jobs: inout _TurnBuffer<_RingJob>) {
        self.takeAll { jobs.append($0) }
    }

    /// Takes the list with one exchange, turns it into push order (reversing its links in
    /// place), and hands each job to `body`, letting go of its node.
    @inline(__always)
    private func takeAll(_ body: (_RingJob) -> Void) {
        guard var pointer = self.head.exchange(nil, ordering: .acquiring) else { return }
        // Newest first as pushed: reverse the links so the oldest comes first.
        var previous: UnsafeMutableRawPointer?
        while true {
            let node = Unmanaged<_Node>.fromOpaque(pointer).takeUnretainedValue()
            let next = node.next
            node.next = previous
            previous = pointer
            guard let next else { break }
            pointer = next
        }
        var current = previous
        while let pointer = current {
            let node = Unmanaged<_Node>.fromOpaque(pointer).takeRetainedValue()
            current = node.next
            body(node.job)
        }
    }
}
