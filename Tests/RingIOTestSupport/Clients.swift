//===----------------------------------------------------------------------===//
// RingIO — test support: TCP clients of a listener on the loopback addresses, and what a test asks
// of a socket.
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

/// Whether a socket can bind the IPv6 loopback address here.
package let ipv6LoopbackIsAvailable: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    guard inet_pton(AF_INET6, "::1", &address.sin6_addr) == 1 else { return false }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

extension Trait where Self == ConditionTrait {
    /// Skips a test where the IPv6 loopback address (::1) cannot be bound.
    package static var ipv6LoopbackAvailable: Self {
        .enabled(if: ipv6LoopbackIsAvailable, "IPv6 loopback (::1) is unavailable here")
    }
}

/// A TCP socket for `host` ("127.0.0.1" or "::1"), close-on-exec; -1 on error.
package func clientSocket(_ host: String) -> CInt {
    socket(host.contains(":") ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
}

/// A blocking TCP connection to `host` ("127.0.0.1" or "::1") and `port`, close-on-exec,
/// over `existing` (from ``clientSocket(_:)``) or a new socket. Closes the socket on failure.
package func connectClient(_ host: String, _ port: UInt16, socket existing: CInt? = nil) -> Result<CInt, Errno> {
    let family = host.contains(":") ? AF_INET6 : AF_INET
    let fd = existing ?? clientSocket(host)
    guard fd >= 0 else { return .failure(Errno(rawValue: errno)) }
    var connected: CInt
    if family == AF_INET6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        _ = inet_pton(AF_INET6, host, &address.sin6_addr)
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
    guard connected == 0 else {
        let error = Errno(rawValue: errno)
        close(fd)
        return .failure(error)
    }
    // Every read in these tests is bounded.
    setReceiveTimeout(fd, seconds: 5)
    return .success(fd)
}

/// Makes blocking reads on `fd` give up after `seconds`, scaled as every bounded wait of the
/// tests is (`scaled(_:)`: longer under the sanitizers, whose suites run several times slower).
package func setReceiveTimeout(_ fd: CInt, seconds: Int) {
    var timeout = timeval(tv_sec: Int(scaled(Double(seconds)).rounded(.up)), tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
}

/// The port of a socket's own address (`peer: false`) or of its peer's; 0 on error.
package func socketPort(_ fd: CInt, peer: Bool = false) -> UInt16 {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
        }
    }
    guard result == 0 else { return 0 }
    // sin_port and sin6_port are at the same offset.
    return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    }
}

/// An integer socket option of `fd`, or nil on error.
package func socketOption(_ fd: CInt, _ level: CInt, _ name: CInt) -> CInt? {
    var value: CInt = -1
    var length = socklen_t(MemoryLayout<CInt>.size)
    return getsockopt(fd, level, name, &value, &length) == 0 ? value : nil
}

/// How many TCP sockets listen on `port` (IPv4 and IPv6), from /proc/net/tcp and tcp6.
package func listeningSocketCount(port: UInt16) -> Int {
    let portField = String(port, radix: 16, uppercase: true)
    let padded = String(repeating: "0", count: 4 - portField.count) + portField
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let contents = contentsOfFile(table) else { continue }
        for line in String(decoding: contents, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 3 else { continue }
            // local_address is ADDRESS:PORT in hex; st 0A is LISTEN.
            if fields[1].hasSuffix(":\(padded)") && fields[3] == "0A" { count += 1 }
        }
    }
    return count
}

/// The highest descriptor number open in this process.
package func highestOpenDescriptor() -> CInt {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(directory) }
    var highest: CInt = -1
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        if let fd = CInt(name) { highest = max(highest, fd) }
    }
    return highest
}

/// Connects `count` clients, each expected to succeed; they are the caller's to close.
package func connectClients(_ count: Int, _ host: String, _ port: UInt16) throws -> [CInt] {
    var clients: [CInt] = []
    for _ in 0..<count {
        switch connectClient(host, port) {
        case .success(let fd): clients.append(fd)
        case .failure(let error):
            for fd in clients { close(fd) }
            Issue.record("connect to \(host):\(port) failed: \(error)")
            throw error
        }
    }
    return clients
}

/// Each client sends bytes of its own (`patternBytes(size(index), seed: seed + index)`), then
/// expects them back, byte for byte, within 10 s: what a test of an echo server checks.
package func expectEchoes(
    from clients: [CInt],
    size: (Int) -> Int,
    seed: Int = 0,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for (index, client) in clients.enumerated() {
        let sent = patternBytes(size(index), seed: seed + index)
        #expect(write(client, sent, sent.count) == sent.count, sourceLocation: sourceLocation)
        setReceiveTimeout(client, seconds: 10)
        #expect(readExactly(client, sent.count) == sent, "client \(index)", sourceLocation: sourceLocation)
    }
}
