//===----------------------------------------------------------------------===//
// RingIO — the listener: connections accepted for the async API.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// Connections accepted for the async API and not yet taken by the iteration: pushed on the
/// accepting rings, taken by the iterating task, under a lock.
internal final class _ConnectionQueue: Sendable {
    /// Connections waiting before accepting pauses.
    static let limit = 128

    private struct State {
        var connections = _FIFO<IOConnection>()
        var ended = false
        /// Thrown once after the last connection when the iteration ended by a failure.
        var failure: Errno?
        var waiter: UnsafeContinuation<Result<IOConnection?, Errno>, Never>?

        /// The end, once the connections are taken: the failure once, then `nil`.
        mutating func takeEnd() -> Result<IOConnection?, Errno> {
            guard let failure = self.failure else { return .success(nil) }
            self.failure = nil
            return .failure(failure)
        }

        /// Takes the first waiting connection; `crossed` when that brought the queue under the
        /// limit (accepting may resume).
        mutating func popFirst(count: borrowing Atomic<Int>) -> (IOConnection, crossed: Bool)? {
            guard let connection = self.connections.popFirst() else { return nil }
            let before = count.subtract(1, ordering: .releasing).oldValue
            return (connection, before == _ConnectionQueue.limit)
        }
    }

    private let state = _Lock(State())
    /// How many wait; read without the lock by the acceptors.
    private let count = Atomic<Int>(0)

    var isFull: Bool { self.count.load(ordering: .acquiring) >= Self.limit }

    /// What ``push(accepted:on:shared:)`` did with a descriptor.
    enum PushOutcome {
        /// Counted as live and queued (or handed to the waiting task): the connection is the
        /// iteration's.
        case counted
        /// Not taken: the queue is at its limit or the listener at its cap. The caller holds
        /// the descriptor and offers it again when accepting resumes.
        case full
        /// Not taken: the iteration has ended. The caller closes the descriptor.
        case ended
    }

    /// Counts an accepted descriptor as a live connection of the listener and queues it as an
    /// ``IOConnection`` on the acceptor's ring, all under the lock ``end(failing:)`` takes: a
    /// connection counted in ``IOListener/openConnections`` is produced by the iteration even
    /// when the listener is closed the instant after (it was counted before the iteration's
    /// end was decided). The acceptor's ring thread.
    func push(accepted fd: CInt, by acceptor: _Acceptor) -> PushOutcome {
        let shared = acceptor.shared
        enum Outcome {
            case counted, full, ended
            case handed(UnsafeContinuation<Result<IOConnection?, Errno>, Never>, IOConnection)
        }
        let outcome: Outcome = self.state.withLock { state in
            if state.ended { return .ended }
            if self.count.load(ordering: .relaxed) >= Self.limit { return .full }
            let live = shared.live.add(1, ordering: .acquiringAndReleasing).newValue
            if live > shared.options.maxConnections {
                shared.live.subtract(1, ordering: .acquiringAndReleasing)
                return .full
            }
            let connection = IOConnection(accepted: fd, by: acceptor)
            if let waiter = state.waiter {
                state.waiter = nil
                return .handed(waiter, connection)
            }
            state.connections.append(connection)
            self.count.add(1, ordering: .releasing)
            return .counted
        }
        switch outcome {
        case .counted: return .counted
        case .full: return .full
        case .ended: return .ended
        case .handed(let waiter, let connection):
            waiter.resume(returning: .success(connection))
            return .counted
        }
    }

    /// The listener is closed (or, with `failing`, its ring shut down): the iteration ends
    /// after the connections waiting now — normally, or by throwing `failing`. The first call
    /// decides.
    func end(failing failure: Errno? = nil) {
        let waiter: UnsafeContinuation<Result<IOConnection?, Errno>, Never>? = self.state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            guard let waiter = state.waiter else {
                state.failure = failure
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: failure.map { .failure($0) } ?? .success(nil))
    }

    /// The next connection, or `nil` at the end, when there is one now. Resumes the
    /// listener's acceptors when this brings the queue under the limit.
    func take(resuming listener: _ListenerState) -> Result<IOConnection?, Errno>? {
        let (ready, crossed): (Result<IOConnection?, Errno>?, Bool) = self.state.withLock { state in
            if let (connection, crossed) = state.popFirst(count: self.count) {
                return (.success(connection), crossed)
            }
            return (state.ended ? state.takeEnd() : nil, false)
        }
        if crossed { listener.resumeAcceptors() }
        return ready
    }

    /// Resumes `continuation` with the next connection or the end: now if there is one, else
    /// when it comes — or with ECANCELED when the waiting task is (or gets) cancelled.
    func wait(
        _ continuation: UnsafeContinuation<Result<IOConnection?, Errno>, Never>,
        resuming listener: _ListenerState
    ) {
        var crossed = false
        let ready: Result<IOConnection?, Errno>? = self.state.withLock { state in
            if let (connection, crossedLimit) = state.popFirst(count: self.count) {
                crossed = crossedLimit
                return .success(connection)
            }
            if state.ended { return state.takeEnd() }
            // The task's cancellation flag is set before its cancellation handler runs, and the
            // handler takes this lock: either it is seen here, or the handler sees the waiter.
            if Task.isCancelled { return .failure(.canceled) }
            precondition(state.waiter == nil, "IOListener.connections(): iterated from two tasks at once")
            state.waiter = continuation
            return nil
        }
        if crossed { listener.resumeAcceptors() }
        if let ready { continuation.resume(returning: ready) }
    }

    /// The waiting task was cancelled.
    func cancelWait() {
        let waiter: UnsafeContinuation<Result<IOConnection?, Errno>, Never>? = self.state.withLock { state in
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: .failure(.canceled))
    }
}
