//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// A request's line and header fields: everything but the body.
///
/// ``HTTPRequestParser/nextHead()`` hands it out as soon as the header section is complete,
/// before the body has arrived, so that a server can answer `Expect: 100-continue`; a
/// complete ``HTTPRequest`` carries it as ``HTTPRequest/head``.
///
/// The target and the header fields stay bytes of the received data (sub-ropes, no copy);
/// ``target``, ``path`` and the header lookups turn them into `String`s on demand.
public struct HTTPRequestHead: Sendable, CustomStringConvertible {
    /// The method, such as ``HTTPMethod/get``.
    public let method: HTTPMethod
    /// The protocol version: ``HTTPVersion/http1_1`` or ``HTTPVersion/http1_0``. A request
    /// sent as HTTP/1.2 to HTTP/1.9 is handled as HTTP/1.1 (RFC 9110 §6.2) and has version
    /// ``HTTPVersion/http1_1``: it is answered as one.
    public let version: HTTPVersion

    // The head is kept compact — one rope and offsets into it, not a rope per part — since
    // it moves with every request.

    /// The head as received, a sub-rope of the appended bytes: the request line, its CRLF,
    /// and the field lines with their CRLFs (not the empty line that ends them).
    private let bytes: ByteRope
    private let targetStart: UInt32
    private let targetEnd: UInt32
    private let fieldsStart: UInt32
    private let fieldCount: UInt32
    private let flags: UInt8
    /// -1 for none.
    private let contentLengthValue: Int

    private static let keepAliveFlag: UInt8 = 1
    private static let expectsContinueFlag: UInt8 = 2
    private static let chunkedFlag: UInt8 = 4

    /// - Precondition: Offsets below 2³² (the parser's limits ensure it).
    init(
        method: HTTPMethod,
        version: HTTPVersion,
        bytes: ByteRope,
        target: Range<Int>,
        fieldsStart: Int,
        fieldCount: Int,
        keepAlive: Bool,
        expectsContinue: Bool,
        contentLength: Int?,
        isChunked: Bool
    ) {
        self.method = method
        self.version = version
        self.bytes = bytes
        self.targetStart = UInt32(target.lowerBound)
        self.targetEnd = UInt32(target.upperBound)
        self.fieldsStart = UInt32(fieldsStart)
        self.fieldCount = UInt32(fieldCount)
        self.flags =
            (keepAlive ? Self.keepAliveFlag : 0) | (expectsContinue ? Self.expectsContinueFlag : 0)
            | (isChunked ? Self.chunkedFlag : 0)
        self.contentLengthValue = contentLength ?? -1
    }

    /// The request target as sent (not percent-decoded), as a sub-rope of the received
    /// bytes: usually origin-form (`/path?query`); also absolute-form
    /// (`http://host/path`), authority-form (`host:port`, for `CONNECT`) or `*` (for
    /// `OPTIONS`). The parser has checked its form against the method, and that it has no
    /// fragment (`#`).
    ///
    /// - Complexity: O(log *r*) for *r* regions; allocates nothing for a head received in
    ///   one or two regions.
    public var targetBytes: ByteRope {
        self.bytes.subrange(Int(self.targetStart)..<Int(self.targetEnd))
    }

    /// The header fields, in the order received.
    ///
    /// - Complexity: O(1).
    public var headers: HTTPHeaders {
        HTTPHeaders(head: self.bytes, fieldsStart: Int(self.fieldsStart), count: Int(self.fieldCount))
    }

    /// Whether the connection stays open after this request's response (RFC 9112 §9.3):
    /// HTTP/1.1 unless a `Connection` field lists `close`; HTTP/1.0 only when a
    /// `Connection` field lists `keep-alive` (and not `close`).
    public var keepAlive: Bool { self.flags & Self.keepAliveFlag != 0 }

    /// Whether the client sent `Expect: 100-continue` on HTTP/1.1 and waits for
    /// `HTTP/1.1 100 Continue` (or a final status) before sending the body. An HTTP/1.0
    /// request's expectation is ignored, as RFC 9110 §10.1.1 requires.
    public var expectsContinue: Bool { self.flags & Self.expectsContinueFlag != 0 }

    /// The body's length from `Content-Length`; `nil` for a chunked body or when the request
    /// has no `Content-Length` (no body).
    public var contentLength: Int? { self.contentLengthValue < 0 ? nil : self.contentLengthValue }

