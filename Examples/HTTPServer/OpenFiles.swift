//===----------------------------------------------------------------------===//
// RingIO — example: the files the server keeps open between requests.
//===----------------------------------------------------------------------===//

import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The files the server keeps open between requests, as nginx's `open_file_cache` does: for a
/// file it served, the random-access channel it reads the file through (one per ring; its
/// descriptor stays open) and what the request's path led to (no normalizing, `realpath` or
/// media type lookup per request). At most `--open-files` channels; when full, all are let go of and it fills again.
///
/// Never stale: every request still `stat`s the file its path led to, and a kept channel or
/// resolution serves it only when that names the same file (device and inode) as when it was
/// kept; otherwise the path is normalized and resolved again (a symlink swapped to lead out of
/// the root is refused then).
/// A file replaced (renamed over, another inode) or removed is opened afresh; a file changed
/// in place is read as it is now — the descriptor reads the file, not a copy of it.
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

    private struct Key: Hashable {
        let ring: ObjectIdentifier
        let real: String
    }

    private struct Open {
        let identity: Identity
        let channel: IOChannel
    }

    private struct State {
        var resolved: [String: Resolved] = [:]
        var open: [Key: Open] = [:]
    }

    /// The most channels kept; 0 keeps none (each request opens and closes its file).
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

    /// A random-access channel on the file `real` (which names `identity`) for reads scheduled
    /// on `ring`: the one kept for it, or a new one, kept when there is room. Returns whether
    /// it is kept: a channel that is not is the caller's to close once its read is done.
    func channel(_ real: String, identity: Identity, ring: RingLoop) throws(Errno) -> (IOChannel, kept: Bool) {
        let key = Key(ring: ObjectIdentifier(ring), real: real)
        if self.capacity > 0 {
            let kept = self.state.withLock { state -> IOChannel? in
                guard let open = state.open[key], open.identity == identity else { return nil }
                return open.channel
            }
            if let kept { return (kept, true) }
        }
        // Opened lazily on the ring, by the first read.
        let channel = try IOChannel(
            kind: .randomAccess,
            path: FilePath(real),
            mode: .readOnly,
            queue: ring,
            ring: ring
        ) { _ in }
        guard self.capacity > 0 else { return (channel, false) }
        // A channel let go of here is not closed: a connection may have just taken it and not
        // yet scheduled its read. It closes when its last reference goes (`IOChannel`'s deinit
        // closes it, after the reads scheduled on it).
        // What is let go of is returned, to be dropped outside the lock.
        _ = self.state.withLock { state -> [Open] in
            var replaced: [Open] = []
            if let old = state.open.removeValue(forKey: key) {
                replaced.append(old)
            } else if state.open.count >= self.capacity {
                replaced = Array(state.open.values)
                state.open.removeAll()
            }
            state.open[key] = Open(identity: identity, channel: channel)
            return replaced
        }
        return (channel, true)
    }

    /// Lets go of `channel`, kept for the file `real` on `ring`, after a read of it failed (the
    /// file could not be opened — its permissions — or was shorter than its `stat` said): the
    /// next request opens the file afresh rather than meet the same error for as long as the
    /// file's identity stays the same.
    func forget(_ channel: IOChannel, _ real: String, ring: RingLoop) {
        let key = Key(ring: ObjectIdentifier(ring), real: real)
        // Returned, to be dropped outside the lock.
        _ = self.state.withLock { state -> Open? in
            guard let open = state.open[key], open.channel === channel else { return nil }
            return state.open.removeValue(forKey: key)
        }
    }

    /// The channels kept now (each holds a descriptor once its first read opened it).
    var count: Int {
        self.state.withLock { $0.open.count }
    }

    /// Closes every kept channel (the server is stopping).
    func closeAll() {
        let channels = self.state.withLock { state in
            defer { state = State() }
            return state.open.values.map(\.channel)
        }
        for channel in channels { channel.close() }
    }
}
