//===----------------------------------------------------------------------===//
// RingIO — IOChannel: opening a file and closing a channel with async/await.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension IOChannel {
    /// Opens the file at `path` now and returns a channel on it: the async counterpart of
    /// ``init(kind:path:mode:options:permissions:queue:ring:cleanupHandler:)``, whose lazy open
    /// reports a missing file only to the first operation. Here it throws at once — ENOENT,
    /// EACCES, EISDIR… — and a file that `.create` makes exists when this returns, even if
    /// nothing is ever written to it.
    ///
    ///     let source = try await IOChannel.open(kind: .randomAccess, path: "/var/data/in", mode: .readOnly)
    ///     let copy = try await IOChannel.open(
    ///         kind: .randomAccess, path: "/var/data/out", mode: .writeOnly, options: [.create, .truncate]
    ///     )
    ///     var offset: Int64 = 0
    ///     for try await data in source.reads() {
    ///         try await copy.write(data, offset: offset)
    ///         offset += Int64(data.count)
    ///     }
    ///     await source.closeAndWait()
    ///     await copy.closeAndWait()          // the file is closed when this returns
    ///
    /// The channel owns the descriptor: it closes it once the channel is closed and its
    /// operations have finished (``closeAndWait(flags:)`` returns after that). Its barriers
    /// run on its ring. The path is examined and opened off the calling thread: the `stat` on a
    /// thread of RingIO's own for blocking calls, the `open` on the ring.
    ///
    /// - Parameters:
    ///   - kind: Stream or random access.
    ///   - path: The file; a relative path is resolved against the current directory now.
    ///   - mode: Read, write, or both.
    ///   - options: `open(2)` options (`.create`, `.truncate`, `.append`, `.noFollow`…).
    ///   - permissions: When `.create` makes the file (default `0o644`, less the umask).
    ///   - ring: The ring for the channel's I/O; `nil`: the next ring of
    ///     ``RingLoopGroup/shared``.
    /// - Throws: The error of examining or opening the path; ESPIPE for random access on a
    ///   FIFO; `Errno.canceled` when the ring has shut down; the error of setting up io_uring
    ///   when there is no ring.
    public static func open(
        kind: Kind,
        path: FilePath,
        mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions? = nil,
        ring: RingLoop? = nil
    ) async throws(Errno) -> IOChannel {
        let chosen: RingLoop
        if let ring {
            chosen = ring
        } else {
            chosen = try Self.sharedRing()
        }
        let absolute = try Self.absolute(path)
        // The path init examines the path with a blocking `stat`: not on a cooperative thread.
        let made: Result<IOChannel, Errno> = await withUnsafeContinuation { continuation in
            _BlockingPool.shared.run {
                continuation.resume(
                    returning: Result { () throws(Errno) -> IOChannel in
                        try IOChannel(
                            kind: kind,
                            path: absolute,
                            mode: mode,
                            options: options,
                            permissions: permissions,
                            queue: chosen,
                            ring: chosen,
                            cleanupHandler: { _ in }
                        )
                    }
                )
            }
        }
        let channel = try made.get()
        let error: Errno? = await withUnsafeContinuation { continuation in
            channel.state.openNow { continuation.resume(returning: $0) }
        }
        if let error {
            channel.close(flags: .stop)
            throw error
        }
        return channel
    }

    /// Closes the channel (as ``close(flags:)``) and returns once its cleanup handler has run:
    /// its operations have ended, a descriptor it opened from a path is closed.
    ///
    /// Without ``CloseFlags/stop``, the operations already scheduled run to their end first —
    /// a read on a socket waits for its peer's data or EOF, and so does this call; with it,
    /// they end now with ECANCELED.
    ///
    /// A channel made on a ring that had already shut down never reached it: its cleanup
    /// handler never runs, and this call returns once the ring's thread has finished.
    public func closeAndWait(flags: CloseFlags = []) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            self.state.requestClose(stop: flags.contains(.stop), whenCleanedUp: { continuation.resume() })
        }
    }

    /// The next ring of the shared group, its set-up error as an errno.
    private static func sharedRing() throws(Errno) -> RingLoop {
        do throws(RingSetupError) {
            return try RingLoopGroup.shared.next()
        } catch {
            throw error.errno
        }
    }

    /// `path` as an absolute path: relative ones resolved against the current directory.
    private static func absolute(_ path: FilePath) throws(Errno) -> FilePath {
        if path.isAbsolute { return path }
        guard let buffer = getcwd(nil, 0) else { throw Errno(rawValue: errno) }
        defer { free(buffer) }
        return FilePath(String(cString: buffer)).pushing(path)
    }
}
