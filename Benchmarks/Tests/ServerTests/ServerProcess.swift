//===----------------------------------------------------------------------===//
// RingIO — server tests: running a built server as a process.
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

/// A server started as a child process on port 0; its port is read from the first
/// line it prints ("… listening on HOST:PORT…").
final class ServerProcess: Sendable {
    let pid: pid_t
    let port: UInt16
    private let exited = Locked(false)
    private let printed = PrintedOutput()

    /// What the server printed: everything, when it is kept (`keepingOutput`), complete once
    /// `ended` is signalled (the server closed its standard output: it exited).
    private final class PrintedOutput: Sendable {
        let bytes = Locked<[UInt8]>([])
        let ended = DispatchSemaphore(value: 0)
        /// Signalled whenever more was printed (or the output ended).
        let arrived = DispatchSemaphore(value: 0)
    }

    /// Starts `.build/<triple>/debug/<name>` (next to the test bundle) with `arguments`.
    ///
    /// - Parameter keepingOutput: Keep reading what the server prints after the first line
    ///   (``output(seconds:)``); otherwise its standard output is closed after the first line.
    init(_ name: String, _ arguments: [String], keepingOutput: Bool = false) throws {
        let executable = builtProductsDirectory + "/" + name
        try #require(access(executable, X_OK) == 0, "\(executable) is not built")
        let (reader, writer) = try makePipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writer, 1)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(writer)
        if spawned != 0 { close(reader) }
        try #require(spawned == 0, "posix_spawn: \(spawned)")
        self.pid = pid
        // The first line, within 20 s: each byte waited for with poll (the descriptor becomes
        // readable when the server prints).
        var line = [UInt8]()
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(20)
        while !line.contains(UInt8(ascii: "\n")) && ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 100) >= 0 || errno == EINTR else { break }
            if descriptor.revents & Int16(POLLIN | POLLHUP) != 0 {
                var byte: UInt8 = 0
                guard read(reader, &byte, 1) == 1 else { break }
                line.append(byte)
            }
        }
        let text = String(decoding: line, as: UTF8.self)
        let port = text.split(separator: ",").first.flatMap { $0.split(separator: ":").last }
            .flatMap { UInt16(String($0.filter(\.isNumber))) }
        guard let port else {
            close(reader)
            kill(pid, SIGKILL)
            _ = reap(pid, seconds: 10)
            self.exited.withLock { $0 = true }
            Issue.record("no port in the server's first line: \(text.debugDescription)")
            throw ServerProcessError.noPort
        }
        self.port = port
        let printed = self.printed
        printed.bytes.withLock { $0 = line }
        if keepingOutput {
            startThread {
                // Piece by piece, as the server prints: ``waitForOutput(containing:seconds:)``
                // sees each line as it comes.
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(reader, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    printed.bytes.withLock { $0 += buffer[..<count] }
                    printed.arrived.signal()
                }
                close(reader)
                printed.ended.signal()
                printed.arrived.signal()
            }
        } else {
            close(reader)
            printed.ended.signal()
        }
    }

    deinit {
        if !self.exited.withLock({ $0 }) {
            kill(self.pid, SIGKILL)
            _ = reap(self.pid, seconds: 10)
        }
    }

    /// Sends `signal` and waits (at most `seconds`) for the exit; returns the exit code, or
    /// `nil` when the process did not exit in time (it is killed) or died of a signal.
    func stop(with signal: CInt = SIGTERM, seconds: Double = 15) -> CInt? {
        kill(self.pid, signal)
        guard let status = reap(self.pid, seconds: seconds) else { return nil }
        self.exited.withLock { $0 = true }
        return exitCode(status)
    }

    /// Everything the server printed (with `keepingOutput`), once it closed its standard output
    /// — it exited — or `seconds` passed.
    func output(seconds: Double = 10) -> [UInt8] {
        if wait(self.printed.ended, seconds: seconds) { self.printed.ended.signal() }
        return self.printed.bytes.withLock { $0 }
    }

    /// Waits (with `keepingOutput`) until a line the server printed contains `text`, at most
    /// `seconds`; returns that line, or `nil`.
    func waitForOutput(containing text: String, seconds: Double = 10) -> String? {
        let deadline = DispatchTime.now() + seconds
        while true {
            let printed = String(decoding: self.printed.bytes.withLock { $0 }, as: UTF8.self)
            if let line = printed.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            // Woken by each piece of output (or its end); the server's exit ends the wait too.
            guard self.printed.arrived.wait(timeout: deadline) == .success else { return nil }
        }
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
    let fd: CInt
    switch connectClient("127.0.0.1", port) {
    case .success(let connected): fd = connected
    case .failure(let error):
        Issue.record("connect to port \(port): \(error)")
        throw ServerProcessError.noPort
    }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
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
