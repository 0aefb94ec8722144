//===----------------------------------------------------------------------===//
// RingIO — networking: listening sockets, TCP and Unix domain.
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

/// The file a Unix domain socket made when it was bound to a path: removed when the socket
/// closes — if it is still that file (the same device and inode: not one another server bound
/// at the path since, after removing ours).
internal struct _UnixSocketFile: Sendable {
    let path: String
    let device: UInt64
    let inode: UInt64

    init(boundAt path: String) throws(Errno) {
        let info = try _POSIX.status(ofPath: path, followingLinks: false)
        self.path = path
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
    }

    /// Removes the file if it is still the one the socket made.
    func remove() {
        guard let info = try? _POSIX.status(ofPath: self.path, followingLinks: false),
            UInt64(info.st_dev) == self.device, UInt64(info.st_ino) == self.inode
        else { return }
        _POSIX.unlink(self.path)
    }

    /// Removes the socket file at `path` if no one listens on it: it is a socket file and a
    /// connect to it (from a socket of `type`, stream or datagram) is refused. Anything else
    /// stays (the bind then fails with EADDRINUSE).
    static func removeIfStale(_ path: String, type: CInt = _SocketConstants.streamCloseOnExec) {
        guard let info = try? _POSIX.status(ofPath: path, followingLinks: false),
            info.st_mode & S_IFMT == S_IFSOCK,
            let address = try? SocketAddress(unixPath: path),
            let probe = try? _POSIX.socket(family: AF_UNIX, type: type)
        else { return }
        defer { _POSIX.close(probe) }
        do throws(Errno) {
            // Non-blocking: a live server's full backlog answers EAGAIN instead of a wait.
            try _POSIX.setStatusFlags(probe, try _POSIX.statusFlags(of: probe) | O_NONBLOCK)
            try _POSIX.connect(probe, to: address)
        } catch  where error == .connectionRefused {
            _POSIX.unlink(path)
        } catch {
            // EAGAIN: a live server with a full backlog; anything else: leave it alone.
        }
    }
}
