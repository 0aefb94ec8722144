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
    public func connections() -> Connections {
        Connections(listener: self)
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
            /// An accepted connection.
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
                let shared = self.listener.core.shared
                // Made with the listener, for the iteration.
                let queue = shared.connections.unsafelyUnwrapped
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
