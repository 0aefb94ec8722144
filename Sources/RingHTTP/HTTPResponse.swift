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
///     response.headers.append(("Content-Type", "text/plain"))
///     let bytes = writer.serialize(response, for: request.head)   // head + body, one rope
public struct HTTPResponse: Sendable {
    /// The status.
    public var status: HTTPStatus

    /// Header fields, written in this order after `Server` and `Date`.
    ///
    /// Names must be tokens (letters, digits and `!#$%&'*+-.^_`|~`). In values, CR, LF and
    /// NUL are written as spaces, so a value taken from a request cannot split the response.
    /// If you set `Content-Length`, `Transfer-Encoding`, `Connection`, `Server` or `Date`
    /// yourself, the writer does not add its own.
    public var headers: [(name: String, value: String)]

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
        headers: [(name: String, value: String)] = [],
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
