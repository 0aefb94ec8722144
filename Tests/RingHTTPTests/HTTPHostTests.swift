//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: the Host field (RFC 9112 §3.2, RFC 9110 §7.2, RFC 3986 §3.2),
// the request-target forms and their agreement with Host, versions and fragments.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `GET / HTTP/1.1` with `Host: value`.
private func hostRequest(_ value: String) -> String {
    "GET / HTTP/1.1\r\nHost: \(value)\r\n\r\n"
}

/// A case: a request, and the error it fails with (`nil`: it is accepted).
struct Conformance: CustomTestStringConvertible, Sendable {
    var text: String
    var error: HTTPParseError?

    init(_ text: String, _ error: HTTPParseError?) {
        self.text = text
        self.error = error
    }

    /// `GET / HTTP/1.1` with `Host: value`.
    static func host(_ value: String, _ error: HTTPParseError?) -> Conformance {
        Conformance(hostRequest(value), error)
    }

    /// `method target HTTP/1.1` with `Host: host` (no Host field for `nil`).
    static func target(
        _ target: String,
        host: String?,
        method: String = "GET",
        _ error: HTTPParseError?
    ) -> Conformance {
        Conformance("\(method) \(target) HTTP/1.1\r\n" + (host.map { "Host: \($0)\r\n" } ?? "") + "\r\n", error)
    }

    var testDescription: String { "\(self.error.map { "\($0)" } ?? "accepted"): \(self.text.debugDescription)" }
}

/// Checks that `conformance` parses to one request, or fails with its error, whichever way
/// it is fed.
func checkConformance(_ conformance: Conformance, sourceLocation: SourceLocation = #_sourceLocation) {
    let outcome = parseEveryWay(conformance.text, sourceLocation: sourceLocation)
    #expect(outcome.error == conformance.error, sourceLocation: sourceLocation)
    #expect(outcome.requests.count == (conformance.error == nil ? 1 : 0), sourceLocation: sourceLocation)
    if conformance.error != nil {
        #expect(outcome.phase == .idle && outcome.buffered == 0, "a failed parser holds nothing")
    }
}

// MARK: - Host values

let validHosts: [String] = [
    // reg-name (IPv4 addresses are reg-names too).
    "example.com", "EXAMPLE.Com", "localhost", "x", "a-b.c_d~e", "xn--bcher-kva.example", "a..b", "1.2.3",
    "256.256.256.256", "127.0.0.1", "ex%41mple.com", "%7e%7E", "!$&'()*+;=",
    // Ports: in range, leading zeros, empty (RFC 3986: port = *DIGIT).
    "example.com:80", "example.com:0", "example.com:65535", "example.com:00080", "127.0.0.1:8080", "example.com:",
    // IPv6 literals, with and without ports.
    "[::1]", "[::1]:8080", "[::]", "[::]:80", "[::1]:", "[2001:db8::1]", "[2001:DB8:0:0:8:800:200C:417A]",
    "[FF01::101]", "[1:2:3:4:5:6:7:8]", "[1:2:3:4:5:6:7:8]:65535", "[1:2:3:4:5:6:7::]", "[::2:3:4:5:6:7:8]",
    "[1::8]", "[fe80::]", "[abcd:ef01:2345:6789:abcd:ef01:2345:6789]", "[0000:0000::0000]",
    // IPv6 with an IPv4 tail.
    "[::ffff:192.0.2.1]", "[::192.0.2.1]", "[::0.0.0.0]", "[1:2:3:4:5:6:1.2.3.4]", "[1:2:3:4:5::255.255.255.255]",
    "[::1:2:3:4:5:1.2.3.4]",
    // IPvFuture (a comma is one of its bytes).
    "[v1.a]", "[V7.x:y,z!]:443", "[vF.~]",
    // Whitespace around the value is not part of it.
    " example.com", "example.com ", "\texample.com\t", "  [::1]:80  ",
]

