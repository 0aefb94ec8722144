//===----------------------------------------------------------------------===//
// RingIO — server tests: http-server, as a process, with clients nobody here wrote.
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

// MARK: - The tests

@Suite("http-server", .serialized, .enabled(if: ringIsAvailable, ringUnavailableReason))
struct HTTPServerTests {
    /// Every way of serving a connection: handlers on the accepting ring, handlers on a
    /// DispatchQueue per connection, a task per connection on the accepting ring.
    static let deliveries = ["ring", "dispatch", "async"]

    private func startServer(_ delivery: String, rings: Int = 2, _ options: [String] = []) throws -> ServerProcess {
        let mode = delivery == "async" ? ["--api", "async"] : ["--queue", delivery]
        return try ServerProcess(
            "http-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "\(rings)"] + mode + options
        )
    }

    // MARK: curl

    @Test(
        "curl: several URLs in one invocation share one kept-alive connection",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlKeepAlive(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let paths = ["/", "/hello.txt", "/missing.txt", "/sub/", "/", "/big.bin"]
        var arguments = curlOptions + ["-w", "%{http_code} %{num_connects}\\n"]
        for (index, path) in paths.enumerated() {
            arguments += ["-o", tree.output(index), "http://127.0.0.1:\(server.port)\(path)"]
        }
        let curl = runTool("curl", arguments)
        #expect(curl.status == 0, "\(curl)")
        let lines = curl.text.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(lines.map { $0.first.map(String.init) } == ["200", "200", "404", "200", "200", "200"], "\(curl)")
        let connects = lines.compactMap { $0.last.flatMap { Int($0) } }.reduce(0, +)
        #expect(connects == 1, "curl opened \(connects) connections for \(paths.count) URLs:\n\(curl)")
        #expect(readFile(tree.output(0)) == Array("Hello, World!".utf8))
        #expect(readFile(tree.output(1)) == tree.files["hello.txt"])
        #expect(readFile(tree.output(3)) == tree.files["sub/index.html"])
        #expect(readFile(tree.output(5)) == tree.files["big.bin"])
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl -I: HEAD has GET's headers (Content-Length, Content-Type, Date, Server) and no body",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlHead(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let base = "http://127.0.0.1:\(server.port)"
        // Three HEADs on one connection: a body after a HEAD response would make curl drop the
        // connection (and count a second connect), or misread the next status line.
        let curl = runTool(
            "curl",
            curlOptions + [
                "-I", "-w", "connects=%{num_connects}\\n", base + "/", base + "/big.bin", base + "/hello.txt",
            ]
        )
        #expect(curl.status == 0, "\(curl)")
        let blocks = curl.text.lowercased().split(separator: "connects=")
        #expect(blocks.count == 4, "\(curl)")  // three header blocks, each followed by its count
        if blocks.count == 4 {
            let expectations = [("13", "text/plain"), ("3145728", "application/octet-stream"), ("19", "text/plain")]
            for (block, (length, type)) in zip(blocks, expectations) {
                let headers = block.split(separator: "\r\n").dropFirst()
                #expect(block.contains("http/1.1 200"), "\(block)")
                #expect(headers.contains("content-length: \(length)"), "\(block)")
                #expect(headers.contains { $0.hasPrefix("content-type: \(type)") }, "\(block)")
                #expect(headers.contains("server: ringio"), "\(block)")
                #expect(headers.contains { $0.hasPrefix("date: ") }, "\(block)")
            }
            let connects = blocks.dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }.reduce(0, +)
            #expect(connects == 1, "\(curl)")
        }
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl POST /echo: chunked and Content-Length bodies echoed byte for byte; 1 MiB accepted, 1 MiB + 1 is 413",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlPost(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery)
        let url = "http://127.0.0.1:\(server.port)/echo"
        let sizes = [300_000, 1 << 20, (1 << 20) + 1]
        for (index, size) in sizes.enumerated() {
            try writeFile(tree.directory + "/body\(index)", randomBytes(size, seed: UInt64(index)))
        }
        // Chunked: curl streams the file without a Content-Length.
        let chunked = runTool(
            "curl",
            curlOptions + [
                "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + tree.directory + "/body0",
                "-o", tree.output(0), "-w", "%{http_code}", url,
            ]
        )
        #expect(chunked.text == "200", "\(chunked)")
        #expect(readFile(tree.output(0)) == readFile(tree.directory + "/body0"), "chunked body not echoed")
        // Content-Length, exactly at the default --max-body (1 MiB): accepted.
        let atLimit = runTool(
            "curl",
            curlOptions + [
                "--data-binary", "@" + tree.directory + "/body1", "-o", tree.output(1), "-w", "%{http_code}", url,
            ]
        )
        #expect(atLimit.text == "200", "\(atLimit)")
        #expect(readFile(tree.output(1)) == readFile(tree.directory + "/body1"), "1 MiB body not echoed")
        // One byte more: 413 (curl asks with Expect: 100-continue and gets the 413 instead).
        let overLimit = runTool(
            "curl",
            curlOptions + [
                "--data-binary", "@" + tree.directory + "/body2", "-o", tree.output(2), "-w", "%{http_code}", url,
            ]
        )
        #expect(overLimit.text == "413", "\(overLimit)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl's large POST sends Expect: 100-continue: the server answers 100 Continue, then echoes the body",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlExpectContinue(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--max-body", "\(3 << 20)"])
        try writeFile(tree.directory + "/body", randomBytes(2 << 20, seed: 11))
        let curl = runTool(
            "curl",
            curlOptions + [
                "-v", "--expect100-timeout", "8", "--data-binary", "@" + tree.directory + "/body",
                "-o", tree.output(0), "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/echo",
            ]
        )
        #expect(curl.text == "200", "\(curl)")
        #expect(curl.errorText.contains("> Expect: 100-continue"), "curl did not send Expect:\n\(curl)")
        #expect(curl.errorText.contains("< HTTP/1.1 100 Continue"), "no 100 Continue:\n\(curl)")
        #expect(readFile(tree.output(0)) == readFile(tree.directory + "/body"), "2 MiB body not echoed")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl: static files byte for byte (3 MiB included), Content-Type by extension, directory index",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlStaticFiles(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        // (path, file under the root, acceptable Content-Types)
        let cases: [(String, String, [String])] = [
            ("/hello.txt", "hello.txt", ["text/plain"]),
            ("/page.html", "page.html", ["text/html"]),
            ("/style.css", "style.css", ["text/css"]),
            ("/app.js", "app.js", ["text/javascript", "application/javascript"]),
            ("/data.json", "data.json", ["application/json"]),
            ("/image.png", "image.png", ["image/png"]),
            ("/photo.jpg", "photo.jpg", ["image/jpeg"]),
            ("/logo.svg", "logo.svg", ["image/svg+xml"]),
            ("/blob.xyz", "blob.xyz", ["application/octet-stream"]),
            ("/two%20words.txt", "two words.txt", ["text/plain"]),
            ("/sub/", "sub/index.html", ["text/html"]),
            ("/sub/index.html", "sub/index.html", ["text/html"]),
            ("/sub/../hello.txt", "hello.txt", ["text/plain"]),  // `..` that stays inside the root
            ("/empty.txt", "empty.txt", ["text/plain"]),
            ("/big.bin", "big.bin", ["application/octet-stream"]),
        ]
        var arguments = curlOptions + ["--path-as-is", "-w", "%{http_code} %{size_download} %{content_type}\\n"]
        for (index, (path, _, _)) in cases.enumerated() {
            arguments += ["-o", tree.output(index), "http://127.0.0.1:\(server.port)\(path)"]
        }
        let curl = runTool("curl", arguments)
        #expect(curl.status == 0, "\(curl)")
        let lines = curl.text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.split(separator: " ") }
        for (index, (path, file, types)) in cases.enumerated() {
            guard index < lines.count, lines[index].count >= 2 else {
                Issue.record("\(path): no result line in\n\(curl)")
                continue
            }
            let line = lines[index]
            let type = line.count > 2 ? String(line[2]).lowercased() : "(none)"
            #expect(line[0] == "200", "\(path): status \(line[0])")
            #expect(types.contains { type.hasPrefix($0) }, "\(path): Content-Type \(type), expected \(types)")
            let body = readFile(tree.output(index))
            #expect(body == tree.files[file], "\(path): \(body.count) bytes, expected \(tree.files[file]?.count ?? -1)")
        }
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "curl: 404 for absent files and directories without index.html; 403/404 for paths escaping the root",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlNotFoundAndForbidden(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let notFound: Set<String> = ["404"]
        let refused: Set<String> = ["403", "404"]
        let cases: [(String, Set<String>)] = [
            ("/missing.txt", notFound),
            ("/sub/missing.html", notFound),
            ("/empty/", notFound),  // a directory without index.html: no listing
            ("/empty", ["301"]),  // a directory without the slash: redirected to /empty/
            ("/escape.txt", refused),  // a symlink to a file outside the root
            ("/outlink/secret.txt", refused),  // through a symlink to a directory outside
            ("/../outside/secret.txt", refused),
            ("/%2e%2e/outside/secret.txt", refused),
            ("/%2E%2E/outside/secret.txt", refused),
            ("/sub/../../outside/secret.txt", refused),
            ("/sub/%2e%2e/%2e%2e/outside/secret.txt", refused),
        ]
        var arguments = curlOptions + ["--path-as-is", "-w", "%{http_code}\\n"]
        for (index, (path, _)) in cases.enumerated() {
            arguments += ["-o", tree.output(index), "http://127.0.0.1:\(server.port)\(path)"]
        }
        let curl = runTool("curl", arguments)
        #expect(curl.status == 0, "\(curl)")
        let codes = curl.text.split(separator: "\n").map(String.init)
        #expect(codes.count == cases.count, "\(curl)")
        for (index, (path, expected)) in cases.enumerated() where index < codes.count {
            #expect(
                expected.contains(codes[index]),
                "\(path): status \(codes[index]), expected one of \(expected.sorted())"
            )
            let body = readFile(tree.output(index))
            #expect(!body.containsSubsequence(tree.secret), "\(path): the secret outside the root was served")
        }
        #expect(server.stop(with: SIGTERM) == 0)

