//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An incremental HTTP/1.1 request parser over `ByteRope`: append what the connection
/// receives, take out complete requests in order.
///
///     var parser = HTTPRequestParser()
///     channel.read(offset: 0, length: .max, queue: ring) { done, data, error in
///         if let data { parser.append(data) }
///         do {
///             while let request = try parser.next() {
///                 respond(to: request)              // in order: pipelining is free
///             }
///             if let head = try parser.nextHead(), head.expectsContinue {
///                 send(HTTPResponseWriter.continueResponse)
///             }
///         } catch {
///             send(writer.serialize(HTTPResponse(status: error.status, closeConnection: true)))
///             channel.close()
///         }
///     }
///
/// ## Zero copy
///
/// Bytes are never glued together or copied. The end of the head is found with
/// `ByteRope.firstRange(of:)`, across region boundaries; the head is then validated in one
/// pass over its regions. The target, the header fields and the body of a request are
/// sub-ropes of the appended ropes — a chunked body is the concatenation of its chunks'
/// sub-ropes. Parsing a request that arrived in one or two regions allocates nothing (more
/// regions: a few small tree nodes for the sub-ropes).
///
/// ## Bounded buffering
///
/// Every limit in ``Limits`` is checked as soon as the bytes received prove it exceeded:
/// a request line with no CRLF in its first `maxRequestLineLength + 2` bytes fails with
/// 414 there and then, a header section with no end in `maxHeaderSectionLength` bytes with
/// 431, a `Content-Length` over `maxBodyLength` with 413 before any of the body arrives. So
/// after ``next()`` returns `nil`, the parser holds at most about one request line plus one
/// header section, or the part of a body received so far. Call ``next()`` after every
/// ``append(_:)`` so that these checks run.
///
/// ## Errors
///
/// ``next()`` and ``nextHead()`` throw ``HTTPParseError``, which carries the status to
/// answer with; ``failureReason`` names the rule. From then on the parser is failed: it drops
/// what it buffered, ignores appends and throws the same error again. The server answers and
/// closes the connection.
///
/// ## Framing rules (RFC 9112 §2, §5–7)
///
/// - No `Content-Length` and no `Transfer-Encoding`: no body.
/// - `Content-Length`: digits only; repeated fields or `42, 42` lists must agree (400
///   otherwise); over the limit is 413.
/// - `Transfer-Encoding` must end in `chunked` (400 otherwise); any other coding before it
///   is 501; `chunked` twice, `Transfer-Encoding` together with `Content-Length`, or in an
///   HTTP/1.0 request is 400.
/// - Line ends are CRLF; a bare LF or CR is 400. Obs-fold (a field line starting with
///   whitespace) is 400, as is whitespace between a field name and its colon.
/// - Empty lines before a request line are skipped (RFC 9112 §2.2).
/// - Chunk extensions must follow `*( BWS ";" BWS name [ BWS "=" BWS ( token /
///   quoted-string ) ] )` (RFC 9112 §7.1.1); they are then ignored. Anything else is
///   ``HTTPParseError/invalidChunkExtension``.
///
/// ## Request line, target and Host (RFC 9112 §3; RFC 9110 §6.2, §7.2)
///
/// - `HTTP/1.0` and `HTTP/1.1`; `HTTP/1.2` to `HTTP/1.9` are handled as HTTP/1.1 and report
///   ``HTTPVersion/http1_1`` (a minor version above the highest one spoken is processed as
///   that one); any other major version is 505.
/// - The target has no fragment (``HTTPParseError/fragmentInTarget``) and is in the form its
///   method may use: origin-form (`/path?query`), absolute-form (`scheme:…`), `*` for OPTIONS
///   only, `host:port` for CONNECT only (``HTTPParseError/invalidTarget``). An `http` or
///   `https` target has a host and no userinfo (``HTTPParseError/targetWithUserinfo``).
/// - HTTP/1.1 requests need exactly one `Host` field, HTTP/1.0 at most one
///   (``HTTPParseError/missingHost``, ``HTTPParseError/duplicateHost``).
/// - The `Host` value is `uri-host [ ":" port ]` as RFC 3986 defines it: an IP literal
///   (`[IPv6]` with the full IPv6 grammar, or `[vX.future]`), an IPv4 address or a reg-name
///   (unreserved bytes, sub-delims but the comma, `%XX` escapes), then a port of digits in
///   0...65535 (an empty port, `host:`, is allowed, as `port = *DIGIT` allows it, and is the
///   same as none). Userinfo, a path, a list, inner whitespace, a bad port, anything else
///   and an empty host each have their ``HTTPParseError`` case. An empty value is allowed only
///   beside an absolute-form target without an authority (`urn:x`), where it is required.
/// - Beside an absolute-form or authority-form target, the `Host` must agree with the
///   target's authority: the same host (ASCII case-insensitively) and port (an empty or
///   default port being none) — ``HTTPParseError/hostMismatch``.
/// - Checking the `Host` value costs its bytes a mask test each in the same pass as the other
///   fields, and allocates nothing.
///
/// Protocol upgrades and `CONNECT` tunnels are out of scope: after one, the bytes are not
/// HTTP/1.1 any more.
public struct HTTPRequestParser: Sendable {
    /// The limits this parser enforces.
    public let limits: Limits