let invalidHosts: [Conformance] = [
    // Userinfo, whatever else is wrong.
    .host("user@example.com", .hostWithUserinfo),
    .host("user:pass@example.com", .hostWithUserinfo),
    .host("@example.com", .hostWithUserinfo),
    .host("example.com@", .hostWithUserinfo),
    .host("user@[::1]:80", .hostWithUserinfo),
    .host("a@b/c, d", .hostWithUserinfo),
    // Lists.
    .host("a.example, b.example", .hostList),
    .host("a,b", .hostList),
    .host(",", .hostList),
    .host("example.com,", .hostList),
    .host("[::1],[::2]", .hostList),
    .host("a/b,c", .hostList),
    // Paths, queries, fragments.
    .host("example.com/", .hostWithPath),
    .host("example.com/path", .hostWithPath),
    .host("example.com?q", .hostWithPath),
    .host("example.com#f", .hostWithPath),
    .host("/", .hostWithPath),
    .host("[::1]/x", .hostWithPath),
    .host("example.com:80/x", .hostWithPath),
    .host("http://example.com", .hostWithPath),
    .host("a b/c", .hostWithPath),
    // Whitespace inside.
    .host("exa mple.com", .hostWithWhitespace),
    .host("example.com :80", .hostWithWhitespace),
    .host("example.com: 80", .hostWithWhitespace),
    .host("a\tb", .hostWithWhitespace),
    .host("[::1] :80", .hostWithWhitespace),
    .host("a b{", .hostWithWhitespace),
    .host("example.com:8 0", .hostWithWhitespace),
    // Ports.
    .host("example.com:http", .invalidHostPort),
    .host("example.com:65536", .invalidHostPort),
    .host("example.com:99999999999999999999", .invalidHostPort),
    .host("example.com:-1", .invalidHostPort),
    .host("example.com:+80", .invalidHostPort),
    .host("example.com:80:80", .invalidHostPort),
    .host("[::1]:x", .invalidHostPort),
    .host("::1", .invalidHostPort),  // an IPv6 address needs its brackets
    .host("a:b{", .invalidHostPort),
    // Not a host: bytes a reg-name may not hold, escapes, literals.
    .host("exa{mple}", .invalidHost),
    .host("a\"b", .invalidHost),
    .host("a<b>", .invalidHost),
    .host("a\\b", .invalidHost),
    .host("a^b", .invalidHost),
    .host("a|b", .invalidHost),
    .host("caf\u{E9}.example", .invalidHost),
    .host("%", .invalidHost),
    .host("a%4", .invalidHost),
    .host("a%zz", .invalidHost),
    .host("a%4g", .invalidHost),
    .host("[", .invalidHost),
    .host("[]", .invalidHost),
    .host("[:]", .invalidHost),
    .host("[::1", .invalidHost),
    .host("[::1]x", .invalidHost),
    .host("a[::1]", .invalidHost),
    .host("a]b", .invalidHost),
    .host("[1:2]", .invalidHost),
    .host("[1:2:3:4:5:6:7]", .invalidHost),
    .host("[1:2:3:4:5:6:7:8:9]", .invalidHost),
    .host("[1:2:3:4:5:6:7:8::]", .invalidHost),
    .host("[::1:2:3:4:5:6:7:8]", .invalidHost),
    .host("[1::2::3]", .invalidHost),
    .host("[:::]", .invalidHost),
    .host("[:1::]", .invalidHost),
    .host("[:1:2:3:4:5:6:7:8]", .invalidHost),
    .host("[1:]", .invalidHost),
    .host("[1::2:]", .invalidHost),
    .host("[12345::]", .invalidHost),
    .host("[g::]", .invalidHost),
    .host("[::1.2.3]", .invalidHost),
    .host("[::1.2.3.4.5]", .invalidHost),
    .host("[::256.1.1.1]", .invalidHost),
    .host("[::1.2.3.256]", .invalidHost),
    .host("[::01.2.3.4]", .invalidHost),
    .host("[::1.02.3.4]", .invalidHost),
    .host("[::1.2..4]", .invalidHost),
    .host("[::a.2.3.4]", .invalidHost),
    .host("[::1234.2.3.4]", .invalidHost),
    .host("[1.2.3.4]", .invalidHost),
    .host("[::1.2.3.4:5]", .invalidHost),
    .host("[::1.2.3.4::]", .invalidHost),
    .host("[1:2:3:4:5:6:7:1.2.3.4]", .invalidHost),
    .host("[1:2:3:4:5:6::1.2.3.4]", .invalidHost),
    .host("[fe80::1%25eth0]", .invalidHost),  // zone identifiers are RFC 6874's, not RFC 3986's
    .host("[v.a]", .invalidHost),
    .host("[v1.]", .invalidHost),
    .host("[v1a]", .invalidHost),
    .host("[vz.a]", .invalidHost),
    .host("[v1.a]b", .invalidHost),
    .host("[v1.a{]", .invalidHost),
    // No host.
    .host("", .emptyHost),
    .host("   ", .emptyHost),
    .host(":80", .emptyHost),
    .host(":", .emptyHost),
    // Control characters are refused in every field value.
    .host("a\u{7F}b", .badRequest),
    .host("a\u{1}b", .badRequest),
]

