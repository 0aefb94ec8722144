//===----------------------------------------------------------------------===//
// RingIO — HTTPRequestParser libFuzzer target
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//
//
// Built by run-http-fuzzer.sh as its own module on top of ByteRopes and RingHTTP, each
// compiled as a module of its own as in the package, so it sees only their public API.
//
// The input is a small header, then the bytes a client sends:
//
//     byte 0      limits: request line, header section, body and chunk-line limits, each
//                 picked from a few values (some tiny, so that limits are hit often)
//     byte 1      how the split parse is fed (bit 0: call nextHead() too; bits 1-2: each
//                 piece as one region, as 1-byte regions, or as two regions cut in its
//                 middle; bit 3: also re-parse a canonical form of each request); bits 4-5:
//                 the grammar mode (0: the data is what a client sends; 1: the data is a
//                 Host value; 2: the data is a chunk extension)
//     byte 2      the number of cuts k (0...15)
//     2k bytes    the cut offsets (little-endian UInt16, modulo the data length + 1)
//     the rest    the data
//
// In the grammar modes the data (CR and LF removed) is put into a request — `GET /` with
// `Host: <data>`, or a chunked POST whose first chunk-size line is `1;<data>` — and the
// parser's verdict is compared with a reference written here, independently of the parser's
// byte-at-a-time scanners (whole-string splits, as one would check the ABNF by hand): RFC
// 3986's `uri-host [ ":" port ]` with the full IPv6address grammar, and RFC 9112's
// `chunk-ext`.
//
// Each input is parsed three ways: as one rope in one append; in pieces cut at the cuts, one
// append each, taking requests out after every append as a server does; and as one rope
// whose regions are those pieces. All three must give the same requests (method, target,
// version, fields, body, keep-alive, 100-continue, framing), the same error and the same
// final phase. On the way, it checks that no body is longer than the limit, that a parser
// waiting for more bytes never holds more than about one head, that heads handed out by
// nextHead() are those of the requests that follow, the helpers on each request (header
// lookups, paths and their normalization, the response writer), and that every request let
// through keeps the target and Host rules: no fragment, a target in the form its method
// allows, a Host that the reference accepts and that agrees with an absolute-form target.
//
// Any mismatch is a `fatalError`; set HTTP_FUZZ_TRACE=1 to print each input's parse.

import ByteRopes
import RingHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Reporting

private let traceEnabled = getenv("HTTP_FUZZ_TRACE") != nil

private func trace(_ line: @autoclosure () -> String) {
    guard traceEnabled else { return }
    var text = line() + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("HTTP fuzz: \(message())") }
}

// MARK: - Input