    // MARK: State (a value type: whoever owns the parser owns all of it)

    /// Received bytes not yet handed out: the current request's from its first byte (from
    /// the body on once the head is parsed; in a chunked body, from the next unparsed chunk
    /// on), then any pipelined requests.
    private var buffer = ByteRope()
    /// What the parser expects next.
    private var step = _Step.requestLine
    /// Where the next search (for a line end or the end of a section) starts in `buffer`:
    /// the bytes before it have been searched.
    private var scanned = 0
    /// The request line, from its CRLF until the header section is complete.
    private var line: _RequestLine?
    /// The parsed head, from the end of the header section until the request is returned.
    private var head: HTTPRequestHead?
    /// Whether ``nextHead()`` has returned `head`.
    private var headDelivered = false
    /// A chunked body's data so far, as sub-ropes.
    private var chunks = ByteRope()
    private var _failure: _ParseFailure?

    /// Creates a parser.
    ///
    /// - Parameter limits: The sizes requests may not exceed.
    /// - Precondition: The limits are in range (see ``Limits``).
    /// - Complexity: O(1); allocates nothing.
    public init(limits: Limits = Limits()) {
        limits.validate()
        self.limits = limits
    }

    /// Appends received bytes, without copying them. Parsing happens in ``next()`` and
    /// ``nextHead()``.
    ///
    /// After a failure the bytes are dropped: a failed parser holds nothing.
    ///
    /// - Parameter bytes: What the connection received next.
    /// - Complexity: O(log *r*) for *r* buffered regions.
    public mutating func append(_ bytes: ByteRope) {
        guard self._failure == nil else { return }
        self.buffer.append(bytes)
    }

    /// The next complete request, or `nil` when the bytes for it have not all arrived.
    ///
    /// Requests come out in the order they were sent; call it until it returns `nil` after
    /// each ``append(_:)``.
    ///
    /// - Returns: The request, its body complete.
    /// - Throws: ``HTTPParseError`` as soon as the buffered bytes prove the request bad or
    ///   over a limit; then again on every later call.
    /// - Complexity: O(*n*) in the bytes parsed by this call, plus O(log *r*) per sub-rope
    ///   taken from *r* buffered regions. A head is searched for its end only from where the
    ///   previous call stopped, so a head arriving byte by byte costs O(*n* log *r*) in all.
    ///   Allocates nothing when the request arrived in one or two regions.
    public mutating func next() throws(HTTPParseError) -> HTTPRequest? {
        if let failure = self._failure { throw failure.error }
        do throws(_ParseFailure) {
            guard try self.parseHead(), let body = try self.parseBody() else { return nil }
            self.step = .requestLine
            self.headDelivered = false
            return HTTPRequest(head: self.head.take()!, body: body)
        } catch {
            self.fail(error)
            throw error.error
        }
    }

