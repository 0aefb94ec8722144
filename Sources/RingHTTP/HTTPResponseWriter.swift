//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// Serializes responses for vectored writes: the head in one new region, followed by the
/// body's regions untouched.
///
///     let writer = HTTPResponseWriter(serverName: "RingIO")
///     let bytes = writer.serialize(response, for: request.head)
///     channel.write(offset: 0, data: bytes, queue: ring) { _, _, _ in }   // one writev
///
/// The head is written in this order:
///
///     HTTP/1.1 200 OK\r\n                 status line (always HTTP/1.1, RFC 9110 §6.2)
///     Server: RingIO\r\n                  unless serverName is nil
///     Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n   per `date`
///     <response.headers, in order>
///     Content-Length: 13\r\n              not for 1xx and 204, nor 304 without an explicit length
///     Connection: close\r\n               or `keep-alive` to an HTTP/1.0 client kept open
///     \r\n
///
/// A field you put in ``HTTPResponse/headers`` replaces the writer's own of the same name.
public struct HTTPResponseWriter: Sendable {
    /// Where the `Date` field comes from.
    public enum DateSource: Hashable, Sendable {
        /// The current time, formatted at most once per second on each thread (``HTTPDate``).
        case current
        /// A fixed time, in seconds since 1970 (for tests and reproducible output).
        case fixed(secondsSince1970: Int)
        /// No `Date` field (RFC 9110 §6.6.1 allows it for servers without a clock).
        case omitted
    }

    /// The `Server` field's value; `nil` to send none.
    public var serverName: String?

    /// Where the `Date` field comes from.
    public var date: DateSource

    /// Creates a writer.
    ///
    /// - Parameters:
    ///   - serverName: The `Server` field's value, `RingIO` by default; `nil` for none.
    ///   - date: The `Date` field's source, the current time by default.
    /// - Complexity: O(1).
    public init(serverName: String? = "RingIO", date: DateSource = .current) {
        self.serverName = serverName
        self.date = date
    }

