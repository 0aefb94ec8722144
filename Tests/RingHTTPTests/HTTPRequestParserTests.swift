//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: request parsing — requests cut at every byte, pipelining, the
// eight-chunk fixture, zero copy, phases.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

/// Well-formed requests, each parsed every way (see `parseEveryWay`).
let wellFormedRequests: [(name: String, text: String)] = [
    ("small GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("HTTP/1.0 without Host", "GET /index.html HTTP/1.0\r\n\r\n"),
    (
        "query and many fields",
        "GET /search?q=ring%20io&lang=en HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nUser-Agent: curl/8.5.0\r\nX-Empty:\r\nX-Spaces: \t padded \t \r\n\r\n"
    ),
    (
        "POST with Content-Length",
        "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world"
    ),
    (
        "chunked with extensions and trailers",
        "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6 ; a ; b=\"q;\"\r\n world\r\n0;last\r\nX-Trailer: yes\r\nX-Other: 2\r\n\r\n"
    ),
    (
        "chunked without trailers",
        "PUT /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n00\r\n\r\n"
    ),
    (
        "unregistered method and absolute-form",
        "PROPFIND http://example.com/a/b?c HTTP/1.1\r\nHost: example.com\r\nDepth: 1\r\n\r\n"
    ),
    ("empty lines before the request line", "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("Expect: 100-continue", "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"),
    ("OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("CONNECT authority-form", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
    ("obs-text in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-Latin: caf\u{E9}\r\n\r\n"),
]

@Suite("HTTPRequestParser: requests")
struct HTTPRequestParserTests {
    @Test("A small GET")
    func smallGet() throws {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        #expect(!parser.isMidRequest)
        parser.append(rope("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        let request = try #require(try parser.next())
        #expect(request.head.method == .get)
        #expect(request.head.target == "/")
        #expect(request.head.path == "/")
        #expect(request.head.query == nil)
        #expect(request.head.version == .http1_1)
        #expect(request.head.headers.count == 1)
        #expect(request.head.headers["host"] == "x")
        #expect(request.head.headers["HOST"] == "x")
        #expect(request.body.isEmpty)
        #expect(request.head.keepAlive)
        #expect(!request.head.expectsContinue)
        #expect(request.head.contentLength == nil)
        #expect(!request.head.isChunked)
        #expect(try parser.next() == nil)
        #expect(parser.phase == .idle)
        #expect(parser.bufferedByteCount == 0)
        #expect(parser.failure == nil)
        #expect(parser.failureReason == nil)
    }

    @Test("Well-formed requests parse the same cut at every byte", arguments: wellFormedRequests)
    func everySplit(name: String, text: String) {
        let outcome = parseEveryWay(text)
        #expect(outcome.error == nil)
        #expect(outcome.requests.count == 1)
        #expect(outcome.phase == .idle)
        #expect(outcome.buffered == 0)
    }

    @Test("Each well-formed request's fields and body")
    func wellFormedContents() throws {
        func only(_ text: String) throws -> RequestSnapshot {
            let outcome = parse([rope(text)])
            #expect(outcome.error == nil)
            return try #require(outcome.requests.first)
        }
        let fields = try only(wellFormedRequests[2].text)
        #expect(fields.target == "/search?q=ring%20io&lang=en")
        #expect(
            fields.headers == [
                ["Host", "example.com"], ["Accept", "*/*"], ["User-Agent", "curl/8.5.0"], ["X-Empty", ""],
                ["X-Spaces", "padded"],
            ]
        )

        let post = try only(wellFormedRequests[3].text)
        #expect(post.method == .post)
        #expect(post.bodyText == "hello world")
        #expect(post.contentLength == 11)

        let chunked = try only(wellFormedRequests[4].text)
        #expect(chunked.bodyText == "hello world")
        #expect(chunked.isChunked)
        #expect(chunked.contentLength == nil)
        // Trailers are accepted and not added to the header fields.
        #expect(chunked.headers.map { $0[0] } == ["Host", "Transfer-Encoding"])

        let chunked2 = try only(wellFormedRequests[5].text)
        #expect(chunked2.bodyText == "0123456789")

        let other = try only(wellFormedRequests[6].text)
        #expect(other.method == .other("PROPFIND"))
        #expect(other.target == "http://example.com/a/b?c")

        let options = try only(wellFormedRequests[9].text)
        #expect(options.method == .options)
        #expect(options.target == "*")

        let latin = try only(wellFormedRequests[11].text)
        #expect(latin.headers[1] == ["X-Latin", "caf\u{E9}"])
    }

    @Test("Paths and queries of the target forms")
    func pathsAndQueries() throws {
        func head(_ target: String, method: String = "GET", host: String = "h") throws -> HTTPRequestHead {
            var parser = HTTPRequestParser()
            parser.append(rope("\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n"))
            return try #require(try parser.nextHead())
        }
        #expect(try head("/a/b?x=1&y").path == "/a/b")
        #expect(try head("/a/b?x=1&y").query == "x=1&y")
        #expect(try head("/a/b?").query == "")
        #expect(try head("/a%20b").path == "/a%20b")
        #expect(try head("http://example.com/a/b?c", host: "example.com").path == "/a/b")
        #expect(try head("http://example.com/a/b?c", host: "example.com").query == "c")
        #expect(try head("HTTPS://example.com", host: "example.com").path == "/")
        #expect(try head("http://example.com?q", host: "example.com").path == "/")
        #expect(try head("h2c+x.y-z://example.com/p", host: "example.com").path == "/p")
        #expect(try head("example.com:443", method: "CONNECT", host: "example.com:443").path == "example.com:443")
        #expect(try head("*", method: "OPTIONS").path == "*")
        let long = "/" + String(repeating: "segment/", count: 20)
        #expect(try head(long).target == long)
        #expect(try head(long).targetBytes.count == long.utf8.count)
    }

    @Test("Registered methods are their own cases; methods are case-sensitive")
    func methods() throws {
        let names = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]
        let cases: [HTTPMethod] = [.get, .head, .post, .put, .delete, .connect, .options, .trace, .patch]
        for (name, method) in zip(names, cases) {
            var parser = HTTPRequestParser()
            let target = method == .connect ? "x:443" : "/"  // CONNECT's target is authority-form
            parser.append(rope("\(name) \(target) HTTP/1.1\r\nHost: x:443\r\n\r\n"))
            #expect(try parser.next()?.head.method == method)
            #expect(HTTPMethod(name) == method)
            #expect(method.rawValue == name)
        }
        for name in ["get", "GETS", "GE", "M-SEARCH", "VERYLONGMETHODNAME"] {
            var parser = HTTPRequestParser()
            parser.append(rope("\(name) / HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(try parser.next()?.head.method == .other(name))
            #expect(HTTPMethod(name) == .other(name))
        }
    }

    @Test("Three pipelined requests in one rope come out in order")
    func pipelined() throws {
        let text =
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
            + "PUT /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"
        var parser = HTTPRequestParser()
        parser.append(rope(text))
        let first = try #require(try parser.next())
        #expect(parser.phase == .head)  // the others are buffered, not yet parsed
        let second = try #require(try parser.next())
        let third = try #require(try parser.next())
        #expect(try parser.next() == nil)
        #expect([first.head.target, second.head.target, third.head.target] == ["/1", "/2", "/3"])
        #expect(Array(second.body) == bytes("body"))
        #expect(Array(third.body) == bytes("ab"))
        #expect(parser.phase == .idle)

        let outcome = parseEveryWay(text)
        #expect(outcome.requests.map(\.target) == ["/1", "/2", "/3"])
        #expect(outcome.error == nil)
    }

    @Test("Pipelined requests then a bad one: the good ones come out first")
    func pipelinedThenBad() {
        let outcome = parseEveryWay(
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/9.9\r\nHost: x\r\n\r\n"
        )
        #expect(outcome.requests.map(\.target) == ["/1", "/2"])
        #expect(outcome.error == .versionNotSupported)
    }

    @Test("A failed parser stays failed, drops its bytes and ignores appends")
    func staysFailed() throws {
        var parser = HTTPRequestParser()
        parser.append(rope("GET / HTTP/1.1\r\nHost : x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(throws: HTTPParseError.badRequest) { try parser.next() }
        #expect(parser.failure == .badRequest)
        #expect(parser.failureReason == "whitespace between a field name and its colon")
        #expect(parser.bufferedByteCount == 0)
        parser.append(rope("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(parser.bufferedByteCount == 0)
        #expect(throws: HTTPParseError.badRequest) { try parser.next() }
        #expect(throws: HTTPParseError.badRequest) { try parser.nextHead() }
    }

    @Test("Phases: idle, head, body, idle")
    func phases() throws {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        parser.append(rope("\r\n"))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .idle, "empty lines before a request do not start one")
        parser.append(rope("POST / HTTP/1.1\r\nHost: x\r\nContent-"))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .head)
        #expect(parser.isMidRequest)
        parser.append(rope("Length: 5\r\n\r\nab"))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .body)
        #expect(parser.isMidRequest)
        parser.append(rope("cde"))
        #expect(try parser.next() != nil)
        #expect(parser.phase == .idle)
        #expect(!parser.isMidRequest)
    }

    @Test("Incomplete input is not an error")
    func incomplete() {
        for text in [
            "G", "GET / HTTP/1.1", "GET / HTTP/1.1\r", "GET / HTTP/1.1\r\nHost: x\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n\r",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nab",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n",
        ] {
            let outcome = parseEveryWay(text)
            #expect(outcome.error == nil, "\(text.debugDescription)")
            #expect(outcome.requests.isEmpty, "\(text.debugDescription)")
            #expect(outcome.phase != .idle, "\(text.debugDescription)")
        }
    }
}

// MARK: - The eight-chunk fixture

/// A message as it arrives from the network, in eight chunks cut at arbitrary bytes — the
/// classic illustration of why dispatch data is a rope: an HTTP/1.1 200 response whose head
/// is split `22:38` | `:34 GMT`, `Red-H` | `at/Linux`, `Con` | `tent-Type`, `Content-` |
/// `Length: 131`, with the head's end inside chunk 5 followed by `<html>`, and the 131-byte
/// body running on through chunks 6 and 7 (still incomplete) to chunk 8. A server parses
/// requests, so the status line becomes a request line and `Server` becomes `User-Agent`;
/// every cut stays where it was.
let gcdFixtureChunks: [String] = [
    "POST /pages HTTP/1.1\r\nHost: www.example.com\r\nDate: Mon, 23 May 2005 22:38",
    ":34 GMT\r\nUser-Agent: Apache/1.3.3.7 (Unix) (Red-H",
    "at/Linux)\r\nLast-Modified: Wed, 08 Jan 2003 23:11:55 GMT\r\nCon",
    "tent-Type: text/html; charset=UTF-8\r\nContent-",
    "Length: 131\r\nConnection: close\r\n\r\n<html>",
    "\n<head>\n  <title>An Example Page</title>\n</head>",
    "\n<body>\n  Hello World, this is a very simple",
    " HTML document.\n</body>\n</html>\r\n",
]

@Suite("HTTPRequestParser: a request arriving in eight arbitrary chunks")
struct HTTPGCDFixtureTests {
    let chunks = gcdFixtureChunks.map(rope)

    @Test("The fixture's body is the announced 131 bytes")
    func fixtureShape() throws {
        let all = rope(gcdFixtureChunks.joined())
        let headEnd = try #require(all.firstRange(of: "\r\n\r\n".utf8))
        #expect(all.count - headEnd.upperBound == 131)
        #expect(gcdFixtureChunks[4].hasSuffix("\r\n\r\n<html>"))
    }

    @Test("Chunk by chunk: the head after chunk 5, the request after chunk 8")
    func chunkByChunk() throws {
        var parser = HTTPRequestParser()
        for chunk in self.chunks[..<4] {
            parser.append(chunk)
            #expect(try parser.next() == nil)
            #expect(try parser.nextHead() == nil)
            #expect(parser.phase == .head)
        }
        parser.append(self.chunks[4])
        #expect(try parser.next() == nil)
        let head = try #require(try parser.nextHead())
        #expect(parser.phase == .body)
        #expect(head.headers["date"] == "Mon, 23 May 2005 22:38:34 GMT")
        #expect(head.headers["user-agent"] == "Apache/1.3.3.7 (Unix) (Red-Hat/Linux)")
        #expect(head.headers["content-type"] == "text/html; charset=UTF-8")
        #expect(head.contentLength == 131)
        #expect(!head.keepAlive)
        for chunk in self.chunks[5..<7] {
            parser.append(chunk)
            #expect(try parser.next() == nil, "the body is still incomplete")
            #expect(try parser.nextHead() == nil, "the head was handed out once")
        }
        parser.append(self.chunks[7])
        let request = try #require(try parser.next())
        #expect(request.body.count == 131)
        #expect(String(decoding: request.body, as: UTF8.self).hasPrefix("<html>\n<head>"))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .idle)

        // Zero copy: the body is chunks 5 (from `<html>`) to 8, in their own memory.
        #expect(request.body.regionCount == 4)
        let addresses = regionAddresses(request.body)
        #expect(Array(addresses[1...]) == self.chunks[5...].map { regionAddresses($0)[0] })
        #expect(addresses[0] == regionAddresses(self.chunks[4])[0] + (self.chunks[4].count - 6))
        // The header values are sub-ropes of the chunks too, even split across two of them.
        let date = try #require(request.head.headers.firstValueBytes(name: "Date"))
        #expect(date.regionCount == 2)
        #expect(sharesMemory(date, with: self.chunks[0] + self.chunks[1]))
        #expect(sharesMemory(request.head.targetBytes, with: self.chunks[0]))
    }

    @Test("All eight chunks as one rope of eight regions")
    func oneRope() throws {
        var all = ByteRope()
        for chunk in self.chunks { all.append(chunk) }
        #expect(all.regionCount == 8)
        var parser = HTTPRequestParser()
        parser.append(all)
        let request = try #require(try parser.next())
        #expect(request.head.method == .post)
        #expect(request.head.target == "/pages")
        #expect(request.head.headers.count == 7)
        #expect(request.body.count == 131)
        #expect(sharesMemory(request.body, with: all))
        #expect(sharesMemory(request.head.headers.bytes, with: all))
    }

    @Test("The fixture cut at every byte and into 1-byte regions")
    func everyWay() {
        let outcome = parseEveryWay(gcdFixtureChunks.joined())
        #expect(outcome.requests.count == 1)
        #expect(outcome.requests.first?.body.count == 131)
    }
}
