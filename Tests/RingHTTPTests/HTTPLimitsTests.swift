//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: every limit at its boundary — exactly at the limit passes, one
// byte over fails, and fails before the whole over-long input has arrived.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

/// Feeds `input` one byte at a time and returns the outcome and how many bytes had been
/// appended when the parser threw (or `nil`).
func feedByteByByte(
    _ input: [UInt8],
    limits: HTTPRequestParser.Limits
) -> (requests: Int, error: HTTPParseError?, failedAfter: Int?) {
    var parser = HTTPRequestParser(limits: limits)
    var requests = 0
    for (index, byte) in input.enumerated() {
        parser.append(rope([byte]))
        do {
            while try parser.next() != nil { requests += 1 }
        } catch {
            return (requests, error, index + 1)
        }
    }
    return (requests, nil, nil)
}

@Suite("HTTPRequestParser: limits")
struct HTTPLimitsTests {
    /// A request whose request line is exactly `length` bytes.
    static func request(lineLength length: Int) -> String {
        let fixed = "GET / HTTP/1.1".utf8.count
        let target = "/" + String(repeating: "a", count: length - fixed)
        return "GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n"
    }

    /// A request whose header section (field lines, CRLFs and the final CRLF) is exactly
    /// `length` bytes.
    static func request(sectionLength length: Int) -> (text: String, fieldsStart: Int) {
        let line = "GET / HTTP/1.1\r\n"
        // "Host: x\r\n" + "X: " + filler + "\r\n" + "\r\n"
        let filler = String(repeating: "v", count: length - 9 - 3 - 2 - 2)
        return (line + "Host: x\r\nX: \(filler)\r\n\r\n", line.utf8.count)
    }

    @Test("Request line: 8 KiB passes, 8 KiB + 1 is 414 once 8 KiB + 2 bytes have arrived")
    func requestLineDefault() throws {
        let limit = 8 * 1024
        let fits = bytes(Self.request(lineLength: limit))
        #expect(feedByteByByte(fits, limits: .init()).requests == 1)
        #expect(parse([rope(fits)]).requests.count == 1)

        let over = bytes(Self.request(lineLength: limit + 1))
        let result = feedByteByByte(over, limits: .init())
        #expect(result.error == .uriTooLong)
        #expect(result.failedAfter == limit + 2, "decided before the line's CRLF arrived")
        #expect(parse([rope(over)]).error == .uriTooLong)

        // Garbage without any line end: refused after limit + 2 bytes, however much follows.
        let noLineEnd = [UInt8](repeating: UInt8(ascii: "A"), count: 100_000)
        #expect(feedByteByByte(noLineEnd, limits: .init()).failedAfter == limit + 2)
        var parser = HTTPRequestParser()
        parser.append(rope(Array(noLineEnd[..<(limit + 1)])))
        #expect(try parser.next() == nil, "limit + 1 bytes could still be the line and its CR")
        parser.append(rope([UInt8(ascii: "A")]))
        #expect(throws: HTTPParseError.uriTooLong) { try parser.next() }
    }

    @Test("Request line at small limits, cut at every byte", arguments: [14, 20, 33])
    func requestLineSmall(limit: Int) {
        let limits = HTTPRequestParser.Limits(maxRequestLineLength: limit)
        #expect(parseEveryWay(Self.request(lineLength: limit), limits: limits).requests.count == 1)
        #expect(parseEveryWay(Self.request(lineLength: limit + 1), limits: limits).error == .uriTooLong)
    }

    @Test("Header section: 16 KiB passes, 16 KiB + 1 is 431 before its end arrives")
    func headerSectionDefault() {
        let limit = 16 * 1024
        let (fits, _) = Self.request(sectionLength: limit)
        #expect(feedByteByByte(bytes(fits), limits: .init()).requests == 1)

        let (over, fieldsStart) = Self.request(sectionLength: limit + 1)
        let result = feedByteByByte(bytes(over), limits: .init())
        #expect(result.error == .headersTooLarge)
        #expect(result.failedAfter == fieldsStart + limit)
        #expect(result.failedAfter! < over.utf8.count)
        #expect(parse([rope(over)]).error == .headersTooLarge)

        // An endless header section is refused at the limit.
        var endless = bytes("GET / HTTP/1.1\r\n")
        while endless.count < 100_000 { endless += bytes("X-Filler: 0123456789\r\n") }
        #expect(feedByteByByte(endless, limits: .init()).failedAfter == fieldsStart + limit)
    }

    @Test("Header section at small limits, cut at every byte", arguments: [16, 17, 40])
    func headerSectionSmall(limit: Int) {
        let limits = HTTPRequestParser.Limits(maxHeaderSectionLength: limit)
        #expect(parseEveryWay(Self.request(sectionLength: limit).text, limits: limits).requests.count == 1)
        #expect(parseEveryWay(Self.request(sectionLength: limit + 1).text, limits: limits).error == .headersTooLarge)
    }

