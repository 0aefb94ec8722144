//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: the response writer, byte for byte; dates; statuses.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Dispatch
import RingHTTP
import RingIOTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The head of a parsed request, for the writer's `for:` argument.
func requestHead(_ text: String) throws -> HTTPRequestHead {
    var parser = HTTPRequestParser()
    parser.append(rope(text))
    return try #require(try parser.nextHead())
}

func text(_ rope: ByteRope) -> String {
    String(decoding: rope, as: UTF8.self)
}

@Suite("HTTPResponseWriter")
struct HTTPResponseWriterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT — RFC 9110's example date.
    let writer = HTTPResponseWriter(serverName: "RingIO", date: .fixed(secondsSince1970: 784_111_777))
    let date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"

    func hello() -> HTTPResponse {
        HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: rope("Hello, World!"))
    }

    @Test("A 200 with a body, byte for byte")
    func ok() throws {
        let bytes = self.writer.serialize(self.hello(), for: try requestHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(
            text(bytes)
                == "HTTP/1.1 200 OK\r\nServer: RingIO\r\n\(self.date)Content-Type: text/plain\r\nContent-Length: 13\r\n\r\n"
                + "Hello, World!"
        )
        #expect(bytes.regionCount == 1, "a body this small is copied into the head's region")
    }

    @Test("HEAD: the same head, the body's length, no body")
    func head() throws {
        let get = self.writer.serialize(self.hello(), for: try requestHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        let head = self.writer.serialize(self.hello(), for: try requestHead("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(text(head) + "Hello, World!" == text(get))
        #expect(head.regionCount == 1)

        // A HEAD response for a body not produced: announce the length given.
        var file = HTTPResponse(status: .ok)
        file.contentLength = 1_048_576
        let announced = self.writer.serialize(file, for: try requestHead("HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(
            text(announced) == "HTTP/1.1 200 OK\r\nServer: RingIO\r\n\(self.date)Content-Length: 1048576\r\n\r\n"
        )
    }

    @Test("No request (an error before parsing), Connection: close, no Server, no Date")
    func errorResponse() {
        let writer = HTTPResponseWriter(serverName: nil, date: .omitted)
        let status = HTTPParseError.uriTooLong.status
        let bytes = writer.serialize(HTTPResponse(status: status, closeConnection: true))
        #expect(text(bytes) == "HTTP/1.1 414 URI Too Long\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        #expect(bytes.regionCount == 1)
    }

    @Test("Keep-alive: HTTP/1.1 default, HTTP/1.0 asked, HTTP/1.0 not asked, Connection: close")
    func connection() throws {
        let response = HTTPResponse(status: .noContent)
        let prefix = "HTTP/1.1 204 No Content\r\nServer: RingIO\r\n\(self.date)"
        let keptOpen11 = try requestHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(text(self.writer.serialize(response, for: keptOpen11)) == prefix + "\r\n")
        #expect(!HTTPResponseWriter.closesConnection(response, for: keptOpen11))

        let keptOpen10 = try requestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(text(self.writer.serialize(response, for: keptOpen10)) == prefix + "Connection: keep-alive\r\n\r\n")

        let closing10 = try requestHead("GET / HTTP/1.0\r\n\r\n")
        #expect(text(self.writer.serialize(response, for: closing10)) == prefix + "Connection: close\r\n\r\n")
        #expect(HTTPResponseWriter.closesConnection(response, for: closing10))

        let closing11 = try requestHead("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(text(self.writer.serialize(response, for: closing11)) == prefix + "Connection: close\r\n\r\n")

        var closingResponse = response
        closingResponse.closeConnection = true
        #expect(text(self.writer.serialize(closingResponse, for: keptOpen10)) == prefix + "Connection: close\r\n\r\n")
        #expect(HTTPResponseWriter.closesConnection(closingResponse, for: keptOpen11))
    }

    @Test("Statuses without a body: 1xx, 204, 304")
    func noBody() {
        let writer = HTTPResponseWriter(serverName: nil, date: .omitted)
        var notModified = HTTPResponse(status: .notModified, headers: ["ETag": "\"x\""], body: rope("ignored"))
        #expect(text(writer.serialize(notModified)) == "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n")
        notModified.contentLength = 7
        #expect(
            text(writer.serialize(notModified))
                == "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 7\r\n\r\n"
        )
        #expect(
            text(writer.serialize(HTTPResponse(status: .noContent, body: rope("x"))))
                == "HTTP/1.1 204 No Content\r\n\r\n"
        )
        #expect(text(HTTPResponseWriter.continueResponse) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test("Fields the caller sets replace the writer's; values cannot split the response")
    func ownFields() {
        let writer = HTTPResponseWriter(serverName: "RingIO", date: .fixed(secondsSince1970: 0))
        let response = HTTPResponse(
            status: HTTPStatus(code: 299, reasonPhrase: "Custom\r\nX: y"),
            headers: [
                "server": "Mine", "DATE": "yesterday", "Content-Length": "3", "connection": "Upgrade",
                "X-Injected": "a\r\nSet-Cookie: evil\u{0}",
            ],
            body: rope("abc"),
            closeConnection: true
        )
        #expect(
            text(writer.serialize(response))
                == "HTTP/1.1 299 Custom  X: y\r\nserver: Mine\r\nDATE: yesterday\r\nContent-Length: 3\r\n"
                + "connection: Upgrade\r\nX-Injected: a  Set-Cookie: evil \r\n\r\nabc"
        )
    }

    @Test("A request's fields in a response are written as received, and replace the writer's own")
    func receivedFields() throws {
        let writer = HTTPResponseWriter(serverName: "RingIO", date: .omitted)
        let request = try requestHead("GET / HTTP/1.1\r\nHost: x\r\nServer:  theirs \r\nX-A: 1\r\n\r\n")
        var headers: HTTPHeaders = ["Content-Type": "text/plain"]
        headers.append(contentsOf: request.headers)
        #expect(
            text(writer.serialize(HTTPResponse(headers: headers, body: rope("ok")), for: request))
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nHost: x\r\nServer:  theirs \r\nX-A: 1\r\n"
                + "Content-Length: 2\r\n\r\nok"
        )
        #expect(
            text(writer.serialize(HTTPResponse(headers: request.headers), for: request))
                == "HTTP/1.1 200 OK\r\nHost: x\r\nServer:  theirs \r\nX-A: 1\r\nContent-Length: 0\r\n\r\n"
        )
    }

    @Test("A body over inlineBodyLimit keeps its regions as they are")
    func bodyRegions() {
        let pieces = ["first ", "second ", "third"].map { String(repeating: $0, count: 20) }
        var body = ByteRope()
        for piece in pieces { body.append(rope(piece)) }
        #expect(body.count > HTTPResponseWriter.inlineBodyLimit)
        let bytes = HTTPResponseWriter(serverName: nil, date: .omitted).serialize(HTTPResponse(body: body))
        #expect(bytes.regionCount == 4)
        #expect(Array(regionAddresses(bytes)[1...]) == regionAddresses(body))
        #expect(text(bytes) == "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n" + pieces.joined())
    }

    @Test("A body of up to inlineBodyLimit bytes, in any number of regions, shares the head's region")
    func inlinedBody() {
        let writer = HTTPResponseWriter(serverName: nil, date: .omitted)
        let limit = HTTPResponseWriter.inlineBodyLimit
        for size in [1, limit - 1, limit, limit + 1] {
            let bytes = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            var body = ByteRope()
            for start in stride(from: 0, to: size, by: 100) {
                body.append(ByteRope(copying: bytes[start..<min(start + 100, size)]))
            }
            let serialized = writer.serialize(HTTPResponse(body: body))
            let head = "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n"
            #expect(Array(serialized) == Array(head.utf8) + bytes, "\(size) bytes")
            if size <= limit {
                #expect(serialized.regionCount == 1, "\(size) bytes")
            } else {
                #expect(serialized.regionCount == 1 + body.regionCount, "\(size) bytes")
                #expect(Array(regionAddresses(serialized)[1...]) == regionAddresses(body), "\(size) bytes")
            }
        }
    }

    @Test("serializeHead and chunked encoding")
    func chunked() {
        let writer = HTTPResponseWriter(serverName: nil, date: .omitted)
        let response = HTTPResponse(headers: ["Transfer-Encoding": "chunked"])
        let data = rope("0123456789abcdefXYZ")
        let bytes = writer.serializeHead(response) + HTTPResponseWriter.chunk(data) + HTTPResponseWriter.lastChunk
        #expect(
            text(bytes) == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n13\r\n0123456789abcdefXYZ\r\n0\r\n\r\n"
        )
        #expect(HTTPResponseWriter.chunk(ByteRope()).isEmpty)
        #expect(sharesMemory(HTTPResponseWriter.chunk(data).subrange(4..<23), with: data))
        // What the writer chunks, the parser reads back.
        var parser = HTTPRequestParser()
        parser.append(rope("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
        parser.append(
            HTTPResponseWriter.chunk(data) + HTTPResponseWriter.chunk(rope("!")) + HTTPResponseWriter.lastChunk
        )
        #expect((try? parser.next())?.map { text($0.body) } == "0123456789abcdefXYZ!")
    }

    @Test("A head longer than the stack's scratch space")
    func longHead() {
        let writer = HTTPResponseWriter(serverName: nil, date: .omitted)
        let value = String(repeating: "v", count: 5000)
        let bytes = writer.serialize(HTTPResponse(headers: ["X-Big": value, "X-Small": "s"]))
        #expect(text(bytes) == "HTTP/1.1 200 OK\r\nX-Big: \(value)\r\nX-Small: s\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("Huge and many fields: every byte where it belongs, nothing past the head's buffer")
    func hugeHeads() throws {
        // Each case stresses one term of the writer's size estimate: a 1 MiB value, 10,000
        // fields, a long server name and reason phrase, 19-digit lengths, HTTP/1.0 keep-alive.
        var generator = SplitMix64(seed: 13)
        let scalars: [Unicode.Scalar] = ["a", "b", "\r", "\n", "\u{0}", " ", "é"]
        let request10 = try requestHead("HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let long = String(repeating: "x", count: 1 << 20)
        // The fields as given, beside the headers made of them: the expected head is built
        // from these, not from what HTTPHeaders kept.
        var manyFields: [(name: String, value: String)] = []
        var many = HTTPHeaders()
        for index in 0..<10_000 {
            let length = Int(generator.next() % 64)
            var value = String.UnicodeScalarView()
            for _ in 0..<length { value.append(scalars.randomElement(using: &generator)!) }
            manyFields.append(("X-\(index)", String(value)))
            many.append(name: "X-\(index)", value: String(value))
        }
        var longAndMany: HTTPHeaders = ["X-Long": long]
        longAndMany.append(contentsOf: many)
        var maximal = HTTPResponse(
            status: HTTPStatus(code: 999, reasonPhrase: String(repeating: "R", count: 70_000)),
            headers: longAndMany
        )
        maximal.contentLength = Int.max
        let longServer = String(repeating: "S", count: 100_000)
        let maximalFields = [("X-Long", long)] + manyFields
        let cases: [(HTTPResponseWriter, HTTPResponse, [(name: String, value: String)], HTTPRequestHead?)] = [
            (
                HTTPResponseWriter(serverName: longServer, date: .fixed(secondsSince1970: 0)), maximal, maximalFields,
                request10
            ),
            (
                HTTPResponseWriter(serverName: "", date: .fixed(secondsSince1970: .max)), maximal, maximalFields,
                request10
            ),
            (HTTPResponseWriter(serverName: nil, date: .omitted), HTTPResponse(headers: many), manyFields, nil),
            (
                HTTPResponseWriter(serverName: nil, date: .omitted), HTTPResponse(headers: ["X-Long": long]),
                [("X-Long", long)], nil
            ),
        ]
        for (writer, response, fields, request) in cases {
            let head = text(writer.serializeHead(response, for: request))
            // The same head, built independently.
            var expected = "HTTP/1.1 \(response.status.code) \(response.status.reasonPhrase)\r\n"
            if let serverName = writer.serverName { expected += "Server: \(serverName)\r\n" }
            switch writer.date {
            case .current: Issue.record("a fixed date keeps the comparison exact")
            case .fixed(let seconds): expected += "Date: \(HTTPDate.string(secondsSince1970: seconds))\r\n"
            case .omitted: break
            }
            for (name, value) in fields {
                var cleaned = String.UnicodeScalarView()
                for scalar in value.unicodeScalars {
                    cleaned.append(scalar == "\r" || scalar == "\n" || scalar == "\u{0}" ? " " : scalar)
                }
                expected += "\(name): \(cleaned)\r\n"
            }
            expected += "Content-Length: \(response.contentLength ?? response.body.count)\r\n"
            if request?.version == .http1_0 { expected += "Connection: keep-alive\r\n" }
            expected += "\r\n"
            #expect(head.utf8.count == expected.utf8.count)
            #expect(head == expected)
        }
    }

    @Test("A buffer of exactly the head's length is enough; the bound is the buffer's end")
    func exactCapacity() throws {
        let request = try requestHead("GET / HTTP/1.0\r\n\r\n")
        let responses = [
            self.hello(),
            HTTPResponse(status: .notModified, headers: ["ETag": "\"x\""]),
            HTTPResponse(headers: ["X-Big": String(repeating: "v", count: 5_000)], closeConnection: true),
        ]
        for response in responses {
            let head = self.writer.serializeHead(response, for: request)
            let exact = self.writer.serializeHead(response, for: request, capacity: head.count)
            #expect(Array(exact) == Array(head))
        }
    }

    @Test("The current date: 29 bytes of IMF-fixdate, in the Date field")
    func currentDate() {
        let now = HTTPDate.now
        #expect(now.utf8.count == 29)
        #expect(now.hasSuffix(" GMT"))
        let bytes = text(HTTPResponseWriter(serverName: nil).serialize(HTTPResponse()))
        #expect(bytes.hasPrefix("HTTP/1.1 200 OK\r\nDate: "))
        #expect(bytes.utf8.count == "HTTP/1.1 200 OK\r\nDate: \r\nContent-Length: 0\r\n\r\n".utf8.count + 29)
    }

    @Test("The cached current date is the realtime clock's second, on each of several threads")
    func currentDateOnThreads() {
        // Each thread has its own cache: every date read must be that of a second the realtime
        // clock showed around the read — never the second before (a stale cache, or a coarse
        // clock that has not turned yet). Each thread reads until the second has turned and
        // 10,000 reads more, where a lagging date would show (at most about a second of reads).
        let mismatches = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let start = Self.realtimeSecond()
            var readsAfterTurn = 0
            while readsAfterTurn < 10_000 {
                let before = Self.realtimeSecond()
                let now = HTTPDate.now
                let after = Self.realtimeSecond()
                if now != HTTPDate.string(secondsSince1970: before) && now != HTTPDate.string(secondsSince1970: after) {
                    mismatches.add(1, ordering: .relaxed)
                }
                if before > start { readsAfterTurn += 1 }
            }
        }
        #expect(mismatches.load(ordering: .relaxed) == 0)
    }

    private static func realtimeSecond() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec)
    }
}

@Suite("HTTPDate")
struct HTTPDateTests {
    @Test(
        "Known dates",
        arguments: [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
            (4_102_444_800, "Fri, 01 Jan 2100 00:00:00 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (Int.max, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (-62_167_219_200, "Sat, 01 Jan 0000 00:00:00 GMT"),
        ]
    )
    func known(seconds: Int, expected: String) {
        #expect(HTTPDate.string(secondsSince1970: seconds) == expected)
    }

    @Test("Agrees with gmtime_r over 1901...2100")
    func againstGmtime() {
        var generator = SystemRandomNumberGenerator()
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        for _ in 0..<20_000 {
            let seconds = Int.random(in: -2_208_988_800...4_102_444_799, using: &generator)
            var time = time_t(seconds)
            var parts = tm()
            _ = gmtime_r(&time, &parts)
            let year = String(parts.tm_year + 1900)
            let expected =
                "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(year) "
                + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
            #expect(HTTPDate.string(secondsSince1970: seconds) == expected, "\(seconds)")
        }
    }
}

@Suite("HTTPStatus and HTTPMethod")
struct HTTPStatusTests {
    @Test("Reason phrases, equality by code, literals")
    func statuses() {
        #expect(HTTPStatus.ok.description == "200 OK")
        #expect(HTTPStatus(code: 404).reasonPhrase == "Not Found")
        #expect(HTTPStatus(code: 599).reasonPhrase == "")
        #expect(HTTPStatus(code: 200, reasonPhrase: "Fine") == .ok)
        let teapot: HTTPStatus = 418
        #expect(teapot.reasonPhrase == "I'm a teapot")
        #expect(teapot.codeClass == 4)
        #expect(
            HTTPStatus.continue.forbidsBody && HTTPStatus.noContent.forbidsBody && HTTPStatus.notModified.forbidsBody
        )
        #expect(!HTTPStatus.ok.forbidsBody)
    }

    @Test("Versions order and print")
    func versions() {
        #expect(HTTPVersion.http1_0 < .http1_1)
        #expect(HTTPVersion.http1_1.description == "HTTP/1.1")
    }
}
