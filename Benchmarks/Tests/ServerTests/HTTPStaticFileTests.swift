//===----------------------------------------------------------------------===//
// RingIO — server tests: http-server as a static file server — sizes, validators,
// conditional requests, ranges, redirects, error bodies — with curl and Python's http.client.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("http-server: static files", .serialized, .enabled(if: ringIsAvailable, ringUnavailableReason))
struct HTTPStaticFileTests {
    /// Every way of serving a connection, as in ``HTTPServerTests``.
    static let deliveries = HTTPServerTests.deliveries

    private func startServer(_ delivery: String, root: String) throws -> ServerProcess {
        let mode = delivery == "async" ? ["--api", "async"] : ["--queue", delivery]
        return try ServerProcess(
            "http-server",
            ["--host", "127.0.0.1", "--port", "0", "--rings", "1", "--root", root] + mode
        )
    }

    @Test(
        "curl: files of 0, 1, 16 KiB, 1 MiB + 1 and 64 MiB (sparse) bytes byte for byte, ranges of them from their offset",
        .enabled(if: toolExists("curl"), "curl is not installed"),
        arguments: deliveries
    )
    func curlSizesAndRanges(_ delivery: String) throws {
        let tree = try StaticTree()
        let files = try SizedFiles(root: tree.root)
        let server = try self.startServer(delivery, root: tree.root)
        let base = "http://127.0.0.1:\(server.port)"
        let format = "%{http_code}|%{size_download}|%header{etag}|%header{last-modified}|%header{content-range}\\n"
        // Whole files, then ranges (each after --next, which keeps the connection).
        var arguments = curlOptions + ["-w", format]
        var expected: [(label: String, status: String, bytes: ArraySlice<UInt8>, size: Int, contentRange: String)] = []
        for (name, bytes) in files.all {
            arguments += ["-o", tree.output(expected.count), "\(base)/\(name)"]
            expected.append((name, "200", bytes[...], bytes.count, ""))
        }
        let ranges: [(name: String, spec: String, first: Int, last: Int)] = [
            ("one.bin", "0-0", 0, 0),
            ("sixteen.bin", "16000-", 16_000, 16_383),
            ("sixteen.bin", "-100", 16_284, 16_383),
            ("mebi.bin", "524288-524299", 524_288, 524_299),
            ("mebi.bin", "1048570-2000000", 1_048_570, 1_048_576),  // the end clipped to the file's
            ("sparse.bin", "33554430-33558000", 33_554_430, 33_558_000),  // across a marker
            ("sparse.bin", "-5", SizedFiles.sparseSize - 5, SizedFiles.sparseSize - 1),
        ]
        for (name, spec, first, last) in ranges {
            let bytes = try #require(files.all.first { $0.name == name }?.bytes)
            arguments += [
                "--next", "-sS", "--noproxy", "*", "--max-time", "15", "-w", format, "-r", spec,
                "-o", tree.output(expected.count), "\(base)/\(name)",
            ]
            expected.append(
                ("\(name) \(spec)", "206", bytes[first...last], bytes.count, "bytes \(first)-\(last)/\(bytes.count)")
            )
        }
        let curl = runTool("curl", arguments, seconds: 60)
        #expect(curl.status == 0, "\(curl)")
        let lines = curl.text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, (label, status, bytes, fileSize, contentRange)) in expected.enumerated() {
            guard index < lines.count else {
                Issue.record("\(label): no result line in\n\(curl)")
                continue
            }
            let fields = lines[index].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5 else {
                Issue.record("\(label): result line \(lines[index])")
                continue
            }
            #expect(fields[0] == status, "\(label): status \(fields[0])")
            #expect(fields[1] == String(bytes.count), "\(label): \(fields[1]) bytes, expected \(bytes.count)")
            // "<inode>-<size>-<mtime>" in hexadecimal, quoted: strong.
            let size = String(fileSize, radix: 16)
            let tag = fields[2].split(separator: "-").map(String.init)
            #expect(
                tag.count == 3 && tag[0].hasPrefix("\"") && tag[1] == size && tag[2].hasSuffix("\""),
                "\(label): ETag \(fields[2])"
            )
            #expect(fields[3].hasSuffix(" GMT"), "\(label): Last-Modified \(fields[3])")
            #expect(fields[4] == contentRange, "\(label): Content-Range \(fields[4])")
            #expect(sameBytes(readFile(tree.output(index)), bytes), "\(label): the body differs")
        }
        // curl's own ETag handling: --etag-save, then --etag-compare sends If-None-Match.
        let etagFile = tree.directory + "/etag"
        let save = runTool("curl", curlOptions + ["--etag-save", etagFile, "-o", "/dev/null", "\(base)/sixteen.bin"])
        #expect(save.status == 0, "\(save)")
        let compare = runTool(
            "curl",
            curlOptions + [
                "--etag-compare", etagFile, "-o", tree.output(99), "-w", "%{http_code}", "\(base)/sixteen.bin",
            ]
        )
        #expect(compare.text == "304", "\(compare)")
        #expect(readFile(tree.output(99)).isEmpty)
        #expect(server.stop(with: SIGTERM) == 0)
    }

    @Test(
        "http.client: validators, 304s, ranges, If-Range, redirects and error bodies, GET and HEAD, on one connection",
        .enabled(if: toolExists("python3"), "python3 is not installed"),
        arguments: deliveries
    )
    func pythonStaticServer(_ delivery: String) throws {
        let tree = try StaticTree()
        let server = try self.startServer(delivery, root: tree.root)
        let python = runPython(PythonScripts.prelude + StaticScripts.conversation, ["\(server.port)", tree.root])
        #expect(python.status == 0, "\(python)")
        #expect(server.stop(with: SIGTERM) == 0)
    }
}

