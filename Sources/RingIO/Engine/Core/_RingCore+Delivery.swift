//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring delivering work to queues.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _RingCore {
    // MARK: Ring thread: delivering to queues

    /// Runs `work` on `queue`: inline after the current batch when `queue` is this ring,
    /// otherwise grouped with the turn's other work for the same DispatchQueue into one `async`.
    internal func deliver(on queue: some IOQueue, _ work: @escaping @Sendable () -> Void) {
        self.deliver(.closure(work), on: queue)
    }

    /// As ``deliver(on:_:)`` for an object that runs itself: no closure is made on the ring's
    /// own queue or a DispatchQueue (a channel operation's handler calls, once per batch).
    internal func deliver(_ runnable: some _RingRunnable, on queue: some IOQueue) {
        self.deliver(.runnable(runnable), on: queue)
    }

    /// As ``deliver(_:on:)`` with this ring as the queue, known by the caller: no cast.
    internal func deliverOnRing(_ runnable: some _RingRunnable) {
        self.assertOnRingThread()
        self.localJobs.append(.runnable(runnable))
    }

    func deliver(_ job: _RingJob, on queue: some IOQueue) {
        self.assertOnRingThread()
        if let ring = queue.asRing, ring.core === self {
            self.localJobs.append(job)
        } else if let dispatchQueue = queue.asDispatchQueue {
            if let index = self.dispatchBatches.firstIndex(where: { $0.queue === dispatchQueue }) {
                self.dispatchBatches[index].work.append(job)
            } else {
                self.dispatchBatches.append((dispatchQueue, [job]))
            }
        } else {
            queue.enqueue { job.run() }
        }
    }

    func flushDispatchBatches() {
        // Most turns have none (handlers on the ring itself): no array work then.
        guard !self.dispatchBatches.isEmpty else { return }
        for batch in self.dispatchBatches {
            let work = batch.work
            batch.queue.async {
                for item in work { item.run() }
            }
        }
        self.dispatchBatches.removeAll(keepingCapacity: true)
    }
}
