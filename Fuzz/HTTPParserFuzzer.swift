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
//                 middle; bit 3: also re-parse a canonical form of each request)
//     byte 2      the number of cuts k (0...15)
//     2k bytes    the cut offsets (little-endian UInt16, modulo the data length + 1)
//     the rest    the data
//
// Each input is parsed three ways: as one rope in one append; in pieces cut at the cuts, one
// append each, taking requests out after every append as a server does; and as one rope
// whose regions are those pieces. All three must give the same requests (method, target,
// version, fields, body, keep-alive, 100-continue, framing), the same error and the same
// final phase. On the way, it checks that no body is longer than the limit, that a parser
// waiting for more bytes never holds more than about one head, that heads handed out by
// nextHead() are those of the requests that follow, and the helpers on each request
// (header lookups, paths and their normalization, the response writer).
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
        self.data = Array(bytes[dataStart...])
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
    return 0
}
