//===----------------------------------------------------------------------===//
// RingIO — networking: a datagram socket, made and bound.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket, made and bound (and connected) on the calling thread: none of these
/// calls waits.
internal struct _DatagramSocket: Sendable {
    let fd: CInt
    let localAddress: SocketAddress
    /// The file of a Unix datagram socket bound to a path: removed when the socket closes.
    let unixFile: _UnixSocketFile?

    /// - Throws: The errno of `socket`, `setsockopt`, `bind` or `connect`; EAFNOSUPPORT when
    ///   `local` and `remote` are of different families. The socket is closed again.
    init(local: SocketAddress?, remote: SocketAddress?, options: IODatagramChannel.Options) throws(Errno) {
        guard let family = (local ?? remote)?.family else { throw Errno.invalidArgument }
        if let local, let remote, local.family != remote.family { throw Errno.addressFamilyNotSupported }
        let fd = try _POSIX.socket(family: family.rawValue, type: _SocketConstants.datagramCloseOnExec)
        var file: _UnixSocketFile?
        do throws(Errno) {
            if options.reuseAddress { try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, to: 1) }
            if options.reusePort { try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, to: 1) }
            if options.broadcast { try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_BROADCAST, to: 1) }
            if let size = options.socketReceiveBufferSize {
                try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_RCVBUF, to: CInt(clamping: size))
            }
            if let size = options.socketSendBufferSize {
                try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_SNDBUF, to: CInt(clamping: size))
            }
            // The kernel's count of datagrams dropped for a full receive buffer, with each
            // datagram received after one was: `Statistics.kernelDrops`.
            try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_RXQ_OVFL, to: 1)
            if family == .ipv6 {
                try _POSIX.setOption(fd, level: CInt(IPPROTO_IPV6), name: IPV6_V6ONLY, to: 0)
            }
            if let local {
                if let path = local.unixPath, options.removeStaleSocketFile {
                    _UnixSocketFile.removeIfStale(path, type: _SocketConstants.datagramCloseOnExec)
                }
                try _POSIX.bind(fd, to: local)
                if let path = local.unixPath { file = try _UnixSocketFile(boundAt: path) }
            }
            if let remote { try _POSIX.connect(fd, to: remote) }
            let bound = try _POSIX.localAddress(of: fd)
            self.localAddress = SocketAddress(storage: bound.address, length: bound.length)
        } catch {
            _POSIX.close(fd)
            file?.remove()
            throw error
        }
        self.fd = fd
        self.unixFile = file
    }
}
