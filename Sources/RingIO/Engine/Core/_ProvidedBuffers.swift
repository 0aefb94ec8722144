//===----------------------------------------------------------------------===//
// RingIO — the engine: provided receive buffers that become rope regions without a copy.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// A ring's pool of receive buffers, registered with the kernel as a provided-buffer ring.
///
/// The kernel picks a free buffer for each multishot receive and tells us its id; that buffer
/// becomes a `ByteRope` region as it is — no copy. Its owner is a per-buffer object that this
/// pool keeps as well, so the pool can tell when the last rope, slice or region referring to
/// the buffer is gone: the owner is then uniquely referenced again. The ring thread checks
/// the buffers out on loan once per turn and hands those back to the kernel.
///
///     kernel ──fills buffer 7──> CQE(bid 7) ──> ByteRope(region of buffer 7, owner #7)
///        ^                                            │ … user code, any thread …
///        └──── published back ←── owner #7 unique ←───┘ last reference dropped
///
/// Why polling the owners is sound: `isKnownUniquelyReferenced` is true only when no other
/// reference exists, and none can appear afterwards (a new reference is only ever copied
/// from an existing one). The acquiring fence after it orders our reuse of the memory after
/// the other thread's last use, which ended with its releasing decrement of the count.
///
/// Buffer memory is owned by `_BufferMemory`, which every owner retains: ropes can outlive
/// the pool and the ring.
internal final class _ProvidedBuffers {
    // MARK: Immutable after init
    internal let group: UInt16
    internal let bufferCount: Int
    internal let bufferSize: Int
    /// The distance between buffers in `memory`.
    private let stride: Int
    private let memory: _BufferMemory
    private let handle: _BufferRingHandle

    // MARK: Ring thread only
    // Unsafe storage, so that the per-turn scan pays no array uniqueness or bounds checks.
    // Invariants:
    // - `owners` holds `bufferCount` initialized owners, one per buffer id, from `init` to
    //   `deinit`, which deinitializes and frees them;
    // - `onLoan` has room for `bufferCount` ids, and its first `loanCount` are the buffers on
    //   loan. A buffer is on loan at most once: the kernel hands out an id only after it was
    //   published back, and only ids taken out of `onLoan` are (so `loanCount ≤ bufferCount`).
    /// One owner per buffer id, for the pool's whole life.
    private let owners: UnsafeMutablePointer<_ProvidedBufferOwner>
    /// Buffer ids on loan to ropes: the first `loanCount`.
    private let onLoan: UnsafeMutablePointer<UInt16>
    private var loanCount = 0

    /// - Parameters:
    ///   - bufferSize: The bytes the kernel may fill in each buffer.
    ///   - stride: The distance between buffers (at least `bufferSize`; more to align each
    ///     buffer's start). Default: `bufferSize`.
    internal init(
        engine: _Engine,
        group: UInt16,
        bufferCount: Int,
        bufferSize: Int,
        stride: Int? = nil
    ) throws(Errno) {
        precondition(bufferCount > 0 && bufferCount <= 32_768 && bufferCount & (bufferCount - 1) == 0)
        precondition((stride ?? bufferSize) >= bufferSize)
        self.group = group
        self.bufferCount = bufferCount
        self.bufferSize = bufferSize
        self.stride = stride ?? bufferSize
        let memory = try _BufferMemory(byteCount: bufferCount * self.stride)
        self.memory = memory
        self.handle = try engine.registerBufferRing(entries: UInt16(bufferCount), group: group)
        self.owners = .allocate(capacity: bufferCount)
        for id in 0..<bufferCount {
            (self.owners + id).initialize(to: _ProvidedBufferOwner(memory))
        }
        self.onLoan = .allocate(capacity: bufferCount)
        for id in 0..<bufferCount {
            self.handle.stage(self.address(of: UInt16(id)), length: bufferSize, id: UInt16(id), offset: id)
        }
        self.handle.publish(bufferCount)
    }

    /// Unregisters the ring. Buffers on loan stay valid until their ropes are gone.
    internal func close(engine: _Engine) {
        engine.unregisterBufferRing(self.handle)
    }

