//===----------------------------------------------------------------------===//
// RingIO — server tests: tcp-proxy terminating and originating TLS, with real TLS peers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A TLS client in Python (`ssl`, trusting the test CA, checking the name "localhost"):
/// `connections` connections to 127.0.0.1:PORT, each sending `messages` random messages of 1
/// byte to 64 KiB and checking every byte that comes back; then "ok", or what was wrong.
/// Arguments: PORT CA CONNECTIONS MESSAGES.
private let tlsEchoClientScript = """
    import os, random, socket, ssl, sys
    port, ca, connections, messages = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    context = ssl.create_default_context(cafile=ca)
    versions = set()
    for index in range(connections):
        generator = random.Random(index)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                versions.add(tls.version())
                for message in range(messages):
                    data = generator.randbytes(generator.randint(1, 65536))
                    tls.sendall(data)
                    received = bytearray()
                    while len(received) < len(data):
                        chunk = tls.recv(len(data) - len(received))
                        if not chunk:
                            sys.exit(f"connection {index} message {message}: the stream ended early")
                        received += chunk
                    if received != data:
                        sys.exit(f"connection {index} message {message}: wrong echo")
    print(" ".join(sorted(versions)))
    print("ok")
    """

@Suite(
    "tcp-proxy with TLS",
    .serialized,
    .enabled(if: ringIsAvailable, ringUnavailableReason),
    .enabled(if: opensslExists, "the tests make their certificates with the openssl command"),
    .enabled(if: toolExists("python3"), "python3 is not installed")
)
struct TLSProxyTests {
    @Test("terminating TLS: Python's ssl client through the proxy to a plaintext echo-server, every byte checked")
    func terminating() throws {
        let certificates = try TestCertificates()
        let echo = try ServerProcess("echo-server", ["--port", "0"])
        let proxy = try ServerProcess(
            "tcp-proxy",
            ["--port", "0", "--upstream", "127.0.0.1:\(echo.port)"] + certificates.serverOptions
        )
        let baselineSockets = socketDescriptors(proxy.pid)
        let client = runPython(
            tlsEchoClientScript,
            ["\(proxy.port)", certificates.caCertificate, "40", "4"],
            seconds: 120
        )
        #expect(client.status == 0 && client.text.hasSuffix("TLSv1.3\nok\n"), "\(client)")
        #expect(
            eventually { socketDescriptors(proxy.pid).count <= baselineSockets.count },
            "the proxy closed both sides of every connection"
        )
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("originating TLS: plaintext clients through the proxy to echo-server over TLS, its certificate checked")
    func originating() throws {
        let certificates = try TestCertificates()
        let echo = try ServerProcess("echo-server", ["--port", "0"] + certificates.serverOptions)
        // The upstream's address is its name: the certificate names 127.0.0.1 too.
        let proxy = try ServerProcess(
            "tcp-proxy",
            [
                "--port", "0", "--upstream", "127.0.0.1:\(echo.port)", "--upstream-tls",
                "--upstream-ca", certificates.caCertificate, "--rings", "2",
            ]
        )
        let baselineSockets = socketDescriptors(proxy.pid)
        let failures = TCPProxyTests().exchange(port: proxy.port, connections: 200, concurrently: 16, messages: 3)
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        #expect(
            eventually { socketDescriptors(proxy.pid).count <= baselineSockets.count },
            "the proxy closed both sides of every connection"
        )
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("both: TLS from the client, TLS to the upstream, every byte checked")
    func both() throws {
        let certificates = try TestCertificates()
        let echo = try ServerProcess("echo-server", ["--port", "0"] + certificates.serverOptions)
        let proxy = try ServerProcess(
            "tcp-proxy",
            [
                "--port", "0", "--upstream", "127.0.0.1:\(echo.port)", "--upstream-tls",
                "--upstream-ca", certificates.caCertificate, "--upstream-server-name", "localhost",
            ] + certificates.serverOptions
        )
        let client = runPython(
            tlsEchoClientScript,
            ["\(proxy.port)", certificates.caCertificate, "20", "4"],
            seconds: 120
        )
        #expect(client.status == 0 && client.text.hasSuffix("TLSv1.3\nok\n"), "\(client)")
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("an upstream whose certificate the proxy does not trust: the client's connection is closed, no byte passes")
    func untrustedUpstream() throws {
        let certificates = try TestCertificates()
        let others = try TestCertificates()  // another CA: the one the proxy trusts
        let echo = try ServerProcess("echo-server", ["--port", "0"] + certificates.serverOptions)
        let proxy = try ServerProcess(
            "tcp-proxy",
            [
                "--port", "0", "--upstream", "127.0.0.1:\(echo.port)", "--upstream-tls",
                "--upstream-ca", others.caCertificate,
            ]
        )
        let fd = try connectClient(port: proxy.port)
        defer { close(fd) }
        #expect(sendAll(fd, Array("hello".utf8)))
        let (received, closed) = receiveUntilClosed(fd, seconds: 20)
        #expect(closed && received.isEmpty, "received \(received.count) bytes")
        #expect(proxy.stop() == 0)
        #expect(echo.stop() == 0)
    }

    @Test("bad TLS flags are refused with a clear message")
    func badFlags() {
        let cases: [([String], String)] = [
            (["--tls-certificate", "/nonexistent.pem"], "--tls-certificate and --tls-key go together"),
            (["--upstream-ca", "/nonexistent.pem"], "--upstream-ca and --upstream-server-name need --upstream-tls"),
            (["--tls-certificate", "/nonexistent.pem", "--tls-key", "/nonexistent.key"], "TLS:"),
        ]
        for (flags, message) in cases {
            let result = runTool(
                ServerProcess.executablePath("tcp-proxy"),
                ["--port", "0", "--upstream", "127.0.0.1:9"] + flags,
                seconds: 20
            )
            #expect(result.status != 0 && result.errorText.contains(message), "\(flags): \(result)")
        }
    }
}
