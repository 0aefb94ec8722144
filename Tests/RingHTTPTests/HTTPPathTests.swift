//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: percent-decoding and path normalization (traversal refused);
// header lookups.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

@Suite("HTTPPath")
struct HTTPPathTests {
    @Test(
        "Normalized paths",
        arguments: [
            ("/", "/"),
            ("/index.html", "/index.html"),
            ("/a/b/../c", "/a/c"),
            ("/a/./b//c/", "/a/b/c/"),
            ("/a/b/..", "/a/"),
            ("/a/b/.", "/a/b/"),
            ("/a/..", "/"),
            ("//a///b", "/a/b"),
            ("/a%20b", "/a b"),
            ("/a/%2e%2e/b", "/b"),
            ("/a/%2E./b", "/b"),
            ("/a/.%2e", "/"),
            ("/%2e/a", "/a"),
            ("/...", "/..."),
            ("/..a/b..", "/..a/b.."),
            ("/a+b", "/a+b"),
            ("/caf%C3%A9", "/caf\u{E9}"),
            ("/a?b=../../etc", "/a"),
            ("/a/b?", "/a/b"),
        ]
    )
    func normalized(path: String, expected: String) {
        #expect(HTTPPath.normalized(path) == expected)
    }

    @Test(
        "Refused paths",
        arguments: [
            "/..", "/../etc/passwd", "/a/../..", "/a/../../b", "/%2e%2e", "/%2e%2e/etc/passwd", "/%2E%2E/x",
            "/.%2e/x", "/a/%2e%2e/%2e%2e/x",  // above the root
            "/a%2fb", "/a%2F..%2F..%2Fetc", "/..%2f", "/a%5cb", "/a\\b", "/..\\..\\x",  // encoded slash, backslash
            "/a%00b", "/a%00", "/a\u{0}b", "/a%0Ab", "/a%0d%0a", "/a%7F", "/a%1b",  // NUL and control characters
            "/a%zz", "/a%2", "/a%", "/%g0",  // malformed escapes
            "/%ff", "/%c3", "/%c0%af",  // not UTF-8 (including the overlong "/")
            "", "a/b", "../a", "http://h/a", "*", "example.com:443",  // not origin-form
        ]
    )
    func refused(path: String) {
        #expect(HTTPPath.normalized(path) == nil)
        #expect(HTTPPath.segments(path) == nil)
    }

    @Test("Segments")
    func segments() {
        #expect(HTTPPath.segments("/a/./b/../c%20d") == ["a", "c d"])
        #expect(HTTPPath.segments("/") == [])
    }

    @Test("Percent-decoding")
    func percentDecoding() {
        #expect(HTTPPath.percentDecoded("a%20b%2Fc%2f") == "a b/c/")
        #expect(HTTPPath.percentDecoded("100%25") == "100%")
        #expect(HTTPPath.percentDecoded("a+b") == "a+b")
        #expect(HTTPPath.percentDecoded("%") == nil)
        #expect(HTTPPath.percentDecoded("%4") == nil)
        #expect(HTTPPath.percentDecoded("%4g") == nil)
        #expect(HTTPPath.percentDecoded("%ff") == nil, "not UTF-8")
        #expect(HTTPPath.percentDecoded(bytes("%ff%00")) == [0xFF, 0x00])
        #expect(HTTPPath.percentDecoded(bytes("")) == [])
    }

    @Test("A parsed request's path, normalized")
    func fromRequest() throws {
        var parser = HTTPRequestParser()
        parser.append(
            rope(
                "GET /static/../%2e%2e/secret?x HTTP/1.1\r\nHost: x\r\n\r\nGET /docs/./a%20b.html?v=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            )
        )
        let traversal = try #require(try parser.next())
        #expect(traversal.head.path == "/static/../%2e%2e/secret")
        #expect(HTTPPath.normalized(traversal.head.path) == nil)
        let fine = try #require(try parser.next())
        #expect(HTTPPath.normalized(fine.head.path) == "/docs/a b.html")
    }
}

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    func headers(_ fields: String) throws -> HTTPHeaders {
        var parser = HTTPRequestParser()
        parser.append(rope("GET / HTTP/1.1\r\n\(fields)\r\n"))
        return try #require(try parser.next()).head.headers
    }

