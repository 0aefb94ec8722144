//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// The header fields of a request, in the order they were received, over the request's own
/// bytes.
///
/// No field is copied or turned into a `String` while parsing: the headers are the field
/// lines' bytes (a zero-copy sub-rope of what the peer sent, validated by the parser) and the
/// number of fields. Lookups walk those bytes and compare names ASCII case-insensitively;
/// names and values become `String`s only when asked for.
///
///     request.headers["host"]                      // "example.com"
///     request.headers.values(for: "Accept")        // every Accept field, in order
///     request.headers["x-tag"]                     // several fields: "a, b" (RFC 9110 §5.3)
///     for field in request.headers { print(field.name, field.value) }
///
/// Values are the field value with surrounding whitespace removed, exactly as sent otherwise:
/// no list splitting, no unquoting.
///
/// - Complexity: Lookups are O(*n*) in the bytes of the header section and allocate
///   nothing but their result (`String`s of up to 15 bytes need no allocation either).
public struct HTTPHeaders: Sequence, Sendable, CustomStringConvertible {
    /// The request's head; from `fieldsStart` to its end, the field lines, each ending with
    /// CRLF, already validated by the parser.
    private let head: ByteRope
    private let fieldsStart: Int

    /// The number of field lines.
    ///
    /// - Complexity: O(1).
    public let count: Int

    init(head: ByteRope, fieldsStart: Int, count: Int) {
        self.head = head
        self.fieldsStart = fieldsStart
        self.count = count
    }

    /// Whether there are no header fields.
    ///
    /// - Complexity: O(1).
    public var isEmpty: Bool { self.count == 0 }

    /// The field lines as received: `name: value` lines, each ending with CRLF (without the
    /// empty line that ends the header section). A sub-rope of the received bytes.
    ///
    /// - Complexity: O(log *r*) for *r* regions.
    public var bytes: ByteRope { self.head.subrange(self.fieldsStart...) }

    /// The values of every field named `name`, combined in order with `", "` as RFC 9110
    /// §5.3 allows; `nil` when there is none.
    ///
    ///     headers["content-type"]   // "text/plain"
    ///
    /// For `Set-Cookie`, which cannot be combined, use ``values(for:)``.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes.
    public subscript(name: String) -> String? {
        var combined: String?
        self.forEachValue(of: name) { range in
            let value = self.string(at: range)
            if combined == nil {
                combined = value
            } else {
                combined! += ", "
                combined! += value
            }
            return true
        }
        return combined
    }