extension HTTPStaticFileTests {
    @Test(
        "a file truncated while it is sent: the connection closes short of Content-Length; the server goes on",
        arguments: deliveries
    )
    func truncatedWhileSent(_ delivery: String) throws {
        let tree = try StaticTree()
        let path = tree.root + "/big.bin"
        let size = 32 << 20
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(file >= 0, "open: errno \(errno)")
        try #require(ftruncate(file, off_t(size)) == 0, "ftruncate: errno \(errno)")
        close(file)
        let server = try self.startServer(delivery, root: tree.root)
        let request = Array("GET /big.bin HTTP/1.1\r\nHost: test\r\n\r\n".utf8)
        let client = try connectClient(port: server.port)
        defer { close(client) }
        #expect(sendAll(client, request))
        // The head and the first MiB; the server is held back by the socket buffers meanwhile.
        let first = receiveExactly(client, 1 << 20)
        #expect(first.count == 1 << 20)
        #expect(truncate(path, off_t(2 << 20)) == 0, "truncate: errno \(errno)")
        let (rest, closed) = receiveUntilClosed(client, seconds: 15)
        #expect(closed, "the connection stayed open after the file was truncated")
        let total = first.count + rest.count
        #expect(total < size, "\(total) bytes arrived of a \(size)-byte file truncated to 2 MiB")
        // The server goes on: a new connection gets the file as it is now, whole.
        let again = try connectClient(port: server.port)
        defer { close(again) }
        var pending: [UInt8] = []
        let response = exchange(again, &pending, request)
        #expect(response?.status == 200 && response?.body.count == 2 << 20, "\(String(describing: response))")
        #expect(server.stop(with: SIGTERM) == 0)
    }
}

