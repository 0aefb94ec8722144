//===----------------------------------------------------------------------===//
// RingIO — server tests: http-server and echo-server over TLS, with real TLS clients.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(
    "http-server over TLS",
    .serialized,
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .enabled(if: opensslExists, "the tests make their certificates with the openssl command")
)
struct HTTPSServerTests {
    /// Every way of serving a connection: handlers on the accepting ring, handlers on a
    /// DispatchQueue per connection, a task per connection on the accepting ring.
    static let deliveries = ["ring", "dispatch", "async"]

    private func startServer(
        _ certificates: TestCertificates,
        _ delivery: String,
        _ options: [String] = [],
        keepingOutput: Bool = false
    ) throws -> ServerProcess {
        let mode = delivery == "async" ? ["--api", "async"] : ["--queue", delivery]
        return try ServerProcess(
            "http-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "2"] + mode + certificates.serverOptions + options,
            keepingOutput: keepingOutput
        )
    }

    @Test(
        "curl --cacert: HTTP/1.1 by ALPN, several URLs on one kept-alive connection, a 3 MiB file intact",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curl(_ delivery: String) throws {
        let certificates = try TestCertificates()
        let tree = try StaticTree()
        let server = try self.startServer(certificates, delivery, ["--root", tree.root])
        let base = "https://localhost:\(server.port)"
        let paths = ["/", "/hello.txt", "/missing.txt", "/big.bin", "/"]
        var arguments =
            curlOptions + [
                "-v", "--cacert", certificates.caCertificate, "--resolve", "localhost:\(server.port):127.0.0.1",
                "-w", "%{http_code} %{http_version} %{num_connects}\\n",
            ]
        for (index, path) in paths.enumerated() {
            arguments += ["-o", tree.output(index), base + path]
        }
        let curl = runTool("curl", arguments)
        #expect(curl.status == 0, "\(curl)")
        let lines = curl.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.map(\.first) == ["200", "200", "404", "200", "200"], "\(curl)")
        #expect(lines.allSatisfy { $0.count == 3 && $0[1] == "1.1" }, "not HTTP/1.1:\n\(curl)")
        let connects = lines.compactMap { $0.last.flatMap { Int($0) } }.reduce(0, +)
        #expect(connects == 1, "curl opened \(connects) connections for \(paths.count) URLs:\n\(curl)")
        // curl -v: "ALPN: offers h2,http/1.1" … "ALPN: server accepted http/1.1".
        #expect(curl.errorText.contains("ALPN: server accepted http/1.1"), "\(curl)")
        #expect(curl.errorText.contains("TLSv1.3"), "\(curl)")
        #expect(readFile(tree.output(0)) == Array("Hello, World!".utf8))
        #expect(readFile(tree.output(1)) == tree.files["hello.txt"])
        let whole = readFile(tree.output(3)) == tree.files["big.bin"]  // not inside #expect: no diff of megabytes
        #expect(whole, "big.bin did not arrive intact")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl without the CA refuses the server's certificate; with it, the same server answers",
        .enabled(if: toolExists("curl"), "curl is not installed")
    )
    func curlUntrusted() throws {
        let certificates = try TestCertificates()
        let server = try self.startServer(certificates, "ring")
        let url = "https://localhost:\(server.port)/"
        let resolve = ["--resolve", "localhost:\(server.port):127.0.0.1"]
        let refused = runTool(
            "curl",
            curlOptions + resolve + ["--capath", "/nonexistent", "--cacert", "/dev/null", url]
        )
        #expect(refused.status != 0 && refused.status != nil, "curl accepted an untrusted certificate:\n\(refused)")
        let trusted = runTool("curl", curlOptions + resolve + ["--cacert", certificates.caCertificate, url])
        #expect(trusted.status == 0 && trusted.text == "Hello, World!", "\(trusted)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "Python's ssl client: ALPN http/1.1, keep-alive requests, 16 pipelined in one write, a 300 KB POST echoed, Connection: close",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func python(_ delivery: String) throws {
        let certificates = try TestCertificates()
        let tree = try StaticTree()
        let server = try self.startServer(certificates, delivery, ["--root", tree.root])
        let python = runPython(
            httpsClientScript,
            ["\(server.port)", certificates.caCertificate, tree.root + "/hello.txt"],
            seconds: 60
        )
        #expect(python.status == 0, "\(python)")
        #expect(python.text.contains("TLSv1.3 http/1.1"), "\(python)")
        #expect(python.text.hasSuffix("ok\n"), "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "garbage instead of a ClientHello: the connection is closed, counted, and the next client is served; --stats and the start say user space or kTLS",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func garbage(_ delivery: String) throws {
        let certificates = try TestCertificates()
        let server = try self.startServer(certificates, delivery, ["--rings", "1", "--stats"], keepingOutput: true)
        let announced = try #require(server.waitForOutput(containing: "http-server tls:"), "no TLS line printed")
        let kernel = !announced.contains("kTLS unavailable") && !announced.contains("kTLS off")

        let fd = try connectClient(port: server.port)
        #expect(sendAll(fd, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
        // The server answers a plaintext request with an alert at most, then closes: the read
        // ends (EOF or a reset) well before the socket's 10 s timeout.
        var answer = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else {
                #expect(count == 0 || errno == ECONNRESET, "the connection was not closed (errno \(errno))")
                break
            }
            answer += buffer[..<count]
        }
        close(fd)
        #expect(!answer.containsSubsequence(Array("HTTP/1.1".utf8)), "a plaintext answer to a plaintext request")
        #expect(answer.count < 64, "more than an alert: \(answer)")

