//===----------------------------------------------------------------------===//
// RingIO — engine test support: small conveniences over the package test hooks.
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

/// Memory that lives until the last reference to it goes: what a test hands the kernel.
final class TestBuffer: @unchecked Sendable {
    // @unchecked: written by the kernel during the operation, read by the test only after the
    // completion has been observed (through a semaphore or a lock).
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) {
        self.bytes = .allocate(byteCount: max(count, 1), alignment: 16)
        self.bytes.initializeMemory(as: UInt8.self, repeating: 0)
    }

    convenience init(_ contents: [UInt8]) {
        self.init(count: contents.count)
        self.bytes.copyBytes(from: contents)
    }

    deinit {
        self.bytes.deallocate()
    }

    func prefix(_ count: Int) -> [UInt8] { Array(self.bytes[..<count]) }
}

/// A temporary file, removed when the test ends.
struct TemporaryFile: ~Copyable {
    let path: String
    let fd: CInt

    init() throws {
        // Close-on-exec from the start (not mkstemp): an exit test's child process started
        // meanwhile must not inherit it (its descriptor accounting would see the file go away
        // under it). O_EXCL with a random name, as mkstemp does.
        let path = "/tmp/ringio-op-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(fd >= 0, "open(\(path)): \(errno)")
        self.fd = fd
        self.path = path
    }

    deinit {
        close(self.fd)
        unlink(self.path)
    }
}

/// A listening TCP socket on 127.0.0.1 and an ephemeral port.
func makeListener() throws -> (fd: CInt, address: sockaddr_in) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(bound == 0)
    try #require(listen(fd, 64) == 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    try #require(named == 0)
    return (fd, address)
}

/// A connected pair of Unix stream sockets, close-on-exec.
func makeSocketPair() throws -> (CInt, CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    return (fds[0], fds[1])
}

/// Writes all of `bytes` to `fd`, blocking.
func writeAll(_ fd: CInt, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        precondition(written > 0, "write failed: \(errno)")
        offset += written
    }
}

/// `count` bytes of a pattern that does not repeat at short distances.
func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 31 &+ 7) }
}

extension _RingIOTesting {
    static func nop(on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        self.submit(.nop, on: ring) { completion($0.result) }
    }

    static func timeout(nanoseconds: Int64, on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        let spec = _KernelTimespec(nanoseconds: nanoseconds)
        self.submit(.timeout(spec: spec), on: ring, keepAlive: spec) { completion($0.result) }
    }

    /// Submits `request` and waits (bounded) for its final completion.
    static func perform(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil
    ) throws -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let result = _Lock<Int32?>(nil)
        self.submit(request(), on: ring, keepAlive: keepAlive) { completion in
            guard !completion.hasMore else { return }
            result.withLock { $0 = completion.result }
            done.signal()
        }
        try #require(wait(done))
        return try #require(result.withLock { $0 })
    }

    static func read(fd: CInt, count: Int, offset: Int64, on ring: RingLoop) throws -> Result<[UInt8], Errno> {
        let buffer = TestBuffer(count: count)
        let result = try self.perform(
            .read(fd: fd, buffer: UnsafeMutableRawBufferPointer(rebasing: buffer.bytes[..<count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(buffer.prefix(Int(result)))
    }

    static func write(fd: CInt, bytes: [UInt8], offset: Int64, on ring: RingLoop) throws -> Result<Int, Errno> {
        let buffer = TestBuffer(bytes)
        let result = try self.perform(
            .write(fd: fd, buffer: UnsafeRawBufferPointer(rebasing: buffer.bytes[..<bytes.count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(Int(result))
    }
}

/// Whether the running kernel is `major.minor` or later (uname's release, e.g. "6.18.44-…").
func kernelIsAtLeast(_ major: Int, _ minor: Int) -> Bool {
    var names = utsname()
    guard uname(&names) == 0 else { return false }
    let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    guard parts.count == 2 else { return false }
    return (parts[0], parts[1]) >= (major, minor)
}