extension HTTPStaticFileTests {
    @Test(
        "files kept open between requests are never stale: changed in place, replaced, swapped for a symlink out, removed",
        arguments: deliveries
    )
    func keptFilesRevalidated(_ delivery: String) throws {
        let tree = try StaticTree()
        let path = tree.root + "/kept.txt"
        try writeFile(path, Array("first version".utf8))
        let server = try self.startServer(delivery, root: tree.root)
        let client = try connectClient(port: server.port)
        defer { close(client) }
        var pending: [UInt8] = []
        func get(_ target: String) -> Response? {
            exchange(client, &pending, Array("GET \(target) HTTP/1.1\r\nHost: test\r\n\r\n".utf8))
        }
        #expect(get("/kept.txt")?.body == Array("first version".utf8))
        // Changed in place, with its size and times as they were: the kept mapping shows the
        // file as it is now.
        var info = stat()
        try #require(stat(path, &info) == 0)
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        #expect(pwrite(fd, "FIRST", 5, 0) == 5)
        var times = [info.st_atim, info.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        #expect(get("/kept.txt")?.body == Array("FIRST version".utf8))
        // Shrunk, then grown, in place (the same inode, another size): opened and mapped
        // afresh, never sent from a mapping of the old size.
        try #require(truncate(path, 5) == 0)
        #expect(get("/kept.txt")?.body == Array("FIRST".utf8))
        let appending = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        try #require(appending >= 0)
        #expect(write(appending, " and more", 9) == 9)
        close(appending)
        #expect(get("/kept.txt")?.body == Array("FIRST and more".utf8))
        // Replaced: another file renamed over it.
        try writeFile(tree.root + "/kept.new", Array("second, longer version".utf8))
        try #require(rename(tree.root + "/kept.new", path) == 0)
        #expect(get("/kept.txt")?.body == Array("second, longer version".utf8))
        // Swapped for a symlink that leads out of the root.
        try #require(unlink(path) == 0)
        try #require(symlink(tree.directory + "/outside/secret.txt", path) == 0)
        let escaped = get("/kept.txt")
        #expect(escaped?.status == 403, "\(String(describing: escaped))")
        #expect(escaped.map { !$0.body.containsSubsequence(tree.secret) } ?? false)
        // Removed.
        try #require(unlink(path) == 0)
        #expect(get("/kept.txt")?.status == 404)
        #expect(server.stop(with: SIGTERM) == 0)
    }
}

/// Files of the sizes that matter under the root: empty, one byte, 16 KiB, 1 MiB + 1 (random
/// bytes) and a 64 MiB sparse file (ftruncate), zeros but for a few markers.
private struct SizedFiles {
    static let sparseSize = 64 << 20

    /// (name, bytes), in request order.
    let all: [(name: String, bytes: [UInt8])]

    init(root: String) throws {
        var all: [(name: String, bytes: [UInt8])] = [
            ("zero.bin", []),
            ("one.bin", [0x5A]),
            ("sixteen.bin", randomBytes(16 << 10, seed: 21)),
            ("mebi.bin", randomBytes((1 << 20) + 1, seed: 22)),
        ]
        for (name, bytes) in all {
            try writeFile(root + "/" + name, bytes)
        }
        // Sparse: holes but for a marker at the start, one around 32 MiB and one at the end.
        var sparse = [UInt8](repeating: 0, count: Self.sparseSize)
        let fd = open(root + "/sparse.bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0, "open sparse.bin: errno \(errno)")
        defer { close(fd) }
        try #require(ftruncate(fd, off_t(Self.sparseSize)) == 0, "ftruncate: errno \(errno)")
        for offset in [0, (32 << 20) - 3, Self.sparseSize - 7] {
            let marker = Array("marker@\(offset)".utf8.prefix(Self.sparseSize - offset))
            let written = marker.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            try #require(written == marker.count, "pwrite: errno \(errno)")
            sparse.replaceSubrange(offset..<(offset + marker.count), with: marker)
        }
        all.append(("sparse.bin", sparse))
        self.all = all
    }
}

/// Whether `a` and `b` hold the same bytes (one memcmp: 64 MiB compared element by element
/// would be slow in a debug build).
private func sameBytes(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { a in
        b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
    }
}

/// The Python client's script, after ``PythonScripts/prelude``: argv[1] is the port, argv[2]
/// the root of a ``StaticTree``.
private enum StaticScripts {
    static let conversation = #"""
        import re
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        opened = []

        def request(label, method, path, headers=None, body=None, status=200):
            """One exchange on the kept-alive connection; returns (response, body)."""
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            data = response.read()
            if not opened:
                opened.append(conn.sock)
            check(conn.sock is not None and conn.sock is opened[0], "%s: not answered on the first connection" % label)
            check(response.status == status, "%s: status %d, expected %d (%r)" % (label, response.status, status, data[:100]))
            check_common(label, response)
            return response, data

