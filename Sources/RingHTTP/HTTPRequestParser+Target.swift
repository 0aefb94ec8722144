//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// The form of a request target (RFC 9112 §3.2), and for the forms with one, the authority
/// the `Host` field must agree with.
///
/// The request line's scan has checked every byte (visible ASCII, no `#`); origin-form, the
/// common case, is known by its first byte and needs nothing more. The others are checked
/// here, against the grammar of their form and the method that may use it:
///
///     origin-form    = absolute-path [ "?" query ]           any method but CONNECT
///     absolute-form  = absolute-URI                           any method but CONNECT
///     authority-form = uri-host ":" port                      CONNECT only
///     asterisk-form  = "*"                                    OPTIONS only
///
/// An absolute-form target's scheme is checked (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`),
/// and its authority, when it has one (`scheme://authority…`), as the `Host` field is. An
/// `http` or `https` target must have an authority with a host (RFC 9110 §4.2.1, §4.2.2) and
/// no userinfo (§4.2.4); other schemes' userinfo is checked and set aside. The path and query
/// of origin-form and absolute-form targets are not checked further: characters RFC 3986
/// wants percent-encoded (`{`, `|`, `"`) are accepted, as most servers accept them.
enum _TargetForm {
    /// `/path?query`.
    case origin
    /// `*`, for OPTIONS.
    case asterisk
    /// CONNECT's `host:port`: the whole target.
    case authority(ByteRope)
    /// `scheme:…`, with its authority (as sent, without userinfo) when it has one, and its
    /// scheme's default port for the comparison with `Host` (80 for `http`, 443 for `https`).
    case absolute(authority: ByteRope?, defaultPort: Int?)

    /// Whether the target is origin-form.
    var isOrigin: Bool {
        if case .origin = self { return true }
        return false
    }

    /// Checks `target` (not empty) against the form `method` and its first bytes call for.
    ///
    /// - Throws: ``HTTPParseError/invalidTarget`` or ``HTTPParseError/targetWithUserinfo``.
    /// - Complexity: O(*n*) in the target's length.
    init(_ target: ByteRope, method: HTTPMethod) throws(_ParseFailure) {
        if case .connect = method {
            self = try Self.authorityForm(target)
            return
        }
        let first = target[0]
        if first == _Syntax.slash {
            self = .origin
        } else if first == _Syntax.asterisk && target.count == 1 {
            guard case .options = method else {
                throw _ParseFailure(.invalidTarget, "asterisk-form target in a request other than OPTIONS")
            }
            self = .asterisk
        } else {
            self = try Self.absoluteForm(target)
        }
    }

    /// `uri-host ":" port`, the port not empty (RFC 9110 §9.3.6).
    private static func authorityForm(_ target: ByteRope) throws(_ParseFailure) -> _TargetForm {
        var scanner = _AuthorityScanner()
        for byte in target { scanner.feed(byte) }
        let hasPort = scanner.hasPortDigits
        switch scanner.finish() {
        case .valid where hasPort:
            return .authority(target)
        case .userinfo:
            throw _ParseFailure(.targetWithUserinfo, "userinfo in the request target")
        default:
            throw _ParseFailure(.invalidTarget, "CONNECT target other than host:port")
        }
    }

    /// `scheme ":" hier-part [ "?" query ]`.
    private static func absoluteForm(_ target: ByteRope) throws(_ParseFailure) -> _TargetForm {
        let count = target.count
        // The scheme, up to the colon.
        var scheme = _ShortKey()
        var colon = -1
        for (offset, byte) in target.enumerated() {
            if byte == _Syntax.colon {
                colon = offset
                break
            }
            guard offset == 0 ? _Syntax.isAlpha(byte) : _Syntax.isScheme(byte) else { break }
            scheme.append(byte)
        }
        guard colon > 0 else {
            throw _ParseFailure(.invalidTarget, "request target in none of the four forms")
        }
        let defaultPort: Int? = scheme == .http ? 80 : scheme == .https ? 443 : nil
        let isHTTP = defaultPort != nil
        // `//` and an authority, or none.
        let authorityStart = colon &+ 3
        guard authorityStart <= count, target[colon &+ 1] == _Syntax.slash, target[colon &+ 2] == _Syntax.slash
        else {
            if isHTTP { throw _ParseFailure(.invalidTarget, "http or https target without an authority") }
            return .absolute(authority: nil, defaultPort: nil)
        }
        var authorityEnd = authorityStart
        while authorityEnd < count {
            let byte = target[authorityEnd]
            if byte == _Syntax.slash || byte == _Syntax.question { break }
            authorityEnd &+= 1
        }
        var authority = target.subrange(authorityStart..<authorityEnd)
        // userinfo "@": refused for http and https, set aside for other schemes.
        if let at = authority.firstIndex(of: _Syntax.at) {
            guard !isHTTP, Self.isUserinfo(authority.subrange(0..<at)) else {
                throw _ParseFailure(.targetWithUserinfo, "userinfo in the request target")
            }
            authority = authority.subrange((at &+ 1)...)
        }
        var scanner = _AuthorityScanner()
        for byte in authority { scanner.feed(byte) }
        switch scanner.finish() {
        case .valid:
            break
        case .empty, .noHost:
            // RFC 3986 allows an empty host (`file:///etc`); an http URI does not.
            if isHTTP { throw _ParseFailure(.invalidTarget, "http or https target without a host") }
        case .userinfo:
            throw _ParseFailure(.targetWithUserinfo, "userinfo in the request target")
        case .invalidHost, .invalidPort, .whitespace, .path, .list:
            throw _ParseFailure(.invalidTarget, "malformed authority in the request target")
        }
        return .absolute(authority: authority, defaultPort: defaultPort)
    }

    /// `userinfo = *( unreserved / pct-encoded / sub-delims / ":" )`.
    private static func isUserinfo(_ bytes: ByteRope) -> Bool {
        var escape = 0  // hex digits still expected after a "%"
        for byte in bytes {
            if escape > 0 {
                guard _Syntax.hexValue(byte) != nil else { return false }
                escape &-= 1
            } else if byte == _Syntax.percent {
                escape = 2
            } else if !_Syntax.isUserinfo(byte) {
                return false
            }
        }
        return escape == 0
    }
}

extension HTTPMethod {
    /// Whether this is CONNECT, the method of authority-form targets.
    var isConnect: Bool {
        if case .connect = self { return true }
        return false
    }
}
