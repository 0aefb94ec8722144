//===----------------------------------------------------------------------===//
// RingIO — networking: resolving host names, off the rings.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Turns a host name into addresses, one family at a time, for
/// ``IOConnection/connect(host:port:options:ring:)``.
///
/// The connect asks for IPv6 and IPv4 at once, as Happy Eyeballs (RFC 8305) does, and starts
/// connecting as the answers come. It never calls a resolver on a ring's thread.
/// ``SystemResolver`` (`getaddrinfo`) is the default; give another in
/// ``IOConnection/ConnectOptions/resolver`` — a DNS client of your own, or fixed answers for
/// tests.
public protocol NameResolver: Sendable {
    /// The addresses of `host` in `family` (``SocketAddress/Family/ipv4`` or
    /// ``SocketAddress/Family/ipv6``), each with `port`, in the order to try them. An empty
    /// array, or ``NameResolutionError``, when `host` has none in that family.
    func resolve(
        host: String,
        port: UInt16,
        family: SocketAddress.Family
    ) async throws(NameResolutionError) -> [SocketAddress]
}
