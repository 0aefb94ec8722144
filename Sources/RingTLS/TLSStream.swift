//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a TLS connection over an IOChannel, with the channel's shape.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// The type's example runs in Tests/RingTLSTests/TLSDocExampleTests.swift: keep the two in step.

/// A TLS connection over a stream `IOChannel` on a socket: the channel's read and write
/// operations, with records decrypted and encrypted in between.
///
///     let acceptor = try IOAcceptor(host: "127.0.0.1", port: 8443, queue: ring) { event in
///         guard case .accepted(let connection) = event,
///             let tls = try? TLSStream(accepting: connection, context: context)
///         else { return }
///         tls.read(queue: connection.ring) { done, data, error in
///             if let data, !data.isEmpty { tls.write(data, queue: connection.ring) { _, _, _ in } }
///             if done { tls.close() }
///         }
///     }
///
/// **Life.**
///
///     init ──> handshake ──┬──> open: reads, writes ──┬── closeWrite() ──> close_notify, FIN;
///              (timeout)   │                          │                  reads go on
///                          │                          └── close() ──> writes finish, close_notify,
///                          │                                          channel closed once no read waits
///                          └──> failed: every operation ends with the error; the alert is sent,
///                               the channel closed
///
/// The handshake starts when the stream is made and must finish within the context's
/// ``TLSConfiguration/handshakeTimeout``. Reads and writes scheduled meanwhile wait for it;
/// ``handshake(queue:handler:)`` reports its outcome (``Handshake``: version, cipher, ALPN
/// protocol, server name, resumption).
///
/// **Reads** deliver the decrypted records as ropes, as they come: `(false, data, nil)` as
/// often as data comes, then `(true, empty, nil)` at the peer's `close_notify`, or `(true,
/// data, nil)` when the read got its `length`. An error ends a read with `(true, nil, error)`
/// after every byte that arrived intact; a peer that closes its socket without `close_notify`
/// ends it with ``TLSError/Code/uncleanShutdown``. Reads are served in order, one at a time.
/// Records are decrypted as they arrive, whether or not a read is waiting, up to 256 KiB
/// ahead of the reads: more, and the stream stops reading its socket (TCP then slows the
/// peer).
///
/// **Writes** encrypt the rope's regions where they lie (small regions gathered into one
/// record) and hand the records to the channel; the handler is called once, `(true, nil,
/// nil)` when the channel has written the write's last record, or `(true, remaining, error)`
/// with the part not yet encrypted. Writes go out in order. At most 256 KiB of records wait
/// for the channel; encryption goes on as it writes them.
///
/// **Closing.** ``closeWrite()`` is a half-close: after the pending writes it sends
/// `close_notify` and then shuts the socket down for writing (the peer reads the end of the
/// stream); writes after it fail with ``TLSError/Code/closed``, reads go on until the peer's
/// own `close_notify`. ``close(flags:)`` also refuses new reads; it lets the pending writes
/// finish, sends `close_notify`, and closes the channel once no read is waiting (a read
/// waiting then ends with the peer's `close_notify` or the end of its connection). The
/// ``CloseFlags/stop`` flag ends everything at once with ``TLSError/Code/canceled``, without
/// `close_notify` (the peer sees its connection cut). A stream that failed closes its channel
/// itself, after sending OpenSSL's alert. Dropping the last reference to a stream closes it
/// (as ``close(flags:)``).
///
/// The stream owns the channel it was given: it closes it (with `.stop`,
/// once its own writes are done) when it is finished; for a connection of an `IOListener` or
/// an `IOAcceptor` that closes the socket. Do not read or write the channel yourself while the stream uses
/// it.
///
/// **Threads.** Every OpenSSL call of a stream runs on its `ring`'s thread, so a stream needs
/// no lock of its own and never blocks that thread: OpenSSL reads ciphertext the channel
/// already received, and writes into memory. Operations may be called from any thread; from
/// the ring's thread they take effect at once, from others on the ring's next turn, in the
/// order they were called. Handlers run on the queue you give — with the ring itself, on its
/// thread with no hop — never inside the call that scheduled them.
///
/// **kTLS.** With ``TLSConfiguration/KernelTLS/whenAvailable`` and a kernel that has a TLS
/// ULP, the kernel encrypts the output after the handshake: writes go to the channel as they
/// are, and ``write(contentsOf:offset:length:queue:handler:)`` splices files; ``offload``
/// says which path a stream took and why.
public final class TLSStream: Sendable {
    /// Which end of the handshake a stream is.
    public enum Role: Sendable, Hashable {
        /// It accepted the connection: it presents a certificate.
        case server
        /// It connected: it checks the server's certificate.
        case client
    }

