//===----------------------------------------------------------------------===//
// RingIO — server tests: running the clients (curl, python3, wrk) as processes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether an executable named `name` is on `PATH`: tests that need one are enabled only
/// where it is (CI installs curl, wrk and python3).
func toolExists(_ name: String) -> Bool {
    guard let path = getenv("PATH") else { return false }
    return String(cString: path).split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
}

/// What a tool run by ``runTool(_:_:seconds:)`` left behind.
struct ToolResult: CustomStringConvertible {
    /// The exit code; `nil` when the tool died of a signal or was killed at its deadline.
    var status: CInt?
    /// Whether the tool was still running at its deadline (and was killed).
    var timedOut: Bool
    /// Its standard output.
    var output: [UInt8]
    /// Its standard error.
    var errors: [UInt8]

    var text: String { String(decoding: self.output, as: UTF8.self) }
    var errorText: String { String(decoding: self.errors, as: UTF8.self) }

    /// The exit status and the ends of both outputs, for failure messages.
    var description: String {
        let status = self.timedOut ? "killed at its deadline" : self.status.map { "exit \($0)" } ?? "killed by a signal"
        let output = String(self.text.suffix(3_000))
        let errors = String(self.errorText.suffix(3_000))
        return "\(status)\n--- stdout:\n\(output)\n--- stderr:\n\(errors)"
    }
}

/// Runs `name` (looked up on `PATH`) with `arguments`, standard input from /dev/null, and
/// collects both outputs. A tool still running after `seconds` is killed (by its pid).
func runTool(_ name: String, _ arguments: [String], seconds: Double = 20) -> ToolResult {
    var result = ToolResult(status: nil, timedOut: false, output: [], errors: [])
    var output: [CInt] = [-1, -1]
    var errors: [CInt] = [-1, -1]
    guard pipe(&output) == 0 else { return result }
    guard pipe(&errors) == 0 else {
        close(output[0])
        close(output[1])
        return result
    }
    // Close-on-exec, so that a process another test spawns meanwhile does not keep a write end
    // open (our reads would not see EOF); the child's dup2 copies do not inherit the flag.
    for fd in output + errors {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, output[1], 1)
    posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
    let argv = ([name] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, name, &actions, nil, argv, environ)
    close(output[1])
    close(errors[1])
    defer {
        close(output[0])
        close(errors[0])
    }
    guard spawned == 0 else {
        result.errors = Array("posix_spawnp \(name): error \(spawned)".utf8)
        return result
    }

    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    var descriptors = [
        pollfd(fd: output[0], events: Int16(POLLIN), revents: 0),
        pollfd(fd: errors[0], events: Int16(POLLIN), revents: 0),
    ]
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while descriptors.contains(where: { $0.fd >= 0 }) && ContinuousClock.now < deadline {
        guard poll(&descriptors, 2, 100) >= 0 || errno == EINTR else { break }
        for index in 0..<2 where descriptors[index].fd >= 0 && descriptors[index].revents != 0 {
            let count = read(descriptors[index].fd, &buffer, buffer.count)
            if count > 0 {
                if index == 0 {
                    result.output += buffer[..<count]
                } else {
                    result.errors += buffer[..<count]
                }
            } else if count == 0 || errno != EINTR {
                descriptors[index].fd = -1  // poll skips it from now on
            }
        }
    }
    let left = max(deadline - ContinuousClock.now, .zero)
    if let status = reap(pid, seconds: Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18) {
        result.status = exitCode(status)
        return result
    }
    result.timedOut = true
    kill(pid, SIGKILL)
    _ = reap(pid, seconds: 10)
    return result
}

/// Runs `python3 -c script arguments…` (see ``runTool(_:_:seconds:)``).
func runPython(_ script: String, _ arguments: [String], seconds: Double = 20) -> ToolResult {
    runTool("python3", ["-c", script] + arguments, seconds: seconds)
}

/// The directory of the test bundle, where the servers are built.
var builtProductsDirectory: String {
    var path = [CChar](repeating: 0, count: 4_096)
    let count = readlink("/proc/self/exe", &path, path.count - 1)
    let executable = String(decoding: path[..<max(count, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return String(executable[..<(executable.lastIndex(of: "/") ?? executable.endIndex)])
}
