//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: a log-linear latency histogram that never allocates to record.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Latencies in nanoseconds, counted in log-linear buckets (HdrHistogram's idea, scaled down).
///
/// Values below 128 have a bucket each. Above, every power-of-two range `[2^k, 2^(k+1))` is cut
/// into 64 equal sub-buckets, so a bucket is at most 1/64 (1.6%) of its values wide:
///
///     value:   0 ... 127 | 128 ... 255      | 256 ... 511      | ...
///     bucket:  one each  | 64, 2 ns wide    | 64, 4 ns wide    | ...
///
/// For `v >= 64`, with `k` the index of its highest set bit and `shift = k - 6`, the bucket is
/// `shift * 64 + (v >> shift)`: `v >> shift` lies in `[64, 128)`, so buckets of consecutive
/// ranges follow each other with no gap, and the last (`k = 63`) is 57 * 64 + 127 = 3,775.
public struct LatencyHistogram: ~Copyable {
    @usableFromInline static let subBucketBits = 6
    static let bucketCount = (63 - Self.subBucketBits) * 64 + 128

    // Inlinable into the tools that record (one call per operation otherwise).
    @usableFromInline let counts: UnsafeMutablePointer<UInt64>
    @usableFromInline var recorded: UInt64 = 0
    @usableFromInline var largest: UInt64 = 0

    /// Values recorded.
    public var total: UInt64 { self.recorded }
    /// The largest value recorded.
    public var maximum: UInt64 { self.largest }

    /// An empty histogram (its buckets allocated once, here).
    public init() {
        self.counts = .allocate(capacity: Self.bucketCount)
        self.counts.initialize(repeating: 0, count: Self.bucketCount)
    }

    deinit { self.counts.deallocate() }

    @inlinable @inline(__always)
    static func bucket(of value: UInt64) -> Int {
        guard value >= 64 else { return Int(value) }
        let shift = (63 - value.leadingZeroBitCount) - Self.subBucketBits
        return (shift << Self.subBucketBits) + Int(truncatingIfNeeded: value >> UInt64(shift))
    }

    /// The smallest value in `bucket`, and the bucket's width.
    static func range(ofBucket bucket: Int) -> (lower: UInt64, width: UInt64) {
        guard bucket >= 128 else { return (UInt64(bucket), 1) }
        let shift = (bucket >> Self.subBucketBits) - 1
        let mantissa = UInt64(bucket - (shift << Self.subBucketBits))
        return (mantissa << UInt64(shift), 1 << UInt64(shift))
    }

    /// Counts one value.
    @inlinable @inline(__always)
    public mutating func record(_ nanoseconds: UInt64) {
        self.counts[Self.bucket(of: nanoseconds)] &+= 1
        self.recorded &+= 1
        if nanoseconds > self.largest { self.largest = nanoseconds }
    }

    /// The value below which a fraction `quantile` of the recorded values lie: the middle of
    /// the bucket that holds the value of rank ⌈quantile × total⌉, never above the maximum.
    public func value(atQuantile quantile: Double) -> UInt64 {
        guard self.total > 0 else { return 0 }
        let rank = max(1, UInt64((quantile * Double(self.total)).rounded(.up)))
        var seen: UInt64 = 0
        for bucket in 0..<Self.bucketCount {
            seen += self.counts[bucket]
            if seen >= rank {
                let (lower, width) = Self.range(ofBucket: bucket)
                return min(lower + (width - 1) / 2, self.maximum)
            }
        }
        return self.maximum
    }

    /// p50, p99, p99.9 and the maximum in microseconds, or `nil` when nothing was recorded.
    public func summary() -> LatencySummary? {
        guard self.total > 0 else { return nil }
        func micros(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1_000 }
        return LatencySummary(
            p50: micros(self.value(atQuantile: 0.5)),
            p99: micros(self.value(atQuantile: 0.99)),
            p999: micros(self.value(atQuantile: 0.999)),
            max: micros(self.maximum)
        )
    }
}
