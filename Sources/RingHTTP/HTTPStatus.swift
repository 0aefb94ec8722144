//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A response status: a three-digit code and its reason phrase.
///
///     HTTPStatus.notFound.code          // 404
///     HTTPStatus.notFound.reasonPhrase  // "Not Found"
///     let teapot: HTTPStatus = 418      // reason phrase "I'm a teapot"
///
/// Two statuses are equal when their codes are; the reason phrase is informational (RFC 9112
/// §4: clients ignore it).
public struct HTTPStatus: Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The status code, 100...999.
    public let code: Int
    private let customReasonPhrase: String?

    /// Creates a status with the standard reason phrase for `code` (RFC 9110 §15), or the
    /// one you give.
    ///
    /// - Parameters:
    ///   - code: A three-digit code.
    ///   - reasonPhrase: Overrides the standard phrase; it must not contain CR or LF. Codes
    ///     without a standard phrase and no phrase given get an empty one.
    /// - Precondition: `100 <= code <= 999`.
    /// - Complexity: O(1).
    public init(code: Int, reasonPhrase: String? = nil) {
        precondition((100...999).contains(code), "HTTPStatus code \(code) is not three digits")
        self.code = code
        self.customReasonPhrase = reasonPhrase
    }

    /// Creates a status with the standard reason phrase for `value`.
    ///
    /// - Precondition: `100 <= value <= 999`.
    /// - Complexity: O(1).
    public init(integerLiteral value: Int) {
        self.init(code: value)
    }

    /// The reason phrase: the one given to ``init(code:reasonPhrase:)``, else the standard
    /// phrase, else the empty string.
    ///
    /// - Complexity: O(1); no allocation for the standard phrases.
    public var reasonPhrase: String {
        self.customReasonPhrase ?? Self.standardReasonPhrase(self.code)
    }

    /// `code reason`, such as `404 Not Found`.
    public var description: String {
        "\(self.code) \(self.reasonPhrase)"
    }

    /// Whether two statuses have the same code, whatever their reason phrases.
    ///
    /// - Complexity: O(1).
    public static func == (lhs: HTTPStatus, rhs: HTTPStatus) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code only, consistently with `==`.
    ///
    /// - Complexity: O(1).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
    }

    /// The status class: 1 for informational, 2 for success, … 5 for server errors.
    ///
    /// - Complexity: O(1).
    public var codeClass: Int { self.code / 100 }

    /// Whether a response with this status never has a body (1xx, 204, 304: RFC 9110 §6.4.1).
    ///
    /// - Complexity: O(1).
    public var forbidsBody: Bool {
        self.code < 200 || self.code == 204 || self.code == 304
    }

    private static func standardReasonPhrase(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 203: return "Non-Authoritative Information"
        case 204: return "No Content"
        case 205: return "Reset Content"
        case 206: return "Partial Content"
        case 300: return "Multiple Choices"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 418: return "I'm a teapot"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return ""
        }
    }
}

// MARK: - Common statuses

extension HTTPStatus {
    /// 100 Continue: the answer to `Expect: 100-continue`.
    public static let `continue`: HTTPStatus = 100
    /// 101 Switching Protocols.
    public static let switchingProtocols: HTTPStatus = 101
    /// 200 OK.
    public static let ok: HTTPStatus = 200
    /// 201 Created.
    public static let created: HTTPStatus = 201
    /// 202 Accepted.
    public static let accepted: HTTPStatus = 202
    /// 204 No Content.
    public static let noContent: HTTPStatus = 204
    /// 206 Partial Content.
    public static let partialContent: HTTPStatus = 206
    /// 301 Moved Permanently.
    public static let movedPermanently: HTTPStatus = 301
    /// 302 Found.
    public static let found: HTTPStatus = 302
    /// 303 See Other.
    public static let seeOther: HTTPStatus = 303
    /// 304 Not Modified.
    public static let notModified: HTTPStatus = 304
    /// 307 Temporary Redirect.
    public static let temporaryRedirect: HTTPStatus = 307
    /// 308 Permanent Redirect.
    public static let permanentRedirect: HTTPStatus = 308
    /// 400 Bad Request.
    public static let badRequest: HTTPStatus = 400
    /// 401 Unauthorized.
    public static let unauthorized: HTTPStatus = 401
    /// 403 Forbidden.
    public static let forbidden: HTTPStatus = 403
    /// 404 Not Found.
    public static let notFound: HTTPStatus = 404
    /// 405 Method Not Allowed.
    public static let methodNotAllowed: HTTPStatus = 405
    /// 408 Request Timeout.
    public static let requestTimeout: HTTPStatus = 408
    /// 411 Length Required.
    public static let lengthRequired: HTTPStatus = 411
    /// 413 Content Too Large.
    public static let contentTooLarge: HTTPStatus = 413
    /// 414 URI Too Long.
    public static let uriTooLong: HTTPStatus = 414
    /// 416 Range Not Satisfiable.
    public static let rangeNotSatisfiable: HTTPStatus = 416
    /// 417 Expectation Failed.
    public static let expectationFailed: HTTPStatus = 417
    /// 431 Request Header Fields Too Large.
    public static let requestHeaderFieldsTooLarge: HTTPStatus = 431
    /// 500 Internal Server Error.
    public static let internalServerError: HTTPStatus = 500
    /// 501 Not Implemented.
    public static let notImplemented: HTTPStatus = 501
    /// 503 Service Unavailable.
    public static let serviceUnavailable: HTTPStatus = 503
    /// 505 HTTP Version Not Supported.
    public static let httpVersionNotSupported: HTTPStatus = 505
}
