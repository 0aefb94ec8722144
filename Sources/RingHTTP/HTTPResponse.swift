//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// A response to write: status, header fields and body.
///
/// ``HTTPResponseWriter`` turns it into bytes, adding `Server`, `Date`, `Content-Length` and
/// `Connection` itself.
///
///     var response = HTTPResponse(status: .ok, body: ByteRope(copying: "Hello, World!".utf8))
///     response.headers.append(name: "Content-Type", value: "text/plain")
///     let bytes = writer.serialize(response, for: request.head)   // head + body, one rope
public struct HTTPResponse: Sendable {
    /// The status.
    public var status: HTTPStatus

    /// Header fields, written in this order after `Server` and `Date`.
    ///
    /// ``HTTPHeaders/append(name:value:)`` (or a literal such as
    /// `["Content-Type": "text/plain"]`) checks that names are tokens and writes CR, LF and
    /// NUL in values as spaces, so a value taken from a request cannot split the response. If
    /// you set `Content-Length`, `Transfer-Encoding`, `Connection`, `Server` or `Date`
    /// yourself, the writer does not add its own.
    ///
    /// Fields made once and shared (a `static let`) cost nothing per response: the writer
    /// copies their lines into the head as they are.
    public var headers: HTTPHeaders

    /// The body. Its regions are written as they are — for a file, the rope of its bytes as
    /// read — after the head.
    public var body: ByteRope

    /// The `Content-Length` to announce; `nil` (the default) announces `body.count`.
    ///
    /// Set it for a response to `HEAD` whose body you did not produce (the length of the file
    /// you would have sent); for any other request it must equal `body.count`.
    public var contentLength: Int?

    /// Whether the connection closes after this response: the writer adds
    /// `Connection: close`. It also does when the request did not ask to keep the
    /// connection open (``HTTPRequestHead/keepAlive``).
    public var closeConnection: Bool

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status; 200 by default.
    ///   - headers: Header fields besides those the writer adds.
    ///   - body: The body; empty by default.
    ///   - closeConnection: Whether to close the connection after the response.
    /// - Complexity: O(1).
    public init(
        status: HTTPStatus = .ok,
        headers: HTTPHeaders = HTTPHeaders(),
        body: ByteRope = ByteRope(),
        closeConnection: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.contentLength = nil
        self.closeConnection = closeConnection
    }
}
