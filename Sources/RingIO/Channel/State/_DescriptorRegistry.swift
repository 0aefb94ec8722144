//===----------------------------------------------------------------------===//
// RingIO — channels: every descriptor with channels on it has one entry.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Finding a descriptor's entry

/// Every descriptor with channels on it has one entry, shared by all its channels (R31).
///
/// The table is split into ``shardCount`` shards by descriptor number, each with a lock of its
/// own, so that rings attaching and detaching channels on different descriptors (every
/// accepted or connected socket) do not wait for one another; no system call runs under a
/// shard's lock.
internal enum _DescriptorRegistry {
    /// How many shards: a power of two, more than the cores of any machine a server runs on,
    /// so that two rings rarely meet on one lock.
    static let shardCount = 256

    /// One shard: entries by descriptor number. Its lock also guards each of its entries'
    /// `liveChannels`.
    private final class Shard: Sendable {
        let entries = _Lock(Table())
    }

    /// A shard's entries by descriptor number: the entry of `fd` at `fd / shardCount` (the
    /// shard takes the number's low bits). An array, not a dictionary: the kernel hands out
    /// the lowest free numbers, so they stay small and dense, and finding an entry hashes
    /// nothing (a dictionary hashed a number four times per connection). It grows to the
    /// highest number seen, a word per number.
    private struct Table {
        private var slots: [_DescriptorEntry?] = []

        subscript(fd: CInt) -> _DescriptorEntry? {
            get {
                let index = Int(UInt32(bitPattern: fd)) / _DescriptorRegistry.shardCount
                return index < self.slots.count ? self.slots[index] : nil
            }
            set {
                let index = Int(UInt32(bitPattern: fd)) / _DescriptorRegistry.shardCount
                if index >= self.slots.count {
                    guard newValue != nil else { return }
                    self.slots.append(contentsOf: repeatElement(nil, count: index + 1 - self.slots.count))
                }
                self.slots[index] = newValue
            }
        }
    }

    private static let shards: [Shard] = (0..<shardCount).map { _ in Shard() }

    /// The shard of descriptor `fd` (a descriptor number is never negative here).
    private static func shard(_ fd: CInt) -> Shard {
        self.shards[Int(UInt32(bitPattern: fd) & UInt32(shardCount - 1))]
    }

    /// A channel on descriptor `fd`. `knownType`: the descriptor's type when the caller
    /// knows it (a socket it accepted or connected), which saves the `fstat`.
    static func attach(
        kind: IOChannel.Kind,
        fileDescriptor fd: CInt,
        knownType: _FileType? = nil,
        queue: any IOQueue,
        ring: RingLoop?,
        cleanup: _ChannelState.Cleanup
    ) -> _ChannelState {
        var chosenRing = ring ?? (queue as? RingLoop)
        var setupError: Errno?
        // Examined before the lock: the common case — a descriptor no channel has yet — needs
        // it, and a system call is never made under a shard's lock. (When another channel is
        // already on the descriptor, its entry's type is used instead.)
        let examined: Result<_FileType, Errno>
        if let knownType {
            examined = .success(knownType)
        } else {
            examined = Result { () throws(Errno) -> _FileType in _FileType(try _POSIX.status(of: fd)) }
        }
        let lookup: Result<_DescriptorEntry, Errno> = self.shard(fd).entries.withLock { entries in
            // An entry whose ring is shutting down or gone is stale: its channels can no longer
            // be cleaned up there, and the number may name a new descriptor since. The new
            // channel gets an entry of its own (the stale one leaves the table when its last
            // channel is done, if ever; `detach` removes only itself).
            if let entry = entries[fd], !entry.core.isStopping {
                if kind == .randomAccess && (entry.type == .fifo || entry.type == .socket) {
                    return .failure(.illegalSeek)
                }
                entry.liveChannels += 1
                return .success(entry)
            }
            let type: _FileType
            switch examined {
            case .success(let found): type = found
            case .failure(let error): return .failure(error)
            }
            if type == .directory { return .failure(.isDirectory) }
            if kind == .randomAccess && (type == .fifo || type == .socket) { return .failure(.illegalSeek) }
            if let stale = entries[fd], stale.core.hasFinished {
                // Replaced below, and its ring will never run its channels again: let go of
                // them, or they and the entry keep each other alive for good.
                stale.ringFinished()
            }
            if chosenRing == nil {
                do throws(RingSetupError) {
                    chosenRing = try RingLoopGroup.shared.next()
                } catch {
                    setupError = error.errno
                }
            }
            guard let ring = chosenRing else { return .failure(setupError ?? .noFunction) }
            let entry = _DescriptorEntry(ring: ring, fd: fd, type: type, path: nil)
            entry.liveChannels = 1
            entries[fd] = entry
            return .success(entry)
        }
        switch lookup {
        case .failure(let error):
            return .failed(kind: kind, error: error, queue: queue, cleanup: cleanup)
        case .success(let entry):
            var base: Int64 = 0
            if kind == .randomAccess {
                // Offsets count from the position now (R59); a device without one (ESPIPE)
                // counts from 0.
                base = (try? _POSIX.seek(fd, to: 0, from: SEEK_CUR)) ?? 0
            }
            let state = _ChannelState(
                kind: kind,
                entry: entry,
                creationFailure: nil,
                cleanupQueue: queue,
                cleanup: cleanup,
                base: base,
                descriptor: fd
            )
            // No capture: nothing to allocate on the ring thread (an accepted connection).
            state.perform { state in state.entry!.attach(state) }
            return state
        }
    }

