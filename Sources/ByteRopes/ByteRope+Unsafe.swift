//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ByteRope {
    /// Calls `body` with all the bytes of the rope in one contiguous buffer.
    ///
    /// A rope of one region passes that region's memory itself (no copy); an empty rope passes
    /// an empty buffer with a valid, non-nil base address (`DispatchData` traps there). A rope
    /// of several regions is copied into temporary memory for the duration of the call — on the
    /// stack when small — and nothing is kept afterwards; use ``contiguous()`` to pay for the
    /// copy once when you need the contiguous view repeatedly.
    ///
    ///     let header = rope.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    ///
    /// - Parameter body: Receives the bytes. The buffer must not escape the call.
    /// - Returns: `body`'s result.
    /// - Complexity: O(1) for zero or one region; O(*n*) otherwise.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self._repr {
        case .empty:
            return try body(UnsafeRawBufferPointer(start: _emptyRopeBase, count: 0))
        case .one(let slice):
            return try withExtendedLifetime(slice.owner) {
                try body(slice.bytes)
            }
        case .two, .tree:
            return try withUnsafeTemporaryAllocation(byteCount: self.count, alignment: 16) { buffer in
                let copied = self.copyBytes(to: buffer, from: 0..<self.count)
                assert(copied == buffer.count)
                return try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// A rope with the same bytes in at most one region.
    ///
    /// Returns `self` when it already has zero or one region; otherwise copies the bytes
    /// once into a new region.
    ///
    /// - Complexity: O(1) for zero or one region; O(*n*) and one allocation otherwise.
    public func contiguous() -> ByteRope {
        switch self._repr {
        case .empty, .one:
            return self
        case .two, .tree:
            return self.contiguousCopy()
        }
    }

    /// A copy of the bytes in a new region of our own (or the empty rope).
    internal func contiguousCopy() -> ByteRope {
        let count = self.count
        guard count > 0 else { return ByteRope() }
        let storage = _ByteStorage.create(count: count)
        let copied = self.copyBytes(to: storage.unsafeMutableBytes, from: 0..<count)
        assert(copied == count)
        return ByteRope(_repr: .one(storage.slice))
    }

    /// Copies the bytes at `range` into `destination`, region by region.
    ///
    /// Copies `min(range.count, destination.count)` bytes to the start of `destination` and
    /// leaves the rest of it untouched.
    ///
    /// - Parameters:
    ///   - destination: Where to copy to. May be empty.
    ///   - range: The bytes to copy, within `0...count`.
    /// - Returns: The number of bytes copied.
    /// - Precondition: `range` lies within `0...count`.
    /// - Complexity: O(log *r* + copied bytes + regions they span).
    @discardableResult
    public func copyBytes(to destination: UnsafeMutableRawBufferPointer, from range: Range<Int>) -> Int {
        let count = self.count
        precondition(
            range.lowerBound >= 0 && range.upperBound <= count,
            "ByteRope.copyBytes(to:from: \(range)) out of bounds 0..<\(count)"
        )
        let total = Swift.min(range.count, destination.count)
        guard total > 0, let target = destination.baseAddress else { return 0 }
        var copied = 0
        self._forEachSlice(from: range.lowerBound) { slice, skip in
            let step = Swift.min(slice.count - skip, total - copied)
            (target + copied).copyMemory(from: slice.base + skip, byteCount: step)
            copied += step
            return copied < total
        }
        return copied
    }

    /// Calls `body` with each slice from the one holding byte `offset` on, and the number of
    /// leading bytes of that slice to skip (0 for every later slice), until it returns false.
    ///
    /// - Precondition: `0 <= offset <= count`; nothing is visited when `offset == count`.
    @inlinable
    internal func _forEachSlice(from offset: Int, _ body: (_Slice, _ skip: Int) throws -> Bool) rethrows {
        guard offset < self.count else { return }
        switch self._repr {
        case .empty:
            return
        case .one(let slice):
            _ = try body(slice, offset)
        case .two(let pair):
            let first = pair.first
            let second = pair.second
            if offset < first.count {
                guard try body(first, offset) else { return }
                _ = try body(second, 0)
            } else {
                _ = try body(second, offset - first.count)
            }
        case .tree(let root):
            let (_, index, start) = root.locate(byte: offset)
            var cursor = _SliceCursor(self, startingAtRegion: index)
            var skip = offset - start
            while let slice = cursor.next() {
                guard try body(slice, skip) else { return }
                skip = 0
            }
        }
    }
}

// MARK: - Vectored I/O export (package API for RingIO's engine)

extension ByteRope {
    /// Describes the rope's bytes from `offset` on as `iovec`s for `writev`/`sendmsg`,
    /// optionally retaining each region's owner for an operation that outlives this call.
    ///
    /// Either keep the rope itself alive until the kernel is done with the vectors, or pass
    /// `owners`: each entry filled there holds +1 on a region's owner and must be released
    /// exactly once (`Unmanaged.release()`) when the operation completes or is cancelled.
    ///
    /// - Parameters:
    ///   - vectors: Filled from the start with up to `vectors.count` entries.
    ///   - owners: When not `nil`, must be at least as long as `vectors`; receives a retained
    ///     owner per entry filled.
    ///   - offset: The first byte to describe, within `0...count`.
    /// - Returns: The number of entries filled and the number of bytes they describe.
    /// - Complexity: O(log *r* + entries filled).
    package func exportIOVectors(
        into vectors: UnsafeMutableBufferPointer<iovec>,
        retainingOwnersInto owners: UnsafeMutableBufferPointer<Unmanaged<AnyObject>>? = nil,
        from offset: Int = 0
    ) -> (vectorCount: Int, byteCount: Int) {
        precondition(offset >= 0 && offset <= self.count, "ByteRope.exportIOVectors(from: \(offset)) out of bounds")
        precondition(owners == nil || owners!.count >= vectors.count, "owners must be as long as vectors")
        var filled = 0
        var bytes = 0
        guard !vectors.isEmpty else { return (0, 0) }
        self._forEachSlice(from: offset) { slice, skip in
            vectors[filled] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: slice.base + skip),
                iov_len: slice.count - skip
            )
            owners?[filled] = Unmanaged.passRetained(slice.owner)
            filled += 1
            bytes += slice.count - skip
            return filled < vectors.count
        }
        return (filled, bytes)
    }
}
