//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Why a request could not be parsed, as the status a server should answer with.
///
/// After throwing one of these, ``HTTPRequestParser`` stays failed: the server answers with
/// ``status`` (typically with `Connection: close`) and closes the connection. The parser's
/// ``HTTPRequestParser/failureReason`` names the rule that was broken, for logs.
///
///     do {
///         while let request = try parser.next() { respond(to: request) }
///     } catch {
///         send(writer.serialize(HTTPResponse(status: error.status, closeConnection: true)))
///     }
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
    /// 505: a well-formed HTTP version other than 1.0 and 1.1 (for example `HTTP/2.0`).
    case versionNotSupported

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
