//===----------------------------------------------------------------------===//
// RingIO — channels: sizes and limits.
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
