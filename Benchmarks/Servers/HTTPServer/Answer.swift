//===----------------------------------------------------------------------===//
// RingIO — benchmark server: what the server answers, the same for handlers and for async/await.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingHTTP
import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The answer to one request: the response's bytes — for a small file, its head and the
/// file's bytes as a subrange of the file's mapping — and for a large range of a file, the
/// range to splice after them.
struct Answer {
    /// A range of a file whose bytes follow ``Answer/bytes`` (its head) on the socket, spliced
    /// from the page cache with `IOChannel.write(contentsOf:)`.
    struct Splice: Sendable {
        /// The file, open; held until the splice is done.
        let file: OpenFiles.File
        /// Where the bytes to send start in the file.
        let offset: Int
        /// How many bytes to send from `offset`: what the head's `Content-Length` announced.
        let length: Int

        /// From this length on, a range is spliced; a shorter one of a mapped file is written
        /// from the mapping (README, "Files to sockets": splice's hop to an io_uring worker
        /// outweighs the copy for small ranges).
        static let threshold = 128 << 10
    }

    /// The serialized response (for a spliced range: its head only).
    var bytes: ByteRope
    var splice: Splice?
}

extension Server {
    private static let hello = ByteRope(copying: "Hello, World!".utf8)
    private static let textPlain: HTTPHeaders = ["Content-Type": "text/plain"]
    private static let octetStream: HTTPHeaders = ["Content-Type": "application/octet-stream"]
    private static let allowGetHead: HTTPHeaders = ["Allow": "GET, HEAD"]
    private static let allowPost: HTTPHeaders = ["Allow": "POST"]

    /// Routes `request`: `GET /` is the hello, `POST /echo` answers the body, other `GET` and
    /// `HEAD` requests serve files under `--root`.
    func answer(to request: HTTPRequest, keepAlive: Bool) -> Answer {
        let path = Self.path(of: request.head)
        switch (request.head.method, path) {
        case (.get, "/"), (.head, "/"):
            return self.answer(.ok, body: Self.hello, headers: Self.textPlain, to: request, path, keepAlive)
        case (.post, "/echo"):
            return self.answer(.ok, body: request.body, headers: Self.octetStream, to: request, path, keepAlive)
        case (.other, _):
            return self.answer(
                501,
                saying: "the method \(request.head.method) is not implemented",
                to: request,
                path,
                keepAlive
            )
        case (_, "/"):
            return self.answer(
                405,
                saying: "/ answers GET and HEAD",
                headers: Self.allowGetHead,
                to: request,
                path,
                keepAlive
            )
        case (_, "/echo"):
            return self.answer(405, saying: "/echo answers POST", headers: Self.allowPost, to: request, path, keepAlive)
        case (.get, _), (.head, _):
            return self.answerFile(request, path: path, keepAlive: keepAlive)
        default:
            return self.answer(
                405,
                saying: "files are read with GET and HEAD",
                headers: Self.allowGetHead,
                to: request,
                path,
                keepAlive
            )
        }
    }

    /// The response that ends a connection after a parse error or a timeout; `rule` is the
    /// parser's `HTTPRequestParser.failureReason`, which a 400's body names.
    func answer(failure status: HTTPStatus, rule: String? = nil) -> ByteRope {
        let body = ByteRope(copying: Self.explanation(of: status, rule: rule).utf8)
        if self.accessLog { self.log(method: "-", path: "-", status: status, bytes: body.count) }
        return self.writer.serialize(
            HTTPResponse(status: status, headers: Self.textPlain, body: body, closeConnection: true)
        )
    }

    /// The body of the response to a request that could not be parsed (or arrive in time),
    /// such as `400 Bad Request: the request is not valid HTTP/1.1: userinfo in the Host value`.
    private static func explanation(of status: HTTPStatus, rule: String?) -> String {
        let reason: String
        switch status.code {
        case 400: reason = "the request is not valid HTTP/1.1" + (rule.map { ": " + $0 } ?? "")
        case 408: reason = "the request did not arrive within --header-timeout"
        case 413: reason = "the request body is longer than --max-body allows"
        case 414: reason = "the request line is too long"
        case 431: reason = "the request header section is too large"
        case 501: reason = "the transfer coding is not implemented"
        case 505: reason = "this server speaks HTTP/1.0 and HTTP/1.1 (HTTP/1.2 to 1.9 as 1.1)"
        default: reason = "the request cannot be answered"
        }
        return "\(status): \(reason)\n"
    }

