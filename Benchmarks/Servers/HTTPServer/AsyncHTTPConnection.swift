//===----------------------------------------------------------------------===//
// RingIO — benchmark server: one HTTP/1.1 connection served by a task (--api async).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingHTTP
import RingIO
import Synchronization
import SystemPackage

/// One connection, served by a task on the ring that accepted it: read, parse, answer, in a
/// loop of awaits that each complete on the ring thread.
///
/// The same behaviour as ``HTTPConnection`` in a straight line: the responses to the requests
/// that one read delivers go out as one write, a small file's bytes with its head (from the
/// file's mapping); a large range's head ends its batch and the range is spliced after it;
/// requests received meanwhile wait in the parser. A parse error or a header timeout is
/// answered after the requests before it, then the connection closes.
///
/// **Timeouts** come from the read itself: the channel's interval is one second, strict, when
/// the read is scheduled, so the read produces an empty rope at every tick with nothing
/// pending (R52); the interval is reset to zero at once, so the writes scheduled later arm
/// no timer. Ticks count towards the header timeout (since the current request's first bytes)
/// and the idle timeout (since the connection last did something), as in the handler server
/// (HTTPConnection): a timeout of T seconds fires between T and T + 1 seconds.
struct AsyncHTTPConnection {
    private let connection: IOConnection
    private let server: Server
    private var parser: HTTPRequestParser
    /// Ticks since bytes last arrived or a response was last written.
    private var idleTicks = 0
    /// Ticks since the current request's first bytes arrived; `nil` between requests.
    private var requestTicks: Int?

    init(_ connection: IOConnection, server: Server) {
        self.connection = connection
        self.server = server
        self.parser = HTTPRequestParser(limits: .init(maxBodyLength: server.maxBody))
    }

    /// Serves the connection until the client or a timeout ends it, or the server stops.
    mutating func run() async {
        let stats = self.server.stats
        stats?.connectionAccepted()
        defer { stats?.connectionClosed() }
        let channel = self.connection.channel
        channel.setLimit(lowWater: 1)
        channel.setInterval(.seconds(1), flags: .strict)
        var reads = channel.reads().makeAsyncIterator()
        var ticking = true
        // The listener's graceful shutdown: between batches, stop the channel at once; while
        // one is being answered (a file read, a write not yet scheduled), close after it.
        let shutdown = ShutdownRequest()
        self.connection.whenShuttingDown {
            shutdown.requested.store(true, ordering: .relaxed)
            if shutdown.reading.load(ordering: .relaxed) { channel.close(flags: .stop) }
        }
        stats?.readStarted()
        do throws(Errno) {
            while true {
                shutdown.reading.store(true, ordering: .relaxed)
                guard let data = try await reads.next() else { break }
                shutdown.reading.store(false, ordering: .relaxed)
                if ticking {
                    // The read has the interval now; later operations (the writes) have none.
                    channel.setInterval(.zero)
                    ticking = false
                }
                let close = data.isEmpty ? try await self.tick() : try await self.received(data)
                if close || shutdown.requested.load(ordering: .relaxed) { break }
            }
        } catch {
            // A reset, a failed file, the listener's shutdown (ECANCELED): close.
        }
        stats?.readFinished()
        // .stop: the read is waiting for bytes that will not be answered.
        channel.close(flags: .stop)
    }

    /// Parses `data` and answers every request it completes, in order; returns whether the
    /// connection is to close.
    private mutating func received(_ data: ByteRope) async throws(Errno) -> Bool {
        self.idleTicks = 0
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
                // The head ends the batch: the file's bytes are spliced after it.
                try await self.write(batch)
                batch = ByteRope()
                try await self.send(splice)
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
            try await self.write(batch)
            self.idleTicks = 0
        }
        // The header timeout counts from the first bytes of the request now being received.
        if !self.parser.isMidRequest {
            self.requestTicks = nil
        } else if completed || self.requestTicks == nil {
            self.requestTicks = 0
        }
        return closing
    }

    /// A second has passed: the header and idle timeouts. Returns
    /// whether the connection is to close.
    private mutating func tick() async throws(Errno) -> Bool {
        self.idleTicks += 1
        if let requestTicks = self.requestTicks {
            self.requestTicks = requestTicks + 1
            if requestTicks + 1 > self.server.headerTimeout {
                try await self.write(self.server.answer(failure: 408))
                return true
            }
            return false
        }
        return self.idleTicks > self.server.idleTimeout
    }

    /// Sends a large range of a file from the page cache to the socket, after its head, with
    /// no copy through memory. (A small file's bytes went with its head, from the file's
    /// mapping.)
    ///
    /// - Throws: The splice's error: ENODATA when the file was shorter than its head said (the
    ///   connection cannot go on), EPIPE or ECONNRESET when the peer is gone.
    private func send(_ splice: Answer.Splice) async throws(Errno) {
        let stats = self.server.stats
        stats?.readStarted()
        defer { stats?.readFinished() }
        try await self.connection.channel.write(
            contentsOf: splice.file.descriptor.rawValue,
            offset: Int64(splice.offset),
            length: splice.length
        )
        withExtendedLifetime(splice.file) {}  // its descriptor stays open until here
    }

    /// Writes `bytes` to the socket (counted with `--stats`). Inlined: a call to an async
    /// function of its own would cost a frame per write, about 1.5% of a request.
    @inline(__always)
    private func write(_ bytes: ByteRope) async throws(Errno) {
        guard let stats = self.server.stats else {
            return try await self.connection.channel.write(bytes)
        }
        stats.writeStarted()
        defer { stats.writeFinished() }
        try await self.connection.channel.write(bytes)
    }
}

/// What a connection's task and the listener's graceful shutdown share. Both run on the
/// connection's ring thread (the task prefers it; `whenShuttingDown` handlers run there), so
/// they never interleave: relaxed atomics only make it `Sendable`.
final class ShutdownRequest: Sendable {
    /// The task waits for the next read: no response is being prepared.
    let reading = Atomic<Bool>(false)
    /// The listener is shutting down: close after the batch being answered.
    let requested = Atomic<Bool>(false)
}
