//===----------------------------------------------------------------------===//
// RingIO — example tests: the examples and their clients as processes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The directory the examples are built into: the test runner's own.
let productsDirectory = Bundle.main.executableURL!.deletingLastPathComponent()

/// An example started as a child process; its port is read from the first line it prints
/// ("NAME: listening on 127.0.0.1:PORT…"). Interrupted (SIGINT) and waited for when the test
/// is done with it, if it still runs.
final class Example {
    let process = Process()
    let port: UInt16
    private let output = Pipe()
    private let exited = DispatchSemaphore(value: 0)

    init(_ name: String, _ arguments: [String] = []) throws {
        process.executableURL = productsDirectory.appendingPathComponent(name)
        process.arguments = arguments
        process.standardOutput = output
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let line = try #require(Self.firstLine(output.fileHandleForReading.fileDescriptor), "\(name) printed nothing")
        let port = line.split(separator: "127.0.0.1:").dropFirst().first?.prefix { $0.isNumber }
        self.port = try #require(port.flatMap { UInt16($0) }, "no port in \(line.debugDescription)")
    }

    /// The first line `fd` gives, within 20 seconds (each wait is for the descriptor to become
    /// readable: the server printing or exiting).
    private static func firstLine(_ fd: CInt) -> String? {
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(20)
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 1_000) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// Sends SIGINT and waits, at most `seconds`, for the process to exit: its exit status,
    /// or nil when it is still running (it is then killed).
    func interrupt(waiting seconds: Int = 20) -> Int32? {
        process.interrupt()
        guard exited.wait(timeout: .now() + .seconds(seconds)) == .success else {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return process.terminationStatus
    }

    /// What the process printed after its first line, once it has exited.
    func remainingOutput() -> String {
        String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    deinit {
        if process.isRunning { _ = interrupt() }
    }
}

/// A finished client: its exit status and what it printed (standard output and error).
struct ClientResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var description: String { "exit status \(status):\n\(output)" }
}

/// Runs `executable` (looked up on PATH) with `arguments` to its end, at most `seconds`
/// (then it is killed, and the status says so).
func runClient(_ executable: String, _ arguments: [String], seconds: Int = 60) throws -> ClientResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    // Read while it runs: a client that prints more than a pipe holds must not block.
    let printed = Collected()
    let reading = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let data = output.fileHandleForReading.readDataToEndOfFile()
        printed.data.withLock { $0 = data }
        reading.signal()
    }
    if exited.wait(timeout: .now() + .seconds(seconds)) != .success {
        kill(process.processIdentifier, SIGKILL)
        exited.wait()
    }
    reading.wait()
    return ClientResult(
        status: process.terminationStatus,
        output: String(decoding: printed.data.withLock { $0 }, as: UTF8.self)
    )
}

/// Runs a Python 3 script with `arguments` (`sys.argv[1:]`).
func runPython(_ script: String, _ arguments: [String], seconds: Int = 60) throws -> ClientResult {
    try runClient("python3", ["-c", script] + arguments, seconds: seconds)
}

/// Bytes one thread collects and another takes once it is done.
final class Collected: Sendable {
    let data = Mutex(Data())
}

/// A client the test talks to while it runs: it reads the client's lines, and lets it go on
/// with a line on its standard input.
final class InteractiveClient {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    init(_ command: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line the client prints, with its newline ("" if it ends first), waiting 20
    /// seconds at most.
    func readLine() -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(20)
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 1_000) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { break }
            line.append(byte)
            if byte == UInt8(ascii: "\n") { break }
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Writes a line to the client's standard input.
    func proceed() {
        input.fileHandleForWriting.write(Data("\n".utf8))
    }

    /// What the client prints until it exits.
    func rest() -> String {
        String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
