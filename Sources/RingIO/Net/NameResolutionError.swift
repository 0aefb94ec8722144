//===----------------------------------------------------------------------===//
// RingIO — networking: a host name that did not resolve.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A host name that did not resolve, with the resolver's reason.
public struct NameResolutionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name that was asked.
    public let host: String
    /// The family that was asked.
    public let family: SocketAddress.Family
    /// `getaddrinfo`'s code (`EAI_NONAME`, `EAI_AGAIN`…), or a resolver's own.
    public let code: CInt
    /// The reason, as `gai_strerror` words it ("Name or service not known").
    public let message: String

    /// A resolution failure; resolvers of your own make theirs with it.
    public init(host: String, family: SocketAddress.Family, code: CInt, message: String) {
        self.host = host
        self.family = family
        self.code = code
        self.message = message
    }

    public var description: String {
        "\"\(self.host)\" did not resolve (\(self.family)): \(self.message)"
    }
}
