//===----------------------------------------------------------------------===//
// RingIO — networking: outbound connections.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

extension IOConnection {
    /// How ``IOConnection/connect(host:port:options:ring:)`` dials.
    public struct ConnectOptions: Sendable {
        /// How long the whole connect may take — resolving the name and every attempt — before
        /// it fails with ``ConnectError/Reason/timedOut``. Default 10 seconds.
        public var timeout: Duration = .seconds(10)
        /// `TCP_NODELAY` on the socket (TCP only). Default on.
        public var noDelay = true
        /// `SO_KEEPALIVE` on the socket (TCP only). Default off.
        public var keepAlive = false
        /// The address to bind the socket to before connecting: a source address, a source
        /// port (port 0: any), or a Unix path for the client's end. Addresses of another
        /// family than this one are not tried (their attempt fails with EAFNOSUPPORT).
        public var localAddress: SocketAddress?
        /// Resolves host names (not used for numeric addresses). Default: ``SystemResolver``.
        public var resolver: any NameResolver = SystemResolver()
        /// Happy Eyeballs (RFC 8305 §3): when the IPv4 answer comes first, how long to wait
        /// for the IPv6 one before connecting over IPv4. Default 50 ms.
        public var resolutionDelay: Duration = .milliseconds(50)
        /// Happy Eyeballs (RFC 8305 §5): how long an attempt runs alone before the next
        /// address is tried beside it (the first to connect wins, the others are closed).
        /// Default 250 ms.
        public var connectionAttemptDelay: Duration = .milliseconds(250)

        /// The default options, as each property documents them.
        public init() {}
    }

    /// A connect under way, for handler code: cancel it with ``cancel()``.
    public final class Connecting: Sendable {
        private let connector: _Connector?

        internal init(_ connector: _Connector?) {
            self.connector = connector
        }

        /// Cancels the connect: every attempt's socket is closed, and the handler gets
        /// ``ConnectError/Reason/canceled`` — unless it has its result already (then nothing
        /// happens). Any thread; idempotent.
        public func cancel() {
            self.connector?.cancel()
        }
    }

    // MARK: Async

    /// Opens a stream connection to `host` and `port`: the name is resolved off the ring
    /// (``ConnectOptions/resolver``), and its addresses tried as Happy Eyeballs (RFC 8305)
    /// says — IPv6 and IPv4 asked for at once, attempts started in turn, IPv6 first,
    /// alternating families, a new one every ``ConnectOptions/connectionAttemptDelay`` or as
    /// soon as the previous failed; the first to connect wins. A numeric `host` (`"127.0.0.1"`,
    /// `"::1"`, `"[::1]"`) is dialled directly.
    ///
    ///     let connection = try await IOConnection.connect(host: "localhost", port: 6379)
    ///     try await connection.channel.write(ByteRope("PING\r\n".utf8))
    ///     for try await reply in connection.channel.reads() { … }
    ///
    /// The connection is a stream channel on `ring`, as a listener hands one out. Call it from
    /// any thread or task: nothing here blocks. A task that prefers `ring`'s executor resumes
    /// there with no hop.
    ///
    /// - Parameters:
    ///   - host: A host name, or a numeric IPv4 or IPv6 address.
    ///   - port: The port.
    ///   - options: Timeout, socket options, local address, resolver, Happy Eyeballs delays.
    ///   - ring: The ring the connection's I/O runs on; `nil`: the next ring of
    ///     ``RingLoopGroup/shared`` (pass `group.next()` for a group of your own).
    /// - Throws: ``ConnectError`` naming what failed: refused, timed out, unreachable, a name
    ///   that does not resolve (with the resolver's reason), cancelled (task cancellation
    ///   closes the half-open sockets), or another error, with every address tried.
    public static func connect(
        host: String,
        port: UInt16,
        options: ConnectOptions = ConnectOptions(),
        ring: RingLoop? = nil
    ) async throws(ConnectError) -> IOConnection {
        try await Self.connect(
            target: _Connector.Target(host: host, port: port),
            options: options,
            ring: ring
        )
    }

    /// Opens a stream connection to `address`: IPv4, IPv6 or a Unix domain socket (a path, or
    /// an abstract name).
    ///
    ///     let sidecar = try await IOConnection.connect(to: SocketAddress(unixPath: "/run/app.sock"))
    ///
    /// - Parameters:
    ///   - address: Where to connect.
    ///   - options: Timeout, socket options, local address (the resolver and the Happy
    ///     Eyeballs delays play no part).
    ///   - ring: The ring the connection's I/O runs on; `nil`: the next ring of
    ///     ``RingLoopGroup/shared``.
    /// - Throws: ``ConnectError``: refused (ECONNREFUSED; for a Unix path, also ENOENT when
    ///   no socket file is there, as ``ConnectError/Reason/other(_:)``), timed out,
    ///   unreachable, cancelled, another error.
    public static func connect(
        to address: SocketAddress,
        options: ConnectOptions = ConnectOptions(),
        ring: RingLoop? = nil
    ) async throws(ConnectError) -> IOConnection {
        try await Self.connect(target: _Connector.Target(address: address), options: options, ring: ring)
    }

