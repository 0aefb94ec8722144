//===----------------------------------------------------------------------===//
// RingIO — example tests: tcp-proxy in front of echo-server; rope-tour.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

@Suite("tcp-proxy")
struct TCPProxyTests {
    @Test("clients through the proxy to echo-server: every byte back, the half-close passed on")
    func forwardsBothWays() throws {
        let echo = try Example("echo-server", ["0"])
        let proxy = try Example("tcp-proxy", ["0", "127.0.0.1:\(echo.port)"])
        // The same clients as echo-server's test: each half-closes after sending, and reads to
        // the end: the end comes only if the proxy passed the half-close on to echo-server
        // and echo-server's close back.
        let result = try runPython(echoClients, ["\(proxy.port)"])
        #expect(result.status == 0 && result.output == "ok\n", "\(result)")
        #expect(proxy.interrupt() == 0)
        #expect(echo.interrupt() == 0)
    }

    @Test("an upstream that refuses: the client's connection is closed")
    func upstreamRefuses() throws {
        // A port nobody listens on: echo-server's, once it has stopped.
        let echo = try Example("echo-server", ["0"])
        let closedPort = echo.port
        #expect(echo.interrupt() == 0)
        let proxy = try Example("tcp-proxy", ["0", "127.0.0.1:\(closedPort)"])
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
            try:
                print("closed" if s.recv(1) == b"" else "data")
            except ConnectionResetError:
                print("closed")
            """
        let result = try runPython(script, ["\(proxy.port)"])
        #expect(result.output == "closed\n", "\(result)")
        #expect(proxy.interrupt() == 0)
    }
}

@Test("rope-tour runs to its end")
func ropeTour() throws {
    let result = try runClient(productsDirectory.appendingPathComponent("rope-tour").path, [])
    #expect(result.status == 0, "\(result)")
    #expect(result.output.contains("Hello, World!"), "\(result)")
}