    @Test("Lookups are case-insensitive; values are trimmed; order is kept")
    func lookups() throws {
        let headers = try self.headers(
            "Host: example.com\r\nAccept:text/html\r\nX-Tag:  a \r\nx-tag:b\t\r\nX-TAG:\r\nSet-Cookie: 1\r\nSet-Cookie: 2\r\n"
        )
        #expect(headers.count == 7)
        #expect(!headers.isEmpty)
        #expect(headers["HOST"] == "example.com")
        #expect(headers["accept"] == "text/html")
        #expect(headers["x-tag"] == "a, b, ")
        #expect(headers.values(name: "X-Tag") == ["a", "b", ""])
        #expect(headers.values(name: "set-cookie") == ["1", "2"])
        #expect(headers["missing"] == nil)
        #expect(headers.values(name: "missing") == [])
        #expect(headers.contains(name: "ACCEPT"))
        #expect(!headers.contains(name: "Accep"))
        #expect(!headers.contains(name: "Accepts"))
        #expect(!headers.contains(name: ""))
        #expect(headers.map(\.name) == ["Host", "Accept", "X-Tag", "x-tag", "X-TAG", "Set-Cookie", "Set-Cookie"])
        #expect(headers.map(\.value) == ["example.com", "text/html", "a", "b", "", "1", "2"])
        #expect(headers.firstValueBytes(name: "accept").map { Array($0) } == bytes("text/html"))
        #expect(
            Array(headers.bytes)
                == bytes(
                    "Host: example.com\r\nAccept:text/html\r\nX-Tag:  a \r\nx-tag:b\t\r\nX-TAG:\r\nSet-Cookie: 1\r\nSet-Cookie: 2\r\n"
                )
        )
    }

    @Test("Fields split across many regions")
    func acrossRegions() throws {
        let text = "GET / HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        var parser = HTTPRequestParser()
        parser.append(rope(regions: pieces(of: bytes(text), size: 1)))
        let headers = try #require(try parser.next()).head.headers
        #expect(headers["content-type"] == "text/html; charset=utf-8")
        #expect(headers.firstValueBytes(name: "host")?.regionCount == 11)
        #expect(headers.description == "Host: example.com\nContent-Type: text/html; charset=utf-8")
    }

    @Test("Built fields: the same lookups; CR, LF and NUL become spaces; a name may repeat")
    func built() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-Tag": " a ", "x-tag": "b"]
        headers.append(name: "Set-Cookie", value: "1\r\nInjected: yes\u{0}")
        headers.append(name: "Set-Cookie", value: "2")
        #expect(headers.count == 5)
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["X-TAG"] == "a, b")
        #expect(headers.values(name: "set-cookie") == ["1  Injected: yes", "2"])
        #expect(headers.contains(name: "SET-COOKIE"))
        #expect(!headers.contains(name: "Injected"))
        #expect(headers.firstValueBytes(name: "x-tag").map { Array($0) } == bytes("a"))
        #expect(headers.map(\.name) == ["Content-Type", "X-Tag", "x-tag", "Set-Cookie", "Set-Cookie"])
        #expect(
            Array(headers.bytes)
                == bytes(
                    "Content-Type: text/plain\r\nX-Tag:  a \r\nx-tag: b\r\nSet-Cookie: 1  Injected: yes \r\n"
                        + "Set-Cookie: 2\r\n"
                )
        )
        let empty = HTTPHeaders()
        #expect(empty.isEmpty && empty["x"] == nil && Array(empty).isEmpty && empty.bytes.isEmpty)
    }

    @Test("A request's fields appended to built ones are copied; the request's stay as they are")
    func appendReceived() throws {
        let received = try self.headers("Host: example.com\r\nAccept: */*\r\n")
        var built: HTTPHeaders = ["Via": "1.1 ring"]
        built.append(contentsOf: received)
        built.append(contentsOf: HTTPHeaders())
        #expect(built.count == 3)
        #expect(built.map(\.description) == ["Via: 1.1 ring", "Host: example.com", "Accept: */*"])
        var extended = received
        extended.append(name: "X-Added", value: "1")
        #expect(extended.count == 3 && extended["x-added"] == "1" && extended["host"] == "example.com")
        #expect(received.count == 2 && !received.contains(name: "X-Added"))
    }

    @Test("No fields")
    func none() throws {
        var parser = HTTPRequestParser()
        parser.append(rope("GET / HTTP/1.0\r\n\r\n"))
        let headers = try #require(try parser.next()).head.headers
        #expect(headers.isEmpty)
        #expect(headers.count == 0)
        #expect(headers["host"] == nil)
        #expect(Array(headers).isEmpty)
    }
}
