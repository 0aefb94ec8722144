//===----------------------------------------------------------------------===//
// RingIO — benchmark server: echo over TLS (--tls-certificate, --tls-key).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import RingTLS

/// One connection echoed over TLS by completion handlers: a `TLSStream` over the connection's
/// channel, whose plaintext is written back as it is decrypted. The handlers hold the stream;
/// the peer's `close_notify` (or the end of its connection) ends the read, and the stream
/// closes — after the echoes in flight, with its own `close_notify`. A handshake that fails
/// (garbage instead of a hello) ends the read with its error; the stream has closed its
/// channel.
final class TLSEchoConnection: Sendable {
    private let tls: TLSStream
    private let queue: any IOQueue
    private let stats: ServerStats?

    init(_ tls: TLSStream, queue: any IOQueue, stats: ServerStats?) {
        self.tls = tls
        self.queue = queue
        self.stats = stats
    }

    func start() {
        let stats = self.stats
        if let stats {
            self.tls.handshake(queue: self.queue) { outcome in
                switch outcome {
                case .success: stats.tlsEstablished(offload: self.tls.offload)
                case .failure: stats.tlsFailed()
                }
            }
        }
        stats?.readStarted()
        self.tls.read(queue: self.queue) { done, data, error in
            if let data, !data.isEmpty { self.echo(data) }
            if done {
                stats?.readFinished()
                if let error, !Self.isExpected(error) { print("echo-server: TLS read failed: \(error)") }
                self.tls.close()
            }
        }
    }

    private func echo(_ data: ByteRope) {
        self.stats?.writeStarted()
        self.tls.write(data, queue: self.queue) { _, _, error in
            self.stats?.writeFinished()
            if error != nil { self.tls.close(flags: .stop) }
        }
    }

    /// The ends a server sees every day: a peer gone without `close_notify`, a reset, a
    /// stop, a failed handshake (counted with `--stats`), a socket error: not printed.
    static func isExpected(_ error: TLSError) -> Bool {
        let expected: [TLSError.Code] = [
            .uncleanShutdown, .canceled, .closed, .handshakeFailed, .handshakeTimedOut, .io,
        ]
        return expected.contains(error.code)
    }
}

/// One connection echoed over TLS by a task on the ring that accepted it (`--api async`):
///
///     for try await data in tls.reads() { try await tls.write(data) }
func echoTLS(_ connection: IOConnection, context: TLSContext, stats: ServerStats?) async {
    stats?.connectionAccepted()
    defer { stats?.connectionClosed() }
    let tls: TLSStream
    do throws(TLSError) {
        tls = try TLSStream(accepting: connection, context: context)
    } catch {
        print("echo-server: TLS: \(error)")
        stats?.tlsFailed()
        connection.channel.close(flags: .stop)
        return
    }
    defer { tls.close() }
    do throws(TLSError) {
        _ = try await tls.handshake()
    } catch {
        stats?.tlsFailed()
        return
    }
    stats?.tlsEstablished(offload: tls.offload)
    stats?.readStarted()
    defer { stats?.readFinished() }
    do throws(TLSError) {
        for try await data in tls.reads() {
            stats?.writeStarted()
            defer { stats?.writeFinished() }
            try await tls.write(data)
        }
    } catch {
        if !TLSEchoConnection.isExpected(error) { print("echo-server: TLS connection failed: \(error)") }
    }
}
