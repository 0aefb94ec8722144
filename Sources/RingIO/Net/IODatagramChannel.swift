//===----------------------------------------------------------------------===//
// RingIO — networking: datagram sockets (UDP, Unix datagram).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket — UDP over IPv4 or IPv6, or a Unix datagram socket — on a ring:
/// datagrams received as ropes over the kernel's buffers, sent from a rope's regions.
///
///     let channel = try IODatagramChannel(bindingTo: SocketAddress(ipAddress: "127.0.0.1", port: 5353))
///     for try await datagram in channel.datagrams() {                  // an echo
///         try await channel.send(datagram.data, to: datagram.source)
///     }
///
/// **Receiving.** One receive runs at a time: ``receive(queue:handler:)`` with handlers, or
/// ``datagrams()`` as an `AsyncSequence`. On io_uring it is one multishot `recvmsg` into a
/// provided-buffer ring of the channel's own (``Options/receiveBuffers`` buffers of
/// ``Options/maximumDatagramSize`` bytes); on the readiness engine, `recvmsg` into the same
/// buffers. Each datagram's bytes are a rope region over its buffer — no copy — with its
/// source address. A datagram longer than the buffer is cut short and says so
/// (``Datagram/isTruncated``, counted in ``Statistics/truncated``).
///
/// **Buffers running out.** When every buffer is held by ropes (datagrams kept, or sent on
/// and not yet sent), the receive waits one ring turn for buffers to come back, then
/// receives into fresh memory, one datagram at a time, until they do — counted in
/// ``Statistics/fallbackReceives``, never silent and never a drop. When the consumer itself is
/// behind (a handler queue or an iteration more than 1,024 datagrams behind), the receive
/// pauses instead: the kernel's socket buffer holds what comes meanwhile, and what it drops
/// when that is full is counted in ``Statistics/kernelDrops`` (`SO_RXQ_OVFL`).
///
/// **Sending.** ``send(_:to:queue:handler:)`` (or `await` ``send(_:to:isolation:)``) sends one
/// datagram: the rope's regions as the iovecs of one `sendmsg`, never flattened or copied
/// (a rope of more than 1,024 regions, the kernel's limit, is made contiguous first). On a
/// connected channel `to` may be left out. Sends are not ordered with each other once the
/// socket's send buffer is full (UDP promises no order either).
///
/// **Errors.** On a connected UDP channel, an ICMP "port unreachable" from the peer surfaces
/// as ECONNREFUSED: the receive reports it and goes on (a handler gets
/// `(false, nil, ECONNREFUSED)`; ``datagrams()`` throws it, and a new iteration goes on), and
/// a send may fail with it.
///
/// **Closing.** ``close()`` ends the receive (`(true, nil, ECANCELED)`), refuses new sends
/// (ECANCELED), lets the sends in flight finish, then closes the socket — and removes the
/// socket file of a Unix datagram socket it bound to a path. Dropping the last reference
/// closes it too. Its ring's shutdown ends its receive and sends with ECANCELED and closes it.
public final class IODatagramChannel: Sendable {
    /// How a datagram channel receives, and the options of its socket.
    public struct Options: Sendable {
        /// The longest datagram received whole: the payload part of each receive buffer.
        /// Longer datagrams are truncated (and say so). Default 2,048 bytes — enough for an
        /// Ethernet MTU; raise it to 65,507 for the largest UDP datagram over IPv4.
        public var maximumDatagramSize = 2_048
        /// How many receive buffers the channel registers: a power of two in 1...32,768.
        /// Memory: about `receiveBuffers × maximumDatagramSize`. Default 64.
        public var receiveBuffers = 64
        /// `SO_REUSEADDR` before binding. Default off.
        public var reuseAddress = false
        /// `SO_REUSEPORT` before binding (several sockets on one port, the kernel spreading
        /// datagrams over them). Default off.
        public var reusePort = false
        /// `SO_BROADCAST`: sends to a broadcast address are allowed. Default off.
        public var broadcast = false
        /// `SO_RCVBUF`, the kernel's socket receive buffer in bytes (the kernel doubles it);
        /// `nil`: the system's default.
        public var socketReceiveBufferSize: Int?
        /// `SO_SNDBUF`; `nil`: the system's default.
        public var socketSendBufferSize: Int?
        /// Unix datagram sockets bound to a path: remove a socket file that no one is bound
        /// to before binding (as ``IOListener/Options/removeStaleSocketFile``). Default off.
        public var removeStaleSocketFile = false