    deinit {
        self.owners.deinitialize(count: self.bufferCount)
        self.owners.deallocate()
        self.onLoan.deallocate()
    }

    private func address(of id: UInt16) -> UnsafeMutableRawPointer {
        self.memory.base + Int(id) * self.stride
    }

    /// The number of buffers held by ropes.
    internal var buffersOnLoan: Int { self.loanCount }

    /// The base address and size of all buffer memory (for tests of the zero-copy claim).
    internal var memoryRange: Range<UInt> {
        let base = UInt(bitPattern: self.memory.base)
        return base..<base + UInt(self.bufferCount * self.stride)
    }

    /// Lends buffer `id`, which the kernel filled with `length` bytes, as a one-region rope.
    internal func lend(_ id: UInt16, length: Int) -> ByteRope {
        precondition(Int(id) < self.bufferCount && length > 0 && length <= self.bufferSize, "bad buffer completion")
        assert(self.loanCount < self.bufferCount, "a buffer lent twice")
        self.onLoan[self.loanCount] = id
        self.loanCount += 1
        return ByteRope(
            unsafeOwner: self.owners[Int(id)],
            bytes: UnsafeRawBufferPointer(start: self.address(of: id), count: length)
        )
    }

    /// Lends buffer `id`, which the kernel filled with `filled` bytes, as a one-region rope of
    /// the bytes in `range` (a datagram's payload after its header); an empty range gives the
    /// empty rope, and the buffer goes back at the next collection.
    internal func lend(_ id: UInt16, filled: Int, bytes range: Range<Int>) -> ByteRope {
        precondition(
            Int(id) < self.bufferCount && filled > 0 && filled <= self.bufferSize && range.lowerBound >= 0
                && range.upperBound <= filled,
            "bad buffer completion"
        )
        assert(self.loanCount < self.bufferCount, "a buffer lent twice")
        self.onLoan[self.loanCount] = id
        self.loanCount += 1
        return ByteRope(
            unsafeOwner: self.owners[Int(id)],
            bytes: UnsafeRawBufferPointer(start: self.address(of: id) + range.lowerBound, count: range.count)
        )
    }

    /// The start of buffer `id`, to read what the kernel wrote there before lending it.
    internal func bufferAddress(_ id: UInt16) -> UnsafeRawPointer {
        precondition(Int(id) < self.bufferCount, "bad buffer id")
        return UnsafeRawPointer(self.address(of: id))
    }

    /// Hands back to the kernel every buffer on loan that no rope refers to any more.
    ///
    /// - Returns: How many buffers came back.
    /// - Complexity: O(buffers on loan); no allocation.
    @discardableResult
    internal func collectReturned() -> Int {
        var count = self.loanCount
        guard count > 0 else { return 0 }
        var returned = 0
        var index = 0
        while index < count {
            let id = self.onLoan[index]
            if isKnownUniquelyReferenced(&self.owners[Int(id)]) {
                self.handle.stage(self.address(of: id), length: self.bufferSize, id: id, offset: returned)
                returned += 1
                count -= 1
                self.onLoan[index] = self.onLoan[count]  // the last one takes its place
            } else {
                index += 1
            }
        }
        self.loanCount = count
        if returned > 0 {
            atomicMemoryFence(ordering: .acquiring)
            self.handle.publish(returned)
        }
        return returned
    }
}

@available(*, unavailable)
extension _ProvidedBuffers: Sendable {}

/// The owner of one provided buffer in ropes: identity only. It keeps the buffer memory alive.
internal final class _ProvidedBufferOwner {
    private let memory: _BufferMemory

    init(_ memory: _BufferMemory) {
        self.memory = memory
    }
}

/// The memory of all of a pool's buffers: one page-aligned allocation, freed when the pool
/// and the last rope region over it are gone.
internal final class _BufferMemory {
    let base: UnsafeMutableRawPointer

    init(byteCount: Int) throws(Errno) {
        self.base = try _POSIX.allocate(byteCount: byteCount, alignment: _POSIX.pageSize)
    }

    deinit {
        _POSIX.deallocate(self.base)
    }
}
