//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: starting, pinning, waiting for and stopping processes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Foundation
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func makeDirectory(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

func writeFile(_ path: String, _ text: String) throws {
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

/// The full path of `name` on PATH, or `nil`.
func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    let directories: [String] = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]
    for directory in directories {
        let candidate = "\(directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// A free TCP (or UDP) port on 127.0.0.1 (bound to port 0, read back, released).
func freePort(_ transport: ServerSpec.Transport = .tcp) throws -> Int {
    let type = transport == .tcp ? SOCK_STREAM : SOCK_DGRAM
    let fd = socket(AF_INET, Int32(type.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind to a free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` (connects and closes).
func isAccepting(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// Whether something on UDP 127.0.0.1:`port` echoes a datagram: one sent from a connected
/// socket comes back within 100 ms.
func isEchoingDatagrams(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    var probe: [UInt8] = Array("ready?".utf8)
    guard connected, send(fd, &probe, probe.count, 0) == probe.count else { return false }
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&descriptor, 1, 100) == 1 else { return false }
    var answer = [UInt8](repeating: 0, count: 64)
    return recv(fd, &answer, answer.count, Int32(MSG_DONTWAIT)) == probe.count
        && answer.prefix(probe.count).elementsEqual(probe)
}

/// The environment `pid` started with (/proc/<pid>/environ: NUL-separated `NAME=value`), or
/// `nil` when it cannot be read.
func startEnvironment(of pid: pid_t) -> [String: String]? {
    guard let text = ProcessStats.readFile("/proc/\(pid)/environ") else { return nil }
    var environment: [String: String] = [:]
    for entry in text.split(separator: "\0") {
        guard let equals = entry.firstIndex(of: "=") else { continue }
        environment[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
    }
    return environment
}

/// Raises this process's descriptor limit to its hard limit; servers and clients started
/// afterwards inherit it (10,000 idle connections need 10,000 descriptors on each side).
func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}

/// Starts `arguments` under `taskset -c cpu`, standard input from /dev/null, standard output to
/// `stdoutPath` (or a pipe, when `nil`: read it with ``finish(_:)``), standard error to `stderrPath`.
func launch(
    _ arguments: [String],
    cpu: Int,
    stdoutPath: String?,
    stderrPath: String,
    environment: [String: String] = [:]
) throws -> (Process, Pipe?) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Harness.taskset)
    process.arguments = ["-c", "\(cpu)"] + arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    guard FileManager.default.createFile(atPath: stderrPath, contents: nil) else {
        throw HarnessError("cannot create \(stderrPath)")
    }
    process.standardError = FileHandle(forWritingAtPath: stderrPath)
    var pipe: Pipe?
    if let stdoutPath {
        guard FileManager.default.createFile(atPath: stdoutPath, contents: nil) else {
            throw HarnessError("cannot create \(stdoutPath)")
        }
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
    } else {
        pipe = Pipe()
        process.standardOutput = pipe
    }
    do {
        try process.run()
    } catch {
        throw HarnessError("cannot start \(arguments.joined(separator: " ")): \(error)")
    }
    return (process, pipe)
}

/// Runs a client to its end (killing it after `timeout` seconds); returns its standard output.
/// A non-zero exit status throws with the end of its standard error.
func runToCompletion(
    _ arguments: [String],
    cpu: Int,
    timeout: Double,
    logDirectory: String,
    environment: [String: String] = [:]
) throws -> String {
    let name = URL(fileURLWithPath: arguments[0]).lastPathComponent
    let stderrPath = "\(logDirectory)/\(name).stderr"
    let (process, pipe) = try launch(
        arguments,
        cpu: cpu,
        stdoutPath: nil,
        stderrPath: stderrPath,
        environment: environment
    )
    let killer = DispatchWorkItem { [process] in
        if process.isRunning { process.terminate() }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
    let output = pipe!.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    killer.cancel()
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n")
        // The last line first (the reason, for the table's one-line cell), then the command.
        let reason = lines.last.map(String.init) ?? "no message"
        let tail = lines.suffix(6).joined(separator: "\n    ")
        throw HarnessError(
            "\(name) failed (status \(process.terminationStatus)): \(reason)\n    "
                + "\(arguments.joined(separator: " "))\n    \(tail)"
        )
    }
    return String(decoding: output, as: UTF8.self)
}

/// A server process, pinned, accepting on its port.
final class RunningServer {
    let spec: ServerSpec
    let port: Int
    let process: Process
    let logPath: String
    /// The server and the processes under it (nginx's worker), once it accepts.
    private(set) var pids: [pid_t] = []

    init(_ spec: ServerSpec, binaries: Binaries, cpu: Int, scratch: String) throws {
        self.spec = spec
        self.port = try freePort(spec.transport)
        try spec.prepare?(self.port, scratch)
        self.logPath = "\(scratch)/\(spec.key)-\(self.port).log"
        (self.process, _) = try launch(
            spec.arguments(binaries, self.port, scratch),
            cpu: cpu,
            stdoutPath: self.logPath,
            stderrPath: self.logPath + ".stderr",
            environment: spec.environment
        )
        let deadline = monotonicSeconds() + 20
        let isUp = spec.transport == .tcp ? isAccepting(port:) : isEchoingDatagrams(port:)
        while !isUp(self.port) {
            guard self.process.isRunning else {
                throw HarnessError(
                    "\(spec.name) exited before accepting (status \(self.process.terminationStatus)); see \(self.logPath).stderr"
                )
            }
            guard monotonicSeconds() < deadline else {
                self.stop()
                let what = spec.transport == .tcp ? "accept connections" : "echo a datagram"
                throw HarnessError("\(spec.name) did not \(what) on port \(self.port) within 20 s")
            }
            usleep(20_000)
        }
        // nginx forks its worker after it starts listening: give it a moment to appear.
        usleep(100_000)
        self.pids = ProcessStats.processTree(self.process.processIdentifier)
        // taskset execs the server in its own process: the server's environment must hold
        // what the spec sets (RINGIO_BACKEND: the row measures the engine it is labelled with).
        let started = startEnvironment(of: self.process.processIdentifier)
        for (name, value) in spec.environment.sorted(by: { $0.key < $1.key }) where started?[name] != value {
            self.stop()
            throw HarnessError(
                "\(spec.name) started without \(name)=\(value) in its environment (found: \(started?[name] ?? "nothing"))"
            )
        }
    }

    /// Resident memory now, summed over the process tree, bytes.
    var residentBytes: Int { self.pids.reduce(0) { $0 + (ProcessStats.residentBytes($1) ?? 0) } }

    /// Peak resident memory, summed over the process tree, bytes.
    var peakResidentBytes: Int { self.pids.reduce(0) { $0 + (ProcessStats.peakResidentBytes($1) ?? 0) } }

    /// SIGTERM, then SIGKILL after 5 s.
    func stop() {
        guard self.process.isRunning else { return }
        kill(self.process.processIdentifier, SIGTERM)
        let deadline = monotonicSeconds() + 5
        while self.process.isRunning && monotonicSeconds() < deadline { usleep(10_000) }
        if self.process.isRunning {
            for pid in self.pids.reversed() { kill(pid, SIGKILL) }
        }
        self.process.waitUntilExit()
    }
}
