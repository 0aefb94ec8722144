//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ByteRope {
    /// The offset of the first byte equal to `byte`, searching each region with `memchr`.
    ///
    /// - Parameter byte: The byte to find.
    /// - Returns: Its first offset, or `nil` when the rope does not contain it.
    /// - Complexity: O(*n*); allocates nothing.
    public func firstIndex(of byte: UInt8) -> Int? {
        var found: Int?
        _ = self.apply { offset, bytes in
            guard let hit = memchr(bytes.baseAddress!, Int32(byte), bytes.count) else { return true }
            found = offset + (UnsafeRawPointer(hit) - bytes.baseAddress!)
            return false
        }
        return found
    }

    /// The range of the first occurrence of `pattern`, matched across region boundaries
    /// without joining regions.
    ///
    ///     let response: ByteRope = …   // a response head split over several reads
    ///     if let end = response.firstRange(of: "\r\n\r\n".utf8) {
    ///         let head = response.subrange(0..<end.lowerBound)
    ///     }
    ///
    /// - Parameter pattern: The bytes to find. An empty pattern matches at `0..<0`, as the
    ///   standard library's `firstRange(of:)` does.
    /// - Returns: The range of the first match, or `nil`.
    /// - Complexity: O(*n* · *m*) in the worst case for a pattern of *m* bytes, O(*n*) for
    ///   patterns whose first byte is rare (such as `"\r\n\r\n"` in HTTP); allocates nothing
    ///   when `pattern` has contiguous storage.
    public func firstRange(of pattern: some Collection<UInt8>) -> Range<Int>? {
        if let range = pattern.withContiguousStorageIfAvailable({ self._firstRange(of: UnsafeRawBufferPointer($0)) }) {
            return range
        }
        return ContiguousArray(pattern).withUnsafeBytes { self._firstRange(of: $0) }
    }

    private func _firstRange(of needle: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let needleBase = needle.baseAddress, needle.count > 0 else { return 0..<0 }
        let needleCount = needle.count
        guard needleCount <= self.count else { return nil }
        let first = Int32(needleBase.load(as: UInt8.self))
        let lastStart = self.count - needleCount
        var cursor = _SliceCursor(self)
        var regionStart = 0
        while let slice = cursor.next() {
            var position = 0  // within this slice
            while position < slice.count && regionStart + position <= lastStart {
                let searchLength = Swift.min(slice.count - position, lastStart - (regionStart + position) + 1)
                guard let hit = memchr(slice.base + position, first, searchLength) else { break }
                let candidate = UnsafeRawPointer(hit) - slice.base
                let matched: Bool
                if candidate + needleCount <= slice.count {
                    // The common case: the whole candidate lies in this region.
                    matched = memcmp(slice.base + candidate, needleBase, needleCount) == 0
                } else {
                    matched = Self._matches(needle, slice: slice, at: candidate, following: cursor)
                }
                if matched {
                    let start = regionStart + candidate
                    return start..<start + needleCount
                }
                position = candidate + 1
            }
            regionStart += slice.count
        }
        return nil
    }

    /// Whether `needle` occurs at `position` in `slice`, continuing into the slices that
    /// `following` (a copy of the cursor, positioned after `slice`) yields. The caller has
    /// checked that the rope holds enough bytes from there.
    private static func _matches(
        _ needle: UnsafeRawBufferPointer,
        slice: _Slice,
        at position: Int,
        following: _SliceCursor
    ) -> Bool {
        var matched = 0
        var piece = UnsafeRawBufferPointer(rebasing: slice.bytes[position...])
        var rest = following
        while true {
            let step = Swift.min(piece.count, needle.count - matched)
            if memcmp(piece.baseAddress!, needle.baseAddress! + matched, step) != 0 {
                return false
            }
            matched += step
            if matched == needle.count { return true }
            guard let next = rest.next() else { return false }
            piece = next.bytes
        }
    }
}
