//===----------------------------------------------------------------------===//
// RingIO — the listener: one listening socket and its multishot accept.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One listening socket and its multishot accept, on one ring, and the connections it handed
/// out that are still open.
///
/// Confinement: everything but `fd` (immutable) and `socketClosedForStop` (locked) is touched
/// only on `ring`'s thread; the methods that touch it check so in debug builds
/// (`assertOnRingThread()`). `start`, `resumeIfPaused`, `stop` and `drain` are for any thread.
/// A connection's cleanup handler runs on `ring` (the channel's queue), so its slot leaves
/// `open` there too.
internal final class _Acceptor: RingOperationTarget, _RingTimerTarget, @unchecked Sendable {
    let ring: RingLoop
    let fd: CInt
    let shared: _ListenerState
    /// The socket file of a Unix domain socket bound to a path: removed when the socket
    /// closes.
    let unixFile: _UnixSocketFile?
    /// A Unix domain socket: the TCP options of ``IOListener/Options`` play no part.
    let isUnix: Bool

    private var armed: UInt64?
    private var backoff: Duration = .zero
    private var backoffSpec: _KernelTimespec?
    private var waiting = false
    private var stopping = false
    private var socketClosed = false
    /// Whether the socket is closed, for `stop()` on another thread: it shuts the socket down
    /// only while it is open (the number may name another file once closed).
    private let socketClosedForStop = _Lock(false)
    private var inFlight = 0
    /// Connections accepted past the cap (the multishot had more ready): handed out, in
    /// order, as soon as connections are cleaned up.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore); the
    // loops over `open` that may change it (a stop cleaning a connection up) iterate a copy.
    @exclusivity(unchecked) private var held: [CInt] = []
    /// The connections handed out and not yet cleaned up; each slot knows its index.
    // @exclusivity(unchecked): as `held`.
    @exclusivity(unchecked) private var open: [_ConnectionSlot] = []
    /// A graceful shutdown is under way: each connection cleaned up may be the last.
    private var draining = false
    /// The shutdown's deadline in the ring's timers.
    private var drainTimer: _RingTimerToken?

    private enum Tag {
        static let accept: UInt64 = 1
        static let retry: UInt64 = 2
        static let ignore: UInt64 = 3
        static let close: UInt64 = 4
    }

    init(ring: RingLoop, fd: CInt, shared: _ListenerState, isUnix: Bool, unixFile: _UnixSocketFile?) {
        self.ring = ring
        self.fd = fd
        self.shared = shared
        self.isUnix = isUnix
        self.unixFile = unixFile
    }

    private func perform(_ body: @escaping @Sendable (_Acceptor) -> Void) {
        if self.ring.isCurrentThread { body(self) } else { self.ring.enqueue { body(self) } }
    }

    func start() { self.perform { $0.arm() } }

    func resumeIfPaused() {
        self.perform { acceptor in
            acceptor.handOutHeld()
            acceptor.arm()
        }
    }

    func stop() {
        // Refuse new connections now, from the calling thread: a listening socket shut down
        // for reading leaves the listening state (its pending accept fails).
        self.socketClosedForStop.withLock { closed in
            // Fails only for a socket no longer connected or listening (ENOTCONN): then it
            // refuses connections already.
            if !closed { _ = try? _POSIX.shutdown(self.fd, how: CInt(SHUT_RDWR)) }
        }
        self.perform { acceptor in
            acceptor.ring.core.assertOnRingThread()
            acceptor.stopping = true
            for connection in acceptor.held { _POSIX.close(connection) }
            acceptor.held.removeAll()
            if let armed = acceptor.armed {
                acceptor.submit(.cancel(userData: armed), tag: Tag.ignore)
            }
            acceptor.closeSocketIfIdle()
        }
    }

    /// Runs `work` (a call of the handler) on the listener's queue, or on this ring.
    private func deliverToHandler(_ work: @escaping @Sendable () -> Void) {
        if let queue = self.shared.queue {
            self.ring.core.deliver(on: queue, work)
        } else {
            self.ring.core.deliver(on: self.ring, work)
        }
    }