        def both(label, path, headers=None, status=200):
            """GET, then HEAD, which must get the same head and no body; returns GET's (response, body)."""
            got, data = request("GET " + label, "GET", path, headers, status=status)
            head, nothing = request("HEAD " + label, "HEAD", path, headers, status=status)
            check(nothing == b"", "HEAD %s: %d body bytes" % (label, len(nothing)))
            for name in ["Content-Length", "Content-Type", "Content-Range", "ETag", "Last-Modified", "Location",
                         "Accept-Ranges"]:
                check(got.getheader(name) == head.getheader(name), "HEAD %s: %s is %r, GET's %r"
                      % (label, name, head.getheader(name), got.getheader(name)))
            return got, data

        def write(name, data, ns):
            path = os.path.join(ROOT, name)
            with open(path, "r+b" if os.path.exists(path) else "wb") as f:
                f.truncate(0)
                f.write(data)
            os.utime(path, ns=(ns, ns))  # utimensat

        try:
            # ---- Validators, and a file rewritten between requests.
            base = 1_700_000_000_123_456_789  # Tue, 14 Nov 2023 22:13:20.123456789 GMT
            write("v.txt", b"first version\n", base)
            got, data = both("v.txt", "/v.txt")
            etag, modified = got.getheader("ETag"), got.getheader("Last-Modified")
            check(data == b"first version\n", "v.txt: %r" % data)
            check(re.fullmatch(r'"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"', etag or "") is not None, "ETag %r" % etag)
            check(modified == "Tue, 14 Nov 2023 22:13:20 GMT", "Last-Modified %r" % modified)
            check(got.getheader("Accept-Ranges") == "bytes", "Accept-Ranges %r" % got.getheader("Accept-Ranges"))
            check((got.getheader("Content-Type") or "").startswith("text/plain"), "v.txt: Content-Type")

            older = "Tue, 14 Nov 2023 22:13:19 GMT"
            for label, headers, status in [
                ("If-None-Match: the tag", {"If-None-Match": etag}, 304),
                ("If-None-Match: another tag", {"If-None-Match": '"nope"'}, 200),
                ("If-None-Match: *", {"If-None-Match": "*"}, 304),
                ("If-None-Match: a list with the weak tag", {"If-None-Match": '"a", W/%s ,"b"' % etag}, 304),
                ("If-None-Match: a list without", {"If-None-Match": '"a", W/"b", "c,d"'}, 200),
                ("If-None-Match: the tag, weak", {"If-None-Match": "W/" + etag}, 304),
                ("If-Modified-Since: equal", {"If-Modified-Since": modified}, 304),
                ("If-Modified-Since: later", {"If-Modified-Since": "Wed, 15 Nov 2023 00:00:00 GMT"}, 304),
                ("If-Modified-Since: a second older", {"If-Modified-Since": older}, 200),
                ("If-Modified-Since: equal, RFC 850", {"If-Modified-Since": "Tuesday, 14-Nov-23 22:13:20 GMT"}, 304),
                ("If-Modified-Since: equal, asctime", {"If-Modified-Since": "Tue Nov 14 22:13:20 2023"}, 304),
                ("If-Modified-Since: garbage", {"If-Modified-Since": "yesterday"}, 200),
                ("If-None-Match (no match) overrides If-Modified-Since",
                 {"If-None-Match": '"nope"', "If-Modified-Since": modified}, 200),
                ("If-None-Match (match) overrides If-Modified-Since",
                 {"If-None-Match": etag, "If-Modified-Since": older}, 304),
            ]:
                got, data = both(label, "/v.txt", headers, status)
                if status == 304:
                    check(data == b"", "%s: a 304 with a body" % label)
                    check(got.getheader("ETag") == etag and got.getheader("Last-Modified") == modified,
                          "%s: 304 without the validators" % label)
                    check(got.getheader("Content-Length") is None, "%s: 304 with a Content-Length" % label)
                else:
                    check(data == b"first version\n", "%s: body %r" % (label, data))

