//===----------------------------------------------------------------------===//
// RingIO — the listener: accepted connections for Swift concurrency.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

extension IOListener {
    /// The accepted connections, in the order they were accepted on each ring: an
    /// `AsyncSequence` that ends when the listener is closed (after the connections already
    /// accepted), and throws `Errno.canceled` when the iterating task is cancelled or a ring
    /// the listener accepts on shuts down.
    ///
    ///     try await withThrowingDiscardingTaskGroup { group in
    ///         for try await connection in listener.connections() {
    ///             group.addTask(executorPreference: connection.ring.taskExecutor) {
    ///                 try await handle(connection)
    ///             }
    ///         }
    ///     }
    ///
    /// ``serve(_:)`` is that loop, with the listener closed when it ends. Iterate from one task
    /// at a time. While the iteration is 128 connections behind, accepting pauses (the kernel's
    /// backlog holds the rest).
    ///
    /// - Precondition: The listener was made without a handler
    ///   (``init(host:port:options:ring:acceptFailed:)`` or
    ///   ``init(host:port:options:group:acceptFailed:)``).
    public func connections() -> Connections {
        precondition(
            self.shared.connections != nil,
            "IOListener.connections(): this listener hands its connections to its handler"
        )
        return Connections(listener: self)
    }

    /// Serves every accepted connection with `handler`, each in a child task that prefers the
    /// ring that accepted it (its channel's awaits complete there with no hop), until the
    /// listener is closed or the calling task is cancelled; then closes the listener and
    /// returns once every connection's task has ended.
    ///
    ///     await listener.serve { connection in
    ///         for try await data in connection.channel.reads() {
    ///             try await connection.channel.write(data)
    ///         }
    ///     }
    ///
    /// An error thrown by `handler` ends its own connection only. When `handler` returns (or
    /// throws), the connection's channel is closed; the socket is closed and the connection
    /// stops counting against ``Options/maxConnections`` once the channel is cleaned up.
    /// Cancelling the calling task stops accepting and cancels every connection's task: their
    /// awaits on the channel throw `Errno.canceled`.
    public func serve(_ handler: @escaping @Sendable (IOConnection) async throws -> Void) async {
        await withDiscardingTaskGroup { group in
            do throws(Errno) {
                for try await connection in self.connections() {
                    group.addTask(executorPreference: connection.ring.taskExecutor) {
                        do {
                            try await handler(connection)
                        } catch {
                            // This connection's end; the others go on.
                        }
                        connection.channel.close()
                    }
                }
            } catch {
                // Cancelled: stop accepting; the group cancels the connections' tasks.
            }
            self.close()
        }
    }

    /// The accepted connections; see ``IOListener/connections()``.
    public struct Connections: AsyncSequence, Sendable {
        public typealias Element = IOConnection
        public typealias Failure = Errno

        let listener: IOListener

        public func makeAsyncIterator() -> Iterator {
            Iterator(listener: self.listener)
        }

        /// Produces the accepted connections.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = IOConnection
            public typealias Failure = Errno

            /// Held: the listener stays open while it is iterated.
            private let listener: IOListener

            init(listener: IOListener) {
                self.listener = listener
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(Errno) -> IOConnection? {
                let shared = self.listener.shared
                let queue = shared.connections!
                if let ready = queue.take(resuming: shared) {
                    return try ready.get()
                }
                // `actor` passed on and captured: the closures stay on the caller's actor.
                return try await withTaskCancellationHandler(
                    operation: {
                        await withUnsafeContinuation(isolation: actor) { continuation in
                            queue.wait(continuation, resuming: shared)
                        }
                    },
                    onCancel: {
                        queue.cancelWait()
                    },
                    isolation: actor
                ).get()
            }

            public mutating func next() async throws(Errno) -> IOConnection? {
                try await self.next(isolation: nil)
            }
        }
    }
}

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