    @Test("The smallest header section: no fields, just CRLF")
    func smallestSection() {
        let limits = HTTPRequestParser.Limits(maxHeaderSectionLength: 2)
        #expect(parseEveryWay("GET / HTTP/1.0\r\n\r\n", limits: limits).requests.count == 1)
        #expect(parseEveryWay("GET / HTTP/1.0\r\nA:\r\n\r\n", limits: limits).error == .headersTooLarge)
    }

    @Test("Content-Length body: the limit passes; one over is 413 before any body byte")
    func contentLengthBody() throws {
        let limit = 1024 * 1024
        let body = [UInt8](repeating: 0x42, count: limit)
        var parser = HTTPRequestParser()
        parser.append(rope("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(limit)\r\n\r\n"))
        #expect(try parser.next() == nil)
        parser.append(rope(body))
        #expect(try parser.next()?.body.count == limit)

        var refused = HTTPRequestParser()
        refused.append(rope("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(limit + 1)\r\n\r\n"))
        #expect(throws: HTTPParseError.bodyTooLarge) { try refused.next() }

        let small = HTTPRequestParser.Limits(maxBodyLength: 5)
        #expect(
            parseEveryWay("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde", limits: small).requests.count
                == 1
        )
        #expect(
            parseEveryWay("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabcdef", limits: small).error
                == .bodyTooLarge
        )
        let zero = HTTPRequestParser.Limits(maxBodyLength: 0)
        #expect(
            parseEveryWay("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", limits: zero).requests.count == 1
        )
        #expect(
            parseEveryWay("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz", limits: zero).error
                == .bodyTooLarge
        )
    }

    @Test("Chunked body: the limit passes; the chunk-size line going over is 413 before its data")
    func chunkedBody() {
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        let limits = HTTPRequestParser.Limits(maxBodyLength: 10)
        let fits = head + "4\r\nabcd\r\n6\r\nefghij\r\n0\r\n\r\n"
        #expect(parseEveryWay(fits, limits: limits).requests.first?.body.count == 10)
        let over = head + "4\r\nabcd\r\n7\r\nefghijk\r\n0\r\n\r\n"
        #expect(parseEveryWay(over, limits: limits).error == .bodyTooLarge)
        let result = feedByteByByte(bytes(over), limits: limits)
        #expect(result.failedAfter == (head + "4\r\nabcd\r\n7\r\n").utf8.count)
    }

    @Test("Chunk-size line: the limit passes, one over is 400 before its line end")
    func chunkLine() {
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        let limits = HTTPRequestParser.Limits(maxChunkLineLength: 10)
        // "3;" + 8 bytes of extension = 10.
        #expect(parseEveryWay(head + "3;abcdefgh\r\nxyz\r\n0\r\n\r\n", limits: limits).requests.count == 1)
        let over = head + "3;abcdefghi\r\nxyz\r\n0\r\n\r\n"
        #expect(parseEveryWay(over, limits: limits).error == .badRequest)
        #expect(feedByteByByte(bytes(over), limits: limits).failedAfter == head.utf8.count + 12)
    }

    @Test("Trailer section: the limit passes, one over is 431 before its end")
    func trailerSection() {
        // The request's own header section is 9 + 28 + 2 = 39 bytes, under the limit.
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n"
        let limits = HTTPRequestParser.Limits(maxHeaderSectionLength: 64)
        // Trailer field lines with their CRLFs, plus the final CRLF: 3 + n + 2 + 2.
        let fits = head + "T: " + String(repeating: "t", count: 64 - 7) + "\r\n\r\n"
        #expect(parseEveryWay(fits, limits: limits).requests.count == 1)
        let over = head + "T: " + String(repeating: "t", count: 64 - 6) + "\r\n\r\n"
        #expect(parseEveryWay(over, limits: limits).error == .headersTooLarge)
        #expect(feedByteByByte(bytes(over), limits: limits).failedAfter == head.utf8.count + 64)
    }

    @Test("After next() returns nil, the parser holds at most about one head")
    func boundedBuffering() throws {
        let limits = HTTPRequestParser.Limits(maxRequestLineLength: 64, maxHeaderSectionLength: 128)
        var parser = HTTPRequestParser(limits: limits)
        parser.append(rope("GET / HTTP/1.1\r\n"))
        for _ in 0..<7 {
            parser.append(rope("X-Filler: 0123\r\n"))  // 16 bytes a line: 112 in all
            #expect(try parser.next() == nil)
            #expect(parser.bufferedByteCount <= 64 + 2 + 128)
        }
        parser.append(rope("X-Filler: 0123\r\n"))  // 128 bytes, no end: over
        #expect(throws: HTTPParseError.headersTooLarge) { try parser.next() }
        #expect(parser.bufferedByteCount == 0)
    }
}
