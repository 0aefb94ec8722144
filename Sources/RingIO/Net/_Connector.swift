//===----------------------------------------------------------------------===//
// RingIO — networking: one outbound connect, as Happy Eyeballs (RFC 8305) runs it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One connect: resolving (off the ring), attempts raced on the ring, and the one result.
///
///     start ──> [resolve AAAA ∥ A, off the ring] ──> addresses, IPv6 first, alternating
///                   │ A first: wait `resolutionDelay` for AAAA
///                   v
///     attempt 1 ──(`connectionAttemptDelay`, or attempt 1 failed)──> attempt 2 ──> …
///         └── the first to connect wins: the others are cancelled and their sockets closed
///     the deadline (`timeout`) or `cancel()`: every attempt cancelled, the result is the error
///
/// Each attempt is a socket of its own with the options applied and a connect in flight
/// (`IORING_OP_CONNECT`; on the readiness engine a non-blocking connect that waits for
/// writability and reads `SO_ERROR`). A socket is closed only once its connect has returned
/// (a descriptor is never closed under an operation).
///
/// Confinement: everything under "ring thread only" is touched only on `ring`'s thread (the
/// methods check so in debug builds); `start` and `cancel` are for any thread and enqueue.
/// The result is handed to `completion` once, on the ring thread — or, when the ring's thread
/// has exited, on the thread that found out.
internal final class _Connector: RingOperationTarget, _RingTimerTarget, @unchecked Sendable {
    // @unchecked: see "Confinement" above; `completion` is called once, under `finished`.

    /// What to connect to: a name to resolve, or an address.
    struct Target: Sendable {
        let host: String
        let port: UInt16?
        /// The address, when the host is one (numeric) or one was given: no resolving.
        let address: SocketAddress?

        init(host: String, port: UInt16) {
            self.host = host
            self.port = port
            self.address = try? SocketAddress(ipAddress: host, port: port)
        }

        init(address: SocketAddress) {
            self.host = address.family == .unix ? address.description : (address.ipAddress ?? address.description)
            self.port = address.port
            self.address = address
        }
    }

    // MARK: Immutable after init
    private let target: Target
    private let options: IOConnection.ConnectOptions
    private let ring: RingLoop
    private let core: _RingCore
    private let completion: @Sendable (Result<IOConnection, ConnectError>) -> Void
    /// Set once, by whoever ends the connect: the result goes out once.
    private let finished = _Lock(false)

    // MARK: Ring thread only
    private var started = false
    /// The addresses not yet tried, per family (each in the resolver's order).
    private var untriedIPv6: [SocketAddress] = []
    private var untriedIPv4: [SocketAddress] = []
    private var untriedOther: [SocketAddress] = []
    /// The family of the last attempt started (the next alternates).
    private var lastFamily: SocketAddress.Family?
    /// Resolver answers still to come.
    private var pendingResolutions = 0
    private var ipv6Answered = false
    private var resolutionFailures: [NameResolutionError] = []
    /// Waiting `resolutionDelay` for the IPv6 answer.
    private var resolutionDelayTimer: _RingTimerToken?
    private var attemptDelayTimer: _RingTimerToken?
    private var deadlineTimer: _RingTimerToken?
    /// Attempts whose connect is in flight, by the context of their completion.
    private var attempts: [UInt64: _Attempt] = [:]
    private var nextAttemptID: UInt64 = 1
    private var failures: [ConnectError.Attempt] = []
    /// The connect has its result: completions that still come close their sockets.
    private var over = false

    private enum TimerContext {
        static let deadline: UInt64 = 1
        static let attemptDelay: UInt64 = 2
        static let resolutionDelay: UInt64 = 3
    }

    /// The context of a cancel submitted for an attempt (its completion is ignored).
    private static let cancelContext: UInt64 = 0

    init(
        target: Target,
        options: IOConnection.ConnectOptions,
        ring: RingLoop,
        completion: @escaping @Sendable (Result<IOConnection, ConnectError>) -> Void
    ) {
        self.target = target
        self.options = options
        self.ring = ring
        self.core = ring.core
        self.completion = completion
    }

