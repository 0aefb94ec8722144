//===----------------------------------------------------------------------===//
// RingIO — server tests: tcp-proxy, as a process, between real clients and echo servers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A Python server (`python3 -c script`) printing one line when it listens ("… PORT" or
/// "ready"); killed on deinit.
final class PythonServer {
    let pid: pid_t
    let line: String

    init(_ script: String) throws {
        var output: [CInt] = [0, 0]
        try #require(pipe(&output) == 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addclose(&actions, output[0])
        let arguments: [String] = ["/usr/bin/python3", "-u", "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/python3", &actions, nil, argv, environ)
        close(output[1])
        try #require(spawned == 0)
        self.pid = pid
        var line = [UInt8]()
        var descriptor = pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(20)
        while !line.contains(UInt8(ascii: "\n")) && ContinuousClock.now < deadline {
            guard poll(&descriptor, 1, 100) >= 0 else { break }
            if descriptor.revents & Int16(POLLIN | POLLHUP) != 0 {
                var byte: UInt8 = 0
                guard read(output[0], &byte, 1) == 1 else { break }
                line.append(byte)
            }
        }
        close(output[0])
        self.line = String(decoding: line.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    var port: UInt16? { UInt16(self.line) }

    deinit {
        kill(self.pid, SIGKILL)
        var status: CInt = 0
        waitpid(self.pid, &status, 0)
    }

    /// An upstream that reads `count` bytes, then resets the connection (SO_LINGER 0).
    static func resetting(after count: Int) throws -> PythonServer {
        try PythonServer(
            """
            import socket, struct, threading
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0)); s.listen(64); print(s.getsockname()[1])
            def serve(c):
                got = 0
                while got < \(count):
                    d = c.recv(65536)
                    if not d: break
                    got += len(d)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close()
            while True:
                c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
            """
        )
    }

    /// A Unix-socket echo server at `path`.
    static func unixEcho(at path: String) throws -> PythonServer {
        try PythonServer(
            """
            import socket, threading
            s = socket.socket(socket.AF_UNIX); s.bind("\(path)"); s.listen(64); print("ready")
            def serve(c):
                while True:
                    d = c.recv(65536)
                    if not d: break
                    c.sendall(d)
                c.close()
            while True:
                c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
            """
        )
    }
}

/// The resident memory of process `pid` in KiB (`VmRSS`).
func residentKiB(_ pid: pid_t) -> Int? {
    guard let file = fopen("/proc/\(pid)/status", "r") else { return nil }
    defer { fclose(file) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0 {
        let text = String(cString: line!)
        if text.hasPrefix("VmRSS:") { return Int(text.filter(\.isNumber)) }
    }
    return nil
}

/// The sockets process `pid` has open (`socket:[inode]`): a proxy's listening socket, the
/// connections it serves, and any socket it inherited when it was spawned (the tests run
/// concurrently, and a socket another test opens without close-on-exec is inherited).
func socketDescriptors(_ pid: pid_t) -> Set<String> {
    guard let directory = opendir("/proc/\(pid)/fd") else { return [] }
    defer { closedir(directory) }
    var sockets: Set<String> = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/\(pid)/fd/\(name)", &buffer, 255)
        let target = String(decoding: buffer[..<max(count, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if target.hasPrefix("socket:") { sockets.insert(target) }
    }
    return sockets
}

/// The number of descriptors process `pid` has open.
func openDescriptors(_ pid: pid_t) -> Int {
    guard let directory = opendir("/proc/\(pid)/fd") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count - 2
}

@Suite("tcp-proxy", .serialized, .enabled(if: ringSetUpError == nil, ringUnavailableReason))
struct TCPProxyTests {
    /// `connections` clients, `concurrently` at a time, each sending `messages` random
    /// messages (1 byte to 64 KiB) through the proxy and checking every echoed byte.
    func exchange(port: UInt16, connections: Int, concurrently: Int, messages: Int) -> [String] {
        let failures = Mutex<[String]>([])
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: concurrently) { _ in
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < connections else { return }
                var generator = SplitMix64(seed: UInt64(index) &* 7_919)
                guard let fd = try? connectClient(port: port) else {
                    failures.withLock { $0.append("connection \(index): connect failed") }
                    return
                }
                defer { close(fd) }
                for message in 0..<messages {
                    let size = Int(generator.next() % 65_536) + 1
                    let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                    guard sendAll(fd, bytes), receiveExactly(fd, size) == bytes else {
                        failures.withLock { $0.append("connection \(index) message \(message): wrong echo") }
                        return
                    }
                }
            }
        }
        return failures.withLock { $0 }
    }

    @Test("1,000 connections through the proxy to echo-server, every byte checked; SIGTERM exits 0")
    func thousandConnections() throws {
        let echo = try ServerProcess("echo-server", ["--port", "0"])
        let proxy = try ServerProcess("tcp-proxy", ["--port", "0", "--upstream", "127.0.0.1:\(echo.port)"])
        let baselineSockets = socketDescriptors(proxy.pid)
        let failures = self.exchange(port: proxy.port, connections: 1_000, concurrently: 32, messages: 3)
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        #expect(
            eventually { socketDescriptors(proxy.pid).count <= baselineSockets.count },
            "the proxy closed both sides of every connection"
        )
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("half-close: the client's end of input reaches the upstream, and the answer comes back before EOF")
    func halfClose() throws {
        let echo = try ServerProcess("echo-server", ["--port", "0"])
        let proxy = try ServerProcess(
            "tcp-proxy",
            ["--port", "0", "--upstream", "127.0.0.1:\(echo.port)", "--rings", "2"]
        )
        let fd = try connectClient(port: proxy.port)
        defer { close(fd) }
        let bytes = randomBytes(3_000_000, seed: 11)
        let writer = DispatchQueue(label: "writer")
        writer.async {
            _ = sendAll(fd, bytes)
            shutdown(fd, CInt(SHUT_WR))
        }
        let (received, closed) = receiveUntilClosed(fd, seconds: 20)
        #expect(closed && received == bytes)
        writer.sync {}
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("an upstream on a Unix socket (--upstream unix:PATH)")
    func unixUpstream() throws {
        let directory = "/tmp/ringio-proxy-\(getpid())"
        mkdir(directory, 0o700)
        defer { rmdir(directory) }
        let path = directory + "/echo.sock"
        defer { unlink(path) }
        let echo = try PythonServer.unixEcho(at: path)
        #expect(echo.line == "ready")
        let proxy = try ServerProcess("tcp-proxy", ["--port", "0", "--upstream", "unix:\(path)"])
        let failures = self.exchange(port: proxy.port, connections: 20, concurrently: 4, messages: 3)
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        #expect(proxy.stop() == 0)
    }

    @Test("resets on either side mid-stream: the other side is closed, nothing leaks, others go on")
    func resets() throws {
        let echo = try ServerProcess("echo-server", ["--port", "0"])
        let proxy = try ServerProcess("tcp-proxy", ["--port", "0", "--upstream", "127.0.0.1:\(echo.port)"])
        let baseline = socketDescriptors(proxy.pid)
        // Clients that send and reset without reading what comes back.
        for index in 0..<50 {
            let fd = try connectClient(port: proxy.port)
            _ = sendAll(fd, randomBytes(100_000, seed: UInt64(index)))
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(fd)
        }
        #expect(
            eventually { socketDescriptors(proxy.pid).isSubset(of: baseline) },
            "every proxied pair is closed: \(socketDescriptors(proxy.pid).subtracting(baseline))"
        )
        #expect(self.exchange(port: proxy.port, connections: 10, concurrently: 2, messages: 2).isEmpty)
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)

        // An upstream that resets after 1,000 bytes: the client sees its connection end.
        let resetting = try PythonServer.resetting(after: 1_000)
        let port = try #require(resetting.port)
        let second = try ServerProcess("tcp-proxy", ["--port", "0", "--upstream", "127.0.0.1:\(port)"])
        let secondBaseline = socketDescriptors(second.pid)
        for index in 0..<20 {
            let fd = try connectClient(port: second.port)
            _ = sendAll(fd, randomBytes(5_000, seed: UInt64(index)))
            let (_, closed) = receiveUntilClosed(fd, seconds: 10)
            #expect(closed, "connection \(index) was not closed after its upstream's reset")
            close(fd)
        }
        #expect(
            eventually { socketDescriptors(second.pid).isSubset(of: secondBaseline) },
            "left open: \(socketDescriptors(second.pid).subtracting(secondBaseline))"
        )
        #expect(second.stop() == 0)
    }

    @Test("a client that does not read: the proxy stops reading upstream, its memory stays within its bound")
    func slowReader() throws {
        // An upstream whose blocking sendall stops it reading while its answers cannot go out.
        let echo = try PythonServer(
            """
            import socket, threading
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0)); s.listen(64); print(s.getsockname()[1])
            def serve(c):
                while True:
                    d = c.recv(65536)
                    if not d: break
                    c.sendall(d)
                c.close()
            while True:
                c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
            """
        )
        let echoPort = try #require(echo.port)
        let proxy = try ServerProcess(
            "tcp-proxy",
            ["--port", "0", "--upstream", "127.0.0.1:\(echoPort)", "--buffer", "\(1 << 20)"]
        )
        let before = try #require(residentKiB(proxy.pid))
        let fd = try connectClient(port: proxy.port)
        defer { close(fd) }
        // Send until the whole chain is full: client → proxy → echo-server → proxy → (us, not
        // reading). Non-blocking: EAGAIN for a second means every buffer on the way is full.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let chunk = randomBytes(65_536, seed: 3)
        var sent = 0
        var lastProgress = ContinuousClock.now
        while ContinuousClock.now - lastProgress < .seconds(1) && sent < 512 << 20 {
            let written = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                sent += written
                lastProgress = ContinuousClock.now
            } else {
                usleep(10_000)  // the chain is full (EAGAIN): wait for it to move, or prove it is stuck
            }
        }
        #expect(sent < 512 << 20, "the proxy kept reading: \(sent) bytes taken")
        let after = try #require(residentKiB(proxy.pid))
        // Per direction at most about twice the bound waits in the proxy, plus its fixed
        // receive buffers: 4 MiB of growth is generous.
        #expect(
            after - before < 4 * 1_024 + 2 * 2 * 1_024,
            "grew from \(before) KiB to \(after) KiB after \(sent) bytes"
        )
        #expect(proxy.stop() == 0)
    }

    @Test("a bad --upstream is refused with a clear message")
    func badUpstream() {
        let result = runTool(
            ServerProcess.executablePath("tcp-proxy"),
            ["--upstream", "no-port-here"]
        )
        #expect(result.status != 0 && result.errorText.contains("expected HOST:PORT or unix:PATH"), "\(result)")
        let long = runTool(
            ServerProcess.executablePath("tcp-proxy"),
            ["--upstream", "unix:/" + String(repeating: "x", count: 200)]
        )
        #expect(long.status != 0 && long.errorText.contains("ENAMETOOLONG"), "\(long)")
    }
}

/// Whether `condition` holds within `seconds`, checked every 10 ms: for state another process
/// reaches (its open descriptors), which sends us no event.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
