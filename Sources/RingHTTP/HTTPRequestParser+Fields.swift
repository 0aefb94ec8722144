//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// What the parser needs from a header section, gathered in one validating pass over its
/// bytes — region by region, with no copy and no allocation.
struct _FieldSummary {
    var fieldCount = 0
    var hostCount = 0
    /// The first `Host` field's value, checked as `uri-host [ ":" port ]`.
    var host = _AuthorityScanner.Verdict.empty
    /// The agreed value of every `Content-Length` element, saturated at 2⁵⁰.
    var contentLength: Int?
    var sawTransferEncoding = false
    /// Transfer codings listed, in all `Transfer-Encoding` fields together.
    var codingCount = 0
    var chunkedCount = 0
    var lastCodingIsChunked = false
    var connectionClose = false
    var connectionKeepAlive = false
    var expectsContinue = false

    /// The fields whose values the parser reads.
    private enum Kind {
        case other
        case contentLength
        case transferEncoding
        case connection
        case expect
        case host

        init(_ name: _ShortKey) {
            switch name.length {
            case 4 where name == .host: self = .host
            case 6 where name == .expect: self = .expect
            case 10 where name == .connection: self = .connection
            case 14 where name == .contentLength: self = .contentLength
            case 17 where name == .transferEncoding: self = .transferEncoding
            default: self = .other
            }
        }
    }

    /// Validates field lines (`field-name ":" OWS field-value OWS CRLF`, RFC 9112 §5), each
    /// ending with CRLF, read from `bytes` to their end; with `recognizing`, reads the
    /// framing fields.
    ///
    /// Each part of a line (the name, the value) is read by a loop of its own, so that a byte
    /// costs the checks of its part only.
    ///
    /// - Throws: 400 for a byte that is not allowed where it is: whitespace at the start of
    ///   a line (obs-fold), before the colon, an empty or invalid name, a control character
    ///   in a value, a bare CR or LF; and for a malformed or conflicting `Content-Length`. A
    ///   `Host` value's verdict is recorded, for the caller to judge with the target.
    static func scan<Bytes: IteratorProtocol<UInt8>>(
        _ bytes: inout Bytes,
        recognizing: Bool
    ) throws(_ParseFailure) -> _FieldSummary {
        var summary = _FieldSummary()
        var list = _ListScanner()
        var number = _DecimalListScanner()
        var cutShort = false
        while let first = bytes.next() {
            // The line's first byte: a name's.
            guard _Syntax.isToken(first) else {
                if _Syntax.isWhitespace(first) {
                    throw _ParseFailure(.badRequest, "obs-fold or whitespace at the start of a field line")
                }
                throw _ParseFailure(.badRequest, "empty or invalid field name")
            }
            // The rest of the name, up to the colon.
            var name = _ShortKey()
            name.append(first)
            var afterName: UInt8?
            while let byte = bytes.next() {
                guard _Syntax.isToken(byte) else {
                    afterName = byte
                    break
                }
                name.append(byte)
            }
            guard let afterName else {
                cutShort = true
                break
            }
            guard afterName == _Syntax.colon else {
                if _Syntax.isWhitespace(afterName) {
                    throw _ParseFailure(.badRequest, "whitespace between a field name and its colon")
                }
                throw _ParseFailure(.badRequest, "invalid byte in a field name")
            }
            let kind = recognizing ? Kind(name) : .other
            // The value, up to the CR.
            var sawCR = false
            if kind == .host {
                // Checked as it is read; the bytes of a reg-name, most of a usual value, cost
                // no more than the checks every value has.
                var host = _AuthorityScanner()
                while let byte = bytes.next() {
                    if host.isInRegName && _Syntax.isRegName(byte) { continue }
                    if byte == _Syntax.cr {
                        sawCR = true
                        break
                    }
                    guard _Syntax.isFieldValue(byte) else { throw Self.invalidValueByte(byte) }
                    host.feed(byte)
                }
                if summary.hostCount == 0 { summary.host = host.finish() }
            } else {
                while let byte = bytes.next() {
                    if byte == _Syntax.cr {
                        sawCR = true
                        break
                    }
                    guard _Syntax.isFieldValue(byte) else { throw Self.invalidValueByte(byte) }
                    switch kind {
                    case .other, .host:
                        break
                    case .contentLength:
                        try number.feed(byte)
                    case .transferEncoding, .connection, .expect:
                        if let element = list.feed(byte) { summary.take(element, of: kind) }
                    }
                }
            }
            guard sawCR else {
                cutShort = true
                break
            }
            // The LF after it.
            guard let lineFeed = bytes.next() else {
                cutShort = true
                break
            }
            guard lineFeed == _Syntax.lf else {
                throw _ParseFailure(.badRequest, "bare CR in a field line")
            }
            switch kind {
            case .other:
                break
            case .host:
                summary.hostCount &+= 1
            case .contentLength:
                try number.finish(into: &summary.contentLength)
            case .transferEncoding, .connection, .expect:
                if kind == .transferEncoding { summary.sawTransferEncoding = true }
                if let element = list.finish() { summary.take(element, of: kind) }
            }
            summary.fieldCount &+= 1
        }
        // The caller passes whole lines: the parser found their CRLF CRLF end.
        assert(!cutShort, "field lines cut short")
        return summary
    }