    /// Whether the body uses the chunked transfer coding.
    public var isChunked: Bool { self.flags & Self.chunkedFlag != 0 }

    /// The request target as sent, such as `/search?q=ring%20io`: not percent-decoded.
    ///
    /// - Complexity: O(*n*); allocates only for targets longer than 15 bytes.
    public var target: String {
        String(decoding: self.targetBytes, as: UTF8.self)
    }

    /// The path of the target, still percent-encoded, without the query: `/a/b` for
    /// `/a/b?x=1`. For an absolute-form target (`http://host/a/b?x`) it is the path after
    /// the authority (`/` when there is none); for `*` and authority-form targets it is the
    /// target itself.
    ///
    /// Give it to ``HTTPPath/normalized(_:)`` before mapping it to a file.
    ///
    /// - Complexity: O(*n*) in the target's length.
    public var path: String {
        let target = self.target
        let utf8 = target.utf8
        var start = utf8.startIndex
        if let first = utf8.first, first != UInt8(ascii: "/"), let schemeEnd = Self.absoluteFormPathStart(utf8) {
            start = schemeEnd
            if start == utf8.endIndex || utf8[start] == UInt8(ascii: "?") { return "/" }
        }
        let end = utf8[start...].firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex
        return String(target[start..<end])
    }

    /// The query of the target, after the first `?` and still percent-encoded; `nil` when
    /// there is no `?`.
    ///
    /// - Complexity: O(*n*) in the target's length.
    public var query: String? {
        let target = self.target
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return String(target[target.utf8.index(after: mark)...])
    }

    /// `GET /path HTTP/1.1`, then the number of header fields.
    public var description: String {
        "\(self.method) \(self.target) \(self.version) (\(self.headers.count) header fields)"
    }

    /// For `scheme://authority/path…`: the index where the path starts (the end when there
    /// is none); `nil` when the target is not absolute-form.
    private static func absoluteFormPathStart(_ utf8: String.UTF8View) -> String.UTF8View.Index? {
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
        let scheme = utf8[..<colon]
        guard let first = scheme.first, _Syntax.isAlpha(first), scheme.dropFirst().allSatisfy(_Syntax.isScheme) else {
            return nil
        }
        let afterColon = utf8[utf8.index(after: colon)...]
        guard afterColon.starts(with: "//".utf8) else { return nil }
        let authority = afterColon.dropFirst(2)
        return authority.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) ?? utf8.endIndex
    }
}

/// A complete request: its head and its body.
///
///     var parser = HTTPRequestParser()
///     parser.append(received)
///     while let request = try parser.next() {
///         print(request.head.method, request.head.target, request.body.count)
///     }
///
/// The request line and the header fields are the ``head``'s — ``HTTPRequestHead/method``,
/// ``HTTPRequestHead/path``, ``HTTPRequestHead/headers``, ``HTTPRequestHead/keepAlive`` and
/// the rest — reached through it, as ``HTTPRequestParser/nextHead()`` hands out the same
/// head before the body and ``HTTPResponseWriter/serialize(_:for:)`` takes it.
public struct HTTPRequest: Sendable, CustomStringConvertible {
    /// The request line and the header fields: `request.head.method`,
    /// `request.head.headers["Host"]`.
    public let head: HTTPRequestHead
    /// The body: the `Content-Length` bytes, or the concatenated chunks of a chunked body
    /// (chunk framing, extensions and trailers removed). Always sub-ropes of the received
    /// bytes: no byte is copied. Empty when the request has no body.
    ///
    /// Like every sub-rope, it keeps the whole regions it refers to alive; to keep a small
    /// body longer than the request, consider `body.contiguous()`. A body that arrived in
    /// many tiny pieces (small reads, or a chunked body of tiny chunks) has as many regions,
    /// each costing a slot in the rope's tree: a server that keeps bodies can compact those
    /// with many regions (`body.regionCount`) the same way.
    public let body: ByteRope

    /// Creates a request from its head and body.
    ///
    /// - Complexity: O(1).
    public init(head: HTTPRequestHead, body: ByteRope) {
        self.head = head
        self.body = body
    }

    /// The head's description and the body's length.
    public var description: String {
        "\(self.head), body \(self.body.count) bytes"
    }
}