        let curl = runTool(
            "curl",
            curlOptions + [
                "--cacert", certificates.caCertificate, "--resolve", "localhost:\(server.port):127.0.0.1",
                "https://localhost:\(server.port)/",
            ]
        )
        #expect(curl.status == 0 && curl.text == "Hello, World!", "\(curl)")

        kill(server.pid, SIGUSR1)
        let stats = try #require(server.waitForOutput(containing: "\"tlsFailed\""), "no --stats line on SIGUSR1")
        #expect(stats.contains("\"tlsFailed\":1"), "\(stats)")
        #expect(stats.contains(kernel ? "\"tlsKernel\":1" : "\"tlsUserSpace\":1"), "\(announced)\n\(stats)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "timeouts over TLS: a request head left unfinished gets 408 after --header-timeout; an idle connection gets close_notify after --idle-timeout",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func timeouts(_ delivery: String) throws {
        let certificates = try TestCertificates()
        let server = try self.startServer(certificates, delivery, ["--header-timeout", "1", "--idle-timeout", "1"])
        let python = runPython(timeoutClientScript, ["\(server.port)", certificates.caCertificate], seconds: 30)
        #expect(python.status == 0, "\(python)")
        #expect(python.text.hasSuffix("ok\n"), "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "a handshake not finished within --header-timeout is cut off, however long --idle-timeout is",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func handshakeTimeout(_ delivery: String) throws {
        let certificates = try TestCertificates()
        let server = try self.startServer(certificates, delivery, ["--header-timeout", "1", "--idle-timeout", "60"])
        let python = runPython(handshakeTimeoutClientScript, ["\(server.port)"], seconds: 30)
        #expect(python.status == 0, "\(python)")
        #expect(python.text.hasSuffix("ok\n"), "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test("--tls-certificate without --tls-key, or a key that does not exist: refused at start, exit 64")
    func badOptions() throws {
        let certificates = try TestCertificates()
        let server = builtProductsDirectory + "/http-server"
        let alone = runTool(server, ["--port", "0", "--tls-certificate", certificates.serverCertificate])
        #expect(alone.status == 64, "\(alone)")
        let missing = runTool(
            server,
            ["--port", "0", "--tls-certificate", certificates.serverCertificate, "--tls-key", "/nonexistent.key"]
        )
        #expect(missing.status == 64, "\(missing)")
        #expect(missing.errorText.contains("--tls-key"), "\(missing)")
    }
}

@Suite(
    "echo-server over TLS",
    .serialized,
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .enabled(if: opensslExists, "the tests make their certificates with the openssl command"),
    .enabled(if: toolExists("python3"), "python3 runs openssl s_client")
)
struct TLSEchoServerTests {
    /// Every way of serving a connection: handlers on the accepting ring, handlers on a
    /// DispatchQueue per connection, a task per connection on the accepting ring.
    static let modes = ["ring", "dispatch", "async"]

    @Test("openssl s_client: what it sends comes back, TLS 1.3, the certificate verified", arguments: modes)
    func sClient(_ mode: String) throws {
        let certificates = try TestCertificates()
        let server = try ServerProcess(
            "echo-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "2"] + EchoServerTests.options(mode)
                + certificates.serverOptions
        )
        let client = runPython(sClientScript, ["\(server.port)", certificates.caCertificate], seconds: 60)
        #expect(client.status == 0, "\(client)")
        #expect(client.text.hasSuffix("ok\n"), "\(client)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "garbage instead of a ClientHello: the connection is closed, and s_client is echoed after it",
        arguments: modes
    )
    func garbage(_ mode: String) throws {
        let certificates = try TestCertificates()
        let server = try ServerProcess(
            "echo-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "1"] + EchoServerTests.options(mode)
                + certificates.serverOptions
        )
        let fd = try connectClient(port: server.port)
        #expect(sendAll(fd, randomBytes(1_000, seed: 7)))
        var buffer = [UInt8](repeating: 0, count: 4_096)
        var received = 0
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else {
                #expect(count == 0 || errno == ECONNRESET, "the connection was not closed (errno \(errno))")
                break
            }
            received += count
        }
        close(fd)
        #expect(received < 64, "more than an alert came back: \(received) bytes")
        let client = runPython(sClientScript, ["\(server.port)", certificates.caCertificate], seconds: 60)
        #expect(client.status == 0, "\(client)")
        #expect(server.stop(with: SIGTERM) == 0)
    }
}

// MARK: - The clients

