//===----------------------------------------------------------------------===//
// RingIO — benchmarks: IOChannel reading a large file and streaming over a socketpair,
// beside DispatchIO (and fio, through run-fio-baseline.sh).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Benchmark
import IOBenchmarkSupport

// Naming: `<Operation>_<Kind>`, identifiers without spaces. Nothing here is checked: every figure
// is reported, never compared with a threshold, and no name matches the checked filter
// `.*_ByteRope.*`. Read the ratios, not the absolute figures: RingIO's MB/s over DispatchIO's from
// the same run, and over fio's from run-fio-baseline.sh (README.md, "Reading the I/O figures").

let benchmarks: @Sendable () -> Void = {
    // MARK: One read of a whole large file (warm cache)
    //
    // A random-access channel, one read of length Int.max from offset 0, low water left at its
    // default (1 MiB for both), handlers counting the bytes. The file is TestFile: 2 GiB unless
    // RINGIO_BENCH_FILE_SIZE says otherwise, created once under /tmp and reused. MB/s is the
    // figure to read; one measured iteration is one whole read, so the other rows are per read.
    // The setup reads the file once, checking every page, which also warms the page cache.

    registerFileRead("FileRead_RingIOChannelOnDispatchQueue") { try RingIOFileReader(handlersOnRing: false) }
    registerFileRead("FileRead_RingIOChannelOnRing") { try RingIOFileReader(handlersOnRing: true) }
    registerFileRead("FileRead_DispatchIO") { DispatchIOFileReader() }

    // MARK: Streaming 64 KiB values over a socketpair
    //
    // One end writes the same 64 KiB value 1,000 times per measured iteration (8 writes
    // outstanding), the other reads with one read of length Int.max, low water 1. MB/s is the
    // payload rate; the rows marked `*` are per 64 KiB write (wall clock, mallocs, CPU).

    registerStream("Stream64KiB_RingIOChannelOnRings") { try RingIOStream(handlersOnRings: true) }
    registerStream("Stream64KiB_RingIOChannelOnDispatchQueues") { try RingIOStream(handlersOnRings: false) }
    registerStream("Stream64KiB_DispatchIO") { DispatchIOStream() }
}

// MARK: - Registration

private func registerFileRead<Reader: WholeFileReader>(_ name: String, _ make: @escaping () throws -> Reader) {
    registerIOBenchmark(
        name,
        configuration: reportedIO(
            maxDuration: .seconds(10),
            maxIterations: 10,
            extraMetrics: [MetricName.megabytesPerSecond]
        ),
        make: {
            let reader = try make()
            let bytes = reader.readWholeFile(checking: true)
            check(bytes == TestFile.size, "\(name): read \(bytes) bytes of \(TestFile.size)")
            return reader
        },
        body: { benchmark, reader in
            let start = ContinuousClock.now
            let bytes = reader.readWholeFile(checking: false)
            let elapsed = ContinuousClock.now - start
            check(bytes == TestFile.size, "\(name): read \(bytes) bytes of \(TestFile.size)")
            benchmark.measurement(MetricName.megabytesPerSecond, megabytesPerSecond(bytes: bytes, in: elapsed))
        }
    )
}

private func registerStream<Pair: StreamingPair>(_ name: String, _ make: @escaping () throws -> Pair) {
    registerIOBenchmark(
        name,
        configuration: reportedIO(scalingFactor: .kilo, extraMetrics: [MetricName.megabytesPerSecond]),
        make: {
            let pair = try make()
            // Every byte compared once, before anything is measured.
            pair.transfer(chunks: 64, checkingContents: true)
            return pair
        },
        body: { benchmark, pair in
            let count = benchmark.scaledIterations.count
            let start = ContinuousClock.now
            pair.transfer(chunks: count, checkingContents: false)
            let elapsed = ContinuousClock.now - start
            benchmark.measurement(
                MetricName.megabytesPerSecond,
                megabytesPerSecond(bytes: count * Chunk.size, in: elapsed)
            )
        }
    )
}