    /// The head of the request being received, once per request, as soon as its header
    /// section is complete — before its body has arrived.
    ///
    /// This is how a server answers `Expect: 100-continue`: when ``next()`` returns `nil`,
    /// ask for the head; if it ``HTTPRequestHead/expectsContinue``, send
    /// ``HTTPResponseWriter/continueResponse`` (or a final status, such as 417 or 413, and
    /// close). ``next()`` later returns the complete request with the same head. A server
    /// that never calls this method loses nothing.
    ///
    ///     while let request = try parser.next() { respond(to: request) }
    ///     if let head = try parser.nextHead(), head.expectsContinue {
    ///         send(HTTPResponseWriter.continueResponse)
    ///     }
    ///
    /// - Returns: The head of the first request not yet returned by ``next()``, if its
    ///   header section is complete and this method has not returned it already; else `nil`.
    /// - Throws: ``HTTPParseError``, as ``next()`` does, for errors found in the head
    ///   (including a `Content-Length` over ``Limits/maxBodyLength``).
    /// - Complexity: As ``next()``, without the body.
    public mutating func nextHead() throws(HTTPParseError) -> HTTPRequestHead? {
        if let failure = self._failure { throw failure.error }
        do throws(_ParseFailure) {
            guard try self.parseHead() else { return nil }
        } catch {
            self.fail(error)
            throw error.error
        }
        guard !self.headDelivered else { return nil }
        self.headDelivered = true
        return self.head
    }

    /// Where the parser is in the current request: what a server's timeouts depend on.
    public enum Phase: Hashable, Sendable {
        /// Between requests: nothing of a request has been received (empty lines before a
        /// request line do not count). Idle timeouts apply.
        case idle
        /// Part of a request's head has been received, not all of it. Header timeouts (for
        /// slow clients) apply.
        case head
        /// The head is complete (``nextHead()`` can return it) and ``next()`` has not yet
        /// returned the request: its body is still arriving, or ``next()`` was not called.
        case body
    }

    /// Where the parser is in the current request.
    ///
    /// - Complexity: O(1).
    public var phase: Phase {
        switch self.step {
        case .requestLine: return self.buffer.isEmpty ? .idle : .head
        case .fields: return .head
        case .contentLength, .chunkSizeLine, .chunkData, .chunkDataEnd, .trailers: return .body
        }
    }

    /// Whether part of a request has been received and not yet returned by ``next()``:
    /// `phase != .idle`. A server closing an idle connection checks it; a peer that closes
    /// the connection while it is true left an incomplete request.
    ///
    /// - Complexity: O(1).
    public var isMidRequest: Bool {
        self.phase != .idle
    }

    /// The number of received bytes not yet parsed. A chunked body's decoded chunks, which
    /// never exceed ``Limits/maxBodyLength``, are not included.
    ///
    /// - Complexity: O(1).
    public var bufferedByteCount: Int {
        self.buffer.count
    }

    /// The error this parser failed with, or `nil` while it has not failed.
    ///
    /// - Complexity: O(1).
    public var failure: HTTPParseError? {
        self._failure?.error
    }

    /// The rule the request broke, such as `"obs-fold or whitespace at the start of a field
    /// line"`, for logs; `nil` while the parser has not failed.
    ///
    /// - Complexity: O(*n*) in the length of the reason.
    public var failureReason: String? {
        self._failure.map { "\($0.reason)" }
    }

    private mutating func fail(_ failure: _ParseFailure) {
        self._failure = failure
        self.buffer = ByteRope()
        self.chunks = ByteRope()
        self.line = nil
        self.head = nil
        self.step = .requestLine
    }
}