    /// `HTTP/1.1 100 Continue` and the empty line: the interim response that tells a client
    /// which sent `Expect: 100-continue` to send its body.
    public static let continueResponse = ByteRope(copying: "HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The response's head followed by its body, as one rope: one region for the head, then
    /// the body's regions as they are — or, for a body of at most
    /// ``inlineBodyLimit`` bytes, one region holding both (the body is copied: cheaper than a
    /// second region, and one I/O vector instead of two).
    ///
    /// For a `HEAD` request, and for statuses that have no body (1xx, 204, 304), the body is
    /// left out; the head still announces ``HTTPResponse/contentLength`` (or the body's
    /// length) for `HEAD`.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request it answers: its method decides whether a body is sent, its
    ///     version and ``HTTPRequestHead/keepAlive`` the `Connection` field. `nil` (for
    ///     example for an error before a request was parsed) means an HTTP/1.1 `GET`.
    /// - Returns: The bytes to write.
    /// - Precondition: ``HTTPResponse/contentLength``, when set, equals `body.count` unless
    ///   the body is left out.
    /// - Complexity: O(*h* + log *r*) for *h* bytes of head and *r* body regions; one
    ///   allocation for the head (the head is formatted on the stack when it is under about
    ///   1 KiB), plus O(log *r*) tree nodes when the body has two or more regions.
    public func serialize(_ response: HTTPResponse, for request: HTTPRequestHead? = nil) -> ByteRope {
        let facts = _RequestFacts(request)
        guard facts.sendsBody(response.status), !response.body.isEmpty else {
            return self.serializeHead(response, facts, inlining: ByteRope())
        }
        if response.body.count <= Self.inlineBodyLimit {
            return self.serializeHead(response, facts, inlining: response.body)
        }
        var bytes = self.serializeHead(response, facts, inlining: ByteRope())
        bytes.append(response.body)
        return bytes
    }

    /// The largest body ``serialize(_:for:)`` copies into the head's region: 256 bytes.
    public static let inlineBodyLimit = 256

    /// The response's head alone, in one region: to write the body separately (for example a
    /// file in chunks, or a chunked body as it is produced).
    ///
    /// - Parameters:
    ///   - response: The response; only its length is taken from its body.
    ///   - request: The request it answers, as in ``serialize(_:for:)``.
    /// - Returns: The head, ending with the empty line.
    /// - Precondition: As ``serialize(_:for:)``.
    /// - Complexity: O(*h*) for *h* bytes of head; one allocation.
    public func serializeHead(_ response: HTTPResponse, for request: HTTPRequestHead? = nil) -> ByteRope {
        self.serializeHead(response, _RequestFacts(request), inlining: ByteRope())
    }

    /// The head, followed in the same region by `body` (empty: none).
    @inline(__always)
    private func serializeHead(_ response: HTTPResponse, _ facts: _RequestFacts, inlining body: ByteRope) -> ByteRope {
        if facts.sendsBody(response.status), let length = response.contentLength {
            precondition(
                length == response.body.count,
                "HTTPResponse.contentLength \(length) differs from the body's \(response.body.count) bytes"
            )
        }

        // Which fields the caller set, and how much room the head needs at most.
        let own = response.headers.ownFields
        var capacity = 64 + 64 + 24  // status line, Content-Length and Connection, final CRLF
        capacity += response.headers.lineByteCount
        let reasonPhrase = response.status.reasonPhrase
        capacity += reasonPhrase.utf8.count
        if let serverName = self.serverName { capacity += serverName.utf8.count + 10 }
        capacity += HTTPDate.length + 8
        capacity += body.count
        return self.writeHead(response, facts, reasonPhrase: reasonPhrase, own: own, inlining: body, capacity: capacity)
    }

    /// The head written into a buffer of `capacity` bytes, for tests of the bound: a
    /// `capacity` below the head's length traps instead of writing past the buffer.
    ///
    /// - Precondition: `capacity` is positive and at least the head's length.
    package func serializeHead(_ response: HTTPResponse, for request: HTTPRequestHead?, capacity: Int) -> ByteRope {
        precondition(capacity > 0, "capacity must be positive")
        return self.writeHead(
            response,
            _RequestFacts(request),
            reasonPhrase: response.status.reasonPhrase,
            own: response.headers.ownFields,
            inlining: ByteRope(),
            capacity: capacity
        )
    }

    /// Formats the head, and `body` after it, into a temporary buffer of `capacity` bytes (on
    /// the stack when it is small) and copies it into a rope. `_HeadOutput` checks every write
    /// against the end of the buffer, so a `capacity` that underestimates the head traps,
    /// never overruns.
    @inline(__always)
    private func writeHead(
        _ response: HTTPResponse,
        _ facts: _RequestFacts,
        reasonPhrase: String,
        own: _OwnFields,
        inlining body: ByteRope,
        capacity: Int
    ) -> ByteRope {
        // What the head needs, taken out before the closure, except the header fields: read
        // through the borrowed response, they are not copied (a copy of `HTTPHeaders` goes
        // through value-witness calls).
        let code = response.status.code
        let closes = response.closeConnection || !facts.keepAlive
        // No Content-Length in 1xx and 204 (RFC 9110 §8.6); in 304 only when given.
        let contentLength: Int? =
            own.contentLength || own.transferEncoding || code < 200 || code == 204
                || (code == 304 && response.contentLength == nil)
            ? nil : response.contentLength ?? response.body.count
        return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { buffer in
            var out = _HeadOutput(buffer)
            out.write("HTTP/1.1 ")
            out.writeStatusCode(code)
            out.write(" ")
            out.writeValue(reasonPhrase)
            out.write("\r\n")
            if let serverName = self.serverName, !own.server {
                out.write("Server: ")
                out.writeValue(serverName)
                out.write("\r\n")
            }
            if !own.date {
                switch self.date {
                case .current:
                    out.write("Date: ")
                    out.writeFixed(HTTPDate.length) { HTTPDate.writeNow(to: $0) }
                    out.write("\r\n")
                case .fixed(let seconds):
                    out.write("Date: ")
                    out.writeFixed(HTTPDate.length) { HTTPDate.write(secondsSince1970: seconds, to: $0) }
                    out.write("\r\n")
                case .omitted:
                    break
                }
            }
            out.writeLines(of: response.headers)
            if let contentLength {
                out.write("Content-Length: ")
                out.writeDecimal(contentLength)
                out.write("\r\n")
            }
            if !own.connection {
                if closes {
                    out.write("Connection: close\r\n")
                } else if facts.isHTTP10 {
                    out.write("Connection: keep-alive\r\n")
                }
            }
            out.write("\r\n")
            if !body.isEmpty {
                out.writeFixed(body.count) { start in
                    let destination = UnsafeMutableRawBufferPointer(start: start, count: body.count)
                    _ = body.copyBytes(to: destination, from: 0..<body.count)
                }
            }
            return ByteRope(copying: UnsafeRawBufferPointer(rebasing: buffer[..<out.count]))
        }
    }

    /// Whether the connection must close after sending `response` to `request`: when the
    /// response asks for it or the request did not ask to keep the connection open.
    ///
    /// - Complexity: O(1).
    public static func closesConnection(_ response: HTTPResponse, for request: HTTPRequestHead?) -> Bool {
        response.closeConnection || !(request?.keepAlive ?? true)
    }

    // MARK: Chunked responses

    /// One chunk of a chunked body: the size in hexadecimal and CRLF (a new small region),
    /// `data`'s regions untouched, then CRLF.
    ///
    /// For a chunked response, put `Transfer-Encoding: chunked` in the headers (the
    /// writer then sends no `Content-Length`), write the head with
    /// ``serializeHead(_:for:)``, then each `chunk(_:)` and finally ``lastChunk``. Only
    /// HTTP/1.1 clients understand it.
    ///
    /// - Parameter data: The chunk's bytes; an empty rope gives an empty result (a chunk of
    ///   size 0 would end the body).
    /// - Complexity: O(log *r*) for *r* regions of `data`; two small allocations.
    public static func chunk(_ data: ByteRope) -> ByteRope {
        guard !data.isEmpty else { return ByteRope() }
        var size = String(data.count, radix: 16, uppercase: true)
        size += "\r\n"
        var chunk = ByteRope(copying: size.utf8)
        chunk.append(data)
        chunk.append(Self.crlf)
        return chunk
    }

    /// The last chunk of a chunked body with no trailer fields: `0\r\n\r\n`.
    public static let lastChunk = ByteRope(copying: "0\r\n\r\n".utf8)

    private static let crlf = ByteRope(copying: "\r\n".utf8)
}

/// What the writer needs of the request it answers, read once: `nil` (no request) stands for
/// an HTTP/1.1 `GET` that keeps the connection open.
private struct _RequestFacts {
    var isHead = false
    var isHTTP10 = false
    var keepAlive = true

