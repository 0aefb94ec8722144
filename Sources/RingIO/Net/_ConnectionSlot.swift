//===----------------------------------------------------------------------===//
// RingIO — networking: what RingIO keeps of one open connection.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What RingIO keeps of one open connection: its socket, its addresses once read, and, for
/// an accepted one, its place on the ring that accepted it. It is also its channel's cleanup
/// (``_ChannelState/Cleanup/connection(_:)``) and, for a connection handed to a listener's
/// handler, the job that hands it over (``_RingRunnable``): no closure per connection.
internal final class _ConnectionSlot: @unchecked Sendable {
    // @unchecked: `channel`, `index` and `acceptor` are touched only on the connection's ring
    // thread (set there before the connection is handed out); `handOff` is set there before
    // the slot is delivered to the handler's queue and taken by that one delivery (the
    // delivery orders the two); `closeHandler`, `shutdownHandler` and `addresses` are locked;
    // `fd` and `ring` are immutable.

    /// The handler of ``IOConnection/whenClosed(_:)``.
    enum CloseHandler {
        case none
        case set(@Sendable () -> Void)
        case closed
    }

    /// The handler of ``IOConnection/whenShuttingDown(_:)``, in a type of its own: a closure
    /// stored in a generic container (the lock's value) or returned from one
    /// (`_Lock.withLock`) is wrapped in a reabstraction thunk — an allocation — where a
    /// closure inside a struct is not.
    struct ShutdownHandler {
        var body: (@Sendable () -> Void)?
    }

    /// The addresses read so far, and whether the socket is closed (its number may then name
    /// another file: it is never asked again).
    struct Addresses {
        var local: SocketAddress?
        var remote: SocketAddress?
        var closed = false
    }

    let fd: CInt
    /// The ring the connection's channel runs on.
    let ring: RingLoop
    /// The channel's state, to stop it (graceful shutdown). Not strong: the connection closes
    /// when its user drops the channel, and the state's cleanup holds this slot. Unowned
    /// rather than weak (a weak reference gives the state a side table, an allocation per
    /// connection): it is read only by the acceptor, for a slot in its open connections —
    /// and the slot leaves them in the channel's cleanup, which the state runs, so it is
    /// alive whenever it is read.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) unowned var channel: _ChannelState?
    /// The acceptor that accepted the connection, which it leaves once cleaned up (`nil` for
    /// a dialled one). Weak: the acceptor holds the listener's handler, which may keep its
    /// connections (and so their channels, and their cleanups, this slot) — a strong
    /// reference made a cycle that outlived the ring when a channel was never cleaned up
    /// (its ring shut down first).
    private weak var acceptor: _Acceptor?
    /// Where the slot is in its acceptor's open connections.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var index = 0
    let closeHandler = _Lock(CloseHandler.none)
    /// The handler of ``IOConnection/whenShuttingDown(_:)``; taken when a shutdown begins.
    let shutdownHandler = _Lock(ShutdownHandler())
    private let addresses: _Lock<Addresses>
    /// The listener's handler and the connection's channel, between the accept and the
    /// handler's call (``handOut(_:to:queue:)``).
    private var handOff: (handler: @Sendable (IOAcceptor.Event) -> Void, channel: IOChannel)?

    init(fd: CInt, remote: SocketAddress?, ring: RingLoop, acceptor: _Acceptor?) {
        self.fd = fd
        self.ring = ring
        self.acceptor = acceptor
        self.addresses = _Lock(Addresses(local: nil, remote: remote))
    }

    /// The local or remote address: read from the socket on first use while it is open.
    func address(local: Bool) -> SocketAddress? {
        self.addresses.withLock { addresses in
            if let known = local ? addresses.local : addresses.remote { return known }
            guard !addresses.closed else { return nil }
            let read = try? (local ? _POSIX.localAddress(of: self.fd) : _POSIX.remoteAddress(of: self.fd))
            guard let read else { return nil }
            let address = SocketAddress(storage: read.address, length: read.length)
            if local { addresses.local = address } else { addresses.remote = address }
            return address
        }
    }

    /// Closes the socket: the channel is cleaned up. Ring thread.
    func closeSocket() {
        self.addresses.withLock { addresses in
            addresses.closed = true
            _POSIX.close(self.fd)
        }
    }

    /// The channel is cleaned up (its cleanup, on the ring thread): closes the socket, runs
    /// the close handler, and leaves the acceptor's open connections.
    func channelCleanedUp() {
        self.closeSocket()
        // The handler first: a shutdown's completion comes after every one of them.
        self.runCloseHandler()
        self.acceptor?.closed(self)
    }

    /// The channel is cleaned up: runs the close handler if one is set, lets go of the
    /// shutdown handler (either may hold the connection, which holds this slot). Ring thread.
    private func runCloseHandler() {
        self.shutdownHandler.withLock { $0.body = nil }
        // The state itself comes out of the lock, not the closure (see `ShutdownHandler`).
        let state: CloseHandler = self.closeHandler.withLock { state in
            defer { state = .closed }
            return state
        }
        if case .set(let handler) = state { handler() }
    }

    /// Takes the handler of ``IOConnection/whenShuttingDown(_:)``, if one is set: a shutdown
    /// begins. Ring thread.
    func takeShutdownHandler() -> ShutdownHandler {
        self.shutdownHandler.withLock { handler in
            defer { handler.body = nil }
            return handler
        }
    }

    /// Hands the connection, whose channel is `channel`, to `handler` on `queue` (the
    /// accepting ring when `nil`), with the slot itself as the job. Ring thread.
    func handOut(
        _ channel: IOChannel,
        to handler: @escaping @Sendable (IOAcceptor.Event) -> Void,
        queue: (any IOQueue)?
    ) {
        self.ring.core.assertOnRingThread()
        self.handOff = (handler, channel)
        if let queue {
            self.ring.core.deliver(self, on: queue)
        } else {
            self.ring.core.deliverOnRing(self)
        }
    }
}

extension _ConnectionSlot: _RingRunnable {
    /// Calls the listener's handler with the connection (``handOut(_:to:queue:)``). On the
    /// handler's queue, once.
    func runDelivered() {
        guard let (handler, channel) = self.handOff.take() else { return }
        handler(.accepted(IOConnection(channel: channel, slot: self)))
    }

    /// Never delivered (its ring is gone): the channel goes, and closes.
    func discardedByRing() {
        self.handOff = nil
    }
}