// MARK: - State

extension HTTPRequestParser {
    enum _Step {
        /// Expecting (more of) a request line.
        case requestLine
        /// The request line is parsed (`line`); expecting the rest of the header section.
        case fields
        /// The head is parsed (`head`); expecting this many bytes of body.
        case contentLength(Int)
        /// In a chunked body: expecting a chunk-size line.
        case chunkSizeLine
        /// Inside a chunk's data.
        case chunkData(remaining: Int)
        /// Expecting the CRLF after a chunk's data.
        case chunkDataEnd
        /// After the last chunk: expecting the trailer section.
        case trailers
    }

    struct _RequestLine {
        var method: HTTPMethod
        var targetRange: Range<Int>
        var version: HTTPVersion
        /// The bytes before the line's CRLF.
        var length: Int
    }
}

// MARK: - Head

extension HTTPRequestParser {
    /// Parses as much of the head as has arrived; returns whether the head is parsed
    /// (`head` is set and the step is a body step).
    private mutating func parseHead() throws(_ParseFailure) -> Bool {
        switch self.step {
        case .requestLine, .fields:
            // Between requests with nothing buffered (the common case after a request):
            // nothing to parse.
            if case .requestLine = self.step, self.buffer.isEmpty { return false }
            // The head in one region (the common case): read that region's memory directly,
            // with no walk of the rope's regions per access.
            if self.buffer.regionCount == 1 {
                let buffer = self.buffer  // keeps the region alive while it is read
                let outcome = buffer.withUnsafeBytes { bytes in
                    Swift.Result { () throws(_ParseFailure) in try self.parseHead(in: _RegionBytes(bytes)) }
                }
                return try outcome.get()
            }
            return try self.parseHead(in: self.buffer)
        case .contentLength, .chunkSizeLine, .chunkData, .chunkDataEnd, .trailers:
            return true
        }
    }

    /// Parses as much of the head as has arrived, reading `bytes`: the buffer's bytes.
    @inline(__always)
    private mutating func parseHead<Bytes: _BufferBytes>(in bytes: Bytes) throws(_ParseFailure) -> Bool {
        var bytes = bytes
        if case .requestLine = self.step {
            guard try self.parseRequestLine(in: &bytes) else { return false }
        }
        return try self.parseFieldSection(in: bytes)
    }

    /// Parses the request line if its CRLF has arrived; then the step is `.fields`. `bytes`
    /// are the buffer's, and stay so when empty lines are dropped from it.
    private mutating func parseRequestLine<Bytes: _BufferBytes>(in bytes: inout Bytes) throws(_ParseFailure) -> Bool {
        self.skipEmptyLines(in: &bytes)
        let lineLimit = self.limits.maxRequestLineLength &+ 2
        let count = bytes.count
        let window = Swift.min(count, lineLimit)
        guard let lf = bytes.firstIndex(of: _Syntax.lf, within: self.scanned..<window) else {
            if count >= lineLimit {
                throw _ParseFailure(.uriTooLong, "request line longer than maxRequestLineLength")
            }
            self.scanned = window
            return false
        }
        guard lf > 0, bytes[lf &- 1] == _Syntax.cr else {
            throw _ParseFailure(.badRequest, "request line ends with a bare LF")
        }
        let length = lf &- 1
        let parsed = try bytes.scan(
            0..<length,
            { (bytes) throws(_ParseFailure) in try _RequestLineScan.scan(&bytes, length: length) },
            { (bytes) throws(_ParseFailure) in try _RequestLineScan.scan(&bytes, length: length) }
        )
        let method =
            HTTPMethod._registered(packed: parsed.packedMethod, length: parsed.methodLength)
            ?? .other(String(decoding: self.buffer.subrange(0..<parsed.methodLength), as: UTF8.self))
        self.line = _RequestLine(method: method, targetRange: parsed.target, version: parsed.version, length: length)
        self.step = .fields
        // Search the header section's end from the start: the line holds no CRLF CRLF, and a
        // search of the whole buffer needs no sub-rope.
        self.scanned = 0
        return true
    }

