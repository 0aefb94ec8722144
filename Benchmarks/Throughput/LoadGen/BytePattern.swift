//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: owned byte blocks, and the pattern echo connections send.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Bytes allocated once and freed with their owner: the receive buffer, the pattern table, the
/// HTTP request template, the expected body. Not copyable, so no two owners ever free one block.
struct ByteBlock: ~Copyable {
    let base: UnsafeMutableRawPointer
    let count: Int

    /// `count` zero bytes.
    init(count: Int) {
        // At least one byte, so `base` is a real allocation even for an empty expected body.
        self.base = .allocate(byteCount: max(count, 1), alignment: 64)
        self.base.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
        self.count = count
    }

    /// A copy of `bytes`, repeated `times` times.
    init(repeating bytes: [UInt8], times: Int) {
        self.init(count: bytes.count * times)
        bytes.withUnsafeBytes { source in
            for copy in 0..<times where !source.isEmpty {
                (self.base + copy * source.count).copyMemory(from: source.baseAddress!, byteCount: source.count)
            }
        }
    }

    deinit { self.base.deallocate() }

    var buffer: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: self.base, count: self.count) }
}

/// The byte stream every echo connection sends, and checks on the way back.
///
/// One period of ``period`` pseudo-random bytes, repeated without end; connection `i` starts at
/// phase ``startPhase(ofConnection:)``. The table holds one period and then ``span`` more bytes,
/// so the stream's next `span` bytes from any phase are one contiguous slice: a send is a pointer
/// into the table, and a check is one `memcmp` against it.
///
///     table:  [ period (65,521 bytes, prime) ][ the first `span` bytes again ]
///              ^ phase (< period)
///              |----- any slice of at most `span` bytes -----|
///
/// The period is a prime larger than any message we expect, so a server that loses, repeats or
/// reorders whole messages of a power-of-two size is caught: the stream would have to shift by a
/// multiple of the period to look right.
struct BytePattern: ~Copyable {
    static let period = 65_521
    /// The longest slice one send or one check may take.
    let span: Int
    private let table: ByteBlock

    init(span: Int) {
        self.span = span
        self.table = ByteBlock(count: Self.period + span)
        // xorshift32: deterministic, and no short cycles in the bytes it gives.
        var state: UInt32 = 0x9E37_79B9
        let bytes = self.table.base.assumingMemoryBound(to: UInt8.self)
        for index in 0..<Self.period {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            bytes[index] = UInt8(truncatingIfNeeded: state >> 24)
        }
        for index in Self.period..<(Self.period + span) {
            bytes[index] = bytes[index - Self.period]
        }
    }

    /// Where connection `index` starts: spread over the period, so two connections' streams
    /// differ (a server that crossed them would be caught).
    static func startPhase(ofConnection index: Int) -> Int {
        (index * 7_919 + 1) % Self.period
    }

    /// The stream's bytes from `phase` on; at most ``span`` of them may be read.
    ///
    /// - Precondition: `0 <= phase < period` (checked in debug builds).
    @inline(__always)
    func bytes(at phase: Int) -> UnsafeRawPointer {
        assert(phase >= 0 && phase < Self.period)
        return UnsafeRawPointer(self.table.base + phase)
    }

    /// The phase `count` bytes after `phase`.
    @inline(__always)
    static func advance(_ phase: Int, by count: Int) -> Int {
        (phase + count) % Self.period
    }

    /// The stream's byte at `phase`, for messages.
    func byte(at phase: Int) -> UInt8 {
        self.table.base.load(fromByteOffset: phase % Self.period, as: UInt8.self)
    }
}
