//===----------------------------------------------------------------------===//
// RingIO — networking: an address that could not be made.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An address that could not be made: text that is no numeric address, a Unix path too long
/// for `sun_path`, bytes of an unknown family.
public struct SocketAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Reason: Sendable, Hashable {
        /// Not a numeric IPv4 or IPv6 address (names are resolved by a ``NameResolver``).
        case notNumeric
        /// The zone after `%` names no interface.
        case unknownZone
        /// A Unix path or abstract name longer than ``SocketAddress/maximumUnixPathLength``.
        case pathTooLong
        /// An empty Unix path.
        case emptyPath
        /// A Unix path with a NUL byte in it.
        case nulInPath
        /// An address family other than IPv4, IPv6 and Unix.
        case unsupportedFamily
        /// Fewer bytes than the family's address has.
        case truncated
    }

    /// What is wrong.
    public let reason: Reason
    /// The text or the path that was given.
    public let input: String

    internal init(_ reason: Reason, input: String) {
        self.reason = reason
        self.input = input
    }

    /// The closest `Errno`: ENAMETOOLONG for a path too long, EAFNOSUPPORT for an unknown
    /// family, EINVAL otherwise.
    public var errno: Errno {
        switch self.reason {
        case .pathTooLong: return .fileNameTooLong
        case .unsupportedFamily: return .addressFamilyNotSupported
        default: return .invalidArgument
        }
    }

    public var description: String {
        switch self.reason {
        case .notNumeric: return "\"\(self.input)\" is not a numeric IPv4 or IPv6 address"
        case .unknownZone: return "\"\(self.input)\" names an interface (zone) that does not exist"
        case .pathTooLong:
            return
                "the Unix socket path \"\(self.input)\" has \(self.input.utf8.count) bytes; at most \(SocketAddress.maximumUnixPathLength) fit (ENAMETOOLONG)"
        case .emptyPath: return "an empty Unix socket path"
        case .nulInPath: return "the Unix socket path \"\(self.input)\" holds a NUL byte"
        case .unsupportedFamily: return "an address of \(self.input), neither IPv4, IPv6 nor Unix"
        case .truncated: return "an address too short for its family (\(self.input))"
        }
    }
}
