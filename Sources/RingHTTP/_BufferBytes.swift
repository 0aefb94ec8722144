//===----------------------------------------------------------------------===//
// RingIO — RingHTTP: read access to the parser's buffered bytes, for HTTPRequestParser.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Searching and scanning the buffer

/// Read access to the parser's buffered bytes: the rope itself, or — when the rope is one
/// region, the common case — that region's memory (``_RegionBytes``), read with no walk of
/// the rope per access. Offsets are the buffer's.
protocol _BufferBytes {
    /// The number of bytes.
    var count: Int { get }
    /// The byte at `position`, which is below `count`.
    subscript(position: Int) -> UInt8 { get }
    /// The offset of the first `byte` within `range`.
    func firstIndex(of byte: UInt8, within range: Range<Int>) -> Int?
    /// The first occurrence of `pattern` within `range`.
    func firstRange(of pattern: UnsafeRawBufferPointer, within range: Range<Int>) -> Range<Int>?
    /// Runs a scanner over the bytes at `range`: `contiguous` over raw memory when they lie
    /// in one region, else `general` with the rope's byte iterator.
    func scan<Result>(
        _ range: Range<Int>,
        _ contiguous: (inout UnsafeRawBufferPointer.Iterator) throws(_ParseFailure) -> Result,
        _ general: (inout ByteRope.Iterator) throws(_ParseFailure) -> Result
    ) throws(_ParseFailure) -> Result
    /// The bytes after the first `count`.
    func dropping(_ count: Int) -> Self
}

/// The bytes of a buffer that is one region: that region's memory, valid while the caller
/// holds the rope.
struct _RegionBytes: _BufferBytes {
    private let bytes: UnsafeRawBufferPointer

    /// - Precondition: `bytes` has a base address (even when empty).
    init(_ bytes: UnsafeRawBufferPointer) {
        assert(bytes.baseAddress != nil, "region bytes without an address")
        self.bytes = bytes
    }

    var count: Int { self.bytes.count }

    subscript(position: Int) -> UInt8 { self.bytes[position] }

    func firstIndex(of byte: UInt8, within range: Range<Int>) -> Int? {
        guard !range.isEmpty else { return nil }
        let base = self.bytes.baseAddress!
        guard let found = memchr(base + range.lowerBound, CInt(byte), range.count) else { return nil }
        return UnsafeRawPointer(found) - base
    }

    func firstRange(of pattern: UnsafeRawBufferPointer, within range: Range<Int>) -> Range<Int>? {
        guard range.count >= pattern.count, let first = pattern.first else { return nil }
        let base = self.bytes.baseAddress!
        // The last offset where the pattern can start, and candidates found by their first byte.
        let lastStart = range.upperBound &- pattern.count
        var start = range.lowerBound
        while let candidate = self.firstIndex(of: first, within: start..<(lastStart &+ 1)) {
            if memcmp(base + candidate, pattern.baseAddress!, pattern.count) == 0 {
                return candidate..<(candidate &+ pattern.count)
            }
            start = candidate &+ 1
        }
        return nil
    }

    func scan<Result>(
        _ range: Range<Int>,
        _ contiguous: (inout UnsafeRawBufferPointer.Iterator) throws(_ParseFailure) -> Result,
        _ general: (inout ByteRope.Iterator) throws(_ParseFailure) -> Result
    ) throws(_ParseFailure) -> Result {
        var iterator = UnsafeRawBufferPointer(rebasing: self.bytes[range]).makeIterator()
        return try contiguous(&iterator)
    }

    func dropping(_ count: Int) -> _RegionBytes {
        _RegionBytes(UnsafeRawBufferPointer(rebasing: self.bytes[count...]))
    }
}

extension ByteRope: _BufferBytes {
    func dropping(_ count: Int) -> ByteRope {
        self.subrange(count...)
    }

    /// The offset of the first `byte` within `range`, searching each region with `memchr`.
    ///
    /// - Complexity: O(log *r* + `range.count`); allocates only when the range is not the
    ///   whole rope and spans three or more regions.
    func firstIndex(of byte: UInt8, within range: Range<Int>) -> Int? {
        guard !range.isEmpty else { return nil }
        if range.lowerBound == 0 && range.upperBound == self.count { return self.firstIndex(of: byte) }
        return self.subrange(range).firstIndex(of: byte).map { $0 &+ range.lowerBound }
    }

    /// The first occurrence of `pattern` within `range`, matched across region boundaries.
    ///
    /// - Complexity: O(log *r* + `range.count`); allocates only when the range is not the
    ///   whole rope and spans three or more regions.
    func firstRange(of pattern: UnsafeRawBufferPointer, within range: Range<Int>) -> Range<Int>? {
        guard range.count >= pattern.count else { return nil }
        if range.lowerBound == 0 && range.upperBound == self.count { return self.firstRange(of: pattern) }
        return self.subrange(range).firstRange(of: pattern).map {
            ($0.lowerBound &+ range.lowerBound)..<($0.upperBound &+ range.lowerBound)
        }
    }

    /// Runs a scanner over the bytes at `range`: `contiguous` over raw memory when they lie
    /// in one region (the common case: no iterator over the rope's regions), else `general`
    /// with the rope's byte iterator. Both are the same generic scanner, specialized twice.
    func scan<Result>(
        _ range: Range<Int>,
        _ contiguous: (inout UnsafeRawBufferPointer.Iterator) throws(_ParseFailure) -> Result,
        _ general: (inout ByteRope.Iterator) throws(_ParseFailure) -> Result
    ) throws(_ParseFailure) -> Result {
        // One region (the common case): its memory directly.
        let whole = self.withContiguousStorageIfAvailable { bytes in
            var iterator = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[range]).makeIterator()
            return Swift.Result { () throws(_ParseFailure) in try contiguous(&iterator) }
        }
        if let whole { return try whole.get() }
        // Several regions, `range` within one of them.
        if !range.isEmpty {
            let (region, start) = self.region(containing: range.lowerBound)
            if range.upperBound &- start <= region.count {
                let outcome = region.withUnsafeBytes { bytes in
                    var iterator = UnsafeRawBufferPointer(
                        rebasing: bytes[(range.lowerBound &- start)..<(range.upperBound &- start)]
                    ).makeIterator()
                    return Swift.Result { () throws(_ParseFailure) in try contiguous(&iterator) }
                }
                return try outcome.get()
            }
        }
        var iterator = self.subrange(range).makeIterator()
        return try general(&iterator)
    }
}