        // Without --root every file is absent; the routes still answer.
        let bare = try self.startServer(delivery)
        let base = "http://127.0.0.1:\(bare.port)"
        let curl2 = runTool(
            "curl",
            curlOptions + [
                "-w", "%{http_code}\\n", "-o", tree.output(0), base + "/hello.txt", "-o", tree.output(1), base + "/",
            ]
        )
        #expect(curl2.text == "404\n200\n", "\(curl2)")
        #expect(bare.stop(with: SIGTERM) == 0)
    }

    // MARK: Python's http.client

    @Test(
        "http.client: many requests on one kept-alive connection (GET, HEAD, POST, chunked POST, files, 404)",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func pythonKeepAlive(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let python = runPython(PythonScripts.prelude + PythonScripts.keepAlive, ["\(server.port)", tree.root])
        #expect(python.status == 0, "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "http.client: each malformed or refused request gets its exact status (400 405 413 414 431 501 505)",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func pythonErrors(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let python = runPython(PythonScripts.prelude + PythonScripts.errors, ["\(server.port)", tree.root])
        #expect(python.status == 0, "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "pipelining: 5 requests in one write get 5 responses in order; then 100; then in 7-byte pieces",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func pythonPipelining(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let python = runPython(PythonScripts.prelude + PythonScripts.pipelining, ["\(server.port)", tree.root])
        #expect(python.status == 0, "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "Expect: 100-continue gets 100 Continue before the body is sent; an oversized one gets 413 instead",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func pythonExpectContinue(_ delivery: String) throws {
        let server = try self.startServer(delivery)
        let python = runPython(PythonScripts.prelude + PythonScripts.expectContinue, ["\(server.port)"])
        #expect(python.status == 0, "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    // MARK: wrk

    @Test(
        "wrk: a 2-second run with 16 connections, no socket errors, only 2xx",
        .enabled(if: toolExists("wrk"), "wrk is not installed"),
        arguments: deliveries
    )
    func wrkSmoke(_ delivery: String) throws {
        let server = try self.startServer(delivery)
        let wrk = runTool("wrk", ["-t1", "-c16", "-d2s", "--timeout", "2s", "http://127.0.0.1:\(server.port)/"])
        #expect(wrk.status == 0, "\(wrk)")
        // "  12345 requests in 2.00s, 1.23MB read"
        let requests = wrk.text.split(separator: "\n")
            .first { $0.contains(" requests in ") }
            .flatMap { Int($0.split(separator: " ").first ?? "") }
        #expect((requests ?? 0) > 0, "\(wrk)")
        #expect(!wrk.text.contains("Socket errors"), "\(wrk)")
        #expect(!wrk.text.contains("Non-2xx"), "\(wrk)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    // MARK: Raw sockets: timeouts, limits, shutdown

    @Test(
        "a client that sends half a head and stalls gets 408 and a close after --header-timeout",
        arguments: deliveries
    )
    func headerTimeout(_ delivery: String) throws {
        let server = try self.startServer(delivery, ["--header-timeout", "1"])
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        let start = ContinuousClock.now
        #expect(sendAll(fd, Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)))
        let (bytes, closed) = receiveUntilClosed(fd, seconds: 5)
        let waited = ContinuousClock.now - start
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408"), "got \(text.debugDescription)")
        #expect(closed, "the connection stayed open")
        #expect(waited >= .milliseconds(900) && waited < .seconds(3), "answered after \(waited)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test("a client trickling its head a byte at a time is cut off by --header-timeout too", arguments: deliveries)
    func trickleTimeout(_ delivery: String) throws {
        let server = try self.startServer(delivery, ["--header-timeout", "1"])
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        let start = ContinuousClock.now
        #expect(sendAll(fd, Array("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)))
        // One byte every 200 ms until the server answers (at most 5 s).
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while ContinuousClock.now - start < .seconds(5) {
            if poll(&descriptor, 1, 200) != 0 { break }
            var byte = UInt8(ascii: "a")
            if send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) != 1 { break }
        }
        let (bytes, closed) = receiveUntilClosed(fd, seconds: 2)
        let waited = ContinuousClock.now - start
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408"), "got \(text.debugDescription) after \(waited)")
        #expect(closed, "the connection stayed open")
        #expect(waited < .seconds(3), "answered after \(waited)")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test("an idle kept-alive connection is closed after --idle-timeout, not before", arguments: deliveries)
    func idleTimeout(_ delivery: String) throws {
        let server = try self.startServer(delivery, ["--idle-timeout", "1"])
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        var pending = [UInt8]()
        let first = exchange(fd, &pending, helloRequest)
        #expect(first?.status == 200 && first?.body == Array("Hello, World!".utf8), "\(String(describing: first))")
        // Time itself is the subject: "not before the idle timeout" means nothing unless time
        // passes, and no event of the server marks it. 400 ms, well inside the 1 s timeout.
        usleep(400_000)
        let second = exchange(fd, &pending, helloRequest)
        #expect(second?.status == 200, "\(String(describing: second))")
        let start = ContinuousClock.now
        let (bytes, closed) = receiveUntilClosed(fd, seconds: 5)
        let waited = ContinuousClock.now - start
        #expect(closed, "the idle connection stayed open")
        #expect(
            bytes.isEmpty || String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408"),
            "\(bytes.count) bytes"
        )
        #expect(waited >= .milliseconds(800) && waited < .seconds(3), "closed after \(waited)")
        // A connection that never sends anything is closed too (both timeouts at 1 s).
        let silent = try self.startServer(delivery, ["--idle-timeout", "1", "--header-timeout", "1"])
        let quiet = try connectClient(port: silent.port)
        defer { close(quiet) }
        let quietStart = ContinuousClock.now
        let (quietBytes, quietClosed) = receiveUntilClosed(quiet, seconds: 5)
        let quietWaited = ContinuousClock.now - quietStart
        #expect(quietClosed, "a silent connection stayed open")
        #expect(quietBytes.isEmpty || String(decoding: quietBytes, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        #expect(quietWaited < .seconds(3), "closed after \(quietWaited)")
        #expect(server.stop(with: SIGTERM) == 0)
        #expect(silent.stop(with: SIGTERM) == 0)
    }

    @Test(
        "--max-connections: a connection over the cap waits in the backlog and is served once one closes",
        arguments: deliveries
    )
    func maxConnections(_ delivery: String) throws {
        let server = try self.startServer(delivery, rings: 1, ["--max-connections", "2"])
        let first = try connectClient(port: server.port)
        let second = try connectClient(port: server.port)
        defer { close(second) }
        var pending = [[UInt8]](repeating: [], count: 3)
        #expect(exchange(first, &pending[0], helloRequest)?.status == 200)
        #expect(exchange(second, &pending[1], helloRequest)?.status == 200)
        let third = try connectClient(port: server.port)  // completes in the kernel's backlog
        defer { close(third) }
        #expect(sendAll(third, helloRequest))
        var descriptor = pollfd(fd: third, events: Int16(POLLIN), revents: 0)
        let early = poll(&descriptor, 1, 1_000)
        #expect(early == 0, "the third connection was answered (or closed) while two were open")
        close(first)
        let start = ContinuousClock.now
        let response = readResponse(third, &pending[2])
        #expect(response?.status == 200, "the third connection was not served after one closed")
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "a client that pipelines requests behind a file, then half-closes, gets every response, then EOF",
        arguments: deliveries
    )
    func halfCloseAfterPipelining(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let fd = try connectClient(port: server.port)
        defer { close(fd) }
        // The requests after the file wait while it is streamed; the EOF arrives meanwhile.
        let requests = ["/big.bin", "/", "/hello.txt", "/"].map { "GET \($0) HTTP/1.1\r\nHost: x\r\n\r\n" }
        #expect(sendAll(fd, Array(requests.joined().utf8)))
        #expect(shutdown(fd, Int32(SHUT_WR)) == 0)
        var (pending, closed) = receiveUntilClosed(fd, seconds: 15)
        #expect(closed, "the connection stayed open after the client's EOF")
        var responses: [Response] = []
        while let response = parseResponse(&pending) { responses.append(response) }
        #expect(responses.map(\.status) == [200, 200, 200, 200], "\(responses)")
        #expect(responses.first?.body == tree.files["big.bin"])
        let hello = Array("Hello, World!".utf8)
        #expect(responses.dropFirst().map(\.body) == [hello, tree.files["hello.txt"] ?? [], hello])
        #expect(pending.isEmpty, "\(pending.count) bytes after the last response")
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "SIGINT: a response in flight finishes, idle connections close, new ones are refused, exit 0",
        arguments: deliveries
    )
    func gracefulShutdown(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, ["--root", tree.root])
        let idle = try connectClient(port: server.port)
        defer { close(idle) }
        var idlePending = [UInt8]()
        #expect(exchange(idle, &idlePending, helloRequest)?.status == 200)
        let downloading = try connectClient(port: server.port)
        defer { close(downloading) }
        #expect(sendAll(downloading, Array("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n".utf8)))
        let started = receiveExactly(downloading, 1)  // the response has started
        #expect(started == Array("H".utf8))
        // Read the rest on another thread while the server shuts down.
        let rest = Mutex<[UInt8]>([])
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let (bytes, _) = receiveUntilClosed(downloading, seconds: 15)
            rest.withLock { $0 = bytes }
            done.signal()
        }
        #expect(server.stop(with: SIGINT) == 0)
        #expect(done.wait(timeout: .now() + 20) == .success)
        var pending = started + rest.withLock { $0 }
        let response = parseResponse(&pending)
        #expect(response?.status == 200)
        let whole = response?.body == tree.files["big.bin"]  // not inside #expect: no diff of megabytes
        #expect(whole, "the download in flight was cut: \(pending.count) bytes")
        var byte: UInt8 = 0
        #expect(recv(idle, &byte, 1, 0) <= 0, "the idle connection stayed open")
        #expect(!canConnect(port: server.port), "the server still accepts after exiting")
    }

    @Test("--access-log prints a line per request after the first line")
    func accessLog() throws {
        let server = try ServerProcess(
            "http-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "1", "--access-log"],
            keepingOutput: true
        )
        let fd = try connectClient(port: server.port)
        var pending = [UInt8]()
        #expect(exchange(fd, &pending, helloRequest)?.status == 200)
        let missing = Array("GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        #expect(exchange(fd, &pending, missing)?.status == 404)
        close(fd)
        #expect(server.stop() == 0)
        let lines = String(decoding: server.output(), as: UTF8.self).split(separator: "\n")
        #expect(lines.first?.hasPrefix("http-server listening on 127.0.0.1:") == true, "\(lines)")
        #expect(lines.dropFirst().contains { $0.contains("GET /") && $0.contains("200") }, "\(lines)")
        #expect(lines.dropFirst().contains { $0.contains("/nothing-here") && $0.contains("404") }, "\(lines)")
    }

    @Test("--help explains every flag and exits 0")
    func help() throws {
        let help = runTool(builtProductsDirectory + "/http-server", ["--help"])
        #expect(help.status == 0, "\(help)")
        let flags = [
            "--host", "--port", "--rings", "--api", "--queue", "--root", "--max-body", "--header-timeout",
            "--idle-timeout", "--max-connections", "--access-log", "--tls-certificate", "--tls-key",
        ]
        for flag in flags {
            #expect(help.text.contains(flag), "--help does not mention \(flag):\n\(help)")
        }
    }
}

// MARK: - Helpers

/// Options for every curl run: quiet but with errors, no proxy, bounded.
let curlOptions = ["-sS", "--noproxy", "*", "--max-time", "15"]

private let helloRequest = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)