    /// Parses the header section if its end has arrived; then `head` is set and the step is
    /// the body's first.
    private mutating func parseFieldSection<Bytes: _BufferBytes>(in bytes: Bytes) throws(_ParseFailure) -> Bool {
        let lineLength = self.line!.length
        let fieldsStart = lineLength &+ 2
        let sectionLimit = fieldsStart &+ self.limits.maxHeaderSectionLength
        let count = bytes.count
        let window = Swift.min(count, sectionLimit)
        guard let end = bytes.firstRange(of: _Syntax.headEnd, within: self.scanned..<window) else {
            // A line ending in a bare LF would never end the section: refuse it now rather
            // than wait for the limit.
            try Self.refuseBareLineFeed(
                in: bytes,
                Swift.max(self.scanned, lineLength)..<window,
                "header section has a bare LF"
            )
            if count >= sectionLimit {
                throw _ParseFailure(.headersTooLarge, "header section longer than maxHeaderSectionLength")
            }
            self.scanned = Swift.max(self.scanned, window &- 3)
            return false
        }
        let headEnd = end.upperBound
        try self.makeHead(fields: fieldsStart..<headEnd &- 2, in: bytes)
        self.buffer = headEnd == count ? ByteRope() : self.buffer.subrange(headEnd...)
        self.scanned = 0
        return true
    }

    /// Throws 400 if an LF within `range` of `bytes` (the buffer's) is not preceded by CR.
    ///
    /// - Complexity: O(log *r*) per LF found, plus O(`range.count`).
    private static func refuseBareLineFeed<Bytes: _BufferBytes>(
        in bytes: Bytes,
        _ range: Range<Int>,
        _ reason: StaticString
    ) throws(_ParseFailure) {
        var start = range.lowerBound
        while let lf = bytes.firstIndex(of: _Syntax.lf, within: start..<range.upperBound) {
            guard lf > 0, bytes[lf &- 1] == _Syntax.cr else {
                throw _ParseFailure(.badRequest, reason)
            }
            start = lf &+ 1
        }
    }

    /// Drops the empty lines (CRLFs) before a request line; RFC 9112 §2.2 asks servers to
    /// ignore at least one.
    /// `bytes` are the buffer's, and stay so.
    private mutating func skipEmptyLines<Bytes: _BufferBytes>(in bytes: inout Bytes) {
        let count = bytes.count
        guard count > 0, bytes[0] == _Syntax.cr else { return }
        var skipped = 0
        while skipped &+ 1 < count, bytes[skipped] == _Syntax.cr, bytes[skipped &+ 1] == _Syntax.lf {
            skipped &+= 2
        }
        if skipped > 0 {
            self.buffer = self.buffer.subrange(skipped...)
            bytes = bytes.dropping(skipped)
            self.scanned = 0
        }
    }

