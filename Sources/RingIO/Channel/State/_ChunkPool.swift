//===----------------------------------------------------------------------===//
// RingIO — channels: the recycled chunks of file reads.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

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
