//===----------------------------------------------------------------------===//
// RingIO — io_uring: a registered provided-buffer ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A registered provided-buffer ring: where the ring thread hands buffers to the kernel.
internal struct _BufferRingHandle {
    internal let ring: UnsafeMutablePointer<io_uring_buf_ring>
    internal let mask: Int32
    internal let group: UInt16

    private init(ring: UnsafeMutablePointer<io_uring_buf_ring>, mask: Int32, group: UInt16) {
        self.ring = ring
        self.mask = mask
        self.group = group
    }

    /// Allocates an empty ring of `entries` (a power of two) for group `group`, page-aligned,
    /// in the layout io_uring reads (the readiness engine reads the same); freed with
    /// `_POSIX.deallocate(ring)`. The corresponding liburing call is `io_uring_buf_ring_init`
    /// (liburing 2.3 has no `io_uring_setup_buf_ring`).
    internal static func allocate(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        precondition(entries > 0 && entries & (entries - 1) == 0, "buffer ring entries must be a power of two")
        let byteCount = Int(entries) * MemoryLayout<io_uring_buf>.stride
        let memory = try _POSIX.allocate(byteCount: byteCount, alignment: _POSIX.pageSize)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        let ring = memory.assumingMemoryBound(to: io_uring_buf_ring.self)
        io_uring_buf_ring_init(ring)
        return _BufferRingHandle(ring: ring, mask: io_uring_buf_ring_mask(UInt32(entries)), group: group)
    }

    /// Stages buffer `id` at `address` for the next `publish`, `offset` entries past the
    /// published tail. The corresponding liburing call is `io_uring_buf_ring_add`.
    internal func stage(_ address: UnsafeMutableRawPointer, length: Int, id: UInt16, offset: Int) {
        io_uring_buf_ring_add(self.ring, address, UInt32(length), id, self.mask, Int32(offset))
    }

    /// Makes `count` staged buffers visible to the kernel (a release store of the tail).
    /// The corresponding liburing call is `io_uring_buf_ring_advance`.
    internal func publish(_ count: Int) {
        io_uring_buf_ring_advance(self.ring, Int32(count))
    }
}