    /// `ring`, or the next ring of the shared group.
    static func ring(_ ring: RingLoop?, for target: Target) throws(ConnectError) -> RingLoop {
        if let ring { return ring }
        do throws(RingSetupError) {
            return try RingLoopGroup.shared.next()
        } catch {
            throw ConnectError(reason: .other(error.errno), host: target.host, port: target.port, attempts: [])
        }
    }

    // MARK: Any thread

    /// Starts the connect on the ring. Once.
    func start() {
        self.onRing { $0.begin() }
    }

    /// Cancels the connect (unless it has its result). Any thread.
    func cancel() {
        self.onRing { $0.fail(.canceled) }
    }

    /// Runs `body` on the ring thread; when the ring is gone, the connect ends with
    /// ``ConnectError/Reason/canceled`` instead.
    private func onRing(_ body: @escaping @Sendable (_Connector) -> Void) {
        // The ring state (the attempts so far) is the ring thread's: the error names none.
        let gone = ConnectError(reason: .canceled, host: self.target.host, port: self.target.port, attempts: [])
        self.core.enqueue({ body(self) }, orElse: { self.deliver(.failure(gone)) })
    }

    /// Hands the result out, once.
    private func deliver(_ result: Result<IOConnection, ConnectError>) {
        let first = self.finished.withLock { finished in
            defer { finished = true }
            return !finished
        }
        guard first else {
            // Too late: a connection nobody takes is closed.
            if case .success(let connection) = result { connection.channel.close() }
            return
        }
        self.completion(result)
    }

    private func error(_ reason: ConnectError.Reason) -> ConnectError {
        ConnectError(reason: reason, host: self.target.host, port: self.target.port, attempts: self.failures)
    }

    // MARK: Ring thread: the steps

    private func begin() {
        self.core.assertOnRingThread()
        guard !self.started, !self.over else { return }
        self.started = true
        guard !self.core.isStopping else {
            self.fail(.canceled)
            return
        }
        self.deadlineTimer = self.core.armTimer(
            at: Self.deadline(after: self.options.timeout),
            target: self,
            context: TimerContext.deadline
        )
        if let address = self.target.address {
            self.untriedOther = [address]
            self.startNextAttempt()
            return
        }
        // Both families at once, off the ring (RFC 8305 §3).
        self.pendingResolutions = 2
        let host = self.target.host
        let port = self.target.port ?? 0
        for family in [SocketAddress.Family.ipv6, .ipv4] {
            if self.options.resolver is SystemResolver {
                // No task: straight to the resolver's threads and back to the ring.
                SystemResolver.resolve(host: host, port: port, family: family) { answer in
                    self.onRing { $0.resolved(family, answer) }
                }
                continue
            }
            // A resolver of the caller's: a task on this ring (not the shared pool, which a
            // busy program can hold up), which resumes here when the answer comes.
            let resolver = self.options.resolver
            Task(executorPreference: self.ring.taskExecutor) {
                let answer: Result<[SocketAddress], NameResolutionError>
                do throws(NameResolutionError) {
                    answer = .success(try await resolver.resolve(host: host, port: port, family: family))
                } catch {
                    answer = .failure(error)
                }
                self.onRing { $0.resolved(family, answer) }
            }
        }
    }

    private func resolved(_ family: SocketAddress.Family, _ answer: Result<[SocketAddress], NameResolutionError>) {
        self.core.assertOnRingThread()
        self.pendingResolutions -= 1
        guard !self.over else { return }
        switch answer {
        case .success(let addresses):
            // Only what was asked for, each once (a resolver may answer more).
            for address in addresses where address.family == family {
                if family == .ipv6 {
                    if !self.untriedIPv6.contains(address) { self.untriedIPv6.append(address) }
                } else {
                    if !self.untriedIPv4.contains(address) { self.untriedIPv4.append(address) }
                }
            }
        case .failure(let failure):
            self.resolutionFailures.append(failure)
        }
        if family == .ipv6 {
            self.ipv6Answered = true
            if let timer = self.resolutionDelayTimer {
                self.core.cancelTimer(timer)
                self.resolutionDelayTimer = nil
            }
        } else if !self.ipv6Answered && self.lastFamily == nil && !self.untriedIPv4.isEmpty {
            // IPv4 first: give IPv6 `resolutionDelay` to answer (RFC 8305 §3).
            self.resolutionDelayTimer = self.core.armTimer(
                at: Self.deadline(after: self.options.resolutionDelay),
                target: self,
                context: TimerContext.resolutionDelay
            )
            return
        }
        // Unless an attempt runs within its delay (the next starts when that passes): now.
        if self.resolutionDelayTimer == nil && self.attemptDelayTimer == nil {
            self.startNextAttempt()
        }
    }

