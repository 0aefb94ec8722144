//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The byte classes of the HTTP/1.1 grammar (RFC 9110 §5.6, RFC 9112), as branch-light
/// functions with no table to load.
enum _Syntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B
    static let equals: UInt8 = 0x3D
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let hash: UInt8 = 0x23
    static let slash: UInt8 = 0x2F
    static let question: UInt8 = 0x3F
    static let at: UInt8 = 0x40
    static let percent: UInt8 = 0x25
    static let dot: UInt8 = 0x2E
    static let asterisk: UInt8 = 0x2A
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D

    /// `CRLF CRLF`, the end of a header or trailer section, in static memory.
    static var headEnd: UnsafeRawBufferPointer {
        let pattern: StaticString = "\r\n\r\n"
        return UnsafeRawBufferPointer(start: pattern.utf8Start, count: pattern.utf8CodeUnitCount)
    }

    /// `tchar`: `!#$%&'*+-.^_`|~`, digits and letters. The two masks hold one bit per byte
    /// value below 64 and from 64 to 127.
    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> byte & 1 == 1 }
        if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (byte &- 64) & 1 == 1 }
        return false
    }

    /// A byte of a `reg-name` (RFC 3986 §3.2.2) that needs no more checking: `unreserved`
    /// (letters, digits, `-._~`) and `sub-delims` (`!$&'()*+;=`) — except the comma, which
    /// the `Host` rules treat as a list separator, and the `%` of `pct-encoded`, which needs
    /// its two hex digits checked.
    @inline(__always)
    static func isRegName(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x2BFF_6FD2_0000_0000 as UInt64) >> byte & 1 == 1 }
        if byte < 128 { return (0x47FF_FFFE_87FF_FFFE as UInt64) >> (byte &- 64) & 1 == 1 }
        return false
    }

    /// `unreserved / sub-delims / ":"` (RFC 3986): a byte of `userinfo`, or of an IPvFuture
    /// address after its version.
    @inline(__always)
    static func isUserinfo(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x2FFF_7FD2_0000_0000 as UInt64) >> byte & 1 == 1 }
        if byte < 128 { return (0x47FF_FFFE_87FF_FFFE as UInt64) >> (byte &- 64) & 1 == 1 }
        return false
    }

    /// A byte of a URI scheme after its first letter: `ALPHA / DIGIT / "+" / "-" / "."`
    /// (RFC 3986 §3.1).
    @inline(__always)
    static func isScheme(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x03FF_6800_0000_0000 as UInt64) >> byte & 1 == 1 }
        if byte < 128 { return (0x07FF_FFFE_07FF_FFFE as UInt64) >> (byte &- 64) & 1 == 1 }
        return false
    }

    /// An ASCII letter.
    @inline(__always)
    static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- 0x61 < 26
    }

    /// An ASCII decimal digit.
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- 0x30 < 10
    }

    /// A byte of a field value: `field-vchar` (VCHAR and obs-text), SP or HTAB — anything but
    /// the other control characters and DEL.
    @inline(__always)
    static func isFieldValue(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= space && byte != 0x7F)
    }

    /// A byte of a request target: visible ASCII (no space, no control, no byte ≥ 0x80).
    @inline(__always)
    static func isTarget(_ byte: UInt8) -> Bool {
        byte > space && byte < 0x7F
    }

    /// Optional whitespace (`OWS`): SP or HTAB.
    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == tab
    }

    /// The ASCII lowercase of `byte`; other bytes unchanged.
    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    /// The value of a hexadecimal digit, or `nil`.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte &- 0x30)
        case 0x41...0x46: return Int(byte &- 0x41 &+ 10)
        case 0x61...0x66: return Int(byte &- 0x61 &+ 10)
        default: return nil
        }
    }
}

/// Up to 24 bytes of a name or list element, lowercased and packed into three words, for
/// allocation-free comparison with the few names the parser must recognize.
///
/// Bytes past the 24th only count towards `length`; every key we compare with is shorter, so
/// a longer key never equals one of them.
struct _ShortKey: Equatable {
    var w0: UInt64 = 0
    var w1: UInt64 = 0
    var w2: UInt64 = 0
    var length = 0

    init() {}

    init(_ name: StaticString) {
        self.init()
        name.withUTF8Buffer { bytes in
            for byte in bytes { self.append(byte) }
        }
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        let value = UInt64(_Syntax.lowercased(byte))
        switch self.length {
        case 0..<8: self.w0 |= value << (UInt64(self.length) &* 8)
        case 8..<16: self.w1 |= value << (UInt64(self.length &- 8) &* 8)
        case 16..<24: self.w2 |= value << (UInt64(self.length &- 16) &* 8)
        default: break
        }
        self.length &+= 1
    }

    /// A key that equals no name: used for a list element that is not a single token.
    static let malformed: _ShortKey = {
        var key = _ShortKey()
        key.length = -1
        return key
    }()

    static let contentLength = _ShortKey("content-length")
    static let transferEncoding = _ShortKey("transfer-encoding")
    static let connection = _ShortKey("connection")
    static let expect = _ShortKey("expect")
    static let host = _ShortKey("host")
    static let server = _ShortKey("server")
    static let date = _ShortKey("date")
    static let chunked = _ShortKey("chunked")
    static let close = _ShortKey("close")
    static let keepAlive = _ShortKey("keep-alive")
    static let continue100 = _ShortKey("100-continue")
    static let http = _ShortKey("http")
    static let https = _ShortKey("https")
}

/// Splits a comma-separated list value (`#element`, RFC 9110 §5.6.1) into elements fed
/// byte by byte, trimming OWS around them and skipping empty ones.
struct _ListScanner {
    private var key = _ShortKey()
    /// Whitespace seen after the current element's bytes; another byte after it makes the
    /// element more than one token.
    private var pendingSpace = false
    private var notAToken = false

    init() {}

    /// Feeds one byte; returns the element it completes (at a comma), if any.
    @inline(__always)
    mutating func feed(_ byte: UInt8) -> _ShortKey? {
        if byte == _Syntax.comma {
            return self.finish()
        }
        if _Syntax.isWhitespace(byte) {
            if self.key.length > 0 { self.pendingSpace = true }
            return nil
        }
        if self.pendingSpace { self.notAToken = true }
        self.key.append(byte)
        return nil
    }

    /// Ends the current element; returns it unless it is empty.
    mutating func finish() -> _ShortKey? {
        defer { self = _ListScanner() }
        if self.key.length == 0 { return nil }
        return self.notAToken ? .malformed : self.key
    }
}
