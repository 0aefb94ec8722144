//===----------------------------------------------------------------------===//
// RingIO — example tests: http-server, with curl and Python's http.client.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation
import Testing

/// A directory with a small text file and a 3 MiB file of random bytes, removed at the end.
final class TemporaryRoot {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ringio-http-\(UUID().uuidString)")
    let big = FileHandle(forReadingAtPath: "/dev/urandom")!.readData(ofLength: 3 << 20)

    init() throws {
        try FileManager.default.createDirectory(
            at: url.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        try Data("hello, file\n".utf8).write(to: url.appendingPathComponent("hello.txt"))
        try big.write(to: url.appendingPathComponent("sub/big.bin"))
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite("http-server")
struct HTTPServerTests {
    @Test("curl: GET / and files over one kept-alive connection; HEAD; 404 outside the root")
    func curl() throws {
        let root = try TemporaryRoot()
        let server = try Example("http-server", ["0", root.url.path])
        let base = "http://127.0.0.1:\(server.port)"
        let downloads = (0..<3).map { root.url.appendingPathComponent("downloaded-\($0)") }
        // Three requests, one connection: curl reuses it, and says how many it opened.
        let get = try runClient(
            "curl",
            [
                "-sS", "--max-time", "30", "-w", "%{http_code} %{num_connects}\\n",
                "\(base)/", "-o", downloads[0].path,
                "\(base)/hello.txt", "-o", downloads[1].path,
                "\(base)/sub/big.bin", "-o", downloads[2].path,
            ]
        )
        #expect(get.status == 0, "\(get)")
        #expect(get.output == "200 1\n200 0\n200 0\n", "\(get)")
        #expect(try Data(contentsOf: downloads[0]) == Data("Hello, World!".utf8))
        #expect(try Data(contentsOf: downloads[1]) == Data("hello, file\n".utf8))
        #expect(try Data(contentsOf: downloads[2]) == root.big)

        let head = try runClient("curl", ["-sS", "--max-time", "30", "-I", "\(base)/sub/big.bin"])
        #expect(head.output.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(head)")
        #expect(head.output.contains("Content-Length: \(3 << 20)\r\n"), "\(head)")
        #expect(head.output.contains("Content-Type: application/octet-stream\r\n"), "\(head)")

        for path in ["/missing.txt", "/sub/", "/sub", "/../etc/passwd", "/sub/%2e%2e/%2e%2e/etc/passwd"] {
            let missing = try runClient(
                "curl",
                ["-sS", "--max-time", "30", "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", base + path]
            )
            #expect(missing.output == "404", "\(path): \(missing)")
        }
        #expect(server.interrupt() == 0)
    }

    @Test("pipelined requests answered in order; a malformed one answered with 400 and the connection closed")
    func pipeliningAndErrors() throws {
        let root = try TemporaryRoot()
        let server = try Example("http-server", ["0", root.url.path])
        let script = """
            import re, socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
            s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"HEAD /hello.txt HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\nhi"
                      b"GET /hello.txt HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"GET / HTTP/1.1\\r\\nHost: x\\r\\nHost: y\\r\\n\\r\\n")
            received = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
            print(" ".join(status.decode() for status in re.findall(rb"HTTP/1\\.1 (\\d{3}) ", received)))
            print(received.count(b"Hello, World!"), received.count(b"hello, file"))
            """
        let result = try runPython(script, ["\(server.port)"])
        #expect(result.output == "200 200 405 200 400\n1 1\n", "\(result)")
        #expect(server.interrupt() == 0)
    }

    @Test("HTTP/1.0 and `Connection: close`: answered, then closed by the server")
    func closes() throws {
        let server = try Example("http-server", ["0"])
        let script = """
            import socket, sys
            for request in (b"GET / HTTP/1.0\\r\\n\\r\\n", b"GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n"):
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
                s.sendall(request)
                received = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    received += chunk
                print(received.split(b"\\r\\n")[0].split(b" ", 1)[1].decode(), received.endswith(b"Hello, World!"))
            """
        let result = try runPython(script, ["\(server.port)"])
        #expect(result.output == "200 OK True\n200 OK True\n", "\(result)")
        #expect(server.interrupt() == 0)
    }
}
