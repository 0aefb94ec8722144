//===----------------------------------------------------------------------===//
// RingIO — benchmark server: what an HTTP connection reads and writes, plaintext or TLS.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingTLS

/// What an ``HTTPConnection`` reads from and writes to: the connection's channel, or a TLS
/// stream over it. Every handler runs on the connection's queue.
///
/// The handlers have the channel's own types (an error is an `Errno`), so that the plaintext
/// transport hands them to its channel as they are: a type of the transport's own there would
/// take a reabstraction thunk, allocated, around each one on the hot path.
protocol HTTPTransport: Sendable {
    /// Starts the connection's one read: `reader.received` with the bytes as they arrive and,
    /// once, its end (`done`: EOF, a reset, a stop); `reader.tick()` once a second, the clock
    /// of the header and idle timeouts. (The reader itself, not two closures: the plaintext
    /// read's handler then calls it directly, with no closure call between.)
    func startReading<Reader: HTTPReader>(queue: any IOQueue, reader: Reader)
    /// The handler of this transport's writes, made from the connection's once
    /// (``makeWriteHandler(_:)``): one made per write would be an allocation per response.
    /// A struct around the closure, not the closure type itself: a closure of a generic type
    /// is called through a reabstraction thunk, allocated, at each write.
    associatedtype WriteHandler: Sendable
    /// The handler of every write of a connection, from its own `(done, remaining, error)`.
    func makeWriteHandler(_ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) -> WriteHandler
    /// Writes `bytes`; `handler` as the channel's write calls it.
    func write(_ bytes: ByteRope, queue: any IOQueue, handler: WriteHandler)
    /// Sends `length` bytes of the file open on `descriptor` from `offset`, after the writes
    /// before it; `handler` as the channel's file write calls it.
    func sendFile(
        _ descriptor: CInt,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, Int, Errno?) -> Void
    )
    /// The connection has been idle for a second, between requests: a chance to give memory
    /// back.
    func becameIdle()
    /// Whether requests can arrive yet: false while a TLS handshake has not finished (and for
    /// good once it failed), true otherwise.
    var isEstablished: Bool { get }
    /// Closes after the last response is written.
    func close()
    /// Ends the connection at once.
    func stop()
    /// The channel is cleaned up: lets go of what holds the connection.
    func cleanedUp()
}

/// What a transport's read calls: the connection.
protocol HTTPReader: AnyObject, Sendable {
    func received(done: Bool, data: ByteRope?, error: Errno?)
    func tick()
}

/// Plaintext: the connection's channel. Its ticks are the read's own: the channel's interval
/// is one second, strict, when the read is scheduled, so the read delivers an empty rope at
/// every tick (R52); the interval is reset to zero at once, so the writes arm no timer — one
/// timer per connection, in its ring's timer queue, at no cost per request.
struct ChannelTransport: HTTPTransport {
    let channel: IOChannel

    func startReading<Reader: HTTPReader>(queue: any IOQueue, reader: Reader) {
        self.channel.setLimit(lowWater: 1)
        self.channel.setInterval(.seconds(1), flags: .strict)
        self.channel.read(offset: 0, length: .max, queue: queue) { done, data, error in
            if let data, data.isEmpty, !done {
                reader.tick()
            } else {
                reader.received(done: done, data: data, error: error)
            }
        }
        // The read has the interval; the writes scheduled from now on have none.
        self.channel.setInterval(.zero)
    }

    struct WriteHandler: Sendable {
        let body: @Sendable (Bool, ByteRope?, Errno?) -> Void
    }

    func makeWriteHandler(_ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) -> WriteHandler {
        WriteHandler(body: handler)
    }

    func write(_ bytes: ByteRope, queue: any IOQueue, handler: WriteHandler) {
        self.channel.write(offset: 0, data: bytes, queue: queue, handler: handler.body)
    }

    func sendFile(
        _ descriptor: CInt,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, Int, Errno?) -> Void
    ) {
        self.channel.write(contentsOf: descriptor, offset: offset, length: length, queue: queue, handler: handler)
    }

    /// Nothing to give back: the channel's receive buffers are the ring's, lent per read.
    func becameIdle() {}
    /// Plaintext has no handshake.
    var isEstablished: Bool { true }

    /// `.stop`: the read is waiting for more bytes that will not be answered.
    func close() { self.channel.close(flags: .stop) }

    func stop() { self.channel.close(flags: .stop) }

    func cleanedUp() {}
}