            # The same size and second, another nanosecond: a new tag, the same Last-Modified.
            write("v.txt", b"FIRST VERSION\n", base + 1)
            got, data = both("v.txt rewritten", "/v.txt", {"If-None-Match": etag})
            etag2 = got.getheader("ETag")
            check(data == b"FIRST VERSION\n", "rewritten: %r" % data)
            check(etag2 != etag, "the ETag did not change when the mtime did by 1 ns")
            check(got.getheader("Last-Modified") == modified, "Last-Modified %r" % got.getheader("Last-Modified"))
            # New bytes and an mtime two seconds later: a new tag and a new Last-Modified.
            write("v.txt", b"second version, longer\n", base + 2_000_000_000)
            got, data = both("v.txt rewritten again", "/v.txt", {"If-Modified-Since": modified})
            check(data == b"second version, longer\n", "rewritten again: %r" % data)
            check(got.getheader("ETag") not in (etag, etag2), "the ETag did not change")
            check(got.getheader("Last-Modified") == "Tue, 14 Nov 2023 22:13:22 GMT",
                  "Last-Modified %r" % got.getheader("Last-Modified"))
            print("ok: validators", flush=True)

            # ---- Ranges.
            content = random.Random(5).randbytes(10_000)
            write("r.bin", content, base)
            etag = request("GET r.bin", "GET", "/r.bin")[0].getheader("ETag")
            size = len(content)
            for spec, first, last in [
                ("bytes=0-0", 0, 0), ("bytes=10-19", 10, 19), ("bytes=9990-", 9990, 9999), ("bytes=0-", 0, 9999),
                ("bytes=-100", 9900, 9999), ("bytes=-20000", 0, 9999), ("bytes=9000-20000", 9000, 9999),
                ("bytes=5-5", 5, 5), ("Bytes=1-2", 1, 2), ("bytes=9999-99999999999999999999", 9999, 9999),
            ]:
                got, data = both("Range: " + spec, "/r.bin", {"Range": spec}, 206)
                check(data == content[first:last + 1], "%s: %d bytes, expected %d" % (spec, len(data), last + 1 - first))
                check(got.getheader("Content-Range") == "bytes %d-%d/%d" % (first, last, size),
                      "%s: Content-Range %r" % (spec, got.getheader("Content-Range")))
                check(got.getheader("Content-Length") == str(last + 1 - first), "%s: Content-Length" % spec)
            for spec in ["bytes=10000-", "bytes=20000-30000", "bytes=-0", "bytes=99999999999999999999-"]:
                got, data = both("Range: " + spec, "/r.bin", {"Range": spec}, 416)
                check(got.getheader("Content-Range") == "bytes */%d" % size,
                      "%s: Content-Range %r" % (spec, got.getheader("Content-Range")))
                check(data.startswith(b"416 Range Not Satisfiable") and len(data) < 300, "%s: body %r" % (spec, data))
            for spec in ["bytes=5-1", "bytes=abc", "bytes=", "bytes=--5", "bytes=1-2-3", "bytes=0x1-2", "items=0-1",
                         "0-1", "bytes=0-1,5-6", "bytes=0-1, 5-6", "bytes=-1,-2"]:
                got, data = both("Range: " + spec, "/r.bin", {"Range": spec}, 200)
                check(data == content, "%s: %d bytes, expected the whole file" % (spec, len(data)))
                check(got.getheader("Content-Range") is None, "%s: a Content-Range on a 200" % spec)
            for label, condition, status in [
                ("the tag", etag, 206), ("another tag", '"nope"', 200), ("the tag, weak", "W/" + etag, 200),
                ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT", 206), ("another date", older, 200),
                ("garbage", "whenever", 200),
            ]:
                got, data = both("If-Range: " + label, "/r.bin", {"Range": "bytes=100-199", "If-Range": condition},
                                 status)
                check(data == (content[100:200] if status == 206 else content), "If-Range %s: %d bytes" % (label, len(data)))
            # An empty file: no byte to name.
            write("e.bin", b"", base)
            both("Range on an empty file", "/e.bin", {"Range": "bytes=0-"}, 416)
            got, data = both("suffix Range on an empty file", "/e.bin", {"Range": "bytes=-5"}, 200)
            check(data == b"" and got.getheader("Content-Length") == "0", "empty file: %r" % data)
            # A range in the middle of a 3 MiB file.
            big = file_bytes("big.bin")
            got, data = both("Range in big.bin", "/big.bin", {"Range": "bytes=1000000-2000000"}, 206)
            check(data == big[1000000:2000001], "big.bin range: %d bytes" % len(data))
            print("ok: ranges", flush=True)