/// A temporary directory: `root/` (served with --root, with files of every content type, a
/// 3 MiB file, a directory with index.html and one without, symlinks leading outside) and
/// `outside/secret.txt`. Removed on deinit.
final class StaticTree {
    let directory: String
    /// The bytes of every regular file under the root, by relative path.
    let files: [String: [UInt8]]
    /// The content of outside/secret.txt, which no response may carry.
    let secret = Array("top secret: outside the root\n".utf8)

    var root: String { self.directory + "/root" }

    /// A path for curl's output number `index`.
    func output(_ index: Int) -> String {
        self.directory + "/out/\(index)"
    }

    init() throws {
        var template = Array("/tmp/http-server-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        self.directory = try #require(made)
        let files: [String: [UInt8]] = [
            "hello.txt": Array("Hello from a file.\n".utf8),
            "page.html": Array("<!doctype html><title>page</title>\n".utf8),
            "style.css": Array("body { color: black; }\n".utf8),
            "app.js": Array("console.log(\"hi\");\n".utf8),
            "data.json": Array("{\"answer\": 42}\n".utf8),
            "image.png": [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + randomBytes(200, seed: 1),
            "photo.jpg": [0xFF, 0xD8, 0xFF, 0xE0] + randomBytes(300, seed: 2),
            "logo.svg": Array("<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n".utf8),
            "blob.xyz": randomBytes(1_000, seed: 3),
            "two words.txt": Array("two words\n".utf8),
            "empty.txt": [],
            "big.bin": randomBytes(3 << 20, seed: 4),
            "sub/index.html": Array("<!doctype html><title>index</title>\n".utf8),
        ]
        self.files = files
        for directory in ["root", "root/sub", "root/empty", "outside", "out"] {
            try #require(mkdir(self.directory + "/" + directory, 0o755) == 0)
        }
        for (path, bytes) in files {
            try writeFile(self.root + "/" + path, bytes)
        }
        try writeFile(self.directory + "/outside/secret.txt", self.secret)
        try #require(symlink(self.directory + "/outside/secret.txt", self.root + "/escape.txt") == 0)
        try #require(symlink(self.directory + "/outside", self.root + "/outlink") == 0)
    }

    deinit {
        _ = runTool("rm", ["-rf", self.directory], seconds: 10)
    }
}

/// Writes `bytes` to a new file at `path`.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    try #require(fd >= 0, "open \(path): errno \(errno)")
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
        let result = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(result > 0, "write \(path): errno \(errno)")
        written += result
    }
}