@Suite("HTTPRequestParser: the Host field")
struct HTTPHostTests {
    @Test("Valid Host values are accepted, cut at every byte", arguments: validHosts)
    func valid(_ value: String) throws {
        checkConformance(.host(value, nil))
        var parser = HTTPRequestParser()
        parser.append(rope(hostRequest(value)))
        let request = try #require(try parser.next())
        #expect(request.head.headers["Host"] == value.trimmingWhitespace)
    }

    @Test("Invalid Host values fail with their rule, cut at every byte", arguments: invalidHosts)
    func invalid(_ conformance: Conformance) {
        checkConformance(conformance)
    }

    @Test("Every byte in the middle of a reg-name: accepted exactly when RFC 3986 allows it")
    func everyByte() {
        let unreserved = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~".utf8)
        let subDelims = Set("!$&'()*+;=".utf8)  // and the comma, a list here
        for byte in UInt8(0)...UInt8(255) where byte != 0x0D && byte != 0x0A {
            let text = Array("GET / HTTP/1.1\r\nHost: a".utf8) + [byte] + Array("b\r\n\r\n".utf8)
            let expected: HTTPParseError?
            switch byte {
            case _ where unreserved.contains(byte) || subDelims.contains(byte): expected = nil
            case 0x20, 0x09: expected = .hostWithWhitespace
            case 0x00..<0x20, 0x7F: expected = .badRequest
            case UInt8(ascii: "@"): expected = .hostWithUserinfo
            case UInt8(ascii: ","): expected = .hostList
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): expected = .hostWithPath
            case UInt8(ascii: ":"): expected = .invalidHostPort
            default: expected = .invalidHost
            }
            let outcome = parse([rope(text)])
            #expect(outcome.error == expected, "byte 0x\(String(byte, radix: 16))")
            #expect(outcome.requests.count == (expected == nil ? 1 : 0), "byte 0x\(String(byte, radix: 16))")
        }
    }

    @Test("IPv6 literals agree with inet_pton(AF_INET6) on generated addresses and near misses")
    func ipv6AgainstInetPton() {
        var generator = SplitMix64(seed: 33)
        var accepted = 0
        for _ in 0..<20_000 {
            let address = Self.ipv6Candidate(&generator)
            var storage = in6_addr()
            let expected = inet_pton(AF_INET6, address, &storage) == 1
            let outcome = parse([rope(hostRequest("[\(address)]"))])
            #expect((outcome.error == nil) == expected, "[\(address)]: \(outcome.error.map { "\($0)" } ?? "accepted")")
            #expect(outcome.error == nil || outcome.error == .invalidHost, "[\(address)]")
            if expected { accepted += 1 }
        }
        // Both sides of the grammar are exercised.
        #expect(accepted > 5_000 && accepted < 15_000, "\(accepted) of 20000 valid")
    }

    /// An IPv6 address, well-formed about half the time: 1 to 9 pieces of 0 to 5 hex digits,
    /// perhaps a "::", perhaps an IPv4 tail (perhaps out of range or with a leading zero),
    /// then perhaps one byte changed.
    private static func ipv6Candidate(_ generator: inout SplitMix64) -> String {
        let hex = Array("0123456789abcdefABCDEF")
        func piece(_ generator: inout SplitMix64) -> String {
            let length = Int.random(in: 0...20, using: &generator) == 0 ? 5 : Int.random(in: 1...4, using: &generator)
            return String((0..<length).map { _ in hex.randomElement(using: &generator)! })
        }
        func octet(_ generator: inout SplitMix64) -> String {
            switch Int.random(in: 0...12, using: &generator) {
            case 0: return "256"
            case 1: return "0" + String(Int.random(in: 0...9, using: &generator))
            default: return String(Int.random(in: 0...255, using: &generator))
            }
        }
        let ipv4 = Bool.random(using: &generator) && Bool.random(using: &generator)
        let compressed = Int.random(in: 0...3, using: &generator) != 0
        let total =
            (ipv4 ? 6 : 8) + Int.random(in: -1...1, using: &generator) * (Bool.random(using: &generator) ? 1 : 0)
        let count = compressed ? Int.random(in: 0...max(0, total - 1), using: &generator) : total
        var pieces = (0..<max(0, count)).map { _ in piece(&generator) }
        if compressed {
            let at = Int.random(in: 0...pieces.count, using: &generator)
            let before = pieces[..<at].joined(separator: ":")
            let after = pieces[at...].joined(separator: ":")
            pieces = [before + "::" + after]
        }
        var address = pieces.joined(separator: ":")
        if ipv4 {
            let tail = (0..<4).map { _ in octet(&generator) }.joined(separator: ".")
            address += address.hasSuffix(":") || address.isEmpty ? tail : ":" + tail
        }
        if Int.random(in: 0...3, using: &generator) == 0, !address.isEmpty {
            var bytes = Array(address.utf8)
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            bytes[index] = Array(":.0aG".utf8).randomElement(using: &generator)!
            address = String(decoding: bytes, as: UTF8.self)
        }
        return address
    }

    @Test("Exactly one Host in HTTP/1.1, at most one in HTTP/1.0")
    func count() {
        checkConformance(Conformance("GET / HTTP/1.1\r\n\r\n", .missingHost))
        checkConformance(Conformance("GET / HTTP/1.1\r\nX: y\r\n\r\n", .missingHost))
        checkConformance(Conformance("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", .duplicateHost))
        checkConformance(Conformance("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\nHOST: b\r\n\r\n", .duplicateHost))
        checkConformance(Conformance("GET / HTTP/1.1\r\nHost: user@a\r\nHost: b\r\n\r\n", .duplicateHost))
        checkConformance(Conformance("GET / HTTP/1.0\r\n\r\n", nil))
        checkConformance(Conformance("GET / HTTP/1.0\r\nHost: a\r\n\r\n", nil))
        checkConformance(Conformance("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", .duplicateHost))
        checkConformance(Conformance("GET / HTTP/1.0\r\nHost: a b\r\n\r\n", .hostWithWhitespace))
        checkConformance(Conformance("GET / HTTP/1.0\r\nHost:\r\n\r\n", .emptyHost))
        // A Host in the trailer section is not the request's Host: it is ignored.
        checkConformance(
            Conformance(
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nHost: a b@c\r\n\r\n",
                nil
            )
        )
    }

    @Test("Each failure has its reason, and every new case is a 400")
    func reasonsAndStatuses() {
        let reasons: [(String, HTTPParseError, String)] = [
            ("GET / HTTP/1.1\r\n\r\n", .missingHost, "no Host field"),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .duplicateHost, "more than one Host field line"),
            (hostRequest(""), .emptyHost, "empty Host"),
            (hostRequest(":80"), .emptyHost, "Host with a port and no host"),
            (hostRequest("u@h"), .hostWithUserinfo, "userinfo in the Host value"),
            (hostRequest("h/p"), .hostWithPath, "path, query or fragment in the Host value"),
            (hostRequest("a, b"), .hostList, "list of values in the Host field"),
            (hostRequest("a b"), .hostWithWhitespace, "whitespace inside the Host value"),
            (hostRequest("h:x"), .invalidHostPort, "Host port not digits or over 65535"),
            (hostRequest("h{"), .invalidHost, "Host is not an IP literal, an IPv4 address or a reg-name"),
            (
                "GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n", .hostMismatch,
                "Host differs from the authority of the request target"
            ),
            ("GET /#f HTTP/1.1\r\nHost: h\r\n\r\n", .fragmentInTarget, "fragment in the request target"),
            ("GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", .targetWithUserinfo, "userinfo in the request target"),
            ("GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget, "request target in none of the four forms"),
        ]
        for (text, error, reason) in reasons {
            var parser = HTTPRequestParser()
            parser.append(rope(text))
            #expect(throws: error) { try parser.next() }
            #expect(parser.failureReason == reason, "\(text.debugDescription)")
            #expect(error.status == .badRequest && error.description == "400 Bad Request")
        }
    }
}