private struct FuzzInput {
    var limits: HTTPRequestParser.Limits
    var callNextHead: Bool
    var regionMode: Int
    var reparse: Bool
    var grammar: GrammarMode
    var data: [UInt8]
    var cuts: [Int]

    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count >= 3 else { return nil }
        let selector = Int(bytes[0])
        self.limits = HTTPRequestParser.Limits(
            maxRequestLineLength: [16, 40, 8 * 1024][selector % 3],
            maxHeaderSectionLength: [8, 64, 16 * 1024][selector / 3 % 3],
            maxBodyLength: [0, 5, 64, 1024 * 1024][selector / 9 % 4],
            maxChunkLineLength: [3, 16, 4 * 1024][selector / 36 % 3]
        )
        let flags = bytes[1]
        self.callNextHead = flags & 1 != 0
        self.regionMode = Int(flags >> 1 & 3) % 3
        self.reparse = flags & 8 != 0
        let cutCount = Int(bytes[2] & 15)
        let dataStart = Swift.min(3 + 2 * cutCount, bytes.count)
        let raw = Array(bytes[dataStart...])
        switch flags >> 4 & 3 {
        case 1:
            let value = raw.filter { $0 != 0x0D && $0 != 0x0A }
            self.grammar = .host(value)
            self.data = Array("GET / HTTP/1.1\r\nHost: ".utf8) + value + Array("\r\n\r\n".utf8)
        case 2:
            let extensions = raw.filter { $0 != 0x0D && $0 != 0x0A }
            self.grammar = .chunkExtension(extensions)
            self.data =
                Array("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;".utf8) + extensions
                + Array("\r\na\r\n0\r\n\r\n".utf8)
        default:
            self.grammar = .none
            self.data = raw
        }
        var cuts: [Int] = []
        var index = 3
        while index + 1 < dataStart {
            let raw = Int(bytes[index]) | Int(bytes[index + 1]) << 8
            cuts.append(raw % (self.data.count + 1))
            index += 2
        }
        self.cuts = cuts.sorted()
    }

    /// The data cut at the cuts (empty pieces included: appending nothing must be harmless).
    var pieces: [[UInt8]] {
        var pieces: [[UInt8]] = []
        var start = 0
        for cut in self.cuts + [self.data.count] {
            pieces.append(Array(self.data[start..<cut]))
            start = cut
        }
        return pieces
    }

    /// A rope of `bytes` in the layout `regionMode` asks for.
    func rope(_ bytes: [UInt8]) -> ByteRope {
        switch self.regionMode {
        case 1:
            var rope = ByteRope()
            for byte in bytes { rope.append(ByteRope(copying: [byte])) }
            return rope
        case 2:
            let middle = bytes.count / 2
            return ByteRope(copying: bytes[..<middle]) + ByteRope(copying: bytes[middle...])
        default:
            return ByteRope(copying: bytes)
        }
    }
}

/// What the data is, in the grammar modes: a Host value, or a chunk extension after `;`.
private enum GrammarMode {
    case none
    case host([UInt8])
    case chunkExtension([UInt8])
}

// MARK: - What a parse produced

private struct Snapshot: Equatable, CustomStringConvertible {
    var method: String
    var target: [UInt8]
    var version: HTTPVersion
    var fields: [[UInt8]]
    var body: [UInt8]
    var keepAlive: Bool
    var expectsContinue: Bool
    var contentLength: Int?
    var isChunked: Bool

    init(head: HTTPRequestHead, body: ByteRope) {
        self.method = head.method.rawValue
        self.target = Array(head.targetBytes)
        self.version = head.version
        self.fields = head.headers.flatMap { [Array($0.nameBytes), Array($0.valueBytes)] }
        self.body = Array(body)
        self.keepAlive = head.keepAlive
        self.expectsContinue = head.expectsContinue
        self.contentLength = head.contentLength
        self.isChunked = head.isChunked
    }

    var description: String {
        "\(self.method) \(String(decoding: self.target, as: UTF8.self)) \(self.version) "
            + "\(self.fields.count / 2) fields, body \(self.body.count), keepAlive \(self.keepAlive), "
            + "continue \(self.expectsContinue), length \(self.contentLength.map(String.init) ?? "-"), "
            + "chunked \(self.isChunked)"
    }
}

private struct Outcome: Equatable, CustomStringConvertible {
    var requests: [Snapshot] = []
    var error: HTTPParseError?
    var phase = HTTPRequestParser.Phase.idle

    var description: String {
        "\(self.requests.count) request(s), error \(self.error.map { "\($0)" } ?? "none"), phase \(self.phase)"
    }
}

/// The most a parser waiting for more bytes may hold: a request line and a header section,
/// the rest of a body, or a chunk-size line.
private func bufferBound(_ limits: HTTPRequestParser.Limits) -> Int {
    Swift.max(
        limits.maxRequestLineLength + 2 + limits.maxHeaderSectionLength,
        limits.maxBodyLength,
        limits.maxChunkLineLength + 2
    )
}