    /// The next address, IPv6 first and then alternating families (RFC 8305 §4).
    private func takeNextAddress() -> SocketAddress? {
        if !self.untriedOther.isEmpty { return self.untriedOther.removeFirst() }
        let preferIPv6 = self.lastFamily != .ipv6
        if preferIPv6, !self.untriedIPv6.isEmpty { return self.untriedIPv6.removeFirst() }
        if !self.untriedIPv4.isEmpty { return self.untriedIPv4.removeFirst() }
        if !self.untriedIPv6.isEmpty { return self.untriedIPv6.removeFirst() }
        return nil
    }

    private var hasUntried: Bool {
        !self.untriedOther.isEmpty || !self.untriedIPv6.isEmpty || !self.untriedIPv4.isEmpty
    }

    /// Starts the next attempt now (the previous failed, or its delay passed); when there is
    /// no address left, waits for what is in flight, or fails.
    private func startNextAttempt() {
        self.core.assertOnRingThread()
        guard !self.over else { return }
        if let timer = self.attemptDelayTimer {
            self.core.cancelTimer(timer)
            self.attemptDelayTimer = nil
        }
        guard !self.core.isStopping else {
            self.fail(.canceled)
            return
        }
        while let address = self.takeNextAddress() {
            self.lastFamily = address.family
            do throws(Errno) {
                let attempt = try _Attempt(address: address, options: self.options)
                let id = self.nextAttemptID
                self.nextAttemptID += 1
                attempt.userData = self.core.submit(
                    .connect(fd: attempt.fd, address: attempt.socketAddress, length: attempt.addressLength),
                    target: self,
                    context: id
                )
                self.attempts[id] = attempt
                if self.hasUntried || self.pendingResolutions > 0 {
                    self.attemptDelayTimer = self.core.armTimer(
                        at: Self.deadline(after: self.options.connectionAttemptDelay),
                        target: self,
                        context: TimerContext.attemptDelay
                    )
                }
                return
            } catch {
                // No socket for it (EMFILE, EAFNOSUPPORT: no IPv6 here, or a local address of
                // another family): the next address at once.
                self.failures.append(ConnectError.Attempt(address: address, error: error))
            }
        }
        guard self.attempts.isEmpty, self.pendingResolutions == 0 else { return }
        // Nothing left to try and nothing in flight.
        if self.failures.isEmpty {
            let failure =
                self.resolutionFailures.first(where: { $0.family == .ipv6 }) ?? self.resolutionFailures.first
                ?? NameResolutionError(
                    host: self.target.host,
                    family: .ipv6,
                    code: EAI_NONAME,
                    message: "No address associated with hostname"
                )
            self.fail(.nameNotResolved(failure))
        } else {
            self.fail(ConnectError.reason(for: self.failures))
        }
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.assertOnRingThread()
        guard context != Self.cancelContext, let attempt = self.attempts.removeValue(forKey: context) else { return }
        if result == 0 && !self.over {
            self.succeed(with: attempt)
            return
        }
        attempt.close(core: self.core)
        guard !self.over else { return }
        let error = Errno(rawValue: -result)
        if error == .canceled {
            // Not ours (ours come after `over`): the ring is shutting down.
            self.fail(.canceled)
            return
        }
        self.failures.append(ConnectError.Attempt(address: attempt.address, error: error))
        self.startNextAttempt()
    }

    func ringTimerFired(context: UInt64) {
        self.core.assertOnRingThread()
        switch context {
        case TimerContext.deadline:
            self.deadlineTimer = nil
            // The attempts still under way have not answered in time: they count as timed out.
            for attempt in self.attempts.values.sorted(by: { $0.started < $1.started }) {
                self.failures.append(ConnectError.Attempt(address: attempt.address, error: .timedOut))
            }
            self.fail(.timedOut)
        case TimerContext.attemptDelay:
            self.attemptDelayTimer = nil
            self.startNextAttempt()
        default:
            self.resolutionDelayTimer = nil
            if self.attemptDelayTimer == nil { self.startNextAttempt() }
        }
    }

