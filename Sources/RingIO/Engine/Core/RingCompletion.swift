//===----------------------------------------------------------------------===//
// RingIO — the engine: a completion as the ring reaps it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A completion copied out of the CQ.
internal struct RingCompletion {
    internal var userData: UInt64
    internal var result: Int32
    internal var flags: UInt32

    internal init(userData: UInt64, result: Int32, flags: UInt32) {
        self.userData = userData
        self.result = result
        self.flags = flags
    }

    /// More completions will follow for the same operation (multishot).
    internal var hasMore: Bool { CompletionFlags(self.flags).hasMore }
}

/// The flags of a completion.
internal struct CompletionFlags {
    internal let rawValue: UInt32

    internal init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// More completions will follow for the same operation (multishot).
    internal var hasMore: Bool { self.rawValue & IORING_CQE_F_MORE != 0 }

    /// The provided buffer the kernel filled, if any.
    internal var bufferID: UInt16? {
        guard self.rawValue & IORING_CQE_F_BUFFER != 0 else { return nil }
        return UInt16(truncatingIfNeeded: self.rawValue >> IORING_CQE_BUFFER_SHIFT)
    }
}
