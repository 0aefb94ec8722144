//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Why a request could not be parsed, with the status a server should answer with.
///
/// After throwing one of these, ``HTTPRequestParser`` stays failed: the server answers with
/// ``status`` (typically with `Connection: close`) and closes the connection. The parser's
/// ``HTTPRequestParser/failureReason`` names the rule that was broken, for logs or for the
/// response's body.
///
///     do {
///         while let request = try parser.next() { respond(to: request) }
///     } catch {
///         send(writer.serialize(HTTPResponse(status: error.status, closeConnection: true)))
///     }
///
/// Most malformed requests are ``badRequest``. The rules about the `Host` field (RFC 9112
/// §3.2, RFC 9110 §7.2), the request target (RFC 9112 §3.2) and chunk extensions (RFC 9112
/// §7.1.1) each have a case of their own, all answered with 400 too, so that a server can
/// tell them apart without reading the reason.
public enum HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// 400: a malformed request line, field line, chunk or framing (for example a bare LF,
    /// obs-fold, a space before a colon, conflicting `Content-Length`s, both `Content-Length`
    /// and `Transfer-Encoding`, or a `Transfer-Encoding` that does not end in `chunked`).
    case badRequest
    /// 414: the request line is longer than ``HTTPRequestParser/Limits/maxRequestLineLength``.
    case uriTooLong
    /// 431: the header section (or a chunked body's trailer section) is longer than
    /// ``HTTPRequestParser/Limits/maxHeaderSectionLength``.
    case headersTooLarge
    /// 413: the body is longer than ``HTTPRequestParser/Limits/maxBodyLength``.
    case bodyTooLarge
    /// 501: a transfer coding other than `chunked` (for example `gzip, chunked`).
    case notImplemented
    /// 505: a well-formed HTTP version whose major version is not 1 (for example `HTTP/2.0`
    /// or `HTTP/0.9`). HTTP/1.2 to HTTP/1.9 are handled as HTTP/1.1 (RFC 9110 §6.2).
    case versionNotSupported

    // The Host field (RFC 9112 §3.2; RFC 9110 §4.2.3, §7.2; RFC 3986 §3.2).

    /// 400: an HTTP/1.1 request without a `Host` field.
    case missingHost
    /// 400: more than one `Host` field line, in a request of any version.
    case duplicateHost
    /// 400: a `Host` without a host: an empty value (allowed only beside an absolute-form
    /// target without an authority, such as `urn:x`, where it is required), or a port alone
    /// (`:80`).
    case emptyHost
    /// 400: a `Host` with userinfo (`user@example.com`), which RFC 9110 §4.2.4 forbids.
    case hostWithUserinfo
    /// 400: a `Host` with a path, a query or a fragment (a `/`, `?` or `#`).
    case hostWithPath
    /// 400: a `Host` that is a list (a comma: `a.example, b.example`).
    case hostList
    /// 400: a `Host` with whitespace inside its value (`exa mple.com`, `example.com :80`).
    case hostWithWhitespace
    /// 400: a `Host` whose port is not digits or is over 65535 (`example.com:http`,
    /// `example.com:65536`). An empty port (`example.com:`) is allowed, as RFC 3986's
    /// `port = *DIGIT` allows it.
    case invalidHostPort
    /// 400: a `Host` that is not an IP literal, an IPv4 address or a reg-name: a byte RFC
    /// 3986 does not allow in a host (`exa_mple{}`), a malformed percent-escape, or a
    /// malformed `[IPv6]` or `[vX.future]` literal.
    case invalidHost
    /// 400: a `Host` that disagrees with the authority of an absolute-form target
    /// (`http://a.example/` with `Host: b.example`) or of CONNECT's authority-form target, or
    /// a non-empty `Host` beside an absolute-form target without an authority. Hosts compare
    /// ASCII case-insensitively, and an empty or default port (80 for `http`, 443 for
    /// `https`) is the same as none.
    case hostMismatch

    // The request target (RFC 9112 §3.2).

    /// 400: a request target with a fragment (`/page#section`), which a client must not send.
    case fragmentInTarget
    /// 400: an absolute-form or authority-form target with userinfo
    /// (`http://user@example.com/`), which RFC 9110 §4.2.4 forbids for `http` and `https`.
    case targetWithUserinfo
    /// 400: a request target in none of the four forms, or in a form its method cannot use:
    /// `*` other than for OPTIONS, a CONNECT target other than `host:port`, a target that is
    /// neither `/…` nor `scheme:…`, an `http` or `https` target without a host, or an
    /// absolute-form target whose authority is malformed.
    case invalidTarget

    // Chunked bodies (RFC 9112 §7.1.1).

    /// 400: a chunk extension that does not follow `*( BWS ";" BWS name [ BWS "=" BWS
    /// ( token / quoted-string ) ] )`: an empty name, a value missing after `=`, a byte a
    /// token or a quoted string may not hold, an unterminated quoted string, or whitespace at
    /// the end of the line.
    case invalidChunkExtension

    /// The status to answer with.
    ///
    /// - Complexity: O(1).
    public var status: HTTPStatus {
        switch self {
        case .badRequest: return .badRequest
        case .uriTooLong: return .uriTooLong
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .bodyTooLarge: return .contentTooLarge
        case .notImplemented: return .notImplemented
        case .versionNotSupported: return .httpVersionNotSupported
        case .missingHost, .duplicateHost, .emptyHost, .hostWithUserinfo, .hostWithPath, .hostList,
            .hostWithWhitespace, .invalidHostPort, .invalidHost, .hostMismatch, .fragmentInTarget,
            .targetWithUserinfo, .invalidTarget, .invalidChunkExtension:
            return .badRequest
        }
    }

    /// The status line's code and reason, such as `400 Bad Request`.
    public var description: String {
        self.status.description
    }
}

/// An ``HTTPParseError`` with the rule that was broken, thrown inside the parser and split
/// at its public boundary.
struct _ParseFailure: Error {
    let error: HTTPParseError
    let reason: StaticString

    init(_ error: HTTPParseError, _ reason: StaticString) {
        self.error = error
        self.reason = reason
    }
}