            # ---- Content-Type by extension, case-insensitively.
            for name, media in [("a.mjs", "text/javascript"), ("a.wasm", "application/wasm"), ("a.WOFF2", "font/woff2"),
                                ("a.webp", "image/webp"), ("a.ico", "image/x-icon"), ("a.mp4", "video/mp4"),
                                ("a.xml", "application/xml"), ("a.Html", "text/html"), ("a.tar.gz", "application/gzip"),
                                (".hidden", "application/octet-stream"), ("noext", "application/octet-stream"),
                                ("a.unknown", "application/octet-stream")]:
                write(name, b"x", base)
                got, data = request("GET " + name, "GET", "/" + name)
                check((got.getheader("Content-Type") or "").startswith(media),
                      "%s: Content-Type %r, expected %s" % (name, got.getheader("Content-Type"), media))
            print("ok: content types", flush=True)

            # ---- Redirects, errors: a short text/plain body saying why, and HEAD alike.
            secret = b"top secret"
            for label, path, status, location in [
                ("a directory without the slash", "/sub", 301, "/sub/"),
                ("a directory without the slash, a query", "/sub?x=1&y", 301, "/sub/?x=1&y"),
                ("a directory without the slash, two leading slashes", "//sub", 301, "/sub/"),
                ("a directory without index.html, without the slash", "/empty", 301, "/empty/"),
                ("a missing file", "/missing.txt", 404, None),
                ("a directory without index.html", "/empty/", 404, None),
                ("a symlink out of the root", "/escape.txt", 403, None),
                ("through a symlink to a directory outside", "/outlink/secret.txt", 403, None),
                ("a symlink to a directory outside, without the slash", "/outlink", 403, None),
                ("a symlink to a directory outside, with the slash", "/outlink/", 403, None),
                ("..", "/../outside/secret.txt", 403, None),
                ("encoded ..", "/%2e%2e/outside/secret.txt", 403, None),
                ("encoded .. in a subdirectory", "/sub/%2e%2e/%2E%2E/outside/secret.txt", 403, None),
            ]:
                got, data = both(label, path, None, status)
                check((got.getheader("Content-Type") or "").startswith("text/plain"), "%s: Content-Type" % label)
                check(data.startswith(b"%d " % status) and data.endswith(b"\n") and len(data) < 300,
                      "%s: body %r" % (label, data))
                check(got.getheader("Content-Length") == str(len(data)), "%s: Content-Length" % label)
                check(secret not in data, "%s: the secret was served" % label)
                check(got.getheader("Location") == location, "%s: Location %r" % (label, got.getheader("Location")))
                if status == 404:
                    check(path.encode() in data, "%s: the body does not name the path: %r" % (label, data))
            got, data = both("the directory's index", "/sub/", None, 200)
            check(data == file_bytes("sub/index.html"), "/sub/: %r" % data)
            write("index.html", b"<p>the root's index</p>", base)
            got, data = both("the root's index", "/sub/..", None, 200)
            check(data == b"<p>the root's index</p>", "/sub/..: %r" % data)
            for label, method, status in [("PUT", "PUT", 405), ("an unknown method", "BREW", 501)]:
                got, data = request(label, method, "/hello.txt", body=b"abc", status=status)
                check(data.startswith(b"%d " % status) and got.getheader("Content-Length") == str(len(data)),
                      "%s: body %r" % (label, data))
            got, data = both("the hello", "/", None, 200)
            check(data == b"Hello, World!", "/: %r" % data)
            print("ok: redirects and errors", flush=True)
        except Exception as error:
            check(False, "the conversation failed: %r" % error)
        conn.close()

        # A request that cannot be parsed: 400 with a body, then the connection closes.
        sock = connect()
        shared = Shared(sock)
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")  # no Host
        response, data = read_response(shared)
        check(response.status == 400 and data.startswith(b"400 Bad Request: ")
              and response.getheader("Content-Length") == str(len(data)), "no Host: %d %r" % (response.status, data))
        check(closed_by_server(shared), "no Host: the connection stayed open")
        sock.close()
        finish()
        """#
}
