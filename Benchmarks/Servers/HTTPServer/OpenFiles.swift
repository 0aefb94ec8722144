//===----------------------------------------------------------------------===//
// RingIO — benchmark server: the files the server keeps open (and small ones mapped) between requests.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The files the server keeps open between requests, as nginx's `open_file_cache` does: for a
/// file it served, its descriptor (which large ranges are spliced from) and, for a small
/// file, the whole file mapped as a rope (`ByteRope(mapping:)`) whose subranges are written
/// after the head — no read and no buffer per request, one copy by the kernel into the
/// socket; and what the request's path led to (no normalizing, `realpath` or media type
/// lookup per request). At most `--open-files` files; when full, all are let go of and it
/// fills again.
///
/// Never stale: every request still `stat`s the file its path led to, and a kept file or
/// resolution serves it only when that names the same file (device and inode) of the same
/// size as when it was kept; otherwise the path is normalized and resolved again (a symlink
/// swapped to lead out of the root is refused then) and the file opened afresh. A file
/// changed in place is sent as it is now — the mapping shows the file, not a copy of it; one
/// truncated while its bytes are being sent ends that connection (the write fails with
/// EFAULT where a read would have come up short), never the server: the server never reads
/// a mapping's bytes itself, only the kernel does.
final class OpenFiles: Sendable {
    /// Which file a path names.
    struct Identity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            self.device = UInt64(info.st_dev)
            self.inode = UInt64(info.st_ino)
        }
    }

    /// What a request path led to: the file, the path it was found at (under the root, with
    /// `index.html` for a directory), that path resolved, and its media type.
    struct Resolved: Sendable {
        let identity: Identity
        let filePath: String
        let real: String
        let contentType: String
    }

    /// A regular file, open for reading: kept between requests, or opened for one. Its
    /// descriptor closes when the last holder (the cache, a splice in flight) lets go.
    final class File: Sendable {
        let descriptor: FileDescriptor
        let identity: Identity
        /// The size when it was opened (and mapped).
        let size: Int
        /// The whole file mapped, when it is smaller than ``mappedSizeLimit``.
        let mapped: ByteRope?

        /// Files under this size are mapped; larger ones are spliced.
        static let mappedSizeLimit = Answer.Splice.threshold

        /// Opens `path` and checks that it is still the file a `stat` just saw (`identity`,
        /// `size`): a path renamed over in between would otherwise send another file's bytes
        /// after this one's head.
        ///
        /// - Throws: The errno of `open` (EACCES…), `fstat` or `mmap`; ESTALE when the path
        ///   names another file now.
        init(opening path: String, identity: Identity, size: Int) throws(Errno) {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw Errno(rawValue: errno) }
            let descriptor = FileDescriptor(rawValue: fd)
            do throws(Errno) {
                var info = stat()
                guard fstat(fd, &info) == 0 else { throw Errno(rawValue: errno) }
                guard Identity(info) == identity, Int(info.st_size) == size else { throw Errno.staleNFSFileHandle }
                self.mapped =
                    size > 0 && size < Self.mappedSizeLimit ? try ByteRope(mapping: fd, length: size) : nil
            } catch {
                try? descriptor.close()
                throw error
            }
            self.descriptor = descriptor
            self.identity = identity
            self.size = size
        }

        deinit {
            try? self.descriptor.close()
        }
    }

    private struct State {
        var resolved: [String: Resolved] = [:]
        var open: [String: File] = [:]
    }

    /// The most files kept; 0 keeps none (each request opens and closes its file).
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// What the request path `path` led to last time. The caller checks, with a `stat` of
    /// `filePath`, that it still leads to the same file (``Resolved/identity``).
    func resolved(_ path: String) -> Resolved? {
        guard self.capacity > 0 else { return nil }
        return self.state.withLock { $0.resolved[path] }
    }

    /// Records what the request path `path` led to: a regular file, `resolved.real` checked to
    /// be inside the root.
    func record(_ path: String, _ resolved: Resolved) {
        guard self.capacity > 0 else { return }
        self.state.withLock { state in
            if state.resolved.count >= self.capacity * 4 { state.resolved.removeAll() }
            state.resolved[path] = resolved
        }
    }

    /// The file `real`, which a `stat` just found to be `identity` of `size` bytes: the one
    /// kept for it, or newly opened (and kept when the cache keeps files).
    ///
    /// - Throws: As ``File/init(opening:identity:size:)``.
    func file(_ real: String, identity: Identity, size: Int) throws(Errno) -> File {
        if self.capacity > 0 {
            let kept = self.state.withLock { state -> File? in
                guard let file = state.open[real], file.identity == identity, file.size == size else { return nil }
                return file
            }
            if let kept { return kept }
        }
        let file = try File(opening: real, identity: identity, size: size)
        guard self.capacity > 0 else { return file }
        // What is let go of is returned, to be released outside the lock (its descriptor
        // closes there, or later if a splice still holds it).
        _ = self.state.withLock { state -> [File] in
            var replaced: [File] = []
            if let old = state.open.removeValue(forKey: real) {
                replaced.append(old)
            } else if state.open.count >= self.capacity {
                replaced = Array(state.open.values)
                state.open.removeAll()
            }
            state.open[real] = file
            return replaced
        }
        return file
    }

    /// The files kept now (each holds a descriptor).
    var count: Int {
        self.state.withLock { $0.open.count }
    }

    /// Lets go of every kept file (the server is stopping); a splice in flight keeps its own.
    func closeAll() {
        // Taken out, to be released (their descriptors closed) outside the lock.
        let files = self.state.withLock { state in
            defer { state = State() }
            return Array(state.open.values)
        }
        withExtendedLifetime(files) {}
    }
}
