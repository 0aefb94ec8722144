//===----------------------------------------------------------------------===//
// RingIO — benchmark server: both directions of one proxied connection.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO

/// A client connection and its upstream, both on one ring, forwarding both ways. Every
/// handler runs on that ring, one at a time: the state is a `RingBound`, with no lock. Each
/// side is plaintext or TLS (`ProxySide`); the forwarding is the same.
///
/// - A side's end of input (EOF, or TLS's `close_notify`) is passed on as a half-close once
///   the bytes before it are sent; when both directions have ended, both sides close.
/// - An error on either side (a reset, a broken pipe, a failed handshake) stops and closes both.
final class ProxiedConnection<Client: ProxySide, Server: ProxySide>: Sendable {
    let client: Client
    let server: Server
    private let ring: RingLoop
    private let directionsEnded: RingBound<Int>
    private let bound: Int

    init(client: Client, server: Server, ring: RingLoop, bound: Int) {
        self.client = client
        self.server = server
        self.ring = ring
        self.bound = bound
        self.directionsEnded = RingBound(0, ring: ring)
    }

    func start() {
        Forwarder(from: self.client, to: self.server, ring: self.ring, bound: self.bound) { self.ended($0) }.readMore()
        Forwarder(from: self.server, to: self.client, ring: self.ring, bound: self.bound) { self.ended($0) }.readMore()
    }

    /// One direction ended: by its end of input, passed on (`nil`), or by an error.
    private func ended(_ error: Errno?) {
        guard error == nil else {
            self.client.close(stop: true)
            self.server.close(stop: true)
            return
        }
        self.directionsEnded.value += 1
        if self.directionsEnded.value == 2 {
            self.client.close(stop: false)
            self.server.close(stop: false)
        }
    }
}

/// One direction: what `from` receives is written to `to` as it came. Reading pauses while
/// `bound` bytes or more wait to be sent (`to.queuedWriteBytes`): a side that does not read
/// holds back the other, and the proxy keeps at most about twice `bound` per direction.
final class Forwarder<From: ProxySide, To: ProxySide>: Sendable {
    private struct State {
        var reading = false
        var finished = false  // `from` ended (its end of input or an error): no more reads
    }

    private let from: From
    private let to: To
    private let ring: RingLoop
    private let bound: Int
    private let state: RingBound<State>
    private let ended: @Sendable (Errno?) -> Void

    init(from: From, to: To, ring: RingLoop, bound: Int, ended: @escaping @Sendable (Errno?) -> Void) {
        self.from = from
        self.to = to
        self.ring = ring
        self.bound = bound
        self.state = RingBound(State(), ring: ring)
        self.ended = ended
    }

    /// Reads up to `bound` bytes, forwarding them as they arrive; on when the sends catch up.
    func readMore() {
        let state = self.state.value
        guard !state.reading, !state.finished, self.to.queuedWriteBytes < self.bound else { return }
        self.state.value.reading = true
        let read = RingBound(0, ring: self.ring)
        self.from.read(length: self.bound, ring: self.ring) { done, data, error in
            if let data, !data.isEmpty {
                read.value += data.count
                self.forward(data)
            }
            guard done else { return }
            self.state.value.reading = false
            if let error {
                self.state.value.finished = true
                self.ended(error)
            } else if read.value < self.bound {
                self.state.value.finished = true
                // The end of this side's input: the other side's output ends after what was sent.
                self.to.shutdownOutput(ring: self.ring) { self.ended(nil) }
            } else {
                self.readMore()
            }
        }
    }

    private func forward(_ data: ByteRope) {
        self.to.write(data, ring: self.ring) { done, _, error in
            guard done else { return }
            if let error { return self.ended(error) }
            self.readMore()
        }
    }
}
