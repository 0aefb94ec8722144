//===----------------------------------------------------------------------===//
// RingIO — server tests: http-server against the Host, request-target, version and
// chunk-extension rules of RFC 9110 and RFC 9112, over real sockets.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A request the server must refuse with 400, and the rule its response must name.
struct RefusedRequest: CustomTestStringConvertible, Sendable {
    var label: String
    var request: String
    var rule: String

    var testDescription: String { self.label }

    /// `GET / HTTP/1.1` with `Host: value`.
    static func host(_ label: String, _ value: String, _ rule: String) -> RefusedRequest {
        RefusedRequest(label: label, request: "GET / HTTP/1.1\r\nHost: \(value)\r\n\r\n", rule: rule)
    }

    /// A chunked `POST /echo` whose chunk-size line is `5` followed by `extensions`.
    static func chunk(_ label: String, _ extensions: String, _ rule: String) -> RefusedRequest {
        RefusedRequest(
            label: label,
            request:
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\(extensions)\r\nhello\r\n0\r\n\r\n",
            rule: rule
        )
    }
}

let refusedRequests: [RefusedRequest] = [
    .host("Host with userinfo", "user@localhost", "userinfo in the Host value"),
    .host("Host with userinfo and a password", "user:secret@localhost", "userinfo in the Host value"),
    .host("Host with a path", "localhost/admin", "path, query or fragment in the Host value"),
    .host("Host with a query", "localhost?x", "path, query or fragment in the Host value"),
    .host("Host that is a list", "a.example, b.example", "list of values in the Host field"),
    .host("Host with inner whitespace", "local host", "whitespace inside the Host value"),
    .host("empty Host", "", "empty Host"),
    .host("Host with a port only", ":8080", "Host with a port and no host"),
    .host("Host port over 65535", "localhost:65536", "Host port not digits or over 65535"),
    .host("Host port not digits", "localhost:http", "Host port not digits or over 65535"),
    .host("Host with two ::", "[::1::2]", "Host is not an IP literal, an IPv4 address or a reg-name"),
    .host("Host IPv6 without brackets' end", "[::1", "Host is not an IP literal, an IPv4 address or a reg-name"),
    .host(
        "Host with a byte a reg-name cannot hold",
        "a{b}",
        "Host is not an IP literal, an IPv4 address or a reg-name"
    ),
    RefusedRequest(label: "no Host", request: "GET / HTTP/1.1\r\n\r\n", rule: "no Host field"),
    RefusedRequest(
        label: "two Host lines",
        request: "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        rule: "more than one Host field line"
    ),
    RefusedRequest(
        label: "Host disagreeing with an absolute-form target",
        request: "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n",
        rule: "Host differs from the authority of the request target"
    ),
    RefusedRequest(
        label: "userinfo in an absolute-form target",
        request: "GET http://user@localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
        rule: "userinfo in the request target"
    ),
    RefusedRequest(
        label: "fragment in the target",
        request: "GET /#top HTTP/1.1\r\nHost: localhost\r\n\r\n",
        rule: "fragment in the request target"
    ),
    RefusedRequest(
        label: "asterisk-form with GET",
        request: "GET * HTTP/1.1\r\nHost: localhost\r\n\r\n",
        rule: "asterisk-form target in a request other than OPTIONS"
    ),
    RefusedRequest(
        label: "target in no form",
        request: "GET index.html HTTP/1.1\r\nHost: localhost\r\n\r\n",
        rule: "request target in none of the four forms"
    ),
    .chunk("chunk extension without a value", ";a=", "chunk extension without a value after ="),
    .chunk("chunk extension with trailing whitespace", ";a=b ", "whitespace at the end of a chunk extension"),
    .chunk("chunk extension with an unterminated quote", ";a=\"b", "unterminated quoted string in a chunk extension"),
    .chunk("chunk extension without a name", "; =b", "chunk extension without a name"),
]

@Suite(
    "http-server: RFC 9110/9112 conformance",
    .serialized,
    .enabled(if: ringSetUpError == nil, ringUnavailableReason)
)
struct HTTPConformanceTests {
    /// One server per delivery for all the cases: a refused request must not harm it.
    private static func startServer(_ delivery: String) throws -> ServerProcess {
        let mode = delivery == "async" ? ["--api", "async"] : ["--queue", delivery]
        return try ServerProcess("http-server", ["--host", "127.0.0.1", "--port", "0", "--rings", "1"] + mode)
    }

