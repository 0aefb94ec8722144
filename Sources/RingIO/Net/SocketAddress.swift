//===----------------------------------------------------------------------===//
// RingIO — networking: socket addresses (IPv4, IPv6, Unix domain).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The address of a socket: an IPv4 or IPv6 address and port, or a Unix domain socket's path
/// (including a name in Linux's abstract namespace).
///
/// Listeners bind to one (``IOListener/init(address:options:ring:acceptFailed:)``), connections
/// report theirs (``IOConnection/localAddress``, ``IOConnection/remoteAddress``),
/// ``IOConnection/connect(to:options:ring:)`` dials one, and datagram channels send to and
/// receive from them (``IODatagramChannel``).
///
///     let web = try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
///     let local = try SocketAddress(ipAddress: "fe80::1%eth0", port: 53)   // scope by name
///     let sidecar = try SocketAddress(unixPath: "/run/app/sidecar.sock")
///     let hidden = try SocketAddress(abstractUnixName: "app.control")      // no file
///     print(web, local, sidecar, hidden)
///     // 127.0.0.1:8080 [fe80::1%eth0]:53 unix:/run/app/sidecar.sock unix:@app.control
///
/// Only numeric addresses are parsed here; names are resolved by ``NameResolver`` (the
/// connect calls take a host name and resolve it off the ring).
///
/// Two addresses are equal when their bytes as the kernel sees them (`sockaddr_in`,
/// `sockaddr_in6`, `sockaddr_un`) are: `127.0.0.1:80` and `[::ffff:127.0.0.1]:80` differ.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The family of an address.
    public enum Family: Sendable, Hashable, CustomStringConvertible {
        /// IPv4 (`AF_INET`).
        case ipv4
        /// IPv6 (`AF_INET6`).
        case ipv6
        /// A Unix domain socket (`AF_UNIX`): a path, an abstract name, or unnamed.
        case unix

        public var description: String {
            switch self {
            case .ipv4: return "IPv4"
            case .ipv6: return "IPv6"
            case .unix: return "Unix"
            }
        }

        /// `AF_INET`, `AF_INET6` or `AF_UNIX`.
        internal var rawValue: CInt {
            switch self {
            case .ipv4: return AF_INET
            case .ipv6: return AF_INET6
            case .unix: return AF_UNIX
            }
        }
    }

    // The bytes of the address, as the kernel takes them: an IPv4 or IPv6 address inline (a
    // `sockaddr_in6` is 28 bytes), a Unix domain address (up to 110) in a box of its own. A
    // datagram's source is copied a few times on its way to a handler and back into a send:
    // 32 bytes and a nil reference, not a 128-byte `sockaddr_storage` (-500 instructions per
    // UDP echo, measured).
    /// IPv4 and IPv6: the first `length` bytes.
    private var inline = _InlineSocketAddress()
    /// Unix domain addresses: the bytes, of which the first `length` count.
    private var unixBox: _UnixSocketAddressBox?
    /// How many bytes the address has.
    internal private(set) var length: socklen_t = 0

    /// The address as a `sockaddr_storage` (for the few places that keep one).
    internal var storage: sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { self.copyBytes(to: $0.baseAddress!) }
        return storage
    }

    /// Copies the address's `length` bytes to `destination`.
    @inline(__always)
    internal func copyBytes(to destination: UnsafeMutableRawPointer) {
        self.withRawBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    }

    /// Calls `body` with the address's `length` bytes.
    @inline(__always)
    private func withRawBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let box = self.unixBox {
            return try withUnsafeBytes(of: box.storage) {
                try body(UnsafeRawBufferPointer(rebasing: $0[..<Int(self.length)]))
            }
        }
        return try withUnsafeBytes(of: self.inline) {
            try body(UnsafeRawBufferPointer(rebasing: $0[..<Int(self.length)]))
        }
    }

    /// The longest path or abstract name a Unix domain address holds, in bytes: `sun_path`
    /// less the terminating NUL (or, for an abstract name, the leading one).
    public static let maximumUnixPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    // MARK: Creating addresses

    /// An IPv4 or IPv6 address from its numeric text and a port.
    ///
    /// IPv4 in dotted-decimal form (`"192.0.2.1"`); IPv6 in any form `inet_pton` reads
    /// (`"::1"`, `"2001:db8::1"`, `"::ffff:192.0.2.1"`), optionally in brackets (`"[::1]"`),
    /// optionally with a zone (`"fe80::1%eth0"` or `"fe80::1%2"`: the interface's name or
    /// index), which becomes the scope id.
    ///
    /// - Throws: ``SocketAddressError`` when `ipAddress` is neither, or names an interface
    ///   that does not exist.
    public init(ipAddress: String, port: UInt16) throws(SocketAddressError) {
        var text = Substring(ipAddress)
        if text.first == "[" && text.last == "]" { text = text.dropFirst().dropLast() }
        var zone: Substring?
        if let percent = text.firstIndex(of: "%") {
            zone = text[text.index(after: percent)...]
            text = text[..<percent]
        }
        var v4 = in_addr()
        if zone == nil, inet_pton(AF_INET, String(text), &v4) == 1 {
            self.init(ipv4: v4, port: port)
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, String(text), &v6) == 1 else {
            throw SocketAddressError(.notNumeric, input: ipAddress)
        }
        var scope: UInt32 = 0
        if let zone {
            guard !zone.isEmpty else { throw SocketAddressError(.unknownZone, input: ipAddress) }
            if let index = UInt32(zone) {
                scope = index
            } else {
                scope = if_nametoindex(String(zone))
                guard scope != 0 else { throw SocketAddressError(.unknownZone, input: ipAddress) }
            }
        }
        self.init(ipv6: v6, port: port, scopeID: scope)
    }

    /// An IPv4 address from its 32 bits in host byte order (`0x7f00_0001` is `127.0.0.1`).
    public init(ipv4 address: UInt32, port: UInt16) {
        self.init(ipv4: in_addr(s_addr: address.bigEndian), port: port)
    }

    /// An IPv6 address from its 16 bytes in network order, a port and a scope id (the
    /// interface index of a link-local address; 0 for none).
    ///
    /// - Precondition: `bytes` has 16 elements.
    public init(ipv6 bytes: [UInt8], port: UInt16, scopeID: UInt32 = 0) {
        precondition(bytes.count == 16, "SocketAddress(ipv6:): an IPv6 address has 16 bytes, not \(bytes.count)")
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        self.init(ipv6: address, port: port, scopeID: scopeID)
    }

    /// The Unix domain address of the file at `unixPath`.
    ///
    /// A relative path is resolved by the kernel against the working directory when the
    /// address is used (bound or connected to), as `bind(2)` and `connect(2)` do.
    ///
    /// - Throws: ``SocketAddressError`` when the path is empty, holds a NUL byte, or is
    ///   longer than ``maximumUnixPathLength`` bytes (ENAMETOOLONG, in UTF-8).
    public init(unixPath: String) throws(SocketAddressError) {
        let bytes = Array(unixPath.utf8)
        guard !bytes.isEmpty else { throw SocketAddressError(.emptyPath, input: unixPath) }
        guard !bytes.contains(0) else { throw SocketAddressError(.nulInPath, input: unixPath) }
        guard bytes.count <= Self.maximumUnixPathLength else {
            throw SocketAddressError(.pathTooLong, input: unixPath)
        }
        self.init(unixBytes: bytes, abstract: false)
    }

    /// A Unix domain address in Linux's abstract namespace: `name` names a socket without a
    /// file, which goes away with the last socket bound to it. Any bytes may appear in it.
    ///
    /// - Throws: ``SocketAddressError`` when `name` is longer than ``maximumUnixPathLength``
    ///   bytes in UTF-8.
    public init(abstractUnixName name: String) throws(SocketAddressError) {
        let bytes = Array(name.utf8)
        guard bytes.count <= Self.maximumUnixPathLength else {
            throw SocketAddressError(.pathTooLong, input: name)
        }
        self.init(unixBytes: bytes, abstract: true)
    }

    /// An address as the kernel wrote it: `length` bytes at `address` (from `accept`,
    /// `recvfrom`, `getsockname`, `getpeername`).
    ///
    /// - Throws: ``SocketAddressError`` for a family other than IPv4, IPv6 and Unix, or a
    ///   length too short for the family.
    public init(unsafeAddress address: UnsafePointer<sockaddr>, length: socklen_t) throws(SocketAddressError) {
        let family = CInt(address.pointee.sa_family)
        let minimum: Int
        switch family {
        case AF_INET: minimum = MemoryLayout<sockaddr_in>.size
        case AF_INET6: minimum = MemoryLayout<sockaddr_in6>.size
        case AF_UNIX: minimum = MemoryLayout<sa_family_t>.size
        default: throw SocketAddressError(.unsupportedFamily, input: "family \(family)")
        }
        guard Int(length) >= minimum, Int(length) <= MemoryLayout<sockaddr_storage>.size else {
            throw SocketAddressError(.truncated, input: "family \(family), \(length) bytes")
        }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
        }
        self.init(storage: storage, length: length)
    }

    internal init(storage: sockaddr_storage, length: socklen_t) {
        if CInt(storage.ss_family) == AF_UNIX {
            self.unixBox = _UnixSocketAddressBox(storage)
            self.length = length
        } else {
            // IPv4 and IPv6 fit: the kernel reports at most a `sockaddr_in6`.
            let count = min(Int(length), MemoryLayout<_InlineSocketAddress>.size)
            withUnsafeMutableBytes(of: &self.inline) { inline in
                withUnsafeBytes(of: storage) { inline.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
            self.length = socklen_t(count)
        }
        if self.family == .unix {
            // Trailing bytes past the path's NUL (some calls report the whole `sun_path`) are
            // no part of the address: trimmed, so that equal paths compare equal.
            let trimmed: socklen_t?? = self.withUnixPath { bytes, abstract in
                abstract ? nil : socklen_t(Self.unixPathOffset + bytes.count + 1)
            }
            if let trimmed = trimmed ?? nil, trimmed < self.length { self.length = trimmed }
        }
    }

    private init(ipv4 address: in_addr, port: UInt16) {
        var value = sockaddr_in()
        value.sin_family = sa_family_t(AF_INET)
        value.sin_port = port.bigEndian
        value.sin_addr = address
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in.self) }
        self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
    }

    private init(ipv6 address: in6_addr, port: UInt16, scopeID: UInt32) {
        var value = sockaddr_in6()
        value.sin6_family = sa_family_t(AF_INET6)
        value.sin6_port = port.bigEndian
        value.sin6_addr = address
        value.sin6_scope_id = scopeID
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in6.self) }
        self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    /// `sun_path`'s offset in `sockaddr_un`.
    private static let unixPathOffset = MemoryLayout<sa_family_t>.size

    private init(unixBytes bytes: [UInt8], abstract: Bool) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: sa_family_t(AF_UNIX), as: sa_family_t.self)
            let path = UnsafeMutableRawBufferPointer(rebasing: raw[Self.unixPathOffset...])
            if abstract {
                path[0] = 0
                UnsafeMutableRawBufferPointer(rebasing: path[1...]).copyBytes(from: bytes)
            } else {
                path.copyBytes(from: bytes)
                path[bytes.count] = 0
            }
        }
        // A path counts its NUL (as `SUN_LEN` does); an abstract name is exactly its bytes.
        self.unixBox = _UnixSocketAddressBox(storage)
        self.length = socklen_t(Self.unixPathOffset + 1 + bytes.count)
    }

    // MARK: Reading addresses

    /// The address's family.
    public var family: Family {
        let family: sa_family_t =
            self.unixBox != nil
            ? sa_family_t(AF_UNIX) : withUnsafeBytes(of: self.inline) { $0.load(as: sa_family_t.self) }
        switch CInt(family) {
        case AF_INET: return .ipv4
        case AF_INET6: return .ipv6
        default: return .unix
        }
    }

    /// The port of an IPv4 or IPv6 address; `nil` for a Unix domain address.
    public var port: UInt16? {
        switch self.family {
        case .ipv4: return UInt16(bigEndian: self.load(sockaddr_in.self).sin_port)
        case .ipv6: return UInt16(bigEndian: self.load(sockaddr_in6.self).sin6_port)
        case .unix: return nil
        }
    }

    /// The numeric text of an IPv4 or IPv6 address without port or zone (`"127.0.0.1"`,
    /// `"::1"`); `nil` for a Unix domain address.
    public var ipAddress: String? {
        switch self.family {
        case .ipv4:
            var address = self.load(sockaddr_in.self).sin_addr
            return _POSIX.addressText(family: AF_INET, address: &address)
        case .ipv6:
            var address = self.load(sockaddr_in6.self).sin6_addr
            return _POSIX.addressText(family: AF_INET6, address: &address)
        case .unix:
            return nil
        }
    }

    /// The scope id (interface index) of an IPv6 address; `nil` for other families.
    public var scopeID: UInt32? {
        self.family == .ipv6 ? self.load(sockaddr_in6.self).sin6_scope_id : nil
    }

    /// The path of a Unix domain address bound to a file; `nil` for an abstract or unnamed
    /// one, and for other families.
    public var unixPath: String? {
        self.withUnixPath { bytes, abstract in
            abstract || bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        } ?? nil
    }

    /// The name of a Unix domain address in the abstract namespace; `nil` otherwise.
    public var abstractUnixName: String? {
        self.withUnixPath { bytes, abstract in
            abstract ? String(decoding: bytes, as: UTF8.self) : nil
        } ?? nil
    }

    /// `"127.0.0.1:80"`, `"[::1]:80"`, `"[fe80::1%eth0]:80"`, `"unix:/run/app.sock"`,
    /// `"unix:@name"` (abstract), or `"unix:"` (an unnamed socket, such as the peer of a
    /// connected client that did not bind).
    public var description: String {
        switch self.family {
        case .ipv4:
            return "\(self.ipAddress!):\(self.port!)"
        case .ipv6:
            var zone = ""
            if let scope = self.scopeID, scope != 0 {
                var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
                if if_indextoname(scope, &name) != nil {
                    zone = "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                } else {
                    zone = "%\(scope)"
                }
            }
            return "[\(self.ipAddress!)\(zone)]:\(self.port!)"
        case .unix:
            if let path = self.unixPath { return "unix:" + path }
            if let name = self.abstractUnixName { return "unix:@" + name }
            return "unix:"
        }
    }

    /// Calls `body` with a pointer to the address as the kernel takes it and its length in
    /// bytes. The pointer is valid only during the call.
    public func withUnsafeSocketAddress<Result, E: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> Result
    ) throws(E) -> Result {
        let length = self.length
        if let box = self.unixBox {
            return try box.withAddress { (address) throws(E) -> Result in try body(address, length) }
        }
        var inline = self.inline
        return try withUnsafePointer(to: &inline) { (pointer) throws(E) -> Result in
            try UnsafeRawPointer(pointer).withMemoryRebound(to: sockaddr.self, capacity: 1) {
                (address) throws(E) -> Result in
                try body(address, length)
            }
        }
    }

    /// The same address with another port (IPv4 and IPv6; a Unix address is returned as is).
    internal func withPort(_ port: UInt16) -> SocketAddress {
        var copy = self
        withUnsafeMutableBytes(of: &copy.inline) { raw in
            switch self.family {
            case .ipv4: raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = port.bigEndian
            case .ipv6: raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = port.bigEndian
            case .unix: break
            }
        }
        return copy
    }

    /// Whether this is an IPv4 or IPv6 wildcard address (`0.0.0.0`, `::`).
    internal var isWildcard: Bool {
        switch self.family {
        case .ipv4: return self.load(sockaddr_in.self).sin_addr.s_addr == 0
        case .ipv6:
            var address = self.load(sockaddr_in6.self).sin6_addr
            return withUnsafeBytes(of: &address) { $0.allSatisfy { $0 == 0 } }
        case .unix: return false
        }
    }

    /// The address as a `T` (`sockaddr_in`, `sockaddr_in6`): IPv4 and IPv6 only.
    private func load<T>(_ type: T.Type) -> T {
        withUnsafeBytes(of: self.inline) { $0.load(as: T.self) }
    }

    /// Calls `body` with the bytes of a Unix address's path or abstract name (without the
    /// NULs), and whether it is abstract; `nil` for other families.
    private func withUnixPath<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R? {
        guard let box = self.unixBox else { return nil }
        return withUnsafeBytes(of: box.storage) { raw in
            let count = max(0, Int(self.length) - Self.unixPathOffset)
            let path = UnsafeRawBufferPointer(rebasing: raw[Self.unixPathOffset..<Self.unixPathOffset + count])
            if path.isEmpty { return body(path, false) }
            if path[0] == 0 { return body(UnsafeRawBufferPointer(rebasing: path[1...]), true) }
            let end = path.firstIndex(of: 0) ?? path.count
            return body(UnsafeRawBufferPointer(rebasing: path[..<end]), false)
        }
    }

    // MARK: Equatable and Hashable

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        guard lhs.length == rhs.length, (lhs.unixBox == nil) == (rhs.unixBox == nil) else { return false }
        return lhs.withRawBytes { left in
            rhs.withRawBytes { right in
                memcmp(left.baseAddress!, right.baseAddress!, Int(lhs.length)) == 0
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        self.withRawBytes { hasher.combine(bytes: $0) }
    }
}

/// An IPv4 or IPv6 address's bytes, inline: room for a `sockaddr_in6` (28 bytes), aligned as
/// a `sockaddr` needs.
internal struct _InlineSocketAddress: Sendable {
    var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
}

/// A Unix domain address's bytes (immutable).
internal final class _UnixSocketAddressBox: Sendable {
    let storage: sockaddr_storage

    init(_ storage: sockaddr_storage) {
        self.storage = storage
    }

    func withAddress<R, E: Error>(_ body: (UnsafePointer<sockaddr>) throws(E) -> R) throws(E) -> R {
        var storage = self.storage
        return try withUnsafePointer(to: &storage) { (pointer) throws(E) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(E) -> R in
                try body(address)
            }
        }
    }
}
