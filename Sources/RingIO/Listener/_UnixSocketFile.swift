//===----------------------------------------------------------------------===//
// RingIO — the listener: the socket file of a Unix domain socket.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

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
