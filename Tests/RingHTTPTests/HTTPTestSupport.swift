//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: shared helpers (ropes cut every way, parse outcomes, snapshots).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

// MARK: - Building ropes

/// The bytes of `text`, which may contain `\r\n` and any other character.
func bytes(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

/// One region holding `bytes`.
func rope(_ bytes: [UInt8]) -> ByteRope {
    ByteRope(copying: bytes)
}

/// One region holding the UTF-8 of `text`.
func rope(_ text: String) -> ByteRope {
    ByteRope(copying: text.utf8)
}

/// A rope whose regions are `pieces`, in order (empty pieces are skipped).
func rope(regions pieces: [[UInt8]]) -> ByteRope {
    var result = ByteRope()
    for piece in pieces where !piece.isEmpty { result.append(ByteRope(copying: piece)) }
    return result
}

/// `bytes` cut into pieces of `size` bytes (the last may be shorter).
func pieces(of bytes: [UInt8], size: Int) -> [[UInt8]] {
    stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

// MARK: - Snapshots and outcomes

/// Everything observable about a parsed request, comparable across ways of feeding it.
struct RequestSnapshot: Equatable, CustomStringConvertible {
    var method: HTTPMethod
    var target: String
    var version: HTTPVersion
    var headers: [[String]]
    var body: [UInt8]
    var keepAlive: Bool
    var expectsContinue: Bool
    var contentLength: Int?
    var isChunked: Bool

    init(_ request: HTTPRequest) {
        self.method = request.head.method
        self.target = request.head.target
        self.version = request.head.version
        self.headers = request.head.headers.map { [$0.name, $0.value] }
        self.body = Array(request.body)
        self.keepAlive = request.head.keepAlive
        self.expectsContinue = request.head.expectsContinue
        self.contentLength = request.head.contentLength
        self.isChunked = request.head.isChunked
    }

    var bodyText: String { String(decoding: self.body, as: UTF8.self) }

    var description: String {
        "\(self.method) \(self.target) \(self.version) \(self.headers) body=\(self.bodyText.debugDescription)"
            + " keepAlive=\(self.keepAlive) continue=\(self.expectsContinue)"
    }
}

/// What a parser made of some input: the requests it returned, the error it threw (if
/// any), and where it was left.
struct Outcome: Equatable, CustomStringConvertible {
    var requests: [RequestSnapshot] = []
    var error: HTTPParseError?
    var phase: HTTPRequestParser.Phase = .idle
    var buffered = 0

    var description: String {
        "\(self.requests.count) request(s) \(self.requests), error \(self.error.map { "\($0)" } ?? "none"), "
            + "phase \(self.phase), buffered \(self.buffered)"
    }
}

/// Appends each rope in turn, taking out every complete request after each append, as a
/// server does.
func parse(_ ropes: [ByteRope], limits: HTTPRequestParser.Limits = .init()) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = Outcome()
    for piece in ropes {
        parser.append(piece)
        do {
            while let request = try parser.next() {
                outcome.requests.append(RequestSnapshot(request))
            }
        } catch {
            outcome.error = error
            #expect(parser.failure == error)
            #expect(parser.failureReason != nil)
            break
        }
    }
    outcome.phase = parser.phase
    outcome.buffered = parser.bufferedByteCount
    return outcome
}

/// Parses `input` fed in every way the tests know — whole; in two ropes cut at every byte;
/// as one rope of two regions cut at every byte; as one rope of 1-byte regions; as 1-byte
/// ropes — checks that every way gives the same outcome, and returns it.
@discardableResult
func parseEveryWay(
    _ input: [UInt8],
    limits: HTTPRequestParser.Limits = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) -> Outcome {
    let whole = parse([rope(input)], limits: limits)
    var ways: [(String, [ByteRope])] = []
    for cut in 0...input.count {
        let head = Array(input[..<cut])
        let tail = Array(input[cut...])
        ways.append(("two ropes cut at \(cut)", [rope(head), rope(tail)]))
        ways.append(("one rope of two regions cut at \(cut)", [rope(regions: [head, tail])]))
    }
    ways.append(("one rope of 1-byte regions", [rope(regions: pieces(of: input, size: 1))]))
    ways.append(("1-byte ropes", pieces(of: input, size: 1).map(rope)))
    ways.append(("3-byte ropes", pieces(of: input, size: 3).map(rope)))
    for (name, ropes) in ways {
        let outcome = parse(ropes, limits: limits)
        #expect(outcome == whole, "fed as \(name)", sourceLocation: sourceLocation)
        if outcome != whole { break }  // one report per input is enough
    }
    return whole
}

/// `parseEveryWay` for text.
@discardableResult
func parseEveryWay(
    _ text: String,
    limits: HTTPRequestParser.Limits = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) -> Outcome {
    parseEveryWay(bytes(text), limits: limits, sourceLocation: sourceLocation)
}

/// The error parsing `text` in one rope gives, or `nil`.
func parseError(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> HTTPParseError? {
    parse([rope(text)], limits: limits).error
}

// MARK: - Memory identity

/// The base addresses of the regions of `rope`, in order.
func regionAddresses(_ rope: ByteRope) -> [UnsafeRawPointer] {
    var addresses: [UnsafeRawPointer] = []
    _ = rope.apply { _, bytes in
        addresses.append(bytes.baseAddress!)
        return true
    }
    return addresses
}

/// Whether every byte of `part` lies in the memory of one of the regions of `whole` (so
/// `part` was not copied).
func sharesMemory(_ part: ByteRope, with whole: ByteRope) -> Bool {
    var wholeRanges: [Range<UInt>] = []
    _ = whole.apply { _, bytes in
        let start = UInt(bitPattern: bytes.baseAddress!)
        wholeRanges.append(start..<start + UInt(bytes.count))
        return true
    }
    return part.apply { _, bytes in
        let start = UInt(bitPattern: bytes.baseAddress!)
        let range = start..<start + UInt(bytes.count)
        return wholeRanges.contains { $0.contains(range.lowerBound) && range.upperBound <= $0.upperBound }
    }
}