/// The bytes of the file at `path`; empty when it cannot be read.
func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { return bytes }
        bytes += buffer[..<count]
    }
}

/// `count` deterministic pseudo-random bytes.
func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix64(seed: seed)
    var bytes = [UInt8]()
    bytes.reserveCapacity(count + 8)
    while bytes.count < count {
        withUnsafeBytes(of: generator.next()) { bytes += $0 }
    }
    return Array(bytes.prefix(count))
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= self.count else { return needle.isEmpty }
        return (0...(self.count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

/// Receives until the peer closes (EOF or reset) or `seconds` pass; returns what arrived and
/// whether the connection was closed.
func receiveUntilClosed(_ fd: CInt, seconds: Double) -> (bytes: [UInt8], closed: Bool) {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    var bytes = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    while ContinuousClock.now < deadline {
        let ready = poll(&descriptor, 1, 50)
        if ready < 0 && errno != EINTR { return (bytes, false) }
        guard ready > 0 else { continue }
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if count > 0 {
            bytes += buffer[..<count]
        } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
            return (bytes, true)
        }
    }
    return (bytes, false)
}

/// One parsed response: the status, the head's text and a Content-Length body.
struct Response: CustomStringConvertible {
    var status: Int
    var head: String
    var body: [UInt8]

    var description: String { "\(self.head.debugDescription) + \(self.body.count) body bytes" }
}

/// Takes one complete response (framed by Content-Length; none means no body) off the front of
/// `pending`; nil while it is incomplete.
func parseResponse(_ pending: inout [UInt8]) -> Response? {
    let end = Array("\r\n\r\n".utf8)
    guard pending.count >= 4,
        let headEnd = (0...(pending.count - 4)).first(where: { pending[$0..<($0 + 4)].elementsEqual(end) })
    else { return nil }
    let head = String(decoding: pending[..<headEnd], as: UTF8.self)
    let lines = head.split(separator: "\r\n")
    let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? -1
    let length =
        lines.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }
        .flatMap { Int($0.dropFirst("content-length:".count).trimmingSpaces()) } ?? 0
    let bodyStart = headEnd + 4
    guard pending.count >= bodyStart + length else { return nil }
    let response = Response(status: status, head: head, body: Array(pending[bodyStart..<(bodyStart + length)]))
    pending.removeFirst(bodyStart + length)
    return response
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

/// Reads one response from `fd` (10 s receive timeout), keeping what follows it in `pending`;
/// nil on EOF or a timeout first.
func readResponse(_ fd: CInt, _ pending: inout [UInt8]) -> Response? {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        if let response = parseResponse(&pending) { return response }
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { return nil }
        pending += buffer[..<count]
    }
}

