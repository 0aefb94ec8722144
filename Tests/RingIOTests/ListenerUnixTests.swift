//===----------------------------------------------------------------------===//
// RingIO tests — IOListener on Unix domain sockets: the same API as TCP.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A blocking Unix stream client connected to `path`, close-on-exec.
func connectUnix(_ path: String) throws -> CInt {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    let address = try SocketAddress(unixPath: path)
    let result = address.withUnsafeSocketAddress { Glibc.connect(fd, $0, $1) }
    guard result == 0 else {
        let error = Errno(rawValue: errno)
        close(fd)
        throw error
    }
    return fd
}

@Suite("IOListener on Unix domain sockets", .timeLimit(.minutes(2)))
struct ListenerUnixTests {
    @Test("serve() echoes over a Unix path; the socket file goes with the listener")
    func serveOverPath() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let directory = try TemporaryDirectory()
            let path = directory.file("echo.sock")
            let listener = try IOListener(address: SocketAddress(unixPath: path), ring: ring)
            #expect(listener.localAddresses.map(\.description) == ["unix:\(path)"])
            #expect(listener.port == 0)
            let serving = Task {
                await listener.serve { connection in
                    #expect(connection.localAddress?.unixPath == path)
                    #expect(connection.remoteAddress?.description == "unix:")  // an unbound client
                    for try await data in connection.channel.reads() {
                        try await connection.channel.write(data)
                    }
                }
            }
            // Clients: RingIO's connect and a plain blocking socket.
            let client = try await IOConnection.connect(to: SocketAddress(unixPath: path), ring: ring)
            #expect(try await roundTrip(client, pattern(50_000)) == pattern(50_000))
            client.channel.close()
            let plain = try connectUnix(path)
            writeAll(plain, Array("plain".utf8))
            #expect(readExactly(plain, 5) == Array("plain".utf8))
            close(plain)
            await listener.shutdown(gracePeriod: .seconds(5))
            await serving.value
            #expect(eventually { access(path, F_OK) != 0 }, "the socket file is removed when the listener closes")
        }
    }

    @Test("handlers, maxConnections and graceful shutdown work on a Unix socket as on TCP")
    func handlersAndCap() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let directory = try TemporaryDirectory()
        let path = directory.file("capped.sock")
        var options = IOListener.Options()
        options.maxConnections = 2
        let accepted = _TestLock<[IOConnection]>([])
        let listener = try IOAcceptor(address: SocketAddress(unixPath: path), options: options, queue: ring) { event in
            if case .accepted(let connection) = event { accepted.withLock { $0.append(connection) } }
        }
        let clients = try (0..<3).map { _ in try connectUnix(path) }
        defer { for fd in clients { close(fd) } }
        #expect(eventually { accepted.withLock { $0.count } == 2 })
        // The third waits in the backlog until one closes: the cap holds.
        let barrier = DispatchSemaphore(value: 0)
        ring.enqueue { barrier.signal() }
        barrier.wait()
        #expect(accepted.withLock { $0.count } == 2 && listener.openConnections == 2)
        accepted.withLock { $0[0].channel.close() }
        #expect(eventually { accepted.withLock { $0.count } == 3 })
        let done = DispatchSemaphore(value: 0)
        listener.shutdown(gracePeriod: .seconds(5), queue: DispatchQueue.global()) { done.signal() }
        #expect(wait(done, seconds: 10))
        #expect(listener.openConnections == 0)
        accepted.withLock { $0.removeAll() }
    }

    @Test("a stale socket file is removed only when asked; a live one never")
    func staleSocketFile() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let directory = try TemporaryDirectory()
        let path = directory.file("stale.sock")
        // A socket file no one listens on: a server that ended without removing it.
        let leftover = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try SocketAddress(unixPath: path).withUnsafeSocketAddress { #expect(bind(leftover, $0, $1) == 0) }
        close(leftover)
        #expect(throws: Errno.addressInUse) {
            _ = try IOListener(address: SocketAddress(unixPath: path), ring: ring)
        }
        var options = IOListener.Options()
        options.removeStaleSocketFile = true
        let listener = try IOListener(address: SocketAddress(unixPath: path), options: options, ring: ring)
        // A live listener's file is never removed, asked or not.
        #expect(throws: Errno.addressInUse) {
            _ = try IOListener(address: SocketAddress(unixPath: path), options: options, ring: ring)
        }
        close(try connectUnix(path))
        listener.close()
        // A regular file in the way is left alone.
        let regular = directory.file("regular")
        _ = try directory.create("regular", Array("data".utf8))
        #expect(throws: Errno.addressInUse) {
            _ = try IOListener(address: SocketAddress(unixPath: regular), options: options, ring: ring)
        }
        #expect(contentsOfFile(regular) == Array("data".utf8))
    }

    @Test("socketFilePermissions sets the file's mode before it listens")
    func permissions() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let directory = try TemporaryDirectory()
        let path = directory.file("private.sock")
        var options = IOListener.Options()
        options.socketFilePermissions = [.ownerReadWrite]
        let listener = try IOListener(address: SocketAddress(unixPath: path), options: options, ring: ring)
        defer { listener.close() }
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test("an abstract name: no file, and connections by name")
    func abstractName() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let name = "ringio-listener-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let listener = try IOListener(address: SocketAddress(abstractUnixName: name), ring: ring)
            #expect(listener.localAddresses.map(\.description) == ["unix:@\(name)"])
            let serving = Task {
                await listener.serve { connection in
                    try await connection.channel.write(ByteRope(copying: "hello".utf8))
                }
            }
            let client = try await IOConnection.connect(to: SocketAddress(abstractUnixName: name), ring: ring)
            #expect(try await client.channel.read(length: .max) == ByteRope(copying: "hello".utf8))
            client.channel.close()
            listener.close()
            await serving.value
        }
    }

    @Test("connect to a Unix path with no socket: ENOENT, clearly")
    func missingPath() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let thrown = await thrownError {
                _ = try await IOConnection.connect(to: SocketAddress(unixPath: "/nonexistent/dir/x.sock"), ring: ring)
            }
            expectThrown(thrown, as: ConnectError.self) { error in
                error.reason == .other(.noSuchFileOrDirectory)
                    && error.host == "unix:/nonexistent/dir/x.sock"
            }
        }
    }
}
