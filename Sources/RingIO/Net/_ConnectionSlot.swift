//===----------------------------------------------------------------------===//
// RingIO — networking: what RingIO keeps of one open connection.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What RingIO keeps of one open connection: its socket, its addresses once read, and, for
/// an accepted one, its place on the ring that accepted it.
internal final class _ConnectionSlot: @unchecked Sendable {
    // @unchecked: `channel` and `index` are touched only on the connection's ring thread (set
    // there before the connection is handed out); `closeHandler`, `shutdownHandler` and
    // `addresses` are locked; `fd` is immutable.

    /// The handler of ``IOConnection/whenClosed(_:)``.
    enum CloseHandler {
        case none
        case set(@Sendable () -> Void)
        case closed
    }

    /// The addresses read so far, and whether the socket is closed (its number may then name
    /// another file: it is never asked again).
    struct Addresses {
        var local: SocketAddress?
        var remote: SocketAddress?
        var closed = false
    }

    let fd: CInt
    /// The channel's state, to stop it (graceful shutdown). Weak: the connection closes when
    /// its user drops the channel, and the state's cleanup handler holds this slot.
    weak var channel: _ChannelState?
    /// Where the slot is in its acceptor's open connections.
    var index = 0
    let closeHandler = _Lock(CloseHandler.none)
    /// The handler of ``IOConnection/whenShuttingDown(_:)``; taken when a shutdown begins.
    let shutdownHandler = _Lock<(@Sendable () -> Void)?>(nil)
    private let addresses: _Lock<Addresses>

    init(fd: CInt, remote: SocketAddress?) {
        self.fd = fd
        self.addresses = _Lock(Addresses(local: nil, remote: remote))
    }

    /// The local or remote address: read from the socket on first use while it is open.
    func address(local: Bool) -> SocketAddress? {
        self.addresses.withLock { addresses in
            if let known = local ? addresses.local : addresses.remote { return known }
            guard !addresses.closed else { return nil }
            let read = try? (local ? _POSIX.localAddress(of: self.fd) : _POSIX.remoteAddress(of: self.fd))
            guard let read else { return nil }
            let address = SocketAddress(storage: read.address, length: read.length)
            if local { addresses.local = address } else { addresses.remote = address }
            return address
        }
    }

    /// Closes the socket: the channel is cleaned up. Ring thread.
    func closeSocket() {
        self.addresses.withLock { addresses in
            addresses.closed = true
            _POSIX.close(self.fd)
        }
    }

    /// The channel is cleaned up: runs the close handler if one is set, lets go of the
    /// shutdown handler (either may hold the connection, which holds this slot). Ring thread.
    func runCloseHandler() {
        _ = self.shutdownHandler.withLock { $0.take() }
        let handler: (@Sendable () -> Void)? = self.closeHandler.withLock { state in
            defer { state = .closed }
            if case .set(let handler) = state { return handler }
            return nil
        }
        handler?()
    }
}