    // MARK: Connections

    /// Registers a connection handed out. Ring thread.
    func opened(_ slot: _ConnectionSlot) {
        self.ring.core.assertOnRingThread()
        slot.index = self.open.count
        self.open.append(slot)
    }

    /// A connection's channel is cleaned up and its socket closed: it leaves `open`, stops
    /// counting, and may be the last one a shutdown waits for. Ring thread (the channel's
    /// cleanup queue).
    func closed(_ slot: _ConnectionSlot) {
        self.ring.core.assertOnRingThread()
        let index = slot.index
        let last = self.open.removeLast()
        if last !== slot {
            self.open[index] = last
            last.index = index
        }
        self.shared.connectionClosed()
        if self.draining && self.open.isEmpty { self.drained() }
    }

    /// Graceful shutdown (after `stop`, in order on the ring): every open connection stops as
    /// soon as its writes are done; the rest at `deadline` (monotonic nanoseconds).
    func drain(until deadline: Int64) {
        self.perform { acceptor in
            acceptor.ring.core.assertOnRingThread()
            guard !acceptor.draining else { return }
            acceptor.draining = true
            if acceptor.open.isEmpty {
                acceptor.drained()
                return
            }
            acceptor.drainTimer = acceptor.ring.core.armTimer(at: deadline, target: acceptor)
            // A copy: a stop may clean a connection up (and change `open`) at once.
            for slot in acceptor.open {
                if let handler = slot.takeShutdownHandler().body {
                    handler()  // the connection finishes by itself (whenShuttingDown)
                } else {
                    slot.channel?.stopOnceWritesFinish()
                }
            }
        }
    }

    /// The shutdown's deadline: what is still open stops now.
    func ringTimerFired(context: UInt64) {
        self.ring.core.assertOnRingThread()
        self.drainTimer = nil
        for slot in self.open { slot.channel?.requestClose(stop: true) }
    }

    private func drained() {
        self.ring.core.assertOnRingThread()
        if let timer = self.drainTimer {
            self.ring.core.cancelTimer(timer)
            self.drainTimer = nil
        }
        self.draining = false
        self.shared.acceptorDrained()
    }

    // MARK: Accepting

    private func arm() {
        self.ring.core.assertOnRingThread()
        if !self.stopping && self.ring.core.isStopping {
            self.ringStopped()
            return
        }
        guard !self.stopping, self.armed == nil, !self.waiting, self.held.isEmpty, !self.shared.mustPause else {
            return
        }
        self.armed = self.submit(.acceptMultishot(fd: self.fd), tag: Tag.accept)
    }

    @discardableResult
    private func submit(_ request: RingRequest, tag: UInt64) -> UInt64 {
        self.ring.core.assertOnRingThread()
        self.inFlight += 1
        return self.ring.core.submit(request, target: self, context: tag)
    }

    private func closeSocketIfIdle() {
        self.ring.core.assertOnRingThread()
        guard self.stopping, self.inFlight == 0, !self.socketClosed else { return }
        self.socketClosed = true
        self.ring.core.releaseDescriptor(self.fd)
        self.socketClosedForStop.withLock { closed in
            _POSIX.close(self.fd)
            closed = true
        }
        self.unixFile?.remove()
    }

    /// The ring is shutting down (its cancel-all ended the accept, or a retry): accepting ends
    /// here — re-arming would fight the cancellation and keep the ring from exiting. The
    /// socket closes once nothing is in flight; the async iteration ends with ECANCELED after
    /// the connections already accepted.
    private func ringStopped() {
        self.ring.core.assertOnRingThread()
        self.stopping = true
        for connection in self.held { _POSIX.close(connection) }
        self.held.removeAll()
        if let armed = self.armed {
            self.submit(.cancel(userData: armed), tag: Tag.ignore)
        }
        self.shared.connections?.end(failing: .canceled)
        self.closeSocketIfIdle()
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.ring.core.assertOnRingThread()
        if !flags.hasMore { self.inFlight -= 1 }
        defer { self.closeSocketIfIdle() }
        switch context {
        case Tag.accept:
            if !flags.hasMore { self.armed = nil }
            if result >= 0 {
                self.accepted(result)
            } else {
                self.failed(Errno(rawValue: -result))
            }
            if !flags.hasMore { self.arm() }
        case Tag.retry:
            self.waiting = false
            self.backoffSpec = nil
            self.arm()
        default:
            break
        }
    }