    /// The request's path; for the targets `/` and `/echo` without building a `String` from
    /// the received bytes.
    private static func path(of head: HTTPRequestHead) -> String {
        let target = head.targetBytes
        switch target.count {
        case 1 where target[0] == UInt8(ascii: "/"): return "/"
        case 5 where target.elementsEqual("/echo".utf8): return "/echo"
        default: return head.path
        }
    }

    /// A response held in memory.
    private func answer(
        _ status: HTTPStatus,
        body: ByteRope = ByteRope(),
        headers: HTTPHeaders = HTTPHeaders(),
        to request: HTTPRequest,
        _ path: String,
        _ keepAlive: Bool
    ) -> Answer {
        let response = HTTPResponse(status: status, headers: headers, body: body, closeConnection: !keepAlive)
        if self.accessLog {
            self.log(method: request.head.method.rawValue, path: path, status: status, bytes: body.count)
        }
        return Answer(bytes: self.writer.serialize(response, for: request.head), splice: nil)
    }

    /// A 3xx, 4xx or 5xx response with a short `text/plain` body saying why, such as
    /// `404 Not Found: /x does not exist` (a `HEAD` gets the same head and no body).
    private func answer(
        _ status: HTTPStatus,
        saying reason: String,
        headers: HTTPHeaders = HTTPHeaders(),
        to request: HTTPRequest,
        _ path: String,
        _ keepAlive: Bool
    ) -> Answer {
        let text = "\(status): \(reason)\n"
        var fields = Self.textPlain
        fields.append(contentsOf: headers)
        return self.answer(
            status,
            body: ByteRope(copying: text.utf8),
            headers: fields,
            to: request,
            path,
            keepAlive
        )
    }