/// Sends `request` and reads one response.
func exchange(_ fd: CInt, _ pending: inout [UInt8], _ request: [UInt8]) -> Response? {
    guard sendAll(fd, request) else { return nil }
    return readResponse(fd, &pending)
}

/// Whether a TCP connection to 127.0.0.1:`port` succeeds (without recording an issue).
private func canConnect(port: UInt16) -> Bool {
    guard case .success(let fd) = connectClient("127.0.0.1", port) else { return false }
    close(fd)
    return true
}

// MARK: - The Python clients

/// Scripts for `python3 -c`: argv[1] is the port, argv[2] the --root directory. Each prints
/// "FAIL: …" per failed check and exits 1 if any failed.
enum PythonScripts {
    static let prelude = #"""
        import email.utils, http.client, os, random, socket, sys, time
        PORT = int(sys.argv[1])
        ROOT = sys.argv[2] if len(sys.argv) > 2 else None
        failures = []

        def check(condition, message):
            if not condition:
                failures.append(message)
                print("FAIL:", message, flush=True)
            return condition

        def finish():
            print("%d failure(s)" % len(failures), flush=True)
            sys.exit(1 if failures else 0)

        class Shared:
            """One buffered reader for every response read in turn from one socket:
            http.client.HTTPResponse reads from sock.makefile() and closes it when done."""
            def __init__(self, sock):
                self.sock = sock
                self.fp = sock.makefile("rb")
            def makefile(self, *args, **kwargs):
                return self
            def close(self):
                pass
            def __getattr__(self, name):
                return getattr(self.fp, name)