/// Appends each rope, taking out requests after each append as a server does; checks the
/// per-request invariants on the way.
private func parse(_ ropes: [ByteRope], _ input: FuzzInput, callNextHead: Bool) -> Outcome {
    var parser = HTTPRequestParser(limits: input.limits)
    var outcome = Outcome()
    var announced: Snapshot?  // the head nextHead() handed out, body not yet known
    for rope in ropes {
        parser.append(rope)
        do {
            while true {
                if let request = try parser.next() {
                    let snapshot = Snapshot(head: request.head, body: request.body)
                    if let announced {
                        check(
                            announced.target == snapshot.target && announced.fields == snapshot.fields
                                && announced.method == snapshot.method,
                            "nextHead() handed out \(announced), next() returned \(snapshot)"
                        )
                    }
                    announced = nil
                    checkRequest(request, input)
                    outcome.requests.append(snapshot)
                    continue
                }
                check(
                    parser.bufferedByteCount < bufferBound(input.limits),
                    "waiting with \(parser.bufferedByteCount) bytes buffered, over \(bufferBound(input.limits))"
                )
                if callNextHead, let head = try parser.nextHead() {
                    check(announced == nil, "nextHead() handed out two heads for one request")
                    check(parser.phase == .body, "a head handed out in phase \(parser.phase)")
                    announced = Snapshot(head: head, body: ByteRope())
                    check(try parser.nextHead() == nil, "nextHead() handed out a head twice")
                }
                break
            }
        } catch {
            check(parser.failure == error && parser.failureReason != nil, "failure not recorded")
            check(parser.bufferedByteCount == 0, "a failed parser holds bytes")
            outcome.error = error
            break
        }
    }
    outcome.phase = parser.phase
    return outcome
}

/// Checks one request against the limits and exercises its helpers.
private func checkRequest(_ request: HTTPRequest, _ input: FuzzInput) {
    let limits = input.limits
    check(request.body.count <= limits.maxBodyLength, "body of \(request.body.count) over \(limits.maxBodyLength)")
    if let length = request.head.contentLength {
        check(request.body.count == length, "body of \(request.body.count), Content-Length \(length)")
        check(!request.head.isChunked, "chunked with a Content-Length")
    }
    check(request.head.targetBytes.count <= limits.maxRequestLineLength, "target over the line limit")
    check(request.head.headers.bytes.count + 2 <= limits.maxHeaderSectionLength, "header section over its limit")
    check(request.head.version == .http1_0 || request.head.version == .http1_1, "version \(request.head.version)")
    check(!(request.head.expectsContinue && request.head.version == .http1_0), "100-continue on HTTP/1.0")

    // Header lookups agree with iteration, on the received fields and on a built copy.
    var count = 0
    let headers = request.head.headers
    var built = HTTPHeaders()
    built.append(contentsOf: headers)
    check(built.count == headers.count && Array(built.bytes) == Array(headers.bytes), "built copy differs")
    for field in headers {
        count += 1
        let name = field.name
        let values = headers.values(name: name)
        check(!values.isEmpty && headers.contains(name: name), "field \(name) not found by name")
        check(headers[name.uppercased()] == values.joined(separator: ", "), "combined values differ")
        let first = headers.firstValueBytes(name: name).map { String(decoding: $0, as: UTF8.self) }
        check(first == values.first, "first value differs")
        check(built.values(name: name) == values && built[name] == headers[name], "built lookups differ")
        check(field.valueBytes.first != 0x20 && field.valueBytes.last != 0x20, "value not trimmed")
    }
    check(count == request.head.headers.count, "iterated \(count) fields of \(request.head.headers.count)")
    _ = request.description

    // Paths: a normalized path never climbs, never holds NUL or a backslash.
    let path = request.head.path
    _ = request.head.query
    if let normalized = HTTPPath.normalized(path) {
        check(normalized.hasPrefix("/"), "normalized \(normalized) is not absolute")
        let segments = normalized.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            check(segment != "." && segment != "..", "normalized \(normalized) has a dot segment")
            check(!segment.isEmpty || index == segments.count - 1, "normalized \(normalized) has an empty segment")
        }
        check(!normalized.utf8.contains(0) && !normalized.contains("\\"), "normalized \(normalized) has NUL or \\")
        // The result is decoded: normalizing it again is the identity only when it holds
        // nothing that decodes or ends the path.
        if !normalized.contains("%") && !normalized.contains("?") {
            check(HTTPPath.normalized(normalized) == normalized, "normalizing \(normalized) again changes it")
        }
    }

    // The writer: a response for this request is a head (one region) and the body as is.
    let writer = HTTPResponseWriter(serverName: "fuzz", date: .fixed(secondsSince1970: 1_000_000_000))
    let response = HTTPResponse(status: .ok, headers: ["X-Target": request.head.target], body: request.body)
    let bytes = writer.serialize(response, for: request.head)
    let headLength = bytes.firstRange(of: "\r\n\r\n".utf8)?.upperBound
    check(headLength != nil, "response head without an end")
    let sent = bytes.count - headLength!
    check(sent == (request.head.method == .head ? 0 : request.body.count), "response body of \(sent) bytes")

    checkTargetAndHost(request.head)
    if input.reparse { reparse(request, limits) }
}