    /// The value of the first field named `name`, or `nil`.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes, stopping at the first match.
    public func first(name: String) -> String? {
        self.firstValueBytes(for: name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The value of the first field named `name` as a sub-rope of the received bytes (no
    /// copy), or `nil`.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes, stopping at the first match.
    public func firstValueBytes(for name: String) -> ByteRope? {
        var found: ByteRope?
        self.forEachValue(of: name) { range in
            found = self.head.subrange(range)
            return false
        }
        return found
    }

    /// The values of every field named `name`, in order; empty when there is none.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes.
    public func values(for name: String) -> [String] {
        var values: [String] = []
        self.forEachValue(of: name) { range in
            values.append(self.string(at: range))
            return true
        }
        return values
    }

    /// Whether a field named `name` is present.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes, stopping at the first match.
    public func contains(name: String) -> Bool {
        var found = false
        self.forEachValue(of: name) { _ in
            found = true
            return false
        }
        return found
    }

    /// One field line: its name as sent and its value without surrounding whitespace.
    public struct Field: Sendable, CustomStringConvertible {
        /// The name as sent (case preserved), as a sub-rope of the received bytes.
        public let nameBytes: ByteRope
        /// The value without leading and trailing whitespace, as a sub-rope of the received
        /// bytes.
        public let valueBytes: ByteRope

        /// The name as sent, such as `Content-Type`.
        ///
        /// - Complexity: O(*n*); allocates only for names longer than 15 bytes.
        public var name: String { String(decoding: self.nameBytes, as: UTF8.self) }

        /// The value, decoded as UTF-8 (bytes that are not UTF-8 become U+FFFD).
        ///
        /// - Complexity: O(*n*); allocates only for values longer than 15 bytes.
        public var value: String { String(decoding: self.valueBytes, as: UTF8.self) }

        /// `name: value`.
        public var description: String { "\(self.name): \(self.value)" }
    }

    /// Iterates over the fields in the order they were received.
    public struct Iterator: IteratorProtocol {
        private let lines: ByteRope
        private var cursor: _FieldCursor<ByteRope.Iterator>

        init(lines: ByteRope) {
            self.lines = lines
            self.cursor = _FieldCursor(lines.makeIterator(), offset: 0)
        }

        /// The next field, or `nil` after the last.
        ///
        /// - Complexity: O(*n*) in the bytes of the field line.
        public mutating func next() -> Field? {
            guard let field = self.cursor.next(matching: nil) else { return nil }
            return Field(nameBytes: self.lines.subrange(field.name), valueBytes: self.lines.subrange(field.value))
        }
    }

    /// An iterator over the fields, in order.
    ///
    /// - Complexity: O(log *r*) for *r* regions.
    public func makeIterator() -> Iterator {
        Iterator(lines: self.bytes)
    }

    /// The number of fields: ``count``.
    ///
    /// - Complexity: O(1).
    public var underestimatedCount: Int { self.count }

    /// The field lines, one `name: value` per line.
    public var description: String {
        self.map(\.description).joined(separator: "\n")
    }

    // MARK: Lookup

    private func string(at range: Range<Int>) -> String {
        String(decoding: self.head.subrange(range), as: UTF8.self)
    }

    /// Calls `body` with the value range (in `head`) of each field named `name`, until it
    /// returns false. Walks raw memory when the head is one region, else the rope's regions.
    private func forEachValue(of name: String, _ body: (Range<Int>) -> Bool) {
        var name = name
        name.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            let walked: Void? = self.head.withContiguousStorageIfAvailable { head in
                let lines = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(head)[self.fieldsStart...])
                var cursor = _FieldCursor(lines.makeIterator(), offset: self.fieldsStart)
                while let field = cursor.next(matching: key) {
                    if field.matched && !body(field.value) { return }
                }
            }
            guard walked == nil else { return }
            var cursor = _FieldCursor(self.bytes.makeIterator(), offset: self.fieldsStart)
            while let field = cursor.next(matching: key) {
                if field.matched && !body(field.value) { return }
            }
        }
    }
}

/// Walks validated field lines (`name:OWS value OWS CRLF`, as the parser checked them) and
/// reports each field's name and value ranges.
struct _FieldCursor<Bytes: IteratorProtocol<UInt8>> {
    private var bytes: Bytes
    /// The offset of the next byte, in the coordinates the ranges are reported in.
    private var offset: Int

    init(_ bytes: Bytes, offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    /// The next field. With a `key`, a field whose name is not `key` (ASCII
    /// case-insensitively) is skipped over quickly and reported with `matched == false` and
    /// an empty value range.
    mutating func next(
        matching key: UnsafeRawBufferPointer?
    ) -> (name: Range<Int>, value: Range<Int>, matched: Bool)? {
        let nameStart = self.offset
        var matched = true
        var keyIndex = 0
        // The name, up to the colon.
        while true {
            guard let byte = self.bytes.next() else { return nil }
            self.offset &+= 1
            if byte == _Syntax.colon { break }
            if let key, matched {
                if keyIndex < key.count && _Syntax.lowercased(byte) == _Syntax.lowercased(key[keyIndex]) {
                    keyIndex &+= 1
                } else {
                    matched = false
                }
            }
        }
        let name = nameStart..<self.offset &- 1
        if let key { matched = matched && keyIndex == key.count }
        if !matched {
            while let byte = self.bytes.next() {
                self.offset &+= 1
                if byte == _Syntax.lf { break }
            }
            return (name, self.offset..<self.offset, false)
        }
        // The value, trimmed of OWS, up to CRLF.
        var start = self.offset
        var end = self.offset
        var seen = false
        while let byte = self.bytes.next() {
            self.offset &+= 1
            if byte == _Syntax.lf { break }
            if byte == _Syntax.cr { continue }
            if _Syntax.isWhitespace(byte) {
                if !seen { start = self.offset }
            } else {
                seen = true
                end = self.offset
            }
        }
        if !seen { end = start }
        return (name, start..<end, true)
    }
}
