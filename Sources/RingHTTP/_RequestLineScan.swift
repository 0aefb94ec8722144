//===----------------------------------------------------------------------===//
// RingIO — RingHTTP: the request line's scan, for HTTPRequestParser.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Parses `method SP request-target SP HTTP-version` (RFC 9112 §3).
enum _RequestLineScan {
    /// Reads the first `length` bytes of `bytes`: the request line without its CRLF.
    ///
    /// - Returns: The method's first 8 bytes packed little-endian and its length, the
    ///   target's range and the version.
    static func scan<Bytes: IteratorProtocol<UInt8>>(
        _ bytes: inout Bytes,
        length: Int
    ) throws(_ParseFailure) -> (packedMethod: UInt64, methodLength: Int, target: Range<Int>, version: HTTPVersion) {
        var offset = 0

        // method = token, packed into a word for matching the registered methods.
        var packed: UInt64 = 0
        var methodLength = 0
        var sawSpace = false
        while offset < length, let byte = bytes.next() {
            offset &+= 1
            if byte == _Syntax.space {
                sawSpace = true
                break
            }
            guard _Syntax.isToken(byte) else {
                throw _ParseFailure(.badRequest, "invalid byte in the method")
            }
            if methodLength < 8 { packed |= UInt64(byte) << (UInt64(methodLength) &* 8) }
            methodLength &+= 1
        }
        guard sawSpace, methodLength > 0 else {
            throw _ParseFailure(.badRequest, "request line without a method and a target")
        }

        // request-target: visible ASCII, without a fragment (no form has one: RFC 9112 §3.2).
        let targetStart = offset
        sawSpace = false
        while offset < length, let byte = bytes.next() {
            offset &+= 1
            if byte == _Syntax.space {
                sawSpace = true
                break
            }
            guard _Syntax.isTarget(byte), byte != _Syntax.hash else {
                if byte == _Syntax.hash {
                    throw _ParseFailure(.fragmentInTarget, "fragment in the request target")
                }
                throw _ParseFailure(.badRequest, "invalid byte in the request target")
            }
        }
        let targetEnd = offset &- 1
        guard sawSpace, targetEnd > targetStart else {
            throw _ParseFailure(.badRequest, "request line without a target and a version")
        }

        // HTTP-version = "HTTP/" DIGIT "." DIGIT: exactly 8 bytes.
        guard length &- offset == 8 else {
            throw _ParseFailure(.badRequest, "malformed HTTP version")
        }
        var word: UInt64 = 0
        for shift in stride(from: UInt64(0), to: 64, by: 8) {
            word |= UInt64(bytes.next()!) << shift
        }
        let version: HTTPVersion
        switch word {
        case 0x312E_312F_5054_5448:  // "HTTP/1.1"
            version = .http1_1
        case 0x302E_312F_5054_5448:  // "HTTP/1.0"
            version = .http1_0
        default:
            let isDigit = { (byte: UInt64) in byte &- 0x30 < 10 }
            guard word & 0xFF_FFFF_FFFF == 0x2F_5054_5448,  // "HTTP/"
                isDigit(word >> 40 & 0xFF), word >> 48 & 0xFF == 0x2E, isDigit(word >> 56)
            else {
                throw _ParseFailure(.badRequest, "malformed HTTP version")
            }
            // HTTP/1.2 to HTTP/1.9: handled as the highest minor version this parser speaks
            // (RFC 9110 §6.2).
            guard word >> 40 & 0xFF == 0x31 else {
                throw _ParseFailure(.versionNotSupported, "HTTP major version other than 1")
            }
            version = .http1_1
        }
        return (packed, methodLength, targetStart..<targetEnd, version)
    }
}