        def connect(timeout=5):
            return socket.create_connection(("127.0.0.1", PORT), timeout=timeout)

        def read_response(shared, method="GET"):
            response = http.client.HTTPResponse(shared, method=method)
            response.begin()
            return response, response.read()

        def check_common(label, response):
            check(response.getheader("Server") == "RingIO", "%s: Server is %r" % (label, response.getheader("Server")))
            date = response.getheader("Date")
            try:
                parsed = date is not None and email.utils.parsedate_to_datetime(date) is not None
            except (TypeError, ValueError):
                parsed = False
            check(parsed, "%s: Date is %r" % (label, date))

        def closed_by_server(shared):
            """Whether the server closes the connection (EOF or reset) within the timeout."""
            try:
                return shared.fp.read(1) == b""
            except ConnectionResetError:
                return True
            except (socket.timeout, TimeoutError):
                return False

        def file_bytes(name):
            with open(os.path.join(ROOT, name), "rb") as f:
                return f.read()

        """#

    static let keepAlive = #"""
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
        first = []

        def exchange(label, method, path, body=None, status=200, expected=None, content_type=None, length=None):
            conn.request(method, path, body=body)
            response = conn.getresponse()
            data = response.read()
            if not first:
                first.append(conn.sock)
            check(conn.sock is not None and conn.sock is first[0],
                  "%s: not answered on the first connection (Connection: %r)" % (label, response.getheader("Connection")))
            check(response.status == status, "%s: status %d, expected %d" % (label, response.status, status))
            check_common(label, response)
            if expected is not None:
                check(data == expected, "%s: %d body bytes, expected %d (equal prefix: %s)"
                      % (label, len(data), len(expected), expected.startswith(data)))
            if content_type is not None:
                check((response.getheader("Content-Type") or "").startswith(content_type),
                      "%s: Content-Type %r" % (label, response.getheader("Content-Type")))
            if length is not None:
                check(response.getheader("Content-Length") == str(length),
                      "%s: Content-Length %r, expected %d" % (label, response.getheader("Content-Length"), length))
            print("ok:", label, response.status, flush=True)