        /// The default options, as each property documents them.
        public init() {}
    }

    /// What a channel counted. Any thread; each figure exact, a snapshot not atomic across
    /// them.
    public struct Statistics: Sendable, Hashable {
        /// Datagrams received from the kernel.
        public var received: UInt64
        /// Datagrams received truncated (longer than ``Options/maximumDatagramSize``).
        public var truncated: UInt64
        /// Receives into fresh memory because every provided buffer was held by ropes.
        public var fallbackReceives: UInt64
        /// Datagrams the kernel dropped because the socket's receive buffer was full, as it
        /// last reported (`SO_RXQ_OVFL`: reported with the next datagram received).
        public var kernelDrops: UInt64
        /// Datagrams sent.
        public var sent: UInt64
    }

    /// The ring the channel's I/O runs on.
    public let ring: RingLoop
    /// The address the socket is bound to (for an unbound sender, the one the kernel gave it
    /// on creation: an ephemeral port, or an unnamed Unix address).
    public let localAddress: SocketAddress
    /// The peer of a connected channel; `nil` otherwise.
    public let remoteAddress: SocketAddress?

    internal let state: _DatagramState

    /// A datagram socket bound to `address` — the family of the address decides the
    /// family of the socket. Port 0 picks a free port (read it from ``localAddress``).
    ///
    ///     let server = try IODatagramChannel(bindingTo: SocketAddress(ipAddress: "::", port: 0))
    ///     let unix = try IODatagramChannel(bindingTo: SocketAddress(unixPath: "/run/app/metrics.sock"))
    ///
    /// - Parameters:
    ///   - address: Where to bind.
    ///   - options: Receive buffers and socket options.
    ///   - ring: The ring for the channel's I/O; `nil`: the next ring of
    ///     ``RingLoopGroup/shared``.
    /// - Throws: The errno of `socket`, `setsockopt`, `bind` (EADDRINUSE, EACCES…); of the
    ///   receive buffers' allocation; of ``RingLoopGroup/shared``'s set-up
    ///   (its ``RingSetupError``'s `errno`) when the ring is taken from that group.
    /// - Precondition: `options.receiveBuffers` is a power of two in 1...32,768;
    ///   `options.maximumDatagramSize` in 1...(1 << 30).
    public convenience init(
        bindingTo address: SocketAddress,
        options: Options = Options(),
        ring: RingLoop? = nil
    ) throws(Errno) {
        try self.init(local: address, remote: nil, options: options, ring: ring)
    }

    /// A datagram socket connected to `remote`: it receives only from `remote`, sends there
    /// with no address, and hears of an ICMP "port unreachable" (ECONNREFUSED). Bound to
    /// `local` first when given (a Unix datagram socket must be bound to receive answers),
    /// else to an ephemeral address by the kernel.
    ///
    ///     let client = try IODatagramChannel(connectedTo: SocketAddress(ipAddress: "127.0.0.1", port: 53))
    ///     try await client.send(query)
    ///     let answer = try await client.receive()
    ///
    /// - Throws: The errno of `socket`, `setsockopt`, `bind`, `connect` (EAFNOSUPPORT when
    ///   `local` is of another family, ENOENT for a Unix path with no socket).
    public convenience init(
        connectedTo remote: SocketAddress,
        from local: SocketAddress? = nil,
        options: Options = Options(),
        ring: RingLoop? = nil
    ) throws(Errno) {
        try self.init(local: local, remote: remote, options: options, ring: ring)
    }

