//===----------------------------------------------------------------------===//
// RingIO — networking: a connected stream socket, accepted or dialled.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A connected stream socket — TCP or Unix domain — as a stream channel on a ring: accepted
/// by an ``IOListener``, or dialled with ``connect(host:port:options:ring:)`` and
/// ``connect(to:options:ring:)``.
///
/// Serve it on ``ring`` — handlers with `queue: connection.ring`, or a task that prefers
/// `connection.ring.taskExecutor` (``IOListener/serve(_:)`` does) — and its I/O completes on
/// the ring thread with no hop. RingIO owns the socket: it closes it (and a listener stops
/// counting the connection, for ``IOListener/Options/maxConnections``) once the channel is
/// closed and cleaned up. Close the channel when you are done, or drop every reference to it;
/// ``whenClosed(_:)`` tells you when that has happened.
///
/// The channel is a stream channel like any other, under every channel rule (water marks,
/// intervals, barriers, close and stop); ``IOChannel/shutdownOutput(queue:handler:)`` ends
/// the connection's sending side after the writes scheduled before it (a half-close).
public struct IOConnection: Sendable {
    /// The ring that accepted (or dialled) the connection: its channel's I/O runs there.
    public var ring: RingLoop { self.slot.ring }
    /// A stream channel on the connected socket, on ``ring``; its cleanup handler (on ``ring``)
    /// closes the socket. Low water is 1 byte (deliver as data arrives).
    public let channel: IOChannel
    // Two references, the ring kept in the slot: one retain fewer each time a connection is
    // copied.
    private let slot: _ConnectionSlot

    /// A connection whose channel and slot are made already.
    init(channel: IOChannel, slot: _ConnectionSlot) {
        self.channel = channel
        self.slot = slot
    }

    /// Wraps an accepted descriptor and registers it with `acceptor`. On its ring's thread.
    init(accepted fd: CInt, by acceptor: _Acceptor) {
        let ring = acceptor.ring
        ring.core.assertOnRingThread()
        let slot = _ConnectionSlot(fd: fd, remote: nil, ring: ring, acceptor: acceptor)
        self.slot = slot
        // The slot is the channel's cleanup (``_ConnectionSlot/channelCleanedUp()``): it closes
        // the socket, runs the close handler and leaves the acceptor.
        self.channel = IOChannel(socket: fd, ring: ring, slot: slot)
        slot.channel = self.channel.state
        acceptor.opened(slot)
    }

    /// Wraps a descriptor that `connect` connected to `remote`. On `ring`'s thread.
    init(connected fd: CInt, to remote: SocketAddress, on ring: RingLoop) {
        ring.core.assertOnRingThread()
        let slot = _ConnectionSlot(fd: fd, remote: remote, ring: ring, acceptor: nil)
        self.slot = slot
        self.channel = IOChannel(socket: fd, ring: ring, slot: slot)
        slot.channel = self.channel.state
    }

    /// Hands this connection, just accepted, to a listener's `handler` on `queue` (the
    /// accepting ring when `nil`). On its ring's thread.
    func handOut(to handler: @escaping @Sendable (IOAcceptor.Event) -> Void, queue: (any IOQueue)?) {
        self.slot.handOut(self.channel, to: handler, queue: queue)
    }

    /// The connection's own address: the listener's address (with a port per connection on a
    /// wildcard listener, the address the peer dialled), or the address a dialled connection
    /// was bound to (an ephemeral port, or ``ConnectOptions/localAddress``). `nil` once the
    /// socket is closed, unless read before.
    ///
    /// Read from the socket (`getsockname`) on first use, then kept. Any thread.
    public var localAddress: SocketAddress? {
        self.slot.address(local: true)
    }

    /// The peer's address: the address dialled, or the address an accepted connection came
    /// from. For a Unix domain peer that did not bind its socket, an unnamed address
    /// (`"unix:"`). `nil` once the socket is closed, or the peer gone (ENOTCONN), unless read
    /// before.
    ///
    /// For an accepted connection it is read from the socket (`getpeername`) on first use,
    /// then kept; for a dialled one it is the address that answered. Any thread.
    public var remoteAddress: SocketAddress? {
        self.slot.address(local: false)
    }

    /// Runs `handler` once the connection is over — its channel closed and cleaned up, its
    /// socket closed, a listener no longer counting it — on ``ring``'s thread; soon, on
    /// ``ring``, when that has happened already. One handler per connection: let go of the
    /// connection's state there (the handler may hold it until then).
    ///
    /// - Precondition: No handler was set before.
    public func whenClosed(_ handler: @escaping @Sendable () -> Void) {
        let closedAlready = self.slot.closeHandler.withLock { state in
            switch state {
            case .none:
                state = .set(handler)
                return false
            case .set:
                preconditionFailure("IOConnection.whenClosed(_:): a handler is set already")
            case .closed:
                return true
            }
        }
        if closedAlready { self.ring.enqueue(handler) }
    }

    /// Takes over this connection's part in the listener's graceful shutdown
    /// (``IOListener/shutdown(gracePeriod:queue:completion:)``): when the shutdown begins,
    /// `handler` runs on ``ring``'s thread instead of the listener stopping the channel once
    /// its writes are done. Finish what the connection owes (a response being prepared, say),
    /// then close the channel; at the end of the grace period the listener stops it all the
    /// same. For a server whose connection state knows more than the channel does: a write
    /// scheduled from another queue is not on the ring yet when the shutdown begins.
    ///
    /// Set it before the connection can be shut down (in the accept handler); one per
    /// connection. A dialled connection has no listener: its handler never runs.
    ///
    /// - Precondition: No handler was set before.
    public func whenShuttingDown(_ handler: @escaping @Sendable () -> Void) {
        self.slot.shutdownHandler.withLock { current in
            precondition(current.body == nil, "IOConnection.whenShuttingDown(_:): a handler is set already")
            current.body = handler
        }
    }
}

extension IOConnection: Hashable, Identifiable {
    /// A connection's identity: two copies of one connection have the same, two connections
    /// open at the same time never do. (An identity may be given again to a connection made
    /// after this one was dropped, as an object's address may: keep the connection, as a
    /// dictionary keyed by it does, and its identity stays its own.)
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        internal let object: ObjectIdentifier

        /// The identity's text, for logs: `connection-` and a hexadecimal number, the same for
        /// the connection's life.
        public var description: String {
            "connection-" + String(UInt(bitPattern: self.object), radix: 16)
        }
    }

    /// This connection's identity: equal for the copies of one connection.
    public var id: ID { ID(object: ObjectIdentifier(self.slot)) }

    /// Whether `lhs` and `rhs` are the same connection (copies of one connection value).
    public static func == (lhs: IOConnection, rhs: IOConnection) -> Bool {
        lhs.slot === rhs.slot
    }

    /// Hashes the connection's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self.slot))
    }
}
