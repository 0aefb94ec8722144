//===----------------------------------------------------------------------===//
// RingIO — test support: pipes, sockets, terminals, files and directories, and what tests ask
// of a descriptor.
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

// MARK: - Descriptors

/// glibc's `pipe2` and `accept4`, which the Glibc module hides without _GNU_SOURCE: descriptors
/// must be close-on-exec from the start, or an exit test's child process, started meanwhile by
/// another test, would hold a pipe's write end open and keep its reader from ever seeing EOF.
private let pipe2Function = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2"),
    to: (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt).self
)
private let accept4Function = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4"),
    to: (@convention(c) (CInt, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, CInt) -> CInt).self
)

/// A pipe, both ends close-on-exec.
package func makePipe() throws -> (read: CInt, write: CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(pipe2Function(&fds, O_CLOEXEC) == 0)
    return (fds[0], fds[1])
}

/// A connected TCP pair over 127.0.0.1.
package func makeTCPPair() throws -> (client: CInt, server: CInt) {
    let (listener, address) = try makeListener()
    defer { close(listener) }
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(client >= 0)
    var target = address
    let connected = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    try #require(connected == 0)
    let server = accept4Function(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
    try #require(server >= 0)
    var one: CInt = 1
    _ = setsockopt(client, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    _ = setsockopt(server, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    return (client, server)
}

/// Closes `fd` with SO_LINGER 0: the peer gets a reset (RST), not an orderly end.
package func resetAndClose(_ fd: CInt) {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    close(fd)
}

/// A pseudo-terminal in raw mode: bytes written to `master` are read from `terminal` as is.
package func makeTerminal() throws -> (master: CInt, terminal: CInt) {
    // posix_openpt, unlockpt and ptsname, spelled out (the Glibc module hides them):
    // TIOCSPTLCK = _IOW('T', 0x31, int), TIOCGPTN = _IOR('T', 0x30, unsigned int).
    let TIOCSPTLCK: UInt = 0x4004_5431
    let TIOCGPTN: UInt = 0x8004_5430
    let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    try #require(master >= 0)
    var unlock: CInt = 0
    try #require(ioctl(master, TIOCSPTLCK, &unlock) == 0)
    var number: CUnsignedInt = 0
    try #require(ioctl(master, TIOCGPTN, &number) == 0)
    let terminal = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
    try #require(terminal >= 0)
    var attributes = termios()
    try #require(tcgetattr(terminal, &attributes) == 0)
    cfmakeraw(&attributes)
    try #require(tcsetattr(terminal, TCSANOW, &attributes) == 0)
    return (master, terminal)
}

/// A temporary directory, removed with everything in it when the last reference goes.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init() throws {
        var template = Array("/tmp/ringio-channel-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil)
        self.path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        removeTree(self.path)
    }

    /// The absolute path of `name` inside the directory.
    package func file(_ name: String) -> String { "\(self.path)/\(name)" }

    /// Creates a FIFO named `name` and opens its two ends (blocking, close-on-exec).
    package func fifo(_ name: String = "fifo") throws -> (read: CInt, write: CInt) {
        let path = self.file(name)
        try #require(mkfifo(path, 0o600) == 0)
        // Non-blocking so that opening the reader does not wait for a writer; then blocking again.
        let reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        try #require(writer >= 0)
        try #require(fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) & ~O_NONBLOCK) == 0)
        return (reader, writer)
    }

    /// Creates a regular file with `contents`.
    @discardableResult
    package func create(_ name: String, _ contents: [UInt8]) throws -> String {
        let path = self.file(name)
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        writeAll(fd, contents)
        close(fd)
        return path
    }
}

/// Removes `path` and, for a directory, everything below it.
package func removeTree(_ path: String) {
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            removeTree("\(path)/\(name)")
        }
        closedir(directory)
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// A regular file with `contents`, open read-write, positioned at 0; removed at the end.
package func makeFile(_ contents: [UInt8]) throws -> TemporaryFile {
    let file = try TemporaryFile()
    writeAll(file.fd, contents)
    try #require(lseek(file.fd, 0, SEEK_SET) == 0)
    return file
}

/// The whole contents of the file at `path`.
package func contentsOfFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    return readToEnd(fd)
}

/// Reads `fd` until end of file (blocking).
package func readToEnd(_ fd: CInt) -> [UInt8] {
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

/// Reads what `fd` has now, without waiting (the descriptor stays blocking).
package func readAvailable(_ fd: CInt) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while pendingBytes(fd) > 0 {
        let count = read(fd, &buffer, min(buffer.count, pendingBytes(fd)))
        guard count > 0 else { break }
        result += buffer[..<count]
    }
    return result
}

/// Reads exactly `count` bytes from `fd` (blocking), or fewer at end of file.
package func readExactly(_ fd: CInt, _ count: Int) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while result.count < count {
        let got = read(fd, &buffer, min(buffer.count, count - result.count))
        if got < 0 && errno == EINTR { continue }
        guard got > 0 else { break }
        result += buffer[..<got]
    }
    return result
}