    /// Validates the field lines at `fields` (each ending with CRLF), applies the framing
    /// rules, and sets `head` and the body's first step.
    private mutating func makeHead<Bytes: _BufferBytes>(fields: Range<Int>, in bytes: Bytes) throws(_ParseFailure) {
        let line = self.line.take()!
        let summary = try bytes.scan(
            fields,
            { (bytes) throws(_ParseFailure) in try _FieldSummary.scan(&bytes, recognizing: true) },
            { (bytes) throws(_ParseFailure) in try _FieldSummary.scan(&bytes, recognizing: true) }
        )

        let headBytes = self.buffer.subrange(0..<fields.upperBound)
        // The target's form; origin-form, the common case, is known by its first byte.
        var form = _TargetForm.origin
        if bytes[line.targetRange.lowerBound] != _Syntax.slash || line.method.isConnect {
            form = try _TargetForm(headBytes.subrange(line.targetRange), method: line.method)
        }
        // The common case: one valid Host, beside an origin-form target.
        if summary.hostCount != 1 || summary.host != .valid || !form.isOrigin {
            try Self.checkHost(
                summary,
                version: line.version,
                form: form,
                head: headBytes,
                fieldsStart: fields.lowerBound
            )
        }
        var contentLength: Int?
        if summary.sawTransferEncoding {
            guard line.version != .http1_0 else {
                throw _ParseFailure(.badRequest, "Transfer-Encoding in an HTTP/1.0 request")
            }
            guard summary.contentLength == nil else {
                throw _ParseFailure(.badRequest, "both Content-Length and Transfer-Encoding")
            }
            guard summary.lastCodingIsChunked else {
                throw _ParseFailure(.badRequest, "chunked is not the final transfer coding")
            }
            guard summary.chunkedCount == 1 else {
                throw _ParseFailure(.badRequest, "chunked applied more than once")
            }
            guard summary.codingCount == 1 else {
                throw _ParseFailure(.notImplemented, "transfer coding other than chunked")
            }
            self.step = .chunkSizeLine
        } else if let length = summary.contentLength {
            guard length <= self.limits.maxBodyLength else {
                throw _ParseFailure(.bodyTooLarge, "Content-Length over maxBodyLength")
            }
            contentLength = length
            self.step = .contentLength(length)
        } else {
            self.step = .contentLength(0)
        }

        let keepAlive: Bool
        if line.version == .http1_1 {
            keepAlive = !summary.connectionClose
        } else {
            keepAlive = summary.connectionKeepAlive && !summary.connectionClose
        }
        self.head = HTTPRequestHead(
            method: line.method,
            version: line.version,
            bytes: headBytes,
            target: line.targetRange,
            fieldsStart: fields.lowerBound,
            fieldCount: summary.fieldCount,
            keepAlive: keepAlive,
            expectsContinue: line.version == .http1_1 && summary.expectsContinue,
            contentLength: contentLength,
            isChunked: summary.sawTransferEncoding
        )
    }
}

// MARK: - Host

extension HTTPRequestParser {
    /// Applies the `Host` rules (RFC 9112 §3.2; RFC 9110 §7.2): exactly one `Host` in an
    /// HTTP/1.1 request, at most one in an HTTP/1.0 request, its value `uri-host [ ":" port ]`
    /// with a host, and the same authority as the target's when the target has one.
    ///
    /// - Parameters:
    ///   - summary: The field section's summary.
    ///   - form: The target's form.
    ///   - head: The request line and the field lines.
    ///   - fieldsStart: Where the field lines start in `head`.
    private static func checkHost(
        _ summary: _FieldSummary,
        version: HTTPVersion,
        form: _TargetForm,
        head: ByteRope,
        fieldsStart: Int
    ) throws(_ParseFailure) {
        switch summary.hostCount {
        case 0:
            guard version != .http1_1 else { throw _ParseFailure(.missingHost, "no Host field") }
            return
        case 1:
            break
        default:
            throw _ParseFailure(.duplicateHost, "more than one Host field line")
        }
        switch summary.host {
        case .valid:
            break
        case .empty:
            guard case .absolute = form else { throw _ParseFailure(.emptyHost, "empty Host") }
        case .noHost:
            throw _ParseFailure(.emptyHost, "Host with a port and no host")
        case .invalidHost:
            throw _ParseFailure(.invalidHost, "Host is not an IP literal, an IPv4 address or a reg-name")
        case .invalidPort:
            throw _ParseFailure(.invalidHostPort, "Host port not digits or over 65535")
        case .whitespace:
            throw _ParseFailure(.hostWithWhitespace, "whitespace inside the Host value")
        case .path:
            throw _ParseFailure(.hostWithPath, "path, query or fragment in the Host value")
        case .list:
            throw _ParseFailure(.hostList, "list of values in the Host field")
        case .userinfo:
            throw _ParseFailure(.hostWithUserinfo, "userinfo in the Host value")
        }
        let authority: ByteRope
        var defaultPort: Int?
        switch form {
        case .origin, .asterisk:
            return
        case .authority(let target):
            authority = target
        case .absolute(let targetAuthority, let port):
            guard let targetAuthority else {
                // RFC 9110 §7.2: a target without an authority goes with an empty Host.
                guard summary.host == .empty else {
                    throw _ParseFailure(.hostMismatch, "Host not empty beside a target without an authority")
                }
                return
            }
            authority = targetAuthority
            defaultPort = port
        }
        let host =
            HTTPHeaders(head: head, fieldsStart: fieldsStart, count: summary.fieldCount)
            .firstValueBytes(name: "host") ?? ByteRope()
        guard _AuthorityScanner.agree(host, authority, defaultPort: defaultPort) else {
            throw _ParseFailure(.hostMismatch, "Host differs from the authority of the request target")
        }
    }
}

