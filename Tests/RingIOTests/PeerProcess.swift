//===----------------------------------------------------------------------===//
// RingIO tests — real peers in processes of their own: Python servers, socat.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether an executable named `name` is on `PATH`.
func peerToolExists(_ name: String) -> Bool {
    guard let path = getenv("PATH") else { return false }
    return String(cString: path).split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
}

/// The absolute path of `name` on `PATH`.
private func peerToolPath(_ name: String) -> String? {
    guard let path = getenv("PATH") else { return nil }
    return String(cString: path).split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

/// A peer process with its standard output on a pipe: the tests read the line it prints when
/// it is ready (a Python server prints its port). Killed and reaped by ``stop()`` (or on
/// deinit).
final class PeerProcess: @unchecked Sendable {
    // @unchecked: `pid` and `output` are written in init only; `stop` runs once (a lock).
    let pid: pid_t
    private let output: CInt
    private let stopped = _TestLock(false)

    /// Starts `tool` (looked up on `PATH`) with `arguments`; its standard input is /dev/null,
    /// its standard error the test's.
    init(_ tool: String, _ arguments: [String]) throws {
        let path = try #require(peerToolPath(tool), "\(tool) is not on PATH")
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/bin:/bin"), strdup("PYTHONUNBUFFERED=1"), nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(fds[1])
        guard result == 0 else {
            close(fds[0])
            throw Errno(rawValue: result)
        }
        self.pid = pid
        self.output = fds[0]
    }

    /// A Python TCP (or Unix) server running `body` per connection in a thread, listening on
    /// `bind` (`("127.0.0.1", 0)`, `("::1", 0)`, or a path); it prints its port (or "ready")
    /// once it listens. `body` gets `conn`.
    static func python(family: String = "AF_INET", bind: String, backlog: Int = 64, body: String) throws -> PeerProcess
    {
        let script = """
            import socket, sys, threading
            s = socket.socket(socket.\(family), socket.SOCK_STREAM)
            if socket.\(family) != socket.AF_UNIX:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(\(bind))
            s.listen(\(backlog))
            print(s.getsockname()[1] if socket.\(family) != socket.AF_UNIX else "ready", flush=True)
            def serve(conn):
                try:
            \(body.split(separator: "\n").map { "        " + $0 }.joined(separator: "\n"))
                finally:
                    conn.close()
            while True:
                conn, _ = s.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
            """
        return try PeerProcess("python3", ["-c", script])
    }

    /// A Python echo server: every byte received goes back.
    static func pythonEcho(family: String = "AF_INET", bind: String) throws -> PeerProcess {
        try Self.python(
            family: family,
            bind: bind,
            body: """
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    conn.sendall(data)
                """
        )
    }

    /// The first line the process printed (bounded: `nil` when it printed none in `seconds`).
    func readLine(seconds: Double = 20) -> String? {
        var line: [UInt8] = []
        let deadline = monotonicSeconds() + seconds
        while monotonicSeconds() < deadline {
            var descriptor = pollfd(fd: self.output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            guard ready > 0 else { continue }
            var byte: UInt8 = 0
            guard read(self.output, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// The port a Python server printed.
    func port() throws -> UInt16 {
        let line = try #require(self.readLine(), "the peer printed nothing")
        return try #require(UInt16(line), "the peer printed \(line)")
    }

    /// Kills the process and reaps it.
    func stop() {
        guard
            self.stopped.withLock({ stopped in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        kill(self.pid, SIGKILL)
        var status: CInt = 0
        while waitpid(self.pid, &status, 0) == -1 && errno == EINTR {}
        close(self.output)
    }

    deinit {
        self.stop()
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// A lock for test helpers.
final class _TestLock<Value>: @unchecked Sendable {
    // @unchecked: `value` is touched only under `mutex`.
    private var value: Value
    private var mutex = pthread_mutex_t()

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&self.mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(&self.mutex)
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(&self.mutex)
        defer { pthread_mutex_unlock(&self.mutex) }
        return try body(&self.value)
    }
}

/// A free TCP port on `host` right now (bound and released: another process may take it
/// before the caller does, so callers wait for their peer to answer).
func freePort(host: String = "127.0.0.1") throws -> UInt16 {
    let family = host.contains(":") ? AF_INET6 : AF_INET
    let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    defer { close(fd) }
    let address = try SocketAddress(ipAddress: host, port: 0)
    let bound = address.withUnsafeSocketAddress { bind(fd, $0, $1) }
    try #require(bound == 0)
    return try #require(boundPort(fd))
}

/// The port socket `fd` is bound to.
func boundPort(_ fd: CInt) -> UInt16? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    return withUnsafeMutablePointer(to: &storage) { pointer -> UInt16? in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> UInt16? in
            guard getsockname(fd, address, &length) == 0 else { return nil }
            return (try? SocketAddress(unsafeAddress: address, length: length))?.port
        }
    }
}