/// TLS: a `TLSStream` over the connection's channel, which it owns.
///
/// - **The handshake** comes first: the stream waits for the client's hello; reads and writes
///   scheduled meanwhile wait for it. A client that sends something else gets OpenSSL's alert
///   and its connection closed (the stream closes it), and is counted with `--stats`. One
///   that has not finished its handshake `--header-timeout` seconds after it connected is
///   stopped by ``HTTPConnection``'s ticks (``isEstablished``), not by a handshake timer of
///   the stream's own.
/// - **Ticks** come from the ring's ``RingTicker`` (one timer per ring, not per connection),
///   since a TLS stream has no delivery interval.
/// - **Large ranges** go through `TLSStream.write(contentsOf:)`: spliced where the kernel
///   encrypts (kTLS), read and encrypted 64 KiB at a time where it does not.
/// - **Closing** sends `close_notify` after the last response (`TLSStream.close()`); the read
///   waiting then ends with the client's, or with the stop that ``HTTPConnection`` sends two
///   ticks later. A failure stops the stream at once.
/// - **Errors** reach the connection as their socket's errno, else ECONNABORTED (a failed
///   handshake or record): it treats every failure alike. The connection's write handler is
///   wrapped for that once (``makeWriteHandler(_:)``), not per write.
struct TLSTransport: HTTPTransport {
    let tls: TLSStream
    /// The ticks of the header and idle timeouts: the ring's, on the connection's queue.
    private let ticker: RingTicker
    private let ticks: RingTicker.Subscription
    private let stats: ServerStats?

    init(_ tls: TLSStream, queue: any IOQueue, ticker: RingTicker, stats: ServerStats?) {
        self.tls = tls
        self.ticker = ticker
        self.ticks = RingTicker.Subscription(ticker, queue: queue)
        self.stats = stats
    }

    func startReading<Reader: HTTPReader>(queue: any IOQueue, reader: Reader) {
        if let stats = self.stats {
            let tls = self.tls
            tls.handshake(queue: queue) { outcome in
                switch outcome {
                case .success: stats.tlsEstablished(offload: tls.offload)
                case .failure: stats.tlsFailed()
                }
            }
        }
        self.ticker.subscribe(self.ticks, reader: reader)
        self.tls.read(queue: queue) { done, data, error in
            reader.received(done: done, data: data, error: error.map(Self.errno))
        }
    }

    struct WriteHandler: Sendable {
        let body: @Sendable (Bool, ByteRope?, TLSError?) -> Void
    }

    func makeWriteHandler(_ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) -> WriteHandler {
        WriteHandler { done, remaining, error in handler(done, remaining, error.map(Self.errno)) }
    }

    func write(_ bytes: ByteRope, queue: any IOQueue, handler: WriteHandler) {
        self.tls.write(bytes, queue: queue, handler: handler.body)
    }

    func sendFile(
        _ descriptor: CInt,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, Int, Errno?) -> Void
    ) {
        self.tls.write(contentsOf: descriptor, offset: offset, length: length, queue: queue) { done, remaining, error in
            handler(done, remaining, error.map(Self.errno))
        }
    }

    /// OpenSSL's record buffers (about 34 KiB) go back: the context keeps them while the
    /// connection is busy (`TLSConfiguration.RecordBuffers.keptUntilReleased`), saving an
    /// allocation and a free per record.
    func becameIdle() { self.tls.releaseRecordBuffers() }
    /// The handshake has finished (a lock taken: read once a tick).
    var isEstablished: Bool { self.tls.handshakeResult != nil }

    func close() { self.tls.close() }

    func stop() {
        self.ticks.cancel()
        self.tls.close(flags: .stop)
    }

    /// The ticker holds the connection until then.
    func cleanedUp() { self.ticks.cancel() }

    private static func errno(_ error: TLSError) -> Errno { error.errno ?? .connectionAbort }
}