/// Writes a canonical form of `request` (its fields as name: value, the body with a
/// Content-Length or chunked) and checks it parses back to the same request.
private func reparse(_ request: HTTPRequest, _ limits: HTTPRequestParser.Limits) {
    var text: [UInt8] = []
    text += Array(request.head.method.rawValue.utf8) + [0x20] + Array(request.head.targetBytes) + [0x20]
    text += Array(request.head.version.description.utf8) + [0x0D, 0x0A]
    for field in request.head.headers {
        text += Array(field.nameBytes) + Array(": ".utf8) + Array(field.valueBytes) + [0x0D, 0x0A]
    }
    text += [0x0D, 0x0A]
    if request.head.isChunked {
        if !request.body.isEmpty { text += Array(HTTPResponseWriter.chunk(request.body)) }
        text += Array(HTTPResponseWriter.lastChunk)
    } else {
        text += Array(request.body)
    }
    var parser = HTTPRequestParser(
        limits: .init(
            maxRequestLineLength: limits.maxRequestLineLength,
            maxHeaderSectionLength: Swift.max(limits.maxHeaderSectionLength, text.count),
            maxBodyLength: limits.maxBodyLength,
            maxChunkLineLength: 64
        )
    )
    parser.append(ByteRope(copying: text))
    do {
        let again = try parser.next()
        check(again != nil, "the canonical form of \(request) is incomplete")
        let original = Snapshot(head: request.head, body: request.body)
        let reparsed = Snapshot(head: again!.head, body: again!.body)
        check(original == reparsed, "re-parsed \(original) as \(reparsed)")
        check(try parser.next() == nil && parser.phase == .idle, "bytes left after the canonical form")
    } catch {
        check(false, "the canonical form of \(request) fails with \(error): \(parser.failureReason ?? "")")
    }
}

// MARK: - The Host and target rules, by reference

