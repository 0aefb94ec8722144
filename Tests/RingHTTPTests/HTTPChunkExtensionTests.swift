//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: chunk extensions (RFC 9112 §7.1.1).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

extension Conformance {
    /// A chunked POST whose first chunk-size line is `5` followed by `extensions`.
    static func chunk(_ extensions: String, _ error: HTTPParseError?) -> Conformance {
        Conformance(
            "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\(extensions)\r\nhello\r\n0\r\n\r\n",
            error
        )
    }
}

let chunkExtensionCases: [Conformance] = [
    .chunk(";a", nil),
    .chunk(";a=b", nil),
    .chunk(" ; a = b", nil),
    .chunk("\t;\ta\t=\t\"\"", nil),
    .chunk(";a=\"q\\\"x;y\"", nil),
    .chunk(";a;b=c;d=\"e\";f", nil),
    .chunk(";name=\"caf\u{E9}\"", nil),
    .chunk(";a=\"\\\t\"", nil),
    .chunk(";!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~", nil),
    .chunk(";", .invalidChunkExtension),
    .chunk("; ", .invalidChunkExtension),
    .chunk(";=b", .invalidChunkExtension),
    .chunk(";a=", .invalidChunkExtension),
    .chunk(";a= ", .invalidChunkExtension),
    .chunk(";a=b ", .invalidChunkExtension),
    .chunk(";a ", .invalidChunkExtension),
    .chunk(";a=\"x\" ", .invalidChunkExtension),
    .chunk(";a=\"x", .invalidChunkExtension),
    .chunk(";a=\"x\\", .invalidChunkExtension),
    .chunk(";a=b=c", .invalidChunkExtension),
    .chunk(";a b", .invalidChunkExtension),
    .chunk(";a=b c", .invalidChunkExtension),
    .chunk(";a=\"x\"y", .invalidChunkExtension),
    .chunk(";a=(b)", .invalidChunkExtension),
    .chunk(";a,b", .invalidChunkExtension),
    .chunk(";a;", .invalidChunkExtension),
    .chunk(";;a", .invalidChunkExtension),
    .chunk(";a\u{1}", .invalidChunkExtension),
    .chunk(";a=\"\u{7F}\"", .invalidChunkExtension),
    .chunk(";a=\"\\\u{1}\"", .invalidChunkExtension),
    // Not an extension: bytes after the size without a ";".
    .chunk(" ", .badRequest),
    .chunk(" a", .badRequest),
    .chunk("a=b", .badRequest),
]

@Suite("HTTPRequestParser: chunk extensions")
struct HTTPChunkExtensionTests {
    @Test("Chunk extensions follow their grammar, cut at every byte", arguments: chunkExtensionCases)
    func grammar(_ conformance: Conformance) throws {
        checkConformance(conformance)
        if conformance.error == nil {
            var parser = HTTPRequestParser()
            parser.append(rope(conformance.text))
            #expect(try parser.next()?.body.elementsEqual("hello".utf8) == true)
        }
    }

    @Test("The last chunk's extensions are checked too; the parser stays failed")
    func lastChunk() throws {
        let head = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        checkConformance(Conformance(head + "0;a=\"b\"\r\n\r\n", nil))
        checkConformance(Conformance(head + "0;a=\r\n\r\n", .invalidChunkExtension))
        var parser = HTTPRequestParser()
        parser.append(rope(head + "3;x=\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(throws: HTTPParseError.invalidChunkExtension) { try parser.next() }
        #expect(parser.failureReason == "chunk extension without a value after =")
        #expect(throws: HTTPParseError.invalidChunkExtension) { try parser.next() }
        #expect(parser.bufferedByteCount == 0)
        #expect(HTTPParseError.invalidChunkExtension.status == .badRequest)
    }
}