// MARK: - Body

extension HTTPRequestParser {
    /// Returns the body if it is complete (the head is parsed).
    private mutating func parseBody() throws(_ParseFailure) -> ByteRope? {
        if case .contentLength(let length) = self.step {
            guard length > 0 else { return ByteRope() }
            let count = self.buffer.count
            guard count >= length else { return nil }
            if count == length {
                var body = ByteRope()
                swap(&body, &self.buffer)
                return body
            }
            let body = self.buffer.subrange(0..<length)
            self.buffer = self.buffer.subrange(length...)
            return body
        }
        guard try self.decodeChunks() else { return nil }
        var body = ByteRope()
        swap(&body, &self.chunks)
        return body
    }

    /// Consumes as much of a chunked body as has arrived; returns whether it is complete.
    private mutating func decodeChunks() throws(_ParseFailure) -> Bool {
        while true {
            let count = self.buffer.count
            switch self.step {
            case .chunkSizeLine:
                let lineLimit = self.limits.maxChunkLineLength &+ 2
                let window = Swift.min(count, lineLimit)
                guard let lf = self.buffer.firstIndex(of: _Syntax.lf, within: self.scanned..<window) else {
                    if count >= lineLimit {
                        throw _ParseFailure(.badRequest, "chunk-size line longer than maxChunkLineLength")
                    }
                    self.scanned = window
                    return false
                }
                guard lf > 0, self.buffer[lf &- 1] == _Syntax.cr else {
                    throw _ParseFailure(.badRequest, "chunk-size line ends with a bare LF")
                }
                let length = lf &- 1
                let size = try self.buffer.scan(
                    0..<length,
                    { (bytes) throws(_ParseFailure) in try Self.parseChunkSize(&bytes, length: length) },
                    { (bytes) throws(_ParseFailure) in try Self.parseChunkSize(&bytes, length: length) }
                )
                guard size <= self.limits.maxBodyLength &- self.chunks.count else {
                    throw _ParseFailure(.bodyTooLarge, "chunked body over maxBodyLength")
                }
                self.buffer = self.buffer.subrange((lf &+ 1)...)
                self.scanned = 0
                self.step = size == 0 ? .trailers : .chunkData(remaining: size)

            case .chunkData(let remaining):
                let taken = Swift.min(remaining, count)
                guard taken > 0 else { return false }
                self.chunks.append(self.buffer.subrange(0..<taken))
                self.buffer = self.buffer.subrange(taken...)
                guard taken == remaining else {
                    self.step = .chunkData(remaining: remaining &- taken)
                    return false
                }
                self.step = .chunkDataEnd

            case .chunkDataEnd:
                guard count > 0 else { return false }
                guard self.buffer[0] == _Syntax.cr else {
                    throw _ParseFailure(.badRequest, "chunk data not followed by CRLF")
                }
                guard count > 1 else { return false }
                guard self.buffer[1] == _Syntax.lf else {
                    throw _ParseFailure(.badRequest, "chunk data not followed by CRLF")
                }
                self.buffer = self.buffer.subrange(2...)
                self.step = .chunkSizeLine

            case .trailers:
                guard count > 0 else { return false }
                if self.buffer[0] == _Syntax.cr {
                    // No trailer fields: just the final CRLF.
                    guard count > 1 else { return false }
                    guard self.buffer[1] == _Syntax.lf else {
                        throw _ParseFailure(.badRequest, "chunked body not ended by CRLF")
                    }
                    self.buffer = self.buffer.subrange(2...)
                    return true
                }
                let sectionLimit = self.limits.maxHeaderSectionLength
                let window = Swift.min(count, sectionLimit)
                guard let end = self.buffer.firstRange(of: _Syntax.headEnd, within: self.scanned..<window) else {
                    try Self.refuseBareLineFeed(in: self.buffer, self.scanned..<window, "trailer section has a bare LF")
                    if count >= sectionLimit {
                        throw _ParseFailure(.headersTooLarge, "trailer section longer than maxHeaderSectionLength")
                    }
                    self.scanned = Swift.max(self.scanned, window &- 3)
                    return false
                }
                // Trailer fields are validated like header fields, then ignored.
                _ = try self.buffer.scan(
                    0..<end.upperBound &- 2,
                    { (bytes) throws(_ParseFailure) in try _FieldSummary.scan(&bytes, recognizing: false) },
                    { (bytes) throws(_ParseFailure) in try _FieldSummary.scan(&bytes, recognizing: false) }
                )
                self.buffer = self.buffer.subrange(end.upperBound...)
                self.scanned = 0
                return true

            case .requestLine, .fields, .contentLength:
                preconditionFailure("decodeChunks outside a chunked body")
            }
        }
    }

