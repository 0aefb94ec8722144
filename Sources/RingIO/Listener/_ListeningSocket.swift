//===----------------------------------------------------------------------===//
// RingIO — the listener: listening sockets, TCP and Unix domain.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Opening the listening sockets of an ``IOListener``.
internal enum _ListeningSocket {
    /// A listening socket bound to `address`: close-on-exec; for TCP `SO_REUSEADDR`,
    /// `SO_REUSEPORT` when asked, dual stack for IPv6; for a Unix path, the stale file
    /// removed when asked and the file's permissions set before it listens. Returns the
    /// socket, and the socket file it made (for a Unix path), which its closer removes.
    ///
    /// - Throws: The errno of `socket`, any `setsockopt`, `bind` (EADDRINUSE…), `chmod` or
    ///   `listen`; the socket is closed again (and its file removed).
    static func open(on address: SocketAddress, options: IOListener.Options) throws(Errno) -> (CInt, _UnixSocketFile?) {
        let fd = try _POSIX.socket(family: address.family.rawValue, type: _SocketConstants.streamCloseOnExec)
        var file: _UnixSocketFile?
        do throws(Errno) {
            if address.family == .unix {
                if let path = address.unixPath, options.removeStaleSocketFile {
                    _UnixSocketFile.removeIfStale(path)
                }
                try _POSIX.bind(fd, to: address)
                if let path = address.unixPath {
                    file = try _UnixSocketFile(boundAt: path)
                    if let permissions = options.socketFilePermissions {
                        try _POSIX.changeMode(path, to: permissions.rawValue)
                    }
                }
            } else {
                try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, to: 1)
                if options.reusePort {
                    try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, to: 1)
                }
                if address.family == .ipv6 {
                    try _POSIX.setOption(fd, level: CInt(IPPROTO_IPV6), name: IPV6_V6ONLY, to: 0)
                }
                try _POSIX.bind(fd, to: address)
            }
            try _POSIX.listen(fd, backlog: options.backlog)
        } catch {
            _POSIX.close(fd)
            file?.remove()
            throw error
        }
        return (fd, file)
    }
}