    private init(local: SocketAddress?, remote: SocketAddress?, options: Options, ring: RingLoop?) throws(Errno) {
        precondition(
            options.receiveBuffers > 0 && options.receiveBuffers <= 32_768
                && options.receiveBuffers & (options.receiveBuffers - 1) == 0,
            "IODatagramChannel.Options.receiveBuffers must be a power of two in 1...32768"
        )
        precondition(
            options.maximumDatagramSize > 0 && options.maximumDatagramSize <= 1 << 30,
            "IODatagramChannel.Options.maximumDatagramSize must be in 1...(1 << 30)"
        )
        let chosen: RingLoop
        if let ring {
            chosen = ring
        } else {
            do throws(RingSetupError) {
                chosen = try RingLoopGroup.shared.next()
            } catch {
                throw error.errno
            }
        }
        let socket = try _DatagramSocket(local: local, remote: remote, options: options)
        self.ring = chosen
        self.localAddress = socket.localAddress
        self.remoteAddress = remote
        self.state = _DatagramState(ring: chosen, socket: socket, options: options)
    }

    deinit {
        self.state.close()
    }

    // MARK: Receiving

    /// Receives datagrams until the channel is closed, calling `handler` for each on `queue`.
    ///
    /// `handler` gets `(false, datagram, nil)` for each datagram; `(false, nil, error)` for
    /// an error the receive goes on after (ECONNREFUSED on a connected channel); and once,
    /// last, `(true, nil, error)`: ECANCELED when the channel is closed or its ring shuts
    /// down, or the error that ended the receive. Its calls never overlap. On the channel's
    /// ring (`queue: channel.ring`) they run on the ring thread with no hop, as the
    /// completions are reaped.
    ///
    /// - Parameters:
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, datagram, error)`.
    /// - Note: One receive at a time: a second one, while one runs, ends at once with
    ///   `(true, nil, EBUSY)`.
    public func receive(
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ datagram: Datagram?, _ error: Errno?) -> Void
    ) {
        let receiver = _DatagramHandlerReceiver(queue: queue, isRing: queue.asRing === self.ring, handler: handler)
        self.state.startReceiving(receiver)
    }

    // MARK: Sending

    /// Sends `data` as one datagram to `address` (or, on a connected channel, to its peer),
    /// and calls `handler` on `queue` with `nil` once the kernel took it, or the error:
    /// EMSGSIZE (too long for the protocol), ECONNREFUSED (a connected peer's port is closed),
    /// EDESTADDRREQ (no address on an unconnected channel), EAFNOSUPPORT/EINVAL (an address
    /// of another family), ECANCELED (the channel was closed first).
    ///
    /// The regions of `data` are the iovecs of the `sendmsg`: no copy. The rope is held until
    /// the send completes.
    public func send(
        _ data: ByteRope,
        to address: SocketAddress? = nil,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ error: Errno?) -> Void
    ) {
        self.state.send(data, to: address, completion: .handler(queue, queue.asRing === self.ring, handler))
    }

    /// Sends `data` as one datagram; see ``send(_:to:queue:handler:)``.
    ///
    /// - Throws: As the handler's errors; `Errno.canceled` also when the ring has shut down.
    public func send(
        _ data: ByteRope,
        to address: SocketAddress? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(Errno) {
        let error: Errno? = await withUnsafeContinuation(isolation: isolation) { continuation in
            self.state.send(data, to: address, completion: .continuation(continuation))
        }
        if let error { throw error }
    }

    // MARK: Closing

    /// Closes the channel: the receive ends with ECANCELED, new sends are refused, the sends
    /// in flight finish, then the socket is closed (and a Unix socket file it bound removed).
    /// Idempotent; any thread.
    public func close() {
        self.state.close()
    }

    /// What the channel counted so far.
    public var statistics: Statistics {
        self.state.counters.snapshot()
    }
}
