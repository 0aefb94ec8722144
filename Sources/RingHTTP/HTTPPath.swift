//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Percent-decoding and normalization of request paths, for a server that maps them to
/// files under a root directory and must never leave it.
///
///     guard let path = HTTPPath.normalized(request.head.path) else {
///         return HTTPResponse(status: .badRequest)      // traversal, NUL, bad escape …
///     }
///     let file = root + path                             // "/srv/www" + "/docs/a.html"
///
/// ``normalized(_:)`` splits the path on `/` *before* decoding, so an encoded slash
/// (`%2F`) cannot create or remove a segment, resolves `.` and `..` segments (also when they
/// were encoded, `%2e%2e`), and refuses (returns `nil`) whatever could escape the root or
/// confuse a file system: a `..` above the root, an encoded `/`, a backslash, NUL or another
/// control character, a malformed escape, bytes that are not UTF-8.
///
/// Symbolic links inside the root can still point outside it: a file server must also
/// check the resolved file (for example with `realpath` or `openat2(RESOLVE_BENEATH)`).
public enum HTTPPath {
    /// Decodes `%XX` escapes (RFC 3986 §2.1); other bytes are kept as they are. `+` is not
    /// a space in a path and stays `+`.
    ///
    ///     HTTPPath.percentDecoded("a%20b".utf8)   // Array("a b".utf8)
    ///
    /// - Parameter bytes: Percent-encoded bytes.
    /// - Returns: The decoded bytes, or `nil` when a `%` is not followed by two hexadecimal
    ///   digits.
    /// - Complexity: O(*n*); one allocation for the result.
    public static func percentDecoded(_ bytes: some Sequence<UInt8>) -> [UInt8]? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.underestimatedCount)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                decoded.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(_Syntax.hexValue),
                let low = iterator.next().flatMap(_Syntax.hexValue)
            else { return nil }
            decoded.append(UInt8(high << 4 | low))
        }
        return decoded
    }

    /// Decodes `%XX` escapes in `string`.
    ///
    /// - Parameter string: A percent-encoded string, such as a path or a query.
    /// - Returns: The decoded string, or `nil` when an escape is malformed or the decoded
    ///   bytes are not UTF-8.
    /// - Complexity: O(*n*).
    public static func percentDecoded(_ string: String) -> String? {
        guard let bytes = Self.percentDecoded(string.utf8) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The decoded segments of `path` after resolving `.` and `..`, or `nil` when the path
    /// must be refused (see ``normalized(_:)``).
    ///
    ///     HTTPPath.segments("/a/./b/../c%20d")   // ["a", "c d"]
    ///
    /// - Parameter path: An origin-form path, starting with `/`, still percent-encoded; a
    ///   query (from the first `?`) is ignored.
    /// - Complexity: O(*n*).
    public static func segments(_ path: String) -> [String]? {
        self.resolve(path)?.segments
    }

    /// The normalized, decoded form of `path`, or `nil` when it must be refused.
    ///
    /// The result starts with `/`, has no empty, `.` or `..` segment, and ends with `/` when
    /// `path` named a directory (it ended with `/`, `/.` or `/..`):
    ///
    /// | path | result |
    /// |---|---|
    /// | `/` | `/` |
    /// | `/a/b/../c` | `/a/c` |
    /// | `/a/./b//c/` | `/a/b/c/` |
    /// | `/a%20b` | `/a b` |
    /// | `/a/%2e%2e/b` | `/b` |
    /// | `/..`, `/a/../..`, `/%2e%2e/x` | `nil`: above the root |
    /// | `/a%2fb`, `/a%5cb`, `/a\b` | `nil`: encoded slash, backslash |
    /// | `/a%00b`, `/a%0Ab` | `nil`: NUL, control character |
    /// | `/a%zz`, `/a%2` | `nil`: malformed escape |
    /// | `/%ff` | `nil`: not UTF-8 |
    /// | `a/b`, `http://h/a`, `*` | `nil`: not origin-form (take ``HTTPRequestHead/path``) |
    ///
    /// The result is decoded: it is a file-system path, not a URL path. Do not decode or
    /// normalize it again (`/a%2525` gives `/a%25`, which would decode once more).
    ///
    /// - Parameter path: An origin-form path, starting with `/`, still percent-encoded; a
    ///   query (from the first `?`) is ignored.
    /// - Returns: The path to append to the root directory, or `nil`.
    /// - Complexity: O(*n*).
    public static func normalized(_ path: String) -> String? {
        guard let (segments, directory) = self.resolve(path) else { return nil }
        var result = "/"
        result += segments.joined(separator: "/")
        if directory && !segments.isEmpty { result += "/" }
        return result
    }

    /// The resolved segments and whether the path names a directory (ends with a slash).
    private static func resolve(_ path: String) -> (segments: [String], directory: Bool)? {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/") else { return nil }
        let end = utf8.firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex
        var segments: [String] = []
        var directory = false
        for raw in utf8[utf8.index(after: utf8.startIndex)..<end].split(
            separator: UInt8(ascii: "/"),
            omittingEmptySubsequences: false
        ) {
            guard let bytes = Self.percentDecoded(raw),
                !bytes.contains(where: {
                    $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\")
                }),
                let segment = String(validating: bytes, as: UTF8.self)
            else { return nil }
            switch segment {
            case "", ".":
                directory = true
            case "..":
                guard !segments.isEmpty else { return nil }
                segments.removeLast()
                directory = true
            default:
                segments.append(segment)
                directory = false
            }
        }
        return (segments, directory)
    }
}
