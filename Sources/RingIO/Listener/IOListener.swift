//===----------------------------------------------------------------------===//
// RingIO — the listener: listening sockets whose connections are handed out to async/await.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

// The example below runs in Tests/RingIOTests/ListenerDocExampleTests.swift: keep the two in step.

/// A listening socket — TCP, or a Unix domain socket; one per ring with `SO_REUSEPORT` — that
/// accepts connections with io_uring's multishot accept (on the readiness engine, `accept` calls
/// on readiness) and hands each out to async/await, as an ``IOConnection``: a stream channel on
/// the ring that accepted it.
///
///     let listener = try IOListener(host: "::", port: 8080)
///     await listener.serve { connection in              // a child task on connection.ring
///         for try await data in connection.channel.reads() {
///             try await connection.channel.write(data)
///         }
///     }
///
/// ``serve(_:)`` runs a child task per connection; ``connections()`` is the `AsyncSequence`
/// underneath, for a loop of your own. ``IOAcceptor`` is the same listener for the handler
/// API: it calls a handler with each connection instead.
///
/// **Placement.** A listener accepts on one ring (the `ring:` initializers; by default the
/// next ring of ``RingLoopGroup/shared``) or on a group (the `group:` initializers: with
/// ``Options/reusePort`` one socket per ring, the kernel spreading connections over them;
/// without, one socket on `group.next()`).
///
/// Accepted sockets are close-on-exec, in blocking mode, with the socket options of
/// ``Options`` applied before they are handed out (a connection they cannot be applied to is
/// closed and reported to `acceptFailed`). The listener owns them: a connection's socket
/// is closed, and the connection stops counting, once its channel is closed (or every
/// reference to it dropped) and cleaned up. ``IOConnection/whenClosed(_:)`` tells you when.
///
/// **Failures** such as EMFILE and ENFILE (out of descriptors) are reported to
/// `acceptFailed`; the listener keeps going: it backs off (10 ms, doubling up to 1 s,
/// reset by the next accepted connection) and tries again. It never spins and never stops on
/// its own. (On Linux 6.18 an accept takes the descriptor limit when it is armed: lowering
/// RLIMIT_NOFILE below the descriptors in use does not fail an accept armed before.)
///
/// **Connection cap.** With ``Options/maxConnections``, accepting pauses when that many
/// connections are open (handed out or queued for the iteration, and not yet cleaned up), and
/// resumes when one is cleaned up. Connections the kernel completed meanwhile wait in the
/// backlog.
///
/// **Shutdown.** ``close()`` stops accepting and leaves the open connections alone;
/// ``shutdown(gracePeriod:)`` (or ``shutdown(gracePeriod:queue:completion:)`` with a handler)
/// also ends them: each is stopped as soon as none of its writes is pending, the rest at the
/// end of the grace period, and the shutdown returns once every one is cleaned up.
public final class IOListener: Sendable {
    /// How the listener binds and what it applies to accepted sockets.
    public struct Options: Sendable {
        /// The `listen(2)` backlog.
        public var backlog: Int32 = 511
        /// With a group: one socket per ring, all bound to the port with `SO_REUSEPORT`; the
        /// kernel spreads connections over them. Also lets other processes bind the port.
        public var reusePort = false
        /// `TCP_NODELAY` on accepted sockets.
        public var noDelay = true
        /// `SO_KEEPALIVE` on accepted sockets.
        public var keepAlive = false
        /// The most connections open at once (handed out, their channel not yet cleaned up);
        /// accepting pauses at the cap.
        public var maxConnections = Int.max
        /// Unix domain sockets: when a socket file is in the way of the path to bind, remove it
        /// first — if it is a socket file that no one listens on (a connect to it is refused:
        /// a server that ended without removing it). A file of another kind, or a socket a
        /// live server listens on, is left alone and the bind fails with EADDRINUSE. Default
        /// off: a file in the way fails the bind.
        public var removeStaleSocketFile = false
        /// Unix domain sockets bound to a path: the socket file's permissions, set after the
        /// bind and before the socket listens (so no client connects under other
        /// permissions). `nil` (the default): as `bind(2)` makes it, `0o777` less the umask.
        /// Connecting needs write permission on the file (and search permission on its
        /// directories).
        public var socketFilePermissions: FilePermissions?

        /// The default options, as each property documents them.
        public init() {}
    }

    internal let core: _Listener

