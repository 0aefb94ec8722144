//===----------------------------------------------------------------------===//
// RingIO — benchmark server: one end of a proxied connection, plaintext or TLS.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import RingTLS

/// One end of a proxied connection, as a `Forwarder` uses it: reads, writes, the count of
/// bytes waiting to be sent, a half-close and a close. Every call and every handler is on the
/// connection's ring. The handlers have the channel's own type — an error is an `Errno` — so
/// that a plaintext end hands them to its channel as they are: a type of the side's own there
/// (a generic error) took a reabstraction thunk, allocated, around every handler on the hot
/// path (6% more instructions per forwarded round trip under callgrind).
protocol ProxySide: Sendable {
    /// Reads up to `length` bytes, calling `handler` as they arrive: `(done, data, error)`.
    /// Fewer than `length` with no error means the end of this side's input.
    func read(length: Int, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void)
    /// Writes `data`, calling `handler` until `done`: `(done, remaining, error)`.
    func write(_ data: ByteRope, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void)
    /// Bytes handed to `write` and not yet written.
    var queuedWriteBytes: Int { get }
    /// Ends this side's output after the writes before it; then calls `handler`.
    func shutdownOutput(ring: RingLoop, _ handler: @escaping @Sendable () -> Void)
    /// Closes this side: after its writes, or at once with `stop`.
    func close(stop: Bool)
}

/// A plaintext end: the connection's channel, with the kernel's buffers passed on as they came.
struct PlainSide: ProxySide {
    let channel: IOChannel

    func read(length: Int, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) {
        self.channel.read(length: length, queue: ring, handler: handler)
    }

    func write(_ data: ByteRope, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) {
        self.channel.write(data, queue: ring, handler: handler)
    }

    var queuedWriteBytes: Int { self.channel.queuedWriteBytes }

    func shutdownOutput(ring: RingLoop, _ handler: @escaping @Sendable () -> Void) {
        self.channel.shutdownOutput(queue: ring) { _ in handler() }
    }

    func close(stop: Bool) { self.channel.close(flags: stop ? .stop : []) }
}

/// A TLS end: a `TLSStream` over the connection's channel, which the proxy terminates (the
/// client's side, with the proxy's certificate) or originates (the upstream's side). Its reads
/// are the decrypted records; its writes are encrypted from the ropes' regions.
final class TLSSide: ProxySide {
    let stream: TLSStream
    /// Plaintext handed to the stream and not yet written: the stream keeps no such count.
    private let queued: RingBound<Int>

    init(_ stream: TLSStream) {
        self.stream = stream
        self.queued = RingBound(0, ring: stream.ring)
    }

    func read(length: Int, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) {
        self.stream.read(length: length, queue: ring) { done, data, error in
            // A peer that closes its connection without close_notify has ended its input all
            // the same (many clients do): passed on as an end, not as a failure.
            if let error, error.code == .uncleanShutdown { return handler(done, data, nil) }
            handler(done, data, error.map(Self.errno))
        }
    }

    func write(_ data: ByteRope, ring: RingLoop, _ handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void) {
        let count = data.count
        self.queued.value += count
        self.stream.write(data, queue: ring) { done, remaining, error in
            if done { self.queued.value -= count }
            handler(done, remaining, error.map(Self.errno))
        }
    }

    /// A TLS failure as the proxy reports failures: its socket's errno, else ECONNABORTED (a
    /// failed handshake or record, a stop). Either way both sides of the connection stop.
    private static func errno(_ error: TLSError) -> Errno { error.errno ?? .connectionAbort }

    var queuedWriteBytes: Int { self.queued.value }

    /// `close_notify` and a shutdown for writing, after the pending writes: the stream does it
    /// in order with them, so the end is passed on at once.
    func shutdownOutput(ring: RingLoop, _ handler: @escaping @Sendable () -> Void) {
        self.stream.closeWrite()
        handler()
    }

    func close(stop: Bool) { self.stream.close(flags: stop ? .stop : []) }
}