    /// Parses `chunk-size [ chunk-ext ]` from the first `length` bytes of `bytes`: hex
    /// digits, then the extensions, checked against their grammar (RFC 9112 §7.1.1) and
    /// ignored:
    ///
    ///     chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
    ///     chunk-ext-name = token
    ///     chunk-ext-val  = token / quoted-string
    ///
    /// - Returns: The size, saturated at 2⁴⁴ (over any limit).
    /// - Throws: 400: ``HTTPParseError/badRequest`` for a missing size or a byte after it
    ///   that does not start an extension, ``HTTPParseError/invalidChunkExtension`` for a
    ///   malformed extension.
    static func parseChunkSize<Bytes: IteratorProtocol<UInt8>>(
        _ bytes: inout Bytes,
        length: Int
    ) throws(_ParseFailure) -> Int {
        var size = 0
        var digits = 0
        var offset = 0
        // Hex digits.
        var next: UInt8?
        while offset < length, let byte = bytes.next() {
            offset &+= 1
            guard let digit = _Syntax.hexValue(byte) else {
                next = byte
                break
            }
            // size <= 2^44, so size * 16 + 15 cannot overflow.
            size = Swift.min(size &* 16 &+ digit, 1 << 44)
            digits &+= 1
        }
        guard digits > 0 else {
            throw _ParseFailure(.badRequest, "chunk-size line without a size")
        }
        guard var byte = next else { return size }
        // BWS, then the first ";".
        while _Syntax.isWhitespace(byte), offset < length, let following = bytes.next() {
            offset &+= 1
            byte = following
        }
        guard byte == _Syntax.semicolon else {
            throw _ParseFailure(.badRequest, "invalid byte after the chunk size")
        }
        var state = _ChunkExtensionState.beforeName
        while offset < length, let extensionByte = bytes.next() {
            offset &+= 1
            try state.feed(extensionByte)
        }
        try state.finish()
        return size
    }
}
