//===----------------------------------------------------------------------===//
// RingIO — the listener: resolving, binding and naming socket addresses.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address.
internal struct _SocketAddress: CustomStringConvertible {
    /// What a listener keeps of an address it bound.
    struct Bound: Sendable {
        let port: UInt16
        let description: String
    }

    var storage = sockaddr_storage()
    var length: socklen_t = 0

    var family: CInt { CInt(self.storage.ss_family) }

    var port: UInt16 {
        get {
            withUnsafeBytes(of: self.storage) { raw in
                self.family == AF_INET6
                    ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                    : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            }
        }
        set {
            let family = self.family
            withUnsafeMutableBytes(of: &self.storage) { raw in
                if family == AF_INET6 {
                    raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = newValue.bigEndian
                } else {
                    raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = newValue.bigEndian
                }
            }
        }
    }

    /// `"127.0.0.1:80"` or `"[::1]:80"`.
    var description: String {
        let family = self.family
        let host = withUnsafeBytes(of: self.storage) { raw in
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                return _POSIX.addressText(family: AF_INET6, address: &address)
            } else {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                return _POSIX.addressText(family: AF_INET, address: &address)
            }
        }
        return family == AF_INET6 ? "[\(host)]:\(self.port)" : "\(host):\(self.port)"
    }

    /// The first address `getaddrinfo` gives for `host` (passive: `"::"` and `"0.0.0.0"` mean
    /// every address).
    static func resolve(host: String, port: UInt16) throws(Errno) -> _SocketAddress {
        let (storage, length) = try _POSIX.passiveStreamAddress(host: host, port: port)
        return _SocketAddress(storage: storage, length: length)
    }

    /// A listening socket bound to `address`: close-on-exec, `SO_REUSEADDR`, `SO_REUSEPORT` when
    /// asked, dual stack for IPv6.
    ///
    /// - Throws: The errno of `socket`, of any `setsockopt`, of `bind` (EADDRINUSE…) or of
    ///   `listen`; the socket is closed again.
    static func listen(on address: _SocketAddress, options: IOListener.Options) throws(Errno) -> CInt {
        let fd = try _POSIX.socket(family: address.family, type: _SocketConstants.streamCloseOnExec)
        do throws(Errno) {
            try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, to: 1)
            if options.reusePort {
                try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, to: 1)
            }
            if address.family == AF_INET6 {
                try _POSIX.setOption(fd, level: CInt(IPPROTO_IPV6), name: IPV6_V6ONLY, to: 0)
            }
            try _POSIX.bind(fd, to: address.storage, length: address.length)
            try _POSIX.listen(fd, backlog: options.backlog)
        } catch {
            _POSIX.close(fd)
            throw error
        }
        return fd
    }

    /// The address `fd` is bound to.
    static func local(of fd: CInt) throws(Errno) -> _SocketAddress {
        let (storage, length) = try _POSIX.localAddress(of: fd)
        return _SocketAddress(storage: storage, length: length)
    }
}
