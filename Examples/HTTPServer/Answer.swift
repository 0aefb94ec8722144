//===----------------------------------------------------------------------===//
// RingIO — example: what the server answers, the same for handlers and for async/await.
//===----------------------------------------------------------------------===//

import RingHTTP
import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The answer to one request: the response's bytes, and for a `GET` of a non-empty file, the
/// file whose bytes follow them on the socket.
struct Answer {
    /// A file to send after ``Answer/bytes`` (its head).
    struct File: Sendable {
        /// The resolved path, inside the root.
        let path: String
        /// The size the head announced.
        let size: Int

        /// A random-access channel on the file, opened lazily on `ring`.
        func open(queue: some IOQueue, ring: RingLoop) throws(Errno) -> IOChannel {
            try IOChannel(
                kind: .randomAccess,
                path: FilePath(self.path),
                mode: .readOnly,
                queue: queue,
                ring: ring
            ) { _ in }
        }
    }

    /// The serialized response (for a file: its head only).
    var bytes: ByteRope
    var file: File?
}

extension Server {
    private static let hello = ByteRope(copying: "Hello, World!".utf8)
    private static let textPlain: [(name: String, value: String)] = [("Content-Type", "text/plain")]
    private static let octetStream: [(name: String, value: String)] = [("Content-Type", "application/octet-stream")]
    private static let allowGetHead: [(name: String, value: String)] = [("Allow", "GET, HEAD")]
    private static let allowPost: [(name: String, value: String)] = [("Allow", "POST")]

    /// Routes `request`: `GET /` is the hello, `POST /echo` answers the body, other `GET` and
    /// `HEAD` requests serve files under `--root`.
    func answer(to request: HTTPRequest, keepAlive: Bool) -> Answer {
        let path = Self.path(of: request.head)
        switch (request.method, path) {
        case (.get, "/"), (.head, "/"):
            return self.answer(.ok, body: Self.hello, headers: Self.textPlain, to: request, path, keepAlive)
        case (.post, "/echo"):
            return self.answer(.ok, body: request.body, headers: Self.octetStream, to: request, path, keepAlive)
        case (.other, _):
            return self.answer(501, to: request, path, keepAlive)
        case (_, "/"):
            return self.answer(405, headers: Self.allowGetHead, to: request, path, keepAlive)
        case (_, "/echo"):
            return self.answer(405, headers: Self.allowPost, to: request, path, keepAlive)
        case (.get, _), (.head, _):
            return self.answerFile(request, path: path, keepAlive: keepAlive)
        default:
            return self.answer(405, headers: Self.allowGetHead, to: request, path, keepAlive)
        }
    }

    /// The response that ends a connection after a parse error or a timeout.
    func answer(failure status: HTTPStatus) -> ByteRope {
        if self.accessLog { self.log(method: "-", path: "-", status: status, bytes: 0) }
        return self.writer.serialize(HTTPResponse(status: status, closeConnection: true))
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
        headers: [(name: String, value: String)] = [],
        to request: HTTPRequest,
        _ path: String,
        _ keepAlive: Bool
    ) -> Answer {
        let response = HTTPResponse(status: status, headers: headers, body: body, closeConnection: !keepAlive)
        if self.accessLog {
            self.log(method: request.method.rawValue, path: path, status: status, bytes: body.count)
        }
        return Answer(bytes: self.writer.serialize(response, for: request.head), file: nil)
    }

    /// A file under the root: 404 when there is none (or no root), 403 for a path or a symlink
    /// that leads outside it; `index.html` for a directory.
    private func answerFile(_ request: HTTPRequest, path: String, keepAlive: Bool) -> Answer {
        guard let root = self.root else {
            return self.answer(404, to: request, path, keepAlive)
        }
        guard let relative = HTTPPath.normalized(path) else {
            return self.answer(403, to: request, path, keepAlive)
        }
        var filePath = root + relative
        var info = stat()
        guard stat(filePath, &info) == 0 else {
            return self.answer(404, to: request, path, keepAlive)
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            filePath += filePath.hasSuffix("/") ? "index.html" : "/index.html"
            guard stat(filePath, &info) == 0 else {
                return self.answer(404, to: request, path, keepAlive)
            }
        }
        // Symlinks may not lead out of the root.
        guard let resolved = realpath(filePath, nil) else {
            return self.answer(404, to: request, path, keepAlive)
        }
        let real = String(cString: resolved)
        free(resolved)
        guard real.hasPrefix(root + "/") else {
            return self.answer(403, to: request, path, keepAlive)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return self.answer(404, to: request, path, keepAlive)
        }
        let size = Int(info.st_size)
        let response = HTTPResponse(
            status: .ok,
            headers: [("Content-Type", Self.contentType(of: real)), ("Content-Length", String(size))],
            closeConnection: !keepAlive
        )
        if self.accessLog {
            self.log(method: request.method.rawValue, path: path, status: .ok, bytes: size)
        }
        let head = self.writer.serializeHead(response, for: request.head)
        guard request.method == .get, size > 0 else { return Answer(bytes: head, file: nil) }
        return Answer(bytes: head, file: Answer.File(path: real, size: size))
    }

    private static func contentType(of path: String) -> String {
        let name = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "txt": return "text/plain; charset=utf-8"
        case "css": return "text/css"
        case "js": return "text/javascript"
        case "json": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "pdf": return "application/pdf"
        default: return "application/octet-stream"
        }
    }

    private func log(method: String, path: String, status: HTTPStatus, bytes: Int) {
        print("\(method) \(path) \(status.code) \(bytes)")
        fflush(nil)
    }
}