/// The rules every accepted request keeps (RFC 9112 §3.2, RFC 9110 §7.2).
private func checkTargetAndHost(_ head: HTTPRequestHead) {
    let target = Array(head.targetBytes)
    check(!target.contains(UInt8(ascii: "#")), "a target with a fragment got through: \(head)")
    let hosts = head.headers.values(name: "host")
    check(hosts.count <= 1 && (head.version == .http1_0 || hosts.count == 1), "Host count \(hosts.count): \(head)")
    let host = head.headers.firstValueBytes(name: "host").map { Array($0) }
    if let host {
        let verdict = Reference.host(host)
        check(verdict == .valid || verdict == .empty, "Host \(String(decoding: host, as: UTF8.self)) got through")
    }
    // The target's form, and the authority the Host must agree with.
    if head.method == .connect {
        check(Reference.host(target, requirePort: true) == .valid, "CONNECT target \(head.target) got through")
        if let host { check(Reference.agree(host, target, defaultPort: nil), "CONNECT Host disagrees: \(head)") }
    } else if target.first == UInt8(ascii: "/") {
        check(host == nil || Reference.host(host!) == .valid, "an empty Host with an origin-form target: \(head)")
    } else if target == [UInt8(ascii: "*")] {
        check(head.method == .options, "asterisk-form target with \(head.method)")
    } else {
        // absolute-form: scheme ":" hier-part
        guard let colon = target.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            Reference.isAlpha(target[0]),
            target[1..<colon].allSatisfy({ Reference.isAlpha($0) || Reference.isDigit($0) || "+-.".utf8.contains($0) })
        else { return check(false, "target \(head.target) in no form got through") }
        let scheme = String(decoding: target[..<colon], as: UTF8.self).lowercased()
        let rest = target[(colon + 1)...]
        guard rest.starts(with: "//".utf8) else {
            check(scheme != "http" && scheme != "https", "\(scheme) target without an authority got through")
            if let host { check(host.isEmpty, "a Host beside a target without an authority: \(head)") }
            return
        }
        var authority = Array(rest.dropFirst(2).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") })
        if let at = authority.firstIndex(of: UInt8(ascii: "@")) {
            check(scheme != "http" && scheme != "https", "userinfo in an \(scheme) target got through")
            authority = Array(authority[(at + 1)...])
        }
        let verdict = Reference.host(authority)
        check(
            verdict == .valid || (scheme != "http" && scheme != "https" && (verdict == .empty || verdict == .noHost)),
            "the authority of \(head.target) got through"
        )
        if let host {
            let defaultPort = scheme == "http" ? 80 : scheme == "https" ? 443 : nil
            check(Reference.agree(host, authority, defaultPort: defaultPort), "Host disagrees with \(head.target)")
        }
    }
}

/// The grammar mode's check: the parser's verdict on the whole input against the reference.
/// Inputs whose request a tiny limit cuts short first are not judged.
private func checkGrammar(_ grammar: GrammarMode, _ outcome: Outcome, _ limits: HTTPRequestParser.Limits) {
    switch grammar {
    case .none:
        return
    case .host(let value):
        // The header section is "Host: " value CRLF CRLF.
        guard value.count + 10 <= limits.maxHeaderSectionLength else { return }
        let expected = Reference.host(value)
        let description = String(decoding: value, as: UTF8.self).debugDescription
        switch expected {
        case .valid:
            check(outcome.error == nil && outcome.requests.count == 1, "Host \(description) refused: \(outcome)")
        case .controlCharacter:
            check(outcome.error == .badRequest, "Host \(description) with a control character: \(outcome)")
        case .empty, .noHost:
            check(outcome.error == .emptyHost, "Host \(description) without a host: \(outcome)")
        case .invalid:
            let hostErrors: [HTTPParseError] = [
                .hostWithUserinfo, .hostWithPath, .hostList, .hostWithWhitespace, .invalidHostPort, .invalidHost,
            ]
            check(
                outcome.error.map(hostErrors.contains) == true,
                "Host \(description) not refused as a Host: \(outcome)"
            )
        }
    case .chunkExtension(let extensions):
        // The header section (39 bytes) and the chunk-size line ("1;" and the extensions)
        // within their limits.
        guard limits.maxHeaderSectionLength >= 64, extensions.count + 2 <= limits.maxChunkLineLength else { return }
        let description = String(decoding: extensions, as: UTF8.self).debugDescription
        if Reference.chunkExtension(extensions) {
            // The 1-byte body is over a limit of 0.
            let expected: HTTPParseError? = limits.maxBodyLength == 0 ? .bodyTooLarge : nil
            check(outcome.error == expected, "chunk extension \(description): \(outcome)")
        } else {
            check(outcome.error == .invalidChunkExtension, "chunk extension \(description) not refused: \(outcome)")
        }
    }
}

/// The ABNF, checked the slow and obvious way: split, then look at each part.
private enum Reference {
    enum HostVerdict: Equatable {
        case valid, empty, noHost, invalid, controlCharacter
    }

    static func isAlpha(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    static func isHex(_ byte: UInt8) -> Bool { isDigit(byte) || "abcdefABCDEF".utf8.contains(byte) }
    static func isUnreserved(_ byte: UInt8) -> Bool { isAlpha(byte) || isDigit(byte) || "-._~".utf8.contains(byte) }
    static func isSubDelim(_ byte: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(byte) }
    static func isTchar(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }

    /// `Host = uri-host [ ":" port ]`, trimmed of SP and HTAB, a comma not allowed in a
    /// reg-name (a list), the port in 0...65535.
    static func host(_ raw: [UInt8], requirePort: Bool = false) -> HostVerdict {
        if raw.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { return .controlCharacter }
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = raw.firstIndex(where: { !isSpace($0) }) else { return requirePort ? .invalid : .empty }
        let last = raw.lastIndex(where: { !isSpace($0) })!
        let value = Array(raw[first...last])
        var host: ArraySlice<UInt8>
        var port: ArraySlice<UInt8>?
        if value.first == UInt8(ascii: "[") {
            guard let close = value.firstIndex(of: UInt8(ascii: "]")) else { return .invalid }
            host = value[...close]
            let after = value[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return .invalid }
                port = after.dropFirst()
            }
            guard ipLiteral(Array(host.dropFirst().dropLast())) else { return .invalid }
        } else {
            if let colon = value.firstIndex(of: UInt8(ascii: ":")) {
                host = value[..<colon]
                port = value[(colon + 1)...]
            } else {
                host = value[...]
            }
            guard regName(Array(host)) else { return .invalid }
        }
        if let port {
            guard port.allSatisfy(isDigit) else { return .invalid }
            let digits = port.drop { $0 == UInt8(ascii: "0") }
            guard digits.count <= 5, (Int(String(decoding: digits, as: UTF8.self)) ?? 0) <= 65535 else {
                return .invalid
            }
            if requirePort && port.isEmpty { return .invalid }
        } else if requirePort {
            return .invalid
        }
        if host.isEmpty { return requirePort ? .invalid : .noHost }
        return .valid
    }

    /// `reg-name = *( unreserved / pct-encoded / sub-delims )`, without the comma.
    static func regName(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) else { return false }
                index += 3
                continue
            }
            guard isUnreserved(byte) || (isSubDelim(byte) && byte != UInt8(ascii: ",")) else { return false }
            index += 1
        }
        return true
    }

    /// `IPv6address / IPvFuture`, between the brackets.
    static func ipLiteral(_ bytes: [UInt8]) -> Bool {
        if let first = bytes.first, first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
            guard let dot = bytes.firstIndex(of: UInt8(ascii: ".")), dot > 1 else { return false }
            let version = bytes[1..<dot]
            let address = bytes[(dot + 1)...]
            return version.allSatisfy(isHex) && !address.isEmpty
                && address.allSatisfy { isUnreserved($0) || isSubDelim($0) || $0 == UInt8(ascii: ":") }
        }
        return ipv6(bytes)
    }

    /// RFC 3986's IPv6address: split at "::" (at most one), then at ":"; an IPv4address only
    /// as the last piece of all; 8 pieces, or at most 7 beside "::".
    static func ipv6(_ bytes: [UInt8]) -> Bool {
        let colon = UInt8(ascii: ":")
        let double = bytes.indices.dropLast().first { bytes[$0] == colon && bytes[$0 + 1] == colon }
        var halves = [bytes[...]]
        if let double {
            halves = [bytes[..<double], bytes[(double + 2)...]]
            // A second "::" (":::" included: its third colon leaves an empty piece below).
            if halves[1].indices.dropLast().contains(where: { halves[1][$0] == colon && halves[1][$0 + 1] == colon }) {
                return false
            }
        }
        let pieces = halves.map { $0.isEmpty ? [] : $0.split(separator: colon, omittingEmptySubsequences: false) }
        let all = pieces.flatMap { $0 }
        let endsWithDouble = double != nil && pieces[1].isEmpty
        var count = 0
        for (index, piece) in all.enumerated() {
            if index == all.count - 1 && !endsWithDouble && piece.contains(UInt8(ascii: ".")) {
                guard ipv4(Array(piece)) else { return false }
                count += 2
            } else {
                guard (1...4).contains(piece.count), piece.allSatisfy(isHex) else { return false }
                count += 1
            }
        }
        return double != nil ? count <= 7 : count == 8
    }

    /// `dec-octet "." dec-octet "." dec-octet "." dec-octet`.
    static func ipv4(_ bytes: [UInt8]) -> Bool {
        let octets = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy { octet in
                (1...3).contains(octet.count) && octet.allSatisfy(isDigit)
                    && (octet.count == 1 || octet.first != UInt8(ascii: "0"))
                    && Int(String(decoding: octet, as: UTF8.self))! <= 255
            }
    }

    /// Whether two authorities name the same host and port: hosts ASCII case-insensitively,
    /// an empty or default port the same as none.
    static func agree(_ one: [UInt8], _ other: [UInt8], defaultPort: Int?) -> Bool {
        func split(_ authority: [UInt8]) -> (String, Int?) {
            let text = String(decoding: authority, as: UTF8.self).lowercased()
            let hostEnd =
                text.hasPrefix("[")
                ? text.firstIndex(of: "]").map { text.index(after: $0) } ?? text.endIndex
                : text.firstIndex(of: ":") ?? text.endIndex
            let port = text[hostEnd...].dropFirst()
            var value = port.isEmpty ? nil : Int(port.drop { $0 == "0" }) ?? 0
            if value == defaultPort { value = nil }
            return (String(text[..<hostEnd]), value)
        }
        return split(one) == split(other)
    }

    /// `chunk-ext` after its first ";": `BWS name [ BWS "=" BWS ( token / quoted-string ) ]`,
    /// then `*( BWS ";" BWS name … )`, nothing after the last.
    static func chunkExtension(_ bytes: [UInt8]) -> Bool {
        var index = 0
        func skipBWS() { while index < bytes.count && (bytes[index] == 0x20 || bytes[index] == 0x09) { index += 1 } }
        func token() -> Bool {
            let start = index
            while index < bytes.count && isTchar(bytes[index]) { index += 1 }
            return index > start
        }
        func quotedString() -> Bool {
            guard index < bytes.count, bytes[index] == 0x22 else { return false }
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x22 {
                    index += 1
                    return true
                }
                let isText = { (byte: UInt8) in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
                if byte == 0x5C {
                    guard index + 1 < bytes.count, isText(bytes[index + 1]) else { return false }
                    index += 2
                } else {
                    guard isText(byte) else { return false }
                    index += 1
                }
            }
            return false
        }
        while true {
            skipBWS()
            guard token() else { return false }
            let afterName = index
            skipBWS()
            if index < bytes.count && bytes[index] == UInt8(ascii: "=") {
                index += 1
                skipBWS()
                guard token() || quotedString() else { return false }
            } else {
                index = afterName
            }
            if index == bytes.count { return true }
            skipBWS()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else { return false }
            index += 1
        }
    }
}

// MARK: - Entry point

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let input = FuzzInput(UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    trace("input: \(input.data.count) bytes, cuts \(input.cuts), limits \(input.limits)")

    let whole = parse([ByteRope(copying: input.data)], input, callNextHead: false)
    trace("  whole:  \(whole) \(whole.requests)")
    let pieces = input.pieces
    let split = parse(pieces.map(input.rope), input, callNextHead: input.callNextHead)
    trace("  split:  \(split)")
    var regions = ByteRope()
    for piece in pieces { regions.append(input.rope(piece)) }
    let oneRope = parse([regions], input, callNextHead: false)
    trace("  oneRope: \(oneRope)")

    check(split == whole, "fed in \(pieces.count) pieces: \(split), whole: \(whole)")
    check(oneRope == whole, "fed as one rope of \(regions.regionCount) regions: \(oneRope), whole: \(whole)")
    checkGrammar(input.grammar, whole, input.limits)
    return 0
}