    /// Options of ``close(flags:)``.
    public struct CloseFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// End every operation now with ``TLSError/Code/canceled``, without `close_notify`.
        public static let stop = CloseFlags(rawValue: 1)
    }

    /// What a finished handshake agreed on.
    public struct Handshake: Sendable, Hashable {
        /// The protocol version.
        public var protocolVersion: TLSConfiguration.Version
        /// The cipher suite, in OpenSSL's naming (`"TLS_AES_128_GCM_SHA256"`,
        /// `"ECDHE-ECDSA-AES128-GCM-SHA256"`).
        public var cipherSuite: String
        /// The ALPN protocol agreed on; `nil` when either side did not use ALPN or they had
        /// none in common.
        public var applicationProtocol: String?
        /// The server name (SNI) the client sent, if any.
        public var serverName: String?
        /// Whether the session was resumed (an abbreviated handshake, from a ticket).
        public var isResumed: Bool
        /// The peer's certificate, when it presented one (always for a client's server).
        public var peerCertificate: TLSCertificate?
    }

    /// The transport: a stream channel on a connected socket. The stream owns it.
    public let channel: IOChannel
    /// The ring whose thread runs the stream (its OpenSSL calls, its channel's handlers).
    public let ring: RingLoop
    /// Which end this stream is.
    public let role: Role
    internal let core: _TLSCore

    // MARK: Making streams

    /// A server stream over `channel`: the handshake (waiting for the client's hello) starts
    /// at once, on `ring`.
    ///
    /// - Parameters:
    ///   - channel: A stream channel on a connected socket; the stream owns it from now on.
    ///   - ring: The ring to run on: the channel's own (its handlers then run with no hop).
    ///   - context: A context with a certificate chain and key (or an SNI handler).
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when `context` has no certificate
    ///   (nor SNI handler); when OpenSSL cannot make the connection (out of memory). The
    ///   channel is then still the caller's to close.
    public init(serverOn channel: IOChannel, ring: RingLoop, context: TLSContext) throws(TLSError) {
        self.channel = channel
        self.ring = ring
        self.role = .server
        self.core = try _TLSCore(channel: channel, ring: ring, context: context, isServer: true, serverName: nil)
        self.start()
    }

    /// A server stream over a connection an `IOListener` or an `IOAcceptor` accepted, on the
    /// ring that accepted it.
    ///
    ///     await listener.serve { connection in
    ///         let tls = try TLSStream(accepting: connection, context: context)
    ///         for try await request in tls.reads() { … }
    ///     }
    ///
    /// - Throws: As ``init(serverOn:ring:context:)``; the connection is then still the
    ///   caller's to close.
    public convenience init(accepting connection: IOConnection, context: TLSContext) throws(TLSError) {
        try self.init(serverOn: connection.channel, ring: connection.ring, context: context)
    }

    /// A client stream over `channel`: the handshake (sending the client's hello) starts at
    /// once, on `ring`.
    ///
    /// The client sends `serverName` as SNI (unless it is an IP address) and, with
    /// ``TLSConfiguration/CertificateVerification/fullVerification``, checks that the
    /// server's certificate is for it (a DNS name, or an IP address). It offers the session
    /// its context kept for `serverName`, if any.
    ///
    /// - Parameters:
    ///   - channel: A stream channel on a connected socket; the stream owns it from now on.
    ///   - ring: The ring to run on: the channel's own.
    ///   - context: A client context.
    ///   - serverName: The server's name or address, as the certificate must name it; `nil`
    ///     only without full verification (no SNI then, no session resumption).
    /// - Throws: ``TLSError/Code/invalidConfiguration`` for a `serverName` OpenSSL refuses,
    ///   or none with full verification; when OpenSSL cannot make the connection. The channel
    ///   is then still the caller's to close.
    public init(
        clientOn channel: IOChannel,
        ring: RingLoop,
        context: TLSContext,
        serverName: String?
    ) throws(TLSError) {
        self.channel = channel
        self.ring = ring
        self.role = .client
        self.core = try _TLSCore(
            channel: channel,
            ring: ring,
            context: context,
            isServer: false,
            serverName: serverName
        )
        self.start()
    }

    /// A client stream over a connected socket, which the stream owns from now on: it makes
    /// the channel, and closes the socket once the channel is cleaned up.
    ///
    ///     let tls = try TLSStream(clientOn: socket, ring: ring, context: context, serverName: "example.com")
    ///     let handshake = try await tls.handshake()
    ///
    /// - Throws: As ``init(clientOn:ring:context:serverName:)-(IOChannel,_,_,_)``; the
    ///   socket is then still the caller's to close.
    public convenience init(
        clientOn socket: CInt,
        ring: RingLoop,
        context: TLSContext,
        serverName: String?
    ) throws(TLSError) {
        let descriptor = socket
        let owned = _OwnedDescriptor(descriptor)
        let channel = IOChannel(kind: .stream, fileDescriptor: descriptor, queue: ring, ring: ring) { _ in
            owned.close()
        }
        do throws(TLSError) {
            try self.init(clientOn: channel, ring: ring, context: context, serverName: serverName)
        } catch {
            owned.release()  // the caller keeps the socket
            channel.close(flags: .stop)
            throw error
        }
    }

    private func start() {
        self.core.perform { $0.start() }
    }

    deinit {
        self.core.perform { $0.close(stop: false) }
    }

    // MARK: State

    /// What the handshake agreed on; `nil` until it finished (and for good when it failed).
    public var handshakeResult: Handshake? {
        self.core.published.withLock { $0.handshake }
    }

    /// Who encrypts and decrypts this stream's records, and why: see ``TLSOffload``. It may
    /// change once, during the handshake, from user space to the kernel for the output.
    public var offload: TLSOffload {
        self.core.published.withLock { $0.offload }
    }

    // MARK: Operations

    /// Calls `handler` once the handshake has finished, with what it agreed on, or with why it
    /// failed (at once, on `queue`, when it is over already).
    ///
    /// - Parameters:
    ///   - queue: Where `handler` runs.
    ///   - handler: The outcome: ``Handshake``, or ``TLSError`` (``TLSError/Code/handshakeFailed``,
    ///     ``TLSError/Code/certificateVerificationFailed``, ``TLSError/Code/handshakeTimedOut``…).
    public func handshake(
        queue: some IOQueue,
        handler: @escaping @Sendable (Result<Handshake, TLSError>) -> Void
    ) {
        self.core.perform { $0.waitForHandshake(.handler(queue, handler)) }
    }

    /// Reads up to `length` bytes of plaintext (`Int.max`: until the peer's `close_notify`)
    /// and calls `handler` as records arrive.
    ///
    /// - Parameters:
    ///   - length: How many bytes; 0 completes at once with `(true, empty, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, data, error)`; see the type's documentation.
    /// - Precondition: `length >= 0`.
    public func read(
        length: Int = .max,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ data: ByteRope?, _ error: TLSError?) -> Void
    ) {
        precondition(length >= 0, "TLSStream.read(length: \(length)): the length must not be negative")
        guard length > 0 else {
            queue._enqueue { handler(true, ByteRope(), nil) }
            return
        }
        let read = _TLSRead(target: .handler(queue, handler), length: length)
        self.core.perform { $0.scheduleRead(read) }
    }

    /// Encrypts and writes `data`, then calls `handler` once: `(true, nil, nil)` when the
    /// channel has written its last record, or `(true, remaining, error)`.
    ///
    /// - Parameters:
    ///   - data: The plaintext; empty completes at once with `(true, nil, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, remaining, error)`: `remaining` is the part of `data` not yet
    ///     encrypted (what was encrypted may or may not have reached the peer).
    public func write(
        _ data: ByteRope,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: ByteRope?, _ error: TLSError?) -> Void
    ) {
        let core = self.core
        // On the ring's thread, with nothing in the way, the records go to the channel now.
        if core.ring.isCurrentThread && core.writeDirectly(data, queue: queue, handler: handler) { return }
        let write = _TLSWrite(target: .handler(queue, handler), source: .bytes(data))
        core.perform { $0.scheduleWrite(write) }
    }

    /// Sends `length` bytes of the file open on `file`, from `offset`, in line with the
    /// stream's writes, and calls `handler` once.
    ///
    /// With kernel TLS (``offload``), the channel splices the file's pages to the socket and
    /// the kernel encrypts them: the bytes never enter user space. Otherwise the file is read
    /// through a random-access channel on the stream's ring, 64 KiB at a time, and each piece
    /// encrypted as it arrives.
    ///
    /// - Parameters:
    ///   - file: A descriptor open for reading on a regular file; keep it open until the
    ///     handler has run.
    ///   - offset: Where in the file to start.
    ///   - length: How many bytes; 0 completes at once with `(true, 0, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, remaining, error)`: the bytes not sent, and ``TLSError/Code/io``
    ///     with `ENODATA` when the file ends before `offset + length` (what it had is sent).
    /// - Precondition: `offset >= 0`, `length >= 0`.
    public func write(
        contentsOf file: CInt,
        offset: Int64,
        length: Int,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: Int, _ error: TLSError?) -> Void
    ) {
        precondition(offset >= 0 && length >= 0, "TLSStream.write(contentsOf:): negative offset or length")
        let write = _TLSWrite(
            target: .fileSend(queue, handler),
            source: .file(descriptor: file, offset: offset, length: length)
        )
        self.core.perform { $0.scheduleWrite(write) }
    }

    /// Gives OpenSSL's record buffers back (about 34 KiB), unless a record is in them, with a
    /// context whose ``TLSConfiguration/recordBuffers`` is
    /// ``TLSConfiguration/RecordBuffers/keptUntilReleased``: call it when the connection goes
    /// idle. They are allocated again by the next record either way. Does nothing with the
    /// default, ``TLSConfiguration/RecordBuffers/releasedWhenEmpty``, where empty buffers
    /// are given back at once.
    public func releaseRecordBuffers() {
        self.core.perform { $0.releaseRecordBuffers() }
    }

    /// Half-close: once the pending writes are written, sends `close_notify` and shuts the
    /// socket down for writing. Later writes fail with ``TLSError/Code/closed``; reads go on
    /// until the peer's `close_notify`. Idempotent.
    public func closeWrite() {
        self.core.perform { $0.closeWrite() }
    }

    /// Closes the stream: no new operation is taken (each ends with ``TLSError/Code/closed``);
    /// the pending writes finish, `close_notify` is sent, and the channel is closed once no
    /// read is waiting for the peer. With ``CloseFlags/stop``, every operation ends now with
    /// ``TLSError/Code/canceled`` and the channel is closed without `close_notify`.
    /// Idempotent; a stop after a plain close still stops.
    public func close(flags: CloseFlags = []) {
        let stop = flags.contains(.stop)
        self.core.perform { $0.close(stop: stop) }
    }
}

/// A socket a client stream owns: closed once, when its channel is cleaned up — unless the
/// stream could not be made, and the caller keeps it.
internal final class _OwnedDescriptor: Sendable {
    private let state: _TLSLock<CInt?>

    init(_ descriptor: CInt) {
        self.state = _TLSLock(descriptor)
    }

    func close() {
        if let descriptor = self.state.withLock({ $0.take() }) { _ = Glibc.close(descriptor) }
    }

    func release() {
        _ = self.state.withLock { $0.take() }
    }
}
