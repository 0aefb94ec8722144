//===----------------------------------------------------------------------===//
// RingIO — RingHTTP: the chunk-extension grammar, for HTTPRequestParser.
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

/// Where a chunk-size line's extensions are, after their first `;` (RFC 9112 §7.1.1).
enum _ChunkExtensionState {
    /// After `;`: BWS, then a name.
    case beforeName
    /// In a name.
    case name
    /// Whitespace after a name: more, `=` or `;`.
    case afterName
    /// After `=`: BWS, then a token or a quoted string.
    case beforeValue
    /// In a token value.
    case token
    /// In a quoted string; after its backslash.
    case quoted, quotedPair
    /// After a closing quote.
    case afterQuoted
    /// Whitespace after a value: more, or `;`.
    case afterValue

    /// Reads the next byte of the line.
    mutating func feed(_ byte: UInt8) throws(_ParseFailure) {
        switch self {
        case .beforeName:
            if _Syntax.isWhitespace(byte) { return }
            guard _Syntax.isToken(byte) else { throw Self.failure(byte, "chunk extension without a name") }
            self = .name
        case .name, .token:
            if _Syntax.isToken(byte) { return }
            if _Syntax.isWhitespace(byte) {
                self = self == .name ? .afterName : .afterValue
            } else if byte == _Syntax.semicolon {
                self = .beforeName
            } else if byte == _Syntax.equals && self == .name {
                self = .beforeValue
            } else {
                throw Self.failure(byte, "invalid byte in a chunk extension")
            }
        case .afterName:
            if _Syntax.isWhitespace(byte) { return }
            if byte == _Syntax.equals {
                self = .beforeValue
            } else if byte == _Syntax.semicolon {
                self = .beforeName
            } else {
                throw Self.failure(byte, "invalid byte in a chunk extension")
            }
        case .beforeValue:
            if _Syntax.isWhitespace(byte) { return }
            if byte == _Syntax.quote {
                self = .quoted
            } else if _Syntax.isToken(byte) {
                self = .token
            } else {
                throw Self.failure(byte, "chunk extension without a value after =")
            }
        case .quoted:
            // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
            if byte == _Syntax.quote {
                self = .afterQuoted
            } else if byte == _Syntax.backslash {
                self = .quotedPair
            } else if !_Syntax.isFieldValue(byte) {
                throw Self.failure(byte, "invalid byte in a chunk extension")
            }
        case .quotedPair:
            // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
            guard _Syntax.isFieldValue(byte) else { throw Self.failure(byte, "invalid byte in a chunk extension") }
            self = .quoted
        case .afterQuoted, .afterValue:
            if _Syntax.isWhitespace(byte) {
                self = .afterValue
            } else if byte == _Syntax.semicolon {
                self = .beforeName
            } else {
                throw Self.failure(byte, "invalid byte in a chunk extension")
            }
        }
    }

    /// Ends the line: the last extension must be complete, with no whitespace after it.
    func finish() throws(_ParseFailure) {
        switch self {
        case .name, .token, .afterQuoted:
            return
        case .beforeName:
            throw _ParseFailure(.invalidChunkExtension, "chunk extension without a name")
        case .beforeValue:
            throw _ParseFailure(.invalidChunkExtension, "chunk extension without a value after =")
        case .quoted, .quotedPair:
            throw _ParseFailure(.invalidChunkExtension, "unterminated quoted string in a chunk extension")
        case .afterName, .afterValue:
            throw _ParseFailure(.invalidChunkExtension, "whitespace at the end of a chunk extension")
        }
    }

    /// The failure for `byte`, which is not allowed here: a control character has a reason
    /// of its own.
    private static func failure(_ byte: UInt8, _ reason: StaticString) -> _ParseFailure {
        guard _Syntax.isFieldValue(byte) else {
            return _ParseFailure(.invalidChunkExtension, "control character in a chunk extension")
        }
        return _ParseFailure(.invalidChunkExtension, reason)
    }
}
