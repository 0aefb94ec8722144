//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: every documented precondition traps (exit tests; each one runs
// in a child process, so they are few and each checks one misuse).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import Testing

/// Expects the child process's standard error to carry the precondition's message, so that a
/// trap for another reason does not pass for the right one.
private func expectMessage(
    _ result: ExitTest.Result?,
    _ message: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit expectation itself already failed
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains(message), "stderr: \(standardError.prefix(300))", sourceLocation: sourceLocation)
}

@Suite("RingHTTP: preconditions")
struct HTTPPreconditionTests {
    @Test("A parser with a header-section limit under 2 bytes traps")
    func limits() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPRequestParser(limits: .init(maxHeaderSectionLength: 1))
            },
            "maxHeaderSectionLength out of 2...2^30"
        )
    }

    @Test("A parser with a request-line limit over 2^30 traps")
    func hugeLimit() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPRequestParser(limits: .init(maxRequestLineLength: (1 << 30) + 1))
            },
            "maxRequestLineLength out of 1...2^30"
        )
    }

    @Test("A status code that is not three digits traps")
    func statusCode() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPStatus(code: 42)
            },
            "HTTPStatus code 42 is not three digits"
        )
    }

    @Test("A Content-Length that differs from the body sent traps")
    func contentLengthMismatch() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                var response = HTTPResponse(body: ByteRope(copying: "abc".utf8))
                response.contentLength = 4
                _ = HTTPResponseWriter().serialize(response)
            },
            "HTTPResponse.contentLength 4 differs from the body's 3 bytes"
        )
    }

    @Test("A header name that is not a token traps when it is appended")
    func headerName() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                var headers = HTTPHeaders()
                headers.append(name: "Bad Name", value: "v")
            },
            "HTTPHeaders: the field name \"Bad Name\" is not a token"
        )
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = HTTPResponse(headers: ["": "v"])
            },
            "HTTPHeaders: the field name \"\" is not a token"
        )
    }

    @Test("A response head longer than its buffer traps instead of writing past it")
    func headOverrun() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let writer = HTTPResponseWriter(serverName: "RingIO", date: .fixed(secondsSince1970: 0))
                let response = HTTPResponse(headers: ["X-Value": String(repeating: "v", count: 300)])
                let length = writer.serializeHead(response).count
                _ = writer.serializeHead(response, for: nil, capacity: length - 1)
            },
            "HTTPResponseWriter: the response head overran its buffer"
        )
    }
}
