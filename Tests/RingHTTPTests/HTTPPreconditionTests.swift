//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: every documented precondition traps (exit tests; each one runs
// in a child process, so they are few and each checks one misuse).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

@Suite("RingHTTP: preconditions")
struct HTTPPreconditionTests {
    @Test("A parser with a header-section limit under 2 bytes traps")
    func limits() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPRequestParser(limits: .init(maxHeaderSectionLength: 1))
            },
            contains: "maxHeaderSectionLength out of 2...2^30"
        )
    }

    @Test("A parser with a request-line limit over 2^30 traps")
    func hugeLimit() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPRequestParser(limits: .init(maxRequestLineLength: (1 << 30) + 1))
            },
            contains: "maxRequestLineLength out of 1...2^30"
        )
    }

    @Test("A status code that is not three digits traps")
    func statusCode() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPStatus(code: 42)
            },
            contains: "HTTPStatus code 42 is not three digits"
        )
    }

    @Test("A Content-Length that differs from the body sent traps")
    func contentLengthMismatch() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                var response = HTTPResponse(body: ByteRope(copying: "abc".utf8))
                response.contentLength = 4
                _ = HTTPResponseWriter().serialize(response)
            },
            contains: "HTTPResponse.contentLength 4 differs from the body's 3 bytes"
        )
    }

    @Test("A header name that is not a token traps when it is appended")
    func headerName() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                var headers = HTTPHeaders()
                headers.append(name: "Bad Name", value: "v")
            },
            contains: "HTTPHeaders: the field name \"Bad Name\" is not a token"
        )
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPResponse(headers: ["": "v"])
            },
            contains: "HTTPHeaders: the field name \"\" is not a token"
        )
    }

    @Test("A response head longer than its buffer traps instead of writing past it")
    func headOverrun() async {
        expectStandardError(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let writer = HTTPResponseWriter(serverName: "RingIO", date: .fixed(secondsSince1970: 0))
                let response = HTTPResponse(headers: ["X-Value": String(repeating: "v", count: 300)])
                let length = writer.serializeHead(response).count
                _ = writer.serializeHead(response, for: nil, capacity: length - 1)
            },
            contains: "HTTPResponseWriter: the response head overran its buffer"
        )
    }
}
