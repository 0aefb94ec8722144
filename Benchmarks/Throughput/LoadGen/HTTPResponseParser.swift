//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: an incremental HTTP/1.1 response parser for the load generator.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Reads HTTP/1.1 responses from a byte stream that may be cut anywhere, one connection's worth
/// of state in a few words (it lives inside ``Connection``; nothing is allocated or buffered).
///
/// What it accepts, and checks:
///
///     HTTP/1.1 200<SP or CR>...<LF>       the status line must start so
///     Name: value<CR><LF>                 any headers; Content-Length (any case) is required
///     <CR><LF>
///     body                                exactly Content-Length bytes, compared with the
///                                         expected body when there is one
///
/// Chunked bodies are not supported: a response without Content-Length fails.
struct HTTPResponseParser {
    /// Why a response was refused, and where: `position` indexes the chunk given to ``parse(_:expectedBody:)``.
    struct Failure: Error {
        var position: Int
        var reason: String
    }

    private enum Phase: UInt8 {
        /// Matching "HTTP/1.1 200"; `matched` bytes so far.
        case statusCode
        /// The byte after the code: a space or CR.
        case statusCodeEnd
        /// Skipping to the end of the line.
        case skipLine
        /// At the start of a header line, or of the blank line that ends the headers.
        case lineStart
        /// Matching "content-length"; `matched` bytes so far.
        case headerName
        /// Reading Content-Length's digits.
        case contentLengthValue
        /// After the CR of the blank line.
        case headersEnd
        /// `bodyRemaining` bytes still to come.
        case body
    }

    private static let status: StaticString = "HTTP/1.1 200"
    private static let contentLength: StaticString = "content-length"
    /// Status line plus headers longer than this fail (a server that never ends its headers).
    private static let headLimit = 16_384

    private var phase = Phase.statusCode
    private var matched = 0
    private var headBytes = 0
    /// The Content-Length seen so far in this response, or -1.
    private var length = -1
    private var value = 0
    private var digits = 0
    private var bodyRemaining = 0
    private var bodyOffset = 0

    /// Parses `bytes`, the next bytes of the connection, and returns how many responses they
    /// completed.
    ///
    /// - Parameters:
    ///   - bytes: Any number of bytes: part of a response, several responses, or both.
    ///   - expectedBody: What every body must be, or `nil` to accept any body.
    /// - Throws: ``Failure`` at the first byte that breaks the rules above.
    /// - Complexity: O(`bytes.count`); bodies are compared with `memcmp`, headers byte by byte.
    mutating func parse(
        _ bytes: UnsafeRawBufferPointer,
        expectedBody: UnsafeRawBufferPointer?
    ) throws(Failure) -> Int {
        let base = bytes.baseAddress!
        let count = bytes.count
        var completed = 0
        var index = 0
        while index < count {
            switch self.phase {
            case .body:
                let take = min(self.bodyRemaining, count - index)
                if let expectedBody,
                    let difference = Memory.firstDifference(
                        expectedBody.baseAddress! + self.bodyOffset,
                        base + index,
                        count: take
                    )
                {
                    let offset = self.bodyOffset + difference
                    let got = base.load(fromByteOffset: index + difference, as: UInt8.self)
                    let expected = expectedBody.load(fromByteOffset: offset, as: UInt8.self)
                    throw Failure(
                        position: index + difference,
                        reason: "body byte \(offset) is \(got), expected \(expected)"
                    )
                }
                index += take
                self.bodyOffset += take
                self.bodyRemaining -= take
                if self.bodyRemaining == 0 {
                    completed += 1
                    self = HTTPResponseParser()
                }
            case .skipLine:
                let found = Memory.firstIndex(of: UInt8(ascii: "\n"), in: base + index, count: count - index)
                let skipped = found.map { $0 + 1 } ?? count - index
                try self.countHead(skipped, at: index)
                index += skipped
                if found != nil { self.phase = .lineStart }
            default:
                let byte = base.load(fromByteOffset: index, as: UInt8.self)
                try self.countHead(1, at: index)
                if try self.step(byte, at: index, expectedLength: expectedBody?.count) {
                    completed += 1
                    self = HTTPResponseParser()
                }
                index += 1
            }
        }
        return completed
    }

