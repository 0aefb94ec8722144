//===----------------------------------------------------------------------===//
// RingIO — ByteRopesFoundationCompat
//===----------------------------------------------------------------------===//

import ByteRopes
import Foundation

extension Data {
    /// Creates `Data` with the bytes of `rope`.
    ///
    /// A rope of one region is not copied: the `Data` references the region's memory and keeps
    /// it alive until the `Data` storage is released. (Foundation itself may copy very small
    /// buffers into its inline representation.) A rope of several regions is copied once.
    ///
    /// - Parameter rope: The bytes.
    /// - Complexity: O(1) for zero or one region; O(*n*) otherwise.
    public init(_ rope: ByteRope) {
        guard rope.regionCount == 1 else {
            var data = Data(count: rope.count)
            data.withUnsafeMutableBytes { _ = rope.copyBytes(to: $0, from: 0..<rope.count) }
            self = data
            return
        }
        // The region stays alive for as long as the deallocator closure holds `region`.
        let region = rope
        self = rope.withUnsafeBytes { bytes in
            Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!),
                count: bytes.count,
                deallocator: .custom({ _, _ in withExtendedLifetime(region) {} })
            )
        }
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