    /// Binds and listens on one ring, then accepts there, for async/await: the connections
    /// are handed out by ``connections()`` (or ``serve(_:)``), each as an ``IOConnection``
    /// with a stream channel on the ring.
    ///
    ///     let listener = try IOListener(host: "127.0.0.1", port: 7000, ring: ring)
    ///     await listener.serve { connection in              // a child task on the ring
    ///         for try await data in connection.channel.reads() {
    ///             try await connection.channel.write(data)
    ///         }
    ///     }
    ///
    /// - Parameters:
    ///   - host: As in ``IOAcceptor/init(host:port:options:ring:queue:handler:)``.
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options. A connection counts against
    ///     ``Options/maxConnections`` until its channel's cleanup handler ran.
    ///   - ring: The ring to accept on; `nil`: the next ring of ``RingLoopGroup/shared``.
    ///   - acceptFailed: Called on the accepting ring for each accept that failed (EMFILE,
    ///     ENFILE…; the listener backs off and retries as described above), and for each
    ///     accepted connection closed because its socket options could not be set.
    /// - Throws: The errno of resolving, `socket`, `setsockopt`, `bind` (EADDRINUSE…),
    ///   `listen` or `getsockname`; of ``RingLoopGroup/shared``'s set-up
    ///   (its ``RingSetupError``'s `errno`) when the ring is taken from that group.
    public convenience init(
        host: String,
        port: UInt16,
        options: Options = Options(),
        ring: RingLoop? = nil,
        acceptFailed: (@Sendable (Errno) -> Void)? = nil
    ) throws(Errno) {
        try self.init(
            address: _POSIX.passiveStreamAddress(host: host, port: port),
            options: options,
            ring: ring,
            acceptFailed: acceptFailed
        )
    }

    /// Binds and listens on `address` on one ring, then accepts there, for the async API
    /// (``connections()``, ``serve(_:)``). A TCP address, or a Unix domain socket's path or
    /// abstract name (see ``IOAcceptor/init(address:options:ring:queue:handler:)`` for the socket file):
    ///
    ///     let listener = try IOListener(address: try SocketAddress(unixPath: "/run/app.sock"))
    ///     await listener.serve { connection in … }
    ///
    /// - Parameters:
    ///   - address: Where to listen; port 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options.
    ///   - ring: The ring to accept on; `nil`: the next ring of ``RingLoopGroup/shared``.
    ///   - acceptFailed: Called on the accepting ring for each accept that failed.
    /// - Throws: As ``IOAcceptor/init(address:options:ring:queue:handler:)``.
    public init(
        address: SocketAddress,
        options: Options = Options(),
        ring: RingLoop? = nil,
        acceptFailed: (@Sendable (Errno) -> Void)? = nil
    ) throws(Errno) {
        self.core = try _Listener(
            address: address,
            options: options,
            rings: _Listener.rings(ring: ring, options: options),
            shared: Self.state(options: options, acceptFailed: acceptFailed)
        )
    }

    /// Binds and listens on the rings of `group`, then accepts there, for the async API: the
    /// connections are handed out by ``connections()`` (or ``serve(_:)``), each as an
    /// ``IOConnection`` with a stream channel on the ring that accepted it.
    ///
    ///     var options = IOListener.Options()
    ///     options.reusePort = true                           // a socket per ring of the group
    ///     let listener = try IOListener(host: "127.0.0.1", port: 7000, options: options, group: group)
    ///     await listener.serve { connection in              // a child task on connection.ring
    ///         for try await data in connection.channel.reads() {
    ///             try await connection.channel.write(data)
    ///         }
    ///     }
    ///
    /// - Parameters:
    ///   - host: As in ``IOAcceptor/init(host:port:options:ring:queue:handler:)``.
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options. A connection counts against
    ///     ``Options/maxConnections`` until its channel's cleanup handler ran.
    ///   - group: With ``Options/reusePort``, one socket per ring of `group` (the kernel
    ///     spreads connections over them); without, one socket on `group.next()`.
    ///   - acceptFailed: Called on the accepting ring for each accept that failed (EMFILE,
    ///     ENFILE…; the listener backs off and retries as described above), and for each
    ///     accepted connection closed because its socket options could not be set.
    /// - Throws: The errno of resolving, `socket`, `setsockopt`, `bind` (EADDRINUSE…),
    ///   `listen` or `getsockname`.
    public convenience init(
        host: String,
        port: UInt16,
        options: Options = Options(),
        group: RingLoopGroup,
        acceptFailed: (@Sendable (Errno) -> Void)? = nil
    ) throws(Errno) {
        try self.init(
            address: _POSIX.passiveStreamAddress(host: host, port: port),
            options: options,
            group: group,
            acceptFailed: acceptFailed
        )
    }

