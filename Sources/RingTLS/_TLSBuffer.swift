//===----------------------------------------------------------------------===//
// RingIO — RingTLS: the byte buffers records are decrypted into and encrypted into.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO

/// A byte buffer that ropes are cut from without copying: bytes are written once at its end,
/// then handed out as regions (`ByteRope(unsafeOwner:bytes:)`) that keep the buffer alive.
///
///     ┌─────────── handed out ───────────┬── written, not yet ──┬──── free ────┐
///     0                                 start                   end         capacity
///
/// Invariant: bytes below `end` are never written again while any rope refers to the buffer;
/// the buffer is reset to empty only when it is uniquely referenced (its owner holds the only
/// reference, so no rope can see the bytes). One allocation (the bytes are tail-allocated).
///
/// Confinement: written and reset on one ring thread only (the stream's); ropes cut from it
/// may be read and released anywhere.
internal final class _TLSBuffer: ManagedBuffer<_TLSBuffer.Header, UInt8> {
    struct Header {
        /// Bytes before `start` are handed out.
        var start: Int
        /// Bytes before `end` are written.
        var end: Int
        /// The bytes asked for (the allocation may be larger).
        let size: Int
    }

    /// A new, empty buffer of at least `capacity` bytes.
    static func make(capacity: Int) -> _TLSBuffer {
        let buffer = self.create(minimumCapacity: capacity) { _ in Header(start: 0, end: 0, size: capacity) }
        return unsafeDowncast(buffer, to: _TLSBuffer.self)
    }

    var base: UnsafeMutableRawPointer {
        // Tail-allocated elements never move during the object's life.
        self.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
    }

    /// The header, through its pointer: `ManagedBuffer.header` is a stored property of a class,
    /// whose every access Swift checks for exclusivity at run time (a thread-local lookup);
    /// through the pointer there is no check. This buffer's header is touched on one thread.
    @inline(__always)
    private var state: UnsafeMutablePointer<Header> {
        self.withUnsafeMutablePointerToHeader { $0 }
    }

    /// The room left at the end.
    var free: Int { self.state.pointee.size - self.state.pointee.end }

    var size: Int { self.state.pointee.size }

    /// Written bytes not yet handed out.
    var pending: Int { self.state.pointee.end - self.state.pointee.start }

    /// Appends `count` bytes from `bytes`. `count <= free`.
    func append(_ bytes: UnsafeRawPointer, count: Int) {
        assert(count <= self.free)
        let state = self.state
        (self.base + state.pointee.end).copyMemory(from: bytes, byteCount: count)
        state.pointee.end += count
    }

    /// The free space, for a writer that then calls `commit(_:)` with what it wrote.
    var freeSpace: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: self.base + self.state.pointee.end, count: self.free)
    }

    func commit(_ count: Int) {
        assert(count <= self.free)
        self.state.pointee.end += count
    }

    /// The written bytes not yet handed out, as a rope that keeps this buffer alive; empty
    /// when there are none.
    func takePending() -> ByteRope {
        let state = self.state
        let start = state.pointee.start
        let end = state.pointee.end
        guard end > start else { return ByteRope() }
        state.pointee.start = end
        return ByteRope(unsafeOwner: self, bytes: UnsafeRawBufferPointer(start: self.base + start, count: end - start))
    }

    /// Empties the buffer. Only when nothing refers to it but its owner.
    func reset() {
        let state = self.state
        state.pointee.start = 0
        state.pointee.end = 0
    }
}

/// Where a stream writes bytes into buffers: the current one, replaced when full, reused when
/// no rope refers to it any more, and sized to what the stream moves (from 4 KiB, doubling
/// while batches fill it, up to `maximum`).
///
/// Confinement: the stream's ring thread.
internal struct _TLSBufferSlot {
    private(set) var buffer: _TLSBuffer?
    private var nextCapacity: Int
    private let maximum: Int

    init(initial: Int = 4_096, maximum: Int) {
        self.buffer = nil
        self.nextCapacity = initial
        self.maximum = maximum
    }

    /// A buffer with at least `minimumFree` bytes free (and nothing pending is lost: the caller
    /// takes pending bytes before asking for room when it needs them contiguous). Reuses the
    /// current buffer when no rope refers to it, else starts a new one.
    mutating func room(atLeast minimumFree: Int, pendingTaken: (ByteRope) -> Void) -> _TLSBuffer {
        if let buffer = self.buffer {
            if buffer.free >= minimumFree { return buffer }
            // Full: what is pending goes out as a rope before the buffer is left behind.
            let pending = buffer.takePending()
            if !pending.isEmpty { pendingTaken(pending) }
            // A full buffer means this stream moves more at once: grow the next one.
            if buffer.size >= self.nextCapacity { self.nextCapacity = min(self.nextCapacity * 2, self.maximum) }
        }
        if isKnownUniquelyReferenced(&self.buffer), let buffer = self.buffer, buffer.size >= minimumFree {
            buffer.reset()
            return buffer
        }
        let buffer = _TLSBuffer.make(capacity: max(self.nextCapacity, minimumFree))
        self.buffer = buffer
        return buffer
    }

    /// Resets the current buffer when nothing but this slot refers to it and nothing is
    /// pending in it: its whole capacity is free again, without an allocation.
    mutating func recycleIfUnused() {
        guard let buffer = self.buffer, buffer.pending == 0, isKnownUniquelyReferenced(&self.buffer) else { return }
        buffer.reset()
    }

    /// The pending bytes of the current buffer, as a rope.
    func takePending() -> ByteRope {
        self.buffer?.takePending() ?? ByteRope()
    }
}
