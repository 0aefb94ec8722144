//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the load generator's only contact with C (sockets, epoll, memory).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import CEpoll
import Glibc
#endif

// MARK: - Errors and outcomes

/// A failed system call's `errno`, with the C library's text for it.
struct SystemError: Error, CustomStringConvertible {
    var code: Int32

    var description: String { "\(String(cString: strerror(self.code))) (errno \(self.code))" }

    /// The `errno` of the call that just failed.
    static var current: SystemError { SystemError(code: errno) }
}

/// What one nonblocking `recv` or `send` did.
enum IOOutcome {
    /// This many bytes (more than zero) moved.
    case transferred(Int)
    /// `recv` returned 0: the peer closed its side.
    case endOfStream
    /// `EAGAIN`: nothing to read, or no room to write; wait for epoll.
    case wouldBlock
    case failed(SystemError)
}

// MARK: - Addresses

/// A numeric IPv4 or IPv6 address and port, ready for `connect`.
struct SocketAddress {
    private var storage = sockaddr_storage()
    private var length: socklen_t
    /// `host:port` (IPv6 in brackets), for messages.
    let text: String
    /// The value of an HTTP `Host` header naming this address (without the port, as curl sends it
    /// for the default port; the servers under test do not look at it).
    let hostHeader: String

    /// `nil` unless `host` is a numeric address (`127.0.0.1`, `::1`); `localhost` means `127.0.0.1`.
    init?(host: String, port: UInt16) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, numeric, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &self.storage) { target in
                withUnsafeBytes(of: v4) { target.copyMemory(from: $0) }
            }
            self.length = socklen_t(MemoryLayout<sockaddr_in>.size)
            self.text = "\(numeric):\(port)"
            self.hostHeader = numeric
        } else if inet_pton(AF_INET6, numeric, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &self.storage) { target in
                withUnsafeBytes(of: v6) { target.copyMemory(from: $0) }
            }
            self.length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            self.text = "[\(numeric)]:\(port)"
            self.hostHeader = "[\(numeric)]"
        } else {
            return nil
        }
    }

    fileprivate var family: Int32 { Int32(self.storage.ss_family) }

    fileprivate func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: self.storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), self.length)
        }
    }
}

// MARK: - System calls

/// Thin wrappers over the C calls the load generator makes. Each returns Swift types, retries
/// `EINTR` where a retry is right, and maps `EAGAIN` to ``IOOutcome/wouldBlock``.
enum Syscalls {
    // MARK: Process

