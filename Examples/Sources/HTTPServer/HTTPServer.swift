//===----------------------------------------------------------------------===//
// RingIO — example: a small HTTP/1.1 server on RingHTTP's parser.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// http-server: answers `GET /` with "Hello, World!", and serves the files under ROOT, if given.
//
//     swift run --package-path Examples http-server [PORT] [ROOT]       (default 8080, no ROOT)
//     curl -i http://127.0.0.1:8080/
//
// What it teaches:
// - A connection as a loop: read what arrived, hand it to an `HTTPRequestParser`, answer every
//   request it completes, in order. Keep-alive (one connection, request after request) and
//   pipelining (requests sent before the answers arrive) come out of that loop by themselves.
// - `HTTPResponseWriter`: a response's head (status line, `Date`, `Content-Length`,
//   `Connection`) and body as one `ByteRope` to write; `HEAD` gets the head alone.
// - A malformed request is answered with the status the parser's error names, then closed.
// - A file sent with `channel.write(contentsOf:offset:length:)`: from the page cache to the
//   socket, its bytes never copied through the server's memory.
// - `HTTPPath.normalized`: a request path made safe to append to ROOT (no `..` above it, no
//   encoded slash, no NUL). Symbolic links inside ROOT are still followed: serve a directory
//   you trust.
// - An idle timeout (`reads(idleTimeout:)`), and a graceful stop on Ctrl-C, as in echo-server.

import RingHTTP
import RingIO

#if canImport(Glibc)
import Glibc
#endif

@main
struct HTTPServer {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let port = arguments.first.flatMap { UInt16($0) } ?? 8080
        let root = arguments.dropFirst().first.map { FilePath($0) }
        let group = try RingLoopGroup()
        var options = IOListener.Options()
        options.reusePort = true
        let listener = try IOListener(host: "127.0.0.1", port: port, options: options, group: group)

        let interrupt = IOSource.makeSignalSource(signal: SIGINT, queue: group.next())
        interrupt.setRegistrationHandler {  // from now on, SIGINT is ours
            print("http-server: listening on \(listener.localAddresses[0])")
            fflush(nil)  // at once, also into a pipe
        }
        interrupt.setEventHandler {
            Task { await listener.shutdown(gracePeriod: .seconds(5)) }
        }
        interrupt.resume()

        await listener.serve { connection in
            try await serve(connection, root: root)
        }
        interrupt.cancel()
        await group.shutdown()
    }

    static let writer = HTTPResponseWriter(serverName: "RingIO example")

    /// One connection: its requests, answered in order, until the client closes, a request
    /// asks to close, a request is malformed, or nothing arrives for 30 seconds.
    static func serve(_ connection: IOConnection, root: FilePath?) async throws {
        let channel = connection.channel
        var parser = HTTPRequestParser()
        for try await data in channel.reads(idleTimeout: .seconds(30)) {
            parser.append(data)  // the received ropes, not a copy
            do {
                while let request = try parser.next() {
                    try await channel.send(respond(to: request, root: root))
                    if !request.head.keepAlive { return }  // `Connection: close`, or HTTP/1.0
                }
                if let head = try parser.nextHead(), head.expectsContinue {
                    try await channel.write(HTTPResponseWriter.continueResponse)  // send the body
                }
            } catch let error as HTTPParseError {
                let response = HTTPResponse(status: error.status, closeConnection: true)
                try await channel.write(writer.serialize(response))
                return
            }
        }
    }

    /// The bytes that answer `request`: a response, or a file's head followed by its bytes.
    static func respond(to request: HTTPRequest, root: FilePath?) -> Answer {
        let head = request.head
        guard head.method == .get || head.method == .head else {
            let response = HTTPResponse(status: .methodNotAllowed, headers: ["Allow": "GET, HEAD"])
            return .bytes(writer.serialize(response, for: head))
        }
        if head.path == "/" {
            let body = ByteRope(copying: "Hello, World!".utf8)
            return .bytes(
                writer.serialize(HTTPResponse(headers: ["Content-Type": "text/plain"], body: body), for: head)
            )
        }
        guard let root, let path = HTTPPath.normalized(head.path), let file = openRegularFile(root, path) else {
            return .bytes(writer.serialize(HTTPResponse(status: .notFound), for: head))
        }
        // The head alone, announcing the file's length (set here, the writer adds none).
        let response = HTTPResponse(headers: ["Content-Type": contentType(path), "Content-Length": "\(file.size)"])
        return .file(
            head: writer.serializeHead(response, for: head),
            file.descriptor,
            file.size,
            withBody: head.method == .get
        )
    }

    /// Opens ROOT + `path` for reading, when it is a regular file: its descriptor and size.
    static func openRegularFile(_ root: FilePath, _ path: String) -> (descriptor: FileDescriptor, size: Int)? {
        guard !path.hasSuffix("/"),
            let descriptor = try? FileDescriptor.open(root.appending(String(path.dropFirst())), .readOnly)
        else { return nil }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            try? descriptor.close()
            return nil
        }
        return (descriptor, Int(status.st_size))
    }

    static func contentType(_ path: String) -> String {
        switch path.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "txt": "text/plain; charset=utf-8"
        case "css": "text/css"
        case "js": "text/javascript"
        case "json": "application/json"
        case "png": "image/png"
        default: "application/octet-stream"
        }
    }
}

/// What `HTTPServer.respond` produced.
enum Answer {
    /// A whole response.
    case bytes(ByteRope)
    /// A file's response: its head, then (when `withBody`, not for `HEAD`) its bytes.
    case file(head: ByteRope, FileDescriptor, Int, withBody: Bool)
}

extension IOChannel {
    /// Writes `answer`; a file is closed once sent.
    func send(_ answer: Answer) async throws(Errno) {
        switch answer {
        case .bytes(let bytes):
            try await write(bytes)
        case .file(let head, let descriptor, let size, let withBody):
            defer { try? descriptor.close() }
            try await write(head)
            if withBody && size > 0 {
                try await write(contentsOf: descriptor.rawValue, offset: 0, length: size)
            }
        }
    }
}
