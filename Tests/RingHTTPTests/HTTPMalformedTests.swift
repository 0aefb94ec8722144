//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: malformed requests and their statuses, chunked bodies, framing,
// keep-alive and Expect rules.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

/// A request that must fail, the error it fails with, and the reason the parser reports.
struct Malformed: CustomTestStringConvertible, Sendable {
    var text: String
    var error: HTTPParseError
    var reason: String

    init(_ text: String, _ error: HTTPParseError, _ reason: String) {
        self.text = text
        self.error = error
        self.reason = reason
    }

    var testDescription: String { "\(self.error.status.code) \(self.reason): \(self.text.debugDescription)" }
}

let malformedRequests: [Malformed] = [
    // Line ends.
    .init("GET / HTTP/1.1\nHost: x\r\n\r\n", .badRequest, "request line ends with a bare LF"),
    .init("\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "request line ends with a bare LF"),
    .init("GET / HTTP/1.1\r\nHost: x\n\r\n", .badRequest, "header section has a bare LF"),
    .init("GET / HTTP/1.1\r\nHost: x\n\n", .badRequest, "header section has a bare LF"),
    .init("GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", .badRequest, "bare CR in a field line"),
    .init("GET / HTTP/1.1\r\nHost: x\r\r\n\r\n", .badRequest, "bare CR in a field line"),
    .init("GET /\r HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "invalid byte in the request target"),
    // Request line.
    .init("GET / HTTP/2.0\r\nHost: x\r\n\r\n", .versionNotSupported, "HTTP major version other than 1"),
    .init("GET / HTTP/3.1\r\nHost: x\r\n\r\n", .versionNotSupported, "HTTP major version other than 1"),
    .init("GET / HTTP/0.9\r\n\r\n", .versionNotSupported, "HTTP major version other than 1"),
    .init("GET / HTTP/0.1\r\n\r\n", .versionNotSupported, "HTTP major version other than 1"),
    .init("GET / HTTP/3\r\nHost: x\r\n\r\n", .badRequest, "malformed HTTP version"),
    .init("GET / HTTP/1.10\r\nHost: x\r\n\r\n", .badRequest, "malformed HTTP version"),
    .init("GET / http/1.1\r\nHost: x\r\n\r\n", .badRequest, "malformed HTTP version"),
    .init("GET / HTTP/1.x\r\nHost: x\r\n\r\n", .badRequest, "malformed HTTP version"),
    .init("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", .badRequest, "malformed HTTP version"),
    .init("GET /\r\nHost: x\r\n\r\n", .badRequest, "request line without a target and a version"),
    .init("GET\r\nHost: x\r\n\r\n", .badRequest, "request line without a method and a target"),
    .init("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "request line without a target and a version"),
    .init(" GET / HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "request line without a method and a target"),
    .init("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "invalid byte in the method"),
    .init("GET /caf\u{E9} HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "invalid byte in the request target"),
    .init("GET /a\u{7F} HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "invalid byte in the request target"),
    .init("GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", .badRequest, "invalid byte in the request target"),
    // Field lines.
    .init("GET / HTTP/1.1\r\nHost : x\r\n\r\n", .badRequest, "whitespace between a field name and its colon"),
    .init("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", .badRequest, "whitespace between a field name and its colon"),
    .init("GET / HTTP/1.1\r\nHo st: x\r\n\r\n", .badRequest, "whitespace between a field name and its colon"),
    .init(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n b\r\n\r\n",
        .badRequest,
        "obs-fold or whitespace at the start of a field line"
    ),
    .init("GET / HTTP/1.1\r\n Host: x\r\n\r\n", .badRequest, "obs-fold or whitespace at the start of a field line"),
    .init("GET / HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n", .badRequest, "empty or invalid field name"),
    .init("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", .badRequest, "invalid byte in a field name"),
    .init("GET / HTTP/1.1\r\nHost: x\r\nX(y): z\r\n\r\n", .badRequest, "invalid byte in a field name"),
    .init("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{0}b\r\n\r\n", .badRequest, "control character in a field value"),
    .init("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{7F}\r\n\r\n", .badRequest, "control character in a field value"),
    .init("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{1B}\r\n\r\n", .badRequest, "control character in a field value"),
    // Host: the rules of its value are in HTTPHostTests.
    .init("GET / HTTP/1.1\r\n\r\n", .missingHost, "no Host field"),
    .init("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .duplicateHost, "more than one Host field line"),
    .init("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", .duplicateHost, "more than one Host field line"),
    // Content-Length.
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5,\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ,5\r\n\r\n", .badRequest, "malformed Content-Length"),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        .badRequest,
        "conflicting Content-Length values"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\n",
        .badRequest,
        "conflicting Content-Length values"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
        .bodyTooLarge,
        "Content-Length over maxBodyLength"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n",
        .bodyTooLarge,
        "Content-Length over maxBodyLength"
    ),
    // Transfer-Encoding.
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        .badRequest,
        "both Content-Length and Transfer-Encoding"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 99999999999\r\n\r\n",
        .badRequest,
        "both Content-Length and Transfer-Encoding"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        .badRequest,
        "chunked is not the final transfer coding"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        .badRequest,
        "chunked is not the final transfer coding"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n",
        .badRequest,
        "chunked is not the final transfer coding"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        .badRequest,
        "chunked applied more than once"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        .notImplemented,
        "transfer coding other than chunked"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n",
        .notImplemented,
        "transfer coding other than chunked"
    ),
    .init(
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        .badRequest,
        "Transfer-Encoding in an HTTP/1.0 request"
    ),
    // Chunked bodies.
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nx\r\n",
        .badRequest,
        "chunk-size line without a size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        .badRequest,
        "chunk-size line without a size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
        .badRequest,
        "chunk-size line without a size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n;a\r\n",
        .badRequest,
        "chunk-size line without a size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n",
        .badRequest,
        "invalid byte after the chunk size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\n",
        .badRequest,
        "invalid byte after the chunk size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 5\r\n",
        .badRequest,
        "invalid byte after the chunk size"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a\u{1}\r\n",
        .invalidChunkExtension,
        "control character in a chunk extension"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\n",
        .badRequest,
        "chunk-size line ends with a bare LF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
        .badRequest,
        "chunk data not followed by CRLF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\rX",
        .badRequest,
        "chunk data not followed by CRLF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\n",
        .badRequest,
        "chunk data not followed by CRLF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\rX",
        .badRequest,
        "chunked body not ended by CRLF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX : y\r\n\r\n",
        .badRequest,
        "whitespace between a field name and its colon"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\n",
        .badRequest,
        "trailer section has a bare LF"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFFFF\r\n",
        .bodyTooLarge,
        "chunked body over maxBodyLength"
    ),
    .init(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n",
        .bodyTooLarge,
        "chunked body over maxBodyLength"
    ),
]

@Suite("HTTPRequestParser: malformed requests")
struct HTTPMalformedTests {
    @Test("Each malformed request fails with its status, cut at every byte", arguments: malformedRequests)
    func malformed(_ malformed: Malformed) {
        let outcome = parseEveryWay(malformed.text)
        #expect(outcome.error == malformed.error)
        #expect(outcome.requests.isEmpty)
        var parser = HTTPRequestParser()
        parser.append(rope(malformed.text))
        #expect(throws: malformed.error) { try parser.next() }
        #expect(parser.failureReason == malformed.reason)
    }

    @Test("Statuses of the errors")
    func statuses() {
        #expect(HTTPParseError.badRequest.status.code == 400)
        #expect(HTTPParseError.uriTooLong.status.code == 414)
        #expect(HTTPParseError.headersTooLarge.status.code == 431)
        #expect(HTTPParseError.bodyTooLarge.status.code == 413)
        #expect(HTTPParseError.notImplemented.status.code == 501)
        #expect(HTTPParseError.versionNotSupported.status.code == 505)
        #expect(HTTPParseError.headersTooLarge.description == "431 Request Header Fields Too Large")
    }

    @Test("Lenient where RFC 9110 and 9112 allow it")
    func accepted() throws {
        for text in [
            // Repeated identical Content-Length, as a list or as fields.
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\ncontent-length:3\r\n\r\nabc",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  003 \r\n\r\nabc",
            // Transfer codings are case-insensitive; empty list elements are ignored.
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: , CHUNKED ,\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            // Leading zeros and upper-case hex in chunk sizes.
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0003\r\nabc\r\n000\r\n\r\n",
            // An HTTP/1.0 request with a body.
            "POST / HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
            // A GET with a body.
            "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        ] {
            let outcome = parseEveryWay(text)
            #expect(outcome.error == nil, "\(text.debugDescription)")
            #expect(outcome.requests.count == 1, "\(text.debugDescription)")
            if let request = outcome.requests.first, request.method == .post {
                #expect(request.bodyText == "abc", "\(text.debugDescription)")
            }
        }
    }
}

@Suite("HTTPRequestParser: chunked bodies")
struct HTTPChunkedTests {
    static let head = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test("The body is the chunks' sub-ropes, concatenated")
    func zeroCopy() throws {
        let first = rope("5\r\nhello\r\n")
        let second = rope("6;ext=1\r\n world\r\n")
        let last = rope("0\r\nTrailer: t\r\n\r\n")
        var parser = HTTPRequestParser()
        parser.append(rope(Self.head))
        parser.append(first)
        #expect(try parser.next() == nil)
        #expect(parser.phase == .body)
        parser.append(second)
        #expect(try parser.next() == nil)
        parser.append(last)
        let request = try #require(try parser.next())
        #expect(Array(request.body) == bytes("hello world"))
        #expect(request.body.regionCount == 2)
        #expect(regionAddresses(request.body) == [regionAddresses(first)[0] + 3, regionAddresses(second)[0] + 9])
        #expect(request.head.isChunked)
        #expect(request.head.headers["transfer-encoding"] == "chunked")
    }

    @Test("Chunk data split across appends is taken as it arrives")
    func dataAsItArrives() throws {
        var parser = HTTPRequestParser()
        parser.append(rope(Self.head + "A\r\n01234"))
        #expect(try parser.next() == nil)
        #expect(parser.bufferedByteCount == 0, "the partial chunk is already in the body")
        parser.append(rope("56789\r\n0\r\n\r\n"))
        let request = try #require(try parser.next())
        #expect(Array(request.body) == bytes("0123456789"))
    }

    @Test("Many chunks, with and without extensions and trailers, cut at every byte")
    func manyChunks() {
        var text = Self.head
        var expected = ""
        for size in 1...12 {
            let data = String(repeating: Character(UnicodeScalar(UInt8(0x60 + size))), count: size)
            expected += data
            text += String(size, radix: 16) + (size % 3 == 0 ? ";i=\(size)" : "") + "\r\n" + data + "\r\n"
        }
        text += "0\r\nA: 1\r\nB: 2\r\n\r\n"
        let outcome = parseEveryWay(text)
        #expect(outcome.error == nil)
        #expect(outcome.requests.first?.bodyText == expected)
    }

    @Test("An empty chunked body")
    func empty() {
        let outcome = parseEveryWay(Self.head + "0\r\n\r\n")
        #expect(outcome.requests.count == 1)
        #expect(outcome.requests.first?.body == [])
    }
}

@Suite("HTTPRequestParser: keep-alive and Expect")
struct HTTPKeepAliveTests {
    @Test(
        "Keep-alive follows the version and Connection",
        arguments: [
            ("HTTP/1.1", nil, true),
            ("HTTP/1.1", "close", false),
            ("HTTP/1.1", "Close", false),
            ("HTTP/1.1", "keep-alive", true),
            ("HTTP/1.1", "Keep-Alive, Close", false),
            ("HTTP/1.1", "upgrade", true),
            ("HTTP/1.1", "closed", true),
            ("HTTP/1.0", nil, false),
            ("HTTP/1.0", "keep-alive", true),
            ("HTTP/1.0", "KEEP-ALIVE", true),
            ("HTTP/1.0", " foo ,keep-alive ", true),
            ("HTTP/1.0", "keep-alive, close", false),
            ("HTTP/1.0", "close", false),
            ("HTTP/1.0", "keep alive", false),
        ] as [(String, String?, Bool)]
    )
    func keepAlive(version: String, connection: String?, expected: Bool) throws {
        var text = "GET / \(version)\r\nHost: x\r\n"
        if let connection { text += "Connection: \(connection)\r\n" }
        text += "\r\n"
        let outcome = parseEveryWay(text)
        #expect(outcome.requests.first?.keepAlive == expected)
    }

    @Test("Connection fields combine")
    func combinedConnection() {
        let outcome = parseEveryWay("GET / HTTP/1.0\r\nConnection: foo\r\nConnection: keep-alive\r\n\r\n")
        #expect(outcome.requests.first?.keepAlive == true)
        let closing = parseEveryWay("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nconnection: close\r\n\r\n")
        #expect(closing.requests.first?.keepAlive == false)
    }

    @Test("Expect: 100-continue — the head before the body, once")
    func expectContinue() throws {
        var parser = HTTPRequestParser()
        parser.append(rope("PUT /f HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n"))
        #expect(try parser.next() == nil)
        let head = try #require(try parser.nextHead())
        #expect(head.expectsContinue)
        #expect(head.contentLength == 5)
        #expect(head.method == .put)
        #expect(try parser.nextHead() == nil, "once per request")
        #expect(parser.phase == .body)
        parser.append(rope("hel"))
        #expect(try parser.next() == nil)
        #expect(try parser.nextHead() == nil)
        parser.append(rope("lo"))
        let request = try #require(try parser.next())
        #expect(request.head.expectsContinue)
        #expect(Array(request.body) == bytes("hello"))
        #expect(try parser.nextHead() == nil)
    }

    @Test("nextHead with pipelined requests: each head once, in order")
    func nextHeadPipelined() throws {
        var parser = HTTPRequestParser()
        parser.append(rope("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(try parser.nextHead()?.target == "/1")
        #expect(try parser.nextHead() == nil)
        #expect(try parser.next()?.head.target == "/1")
        #expect(try parser.nextHead()?.target == "/2")
        #expect(try parser.next()?.head.target == "/2")
        #expect(try parser.nextHead() == nil)
        #expect(try parser.next() == nil)
    }

    @Test("nextHead throws head errors, including a Content-Length over the limit")
    func nextHeadErrors() {
        var parser = HTTPRequestParser(limits: .init(maxBodyLength: 10))
        parser.append(rope("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n"))
        #expect(throws: HTTPParseError.bodyTooLarge) { try parser.nextHead() }
    }

    @Test(
        "Expectations other than 100-continue, and HTTP/1.0's, are not flagged",
        arguments: [
            ("HTTP/1.1", "100-continue", true),
            ("HTTP/1.1", " 100-CONTINUE ", true),
            ("HTTP/1.1", "200-ok", false),
            ("HTTP/1.1", "100-continue-x", false),
            ("HTTP/1.0", "100-continue", false),
        ]
    )
    func otherExpectations(version: String, value: String, expected: Bool) {
        let outcome = parseEveryWay("POST / \(version)\r\nHost: x\r\nExpect: \(value)\r\nContent-Length: 1\r\n\r\nz")
        #expect(outcome.requests.first?.expectsContinue == expected)
    }
}
