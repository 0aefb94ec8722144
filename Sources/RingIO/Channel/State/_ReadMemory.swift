//===----------------------------------------------------------------------===//
// RingIO — channels: fresh memory for a read, given to the rope it fills.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

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
