//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what /proc says about a server process.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#endif

/// Readings of a process (all its threads) from `/proc`: CPU time, resident memory, and the
/// processes started under it (nginx's workers).
public enum ProcessStats {
    /// Clock ticks per second of the `utime`/`stime` fields (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
    public static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User plus system CPU time of `pid` in seconds: every thread, including threads that have
    /// exited and io_uring's worker threads (they belong to the process); `nil` when the process
    /// is gone. Resolution: one clock tick (10 ms).
    public static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let fields = self.statFields(pid), fields.count > 14,
            let user = Double(fields[13]), let system = Double(fields[14])
        else { return nil }
        return (user + system) / self.ticksPerSecond
    }

    /// The sum of ``cpuSeconds(_:)`` over `pids` (processes that are gone count nothing).
    public static func cpuSeconds(_ pids: [pid_t]) -> Double {
        pids.reduce(0) { $0 + (self.cpuSeconds($1) ?? 0) }
    }

    /// `VmRSS`: the resident set now, in bytes.
    public static func residentBytes(_ pid: pid_t) -> Int? {
        self.statusKilobytes(pid, "VmRSS:").map { $0 * 1024 }
    }

    /// `VmHWM`: the peak resident set, in bytes.
    public static func peakResidentBytes(_ pid: pid_t) -> Int? {
        self.statusKilobytes(pid, "VmHWM:").map { $0 * 1024 }
    }

    /// `pid` and every process below it (children, their children...), found through the
    /// parent field of every `/proc/<n>/stat`.
    public static func processTree(_ pid: pid_t) -> [pid_t] {
        var parents: [pid_t: [pid_t]] = [:]
        if let directory = opendir("/proc") {
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard let child = pid_t(name), let fields = self.statFields(child), fields.count > 3,
                    let parent = pid_t(fields[3])
                else { continue }
                parents[parent, default: []].append(child)
            }
        }
        var tree = [pid]
        var index = 0
        while index < tree.count {
            tree.append(contentsOf: parents[tree[index]] ?? [])
            index += 1
        }
        return tree
    }

    /// The fields of `/proc/<pid>/stat`, numbered from 0 (`pid`); the command name (field 1,
    /// which may hold spaces and parentheses) is cut out and replaced by one field.
    static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let text = self.readFile("/proc/\(pid)/stat"),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        let head = text[..<open].split(separator: " ")
        let tail = text[text.index(after: close)...].split(separator: " ")
        return head + ["comm"] + tail
    }

    private static func statusKilobytes(_ pid: pid_t, _ key: String) -> Int? {
        guard let text = self.readFile("/proc/\(pid)/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key) {
            // "VmRSS:\t    1936 kB": a tab, then spaces.
            let fields = line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.first.flatMap { Int($0) }
        }
        return nil
    }

    /// A whole small file (a /proc file has no size to ask for), or `nil`.
    public static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// This process's own CPU time (all threads), in seconds.
public func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

/// The CPU time (all threads) of this process's children that have ended and been waited
/// for, in seconds: around one client run to its end (and no other child ending meanwhile),
/// the difference is that client's CPU time.
public func childrenCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

/// Seconds on the monotonic clock.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Nanoseconds on the monotonic clock.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Writes `text` and a newline to standard error (unbuffered, whole).
public func printToStandardError(_ text: String) {
    var line = text
    line += "\n"
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
