//===----------------------------------------------------------------------===//
// RingIO — channels: small pieces the channel machinery shares.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Sizes and limits of the channel machinery.
internal enum _ChannelLimits {
    /// The read chunk for files, and the default low water mark where D1 does not apply
    /// (dispatch's 1 MiB, R43).
    static let chunkSize = 1 << 20
    /// Chunk reads in flight per file read operation.
    static let fileReadDepth = 4
    /// Reads smaller than this get memory of their own size rather than a pooled chunk.
    static let smallReadLimit = 64 << 10
    /// Chunks the pool keeps for reuse (the rest are freed when released).
    static let pooledChunks = 32
    /// iovecs per vectored write syscall.
    static let writeVectors = 64
    /// Path channels with a descriptor open at once, per ring; more wait for one to close.
    static let openPathsPerRing = 1_024
    /// Bytes a stream read may have delivered to handler calls that have not returned (or to
    /// an async iteration that has not taken them) before it stops receiving: back-pressure
    /// against a slow queue or consumer.
    static let heldBytesLimit = 4 << 20
    /// The size of a receive into fresh memory, when the provided buffers ran out.
    static let fallbackReceiveSize = 64 << 10
}

/// What the channels keep per ring (the ring's ``_RingCore/local(_:)``): the open-path budget,
/// and the entries not yet finished, which the ring closes as it exits. Ring thread only.
internal final class _ChannelRing: _RingLocal {
    /// Path channels holding an open descriptor on this ring.
    var openPaths = 0
    /// Path entries waiting for the open-path budget, in order.
    var openQueue: [_DescriptorEntry] = []
    /// The descriptor entries with channels on this ring that are not finished (see
    /// `_DescriptorEntry.attach` and `finishIfIdle`).
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var openEntries: [ObjectIdentifier: _DescriptorEntry] = [:]

    init(core: _RingCore) {}

    /// Stops every channel of the entries still open (the ring is exiting, nothing in
    /// flight); returns whether there was any.
    func ringIsExiting() -> Bool {
        let entries = self.openEntries.values.filter { !$0.closingForRingExit }
        for entry in entries { entry.closeForRingExit() }
        return !entries.isEmpty
    }
}

/// A channel's write operations that finished their life, for reuse: a write scheduled on
/// the ring thread (a handler on the ring, a task on its executor) allocates nothing. Per
/// channel, so an operation's channel and entry never change (they stay `let`s, read with
/// no reference counting); a channel pools at most `capacity`, and lets go of them when it
/// is done (the pooled operations hold it: `_ChannelState.finishIfDone` breaks the cycle).
///
/// Invariant: an operation enters the pool on the ring thread once it is retired (no syscall
/// in flight, out of every lane and list) and its final call has run there, with its data
/// and handler let go of. Others may still hold it for a while — the job that ran its final
/// call, the task that awaited it until its `write` returns, a cancellation handler — so
/// `take` hands out only an operation the pool holds alone (`isKnownUniquelyReferenced`,
/// then an acquiring fence, which orders the last holder's release before the reuse, as the
/// provided buffers do). Ring thread only (it lives in the channel's ring-only state).
internal struct _WriteOperationPool {
    /// Operations kept at most: a connection writes one message at a time, or a few that
    /// leave together (gathered), and each pooled one costs memory while the channel idles.
    static let capacity = 2

    // Two slots rather than an array: no allocation of its own, and no loop.
    private var first: _WriteOperation?
    private var second: _WriteOperation?

    /// How many operations wait for reuse.
    var count: Int { (self.first == nil ? 0 : 1) + (self.second == nil ? 0 : 1) }

    /// An operation no one else refers to, or `nil` (the caller allocates one).
    mutating func take() -> _WriteOperation? {
        if self.first != nil && isKnownUniquelyReferenced(&self.first!) {
            atomicMemoryFence(ordering: .acquiring)
            defer { self.first = nil }
            return self.first
        }
        if self.second != nil && isKnownUniquelyReferenced(&self.second!) {
            atomicMemoryFence(ordering: .acquiring)
            defer { self.second = nil }
            return self.second
        }
        return nil
    }

    /// Keeps `operation` for reuse (see the invariant above), unless the pool is full.
    mutating func give(_ operation: _WriteOperation) {
        if self.first == nil {
            self.first = operation
        } else if self.second == nil {
            self.second = operation
        }
    }

    /// Lets go of every pooled operation.
    mutating func removeAll() {
        self.first = nil
        self.second = nil
    }
}

// MARK: - Memory for file reads