    @inline(__always)
    init(_ request: HTTPRequestHead?) {
        guard let request else { return }
        if case .head = request.method { self.isHead = true }
        self.isHTTP10 = request.version == .http1_0
        self.keepAlive = request.keepAlive
    }

    /// Whether the body follows the head: not for `HEAD`, nor for 1xx, 204 and 304.
    @inline(__always)
    func sendsBody(_ status: HTTPStatus) -> Bool {
        !self.isHead && !status.forbidsBody
    }
}

/// Writes a response head into a buffer, never past its end.
///
/// Every write first claims its bytes: one comparison with the room left, a trap when they do
/// not fit — in release builds too. The writer sizes the buffer from an upper bound of the
/// head's length, so the check never fires unless that bound is wrong; if it is, the process
/// stops rather than write past a stack buffer.
private struct _HeadOutput {
    private let start: UnsafeMutableRawPointer
    private let end: UnsafeMutableRawPointer
    private var cursor: UnsafeMutableRawPointer

    /// - Precondition: `buffer` has a base address (a positive count).
    init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.start = buffer.baseAddress!
        self.end = self.start + buffer.count
        self.cursor = self.start
    }

    /// The bytes written so far.
    var count: Int { self.cursor - self.start }

    /// Checks that `count` more bytes fit.
    @inline(__always)
    private func claim(_ count: Int) {
        precondition(count <= self.end - self.cursor, "HTTPResponseWriter: the response head overran its buffer")
    }

    mutating func write(_ text: StaticString) {
        self.claim(text.utf8CodeUnitCount)
        self.cursor.copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
        self.cursor += text.utf8CodeUnitCount
    }

    /// Exactly `count` bytes, written by `body` at the cursor.
    mutating func writeFixed(_ count: Int, _ body: (UnsafeMutableRawPointer) -> Void) {
        self.claim(count)
        body(self.cursor)
        self.cursor += count
    }

    /// A status code: three digits.
    @inline(__always)
    mutating func writeStatusCode(_ code: Int) {
        precondition(code >= 100 && code <= 999, "a status code has three digits")
        self.claim(3)
        self.cursor.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 + code / 100), toByteOffset: 0, as: UInt8.self)
        self.cursor.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 + code / 10 % 10), toByteOffset: 1, as: UInt8.self)
        self.cursor.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 + code % 10), toByteOffset: 2, as: UInt8.self)
        self.cursor += 3
    }

    @inline(__always)
    mutating func writeDecimal(_ value: Int) {
        precondition(value >= 0, "negative length")
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        self.claim(digits)
        var remaining = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            self.cursor.storeBytes(
                of: UInt8(truncatingIfNeeded: 0x30 + remaining % 10),
                toByteOffset: index,
                as: UInt8.self
            )
            remaining /= 10
        }
        self.cursor += digits
    }

    /// Header field lines, as they are (``HTTPHeaders`` checked them when they were made).
    mutating func writeLines(of headers: HTTPHeaders) {
        let count = headers.lineByteCount
        self.claim(count)
        headers.copyLines(to: UnsafeMutableRawBufferPointer(start: self.cursor, count: count))
        self.cursor += count
    }

    /// A field value or reason phrase: CR, LF and NUL become spaces.
    mutating func writeValue(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            let bytes = self.cursor.assumingMemoryBound(to: UInt8.self)
            self.copy(UnsafeRawBufferPointer(utf8))
            // CR (0x0D), LF (0x0A) and NUL are all below 0x0E: one comparison for most bytes.
            for index in 0..<utf8.count where bytes[index] < 0x0E {
                let byte = bytes[index]
                if byte == _Syntax.cr || byte == _Syntax.lf || byte == 0 { bytes[index] = _Syntax.space }
            }
        }
    }

    /// `bytes`, as they are.
    @inline(__always)
    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        self.claim(bytes.count)
        if let base = bytes.baseAddress { self.cursor.copyMemory(from: base, byteCount: bytes.count) }
        self.cursor += bytes.count
    }
}
