//===----------------------------------------------------------------------===//
// RingIO — test support: child processes and signals.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Signals

/// Whether `signal` is pending for the process as a whole (the ShdPnd mask of /proc/self/status):
/// sent and not yet taken by any thread.
package func isPendingForProcess(_ signal: CInt) -> Bool {
    guard let status = contentsOfFile("/proc/self/status") else { return false }
    let text = String(decoding: status, as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ShdPnd:") }),
        let mask = UInt64(line.dropFirst("ShdPnd:".count).trimmingPrefix(while: \.isWhitespace), radix: 16)
    else { return false }
    return mask & (1 << UInt64(signal - 1)) != 0
}

/// The handler and flags of `signal`'s disposition, as numbers (SIG_DFL is 0, SIG_IGN 1).
package func disposition(of signal: CInt) -> (handler: UInt, flags: Int32) {
    var action = sigaction()
    sigaction(signal, nil, &action)
    return (unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self), action.sa_flags)
}

/// Sets `signal`'s disposition to `handler` (SA_RESTART), or to SIG_DFL (nil).
package func setDisposition(of signal: CInt, to handler: (@convention(c) (CInt) -> Void)?) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    action.sa_flags = SA_RESTART
    sigemptyset(&action.sa_mask)
    sigaction(signal, &action, nil)
}

// MARK: - Child processes

/// Starts `arguments[0]` (an absolute path) with `arguments`, with descriptors inherited as
/// they are (the tests' own are close-on-exec).
package func spawn(_ arguments: [String]) throws -> pid_t {
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/bin:/bin"), nil]
    defer {
        for pointer in argv + envp { free(pointer) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, arguments[0], nil, nil, &argv, &envp)
    try #require(result == 0, "posix_spawn \(arguments): \(Errno(rawValue: result))")
    return pid
}

/// glibc's `pidfd_open` (2.36 and later; the Glibc module does not show it): a descriptor that
/// becomes readable when the process exits.
private let pidfdOpenFunction: (@convention(c) (pid_t, CUnsignedInt) -> CInt)? = dlsym(
    UnsafeMutableRawPointer(bitPattern: 0),
    "pidfd_open"
).map { unsafeBitCast($0, to: (@convention(c) (pid_t, CUnsignedInt) -> CInt).self) }

/// Waits, at most `seconds` (scaled by ``testTimeScale``), until the process `pid` has exited,
/// without reaping it (a child stays a zombie): the wait is for its pidfd to become readable —
/// the exit itself, not a poll of `waitpid`. False on time-out, or when there is no such
/// process (reaped already).
package func waitForExitWithoutReaping(_ pid: pid_t, seconds: Double = 5) -> Bool {
    guard let open = pidfdOpenFunction else {
        // An older glibc: look at the child's state until it has exited.
        return eventually(seconds: seconds) {
            var info = siginfo_t()
            return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
                && info._sifields._sigchld.si_pid == pid
        }
    }
    let fd = open(pid, 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let deadline = ContinuousClock.now + .milliseconds(Int(scaled(seconds) * 1_000))
    while true {
        let left = max(deadline - ContinuousClock.now, .zero)
        let milliseconds = CInt(left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready > 0 { return true }
        if ready == 0 || errno != EINTR { return false }
    }
}

/// Waits, at most `seconds`, for the child `pid` to exit, and reaps it: its wait status, or nil
/// when it did not exit in time (it is left running) or is not a child to reap.
package func reap(_ pid: pid_t, seconds: Double = 5) -> CInt? {
    guard waitForExitWithoutReaping(pid, seconds: seconds) else { return nil }
    var status: CInt = 0
    while true {
        let result = waitpid(pid, &status, 0)
        if result == pid { return status }
        if result == -1 && errno == EINTR { continue }
        return nil
    }
}

/// The exit code in a `waitpid` status, or nil when the process did not exit normally.
package func exitCode(_ status: CInt) -> CInt? {
    status & 0x7f == 0 ? (status >> 8) & 0xff : nil
}