    /// A channel that opens `path` lazily. The path is examined now (R26).
    static func attach(
        kind: IOChannel.Kind,
        path: String,
        flags: CInt,
        permissions: mode_t,
        queue: any IOQueue,
        ring: RingLoop?,
        cleanup: _ChannelState.Cleanup
    ) -> _ChannelState {
        let type: _FileType
        do throws(Errno) {
            type = _FileType(try _POSIX.status(ofPath: path, followingLinks: flags & O_NOFOLLOW == 0))
        } catch {
            // A file to be created is a regular file, when its directory exists.
            var parent = FilePath(path)
            parent.removeLastComponent()
            guard error == .noSuchFileOrDirectory, flags & O_CREAT != 0,
                let parentInfo = try? _POSIX.status(ofPath: parent.string, followingLinks: true),
                _FileType(parentInfo) == .directory
            else {
                return .failed(kind: kind, error: error, queue: queue, cleanup: cleanup)
            }
            type = .regular
        }
        if type == .directory {
            return .failed(kind: kind, error: .isDirectory, queue: queue, cleanup: cleanup)
        }
        if kind == .randomAccess && (type == .fifo || type == .socket) {
            return .failed(kind: kind, error: .illegalSeek, queue: queue, cleanup: cleanup)
        }
        var chosenRing = ring ?? (queue as? RingLoop)
        if chosenRing == nil {
            do throws(RingSetupError) {
                chosenRing = try RingLoopGroup.shared.next()
            } catch {
                return .failed(kind: kind, error: error.errno, queue: queue, cleanup: cleanup)
            }
        }
        let entry = _DescriptorEntry(
            ring: chosenRing!,
            fd: -1,
            type: type,
            path: _PathToOpen(path: path, flags: flags, permissions: permissions)
        )
        entry.liveChannels = 1
        let state = _ChannelState(
            kind: kind,
            entry: entry,
            creationFailure: nil,
            cleanupQueue: queue,
            cleanup: cleanup,
            base: 0,
            descriptor: -1
        )
        state.perform { state in state.entry!.attach(state) }
        return state
    }

    /// A channel on the same descriptor or path as `source` (R30).
    static func attach(
        kind: IOChannel.Kind,
        from source: _ChannelState,
        queue: any IOQueue,
        cleanup: _ChannelState.Cleanup
    ) -> _ChannelState {
        guard let entry = source.entry else {
            return .failed(
                kind: kind,
                error: source.creationFailure ?? .canceled,
                queue: queue,
                cleanup: cleanup
            )
        }
        if source.closeRequested.load(ordering: .acquiring) {
            return .failed(kind: kind, error: .canceled, queue: queue, cleanup: cleanup)
        }
        if let path = entry.path {
            return self.attach(
                kind: kind,
                path: path.path,
                flags: path.flags,
                permissions: path.permissions,
                queue: queue,
                ring: entry.ring,
                cleanup: cleanup
            )
        }
        // The source's own copy of the number (any thread): the entry's is ring-only. -1 when
        // the source was closed since the check above.
        let fd = source.descriptor.load(ordering: .acquiring)
        guard fd >= 0 else {
            return .failed(kind: kind, error: .canceled, queue: queue, cleanup: cleanup)
        }
        return self.attach(
            kind: kind,
            fileDescriptor: fd,
            queue: queue,
            ring: entry.ring,
            cleanup: cleanup
        )
    }

    /// Called on the ring when a channel of `entry` is done. Returns whether it was the last
    /// live channel (the entry is then out of the registry: a new channel on the descriptor
    /// gets a new entry).
    static func detach(_ entry: _DescriptorEntry) -> Bool {
        guard entry.path == nil else {
            entry.liveChannels -= 1
            return entry.liveChannels == 0
        }
        return self.shard(entry.fd).entries.withLock { entries in
            entry.liveChannels -= 1
            guard entry.liveChannels == 0 else { return false }
            if entries[entry.fd] === entry { entries[entry.fd] = nil }
            return true
        }
    }
}