    /// The error for a byte that may not be in a field value: a bare LF or another control
    /// character.
    private static func invalidValueByte(_ byte: UInt8) -> _ParseFailure {
        if byte == _Syntax.lf {
            return _ParseFailure(.badRequest, "field line ends with a bare LF")
        }
        return _ParseFailure(.badRequest, "control character in a field value")
    }

    /// Records one element of a `Transfer-Encoding`, `Connection` or `Expect` list.
    private mutating func take(_ element: _ShortKey, of kind: Kind) {
        switch kind {
        case .transferEncoding:
            self.codingCount &+= 1
            self.lastCodingIsChunked = element == .chunked
            if self.lastCodingIsChunked { self.chunkedCount &+= 1 }
        case .connection:
            if element == .close { self.connectionClose = true }
            if element == .keepAlive { self.connectionKeepAlive = true }
        case .expect:
            if element == .continue100 { self.expectsContinue = true }
        case .other, .host, .contentLength:
            break
        }
    }
}

/// Reads a `Content-Length` value: `1*DIGIT`, or a list of them (`42, 42`, as some
/// intermediaries send) that must all be equal.
struct _DecimalListScanner {
    private enum State {
        case beforeDigits
        case digits
        case afterDigits
    }

    private var state = State.beforeDigits
    private var value = 0
    private var first: Int?

    /// Values are saturated here: beyond any body limit (≤ 2⁴⁰), and no overflow.
    private static let saturation = 1 << 50

    init() {}

    @inline(__always)
    mutating func feed(_ byte: UInt8) throws(_ParseFailure) {
        switch byte {
        case 0x30...0x39:
            guard self.state != .afterDigits else {
                throw _ParseFailure(.badRequest, "malformed Content-Length")
            }
            self.value = Swift.min(self.value &* 10 &+ Int(byte &- 0x30), Self.saturation)
            self.state = .digits
        case _Syntax.space, _Syntax.tab:
            if self.state == .digits { self.state = .afterDigits }
        case _Syntax.comma:
            try self.endElement()
        default:
            throw _ParseFailure(.badRequest, "malformed Content-Length")
        }
    }

    private mutating func endElement() throws(_ParseFailure) {
        guard self.state != .beforeDigits else {
            throw _ParseFailure(.badRequest, "malformed Content-Length")
        }
        if let first = self.first, first != self.value {
            throw _ParseFailure(.badRequest, "conflicting Content-Length values")
        }
        self.first = self.value
        self.value = 0
        self.state = .beforeDigits
    }

    /// Ends a field value; checks its last element and agrees it with `agreed`, the value
    /// of earlier `Content-Length` fields.
    mutating func finish(into agreed: inout Int?) throws(_ParseFailure) {
        try self.endElement()
        if let earlier = agreed, earlier != self.first {
            throw _ParseFailure(.badRequest, "conflicting Content-Length values")
        }
        agreed = self.first
        self = _DecimalListScanner()
    }
}
