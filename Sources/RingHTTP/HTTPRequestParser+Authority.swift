//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// Checks an authority as HTTP uses it, `uri-host [ ":" port ]` (RFC 9112 §3.2, RFC 9110
/// §4.2.3), fed one byte at a time with no buffer and no allocation: a `Host` field's value
/// (leading and trailing whitespace included), or a request target's authority (its
/// userinfo removed).
///
/// The grammar is RFC 3986's (§3.2.2, §3.2.3):
///
///     uri-host    = IP-literal / IPv4address / reg-name
///     IP-literal  = "[" ( IPv6address / IPvFuture ) "]"
///     IPvFuture   = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
///     reg-name    = *( unreserved / pct-encoded / sub-delims )
///     port        = *DIGIT
///
/// with the whole of `IPv6address`: up to eight `h16` pieces of 1 to 4 hex digits, one `::`
/// standing for one or more zero pieces, and an `IPv4address` as the last two pieces (each
/// `dec-octet` 0...255 without a leading zero). An `IPv4address` is also a `reg-name` (digits
/// and dots), so a dotted host is checked as one: `256.1.1.1` is a well-formed `reg-name` that
/// no resolver will find (RFC 3986 §3.2.2 leaves that to name resolution).
///
/// Two departures, both stricter than RFC 3986: a comma, though one of the `sub-delims`, is a
/// list separator here (two `Host` field lines combined read `a, b`, RFC 9110 §5.3), except
/// inside an IPvFuture literal; and a port must be in 0...65535. An empty port (`host:`) is
/// accepted, as `port = *DIGIT` allows, and is the same as no port (RFC 3986 §6.2.3). A zone
/// identifier (`[fe80::1%25eth0]`, RFC 6874) is not part of RFC 3986's grammar and is refused.
///
/// When a value breaks several rules, ``finish()`` reports the one of highest rank in
/// ``Verdict``, wherever its bytes are: `user:pass@host` carries userinfo, not a bad port.
struct _AuthorityScanner {
    /// What a value is: well-formed, empty, or the highest-ranking rule it breaks.
    enum Verdict: UInt8 {
        /// Well-formed, with a host.
        case valid
        /// Nothing but whitespace.
        case empty
        /// A port without a host, such as `:80`.
        case noHost
        // The broken rules, from the lowest rank to the highest.
        /// Not an IP literal, an IPv4 address or a reg-name (a byte or a structure RFC 3986
        /// does not allow, such as `a_b{`, `%zz`, `[::1`, `[1:2]`).
        case invalidHost
        /// A port with a byte other than a digit, or over 65535.
        case invalidPort
        /// Whitespace between two bytes of the value.
        case whitespace
        /// A `/`, `?` or `#`: a path, a query or a fragment.
        case path
        /// A comma: a list of values.
        case list
        /// An `@`: userinfo.
        case userinfo
    }

    private enum State: UInt8 {
        /// Nothing but whitespace yet.
        case start
        /// In a reg-name (or an IPv4 address).
        case regName
        /// After the `%` of a reg-name's `pct-encoded`; then after its first hex digit.
        case percent1, percent2
        /// After `[`.
        case literalStart
        /// In an IPv6 address, before any dot.
        case ipv6
        /// In the IPv4 address that ends an IPv6 address.
        case ipv4
        /// After `[v`: the version's hex digits, then its dot.
        case futureVersion
        /// After an IPvFuture's dot.
        case futureAddress
        /// After `]`.
        case literalEnd
        /// After the colon before the port.
        case port
        /// Whitespace after bytes of the value: only whitespace may follow.
        case space
        /// A rule of the grammar is broken: only the bytes that break higher-ranking rules
        /// matter now.
        case broken
    }

    private var state = State.start
    /// The state before trailing whitespace, for ``finish()``.
    private var stateBeforeSpace = State.start
    /// The highest-ranking rule broken so far; `.valid` for none.
    private var broken = Verdict.valid
    /// Whether the value has a host (a reg-name byte, `%` or `[` came first).
    private var hasHost = false
    /// Whitespace came after bytes of the value.
    private var pendingSpace = false
    /// The port's value so far, and how many digits it has (saturated at 255).
    private var port: UInt32 = 0
    private var portDigits: UInt8 = 0

    // An IP literal's parts.
    /// Complete `h16` pieces (an IPv4 tail counts as two).
    private var pieces: UInt8 = 0
    /// Hex digits of the current piece (in IPvFuture: bytes of the version, then of the
    /// address, saturated).
    private var digits: UInt8 = 0
    /// Colons just read: 0, 1 or 2 (`::`).
    private var colons: UInt8 = 0
    private var sawDoubleColon = false
    /// The current piece read as decimal (for a first IPv4 octet), and whether it can be one.
    private var pieceValue: UInt16 = 0
    private var pieceIsDecimal = true
    private var pieceLeadingZero = false
    /// The IPv4 tail: complete octets, the current one's digits and value.
    private var octets: UInt8 = 0
    private var octetDigits: UInt8 = 0
    private var octetValue: UInt16 = 0
    private var octetLeadingZero = false

