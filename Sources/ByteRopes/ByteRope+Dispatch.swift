//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch

extension ByteRope {
    /// Creates a rope over the regions of `data`, without copying: the rope keeps `data`
    /// alive until the last of its regions is released.
    ///
    /// - Parameter data: The dispatch data to wrap.
    /// - Complexity: O(*r*) for the *r* regions of `data`; one allocation for the owner, plus
    ///   the rope's own tree for three regions or more.
    public init(_ data: DispatchData) {
        self.init()
        guard !data.isEmpty else { return }
        let owner = _DispatchDataOwner(data)
        data.enumerateBytes { bytes, _, _ in
            // The bytes belong to `data`, which is immutable and which `owner` keeps alive.
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            self._append(_Slice(owner: owner, base: UnsafeRawPointer(base), count: bytes.count))
        }
    }
}

extension DispatchData {
    /// Creates dispatch data over the regions of `rope`, without copying: each region is
    /// released when dispatch releases the data referencing it.
    ///
    /// - Parameter rope: The rope to wrap.
    /// - Complexity: O(*r*) for *r* regions, and `DispatchData`'s own concatenation cost
    ///   (quadratic in *r*: convert ropes of many regions with care).
    public init(_ rope: ByteRope) {
        var result = DispatchData.empty
        for region in rope.regions {
            let owner = region.slice.owner
            let piece = DispatchData(
                bytesNoCopy: region.slice.bytes,
                deallocator: .custom(nil, { withExtendedLifetime(owner) {} })
            )
            result.append(piece)
        }
        self = result
    }
}

/// Keeps a `DispatchData` alive while rope regions point into it.
internal final class _DispatchDataOwner {
    // MARK: Immutable after init
    private let data: DispatchData

    internal init(_ data: DispatchData) {
        self.data = data
    }
}