    private mutating func countHead(_ count: Int, at position: Int) throws(Failure) {
        self.headBytes += count
        guard self.headBytes <= Self.headLimit else {
            throw Failure(position: position, reason: "status line and headers longer than \(Self.headLimit) bytes")
        }
    }

    /// One byte of the status line or the headers; `true` when it completed a response (one
    /// with an empty body).
    private mutating func step(_ byte: UInt8, at position: Int, expectedLength: Int?) throws(Failure) -> Bool {
        switch self.phase {
        case .statusCode:
            guard byte == Self.status.utf8Start[self.matched] else {
                throw Failure(
                    position: position,
                    reason: "the status line does not start with \"\(Self.status)\" (byte \(self.matched) is \(byte))"
                )
            }
            self.matched += 1
            if self.matched == Self.status.utf8CodeUnitCount { self.phase = .statusCodeEnd }
        case .statusCodeEnd:
            guard byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\r") else {
                throw Failure(position: position, reason: "the status code is not 200")
            }
            self.phase = .skipLine
        case .lineStart:
            switch byte {
            case UInt8(ascii: "\r"):
                self.phase = .headersEnd
            case UInt8(ascii: "\n"):
                return try self.endHeaders(at: position, expectedLength: expectedLength)
            default:
                self.matched = 0
                self.phase = .headerName
                self.matchName(byte)
            }
        case .headerName:
            self.matchName(byte)
        case .contentLengthValue:
            try self.lengthByte(byte, at: position)
        case .headersEnd:
            guard byte == UInt8(ascii: "\n") else {
                throw Failure(position: position, reason: "CR not followed by LF at the end of the headers")
            }
            return try self.endHeaders(at: position, expectedLength: expectedLength)
        case .skipLine, .body:
            preconditionFailure("handled by parse")
        }
        return false
    }

    /// A byte of a header name: still "content-length", its colon, or some other header.
    private mutating func matchName(_ byte: UInt8) {
        let name = Self.contentLength
        if byte == UInt8(ascii: ":") {
            self.phase = self.matched == name.utf8CodeUnitCount ? .contentLengthValue : .skipLine
            self.value = 0
            self.digits = 0
            return
        }
        let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
        if self.matched < name.utf8CodeUnitCount && lower == name.utf8Start[self.matched] {
            self.matched += 1
        } else {
            // Another header: skip the rest of its line (unless this byte already ended it).
            self.phase = byte == UInt8(ascii: "\n") ? .lineStart : .skipLine
        }
    }

    private mutating func lengthByte(_ byte: UInt8, at position: Int) throws(Failure) {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard self.value < 1 << 40 else { throw Failure(position: position, reason: "Content-Length too large") }
            self.value = self.value * 10 + Int(byte - UInt8(ascii: "0"))
            self.digits += 1
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
            break
        case UInt8(ascii: "\n"):
            guard self.digits > 0 else { throw Failure(position: position, reason: "empty Content-Length") }
            guard self.length < 0 || self.length == self.value else {
                throw Failure(position: position, reason: "two different Content-Length headers")
            }
            self.length = self.value
            self.phase = .lineStart
        default:
            throw Failure(position: position, reason: "malformed Content-Length (byte \(byte))")
        }
    }

    /// The blank line after the headers: `true` when the response is complete already.
    private mutating func endHeaders(at position: Int, expectedLength: Int?) throws(Failure) -> Bool {
        guard self.length >= 0 else {
            throw Failure(
                position: position,
                reason: "a response without Content-Length (chunked bodies are not supported)"
            )
        }
        if let expectedLength, self.length != expectedLength {
            throw Failure(
                position: position,
                reason: "Content-Length is \(self.length), the expected body has \(expectedLength) bytes"
            )
        }
        guard self.length > 0 else { return true }
        self.bodyRemaining = self.length
        self.bodyOffset = 0
        self.phase = .body
        return false
    }
}