/// Memory a file read lands in, released (to the pool or to `free`) when the last rope region
/// over it is gone — from any thread.
///
/// Whole chunks are recycled through ``_ChunkPool``: warm-cache reads never fault in fresh
/// pages (dispatch maps and unmaps every chunk).
internal final class _ReadMemory {
    let base: UnsafeMutableRawPointer
    let size: Int

    /// Memory of `size` bytes: a pooled chunk when `size` is the chunk size.
    init(size: Int) {
        self.size = size
        if size == _ChannelLimits.chunkSize, let chunk = _ChunkPool.take() {
            self.base = chunk
        } else {
            do throws(Errno) {
                self.base = try _POSIX.allocate(byteCount: size, alignment: 4096)
            } catch {
                fatalError("RingIO: out of memory allocating a \(size)-byte read buffer")
            }
        }
    }

    var buffer: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: self.base, count: self.size)
    }

    /// The first `count` bytes as a rope region owned by this memory (no copy).
    func rope(count: Int) -> ByteRope {
        ByteRope(unsafeOwner: self, bytes: UnsafeRawBufferPointer(start: self.base, count: count))
    }

    deinit {
        if self.size != _ChannelLimits.chunkSize || !_ChunkPool.give(self.base) {
            _POSIX.deallocate(self.base)
        }
    }
}

/// Whole read chunks kept for reuse, shared by every ring. A lock per 1 MiB chunk is nothing
/// beside copying the chunk.
internal enum _ChunkPool {
    /// Addresses as integers: raw pointers are not `Sendable`.
    private static let chunks = _Lock<[UInt]>([])

    static func take() -> UnsafeMutableRawPointer? {
        chunks.withLock { $0.popLast() }.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Keeps `chunk` for reuse; `false` when the pool is full (the caller frees it).
    static func give(_ chunk: UnsafeMutableRawPointer) -> Bool {
        chunks.withLock { chunks in
            guard chunks.count < _ChannelLimits.pooledChunks else { return false }
            chunks.append(UInt(bitPattern: chunk))
            return true
        }
    }
}

// MARK: - A first-in, first-out queue

/// A FIFO over an array with a moving head: O(1) amortized push and pop.
internal struct _FIFO<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { self.head == self.storage.count }
    var first: Element? { self.isEmpty ? nil : self.storage[self.head] }
    var count: Int { self.storage.count - self.head }

    /// The element `index` places behind the first (0: the first).
    subscript(index: Int) -> Element {
        precondition(index >= 0 && index < self.count, "_FIFO index out of range")
        return self.storage[self.head + index]!
    }

    mutating func append(_ element: Element) {
        self.storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard !self.isEmpty else { return nil }
        let element = self.storage[self.head]
        self.storage[self.head] = nil
        self.head += 1
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head >= 32 && self.head * 2 >= self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
        return element
    }

    /// Removes and returns every element, in order.
    mutating func removeAll() -> [Element] {
        let elements = self.storage[self.head...].map { $0! }
        self.storage.removeAll()
        self.head = 0
        return elements
    }

    /// Removes the elements matching `predicate`, keeping the order of the others.
    mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element?] = []
        for element in self.storage[self.head...] {
            if predicate(element!) { removed.append(element!) } else { kept.append(element) }
        }
        self.storage = kept
        self.head = 0
        return removed
    }
}

// MARK: - Descriptor facts

/// What kind of file a descriptor refers to; decides the I/O model (R26).
internal enum _FileType {
    /// `characterDevice`: other than a terminal (/dev/zero, /dev/urandom…): read like a file.
    case regular, fifo, socket, terminal, characterDevice, directory, other

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = Self.isTerminal(device: info.st_rdev) ? .terminal : .characterDevice
        case S_IFDIR: self = .directory
        default: self = .other
        }
    }

    /// Terminal devices by major number (Documentation/admin-guide/devices.txt): 4 (virtual
    /// consoles, serial ports), 5 (/dev/tty, /dev/console, /dev/ptmx), 136–143 (pseudo-terminal
    /// slaves, /dev/pts/*).
    private static func isTerminal(device: dev_t) -> Bool {
        let major = (device >> 8) & 0xfff | (device >> 32) & ~0xfff
        return major == 4 || major == 5 || (136...143).contains(major)
    }

    /// Read and written as a stream of arriving bytes (receives into provided buffers, not
    /// chunked reads); their stream channels deliver as data arrives (D1).
    var isStreamLike: Bool {
        switch self {
        case .fifo, .socket, .terminal: return true
        case .regular, .characterDevice, .directory, .other: return false
        }
    }
}
