//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

/// Header fields, in order: those of a received request, over the request's own bytes, or
/// those of a response, built with ``append(name:value:)`` or a literal.
///
/// No field of a request is copied or turned into a `String` while parsing: its headers are
/// the field lines' bytes (a zero-copy sub-rope of what the peer sent, validated by the
/// parser) and the number of fields. Lookups walk those bytes and compare names ASCII
/// case-insensitively; names and values become `String`s only when asked for.
///
///     request.head.headers["host"]                  // "example.com"
///     request.head.headers.values(name: "Accept")   // every Accept field, in order
///     request.head.headers["x-tag"]                 // several fields: "a, b" (RFC 9110 §5.3)
///     for field in request.head.headers { print(field.name, field.value) }
///
/// Values are the field value with surrounding whitespace removed, exactly as sent otherwise:
/// no list splitting, no unquoting.
///
/// A response's fields are built the same way they are read: appended as field lines
/// (`name: value` and CRLF) to one buffer, which ``HTTPResponseWriter`` copies into the
/// response head as it is.
///
///     var headers: HTTPHeaders = ["Content-Type": "text/plain", "Cache-Control": "no-cache"]
///     headers.append(name: "Set-Cookie", value: "a=1")
///     HTTPResponse(status: .ok, headers: headers, body: body)
///
/// - Complexity: Lookups are O(*n*) in the bytes of the header section and allocate
///   nothing but their result (`String`s of up to 15 bytes need no allocation either) and,
///   for a request value split across received regions, one copy of that value.
public struct HTTPHeaders: Sequence, Sendable, CustomStringConvertible, ExpressibleByDictionaryLiteral {
    // Either a request's fields (`fieldsStart >= 0`): `head` from `fieldsStart` to its end are
    // the field lines, each ending with CRLF, validated by the parser; `lines` is empty. Or
    // built fields (`fieldsStart == -1`): `lines` are the field lines as written (`name: value`
    // CRLF, the name a token, no CR, LF or NUL in the value), `own` says which of the writer's
    // fields are among them, and `head` is empty. Plain stored properties rather than an
    // enum: an append then mutates `lines` in place.
    private var head: ByteRope
    private var fieldsStart: Int
    private var lines: [UInt8]
    private var own: _OwnFields

    /// The number of fields.
    ///
    /// - Complexity: O(1).
    public private(set) var count: Int

    init(head: ByteRope, fieldsStart: Int, count: Int) {
        self.head = head
        self.fieldsStart = fieldsStart
        self.lines = []
        self.own = _OwnFields()
        self.count = count
    }

    /// No fields, for a response.
    ///
    /// - Complexity: O(1).
    public init() {
        self.head = ByteRope()
        self.fieldsStart = -1
        self.lines = []
        self.own = _OwnFields()
        self.count = 0
    }

    /// The fields of a literal, in the literal's order; a name may come more than once.
    ///
    ///     let headers: HTTPHeaders = ["Content-Type": "text/html", "Vary": "Accept-Encoding"]
    ///
    /// - Precondition: Every name is a token (letters, digits and `!#$%&'*+-.^_`|~`).
    /// - Complexity: O(*n*) in the fields' bytes; one allocation.
    public init(dictionaryLiteral fields: (String, String)...) {
        self.init()
        var bytes = 0
        for (name, value) in fields { bytes += name.utf8.count + value.utf8.count + 4 }
        // Room for two more fields of a typical size: a response often adds one or two.
        self.lines.reserveCapacity(bytes + 64)
        for (name, value) in fields { self.append(name: name, value: value) }
    }

    /// Whether there are no header fields.
    ///
    /// - Complexity: O(1).
    public var isEmpty: Bool { self.count == 0 }

    /// The field lines: `name: value` lines, each ending with CRLF (without the empty line
    /// that ends a header section). For a request, a sub-rope of the received bytes; for
    /// built fields, a copy of them.
    ///
    /// - Complexity: O(log *r*) for *r* regions; O(*n*) for built fields.
    public var bytes: ByteRope {
        self.fieldsStart >= 0 ? self.head.subrange(self.fieldsStart...) : ByteRope(copying: self.lines)
    }

    // MARK: Building