/// Bytes waiting to be read on a pipe, FIFO or socket (FIONREAD).
package func pendingBytes(_ fd: CInt) -> Int {
    var count: CInt = 0
    guard ioctl(fd, UInt(FIONREAD), &count) == 0 else { return -1 }
    return Int(count)
}

/// Whether `fd` is open.
package func isOpen(_ fd: CInt) -> Bool {
    fcntl(fd, F_GETFD) != -1
}

/// The device and inode `fd` refers to, or nil when it is not open.
package func identity(of fd: CInt) -> [UInt64]? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
}

/// The number of descriptors this process has open.
package func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    closedir(directory)
    return count - 3  // ".", ".." and the directory's own descriptor
}

/// A descriptor number that cannot be open: above the process's descriptor limit.
package func descriptorThatIsNeverOpen() -> CInt {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    return CInt(clamping: min(UInt64(limit.rlim_cur), 1 << 20) + 1_000)
}

/// The file position of `fd`.
package func position(_ fd: CInt) -> Int64 {
    Int64(lseek(fd, 0, SEEK_CUR))
}

/// Whether SIGPIPE is at its default action (so that a stray one would end the process).
package func sigpipeIsDefault() -> Bool {
    var action = sigaction()
    sigaction(SIGPIPE, nil, &action)
    return action.__sigaction_handler.sa_handler == nil
}

// MARK: - Memory and files for the kernel

/// Memory that lives until the last reference to it goes: what a test hands the kernel.
package final class TestBuffer: @unchecked Sendable {
    // @unchecked: written by the kernel during the operation, read by the test only after the
    // completion has been observed (through a semaphore or a lock).
    package let bytes: UnsafeMutableRawBufferPointer

    package init(count: Int) {
        self.bytes = .allocate(byteCount: max(count, 1), alignment: 16)
        self.bytes.initializeMemory(as: UInt8.self, repeating: 0)
    }

    package convenience init(_ contents: [UInt8]) {
        self.init(count: contents.count)
        self.bytes.copyBytes(from: contents)
    }

    deinit {
        self.bytes.deallocate()
    }

    package func prefix(_ count: Int) -> [UInt8] { Array(self.bytes[..<count]) }
}

/// A temporary file, removed when the test ends.
package struct TemporaryFile: ~Copyable {
    package let path: String
    package let fd: CInt

    package init() throws {
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
package func makeListener() throws -> (fd: CInt, address: sockaddr_in) {
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

/// A connected pair of Unix sockets of `type` (stream unless told), close-on-exec.
package func makeSocketPair(_ type: __socket_type = SOCK_STREAM) throws -> (CInt, CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    return (fds[0], fds[1])
}

/// Closes each of `fds`: what a test defers for the descriptors it made itself.
package func closeAll(_ fds: CInt...) {
    for fd in fds { close(fd) }
}

/// Writes all of `bytes` to `fd`, blocking.
package func writeAll(_ fd: CInt, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        precondition(written > 0, "write failed: \(errno)")
        offset += written
    }
}

/// Writes all of `bytes` to `fd`, blocking, and stops at the first error instead: for a writer
/// on a thread of its own (``startThread(_:)``) whose reader may be gone when a test fails —
/// SIGPIPE is blocked on the calling thread, so that the write fails with EPIPE rather than
/// end the process. Returns whether every byte was written.
@discardableResult
package func writeAllUnlessClosed(_ fd: CInt, _ bytes: [UInt8]) -> Bool {
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}

// MARK: - What a socket shows

/// The events `poll` reports for `fd` now (it does not wait): `POLLIN`, `POLLERR`, `POLLHUP`…
/// (Reading SO_ERROR would take a pending error away from the channel that owns the socket;
/// `poll` only looks.)
package func pollEvents(_ fd: CInt, _ events: Int16 = Int16(POLLIN)) -> Int16 {
    var descriptor = pollfd(fd: fd, events: events, revents: 0)
    return poll(&descriptor, 1, 0) > 0 ? descriptor.revents : 0
}

/// Whether the peer of the TCP socket `fd` has reset the connection, as `fd` sees it now: an
/// error and a hang-up are pending.
package func sawReset(_ fd: CInt) -> Bool {
    pollEvents(fd) & Int16(POLLERR) != 0
}

/// Bytes the socket `fd` has sent and its peer has not acknowledged yet, or not sent at all
/// (SIOCOUTQ): more than zero while the peer's receive window is full.
package func unsentBytes(_ fd: CInt) -> Int {
    var count: CInt = 0
    guard ioctl(fd, 0x5411, &count) == 0 else { return -1 }  // SIOCOUTQ (TIOCOUTQ)
    return Int(count)
}