    /// A file under the root: 404 when there is none (or no root), 403 for a path or a symlink
    /// that leads outside it; for a directory `index.html`, or a redirect to the path with a
    /// slash. Answers conditional requests (304), single byte ranges (206, 416) and `HEAD`
    /// (the head `GET` would get).
    private func answerFile(_ request: HTTPRequest, path: String, keepAlive: Bool) -> Answer {
        guard let root = self.root else {
            return self.answer(
                404,
                saying: "\(path) does not exist (no --root is served)",
                to: request,
                path,
                keepAlive
            )
        }
        // A path served before, when it still names the same regular file: no normalizing,
        // no resolving (see `OpenFiles`).
        if let known = self.openFiles.resolved(path) {
            var info = stat()
            if stat(known.filePath, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                OpenFiles.Identity(info) == known.identity
            {
                return self.answerFile(request, path: path, keepAlive: keepAlive, resolved: known, info: info)
            }
        }
        guard let relative = HTTPPath.normalized(path) else {
            return self.answer(
                403,
                saying: "\(path) is not a path under the served directory",
                to: request,
                path,
                keepAlive
            )
        }
        var filePath = root + relative
        var info = stat()
        guard stat(filePath, &info) == 0 else {
            return self.answer(404, saying: "\(path) does not exist", to: request, path, keepAlive)
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            // Not even a redirect or an index for a symlink to a directory outside the root.
            guard Self.resolvedInside(root, filePath) != nil else {
                return self.answer(
                    403,
                    saying: "\(path) leads outside the served directory",
                    to: request,
                    path,
                    keepAlive
                )
            }
            guard relative.hasSuffix("/") else {
                return self.redirectToDirectory(request, path: path, keepAlive: keepAlive)
            }
            filePath += filePath.hasSuffix("/") ? "index.html" : "/index.html"
            guard stat(filePath, &info) == 0 else {
                return self.answer(
                    404,
                    saying: "\(path) is a directory without index.html",
                    to: request,
                    path,
                    keepAlive
                )
            }
        }
        // Symlinks may not lead out of the root.
        guard let real = Self.resolvedInside(root, filePath) else {
            return self.answer(403, saying: "\(path) leads outside the served directory", to: request, path, keepAlive)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return self.answer(404, saying: "\(path) is not a regular file", to: request, path, keepAlive)
        }
        let resolved = OpenFiles.Resolved(
            identity: OpenFiles.Identity(info),
            filePath: filePath,
            real: real,
            contentType: StaticFile.contentType(of: filePath)
        )
        self.openFiles.record(path, resolved)
        return self.answerFile(request, path: path, keepAlive: keepAlive, resolved: resolved, info: info)
    }

    /// The answer for the regular file `resolved` that `path` leads to, as `info` (its
    /// `stat` now) describes it: validators, 304, ranges, the head, and the file to send.
    private func answerFile(
        _ request: HTTPRequest,
        path: String,
        keepAlive: Bool,
        resolved: OpenFiles.Resolved,
        info: stat
    ) -> Answer {
        let file = StaticFile(info)
        let headers = request.head.headers
        let lastModified = HTTPDate.string(secondsSince1970: file.modifiedSecond)
        if file.isNotModified(headers) {
            let response = HTTPResponse(
                status: .notModified,
                headers: ["ETag": file.etag, "Last-Modified": lastModified],
                closeConnection: !keepAlive
            )
            if self.accessLog {
                self.log(method: request.head.method.rawValue, path: path, status: .notModified, bytes: 0)
            }
            return Answer(bytes: self.writer.serializeHead(response, for: request.head), splice: nil)
        }

        var status = HTTPStatus.ok
        var offset = 0
        var length = file.size
        var fields: HTTPHeaders = [
            "Content-Type": resolved.contentType,
            "Accept-Ranges": "bytes",
            "ETag": file.etag,
            "Last-Modified": lastModified,
        ]
        if let range = headers["Range"], file.rangeIsCurrent(headers) {
            switch StaticFile.range(range, size: file.size) {
            case .ignored:
                break
            case .unsatisfiable:
                return self.answer(
                    416,
                    saying: "the range starts after the last of the \(file.size) bytes of \(path)",
                    headers: ["Content-Range": "bytes */\(file.size)"],
                    to: request,
                    path,
                    keepAlive
                )
            case .bytes(let first, let last):
                status = .partialContent
                offset = first
                length = last - first + 1
                fields.append(name: "Content-Range", value: "bytes \(first)-\(last)/\(file.size)")
            }
        }
        fields.append(name: "Content-Length", value: String(length))
        // The file, for a body: kept open (and mapped when small) between requests.
        var opened: OpenFiles.File?
        if request.head.method == .get && length > 0 {
            do throws(Errno) {
                opened = try self.openFiles.file(resolved.real, identity: resolved.identity, size: file.size)
            } catch .permissionDenied {
                return self.answer(403, saying: "\(path) is not readable", to: request, path, keepAlive)
            } catch {
                return self.answer(500, saying: "\(path) could not be opened: \(error)", to: request, path, keepAlive)
            }
        }
        let response = HTTPResponse(status: status, headers: fields, closeConnection: !keepAlive)
        if self.accessLog {
            self.log(method: request.head.method.rawValue, path: path, status: status, bytes: length)
        }
        var head = self.writer.serializeHead(response, for: request.head)
        guard let opened else { return Answer(bytes: head, splice: nil) }
        if let mapped = opened.mapped, length < Answer.Splice.threshold {
            head.append(mapped.subrange(offset..<offset + length))
            return Answer(bytes: head, splice: nil)
        }
        return Answer(bytes: head, splice: Answer.Splice(file: opened, offset: offset, length: length))
    }

    /// `path` with every symlink resolved, when that is the root or inside it; `nil` when it
    /// is not (or cannot be resolved: it was removed since its `stat`).
    private static func resolvedInside(_ root: String, _ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        let real = String(cString: resolved)
        free(resolved)
        // `--root /` resolves to "/", which every path starts with.
        return real == root || real.hasPrefix(root.hasSuffix("/") ? root : root + "/") ? real : nil
    }

    /// 301 to the directory's path with a slash (and the query, if any): its relative links
    /// then resolve inside it.
    private func redirectToDirectory(_ request: HTTPRequest, path: String, keepAlive: Bool) -> Answer {
        // One leading slash: `//host/dir/` would send the client to another host.
        var location = "/"
        location += path.drop { $0 == "/" }
        location += "/"
        if let query = request.head.query {
            location += "?"
            location += query
        }
        return self.answer(
            301,
            saying: "\(path) is a directory: \(location)",
            headers: ["Location": location],
            to: request,
            path,
            keepAlive
        )
    }

    private func log(method: String, path: String, status: HTTPStatus, bytes: Int) {
        print("\(method) \(path) \(status.code) \(bytes)")
        fflush(nil)
    }
}
