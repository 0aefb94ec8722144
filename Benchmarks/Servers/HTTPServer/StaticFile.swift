//===----------------------------------------------------------------------===//
// RingIO — benchmark server: what a static file's response depends on — validators, conditional
// requests, byte ranges, the media type.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingHTTP

#if canImport(Glibc)
import Glibc
#endif

/// A regular file under the root, as `stat` saw it: its validators and what a request's
/// `If-None-Match`, `If-Modified-Since`, `Range` and `If-Range` make of them (RFC 9110 §13,
/// §14).
struct StaticFile {
    /// The size in bytes.
    let size: Int
    /// The modification time in whole seconds since 1970: what `Last-Modified` says and
    /// `If-Modified-Since` is compared with (HTTP dates have second resolution).
    let modifiedSecond: Int
    /// A strong entity tag, `"<inode>-<size>-<mtime in ns>"` in hexadecimal: a file rewritten
    /// in place (new size or new mtime) or replaced (new inode) gets a new one.
    let etag: String

    init(_ info: stat) {
        self.size = Int(info.st_size)
        self.modifiedSecond = Int(info.st_mtim.tv_sec)
        // Wrapping: a tag only has to differ, and nanoseconds since 1970 fit 64 bits until 2262.
        let nanoseconds = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        self.etag = Self.entityTag(
            UInt64(info.st_ino),
            UInt64(bitPattern: Int64(info.st_size)),
            UInt64(bitPattern: nanoseconds)
        )
    }