    init() {}

    /// Whether the next byte, if it is a reg-name byte (``_Syntax/isRegName(_:)``), changes
    /// nothing: the hot loop of the field scan skips such bytes without calling ``feed(_:)``.
    @inline(__always)
    var isInRegName: Bool {
        self.state == .regName
    }

    /// Whether the port has at least one digit.
    var hasPortDigits: Bool {
        self.portDigits > 0
    }

    /// Reads the next byte of the value.
    mutating func feed(_ byte: UInt8) {
        // Bytes that break a rule wherever they are.
        switch byte {
        case _Syntax.at:
            return self.note(.userinfo)
        case _Syntax.slash, _Syntax.question, _Syntax.hash:
            return self.note(.path)
        case _Syntax.comma where self.state != .futureAddress:
            return self.note(.list)
        case _Syntax.space, _Syntax.tab:
            guard self.state != .start else { return }  // leading whitespace
            self.pendingSpace = true
            if self.state != .space && self.state != .broken {
                self.stateBeforeSpace = self.state
                self.state = .space
            }
            return
        default:
            break
        }
        if self.pendingSpace {
            self.note(.whitespace)
            self.state = .broken
            return
        }
        switch self.state {
        case .start:
            if _Syntax.isRegName(byte) {
                self.hasHost = true
                self.state = .regName
            } else if byte == _Syntax.percent {
                self.hasHost = true
                self.state = .percent1
            } else if byte == _Syntax.openBracket {
                self.hasHost = true
                self.state = .literalStart
            } else if byte == _Syntax.colon {
                self.state = .port
            } else {
                self.breakHost()
            }
        case .regName:
            if _Syntax.isRegName(byte) { return }
            if byte == _Syntax.percent {
                self.state = .percent1
            } else if byte == _Syntax.colon {
                self.state = .port
            } else {
                self.breakHost()
            }
        case .percent1:
            if _Syntax.hexValue(byte) != nil { self.state = .percent2 } else { self.breakHost() }
        case .percent2:
            if _Syntax.hexValue(byte) != nil { self.state = .regName } else { self.breakHost() }
        case .literalStart:
            if byte | 0x20 == UInt8(ascii: "v") {
                self.state = .futureVersion
            } else {
                self.state = .ipv6
                self.ipv6(byte)
            }
        case .ipv6:
            self.ipv6(byte)
        case .ipv4:
            self.ipv4(byte)
        case .futureVersion:
            if _Syntax.hexValue(byte) != nil {
                self.digits = 1
            } else if byte == _Syntax.dot && self.digits > 0 {
                self.digits = 0
                self.state = .futureAddress
            } else {
                self.breakHost()
            }
        case .futureAddress:
            if _Syntax.isUserinfo(byte) {
                self.digits = 1
            } else if byte == _Syntax.closeBracket && self.digits > 0 {
                self.state = .literalEnd
            } else {
                self.breakHost()
            }
        case .literalEnd:
            if byte == _Syntax.colon { self.state = .port } else { self.breakHost() }
        case .port:
            guard _Syntax.isDigit(byte) else {
                self.note(.invalidPort)
                self.state = .broken
                return
            }
            self.port = self.port &* 10 &+ UInt32(byte &- 0x30)
            if self.portDigits < 255 { self.portDigits &+= 1 }
            if self.port > 65535 {
                self.note(.invalidPort)
                self.state = .broken
            }
        case .space, .broken:
            // `.space` always has `pendingSpace` set, handled above.
            break
        }
    }

    /// Ends the value: its verdict.
    mutating func finish() -> Verdict {
        let state = self.state == .space ? self.stateBeforeSpace : self.state
        switch state {
        case .start, .regName, .literalEnd, .port, .space, .broken:
            break
        case .percent1, .percent2, .literalStart, .ipv6, .ipv4, .futureVersion, .futureAddress:
            // Cut short: a `%` without its digits, or a literal without its `]`.
            self.note(.invalidHost)
        }
        if self.broken != .valid { return self.broken }
        if !self.hasHost { return state == .start ? .empty : .noHost }
        return .valid
    }

    // MARK: IP literals