    @Test(
        "each refused request gets a 400 naming its rule and a close; the next connection is served",
        arguments: HTTPServerTests.deliveries
    )
    func refused(_ delivery: String) throws {
        let server = try Self.startServer(delivery)
        for refused in refusedRequests {
            let fd = try connectClient(port: server.port)
            #expect(sendAll(fd, Array(refused.request.utf8)), "\(refused.label)")
            let (bytes, closed) = receiveUntilClosed(fd, seconds: 5)
            close(fd)
            var pending = bytes
            let response = parseResponse(&pending)
            #expect(response?.status == 400, "\(refused.label): \(String(decoding: bytes, as: UTF8.self))")
            let body = response.map { String(decoding: $0.body, as: UTF8.self) } ?? ""
            #expect(
                body == "400 Bad Request: the request is not valid HTTP/1.1: \(refused.rule)\n",
                "\(refused.label): \(body.debugDescription)"
            )
            #expect(response?.head.lowercased().contains("\r\nconnection: close") == true, "\(refused.label)")
            #expect(closed, "\(refused.label): the connection stayed open after the 400")
            #expect(pending.isEmpty, "\(refused.label): bytes after the 400")
            // The server still answers a new connection.
            let next = try connectClient(port: server.port)
            var nextPending = [UInt8]()
            let hello = exchange(next, &nextPending, Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            close(next)
            #expect(hello?.status == 200, "after \(refused.label): \(String(describing: hello))")
            #expect(hello?.body == Array("Hello, World!".utf8), "after \(refused.label)")
        }
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "valid Hosts, absolute-form, HTTP/1.2-1.9 and chunk extensions are served on one kept-alive connection",
        arguments: HTTPServerTests.deliveries
    )
    func accepted(_ delivery: String) throws {
        let server = try Self.startServer(delivery)
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        var pending = [UInt8]()
        let hello = Array("Hello, World!".utf8)
        let requests: [(String, String, [UInt8])] = [
            ("a reg-name Host with a port", "GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n", hello),
            ("an IPv4 Host", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", hello),
            ("an IPv6 Host", "GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", hello),
            ("an IPv6 Host with a port", "GET / HTTP/1.1\r\nHost: [2001:db8::ffff:192.0.2.1]:80\r\n\r\n", hello),
            ("an empty port", "GET / HTTP/1.1\r\nHost: localhost:\r\n\r\n", hello),
            ("absolute-form", "GET http://LOCALHOST:80/ HTTP/1.1\r\nHost: localhost\r\n\r\n", hello),
            ("HTTP/1.5", "GET / HTTP/1.5\r\nHost: localhost\r\n\r\n", hello),
            ("HTTP/1.9", "GET / HTTP/1.9\r\nHost: localhost\r\n\r\n", hello),
            (
                "chunk extensions",
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5 ; a = b;c=\"d;\\\"e\"\r\nhello\r\n0;last\r\n\r\n",
                Array("hello".utf8)
            ),
        ]
        for (label, request, body) in requests {
            let response = exchange(fd, &pending, Array(request.utf8))
            #expect(response?.status == 200, "\(label): \(String(describing: response))")
            #expect(response?.head.hasPrefix("HTTP/1.1 200 OK\r\n") == true, "\(label)")
            #expect(response?.body == body, "\(label)")
        }
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl through the server as its own proxy: an absolute-form target with its Host is served",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: HTTPServerTests.deliveries
    )
    func curlAbsoluteForm(_ delivery: String) throws {
        let server = try Self.startServer(delivery)
        let origin = "http://127.0.0.1:\(server.port)"
        // curl sends `GET http://127.0.0.1:PORT/ HTTP/1.1` with `Host: 127.0.0.1:PORT` to a proxy;
        // the proxy is the server itself, on loopback.
        let curl = runTool("curl", ["-sS", "--max-time", "15", "--proxy", origin, "-w", " %{http_code}", origin + "/"])
        #expect(curl.text == "Hello, World! 200", "\(curl)")
        // With a Host of its own that disagrees, 400 and the rule.
        let disagreeing = runTool(
            "curl",
            [
                "-sS", "--max-time", "15", "--proxy", origin, "-H", "Host: other.example", "-w", " %{http_code}",
                origin + "/",
            ]
        )
        #expect(
            disagreeing.text
                == "400 Bad Request: the request is not valid HTTP/1.1: Host differs from the authority of the request target\n 400",
            "\(disagreeing)"
        )
        #expect(server.stop(with: SIGTERM) == 0)
    }
}
