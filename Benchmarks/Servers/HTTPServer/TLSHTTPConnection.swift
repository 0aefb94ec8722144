//===----------------------------------------------------------------------===//
// RingIO — benchmark server: one HTTP/1.1 connection over TLS (--tls-certificate).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingHTTP
import RingIO
import RingTLS
import Synchronization
import SystemPackage

/// One HTTPS connection, served by a task on the ring that accepted it: a `TLSStream` over the
/// connection's channel, then the loop of ``AsyncHTTPConnection`` over the stream's plaintext
/// — the same answers, keep-alive and pipelining (the responses to the requests one read
/// delivers go out as one write), a large range sent after its head (with kTLS, spliced).
///
/// The handshake is awaited first: a client that sends something other than a TLS hello, or
/// fails the handshake, gets OpenSSL's alert and its connection closed (the stream closes
/// it), and is counted with `--stats`; one that stops mid-handshake is cut off after the
/// context's handshake timeout (`--header-timeout`).
///
/// **Timeouts.** A TLS stream has no delivery interval: a one-second timer per connection
/// (a deadline in its ring's timer queue) counts ticks while the task waits for a request.
/// Past `--header-timeout` seconds since a request's first bytes, the timer answers 408;
/// past `--idle-timeout` seconds of an idle keep-alive connection, it answers nothing. Either
/// way it then sends `close_notify` and shuts the socket down for writing (a client then
/// closes, which ends the read), and cuts the connection off a tick later if the client has
/// not. Timer and task both run on the ring's
/// thread, one at a time: the atomics of ``TLSConnectionState`` only make it `Sendable`.
struct TLSHTTPConnection {
    private let connection: IOConnection
    private let server: Server
    private let context: TLSContext
    private var parser: HTTPRequestParser
    private let state = TLSConnectionState()

    init(_ connection: IOConnection, server: Server, context: TLSContext) {
        self.connection = connection
        self.server = server
        self.context = context
        self.parser = HTTPRequestParser(limits: .init(maxBodyLength: server.maxBody))
    }

    /// Serves the connection until the client or a timeout ends it, or the server stops.
    mutating func run() async {
        let stats = self.server.stats
        stats?.connectionAccepted()
        defer { stats?.connectionClosed() }
        let tls: TLSStream
        do throws(TLSError) {
            tls = try TLSStream(accepting: self.connection, context: self.context)
        } catch {
            self.server.logger.warning("TLS: \(error)")
            stats?.tlsFailed()
            self.connection.channel.close(flags: .stop)
            return
        }
        do throws(TLSError) {
            _ = try await tls.handshake()
        } catch {
            // The stream has sent OpenSSL's alert and closes its channel itself.
            stats?.tlsFailed()
            return
        }
        stats?.tlsEstablished(offload: tls.offload)

        let state = self.state
        let server = self.server
        let ring = self.connection.ring
        let timer = IOSource.makeTimerSource(queue: ring)
        timer.schedule(after: .seconds(1), repeating: .seconds(1))
        timer.setEventHandler {
            state.tick(tls: tls, ring: ring, headerTimeout: server.headerTimeout) {
                server.answer(failure: 408)
            } idleTimeout: {
                server.idleTimeout
            }
        }
        timer.resume()
        defer { timer.cancel() }
        // The listener's graceful shutdown: between batches, close_notify and FIN (the client
        // then closes, which ends the read); while one is being answered, close after it.
        self.connection.whenShuttingDown {
            state.shutdownRequested.store(true, ordering: .relaxed)
            if state.reading.load(ordering: .relaxed) { tls.closeWrite() }
        }

        stats?.readStarted()
        var reads = tls.reads().makeAsyncIterator()
        do throws(TLSError) {
            while true {
                state.reading.store(true, ordering: .relaxed)
                guard let data = try await reads.next() else { break }
                state.reading.store(false, ordering: .relaxed)
                let close = try await self.received(data, on: tls)
                if close || state.shutdownRequested.load(ordering: .relaxed) { break }
            }
        } catch {
            // A reset, a peer gone without close_notify, a timeout's stop: close.
        }
        stats?.readFinished()
        // Pending writes finish, close_notify goes out; a read no longer waits.
        tls.close()
    }

