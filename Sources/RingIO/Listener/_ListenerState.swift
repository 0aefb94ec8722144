//===----------------------------------------------------------------------===//
// RingIO — the listener: what its acceptors share.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Where a listener's graceful shutdown is.
internal enum _ShutdownState {
    case running
    /// Acceptors still with connections open; the completions to run when none is left.
    case draining(acceptorsLeft: Int, completions: [(any IOQueue, @Sendable () -> Void)])
    case finished
}

/// What the acceptors of one listener share. Any thread: atomics; the handler is immutable.
internal final class _ListenerState: @unchecked Sendable {
    // @unchecked: `acceptors` is written once, in the listener's init, before any acceptor
    // starts (a weak reference is loaded atomically); everything else is immutable or atomic.
    let options: IOListener.Options
    /// Where the handler runs; `nil`: on the accepting ring.
    let queue: (any IOQueue)?
    let handler: @Sendable (IOAcceptor.Event) -> Void
    /// The async API's connections waiting for the iteration; `nil` with a handler.
    let connections: _ConnectionQueue?
    let live = Atomic<Int>(0)
    let closed = Atomic<Bool>(false)
    let shutdown = _Lock(_ShutdownState.running)
    /// Weak: each acceptor holds this state, and a connection's cleanup may outlive the
    /// listener. The listener holds its acceptors, and the ring holds one while it has an
    /// operation in flight; a strong reference here made a cycle that kept every acceptor,
    /// its ring and this state alive for the life of the process.
    var acceptors: [_WeakAcceptor] = []

    init(
        options: IOListener.Options,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (IOAcceptor.Event) -> Void,
        connections: _ConnectionQueue?
    ) {
        self.options = options
        self.queue = queue
        self.handler = handler
        self.connections = connections
    }

    var atCap: Bool { self.live.load(ordering: .acquiring) >= self.options.maxConnections }

    /// Accepting must pause: at the cap, or the async iteration is too far behind.
    var mustPause: Bool { self.atCap || (self.connections?.isFull ?? false) }

    /// A connection's channel is cleaned up (its socket closed): it stops counting.
    func connectionClosed() {
        let before = self.live.subtract(1, ordering: .acquiringAndReleasing).oldValue
        if before >= self.options.maxConnections {
            self.resumeAcceptors()
        }
    }

    /// An acceptor has no connection left open during a shutdown: the completions run once
    /// every acceptor has said so.
    func acceptorDrained() {
        let completions: [(any IOQueue, @Sendable () -> Void)] = self.shutdown.withLock { state in
            guard case .draining(let left, let completions) = state else { return [] }
            if left > 1 {
                state = .draining(acceptorsLeft: left - 1, completions: completions)
                return []
            }
            state = .finished
            return completions
        }
        for (queue, completion) in completions { queue.enqueue(completion) }
    }

    /// Accepting may go on (a connection closed, the iteration took one from a full queue).
    func resumeAcceptors() {
        for acceptor in self.acceptors { acceptor.acceptor?.resumeIfPaused() }
    }
}

/// An acceptor as ``_ListenerState`` holds it.
internal struct _WeakAcceptor {
    weak var acceptor: _Acceptor?
}
