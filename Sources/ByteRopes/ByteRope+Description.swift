//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension ByteRope: CustomStringConvertible {
    /// A short summary: the size, the region count and the first bytes in hex.
    ///
    ///     ByteRope(11 bytes, 3 regions: 68656c6c6f20776f726c64)
    ///
    /// - Complexity: O(1) (at most 32 bytes are shown).
    public var description: String {
        let shown = Swift.min(self.count, 32)
        var hex = ""
        hex.reserveCapacity(shown * 2 + 3)
        for byte in self.subrange(0..<shown) {
            hex += Self._hexDigits[Int(byte >> 4)]
            hex += Self._hexDigits[Int(byte & 0xF)]
        }
        if shown < self.count { hex += "..." }
        let bytes = self.count == 1 ? "byte" : "bytes"
        let regions = self.regionCount == 1 ? "region" : "regions"
        return "ByteRope(\(self.count) \(bytes), \(self.regionCount) \(regions)\(shown > 0 ? ": " + hex : ""))"
    }

    private static let _hexDigits = (0..<16).map { String($0, radix: 16) }
}

extension ByteRope: CustomDebugStringConvertible {
    /// The region map: each region's range in the rope, its owner and its address.
    ///
    ///     ByteRope(11 bytes, 3 regions)
    ///       [0..<5]  5 bytes  copied   @0x00005581c0a2e0d0
    ///       [5..<6]  1 byte   free     @0x00005581c0a2f010
    ///       …
    ///
    /// At most 64 regions are listed.
    ///
    /// - Complexity: O(min(*r*, 64)).
    public var debugDescription: String {
        var lines = ["ByteRope(\(self.count) bytes, \(self.regionCount) regions)"]
        for region in self.regions.prefix(64) {
            let slice = region.slice
            let owner: String
            switch slice.owner {
            case is _ByteStorage: owner = "copied"
            case let owning as _DeallocatingOwner: owner = owning.kindDescription
            default: owner = String(describing: type(of: slice.owner))
            }
            lines.append("  [\(region.range)] \(region.count) bytes \(owner) @\(slice.base)")
        }
        if self.regionCount > 64 {
            lines.append("  … \(self.regionCount - 64) more regions")
        }
        return lines.joined(separator: "\n")
    }
}
