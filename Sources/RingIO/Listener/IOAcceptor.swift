//===----------------------------------------------------------------------===//
// RingIO — the acceptor: listening sockets whose connections go to a handler.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

// The example below runs in Tests/RingIOTests/ListenerDocExampleTests.swift: keep the two in step.

/// A listening socket — TCP, or a Unix domain socket; one per ring with `SO_REUSEPORT` — that
/// accepts connections with io_uring's multishot accept (on the readiness engine, `accept` calls
/// on readiness) and hands each to a handler, as an ``IOConnection``: a stream channel on the
/// ring that accepted it. The acceptor of the handler API; ``IOListener`` is the one of
/// async/await. Both bind, accept, cap and shut down alike: the two types only hand the
/// connections out differently.
///
///     let acceptor = try IOAcceptor(host: "::", port: 8080, queue: ring) { event in
///         guard case .accepted(let connection) = event else { return }
///         let channel = connection.channel
///         channel.read(length: .max, queue: connection.ring) { done, data, _ in
///             if let data, !data.isEmpty {
///                 channel.write(data, queue: connection.ring) { _, _, _ in }
///             }
///             if done { channel.close() }
///         }
///     }
///     …
///     acceptor.shutdown(gracePeriod: .seconds(5), queue: ring) { print("every connection closed") }
///
/// **Placement.** An acceptor accepts on one ring (the `ring:` initializers; by default the
/// handler's queue when that is a ring, else the next ring of ``RingLoopGroup/shared``) or on
/// a group (the `group:` initializers: with ``IOListener/Options/reusePort`` one socket per ring, the
/// kernel spreading connections over them; without, one socket on `group.next()`).
///
/// Accepted sockets are close-on-exec, in blocking mode, with the socket options of
/// ``Options`` applied before they are handed out (a connection they cannot be applied to is
/// closed and reported as ``Event/failed(_:)``). The acceptor owns them: a connection's socket
/// is closed, and the connection stops counting, once its channel is closed (or every
/// reference to it dropped) and cleaned up. ``IOConnection/whenClosed(_:)`` tells you when.
///
/// **Failures** such as EMFILE and ENFILE (out of descriptors) are reported as
/// ``Event/failed(_:)``; the acceptor keeps going: it backs off (10 ms, doubling up to 1 s,
/// reset by the next accepted connection) and tries again. It never spins and never stops on
/// its own. (On Linux 6.18 an accept takes the descriptor limit when it is armed: lowering
/// RLIMIT_NOFILE below the descriptors in use does not fail an accept armed before.)
///
/// **Connection cap.** With ``IOListener/Options/maxConnections``, accepting pauses when that many
/// connections are open (handed out and not yet cleaned up), and resumes when one is cleaned
/// up. Connections the kernel completed meanwhile wait in the backlog.
///
/// **Shutdown.** ``close()`` stops accepting and leaves the open connections alone;
/// ``shutdown(gracePeriod:queue:completion:)`` (or ``shutdown(gracePeriod:)`` with async/await)
/// also ends them: each is stopped as soon as none of its writes is pending, the rest at the
/// end of the grace period, and the completion runs once every one is cleaned up.
///
/// **Swift concurrency.** ``IOListener`` hands its connections out as an `AsyncSequence`
/// instead (``IOListener/connections()``, ``IOListener/serve(_:)``).
public final class IOAcceptor: Sendable {
    /// How the acceptor binds and what it applies to accepted sockets: the options of
    /// ``IOListener``.
    public typealias Options = IOListener.Options

    /// What the handler is told.
    public enum Event: Sendable {
        /// A connection: a stream channel on the ring that accepted it. Close its channel when
        /// you are done with it (or drop every reference to it); the listener closes the socket.
        case accepted(IOConnection)
        /// Accepting failed (EMFILE, ENFILE, ENOBUFS…): the listener backs off and retries. Or
        /// an accepted connection could not be given the socket options of ``Options``: it
        /// was closed, and accepting goes on.
        case failed(Errno)
    }

    internal let core: _Listener

    /// Binds and listens on one ring, then accepts there; `handler` gets the connections.
    ///
    /// - Parameters:
    ///   - host: A numeric address (`"127.0.0.1"`, `"::1"`, `"0.0.0.0"`), `"::"` for every
    ///     IPv6 and IPv4 address (dual stack), or a name such as `"localhost"` (its first
    ///     address).
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options. ``IOListener/Options/reusePort`` only lets other
    ///     sockets bind the port too: one ring has one socket.
    ///   - ring: The ring to accept on. When `nil`: `queue` if it is a ring, else the next
    ///     ring of ``RingLoopGroup/shared`` (as ``IOChannel``'s `ring:` does).
    ///   - queue: Where `handler` runs; `nil`: on the ring that accepted the connection (or
    ///     whose accept failed), with no hop.
    ///   - handler: Called for each accepted connection and each failure. Its calls on one
    ///     queue (or, with `queue: nil`, on one ring) never overlap.
    /// - Throws: The errno of resolving, `socket`, `setsockopt`, `bind` (EADDRINUSE…),
    ///   `listen` or `getsockname`; of ``RingLoopGroup/shared``'s set-up
    ///   (its ``RingSetupError``'s `errno`) when the ring is taken from that group.
    public convenience init(
        host: String,
        port: UInt16,
        options: Options = Options(),
        ring: RingLoop? = nil,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) {
        try self.init(
            address: _POSIX.passiveStreamAddress(host: host, port: port),
            options: options,
            ring: ring,
            queue: queue,
            handler: handler
        )
    }