    /// A byte of an IPv6 address before any dot.
    private mutating func ipv6(_ byte: UInt8) {
        if let value = _Syntax.hexValue(byte) {
            // A colon at the very start must be half of `::`.
            guard !(self.colons == 1 && self.pieces == 0 && !self.sawDoubleColon), self.digits < 4 else {
                return self.breakHost()
            }
            if self.digits == 0 {
                self.pieceValue = 0
                self.pieceIsDecimal = true
                self.pieceLeadingZero = byte == UInt8(ascii: "0")
            }
            self.digits &+= 1
            if value < 10 {
                self.pieceValue = self.pieceValue &* 10 &+ UInt16(value)  // at most 9999
            } else {
                self.pieceIsDecimal = false
            }
            self.colons = 0
        } else if byte == _Syntax.colon {
            if self.digits > 0 {
                self.pieces &+= 1
                self.digits = 0
                self.colons = 1
                // Eight pieces then a colon: a ninth piece or a trailing colon.
                if self.pieces == 8 { self.breakHost() }
            } else if self.colons == 1 {
                guard !self.sawDoubleColon else { return self.breakHost() }
                self.sawDoubleColon = true
                self.colons = 2
            } else if self.colons == 0 {
                self.colons = 1  // the first byte of the address
            } else {
                self.breakHost()  // ":::"
            }
        } else if byte == _Syntax.dot {
            // The current piece is the first octet of an IPv4 address that ends the address.
            guard self.digits <= 3, self.pieceIsDecimal,
                Self.isDecOctet(self.pieceValue, digits: self.digits, leadingZero: self.pieceLeadingZero)
            else { return self.breakHost() }
            self.octets = 1
            self.octetDigits = 0
            self.octetValue = 0
            self.state = .ipv4
        } else if byte == _Syntax.closeBracket {
            if self.digits > 0 {
                self.pieces &+= 1
            } else if self.colons != 2 {
                return self.breakHost()  // "[]", "[:]", or a trailing single colon
            }
            self.endIPv6()
        } else {
            self.breakHost()
        }
    }

    /// A byte of the IPv4 address that ends an IPv6 address, after its first dot.
    private mutating func ipv4(_ byte: UInt8) {
        if _Syntax.isDigit(byte) {
            if self.octetDigits == 0 {
                self.octetLeadingZero = byte == UInt8(ascii: "0")
            } else if self.octetLeadingZero {
                return self.breakHost()
            }
            self.octetDigits &+= 1
            self.octetValue = self.octetValue &* 10 &+ UInt16(byte &- 0x30)
            if self.octetDigits > 3 || self.octetValue > 255 { self.breakHost() }
        } else if byte == _Syntax.dot {
            guard self.octetDigits > 0, self.octets < 3 else { return self.breakHost() }
            self.octets &+= 1
            self.octetDigits = 0
            self.octetValue = 0
        } else if byte == _Syntax.closeBracket {
            guard self.octetDigits > 0, self.octets == 3 else { return self.breakHost() }
            self.pieces &+= 2
            self.endIPv6()
        } else {
            self.breakHost()
        }
    }

    /// At `]`: eight pieces, or at most seven beside a `::` (which stands for at least one).
    private mutating func endIPv6() {
        guard self.sawDoubleColon ? self.pieces <= 7 : self.pieces == 8 else { return self.breakHost() }
        self.state = .literalEnd
    }

    /// `dec-octet`: 0...255, without a leading zero.
    private static func isDecOctet(_ value: UInt16, digits: UInt8, leadingZero: Bool) -> Bool {
        digits > 0 && value <= 255 && (digits == 1 || !leadingZero)
    }

    // MARK: Broken rules

    private mutating func breakHost() {
        self.note(.invalidHost)
        self.state = .broken
    }

    private mutating func note(_ verdict: Verdict) {
        if verdict.rawValue > self.broken.rawValue { self.broken = verdict }
    }
}

// MARK: - Agreement

extension _AuthorityScanner {
    /// Whether two well-formed authorities (as ``_AuthorityScanner`` accepted them, without
    /// userinfo) name the same host and port: the hosts compared ASCII case-insensitively
    /// (RFC 3986 §6.2.2.1), an empty port or `defaultPort` the same as no port (§6.2.3).
    /// Otherwise as sent: `%41` is not `A`, and `[::1]` is not `[0:0:0:0:0:0:0:1]`.
    ///
    /// - Complexity: O(*n*) in their lengths.
    static func agree(_ one: ByteRope, _ other: ByteRope, defaultPort: Int?) -> Bool {
        let (oneHost, onePort) = Self.split(one)
        let (otherHost, otherPort) = Self.split(other)
        let normalized = { (port: Int?) in port == defaultPort ? nil : port }
        return normalized(onePort) == normalized(otherPort) && oneHost.count == otherHost.count
            && oneHost.elementsEqual(otherHost) { _Syntax.lowercased($0) == _Syntax.lowercased($1) }
    }

    /// A well-formed authority's host, and its port (`nil` when there is none or it is empty).
    private static func split(_ authority: ByteRope) -> (host: ByteRope, port: Int?) {
        let hostEnd: Int
        if authority.first == _Syntax.openBracket {
            hostEnd = (authority.firstIndex(of: _Syntax.closeBracket) ?? authority.count &- 1) &+ 1
        } else {
            hostEnd = authority.firstIndex(of: _Syntax.colon) ?? authority.count
        }
        guard hostEnd < authority.count else { return (authority, nil) }
        var port = 0
        var digits = 0
        // Digits only, below 65536 once leading zeros are dropped: no overflow.
        for byte in authority.subrange((hostEnd &+ 1)...) {
            port = port &* 10 &+ Int(byte &- 0x30)
            digits &+= 1
        }
        return (authority.subrange(0..<hostEnd), digits > 0 ? port : nil)
    }
}
