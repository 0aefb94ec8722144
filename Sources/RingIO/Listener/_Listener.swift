//===----------------------------------------------------------------------===//
// RingIO — the listening sockets and their accepting, shared by IOListener and IOAcceptor.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What ``IOListener`` (connections for async/await) and ``IOAcceptor`` (connections for a
/// handler) share: the listening sockets, one acceptor per ring, and the state they share.
/// Each public type holds one; the last reference dropped closes the sockets.
internal final class _Listener: Sendable {
    let acceptors: [_Acceptor]
    let shared: _ListenerState
    /// The bound addresses, read once the sockets listen: their descriptors close with the
    /// listener (and their numbers may then name someone else's), their addresses do not change.
    let boundAddresses: [SocketAddress]

    /// Binds a listening socket per ring of `rings` and starts accepting.
    init(address: SocketAddress, options: IOListener.Options, rings: [RingLoop], shared: _ListenerState) throws(Errno) {
        precondition(
            address.family != .unix || rings.count == 1,
            "IOListener: a Unix domain socket listens on one ring (reusePort is for TCP)"
        )
        var address = address
        var sockets: [CInt] = []
        var bound: [SocketAddress] = []
        var unixFile: _UnixSocketFile?
        do throws(Errno) {
            for _ in rings {
                let (fd, file) = try _ListeningSocket.open(on: address, options: options)
                sockets.append(fd)
                unixFile = file
                let local = try _POSIX.localAddress(of: fd)
                let localAddress = SocketAddress(storage: local.address, length: local.length)
                bound.append(localAddress)
                // Port 0: the others bind the port the first one got.
                if address.port == 0 { address = localAddress }
            }
        } catch {
            for fd in sockets { _POSIX.close(fd) }
            unixFile?.remove()
            throw error
        }
        let isUnix = address.family == .unix
        let acceptors = zip(rings, sockets).map {
            _Acceptor(ring: $0, fd: $1, shared: shared, isUnix: isUnix, unixFile: unixFile)
        }
        shared.acceptors = acceptors.map { _WeakAcceptor(acceptor: $0) }
        self.acceptors = acceptors
        self.shared = shared
        self.boundAddresses = bound
        for acceptor in acceptors { acceptor.start() }
    }

    deinit {
        self.close()
    }

    /// The rings of `group` to accept on: every one with ``IOListener/Options/reusePort``
    /// (TCP), else the next.
    static func rings(group: RingLoopGroup, options: IOListener.Options, address: SocketAddress) -> [RingLoop] {
        Self.checkOptions(options)
        return options.reusePort && address.family != .unix ? group.rings : [group.next()]
    }

    /// `ring`, or the next ring of the shared group.
    static func rings(ring: RingLoop?, options: IOListener.Options) throws(Errno) -> [RingLoop] {
        Self.checkOptions(options)
        if let ring { return [ring] }
        do throws(RingSetupError) {
            return [try RingLoopGroup.shared.next()]
        } catch {
            throw error.errno
        }
    }

    private static func checkOptions(_ options: IOListener.Options) {
        precondition(options.maxConnections > 0, "IOListener: maxConnections must be positive")
    }

    var port: UInt16 {
        self.boundAddresses[0].port ?? 0
    }

    var openConnections: Int {
        self.shared.live.load(ordering: .acquiring)
    }

    /// Stops accepting; idempotent.
    func close() {
        guard !self.shared.closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for acceptor in self.acceptors { acceptor.stop() }
        self.shared.connections?.end()
    }

    /// Graceful shutdown (see ``IOListener/shutdown(gracePeriod:queue:completion:)``).
    func shutdown(gracePeriod: Duration, queue: some IOQueue, completion: @escaping @Sendable () -> Void) {
        precondition(
            gracePeriod >= .zero,
            "shutdown(gracePeriod: \(gracePeriod)): the grace period must not be negative"
        )
        self.close()
        let (seconds, attoseconds) = gracePeriod.components
        let nanoseconds =
            seconds >= Int64.max / 1_000_000_000
            ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        let start = self.shared.shutdown.withLock { state -> Bool in
            switch state {
            case .running:
                state = .draining(acceptorsLeft: self.acceptors.count, completions: [(queue, completion)])
                return true
            case .draining(let left, var completions):
                completions.append((queue, completion))
                state = .draining(acceptorsLeft: left, completions: completions)
                return false
            case .finished:
                queue.enqueue(completion)
                return false
            }
        }
        guard start else { return }
        let deadline = _Clock.nanoseconds(realtime: false).addingReportingOverflow(nanoseconds)
        let at = deadline.overflow ? Int64.max : deadline.partialValue
        for acceptor in self.acceptors { acceptor.drain(until: at) }
    }

    /// Graceful shutdown, returning once every connection is cleaned up.
    func shutdown(gracePeriod: Duration) async {
        let ring = self.acceptors[0].ring
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            self.shutdown(gracePeriod: gracePeriod, queue: ring) { continuation.resume() }
        }
    }
}