    private static func connect(
        target: _Connector.Target,
        options: ConnectOptions,
        ring: RingLoop?
    ) async throws(ConnectError) -> IOConnection {
        let ring = try _Connector.ring(ring, for: target)
        let pending = _Lock<(connector: _Connector?, cancelled: Bool)>((nil, false))
        let result: Result<IOConnection, ConnectError> = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let connector = _Connector(target: target, options: options, ring: ring) { result in
                    continuation.resume(returning: result)
                }
                let cancelled = pending.withLock { state in
                    state.connector = connector
                    return state.cancelled
                }
                connector.start()
                if cancelled { connector.cancel() }
            }
        } onCancel: {
            let connector = pending.withLock { state in
                state.cancelled = true
                return state.connector
            }
            connector?.cancel()
        }
        return try result.get()
    }

    // MARK: Handlers

    /// Opens a stream connection to `host` and `port`, as
    /// ``connect(host:port:options:ring:)``, and calls `handler` with the connection or the
    /// error on `queue`.
    ///
    ///     let connecting = IOConnection.connect(host: "127.0.0.1", port: 7000, queue: ring) { result in
    ///         guard case .success(let connection) = result else { return }
    ///         connection.channel.write(offset: 0, data: hello, queue: ring) { _, _, _ in }
    ///     }
    ///     …
    ///     connecting.cancel()     // closes the half-open sockets; the handler gets .canceled
    ///
    /// - Parameters:
    ///   - host: A host name, or a numeric IPv4 or IPv6 address.
    ///   - port: The port.
    ///   - options: Timeout, socket options, local address, resolver, Happy Eyeballs delays.
    ///   - ring: The ring the connection's I/O runs on; `nil`: `queue` if it is a ring, else the
    ///     next ring of ``RingLoopGroup/shared``.
    ///   - queue: Where `handler` runs.
    ///   - handler: Called once, with the connection or a ``ConnectError``.
    /// - Returns: The connect under way, to cancel it.
    @discardableResult
    public static func connect(
        host: String,
        port: UInt16,
        options: ConnectOptions = ConnectOptions(),
        ring: RingLoop? = nil,
        queue: some IOQueue,
        handler: @escaping @Sendable (Result<IOConnection, ConnectError>) -> Void
    ) -> Connecting {
        Self.connect(
            target: _Connector.Target(host: host, port: port),
            options: options,
            ring: ring ?? queue.asRing,
            queue: queue,
            handler: handler
        )
    }

    /// Opens a stream connection to `address`, as ``connect(to:options:ring:)``, and calls
    /// `handler` with the connection or the error on `queue`.
    ///
    /// - Parameters:
    ///   - address: Where to connect: IPv4, IPv6 or a Unix domain socket.
    ///   - options: Timeout, socket options, local address.
    ///   - ring: The ring the connection's I/O runs on; `nil`: `queue` if it is a ring, else the
    ///     next ring of ``RingLoopGroup/shared``.
    ///   - queue: Where `handler` runs.
    ///   - handler: Called once, with the connection or a ``ConnectError``.
    /// - Returns: The connect under way, to cancel it.
    @discardableResult
    public static func connect(
        to address: SocketAddress,
        options: ConnectOptions = ConnectOptions(),
        ring: RingLoop? = nil,
        queue: some IOQueue,
        handler: @escaping @Sendable (Result<IOConnection, ConnectError>) -> Void
    ) -> Connecting {
        Self.connect(
            target: _Connector.Target(address: address),
            options: options,
            ring: ring ?? queue.asRing,
            queue: queue,
            handler: handler
        )
    }

    private static func connect(
        target: _Connector.Target,
        options: ConnectOptions,
        ring: RingLoop?,
        queue: any IOQueue,
        handler: @escaping @Sendable (Result<IOConnection, ConnectError>) -> Void
    ) -> Connecting {
        let chosen: RingLoop
        do throws(ConnectError) {
            chosen = try _Connector.ring(ring, for: target)
        } catch {
            queue.enqueue { handler(.failure(error)) }
            return Connecting(nil)
        }
        let connector = _Connector(target: target, options: options, ring: chosen) { result in
            // On the ring thread (or, for a ring that is gone, the thread that found out).
            if chosen.isCurrentThread {
                chosen.core.deliver(on: queue) { handler(result) }
            } else {
                queue.enqueue { handler(result) }
            }
        }
        connector.start()
        return Connecting(connector)
    }
}
