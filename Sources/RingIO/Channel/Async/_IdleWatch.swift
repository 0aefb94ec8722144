//===----------------------------------------------------------------------===//
// RingIO — channels: the idle timeout of a reads() iteration.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// Ends a `reads()` iteration's read with ETIMEDOUT once no byte has arrived for `timeout`.
///
/// One ring timer per iteration, armed for the last arrival plus the timeout and moved only
/// when it fires: an arrival costs one store (the ring's turn start, a time the ring has
/// already read), not a timer operation.
internal final class _IdleWatch: _RingTimerTarget, @unchecked Sendable {
    // @unchecked: after init, every member is touched on the ring thread only — armed there
    // (``start()``), told of arrivals by the read's deliveries there, fired by the ring's timers.
    private let core: _RingCore
    private let timeout: Int64
    /// Weak: the operation holds the stream that holds this watch.
    private weak var operation: _ReadOperation?
    /// When bytes last arrived (or the watch started): CLOCK_MONOTONIC nanoseconds.
    private var lastArrival: Int64 = 0

    init(core: _RingCore, timeout: Int64, operation: _ReadOperation) {
        self.core = core
        self.timeout = timeout
        self.operation = operation
    }

    /// Starts the watch, on the ring thread: now, or through the ring's inbox after the
    /// operation itself (the two are queued in order).
    func start() {
        if self.core.isRingThread {
            self.arm(from: _Clock.nanoseconds(realtime: false))
        } else {
            self.core.enqueue { self.arm(from: _Clock.nanoseconds(realtime: false)) }
        }
    }

    /// Bytes arrived. Ring thread.
    @inline(__always)
    func arrived() {
        self.lastArrival = self.core.turnStart
    }

    private func arm(from now: Int64) {
        self.lastArrival = now
        let (deadline, overflow) = now.addingReportingOverflow(self.timeout)
        guard !overflow else { return }  // never, in practice
        _ = self.core.armTimer(at: deadline, target: self)
    }

    func ringTimerFired(context: UInt64) {
        guard let operation = self.operation, operation.scheduled, !operation.isFinished else { return }
        let (deadline, overflow) = self.lastArrival.addingReportingOverflow(self.timeout)
        guard !overflow else { return }
        if _Clock.nanoseconds(realtime: false) >= deadline {
            operation.terminate(.timedOut)
        } else {
            _ = self.core.armTimer(at: deadline, target: self)
        }
    }
}
