//===----------------------------------------------------------------------===//
// RingIO — networking: a datagram receive with handlers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// The receiver of ``IODatagramChannel/receive(queue:handler:)``: calls the handler on the
/// ring thread directly when its queue is the ring, else through one job per batch on its
/// queue (the calls queued in order under a lock, one drainer at a time).
internal final class _DatagramHandlerReceiver: _DatagramReceiver, _RingRunnable, @unchecked Sendable {
    // @unchecked: `state` is set once before the receiver starts (ordered by the ring's
    // inbox); `calls` is locked; `draining` is touched by the one running drain.
    private enum Call {
        case datagram(Datagram)
        case error(Errno)
        case end(Errno)
    }

    private let queue: any IOQueue
    private let isRing: Bool
    private let handler: @Sendable (Bool, Datagram?, Errno?) -> Void
    /// The channel's state, to resume it. Strong (a weak reference would give the state a
    /// side table, and every retain and release of it would take the slow path): the state
    /// lets go of the receiver when the receive ends, which breaks the cycle.
    private var state: _DatagramState?
    /// Calls not yet run, and whether a drain is scheduled or running.
    private let calls = _Lock<(pending: [Call], scheduled: Bool, paused: Bool)>(([], false, false))
    private var draining: [Call] = []

    init(queue: any IOQueue, isRing: Bool, handler: @escaping @Sendable (Bool, Datagram?, Errno?) -> Void) {
        self.queue = queue
        self.isRing = isRing
        self.handler = handler
    }

    func attach(to state: _DatagramState) {
        self.state = state
    }

    func deliver(_ datagram: Datagram) -> Bool {
        if self.isRing {
            self.handler(false, datagram, nil)
            return true
        }
        return self.enqueue(.datagram(datagram))
    }

    func transient(_ error: Errno) {
        if self.isRing {
            self.handler(false, nil, error)
        } else {
            _ = self.enqueue(.error(error))
        }
    }

    func end(_ error: Errno) {
        if self.isRing, self.state?.core.isRingThread ?? false {
            self.handler(true, nil, error)
        } else {
            _ = self.enqueue(.end(error))
        }
    }

    func takeUndelivered() -> [Datagram] { [] }  // a handler receive stops only at the end

    /// Queues a call; returns false when the queue is now too far behind.
    private func enqueue(_ call: Call) -> Bool {
        let (schedule, behind) = self.calls.withLock { calls -> (Bool, Bool) in
            calls.pending.append(call)
            let schedule = !calls.scheduled
            calls.scheduled = true
            let behind = calls.pending.count >= _DatagramBacklog.pauseAt
            if behind { calls.paused = true }
            return (schedule, behind)
        }
        if schedule {
            if let core = self.state?.core, core.isRingThread {
                core.deliver(self, on: self.queue)
            } else {
                self.queue.enqueue { self.runDelivered() }
            }
        }
        return !behind
    }

    /// Runs the queued calls, on the handler's queue.
    func runDelivered() {
        while true {
            let resume = self.calls.withLock { calls -> Bool? in
                guard !calls.pending.isEmpty else {
                    calls.scheduled = false
                    return nil
                }
                swap(&calls.pending, &self.draining)
                let resume = calls.paused
                calls.paused = false
                return resume
            }
            guard let resume else { return }
            if resume { self.state?.resume(self) }
            for call in self.draining {
                switch call {
                case .datagram(let datagram): self.handler(false, datagram, nil)
                case .error(let error): self.handler(false, nil, error)
                case .end(let error): self.handler(true, nil, error)
                }
            }
            self.draining.removeAll(keepingCapacity: true)
        }
    }
}
