//===----------------------------------------------------------------------===//
// RingIO — example: one HTTP/1.1 connection.
//===----------------------------------------------------------------------===//

import Dispatch
import RingHTTP
import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One connection: a stream channel read as it arrives, parsed with RingHTTP, answered in
/// request order (pipelining), kept alive until the client or a timeout ends it.
///
/// A strict 1-second interval on the read is the watchdog: each tick checks the header and
/// idle timeouts.
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: the mutable state is touched only by this connection's handlers, which run
    // on `queue` one at a time (a ring, or a serial DispatchQueue), and by `start` before any
    // handler can run.
    private let channel: IOChannel
    private let ring: RingLoop
    private let queue: any IOQueue
    private let server: Server

    private var parser: HTTPRequestParser
    private var pending: [HTTPRequest] = []
    /// A file response is being streamed: later requests wait for it.
    private var busy = false
    /// Close once the responses queued so far are written.
    private var closing = false
    private var closed = false
    private var writesInFlight = 0
    /// Bytes of the file being streamed handed to the socket so far.
    private var fileBytesSent = 0
    private var lastActivity = ContinuousClock.now
    private var requestStarted: ContinuousClock.Instant?

    init(
        fd: CInt,
        ring: RingLoop,
        queue: any IOQueue,
        server: Server,
        onClose: @escaping @Sendable (HTTPConnection) -> Void
    ) {
        self.ring = ring
        self.queue = queue
        self.server = server
        self.parser = HTTPRequestParser(limits: .init(maxBodyLength: server.configuration.maxBody))
        let box = ConnectionBox()
        self.channel = IOChannel(kind: .stream, fileDescriptor: fd, queue: queue, ring: ring) { _ in
            close(fd)
            if let connection = box.connection.withLock({ $0 }) { onClose(connection) }
            box.connection.withLock { $0 = nil }
        }
        box.connection.withLock { $0 = self }
    }

    func start() {
        self.channel.setLimit(lowWater: 1)
        self.channel.setInterval(.seconds(1), flags: .strict)
        self.channel.read(offset: 0, length: .max, queue: self.queue) { done, data, error in
            self.received(done: done, data: data, error: error)
        }
    }

    /// Graceful shutdown: answer what was received, then close (on the connection's queue).
    func shutdown() {
        self.queue.enqueue {
            self.closing = true
            self.closeIfDone()
        }
    }

    /// Immediate shutdown.
    func stop() {
        self.channel.close(flags: .stop)
    }

    // MARK: Reading

    private func received(done: Bool, data: ByteRope?, error: Errno?) {
        guard !self.closed else { return }
        if let data, !data.isEmpty {
            self.lastActivity = .now
            if !self.closing {
                self.parser.append(data)
                self.parse()
            }
        } else if !done {
            self.tick()
        }
        if done {
            // EOF, a reset or a stop: answer what is complete, then close.
            self.closing = true
            self.closeIfDone()
        }
    }

    private func parse() {
        do throws(HTTPParseError) {
            while let request = try self.parser.next() { self.pending.append(request) }
            if let head = try self.parser.nextHead(), head.expectsContinue {
                self.write(HTTPResponseWriter.continueResponse)
            }
        } catch {
            self.failAfterPending(status: error.status)
        }
        self.requestStarted = self.parser.isMidRequest ? (self.requestStarted ?? .now) : nil
        self.process()
    }

    /// The strict interval's tick: the header and idle timeouts.
    private func tick() {
        let now = ContinuousClock.now
        if let started = self.requestStarted, !self.closing,
            now - started > .seconds(self.server.configuration.headerTimeout)
        {
            self.failAfterPending(status: 408)
            self.process()
        } else if self.pending.isEmpty && !self.busy && self.writesInFlight == 0 && self.requestStarted == nil
            && now - self.lastActivity > .seconds(self.server.configuration.idleTimeout)
        {
            self.closing = true
            self.closeIfDone()
        }
    }

    // MARK: Answering

    private var failureStatus: HTTPStatus?

    /// Answers `status` after the requests already parsed, then closes.
    private func failAfterPending(status: HTTPStatus) {
        guard self.failureStatus == nil else { return }
        self.failureStatus = status
    }

    private func process() {
        while !self.busy && !self.closing, !self.pending.isEmpty {
            let request = self.pending.removeFirst()
            self.respond(to: request)
        }
        if !self.busy && self.pending.isEmpty, let status = self.failureStatus, !self.closing {
            let response = HTTPResponse(status: status, closeConnection: true)
            self.log(method: "-", path: "-", status: status, bytes: 0)
            self.write(self.server.writer.serialize(response))
            self.closing = true
        }
        self.closeIfDone()
    }

    private func respond(to request: HTTPRequest) {
        let keepAlive = request.keepAlive && !self.server.stopping.load(ordering: .relaxed)
        if !keepAlive {
            // This is the last response: later pipelined requests are not answered.
            self.closing = true
            self.pending.removeAll()
        }
        switch (request.method, request.path) {
        case (.get, "/"), (.head, "/"):
            self.send(.ok, body: ByteRope(copying: "Hello, World!".utf8), type: "text/plain", to: request, keepAlive)
        case (.post, "/echo"):
            self.send(.ok, body: request.body, type: "application/octet-stream", to: request, keepAlive)
        case (.other, _):
            self.send(501, body: ByteRope(), type: nil, to: request, keepAlive)
        case (_, "/"):
            self.send(405, body: ByteRope(), type: nil, to: request, keepAlive, extra: [("Allow", "GET, HEAD")])
        case (_, "/echo"):
            self.send(405, body: ByteRope(), type: nil, to: request, keepAlive, extra: [("Allow", "POST")])
        case (.get, _), (.head, _):
            self.serveFile(request, keepAlive: keepAlive)
        default:
            self.send(405, body: ByteRope(), type: nil, to: request, keepAlive, extra: [("Allow", "GET, HEAD")])
        }
    }

    private func send(
        _ status: HTTPStatus,
        body: ByteRope,
        type: String?,
        to request: HTTPRequest,
        _ keepAlive: Bool,
        extra: [(name: String, value: String)] = []
    ) {
        var headers = extra
        if let type { headers.append(("Content-Type", type)) }
        let response = HTTPResponse(status: status, headers: headers, body: body, closeConnection: !keepAlive)
        self.log(method: request.method.rawValue, path: request.path, status: status, bytes: body.count)
        self.write(self.server.writer.serialize(response, for: request.head))
    }

    // MARK: Static files

    private func serveFile(_ request: HTTPRequest, keepAlive: Bool) {
        guard let root = self.server.root else {
            return self.send(404, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        guard let relative = HTTPPath.normalized(request.path) else {
            return self.send(403, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        var path = root + relative
        var info = stat()
        guard stat(path, &info) == 0 else {
            return self.send(404, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            path += path.hasSuffix("/") ? "index.html" : "/index.html"
            guard stat(path, &info) == 0 else {
                return self.send(404, body: ByteRope(), type: nil, to: request, keepAlive)
            }
        }
        // Symlinks may not lead out of the root.
        guard let resolved = realpath(path, nil) else {
            return self.send(404, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        let real = String(cString: resolved)
        free(resolved)
        guard real.hasPrefix(root + "/") else {
            return self.send(403, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return self.send(404, body: ByteRope(), type: nil, to: request, keepAlive)
        }
        let size = Int(info.st_size)
        let response = HTTPResponse(
            status: .ok,
            headers: [("Content-Type", Self.contentType(of: real)), ("Content-Length", String(size))],
            closeConnection: !keepAlive
        )
        self.log(method: request.method.rawValue, path: request.path, status: .ok, bytes: size)
        self.write(self.server.writer.serializeHead(response, for: request.head))
        guard request.method == .get, size > 0 else { return }
        // The file's bytes: read through a random-access channel, each chunk written to the
        // socket as the rope region it was read into — no copy in between.
        let file: IOChannel
        do throws(Errno) {
            file = try IOChannel(
                kind: .randomAccess,
                path: FilePath(real),
                mode: .readOnly,
                queue: self.queue,
                ring: self.ring
            ) { _ in }
        } catch {
            self.fail()
            return
        }
        self.busy = true
        self.fileBytesSent = 0
        file.read(offset: 0, length: size, queue: self.queue) { done, data, error in
            if let data, !data.isEmpty {
                self.fileBytesSent += data.count
                self.write(data)
            }
            guard done else { return }
            file.close()
            self.busy = false
            if error != nil || self.fileBytesSent != size {
                self.fail()  // the head promised `size` bytes: the connection cannot go on
            } else {
                self.process()
            }
        }
    }

    private static func contentType(of path: String) -> String {
        let name = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "txt": return "text/plain; charset=utf-8"
        case "css": return "text/css"
        case "js": return "text/javascript"
        case "json": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "pdf": return "application/pdf"
        default: return "application/octet-stream"
        }
    }

    // MARK: Writing and closing

    private func write(_ bytes: ByteRope) {
        self.writesInFlight += 1
        self.channel.write(offset: 0, data: bytes, queue: self.queue) { done, _, error in
            guard done else { return }
            self.writesInFlight -= 1
            if error != nil {
                self.fail()
            } else {
                self.closeIfDone()
            }
        }
    }

    /// Closes once closing was asked for and everything queued is written.
    private func closeIfDone() {
        guard self.closing, !self.closed, !self.busy, self.writesInFlight == 0 else { return }
        self.closed = true
        // .stop: the read is waiting for more bytes that will not be answered.
        self.channel.close(flags: .stop)
    }

    /// Ends the connection at once.
    private func fail() {
        guard !self.closed else { return }
        self.closed = true
        self.channel.close(flags: .stop)
    }

    private func log(method: String, path: String, status: HTTPStatus, bytes: Int) {
        guard self.server.configuration.accessLog else { return }
        print("\(method) \(path) \(status.code) \(bytes)")
        fflush(nil)
    }
}

/// The connection, for its channel's cleanup handler (made before the connection is).
final class ConnectionBox: Sendable {
    let connection = Mutex<HTTPConnection?>(nil)
}