    /// Raises the soft limit on open descriptors to the hard limit; returns the soft limit now.
    static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// A peer that closes while we write must give `EPIPE`, not kill the process (`send` passes
    /// `MSG_NOSIGNAL` as well; this covers everything else).
    static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `text` and a newline to standard error, unbuffered (Glibc's `stderr` is a global
    /// variable, which strict concurrency does not let us touch).
    static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    // MARK: Sockets

    /// A nonblocking TCP socket with `TCP_NODELAY`, its connect to `address` started. The
    /// connect finishes later: epoll reports the socket writable, then ``pendingError(_:)``
    /// tells whether it worked.
    static func startConnect(to address: SocketAddress) throws(SystemError) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.family, type, 0)
        guard fd >= 0 else { throw .current }
        var on: Int32 = 1
        guard setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let error = SystemError.current
            close(fd)
            throw error
        }
        let result = address.withSockaddr { connect(fd, $0, $1) }
        // A nonblocking connect interrupted by a signal goes on in the background, like EINPROGRESS.
        guard result == 0 || errno == EINPROGRESS || errno == EINTR else {
            let error = SystemError.current
            close(fd)
            throw error
        }
        return fd
    }

    /// A nonblocking UDP socket connected to `address`: it sends there with `send`, and
    /// receives only what comes from there (an ICMP "port unreachable" as ECONNREFUSED).
    static func openDatagram(to address: SocketAddress) throws(SystemError) -> Int32 {
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.family, type, 0)
        guard fd >= 0 else { throw .current }
        guard address.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            let error = SystemError.current
            close(fd)
            throw error
        }
        return fd
    }

    /// `SO_ERROR`: 0 when the connect `fd` started has succeeded, else why it failed.
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    /// One nonblocking `recv` into `buffer`.
    @inline(__always)
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOOutcome {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { return .transferred(count) }
            if count == 0 { return .endOfStream }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(SystemError(code: code))
            }
        }
    }

    /// One nonblocking `send` of `count` bytes from `base` (at most `count` go).
    @inline(__always)
    static func send(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int) -> IOOutcome {
        while true {
            let sent = Glibc.send(fd, base, count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            if sent >= 0 { return .transferred(sent) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(SystemError(code: code))
            }
        }
    }

    static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    // MARK: epoll

    /// Readiness flags, as `epoll_event.events` carries them.
    static let readable = EPOLLIN.rawValue
    static let writable = EPOLLOUT.rawValue
    /// An error or a hang-up: the next `recv` says which.
    static let errorOrHangUp = EPOLLERR.rawValue | EPOLLHUP.rawValue

    static func makeEpoll() throws(SystemError) -> Int32 {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw .current }
        return fd
    }

    /// Adds `fd` to `epoll` (level-triggered), or changes its flags; `token` comes back with
    /// every event.
    static func watch(_ epoll: Int32, _ fd: Int32, flags: UInt32, token: UInt64, adding: Bool) throws(SystemError) {
        var event = epoll_event()
        event.events = flags
        event.data.u64 = token
        guard epoll_ctl(epoll, adding ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) == 0 else { throw .current }
    }

    /// Waits at most `timeoutMilliseconds` for events; 0 when interrupted.
    static func wait(_ epoll: Int32, into events: borrowing ReadyEvents, timeoutMilliseconds: Int32) -> Int {
        let count = epoll_wait(epoll, events.base, Int32(events.capacity), timeoutMilliseconds)
        if count >= 0 { return Int(count) }
        // EINTR: an empty round; anything else is a bug in our arguments.
        precondition(errno == EINTR, "epoll_wait: \(SystemError.current)")
        return 0
    }
}

/// The array `epoll_wait` fills, allocated once.
struct ReadyEvents: ~Copyable {
    fileprivate let base: UnsafeMutablePointer<epoll_event>
    let capacity: Int

    init(capacity: Int) {
        self.base = .allocate(capacity: capacity)
        self.base.initialize(repeating: epoll_event(), count: capacity)
        self.capacity = capacity
    }

    deinit { self.base.deallocate() }

    /// The `index`th event of the last wait: its token and its flags.
    @inline(__always)
    subscript(index: Int) -> (token: UInt64, flags: UInt32) {
        let event = self.base[index]
        return (event.data.u64, event.events)
    }
}

// MARK: - Memory

enum Memory {
    /// The index of the first byte where `a` and `b` differ over `count` bytes, or `nil` when
    /// they are equal (`memcmp`; the byte-by-byte search runs only on a difference).
    @inline(__always)
    static func firstDifference(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Int? {
        guard memcmp(a, b, count) != 0 else { return nil }
        return self.scanForDifference(a, b, count: count)
    }

    @inline(never)
    private static func scanForDifference(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Int {
        let left = a.assumingMemoryBound(to: UInt8.self)
        let right = b.assumingMemoryBound(to: UInt8.self)
        var index = 0
        while index < count && left[index] == right[index] {
            index += 1
        }
        return index
    }

    /// The index of the first `byte` in `count` bytes from `base` (`memchr`), or `nil`.
    @inline(__always)
    static func firstIndex(of byte: UInt8, in base: UnsafeRawPointer, count: Int) -> Int? {
        guard let found = memchr(base, Int32(byte), count) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