    /// Appends the field `name: value`, after the others.
    ///
    /// A value cannot split the message it goes into: CR, LF and NUL in it are written as
    /// spaces. Fields of a received request are copied first (once) when you append to them.
    ///
    /// - Parameters:
    ///   - name: The field name as it will be sent, such as `Content-Type`.
    ///   - value: The value, as it will be sent (with CR, LF and NUL made spaces).
    /// - Precondition: `name` is a token (letters, digits and `!#$%&'*+-.^_`|~`), not empty.
    /// - Complexity: Amortized O(*n*) in the bytes of `name` and `value`.
    public mutating func append(name: String, value: String) {
        self.makeBuilt()
        var name = name
        var value = value
        name.withUTF8 { name in
            precondition(
                !name.isEmpty && name.allSatisfy(_Syntax.isToken),
                "HTTPHeaders: the field name \(String(decoding: name, as: UTF8.self).debugDescription) is not a token"
            )
            self.own.note(UnsafeRawBufferPointer(name))
            value.withUTF8 { value in
                let needed = name.count + value.count + 4
                if self.lines.capacity - self.lines.count < needed {
                    // Grow geometrically: `reserveCapacity` alone takes exactly what it is asked.
                    self.lines.reserveCapacity(Swift.max(self.lines.count + needed, 2 * self.lines.capacity))
                }
                self.lines.append(contentsOf: name)
                self.lines.append(_Syntax.colon)
                self.lines.append(_Syntax.space)
                let valueStart = self.lines.count
                self.lines.append(contentsOf: value)
                // CR (0x0D), LF (0x0A) and NUL are all below 0x0E: one comparison for most
                // bytes, and nothing to write for a value without them.
                if value.contains(where: { $0 < 0x0E }) {
                    for index in valueStart..<self.lines.count {
                        let byte = self.lines[index]
                        if byte == _Syntax.cr || byte == _Syntax.lf || byte == 0 { self.lines[index] = _Syntax.space }
                    }
                }
                self.lines.append(_Syntax.cr)
                self.lines.append(_Syntax.lf)
            }
        }
        self.count += 1
    }

    /// Appends every field of `other`, in order.
    ///
    /// - Complexity: O(*n*) in the bytes of `other`'s fields.
    public mutating func append(contentsOf other: HTTPHeaders) {
        guard !other.isEmpty else { return }
        self.makeBuilt()
        if other.fieldsStart >= 0 {
            // Validated by the parser: the lines go as they came.
            self.lines.append(contentsOf: other.bytes)
        } else {
            self.lines.append(contentsOf: other.lines)
        }
        self.own.formUnion(other.ownFields)
        self.count += other.count
    }

    /// Makes room for `byteCount` bytes of field lines in all (a field takes the bytes of its
    /// name and value, and 4).
    ///
    /// - Complexity: O(*n*) when it reallocates.
    public mutating func reserveCapacity(_ byteCount: Int) {
        self.makeBuilt()
        self.lines.reserveCapacity(byteCount)
    }

    /// Turns a request's fields into built ones, copying their lines (once).
    private mutating func makeBuilt() {
        guard self.fieldsStart >= 0 else { return }
        self.own = self.ownFields
        self.lines = Array(self.bytes)
        self.head = ByteRope()
        self.fieldsStart = -1
    }

    // MARK: Lookup

