//===----------------------------------------------------------------------===//
// RingIO — example tests: running a built example server as a process.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether io_uring can be set up here: the example servers cannot start without it, so their
/// suites skip cleanly where it is refused (a default container's seccomp profile).
let ringSetUpError = _RingIOTesting.ringSetUpError()
let ringUnavailableReason: Comment = "no RingIO loop can be set up here: \(ringSetUpError.map { "\($0)" } ?? "")"

/// An example server started as a child process on port 0; its port is read from the first
/// line it prints ("… listening on HOST:PORT…").
final class ServerProcess {
    let pid: pid_t
    let port: UInt16
    private var exited = false

    /// Starts `.build/<triple>/debug/<name>` (next to the test bundle) with `arguments`.
    init(_ name: String, _ arguments: [String]) throws {
        let executable = Self.directory + "/" + name
        try #require(access(executable, X_OK) == 0, "\(executable) is not built")
        var output: [CInt] = [0, 0]
        try #require(pipe(&output) == 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addclose(&actions, output[0])
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(output[1])
        try #require(spawned == 0, "posix_spawn: \(spawned)")
        self.pid = pid
        // The first line, within 20 s.
        var line = [UInt8]()
        var descriptor = pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(20)
        while !line.contains(UInt8(ascii: "\n")) && ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 100) >= 0 else { break }
            if descriptor.revents & Int16(POLLIN | POLLHUP) != 0 {
                var byte: UInt8 = 0
                guard read(output[0], &byte, 1) == 1 else { break }
                line.append(byte)
            }
        }
        close(output[0])
        let text = String(decoding: line, as: UTF8.self)
        let port = text.split(separator: ",").first.flatMap { $0.split(separator: ":").last }
            .flatMap { UInt16(String($0.filter(\.isNumber))) }
        guard let port else {
            kill(pid, SIGKILL)
            var status: CInt = 0
            waitpid(pid, &status, 0)
            self.exited = true
            Issue.record("no port in the server's first line: \(text.debugDescription)")
            throw ServerProcessError.noPort
        }
        self.port = port
    }

    deinit {
        if !self.exited {
            kill(self.pid, SIGKILL)
            var status: CInt = 0
            waitpid(self.pid, &status, 0)
        }
    }

    /// Sends `signal` and waits (at most `seconds`) for the exit; returns the exit code, or
    /// `nil` when the process did not exit in time (it is killed) or died of a signal.
    func stop(with signal: CInt = SIGTERM, seconds: Double = 15) -> CInt? {
        kill(self.pid, signal)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        var status: CInt = 0
        while ContinuousClock.now < deadline {
            if waitpid(self.pid, &status, WNOHANG) == self.pid {
                self.exited = true
                // WIFEXITED / WEXITSTATUS
                return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
            }
            usleep(10_000)
        }
        return nil
    }

    /// The path of the built executable `name`, next to the test bundle.
    static func executablePath(_ name: String) -> String {
        Self.directory + "/" + name
    }

    /// The directory of the test bundle: the build products.
    private static var directory: String {
        var path = [CChar](repeating: 0, count: 4_096)
        let count = readlink("/proc/self/exe", &path, path.count - 1)
        let executable = String(decoding: path[..<max(count, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(executable[..<(executable.lastIndex(of: "/") ?? executable.endIndex)])
    }
}

enum ServerProcessError: Error {
    case noPort
}

/// A blocking TCP client socket to 127.0.0.1:`port`, with 10 s send and receive timeouts.
func connectClient(port: UInt16) throws -> CInt {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    if connected != 0 {
        let error = errno
        close(fd)
        Issue.record("connect to port \(port): errno \(error)")
        throw ServerProcessError.noPort
    }
    return fd
}

/// Sends all of `bytes`; false on an error or timeout.
func sendAll(_ fd: CInt, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let result = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if result <= 0 { return false }
        sent += result
    }
    return true
}

/// Receives exactly `count` bytes, or fewer on EOF, an error or a timeout.
func receiveExactly(_ fd: CInt, _ count: Int) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    var received = 0
    while received < count {
        let result = buffer[received...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if result <= 0 { break }
        received += result
    }
    return Array(buffer[..<received])
}