    /// Parses `data` and answers every request it completes, in order; returns whether the
    /// connection is to close.
    private mutating func received(_ data: ByteRope, on tls: TLSStream) async throws(TLSError) -> Bool {
        self.state.idleTicks.store(0, ordering: .relaxed)
        self.parser.append(data)
        var batch = ByteRope()
        var closing = false
        var completed = false
        while !closing {
            let request: HTTPRequest
            do throws(HTTPParseError) {
                guard let next = try self.parser.next() else { break }
                request = next
            } catch {
                batch.append(self.server.answer(failure: error.status, rule: self.parser.failureReason))
                closing = true
                break
            }
            completed = true
            let keepAlive = request.head.keepAlive
            if !keepAlive { closing = true }  // later pipelined requests are not answered
            let answer = self.server.answer(to: request, keepAlive: keepAlive)
            batch.append(answer.bytes)
            if let splice = answer.splice {
                // The head ends the batch: the file's bytes go after it.
                try await self.write(batch, on: tls)
                batch = ByteRope()
                try await self.send(splice, on: tls)
            }
        }
        if !closing {
            do throws(HTTPParseError) {
                if let head = try self.parser.nextHead(), head.expectsContinue {
                    batch.append(HTTPResponseWriter.continueResponse)
                }
            } catch {
                batch.append(self.server.answer(failure: error.status, rule: self.parser.failureReason))
                closing = true
            }
        }
        if !batch.isEmpty {
            try await self.write(batch, on: tls)
            self.state.idleTicks.store(0, ordering: .relaxed)
        }
        // The header timeout counts from the first bytes of the request now being received.
        if !self.parser.isMidRequest {
            self.state.requestTicks.store(-1, ordering: .relaxed)
        } else if completed || self.state.requestTicks.load(ordering: .relaxed) < 0 {
            self.state.requestTicks.store(0, ordering: .relaxed)
        }
        return closing
    }

    /// Sends a large range of a file after its head: spliced with kTLS, else read and
    /// encrypted 64 KiB at a time (`TLSStream.write(contentsOf:)`).
    private func send(_ splice: Answer.Splice, on tls: TLSStream) async throws(TLSError) {
        let stats = self.server.stats
        stats?.readStarted()
        defer { stats?.readFinished() }
        try await tls.write(
            contentsOf: splice.file.descriptor.rawValue,
            offset: Int64(splice.offset),
            length: splice.length
        )
        withExtendedLifetime(splice.file) {}  // its descriptor stays open until here
    }

    /// Encrypts and writes `bytes` (counted with `--stats`).
    private func write(_ bytes: ByteRope, on tls: TLSStream) async throws(TLSError) {
        let stats = self.server.stats
        stats?.writeStarted()
        defer { stats?.writeFinished() }
        try await tls.write(bytes)
    }
}

/// What an HTTPS connection's task, its timer and the listener's graceful shutdown share. All
/// three run on the connection's ring thread (the task prefers it; the timer's and
/// `whenShuttingDown`'s handlers run there), so they never interleave: relaxed atomics only
/// make it `Sendable`.
final class TLSConnectionState: Sendable {
    /// The task waits for the next request: no response is being prepared.
    let reading = Atomic<Bool>(false)
    /// The listener is shutting down: close after the batch being answered.
    let shutdownRequested = Atomic<Bool>(false)
    /// Ticks, while waiting for a request, since bytes last arrived or a response was written.
    let idleTicks = Atomic<Int>(0)
    /// Ticks since the current request's first bytes arrived; -1 between requests.
    let requestTicks = Atomic<Int>(-1)
    /// A timeout has closed (or is closing) the stream.
    private let timedOut = Atomic<Bool>(false)

    /// A second has passed: the header and idle timeouts, counted while the task waits for a
    /// request. Runs on the ring's thread.
    func tick(
        tls: TLSStream,
        ring: RingLoop,
        headerTimeout: Int,
        answer408: () -> ByteRope,
        idleTimeout: () -> Int
    ) {
        guard self.reading.load(ordering: .relaxed) else { return }
        if self.timedOut.load(ordering: .relaxed) {
            // close_notify and FIN went out a tick ago: the client has not closed. Cut it off.
            tls.close(flags: .stop)
            return
        }
        let idle = self.idleTicks.add(1, ordering: .relaxed).newValue
        let request = self.requestTicks.load(ordering: .relaxed)
        // A second without a byte between requests: OpenSSL's record buffers go back (the
        // context keeps them while the connection is busy).
        if idle == 1 && request < 0 { tls.releaseRecordBuffers() }
        if request >= 0 {
            self.requestTicks.store(request + 1, ordering: .relaxed)
            if request + 1 > headerTimeout {
                self.timedOut.store(true, ordering: .relaxed)
                tls.write(answer408(), queue: ring) { _, _, _ in }
                tls.closeWrite()  // after the 408: close_notify and FIN; the client closes
            }
        } else if idle > idleTimeout() {
            self.timedOut.store(true, ordering: .relaxed)
            tls.closeWrite()  // close_notify and FIN: the client closes, which ends the read
        }
    }
}