// MARK: - Request targets

let targetCases: [Conformance] = [
    // Absolute-form: the Host agrees with the authority.
    .target("http://example.com/", host: "example.com", nil),
    .target("http://EXAMPLE.com/a?b", host: "example.COM", nil),
    .target("http://example.com:80/", host: "example.com", nil),
    .target("http://example.com/", host: "example.com:80", nil),
    .target("http://example.com:/", host: "example.com", nil),
    .target("http://example.com/", host: "example.com:", nil),
    .target("https://example.com:443/x", host: "example.com", nil),
    .target("HTTPS://example.com/x", host: "example.com:443", nil),
    .target("http://[::1]:8080/", host: "[::1]:8080", nil),
    .target("http://[::1]/", host: "[::1]:80", nil),
    .target("http://[V1.x]/", host: "[v1.X]", nil),
    .target("http://example.com", host: "example.com", nil),
    .target("http://example.com?q", host: "example.com", nil),
    .target("http://127.0.0.1:8080/", host: "127.0.0.1:8080", nil),
    .target("http://ex%41mple.com/", host: "ex%41mple.com", nil),
    .target("http://example.com/", host: nil, method: "GET", .missingHost),
    // Other schemes: without an authority the Host is empty; userinfo is set aside.
    .target("urn:isbn:0451450523", host: "", nil),
    .target("mailto:a@example.com", host: "", nil),
    .target("foo://user:pw@example.com/", host: "example.com", nil),
    .target("foo://user%20x@example.com/", host: "example.com", nil),
    .target("file:///etc/hosts", host: "", nil),
    .target("foo://example.com:80/", host: "example.com", .hostMismatch),  // 80 is only http's default
    // Disagreement.
    .target("http://example.com/", host: "other.example", .hostMismatch),
    .target("http://example.com:8080/", host: "example.com", .hostMismatch),
    .target("http://example.com/", host: "example.com:8080", .hostMismatch),
    .target("https://example.com/", host: "example.com:80", .hostMismatch),
    .target("http://example.com/", host: "", .hostMismatch),
    .target("http://[::1]/", host: "[0:0:0:0:0:0:0:1]", .hostMismatch),
    .target("urn:x", host: "example.com", .hostMismatch),
    .target("example.com:443", host: "example.com", .hostMismatch),  // scheme "example.com", no authority
    .target("file:///etc/hosts", host: "example.com", .hostMismatch),
    // The Host's own rules come first.
    .target("http://example.com/", host: "user@example.com", .hostWithUserinfo),
    .target("http://example.com/", host: "example.com, example.com", .hostList),
    // Malformed targets.
    .target("http://user@example.com/", host: "example.com", .targetWithUserinfo),
    .target("http://user:pw@example.com/", host: "example.com", .targetWithUserinfo),
    .target("https://@example.com/", host: "example.com", .targetWithUserinfo),
    .target("foo://a@b@c/", host: "c", .targetWithUserinfo),
    .target("foo://a{b@c/", host: "c", .targetWithUserinfo),
    .target("http:/example.com", host: "example.com", .invalidTarget),
    .target("http:example.com", host: "example.com", .invalidTarget),
    .target("http:", host: "x", .invalidTarget),
    .target("http:///x", host: "x", .invalidTarget),
    .target("http://:80/", host: "x", .invalidTarget),
    .target("http://a,b/", host: "x", .invalidTarget),
    .target("http://[::1/", host: "x", .invalidTarget),
    .target("http://example.com:99999/", host: "x", .invalidTarget),
    .target("http://exa{mple/", host: "x", .invalidTarget),
    .target("1http://x/", host: "x", .invalidTarget),
    .target("ht_tp://x/", host: "x", .invalidTarget),
    .target(":x", host: "x", .invalidTarget),
    .target("a/b", host: "x", .invalidTarget),
    .target("example.com", host: "x", .invalidTarget),
    .target("?q", host: "x", .invalidTarget),
    // Asterisk-form: OPTIONS only.
    .target("*", host: "example.com", method: "OPTIONS", nil),
    .target("*", host: "example.com", .invalidTarget),
    .target("*", host: "example.com", method: "HEAD", .invalidTarget),
    .target("*", host: "", method: "OPTIONS", .emptyHost),
    .target("**", host: "x", method: "OPTIONS", .invalidTarget),
    // Authority-form: CONNECT only, host:port with a port.
    .target("example.com:443", host: "example.com:443", method: "CONNECT", nil),
    .target("EXAMPLE.com:443", host: "example.com:443", method: "CONNECT", nil),
    .target("[::1]:443", host: "[::1]:443", method: "CONNECT", nil),
    .target("127.0.0.1:8443", host: "127.0.0.1:8443", method: "CONNECT", nil),
    .target("example.com:443", host: "other.example:443", method: "CONNECT", .hostMismatch),
    .target("example.com:443", host: "example.com", method: "CONNECT", .hostMismatch),
    .target("example.com", host: "example.com", method: "CONNECT", .invalidTarget),
    .target("example.com:", host: "example.com", method: "CONNECT", .invalidTarget),
    .target("example.com:65536", host: "example.com", method: "CONNECT", .invalidTarget),
    .target(":443", host: "example.com", method: "CONNECT", .invalidTarget),
    .target("/", host: "example.com", method: "CONNECT", .invalidTarget),
    .target("*", host: "example.com", method: "CONNECT", .invalidTarget),
    .target("http://example.com:80/", host: "example.com:80", method: "CONNECT", .invalidTarget),
    .target("user@example.com:443", host: "example.com:443", method: "CONNECT", .targetWithUserinfo),
    .target("example.com:443", host: "", method: "CONNECT", .emptyHost),
    // Fragments: refused in every form.
    .target("/a#b", host: "x", .fragmentInTarget),
    .target("/#", host: "x", .fragmentInTarget),
    .target("/a?q#f", host: "x", .fragmentInTarget),
    .target("http://example.com/#x", host: "example.com", .fragmentInTarget),
    .target("http://example.com#x", host: "example.com", .fragmentInTarget),
    .target("*#", host: "x", method: "OPTIONS", .fragmentInTarget),
    .target("/a%23b", host: "x", nil),  // an escaped # is data
    // Origin-form: its bytes are checked as visible ASCII, not as RFC 3986's pchar.
    .target("//example.com/a", host: "x", nil),
    .target("/a{b}|c", host: "x", nil),
]