    private func accepted(_ connection: CInt) {
        self.ring.core.assertOnRingThread()
        guard !self.stopping else {
            _POSIX.close(connection)
            return
        }
        self.backoff = .zero
        let options = self.shared.options
        do throws(Errno) {
            if options.noDelay && !self.isUnix {
                try _POSIX.setOption(connection, level: CInt(IPPROTO_TCP), name: TCP_NODELAY, to: 1)
            }
            if options.keepAlive && !self.isUnix {
                try _POSIX.setOption(connection, level: SOL_SOCKET, name: SO_KEEPALIVE, to: 1)
            }
        } catch {
            // Not served as the options say: closed, and reported. No back-off — the next
            // connection is another socket.
            _POSIX.close(connection)
            let handler = self.shared.handler
            self.deliverToHandler { handler(.failed(error)) }
            return
        }
        if !self.held.isEmpty || !self.handOut(connection) {
            self.held.append(connection)
        }
        if self.shared.mustPause, let armed = self.armed {
            // At the cap: stop the multishot; accepting resumes when a connection closes.
            self.submit(.cancel(userData: armed), tag: Tag.ignore)
        }
    }

    private func handOutHeld() {
        self.ring.core.assertOnRingThread()
        while let first = self.held.first, self.handOut(first) {
            self.held.removeFirst()
        }
    }

    /// Hands `connection` out (to the handler, or to the async iteration) and counts it as
    /// live, unless that would pass the cap or the async iteration is too far behind: then
    /// `false`, and the caller holds it.
    private func handOut(_ connection: CInt) -> Bool {
        self.ring.core.assertOnRingThread()
        if let connections = self.shared.connections {
            switch connections.push(accepted: connection, by: self) {
            case .counted: return true
            case .full: return false
            case .ended:
                _POSIX.close(connection)  // never counted, never produced
                return true
            }
        }
        let live = self.shared.live.add(1, ordering: .acquiringAndReleasing).newValue
        if live > self.shared.options.maxConnections {
            self.shared.live.subtract(1, ordering: .acquiringAndReleasing)
            return false
        }
        // The connection's slot is the job that calls the handler: no closure to allocate.
        IOConnection(accepted: connection, by: self).handOut(to: self.shared.handler, queue: self.shared.queue)
        return true
    }

    private func failed(_ error: Errno) {
        self.ring.core.assertOnRingThread()
        switch error {
        case .canceled, .invalidArgument, .badFileDescriptor:
            return  // our own cancel, or the socket was shut down or closed
        case .connectionAbort, .interrupted, .resourceTemporarilyUnavailable:
            return  // a connection gone before it was accepted: try the next one
        default:
            break
        }
        let handler = self.shared.handler
        self.deliverToHandler { handler(.failed(error)) }
        // Back off before accepting again (EMFILE would fail every attempt until a
        // descriptor is closed).
        self.backoff = self.backoff == .zero ? .milliseconds(10) : min(self.backoff * 2, .seconds(1))
        guard !self.stopping, !self.waiting else { return }
        if let armed = self.armed {
            self.submit(.cancel(userData: armed), tag: Tag.ignore)
        }
        self.waiting = true
        let (seconds, attoseconds) = self.backoff.components
        let spec = _KernelTimespec(nanoseconds: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        self.backoffSpec = spec
        self.submit(.timeout(spec: spec), tag: Tag.retry)
    }
}