        def chunks():
            yield b"abc"
            yield bytes(range(256)) * 40
            yield b"end"

        payload = random.Random(7).randbytes(100_000)
        big = file_bytes("big.bin")
        try:
            exchange("GET /", "GET", "/", expected=b"Hello, World!", content_type="text/plain", length=13)
            exchange("HEAD /", "HEAD", "/", expected=b"", content_type="text/plain", length=13)
            exchange("POST /echo with Content-Length", "POST", "/echo", body=payload, expected=payload, length=len(payload))
            exchange("POST /echo chunked", "POST", "/echo", body=chunks(), expected=b"".join(chunks()))
            exchange("POST /echo empty", "POST", "/echo", body=b"", expected=b"", length=0)
            exchange("GET /hello.txt", "GET", "/hello.txt", expected=file_bytes("hello.txt"), content_type="text/plain")
            exchange("GET /missing.txt", "GET", "/missing.txt", status=404)
            exchange("GET /big.bin", "GET", "/big.bin", expected=big, length=len(big))
            exchange("HEAD /big.bin", "HEAD", "/big.bin", expected=b"", length=len(big))
            exchange("GET / again", "GET", "/", expected=b"Hello, World!")
        except Exception as error:
            check(False, "the keep-alive conversation failed: %r" % error)
        conn.close()