@Suite("HTTPRequestParser: request targets")
struct HTTPTargetTests {
    @Test("Each target form with its method and its Host, cut at every byte", arguments: targetCases)
    func forms(_ conformance: Conformance) {
        checkConformance(conformance)
    }

    @Test("HTTP/1.0 requests: an absolute-form target needs no Host, and a Host must agree")
    func http10() {
        checkConformance(Conformance("GET http://example.com/ HTTP/1.0\r\n\r\n", nil))
        checkConformance(Conformance("GET http://example.com/ HTTP/1.0\r\nHost: example.com\r\n\r\n", nil))
        checkConformance(Conformance("GET http://example.com/ HTTP/1.0\r\nHost: other\r\n\r\n", .hostMismatch))
        checkConformance(Conformance("GET http://user@example.com/ HTTP/1.0\r\n\r\n", .targetWithUserinfo))
        checkConformance(Conformance("GET * HTTP/1.0\r\n\r\n", .invalidTarget))
    }
}

// MARK: - Versions

@Suite("HTTPRequestParser: versions")
struct HTTPVersionTests {
    @Test("HTTP/1.2 to HTTP/1.9 are handled as HTTP/1.1 and answered as HTTP/1.1", arguments: 2...9)
    func higherMinor(_ minor: Int) throws {
        let text = "GET / HTTP/1.\(minor)\r\nHost: x\r\n\r\n"
        let outcome = parseEveryWay(text)
        #expect(outcome.error == nil)
        let request = try #require(outcome.requests.first)
        #expect(request.version == .http1_1)
        #expect(request.keepAlive, "kept alive as HTTP/1.1 is")
        // The rules of HTTP/1.1: a Host is required, chunked bodies and 100-continue work.
        #expect(parseEveryWay("GET / HTTP/1.\(minor)\r\n\r\n").error == .missingHost)
        let chunked = parseEveryWay(
            "POST / HTTP/1.\(minor)\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n0\r\n\r\n"
        )
        #expect(chunked.requests.first?.bodyText == "abc")
        #expect(chunked.requests.first?.expectsContinue == true)
        // The response's status line is HTTP/1.1's.
        var parser = HTTPRequestParser()
        parser.append(rope(text))
        let head = try #require(try parser.nextHead())
        let writer = HTTPResponseWriter(serverName: "test", date: .fixed(secondsSince1970: 0))
        let response = writer.serialize(HTTPResponse(status: .ok), for: head)
        #expect(String(decoding: response, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test("Other major versions are 505; malformed versions are 400")
    func otherVersions() {
        for version in ["HTTP/2.0", "HTTP/2.1", "HTTP/3.0", "HTTP/9.9", "HTTP/0.9", "HTTP/0.0"] {
            #expect(parseEveryWay("GET / \(version)\r\nHost: x\r\n\r\n").error == .versionNotSupported, "\(version)")
        }
        for version in ["HTTP/1.10", "HTTP/1", "HTTP/1.", "HTTP/1.a", "HTTP/11.1", "HTTP/1.1.1", "http/1.2"] {
            #expect(parseEveryWay("GET / \(version)\r\nHost: x\r\n\r\n").error == .badRequest, "\(version)")
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingWhitespace: String {
        let utf8 = self.utf8
        let isWhitespace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let start = utf8.firstIndex(where: { !isWhitespace($0) }) else { return "" }
        let end = utf8.lastIndex(where: { !isWhitespace($0) })!
        return String(self[start...end])
    }
}
