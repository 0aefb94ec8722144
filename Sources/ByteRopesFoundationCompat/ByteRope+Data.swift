//===----------------------------------------------------------------------===//
// RingIO — ByteRopesFoundationCompat
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Foundation

extension Data {
    /// Creates `Data` holding a copy of the bytes of `rope`.
    ///
    /// This always copies. `Data` writes in place into storage it references uniquely — even
    /// storage it was given with `bytesNoCopy` — so a `Data` over a rope's region would let its
    /// owner change bytes that every copy and subrange of the rope shares.
    ///
    /// - Parameter rope: The bytes.
    /// - Complexity: O(*n*); one allocation.
    public init(_ rope: ByteRope) {
        var data = Data(count: rope.count)
        data.withUnsafeMutableBytes { _ = rope.copyBytes(to: $0, from: 0..<rope.count) }
        self = data
    }
}

extension ByteRope {
    /// Creates a rope holding a copy of the bytes of `data`, in one region.
    ///
    /// `Data` does not promise a stable address for its bytes beyond `withUnsafeBytes`, so
    /// they are copied.
    ///
    /// - Complexity: O(*n*); one allocation.
    public init(_ data: Data) {
        self = data.withUnsafeBytes { ByteRope(copying: $0) }
    }
}
