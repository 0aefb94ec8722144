//===----------------------------------------------------------------------===//
// RingIO — the listener: TCP sockets accepting with multishot accept.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// The example below runs in Tests/RingIOTests/ListenerDocExampleTests.swift: keep the two in step.

/// A listening TCP or Unix domain socket (or one per ring, with `SO_REUSEPORT`) that accepts
/// connections with io_uring's multishot accept (on the readiness engine, `accept` calls on
/// readiness) and hands each out as an ``IOConnection``: a stream channel on the ring that
/// accepted it.
///
///     let listener = try IOListener(host: "::", port: 8080, queue: ring) { event in
///         guard case .accepted(let connection) = event else { return }
///         let channel = connection.channel
///         channel.read(offset: 0, length: .max, queue: connection.ring) { done, data, _ in
///             if let data, !data.isEmpty {
///                 channel.write(offset: 0, data: data, queue: connection.ring) { _, _, _ in }
///             }
///             if done { channel.close() }
///         }
///     }
///     …
///     listener.shutdown(gracePeriod: .seconds(5), queue: ring) { print("every connection closed") }
///
/// **Placement.** A listener accepts on one ring (the `ring:` initializers; by default the
/// handler's queue when that is a ring, else the next ring of ``RingLoopGroup/shared``) or on
/// a group (the `group:` initializers: with ``Options/reusePort`` one socket per ring, the
/// kernel spreading connections over them; without, one socket on `group.next()`).
///
/// Accepted sockets are close-on-exec, in blocking mode, with the socket options of
/// ``Options`` applied before they are handed out (a connection they cannot be applied to is
/// closed and reported as ``Event/failed(_:)``). The listener owns them: a connection's socket
/// is closed, and the connection stops counting, once its channel is closed (or every
/// reference to it dropped) and cleaned up. ``IOConnection/whenClosed(_:)`` tells you when.
///
/// **Failures** such as EMFILE and ENFILE (out of descriptors) are reported as
/// ``Event/failed(_:)``; the listener keeps going: it backs off (10 ms, doubling up to 1 s,
/// reset by the next accepted connection) and tries again. It never spins and never stops on
/// its own. (On Linux 6.18 an accept takes the descriptor limit when it is armed: lowering
/// RLIMIT_NOFILE below the descriptors in use does not fail an accept armed before.)
///
/// **Connection cap.** With ``Options/maxConnections``, accepting pauses when that many
/// connections are open (handed out and not yet cleaned up), and resumes when one is cleaned
/// up. Connections the kernel completed meanwhile wait in the backlog.
///
/// **Shutdown.** ``close()`` stops accepting and leaves the open connections alone;
/// ``shutdown(gracePeriod:queue:completion:)`` (or ``shutdown(gracePeriod:)`` with async/await)
/// also ends them: each is stopped as soon as none of its writes is pending, the rest at the
/// end of the grace period, and the completion runs once every one is cleaned up.
///
/// **Swift concurrency.** A listener made without a handler hands its connections out as an
/// `AsyncSequence` instead (``connections()``, ``serve(_:)``).
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

    private let acceptors: [_Acceptor]
    internal let shared: _ListenerState
    /// The bound addresses, read once the sockets listen: their descriptors close with the
    /// listener (and their numbers may then name someone else's), their addresses do not change.
    private let boundAddresses: [SocketAddress]

    /// Binds and listens on one ring, then accepts there; `handler` gets the connections.
    ///
    /// - Parameters:
    ///   - host: A numeric address (`"127.0.0.1"`, `"::1"`, `"0.0.0.0"`), `"::"` for every
    ///     IPv6 and IPv4 address (dual stack), or a name such as `"localhost"` (its first
    ///     address).
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options. ``Options/reusePort`` only lets other
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
    ///     var options = IOListener.Options()
    ///     options.removeStaleSocketFile = true              // a previous run's file
    ///     let listener = try IOListener(
    ///         address: try SocketAddress(unixPath: "/run/app/control.sock"),
    ///         options: options, queue: nil
    ///     ) { event in … }
    ///
    /// A Unix socket bound to a path makes a socket file there, with
    /// ``Options/socketFilePermissions`` (default: `0o777` less the umask); the listener
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
        let rings = try Self.rings(ring: ring ?? queue?.asRing, options: options)
        (self.shared, self.acceptors, self.boundAddresses) = try Self.start(
            address: address,
            options: options,
            rings: rings,
            queue: queue,
            handler: handler
        )
    }

    /// Binds and listens on the rings of `group`, then accepts there; `handler` gets the
    /// connections.
    ///
    /// - Parameters:
    ///   - host: As in ``init(host:port:options:ring:queue:handler:)``.
    ///   - port: The port; 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options.
    ///   - group: With ``Options/reusePort``, one socket per ring of `group` (the kernel
    ///     spreads connections over them); without, one socket on `group.next()`.
    ///   - queue: Where `handler` runs; `nil`: on the ring that accepted the connection (or
    ///     whose accept failed), with no hop — with ``Options/reusePort``, each connection is
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
    /// ``Options/reusePort``, one TCP socket per ring of `group` (a Unix domain socket listens
    /// on `group.next()` only).
    public init(
        address: SocketAddress,
        options: Options = Options(),
        group: RingLoopGroup,
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) {
        (self.shared, self.acceptors, self.boundAddresses) = try Self.start(
            address: address,
            options: options,
            rings: Self.rings(group: group, options: options, address: address),
            queue: queue,
            handler: handler
        )
    }

    /// Binds and listens on one ring, then accepts there, for the async API: the connections
    /// are handed out by ``connections()`` (or ``serve(_:)``), each as an ``IOConnection``
    /// with a stream channel on the ring. (ListenerDocExampleTests runs this example.)
    ///
    ///     let listener = try IOListener(host: "127.0.0.1", port: 7000, ring: ring)
    ///     await listener.serve { connection in              // a child task on the ring
    ///         for try await data in connection.channel.reads() {
    ///             try await connection.channel.write(data)
    ///         }
    ///     }
    ///
    /// - Parameters:
    ///   - host: As in ``init(host:port:options:ring:queue:handler:)``.
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
    /// abstract name (see ``init(address:options:ring:queue:handler:)`` for the socket file):
    ///
    ///     let listener = try IOListener(address: try SocketAddress(unixPath: "/run/app.sock"))
    ///     await listener.serve { connection in … }
    ///
    /// - Parameters:
    ///   - address: Where to listen; port 0 picks a free one (read it from ``port``).
    ///   - options: Socket and accepting options.
    ///   - ring: The ring to accept on; `nil`: the next ring of ``RingLoopGroup/shared``.
    ///   - acceptFailed: Called on the accepting ring for each accept that failed.
    /// - Throws: As ``init(address:options:ring:queue:handler:)``.
    public init(
        address: SocketAddress,
        options: Options = Options(),
        ring: RingLoop? = nil,
        acceptFailed: (@Sendable (Errno) -> Void)? = nil
    ) throws(Errno) {
        (self.shared, self.acceptors, self.boundAddresses) = try Self.start(
            address: address,
            options: options,
            rings: Self.rings(ring: ring, options: options),
            acceptFailed: acceptFailed
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
    ///   - host: As in ``init(host:port:options:ring:queue:handler:)``.
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
        (self.shared, self.acceptors, self.boundAddresses) = try Self.start(
            address: address,
            options: options,
            rings: Self.rings(group: group, options: options, address: address),
            acceptFailed: acceptFailed
        )
    }

    /// The listener's state for the async API, and its sockets accepting on `rings`.
    private static func start(
        address: SocketAddress,
        options: Options,
        rings: [RingLoop],
        acceptFailed: (@Sendable (Errno) -> Void)?
    ) throws(Errno) -> (_ListenerState, [_Acceptor], [SocketAddress]) {
        let shared = _ListenerState(
            options: options,
            queue: rings[0],
            handler: { event in
                if case .failed(let error) = event { acceptFailed?(error) }
            },
            connections: _ConnectionQueue()
        )
        let (acceptors, bound) = try Self.bind(address, options: options, rings: rings, shared: shared)
        return (shared, acceptors, bound)
    }

    /// The listener's state for a handler, and its sockets accepting on `rings`.
    private static func start(
        address: SocketAddress,
        options: Options,
        rings: [RingLoop],
        queue: (any IOQueue)?,
        handler: @escaping @Sendable (Event) -> Void
    ) throws(Errno) -> (_ListenerState, [_Acceptor], [SocketAddress]) {
        let shared = _ListenerState(options: options, queue: queue, handler: handler, connections: nil)
        let (acceptors, bound) = try Self.bind(address, options: options, rings: rings, shared: shared)
        return (shared, acceptors, bound)
    }

    /// The rings of `group` to accept on: every one with ``Options/reusePort``, else the next.
    private static func rings(group: RingLoopGroup, options: Options, address: SocketAddress) -> [RingLoop] {
        Self.checkOptions(options)
        return options.reusePort && address.family != .unix ? group.rings : [group.next()]
    }

    /// `ring`, or the next ring of the shared group.
    private static func rings(ring: RingLoop?, options: Options) throws(Errno) -> [RingLoop] {
        Self.checkOptions(options)
        if let ring { return [ring] }
        do throws(RingSetupError) {
            return [try RingLoopGroup.shared.next()]
        } catch {
            throw error.errno
        }
    }

    private static func checkOptions(_ options: Options) {
        precondition(options.maxConnections > 0, "IOListener: maxConnections must be positive")
    }

    /// Binds a listening socket per ring and starts accepting.
    private static func bind(
        _ address: SocketAddress,
        options: Options,
        rings: [RingLoop],
        shared: _ListenerState
    ) throws(Errno) -> ([_Acceptor], [SocketAddress]) {
        precondition(
            address.family != .unix || rings.count == 1,
            "IOListener: a Unix domain socket listens on one ring (reusePort is for TCP)"
        )
        var address = address
        var sockets: [CInt] = []
        var bound: [SocketAddress] = []
        var unixFile: _UnixSocketFile?
        do throws(Errno) {
            for _ in rings {
                let (fd, file) = try _ListeningSocket.open(on: address, options: options)
                sockets.append(fd)
                unixFile = file
                let local = try _POSIX.localAddress(of: fd)
                let localAddress = SocketAddress(storage: local.address, length: local.length)
                bound.append(localAddress)
                // Port 0: the others bind the port the first one got.
                if address.port == 0 { address = localAddress }
            }
        } catch {
            for fd in sockets { _POSIX.close(fd) }
            unixFile?.remove()
            throw error
        }
        let acceptors = zip(rings, sockets).map {
            _Acceptor(ring: $0, fd: $1, shared: shared, isUnix: address.family == .unix, unixFile: unixFile)
        }
        shared.acceptors = acceptors.map { _WeakAcceptor(acceptor: $0) }
        for acceptor in acceptors { acceptor.start() }
        return (acceptors, bound)
    }

    deinit {
        self.close()
    }

    /// The bound port (the one picked when `port` was 0); 0 for a Unix domain socket. It stays
    /// readable after ``close()``.
    public var port: UInt16 {
        self.boundAddresses[0].port ?? 0
    }

    /// The bound addresses, one per socket (`127.0.0.1:8080`, `[::]:8080`,
    /// `unix:/run/app.sock`; print one for its text). They stay readable after ``close()``.
    public var localAddresses: [SocketAddress] {
        self.boundAddresses
    }

    /// Accepted connections that are still open: handed out (or, for ``connections()``, queued)
    /// and their channel not yet cleaned up. Any thread.
    public var openConnections: Int {
        self.shared.live.load(ordering: .acquiring)
    }

    /// Stops accepting: new connection attempts are refused from now on; the listening
    /// sockets are closed on their rings once their accepts have returned. ``connections()``
    /// ends after the connections already accepted. The open connections stay open (see
    /// ``shutdown(gracePeriod:queue:completion:)``). Idempotent.
    public func close() {
        guard !self.shared.closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for acceptor in self.acceptors { acceptor.stop() }
        self.shared.connections?.end()
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
    public func shutdown(
        gracePeriod: Duration,
        queue: some IOQueue,
        completion: @escaping @Sendable () -> Void
    ) {
        precondition(gracePeriod >= .zero, "IOListener.shutdown(gracePeriod: \(gracePeriod)) must not be negative")
        self.close()
        let (seconds, attoseconds) = gracePeriod.components
        let nanoseconds =
            seconds >= Int64.max / 1_000_000_000
            ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        let start = self.shared.shutdown.withLock { state -> Bool in
            switch state {
            case .running:
                state = .draining(acceptorsLeft: self.acceptors.count, completions: [(queue, completion)])
                return true
            case .draining(let left, var completions):
                completions.append((queue, completion))
                state = .draining(acceptorsLeft: left, completions: completions)
                return false
            case .finished:
                queue.enqueue(completion)
                return false
            }
        }
        guard start else { return }
        let deadline = _Clock.nanoseconds(realtime: false).addingReportingOverflow(nanoseconds)
        let at = deadline.overflow ? Int64.max : deadline.partialValue
        for acceptor in self.acceptors { acceptor.drain(until: at) }
    }

    /// Graceful shutdown with async/await: ``shutdown(gracePeriod:queue:completion:)``,
    /// returning once every connection is cleaned up.
    ///
    ///     await listener.shutdown(gracePeriod: .seconds(5))
    public func shutdown(gracePeriod: Duration) async {
        let ring = self.acceptors[0].ring
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            self.shutdown(gracePeriod: gracePeriod, queue: ring) { continuation.resume() }
        }
    }
}