    /// Binds and listens on `address` on one ring, then accepts there; `handler` gets the
    /// connections. A TCP address (IPv4, IPv6), or a Unix domain socket's path or abstract name:
    ///
    ///     var options = IOAcceptor.Options()
    ///     options.removeStaleSocketFile = true              // a previous run's file
    ///     let acceptor = try IOAcceptor(
    ///         address: try SocketAddress(unixPath: "/run/app/control.sock"),
    ///         options: options, queue: nil
    ///     ) { event in … }
    ///
    /// A Unix socket bound to a path makes a socket file there, with
    /// ``IOListener/Options/socketFilePermissions`` (default: `0o777` less the umask); the listener
    /// removes it when its socket closes, if the file is still the one it made.
    ///
    /// - Parameters:
    ///   - address: Where to listen; port 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options (the TCP ones play no part on a Unix socket).
    ///   - ring: The ring to accept on. When `nil`: `queue` if it is a ring, else the next
    ///     ring of ``RingLoopGroup/shared``.
    ///   - queue: Where `handler` runs; `nil`: on the ring that accepted the connection, with
    ///     no hop.
    ///   - handler: Called for each accepted connection and each failure.
    /// - Throws: The errno of `socket`, `setsockopt`, `bind` (EADDRINUSE, EACCES, ENOENT for a
    ///   Unix path whose directory does not exist…), `chmod`, `listen` or `getsockname`; of
    ///   ``RingLoopGroup/shared``'s set-up (its ``RingSetupError``'s `errno`) when the ring is
    ///   taken from that group.
    public init(
        address: SocketAddress,
        options: Options = Options(),
        ring: RingLoop? = nil,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) {
        let rings = try _Listener.rings(ring: ring ?? queue?.asRing, options: options)
        self.core = try _Listener(
            address: address,
            options: options,
            rings: rings,
            shared: _ListenerState(options: options, queue: queue, handler: handler, connections: nil)
        )
    }

    /// Binds and listens on the rings of `group`, then accepts there; `handler` gets the
    /// connections.
    ///
    /// - Parameters:
    ///   - host: As in ``init(host:port:options:ring:queue:handler:)``.
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options.
    ///   - group: With ``IOListener/Options/reusePort``, one socket per ring of `group` (the kernel
    ///     spreads connections over them); without, one socket on `group.next()`.
    ///   - queue: Where `handler` runs; `nil`: on the ring that accepted the connection (or
    ///     whose accept failed), with no hop — with ``IOListener/Options/reusePort``, each connection is
    ///     then served where its I/O runs.
    ///   - handler: Called for each accepted connection and each failure. Its calls on one
    ///     queue (or, with `queue: nil`, on one ring) never overlap.
    /// - Throws: The errno of resolving, `socket`, `setsockopt`, `bind` (EADDRINUSE…),
    ///   `listen` or `getsockname`.
    public convenience init(
        host: String,
        port: UInt16,
        options: Options = Options(),
        group: RingLoopGroup,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) {
        try self.init(
            address: _POSIX.passiveStreamAddress(host: host, port: port),
            options: options,
            group: group,
            queue: queue,
            handler: handler
        )
    }

    /// Binds and listens on `address` on the rings of `group`, then accepts there; `handler`
    /// gets the connections. As ``init(address:options:ring:queue:handler:)``; with
    /// ``IOListener/Options/reusePort``, one TCP socket per ring of `group` (a Unix domain socket listens
    /// on `group.next()` only).
    public init(
        address: SocketAddress,
        options: Options = Options(),
        group: RingLoopGroup,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) {
        self.core = try _Listener(
            address: address,
            options: options,
            rings: _Listener.rings(group: group, options: options, address: address),
            shared: _ListenerState(options: options, queue: queue, handler: handler, connections: nil)
        )
    }

    /// The bound port (the one picked when `port` was 0); 0 for a Unix domain socket. It stays
    /// readable after ``close()``.
    public var port: UInt16 { self.core.port }

    /// The bound addresses, one per socket (`127.0.0.1:8080`, `[::]:8080`,
    /// `unix:/run/app.sock`; print one for its text). They stay readable after ``close()``.
    public var localAddresses: [SocketAddress] { self.core.boundAddresses }

    /// Accepted connections that are still open: handed out and their channel not yet
    /// cleaned up. Any thread.
    public var openConnections: Int { self.core.openConnections }

    /// The ring of the first listening socket: where RingIOServiceLifecycle runs the
    /// completion of the shutdown it starts (a ring, never the global pool, which blocking
    /// work can hold).
    package var firstRing: RingLoop { self.core.acceptors[0].ring }

    /// Stops accepting: new connection attempts are refused from now on; the listening
    /// sockets are closed on their rings once their accepts have returned. The open
    /// connections stay open (see ``shutdown(gracePeriod:queue:completion:)``). Idempotent.
    /// Dropping the last reference to the acceptor closes it too.
    public func close() {
        self.core.close()
    }

    /// Graceful shutdown: stops accepting (``close()``), lets each open connection finish the
    /// writes it has pending, and ends it; then runs `completion` on `queue`. As
    /// ``IOListener/shutdown(gracePeriod:queue:completion:)``, which describes it in full.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long pending writes may take; `.zero` stops every connection now.
    ///   - queue: Where `completion` runs.
    ///   - completion: Called once, when every connection is cleaned up.
    /// - Precondition: `gracePeriod >= .zero`.
    public func shutdown(gracePeriod: Duration, queue: some IOQueue, completion: @escaping @Sendable () -> Void) {
        self.core.shutdown(gracePeriod: gracePeriod, queue: queue, completion: completion)
    }

    /// Graceful shutdown with async/await: ``shutdown(gracePeriod:queue:completion:)``,
    /// returning once every connection is cleaned up.
    public func shutdown(gracePeriod: Duration) async {
        await self.core.shutdown(gracePeriod: gracePeriod)
    }
}
