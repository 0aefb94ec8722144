//===----------------------------------------------------------------------===//
// RingIO — networking: the system's resolver, getaddrinfo, off the rings.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The system's resolver: `getaddrinfo(3)`, with `/etc/hosts`, DNS and whatever
/// `/etc/nsswitch.conf` names, run on a small pool of threads of RingIO's own (it blocks) —
/// never on a ring, and never on Dispatch's or Swift's shared pools, which a busy program can
/// hold up.
public struct SystemResolver: NameResolver {
    /// The system's resolver; it has no settings of its own.
    public init() {}

    /// `getaddrinfo(host, port)` for stream sockets of `family`, on a thread of the resolver
    /// pool.
    ///
    /// - Throws: ``NameResolutionError`` with `getaddrinfo`'s code and message (EAI_NONAME
    ///   for a name that does not exist, EAI_AGAIN when the DNS server did not answer…).
    public func resolve(
        host: String,
        port: UInt16,
        family: SocketAddress.Family
    ) async throws(NameResolutionError) -> [SocketAddress] {
        let result: Result<[SocketAddress], NameResolutionError> = await withCheckedContinuation { continuation in
            Self.resolve(host: host, port: port, family: family) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Resolves on a thread of the resolver pool and hands the answer to `completion` there.
    internal static func resolve(
        host: String,
        port: UInt16,
        family: SocketAddress.Family,
        completion: @escaping @Sendable (Result<[SocketAddress], NameResolutionError>) -> Void
    ) {
        _BlockingPool.resolver.run {
            completion(Self.getaddrinfo(host: host, port: port, family: family))
        }
    }

    /// The blocking call itself. The corresponding C functions are `getaddrinfo`,
    /// `freeaddrinfo` and `gai_strerror`.
    internal static func getaddrinfo(
        host: String,
        port: UInt16,
        family: SocketAddress.Family
    ) -> Result<[SocketAddress], NameResolutionError> {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICSERV
        hints.ai_family = family.rawValue
        hints.ai_socktype = _SocketConstants.stream
        var list: UnsafeMutablePointer<addrinfo>?
        var status: CInt
        repeat {
            status = Glibc.getaddrinfo(host, String(port), &hints, &list)
        } while status == EAI_SYSTEM && errno == EINTR
        guard status == 0 else {
            let code = status
            let message: String
            if code == EAI_SYSTEM {
                message = Errno(rawValue: errno).description
            } else {
                message = String(cString: gai_strerror(code))
            }
            return .failure(NameResolutionError(host: host, family: family, code: code, message: message))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var next = list
        while let entry = next {
            next = entry.pointee.ai_next
            guard let address = entry.pointee.ai_addr,
                let parsed = try? SocketAddress(unsafeAddress: address, length: entry.pointee.ai_addrlen),
                parsed.family == family, !addresses.contains(parsed)
            else { continue }
            addresses.append(parsed)
        }
        return .success(addresses)
    }
}