    /// Binds and listens on `address` on the rings of `group`, for the async API. As
    /// ``init(address:options:ring:acceptFailed:)``; with ``Options/reusePort``, one TCP
    /// socket per ring of `group` (a Unix domain socket listens on `group.next()` only).
    public init(
        address: SocketAddress,
        options: Options = Options(),
        group: RingLoopGroup,
        acceptFailed: (@Sendable (Errno) -> Void)? = nil
    ) throws(Errno) {
        self.core = try _Listener(
            address: address,
            options: options,
            rings: _Listener.rings(group: group, options: options, address: address),
            shared: Self.state(options: options, acceptFailed: acceptFailed)
        )
    }

    /// The listener's state: the connections queued for the iteration; `acceptFailed` told of
    /// each failure.
    private static func state(
        options: Options,
        acceptFailed: (@Sendable (Errno) -> Void)?
    ) -> _ListenerState {
        _ListenerState(
            options: options,
            queue: nil,
            handler: { event in
                if case .failed(let error) = event { acceptFailed?(error) }
            },
            connections: _ConnectionQueue()
        )
    }

    /// The bound port (the one picked when `port` was 0); 0 for a Unix domain socket. It stays
    /// readable after ``close()``.
    public var port: UInt16 { self.core.port }

    /// The bound addresses, one per socket (`127.0.0.1:8080`, `[::]:8080`,
    /// `unix:/run/app.sock`; print one for its text). They stay readable after ``close()``.
    public var localAddresses: [SocketAddress] { self.core.boundAddresses }

    /// Accepted connections that are still open: handed out or queued for ``connections()``,
    /// and their channel not yet cleaned up. Any thread.
    public var openConnections: Int { self.core.openConnections }

    /// The ring of the first listening socket: where RingIOServiceLifecycle runs the
    /// completion of the shutdown it starts (a ring, never the global pool, which blocking
    /// work can hold).
    package var firstRing: RingLoop { self.core.acceptors[0].ring }

    /// Stops accepting: new connection attempts are refused from now on; the listening
    /// sockets are closed on their rings once their accepts have returned. ``connections()``
    /// ends after the connections already accepted. The open connections stay open (see
    /// ``shutdown(gracePeriod:)``). Idempotent. Dropping the last reference to the listener
    /// (an iteration of ``connections()`` holds one) closes it too.
    public func close() {
        self.core.close()
    }

    /// Graceful shutdown: stops accepting (``close()``), lets each open connection finish the
    /// writes it has pending, and ends it; then runs `completion` on `queue`.
    ///
    /// Each open connection's channel is closed with ``IOChannel/CloseFlags/stop`` as soon as
    /// none of its writes (or file sends) is pending on its ring — at once for an idle one; a
    /// write scheduled meanwhile is waited for too, one that reaches the ring after the stop
    /// is refused (ECANCELED). Its pending read ends with ECANCELED after the bytes already
    /// received. A connection with a ``IOConnection/whenShuttingDown(_:)`` handler is asked
    /// instead, and closes its channel itself. At
    /// the end of `gracePeriod`, the connections still open are stopped whatever they have
    /// pending: their writes end with ECANCELED and what was not sent. `completion` runs once
    /// every connection accepted is cleaned up (its socket closed, its
    /// ``IOConnection/whenClosed(_:)`` handler run) — at once when none is open.
    ///
    /// Event-driven: each connection's stop comes with the completion of its last write, the
    /// deadline is one timer per ring (in the ring's timer queue, no thread waits).
    ///
    ///     listener.shutdown(gracePeriod: .seconds(5), queue: DispatchQueue.global()) {
    ///         group.shutdown()      // not from a ring's thread: a ring cannot stop itself
    ///     }
    ///
    /// A second call adds its completion; the first call's grace period stands. The rings
    /// must keep running until `completion` has run (a ring shut down first drops its timer).
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
    ///
    ///     await listener.shutdown(gracePeriod: .seconds(5))
    public func shutdown(gracePeriod: Duration) async {
        await self.core.shutdown(gracePeriod: gracePeriod)
    }
}