    /// The values of every field named `name`, combined in order with `", "` as RFC 9110
    /// §5.3 allows; `nil` when there is none. With one field of that name, its value.
    ///
    ///     headers["content-type"]   // "text/plain"
    ///
    /// For `Set-Cookie`, which cannot be combined, use ``values(name:)``.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes.
    public subscript(name: String) -> String? {
        var combined: String?
        self.forEachValue(of: name) { value in
            let value = String(decoding: value, as: UTF8.self)
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

    /// The values of every field named `name`, in order; empty when there is none.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes.
    public func values(name: String) -> [String] {
        var values: [String] = []
        self.forEachValue(of: name) { value in
            values.append(String(decoding: value, as: UTF8.self))
            return true
        }
        return values
    }

    /// The value of the first field named `name` as bytes, or `nil`: for a request, a
    /// sub-rope of the received bytes (no copy), to parse without making a `String`; for
    /// built fields, a copy.
    ///
    /// - Parameter name: The field name, matched ASCII case-insensitively.
    /// - Complexity: O(*n*) in the header section's bytes, stopping at the first match.
    public func firstValueBytes(name: String) -> ByteRope? {
        var found: ByteRope?
        if self.fieldsStart >= 0 {
            Self.forEachValueRange(of: name, in: self.head, fieldsStart: self.fieldsStart) { range in
                found = self.head.subrange(range)
                return false
            }
        } else {
            self.forEachValue(of: name) { value in
                found = ByteRope(copying: UnsafeRawBufferPointer(value))
                return false
            }
        }
        return found
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

    // MARK: Fields

    /// One field line: its name as sent and its value without surrounding whitespace.
    public struct Field: Sendable, CustomStringConvertible {
        /// The name as sent (case preserved), as a sub-rope of the field lines.
        public let nameBytes: ByteRope
        /// The value without leading and trailing whitespace, as a sub-rope of the field
        /// lines.
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

    /// Iterates over the fields in order.
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
    /// - Complexity: O(log *r*) for *r* regions; for built fields, O(*n*) (one copy of the
    ///   lines into a rope).
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

    // MARK: For the writer

    /// Which of the fields the writer adds are among these.
    var ownFields: _OwnFields {
        guard self.fieldsStart >= 0 else { return self.own }
        var own = _OwnFields()
        for field in self {
            let name = field.nameBytes
            if name.withContiguousStorageIfAvailable({ own.note(UnsafeRawBufferPointer($0)) }) == nil {
                Array(name).withUnsafeBytes { own.note($0) }
            }
        }
        return own
    }

    /// The number of bytes of the field lines.
    var lineByteCount: Int {
        self.fieldsStart >= 0 ? self.head.count - self.fieldsStart : self.lines.count
    }

    /// Copies the field lines to `destination`, which has room for ``lineByteCount`` bytes.
    func copyLines(to destination: UnsafeMutableRawBufferPointer) {
        if self.fieldsStart >= 0 {
            _ = self.head.copyBytes(to: destination, from: self.fieldsStart..<self.head.count)
        } else {
            self.lines.withUnsafeBytes { destination.copyMemory(from: $0) }
        }
    }

    // MARK: Walking the lines

    /// Calls `body` with the value of each field named `name`, until it returns false.
    private func forEachValue(of name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        if self.fieldsStart >= 0 {
            let head = self.head
            Self.forEachValueRange(of: name, in: head, fieldsStart: self.fieldsStart) { range in
                let value = head.subrange(range)
                return value.withContiguousStorageIfAvailable { body($0) }
                    ?? Array(value).withUnsafeBufferPointer { body($0) }
            }
            return
        }
        var name = name
        name.withUTF8 { key in
            self.lines.withUnsafeBufferPointer { lines in
                var cursor = _FieldCursor(UnsafeRawBufferPointer(lines).makeIterator(), offset: 0)
                while let field = cursor.next(matching: UnsafeRawBufferPointer(key)) {
                    if field.matched && !body(UnsafeBufferPointer(rebasing: lines[field.value])) { return }
                }
            }
        }
    }

    /// Calls `body` with the value range (in `head`) of each field named `name`, until it
    /// returns false. Walks raw memory when the head is one region, else the rope's regions.
    private static func forEachValueRange(
        of name: String,
        in head: ByteRope,
        fieldsStart: Int,
        _ body: (Range<Int>) -> Bool
    ) {
        var name = name
        name.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            let walked: Void? = head.withContiguousStorageIfAvailable { whole in
                let lines = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(whole)[fieldsStart...])
                var cursor = _FieldCursor(lines.makeIterator(), offset: fieldsStart)
                while let field = cursor.next(matching: key) {
                    if field.matched && !body(field.value) { return }
                }
            }
            guard walked == nil else { return }
            var cursor = _FieldCursor(head.subrange(fieldsStart...).makeIterator(), offset: fieldsStart)
            while let field = cursor.next(matching: key) {
                if field.matched && !body(field.value) { return }
            }
        }
    }
}

/// The fields that ``HTTPResponseWriter`` adds itself and leaves out when the response has
/// them already.
struct _OwnFields: Sendable {
    var contentLength = false
    var transferEncoding = false
    var connection = false
    var server = false
    var date = false

    /// Notes the field name `name` (its bytes).
    mutating func note(_ name: UnsafeRawBufferPointer) {
        // Only names of these lengths can be one of the five: most fields stop here.
        switch name.count {
        case 4, 6, 10, 14, 17: break
        default: return
        }
        var key = _ShortKey()
        for byte in name { key.append(byte) }
        switch key {
        case .contentLength: self.contentLength = true
        case .transferEncoding: self.transferEncoding = true
        case .connection: self.connection = true
        case .server: self.server = true
        case .date: self.date = true
        default: break
        }
    }

    mutating func formUnion(_ other: _OwnFields) {
        self.contentLength = self.contentLength || other.contentLength
        self.transferEncoding = self.transferEncoding || other.transferEncoding
        self.connection = self.connection || other.connection
        self.server = self.server || other.server
        self.date = self.date || other.date
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