    /// `"a-b-c"`, each number in lowercase hexadecimal, formatted into one new string.
    private static func entityTag(_ a: UInt64, _ b: UInt64, _ c: UInt64) -> String {
        // Three numbers of at most 16 digits, two dashes, two quotes.
        withUnsafeTemporaryAllocation(byteCount: 3 * 16 + 4, alignment: 1) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func hex(_ value: UInt64) {
                let digits = max(1, (64 - value.leadingZeroBitCount + 3) / 4)
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF
                    put(nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10)
                }
            }
            put(UInt8(ascii: "\""))
            hex(a)
            put(UInt8(ascii: "-"))
            hex(b)
            put(UInt8(ascii: "-"))
            hex(c)
            put(UInt8(ascii: "\""))
            return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        }
    }

    // MARK: Conditional requests

    /// Whether a `GET` or `HEAD` with these fields is answered 304 Not Modified: when
    /// `If-None-Match` lists this file's tag (weak comparison, §13.1.2) or is `*`; without
    /// `If-None-Match`, when `If-Modified-Since` is a valid date the file is not newer than
    /// (an invalid date is ignored).
    func isNotModified(_ headers: HTTPHeaders) -> Bool {
        if let tags = headers["If-None-Match"] {
            return Self.list(tags, matches: self.etag)
        }
        if let since = headers.firstValueBytes(name: "If-Modified-Since"),
            let seconds = HTTPDate.secondsSince1970(parsing: since)
        {
            return self.modifiedSecond <= seconds
        }
        return false
    }

    /// Whether `If-Range` (when the request has one) lets a `Range` be honoured: an entity
    /// tag must equal this file's (strong comparison: a weak tag never does), a date must be
    /// exactly its `Last-Modified`.
    func rangeIsCurrent(_ headers: HTTPHeaders) -> Bool {
        guard let condition = headers.firstValueBytes(name: "If-Range") else { return true }
        // A tag has a quote among its first three characters (`"…` or `W/"…`); a date has none.
        if condition.prefix(3).contains(UInt8(ascii: "\"")) {
            return condition.elementsEqual(self.etag.utf8)
        }
        return HTTPDate.secondsSince1970(parsing: condition) == self.modifiedSecond
    }

    /// Whether the `If-None-Match` list `value` (`*`, or entity tags separated by commas, each
    /// maybe `W/`) has a tag whose opaque part is `etag`'s. A malformed element ends the list
    /// (what came before it still counts).
    static func list(_ value: String, matches etag: String) -> Bool {
        let bytes = value.utf8
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ",") {
                index = bytes.index(after: index)
                continue
            }
            if byte == UInt8(ascii: "*") { return true }
            // W/"…": weak comparison ignores the W/.
            if byte == UInt8(ascii: "W") {
                index = bytes.index(after: index)
                guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "/") else { return false }
                index = bytes.index(after: index)
            }
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { return false }
            let opening = index
            guard let closing = bytes[bytes.index(after: opening)...].firstIndex(of: UInt8(ascii: "\"")) else {
                return false
            }
            index = bytes.index(after: closing)
            if bytes[opening..<index].elementsEqual(etag.utf8) { return true }
        }
        return false
    }

    // MARK: Ranges

    /// What a `Range` field asks of a file of `size` bytes.
    enum Range: Equatable {
        /// Nothing this server honours — not `bytes=`, malformed, several ranges, or a suffix
        /// of an empty file: the whole file with 200 (RFC 9110 §14.2 lets a server ignore
        /// `Range`).
        case ignored
        /// A well-formed range that selects none of the file: 416.
        case unsatisfiable
        /// Bytes `first...last` of the file (`last` clipped to its end): 206.
        case bytes(first: Int, last: Int)
    }

    /// Reads a `Range` value: one `first-last`, `first-` or `-suffix` range of bytes (§14.1.2).
    static func range(_ value: String, size: Int) -> Range {
        var spec = value.utf8[...]
        // The unit is case-insensitive.
        let unit = "bytes=".utf8
        guard spec.count > unit.count,
            zip(spec, unit).allSatisfy({ ($0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0) == $1 })
        else { return .ignored }
        spec = spec.dropFirst(unit.count)
        while let first = spec.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            spec = spec.dropFirst()
        }
        while let last = spec.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            spec = spec.dropLast()
        }
        guard !spec.contains(UInt8(ascii: ",")), let dash = spec.firstIndex(of: UInt8(ascii: "-")) else {
            return .ignored  // several ranges (or none): answered whole
        }
        let firstDigits = spec[..<dash]
        let lastDigits = spec[spec.index(after: dash)...]
        if firstDigits.isEmpty {
            // The last `suffix` bytes.
            guard let suffix = Self.number(lastDigits) else { return .ignored }
            guard suffix > 0 else { return .unsatisfiable }
            // An empty file has no bytes to name in a Content-Range: answered whole.
            guard size > 0 else { return .ignored }
            return .bytes(first: size - min(suffix, size), last: size - 1)
        }
        guard let first = Self.number(firstDigits) else { return .ignored }
        var last = Int.max
        if !lastDigits.isEmpty {
            guard let given = Self.number(lastDigits), given >= first else { return .ignored }
            last = given
        }
        guard first < size else { return .unsatisfiable }
        return .bytes(first: first, last: min(last, size - 1))
    }

    /// A run of decimal digits, saturating at `Int.max`; `nil` when empty or not all digits.
    private static func number(_ digits: Substring.UTF8View) -> Int? {
        guard !digits.isEmpty else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            value = overflowed || overflowedAgain ? Int.max : sum
        }
        return value
    }

    // MARK: Media types

    /// The `Content-Type` for a file name, by its extension (ASCII case-insensitively);
    /// `application/octet-stream` when it has none or one not listed.
    ///
    /// One hash lookup (a `switch` over strings would compare the extension with every case
    /// before the default).
    static func contentType(of path: String) -> String {
        // On the UTF-8 bytes: searching the characters costs grapheme breaking, several
        // thousand instructions per request.
        let bytes = path.utf8
        let nameStart = bytes.lastIndex(of: UInt8(ascii: "/")).map { bytes.index(after: $0) } ?? bytes.startIndex
        // A name starting with its only dot (`.profile`) has no extension.
        guard let dot = bytes[nameStart...].lastIndex(of: UInt8(ascii: ".")), dot != nameStart else {
            return "application/octet-stream"
        }
        let suffix = String(Substring(bytes[bytes.index(after: dot)...]))
        return Self.mediaTypes[suffix] ?? Self.mediaTypes[suffix.lowercased()] ?? "application/octet-stream"
    }

    /// Media types by lowercase file extension: the usual types of the web.
    private static let mediaTypes: [String: String] = [
        "html": "text/html; charset=utf-8",
        "htm": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8",
        "json": "application/json",
        "map": "application/json",
        "webmanifest": "application/manifest+json",
        "txt": "text/plain; charset=utf-8",
        "md": "text/markdown; charset=utf-8",
        "csv": "text/csv; charset=utf-8",
        "xml": "application/xml",
        "svg": "image/svg+xml",
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "avif": "image/avif",
        "ico": "image/x-icon",
        "bmp": "image/bmp",
        "wasm": "application/wasm",
        "pdf": "application/pdf",
        "zip": "application/zip",
        "gz": "application/gzip",
        "tar": "application/x-tar",
        "woff": "font/woff",
        "woff2": "font/woff2",
        "ttf": "font/ttf",
        "otf": "font/otf",
        "mp4": "video/mp4",
        "m4v": "video/mp4",
        "webm": "video/webm",
        "ogv": "video/ogg",
        "mp3": "audio/mpeg",
        "m4a": "audio/mp4",
        "ogg": "audio/ogg",
        "oga": "audio/ogg",
        "opus": "audio/opus",
        "wav": "audio/wav",
        "flac": "audio/flac",
    ]
}