    private func succeed(with attempt: _Attempt) {
        let connection = IOConnection(connected: attempt.fd, to: attempt.address, on: self.ring)
        attempt.release()
        self.end()
        self.deliver(.success(connection))
    }

    /// Ends the connect with `reason` (unless it has its result): the attempts in flight are
    /// cancelled, and their sockets closed when they return.
    private func fail(_ reason: ConnectError.Reason) {
        self.core.assertOnRingThread()
        guard !self.over else { return }
        self.end()
        self.deliver(.failure(self.error(reason)))
    }

    /// The connect has its result: no more attempts, no timers; the attempts in flight are
    /// cancelled (their completions close their sockets).
    private func end() {
        self.over = true
        for timer in [self.deadlineTimer, self.attemptDelayTimer, self.resolutionDelayTimer].compactMap({ $0 }) {
            self.core.cancelTimer(timer)
        }
        self.deadlineTimer = nil
        self.attemptDelayTimer = nil
        self.resolutionDelayTimer = nil
        for attempt in self.attempts.values {
            self.core.submit(.cancel(userData: attempt.userData), target: self, context: Self.cancelContext)
        }
        self.untriedIPv6.removeAll()
        self.untriedIPv4.removeAll()
        self.untriedOther.removeAll()
    }

    /// Monotonic nanoseconds `duration` from now (saturating).
    private static func deadline(after duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let nanoseconds =
            seconds >= Int64.max / 1_000_000_000
            ? Int64.max : max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let (sum, overflow) = _Clock.nanoseconds(realtime: false).addingReportingOverflow(nanoseconds)
        return overflow ? Int64.max : sum
    }
}

/// One address being dialled: its socket (options applied, bound when asked) and the address
/// at a stable place for the kernel, which reads it when the connect is submitted.
private final class _Attempt {
    let address: SocketAddress
    let fd: CInt
    let socketAddress: UnsafeMutablePointer<sockaddr>
    let addressLength: socklen_t
    let started = _Clock.nanoseconds(realtime: false)
    var userData: UInt64 = 0
    /// The socket is no longer the attempt's (closed, or handed to the connection).
    private var released = false

    /// A socket for `address` with `options` applied.
    ///
    /// - Throws: The errno of `socket` (EMFILE, EAFNOSUPPORT), of a socket option, or of
    ///   binding the local address (EADDRINUSE, EAFNOSUPPORT for another family); the socket
    ///   is closed again.
    init(address: SocketAddress, options: IOConnection.ConnectOptions) throws(Errno) {
        if let local = options.localAddress, local.family != address.family {
            throw Errno.addressFamilyNotSupported
        }
        let fd = try _POSIX.socket(family: address.family.rawValue, type: _SocketConstants.streamCloseOnExec)
        do throws(Errno) {
            if address.family != .unix {
                if options.noDelay {
                    try _POSIX.setOption(fd, level: CInt(IPPROTO_TCP), name: TCP_NODELAY, to: 1)
                }
                if options.keepAlive {
                    try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_KEEPALIVE, to: 1)
                }
            }
            if let local = options.localAddress {
                if local.family != .unix {
                    try _POSIX.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, to: 1)
                }
                try _POSIX.bind(fd, to: local)
            }
        } catch {
            _POSIX.close(fd)
            throw error
        }
        self.address = address
        self.fd = fd
        let storage = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: 1)
        storage.initialize(to: address.storage)
        self.socketAddress = UnsafeMutableRawPointer(storage).assumingMemoryBound(to: sockaddr.self)
        self.addressLength = address.length
    }

    deinit {
        UnsafeMutableRawPointer(self.socketAddress).assumingMemoryBound(to: sockaddr_storage.self).deallocate()
        // Every attempt's connect completes before its ring exits (the ring cancels and
        // waits for every operation), and its completion closes or hands out the socket.
        assert(self.released, "RingIO: a connect attempt's socket was neither closed nor handed out")
    }

    /// The socket goes to the connection.
    func release() {
        self.released = true
    }

    /// Closes the socket: its connect has returned. Ring thread.
    func close(core: _RingCore) {
        guard !self.released else { return }
        self.released = true
        core.releaseDescriptor(self.fd)
        _POSIX.close(self.fd)
    }
}
