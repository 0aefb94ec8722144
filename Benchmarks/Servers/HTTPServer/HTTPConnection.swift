//===----------------------------------------------------------------------===//
// RingIO — benchmark server: one HTTP/1.1 connection, plaintext or TLS, served by handlers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingHTTP
import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One connection served by completion handlers: its transport (the channel, or a TLS stream
/// over it: ``HTTPTransport``) read as it arrives, parsed with RingHTTP, answered in request
/// order (pipelining), kept alive until the client or a timeout ends it.
///
/// **Batches.** The responses to the requests that one read delivers go out as one write:
/// each is serialized and appended to `batch` (rope concatenation: no bytes copied), and the
/// batch is written once they are all answered — one write operation, one send, for 16
/// pipelined requests as for one. The order stays the request order. A small static file
/// joins the batch whole, its head and its bytes (a subrange of the file's mapping, see
/// `OpenFiles`); a large range's head is the last response of its batch, which is written
/// before the range is spliced after it, and the requests after it wait in `pending` until it
/// is out. A `100 Continue` joins the batch after the responses to the requests before it (or
/// waits for a file being spliced). `Connection: close` ends the batch; the connection closes once it
/// is written. A parse error (400, 413, …) or a header timeout (408) is answered after the
/// requests before it, then the connection closes.
///
/// **Timeouts** count the transport's ticks, one a second (the plaintext read's own, or those
/// of the ring's ``RingTicker`` for a TLS connection): the header timeout counts whole ticks
/// since the current request's first bytes, the idle timeout since the last bytes, so a
/// timeout of T seconds fires between T and T + 1 seconds. A TLS handshake not finished after
/// the header timeout since the connection was accepted is stopped the same way. After
/// closing, a connection that still ticks twice (a TLS client that does not answer
/// `close_notify`) is stopped.
///
/// Generic over its transport so that the plaintext connection is specialized code, with no
/// call through a protocol witness on the path of a request.
final class HTTPConnection<Transport: HTTPTransport>: HTTPReader, @unchecked Sendable {
    // @unchecked: the mutable state is touched only by this connection's handlers, which run
    // on `queue` one at a time (a ring, or a serial DispatchQueue), by `init` and `start`
    // before any handler can run, and by `cleanedUp` once every handler has run.

    // MARK: Immutable after init
    private let connection: IOConnection
    /// Where this connection's handlers (and its ticks) run.
    private let queue: any IOQueue
    private let server: Server
    /// `--stats`: the server's counters; `nil` without the flag.
    private let stats: ServerStats?
    private let headerTimeout: Int
    private let idleTimeout: Int

    // MARK: This connection's queue only
    // @exclusivity(unchecked) on what is changed in place (the parser, the waiting requests,
    // the batch): confined to the queue, so two accesses never overlap, and Swift's dynamic
    // exclusivity check of a class's stored property cost about 400 instructions a request
    // (callgrind, four checks).

    @exclusivity(unchecked) private var parser: HTTPRequestParser
    /// Parsed requests not yet answered: they wait while a file is spliced.
    @exclusivity(unchecked) private var pending: [HTTPRequest] = []
    /// Responses serialized and not yet written: written by `flush()`, as one operation.
    @exclusivity(unchecked) private var batch = ByteRope()
    /// The request being received asked for `100 Continue`, which is not sent yet (the
    /// responses before it go first).
    private var continueOwed = false
    /// A large file range is being spliced: later requests wait for it.
    private var busy = false
    /// Close once the responses queued so far are written.
    private var closing = false
    /// The read has ended (EOF, a reset): answer the requests received, then close.
    private var inputEnded = false
    private var closed = false
    /// Ticks since the connection was closed (a TLS stream waits for the client's end).
    private var closedTicks = 0
    private var writesInFlight = 0
    /// Ticks since bytes last arrived (or since the connection was accepted).
    private var idleTicks = 0
    /// Ticks since the current request's first bytes arrived; `nil` between requests.
    private var requestTicks: Int?
    /// The status to answer after the requests already parsed, before closing, and the rule
    /// the request broke (the parser's `failureReason`).
    private var failure: (status: HTTPStatus, rule: String?)?

    /// The channel, or a TLS stream over it. Declared last: the properties before it keep
    /// offsets fixed when compiled, where those after a property of a generic type may be
    /// read from the class's metadata (declared first, it cost 21 instructions more per
    /// request under callgrind).
    private let transport: Transport
    /// The handler of every socket write, made once: a closure per write would be an
    /// allocation per response. It holds the connection; the channel's cleanup drops it.
    /// (After `transport`, for the reason given there.)
    private var written: Transport.WriteHandler?

    init(_ connection: IOConnection, transport: Transport, queue: any IOQueue, server: Server) {
        self.connection = connection
        self.transport = transport
        self.queue = queue
        self.server = server
        self.stats = server.stats
        self.headerTimeout = server.headerTimeout
        self.idleTimeout = server.idleTimeout
        self.parser = HTTPRequestParser(limits: .init(maxBodyLength: server.maxBody))
        self.written = transport.makeWriteHandler { done, _, error in
            guard done else { return }
            self.stats?.writeFinished()
            self.writesInFlight -= 1
            if error != nil {
                self.fail()
            } else {
                self.closeIfDone()
            }
        }
    }

    /// Runs `work` on this connection's queue, later: its DispatchQueue, or else its ring
    /// (with handlers on the ring, `queue` is the ring that accepted the connection).
    private func onQueue(_ work: @escaping @Sendable () -> Void) {
        if let dispatchQueue = self.queue as? DispatchQueue {
            dispatchQueue.async(execute: work)
        } else {
            self.connection.ring.enqueue(work)
        }
    }

    func start() {
        // Held until the channel is cleaned up: then the write handler (which holds this
        // connection) and what was not sent are let go of.
        self.connection.whenClosed {
            // On the ring: this connection's state belongs to its queue.
            self.onQueue {
                self.cleanedUp()
                self.stats?.connectionClosed()
            }
        }
        // The listener's graceful shutdown: answer what was received (a file being sent
        // included), then close — decided here, where a response being prepared is known.
        self.connection.whenShuttingDown {
            self.onQueue {
                self.closing = true
                self.closeIfDone()
            }
        }
        self.stats?.readStarted()
        self.transport.startReading(queue: self.queue, reader: self)
    }

    // MARK: Reading

    /// The read delivered `data`, or ended (`done`).
    func received(done: Bool, data: ByteRope?, error: Errno?) {
        if done { self.stats?.readFinished() }
        guard !self.closed else { return }
        if let data, !data.isEmpty {
            self.idleTicks = 0
            if !self.closing {
                self.parse(data, with: &self.parser)
                self.process()
            }
        }
        if done {
            // EOF, a reset or a stop: answer what is complete — the requests waiting for a file
            // being spliced too — then close.
            self.inputEnded = true
            self.process()
        }
    }

    /// Appends `data` to the parser and answers the requests it completes, in order, into the
    /// batch — or queues them while a file is spliced.
    ///
    /// The parser comes inout: one exclusive access for the whole parse rather than one per
    /// call. Nothing called from here may touch `self.parser` (that would trap).
    private func parse(_ data: ByteRope, with parser: inout HTTPRequestParser) {
        parser.append(data)
        var completed = false
        do throws(HTTPParseError) {
            while !self.closing && !self.closed, let request = try parser.next() {
                completed = true
                // A continue still owed was for this request, whose body is here now.
                self.continueOwed = false
                if self.busy {
                    self.pending.append(request)
                } else {
                    assert(self.pending.isEmpty, "requests wait only while a file is spliced")
                    self.respond(to: request)
                }
            }
            if let head = try parser.nextHead(), head.expectsContinue {
                self.continueOwed = true
            }
        } catch {
            self.failAfterPending(status: error.status, rule: parser.failureReason)
        }
        // The header timeout counts from the first bytes of the request now being received.
        if !parser.isMidRequest {
            self.requestTicks = nil
        } else if completed || self.requestTicks == nil {
            self.requestTicks = 0
        }
    }

    /// A second has passed (the transport's tick): the header and idle timeouts; after a
    /// close, the client's time to close its end.
    func tick() {
        if self.closed {
            // A TLS stream sent close_notify: a client that has not closed its end within one
            // to two seconds is cut off (which ends the read waiting for it).
            self.closedTicks += 1
            if self.closedTicks == 2 { self.transport.stop() }
            return
        }
        self.idleTicks += 1
        if !self.transport.isEstablished {
            // A TLS handshake still running: no request can have arrived, and `idleTicks` counts
            // the ticks since the connection was accepted.
            if self.idleTicks > self.headerTimeout { self.fail() }
            return
        }
        if self.idleTicks == 1 && self.requestTicks == nil {
            // A second without a byte between requests: the transport may shrink (a TLS stream
            // gives OpenSSL's record buffers back).
            self.transport.becameIdle()
        }
        if let requestTicks = self.requestTicks {
            // Ticks counted since the request began: its age is at least `elapsed - 1` s.
            let elapsed = requestTicks + 1
            self.requestTicks = elapsed
            if elapsed > self.headerTimeout && !self.closing {
                self.failAfterPending(status: 408)
                self.process()
            }
        } else if self.idleTicks > self.idleTimeout && self.pending.isEmpty && !self.busy
            && self.writesInFlight == 0
        {
            self.closing = true
            self.closeIfDone()
        }
    }

    // MARK: Answering

    /// Answers `status` after the requests already parsed, then closes; a 400's body names
    /// `rule`.
    private func failAfterPending(status: HTTPStatus, rule: String? = nil) {
        guard self.failure == nil else { return }
        self.failure = (status, rule)
    }

    /// Answers the pending requests in order into the batch (until a file must be spliced or
    /// the connection is to close), then what is owed after them, and writes the batch.
    private func process() {
        if !self.pending.isEmpty {
            var answered = 0
            while !self.busy && !self.closing && !self.closed && answered < self.pending.count {
                let request = self.pending[answered]
                answered += 1
                self.respond(to: request)
            }
            if self.closing || self.closed || answered == self.pending.count {
                self.pending.removeAll(keepingCapacity: true)
            } else {
                self.pending.removeFirst(answered)
            }
        }
        if !self.busy && !self.closing && !self.closed && self.pending.isEmpty {
            if let failure = self.failure {
                self.batch.append(self.server.answer(failure: failure.status, rule: failure.rule))
                self.closing = true
            } else if self.continueOwed {
                self.continueOwed = false
                self.batch.append(HTTPResponseWriter.continueResponse)
            }
        }
        if self.inputEnded && !self.busy && self.pending.isEmpty {
            self.closing = true  // every request received is answered
        }
        self.flush()
        self.closeIfDone()
    }

    private func respond(to request: HTTPRequest) {
        let keepAlive = request.head.keepAlive
        if !keepAlive {
            // This is the last response: later pipelined requests are not answered.
            self.closing = true
        }
        let answer = self.server.answer(to: request, keepAlive: keepAlive)
        self.batch.append(answer.bytes)
        if let splice = answer.splice {
            // The head ends the batch: the file's bytes are spliced after it.
            self.flush()
            self.splice(splice)
        }
    }

    // MARK: Writing and closing

    /// Sends a large range of a file after the head: from the page cache to the socket with no
    /// copy through memory (`IOChannel.write(contentsOf:)`), or through the TLS stream. Later
    /// requests wait. (A small file's bytes went with its head, from the file's mapping.)
    private func splice(_ splice: Answer.Splice) {
        self.busy = true
        self.stats?.readStarted()
        self.transport.sendFile(
            splice.file.descriptor.rawValue,
            offset: Int64(splice.offset),
            length: splice.length,
            queue: self.queue
        ) { done, _, error in
            guard done else { return }
            withExtendedLifetime(splice.file) {}  // its descriptor stays open until here
            self.stats?.readFinished()
            self.busy = false
            if error != nil {
                self.fail()  // shorter than the head said (ENODATA), or the peer is gone
            } else {
                self.process()
            }
        }
    }

    /// Writes the batch, if any, as one operation.
    private func flush() {
        guard !self.batch.isEmpty else { return }
        var bytes = ByteRope()
        swap(&bytes, &self.batch)
        self.write(bytes)
    }

    private func write(_ bytes: ByteRope) {
        // Nothing more goes out once the connection is closed (or its channel cleaned up).
        guard !self.closed, let written = self.written else { return }
        self.writesInFlight += 1
        self.stats?.writeStarted()
        self.transport.write(bytes, queue: self.queue, handler: written)
    }

    /// Closes once closing was asked for and everything queued is written.
    private func closeIfDone() {
        guard self.closing, !self.closed, !self.busy, self.writesInFlight == 0 else { return }
        assert(self.batch.isEmpty, "a handler returned without writing its batch")
        self.closed = true
        self.transport.close()
    }

    /// The channel's cleanup handler ran (every operation has finished): let go of the write
    /// handler (and a TLS connection's ticks), which hold the connection, and of what was not
    /// sent.
    private func cleanedUp() {
        self.closed = true
        self.transport.cleanedUp()
        self.written = nil
        self.batch = ByteRope()
        self.pending.removeAll()
    }

    /// Ends the connection at once.
    private func fail() {
        guard !self.closed else { return }
        self.closed = true
        self.transport.stop()
    }
}