/// An HTTPS client on Python's `ssl`: verifies the server against the CA (argv 2) for
/// "localhost", offers ALPN http/1.1, prints the version and the protocol agreed on, then on
/// one connection: 5 requests one after the other, 16 pipelined in one write (the last one
/// for the file at argv 3), a 300 KB POST to /echo, a request with `Connection: close` — after
/// which the server closes. Prints "ok" at the end.
private let httpsClientScript = #"""
    import socket, ssl, sys, os
    port, ca, hello = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["http/1.1"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    s = context.wrap_socket(raw, server_hostname="localhost")
    print(s.version(), s.selected_alpn_protocol())
    assert s.selected_alpn_protocol() == "http/1.1", s.selected_alpn_protocol()
    pending = b""
    def response():
        global pending
        while b"\r\n\r\n" not in pending:
            data = s.recv(65536)
            if not data: sys.exit("EOF in a head: %r" % pending)
            pending += data
        head, _, rest = pending.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = [int(l.split(b":")[1]) for l in lines[1:] if l.lower().startswith(b"content-length:")][0]
        while len(rest) < length:
            data = s.recv(65536)
            if not data: sys.exit("EOF in a body")
            rest += data
        pending = rest[length:]
        return status, rest[:length], head
    hello_request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    for _ in range(5):
        s.sendall(hello_request)
        status, body, _ = response()
        assert (status, body) == (200, b"Hello, World!"), (status, body)
    s.sendall(hello_request * 15 + b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
    for _ in range(15):
        status, body, _ = response()
        assert (status, body) == (200, b"Hello, World!"), (status, body)
    status, body, _ = response()
    assert status == 200 and body == open(hello, "rb").read(), (status, body)
    payload = os.urandom(300000)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
    status, body, _ = response()
    assert status == 200 and body == payload, (status, len(body))
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    status, body, head = response()
    assert (status, body) == (200, b"Hello, World!"), (status, body)
    assert b"connection: close" in head.lower(), head
    assert s.recv(1) == b"" and pending == b"", "more after Connection: close"
    print("ok")
    """#

/// Two connections with Python's `ssl` to a server with one-second header and idle timeouts:
/// one sends half a request head and must get 408 then the end (within 5 s); the other is
/// answered once, then idles and must see `close_notify` (a clean end: `recv` returns b"")
/// within 5 s. Prints "ok".
private let timeoutClientScript = #"""
    import socket, ssl, sys, time
    port, ca = int(sys.argv[1]), sys.argv[2]
    context = ssl.create_default_context(cafile=ca)
    def connect():
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        return context.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
    def read_all(s):
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: return data
            data += chunk
    start = time.monotonic()
    slow = connect()
    slow.sendall(b"GET / HTTP/1.1\r\nHost: loc")
    answer = read_all(slow)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - start < 5, time.monotonic() - start
    idle = connect()
    idle.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    first = idle.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    start = time.monotonic()
    rest = read_all(idle)  # SSLEOFError unless the server sent close_notify
    assert rest == b"" or rest.endswith(b"Hello, World!"), rest
    assert time.monotonic() - start < 5, time.monotonic() - start
    print("ok")
    """#

/// Two connections to a server with a one-second header timeout and a one-minute idle
/// timeout that never finish their handshake: one sends nothing, the other the first bytes of
/// a ClientHello. The server must close each within 5 s of its connecting (an alert before
/// the end, or a reset, are fine). Prints "ok".
private let handshakeTimeoutClientScript = #"""
    import socket, sys, time
    port = int(sys.argv[1])
    def cut_off(first):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        start = time.monotonic()
        if first: s.sendall(first)
        try:
            while s.recv(65536): pass
        except ConnectionResetError:
            pass
        elapsed = time.monotonic() - start
        assert elapsed < 5, "cut off after %.1f s" % elapsed
        s.close()
    cut_off(b"")
    cut_off(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))
    print("ok")
    """#

/// `openssl s_client` against the echo server on port argv 1, verifying it against the CA
/// (argv 2) for "localhost": 64 lines written, read back, then end of input (s_client sends
/// close_notify and exits 0). Prints "ok" when every byte came back and the handshake was
/// TLS 1.3 with the certificate verified.
private let sClientScript = #"""
    import subprocess, sys
    port, ca = sys.argv[1], sys.argv[2]
    client = subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:" + port, "-servername", "localhost", "-CAfile", ca,
         "-verify_return_error", "-verify_hostname", "localhost", "-brief", "-nocommands"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sent = b"".join(b"line %02d: the quick brown fox jumps over the lazy dog\n" % i for i in range(64))
    client.stdin.write(sent)
    client.stdin.flush()
    received = b""
    while len(received) < len(sent):
        data = client.stdout.read1(65536)
        if not data: break
        received += data
    client.stdin.close()
    errors = client.stderr.read().decode()
    status = client.wait(timeout=20)
    assert received == sent, "echoed %d of %d bytes: %r\n%s" % (len(received), len(sent), received[:200], errors)
    assert status == 0, "s_client exit %d\n%s" % (status, errors)
    assert "Protocol version: TLSv1.3" in errors, errors
    assert "Verification: OK" in errors, errors
    print("ok")
    """#