        # The server closes after answering an HTTP/1.0 request without keep-alive, and after
        # one with Connection: close.
        for label, raw in [("HTTP/1.0", b"GET / HTTP/1.0\r\n\r\n"),
                           ("Connection: close", b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")]:
            sock = connect()
            shared = Shared(sock)
            try:
                sock.sendall(raw)
                response, body = read_response(shared)
                check(response.status == 200 and body == b"Hello, World!",
                      "%s: status %d, body %r" % (label, response.status, body[:40]))
                check_common(label, response)
                if label == "Connection: close":
                    check("close" in (response.getheader("Connection") or "").lower(),
                          "%s: the response's Connection is %r" % (label, response.getheader("Connection")))
                check(closed_by_server(shared), "%s: the server did not close the connection" % label)
                print("ok:", label, flush=True)
            except Exception as error:
                check(False, "%s: %r" % (label, error))
            finally:
                sock.close()
        finish()
        """#

    static let errors = #"""
        fillers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 1000) for i in range(20))
        # (label, request, status, methods the Allow header must list, whether the server must close)
        cases = [
            ("bare LF", b"GET / HTTP/1.1\nHost: x\n\n", 400, None, True),
            ("space before a colon", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, None, True),
            ("obs-fold", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400, None, True),
            ("no Host", b"GET / HTTP/1.1\r\n\r\n", 400, None, True),
            ("two Hosts", b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, None, True),
            ("no target", b"HELLO\r\nHost: x\r\n\r\n", 400, None, True),
            ("malformed version", b"GET / HTTP/1\r\nHost: x\r\n\r\n", 400, None, True),
            ("field without a colon", b"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, None, True),
            ("conflicting Content-Lengths",
             b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, None, True),
            ("Content-Length and Transfer-Encoding",
             b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
             400, None, True),
            ("bad chunk size", b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, None, True),
            ("unknown method", b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n", 501, None, False),
            ("unknown transfer coding",
             b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, None, True),
            ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, None, True),
            ("POST /", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 405, ["GET", "HEAD"], False),
            ("DELETE /echo", b"DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, ["POST"], False),
            ("PUT /hello.txt", b"PUT /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 405,
             ["GET", "HEAD"], False),
            ("target over 8 KiB", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, None, True),
            ("header section over 16 KiB", b"GET / HTTP/1.1\r\nHost: x\r\n" + fillers + b"\r\n", 431, None, True),
            ("Content-Length over --max-body", b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n",
             413, None, True),
            ("chunk over --max-body", b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200001\r\n",
             413, None, True),
        ]
        for label, raw, status, allow, must_close in cases:
            sock = connect()
            shared = Shared(sock)
            try:
                try:
                    sock.sendall(raw)
                except OSError as error:
                    print("note: %s: sending: %r" % (label, error), flush=True)
                try:
                    response, body = read_response(shared)
                except Exception as error:
                    check(False, "%s: no response (%r)" % (label, error))
                    continue
                check(response.status == status, "%s: status %d, expected %d" % (label, response.status, status))
                check_common(label, response)
                if allow is not None:
                    header = response.getheader("Allow") or ""
                    listed = {method.strip() for method in header.split(",")}
                    check(set(allow) <= listed, "%s: Allow is %r, expected %s" % (label, header, ", ".join(allow)))
                if must_close:
                    check(closed_by_server(shared), "%s: the connection stayed open after the %d" % (label, status))
                print("ok:", label, response.status, flush=True)
            finally:
                sock.close()
        finish()
        """#

    static let pipelining = #"""
        five = [
            (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET", 200, b"Hello, World!"),
            (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst", "POST", 200, b"first"),
            (b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", 200, b""),
            (b"GET /missing.txt HTTP/1.1\r\nHost: x\r\n\r\n", "GET", 404, None),
            (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nsec\r\n3\r\nond\r\n0\r\n\r\n",
             "POST", 200, b"second"),
        ]

        def read_in_order(label, shared, requests):
            for index, (raw, method, status, expected) in enumerate(requests):
                try:
                    response, body = read_response(shared, method)
                except Exception as error:
                    check(False, "%s: response %d of %d missing (%r)" % (label, index + 1, len(requests), error))
                    return False
                if not check(response.status == status and (expected is None or body == expected),
                             "%s: response %d is %d %r, expected %d %r"
                             % (label, index + 1, response.status, body[:40], status, expected)):
                    return False
                check_common("%s %d" % (label, index + 1), response)
            return True

        # Five in one write, then a hundred in one write, on the same connection.
        sock = connect()
        shared = Shared(sock)
        sock.sendall(b"".join(request[0] for request in five))
        if read_in_order("5 in one write", shared, five):
            print("ok: 5 in one write", flush=True)
        hundred = []
        for index in range(100):
            if index % 2:
                body = b"n%d" % index
                hundred.append((b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
                                "POST", 200, body))
            else:
                hundred.append((b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", "GET", 200, file_bytes("hello.txt")))
        sock.sendall(b"".join(request[0] for request in hundred))
        if read_in_order("100 in one write", shared, hundred):
            print("ok: 100 in one write", flush=True)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        read_in_order("then Connection: close", shared, [(None, "GET", 200, b"Hello, World!")])
        check(closed_by_server(shared), "the connection stayed open after Connection: close")
        sock.close()

        # The same five, dribbled in 7-byte pieces: requests and bodies split anywhere.
        sock = connect()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        shared = Shared(sock)
        data = b"".join(request[0] for request in five)
        for offset in range(0, len(data), 7):
            sock.sendall(data[offset:offset + 7])
            # No event tells that the server has read a piece (it answers only whole requests):
            # the pause makes each piece likely a read of its own.
            time.sleep(0.002)
        if read_in_order("5 in 7-byte pieces", shared, five):
            print("ok: 5 in 7-byte pieces", flush=True)
        sock.close()

        # A 405 with a body, then a GET, in one write: if the server keeps the connection open
        # (no Connection: close), it must have skipped the body and answer the GET.
        sock = connect()
        shared = Shared(sock)
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        response, body = read_response(shared, "POST")
        check(response.status == 405, "POST /: status %d, expected 405" % response.status)
        if "close" in (response.getheader("Connection") or "").lower():
            check(closed_by_server(shared), "405 said Connection: close but the connection stayed open")
            print("ok: 405 closed the connection", flush=True)
        elif read_in_order("GET after a 405", shared, [(None, "GET", 200, b"Hello, World!")]):
            print("ok: GET after a 405 on the same connection", flush=True)
        sock.close()
        finish()
        """#

    static let expectContinue = #"""
        def interim(shared, label):
            """Reads an interim (1xx) head; returns its status line."""
            line = shared.fp.readline()
            while True:
                field = shared.fp.readline()
                if field in (b"\r\n", b""):
                    break
            return line

        # Announced, small: 100 Continue first, then (after the body) 200 with the body echoed,
        # twice on one connection.
        sock = connect()
        shared = Shared(sock)
        for attempt in range(2):
            label = "Expect round %d" % (attempt + 1)
            try:
                sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                line = interim(shared, label)
                check(line.startswith(b"HTTP/1.1 100"), "%s: first line %r, expected HTTP/1.1 100 Continue" % (label, line))
                sock.sendall(b"hello")
                response, body = read_response(shared, "POST")
                check(response.status == 200 and body == b"hello", "%s: %d %r" % (label, response.status, body))
                print("ok:", label, flush=True)
            except Exception as error:
                check(False, "%s: %r (the server did not answer 100 Continue before the body?)" % (label, error))
                break
        sock.close()

        # Announced, too large: the final 413 instead of 100 Continue, and the connection closes.
        sock = connect()
        shared = Shared(sock)
        try:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\nExpect: 100-continue\r\n\r\n")
            response, body = read_response(shared, "POST")
            check(response.status == 413, "oversized Expect: status %d, expected 413" % response.status)
            check(closed_by_server(shared), "oversized Expect: the connection stayed open")
            print("ok: oversized Expect", flush=True)
        except Exception as error:
            check(False, "oversized Expect: %r" % error)
        sock.close()
        finish()
        """#
}
