//===----------------------------------------------------------------------===//
// RingIO — server tests: what the suites share (descriptors, clients, child processes, waits).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// This package sees RingIO's public API only (the repository's own test support,
// Tests/RingIOTestSupport, is `package` to the RingIO package): the few helpers these suites
// need are here, on Glibc and that public API.

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Why a RingIO loop cannot be set up here, or nil when it can (on either engine).
let ringSetUpError: RingSetupError? = {
    do throws(RingSetupError) {
        let ring = try RingLoop(entries: 4)
        ring.shutdown()
        return nil
    } catch {
        return error
    }
}()

/// Whether a RingIO loop can be set up here; suites that need one skip cleanly otherwise.
let ringIsAvailable = ringSetUpError == nil

/// The reason a suite that needs a loop gives when it skips.
let ringUnavailableReason: Comment =
    "no RingIO loop can be set up here: \(ringSetUpError.map { "\($0)" } ?? "")"

/// A value behind a mutex, for the suites' shared state (a class, so that closures share it).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

/// A pipe whose two ends are close-on-exec (a spawned child gets only what it is given).
func makePipe() throws -> (read: CInt, write: CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(pipe(&fds) == 0)
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    return (fds[0], fds[1])
}

/// Everything `fd` gives until its end of file (or an error).
func readToEnd(_ fd: CInt) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        result += buffer[..<count]
    }
    return result
}

/// A TCP client connected to `host`:`port` (an IPv4 or IPv6 literal), close-on-exec, its
/// blocking reads bounded to 5 s.
func connectClient(_ host: String, _ port: UInt16) -> Result<CInt, Errno> {
    let family = host.contains(":") ? AF_INET6 : AF_INET
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return .failure(Errno(rawValue: errno)) }
    var storage = sockaddr_storage()
    let length: socklen_t
    if family == AF_INET6 {
        length = withUnsafeMutableBytes(of: &storage) { raw in
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
            address.pointee.sin6_family = sa_family_t(AF_INET6)
            address.pointee.sin6_port = port.bigEndian
            _ = inet_pton(AF_INET6, host, &address.pointee.sin6_addr)
            return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    } else {
        length = withUnsafeMutableBytes(of: &storage) { raw in
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            address.pointee.sin_family = sa_family_t(AF_INET)
            address.pointee.sin_port = port.bigEndian
            address.pointee.sin_addr.s_addr = inet_addr(host)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
    }
    let connected = withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
    }
    guard connected == 0 else {
        let error = Errno(rawValue: errno)
        close(fd)
        return .failure(error)
    }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return .success(fd)
}

/// Whether `semaphore` is signalled within `seconds`.
func wait(_ semaphore: DispatchSemaphore, seconds: Double = 10) -> Bool {
    semaphore.wait(timeout: .now() + seconds) == .success
}

/// Runs `body` on a detached thread of its own (a blocking read that must not hold a thread
/// of the cooperative pool).
func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Work: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    var thread = pthread_t()
    let started = pthread_create(
        &thread,
        nil,
        { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        },
        Unmanaged.passRetained(Work(body)).toOpaque()
    )
    precondition(started == 0, "pthread_create: \(started)")
    pthread_detach(thread)
}

/// glibc's `pidfd_open` (2.36 and later; the Glibc module does not show it): a descriptor that
/// becomes readable when the process exits.
private let pidfdOpen: (@convention(c) (pid_t, CUnsignedInt) -> CInt)? = dlsym(
    UnsafeMutableRawPointer(bitPattern: 0),
    "pidfd_open"
).map { unsafeBitCast($0, to: (@convention(c) (pid_t, CUnsignedInt) -> CInt).self) }

/// Waits, at most `seconds`, for the child `pid` to exit, and reaps it: its wait status, or nil
/// when it did not exit in time (it is left running) or is not a child to reap. The wait is
/// for the exit itself (its pidfd becoming readable) where glibc has `pidfd_open`.
func reap(_ pid: pid_t, seconds: Double = 5) -> CInt? {
    var exited: Bool
    if let pidfdOpen, case let fd = pidfdOpen(pid, 0), fd >= 0 {
        defer { close(fd) }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        repeat {
            let left = max(deadline - ContinuousClock.now, .zero)
            let milliseconds = CInt(
                left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000
            )
            let ready = poll(&descriptor, 1, milliseconds)
            exited = ready > 0
            if ready == 0 || (ready < 0 && errno != EINTR) { break }
        } while !exited
    } else {
        // An older glibc: look at the child's state until it has exited.
        exited = eventually(seconds: seconds) {
            var info = siginfo_t()
            return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
                && info._sifields._sigchld.si_pid == pid
        }
    }
    guard exited else { return nil }
    var status: CInt = 0
    while true {
        let result = waitpid(pid, &status, 0)
        if result == pid { return status }
        if result == -1 && errno == EINTR { continue }
        return nil
    }
}

/// The exit code in a wait status, or nil when the process was killed by a signal.
func exitCode(_ status: CInt) -> CInt? {
    status & 0x7f == 0 ? (status >> 8) & 0xff : nil
}

/// SplitMix64: a small, fast generator of reproducible bytes for a seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
