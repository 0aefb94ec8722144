//===----------------------------------------------------------------------===//
// RingIO — benchmarks: ByteRope beside DispatchData, [UInt8] and Data.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Benchmark
import ByteRopes
import Dispatch
import Foundation

// Naming: `<Operation>_<Kind>[_<N>]`, identifiers without spaces (a space breaks `thresholds check`).
// Every benchmark whose kind starts with `ByteRope` is *checked*: its malloc count has an absolute p90
// threshold in Thresholds/<swift version>/. The others are baselines doing the same work, reported only.
// Wall clock and throughput are always reported and never checked: allocations are a contract, time is
// a report (Benchmarks/README.md, "Checked thresholds: allocations only").
//
// With `scalingFactor: .kilo` one measured iteration performs 1,000 operations. The text output
// divides by that (rows marked `*`), but threshold files hold the raw count per measured iteration.

// MARK: - Configurations

/// A baseline: wall clock, throughput and allocations, all reported and none checked.
private func reported(
    scalingFactor: BenchmarkScalingFactor = .one,
    maxDuration: Duration = .seconds(1),
    maxIterations: Int = 1_000
) -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        scalingFactor: scalingFactor,
        maxDuration: maxDuration,
        maxIterations: maxIterations,
        thresholds: [.wallClock: .none, .throughput: .none, .mallocCountTotal: .none]
    )
}

/// A ByteRope benchmark: the same metrics, but the malloc count must equal its stored p90 threshold
/// exactly. Wall clock and throughput get no tolerances at all, so they can never fail a check even
/// if a threshold file were to list them.
private func checked(
    scalingFactor: BenchmarkScalingFactor = .one,
    maxDuration: Duration = .seconds(1),
    maxIterations: Int = 1_000
) -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        scalingFactor: scalingFactor,
        maxDuration: maxDuration,
        maxIterations: maxIterations,
        thresholds: [
            .wallClock: .none,
            .throughput: .none,
            .mallocCountTotal: .init(relative: [:], absolute: [.p90: 0]),
        ]
    )
}

let benchmarks: @Sendable () -> Void = {
    // MARK: Append loop: N one-byte values appended one at a time
    //
    // ByteRope must be linear: compare the per-append cost of 10k, 100k and 1M. DispatchData's append
    // copies its region list every time (quadratic), so it runs with N = 1k and 10k only: compare it
    // with AppendOneByte_ByteRope_10k, never with the 1M runs.

    for (n, label) in [(10_000, "10k"), (100_000, "100k"), (1_000_000, "1M")] {
        Benchmark(
            "AppendOneByte_ByteRope_\(label)",
            configuration: checked(maxDuration: .seconds(2)),
            closure: { benchmark in
                let byte = Fixtures.oneByteRope
                benchmark.startMeasurement()
                var rope = ByteRope()
                for _ in 0..<n {
                    rope.append(byte)
                }
                benchmark.stopMeasurement()
                precondition(
                    rope.count == n && rope.regionCount == n,
                    "count \(rope.count), regions \(rope.regionCount)"
                )
                blackHole(rope)
            },
            setup: { _ = Fixtures.oneByteRope }
        )
    }

    for (n, label) in [(1_000, "1k"), (10_000, "10k")] {
        Benchmark(
            "AppendOneByte_DispatchData_\(label)",
            configuration: reported(maxDuration: .seconds(2)),
            closure: { benchmark in
                let byte = Fixtures.oneByteDispatchData
                benchmark.startMeasurement()
                var data = DispatchData.empty
                for _ in 0..<n {
                    data.append(byte)
                }
                benchmark.stopMeasurement()
                precondition(data.count == n)
                blackHole(data)
            },
            setup: { _ = Fixtures.oneByteDispatchData }
        )
    }

    Benchmark("AppendOneByte_UInt8Array_1M", configuration: reported()) { benchmark in
        benchmark.startMeasurement()
        var array: [UInt8] = []
        for _ in 0..<1_000_000 {
            array.append(0x41)
        }
        benchmark.stopMeasurement()
        precondition(array.count == 1_000_000)
        blackHole(array)
    }

    Benchmark(
        "AppendOneByte_Data_1M",
        configuration: reported(),
        closure: { benchmark in
            let byte = Fixtures.oneByteData
            benchmark.startMeasurement()
            var data = Data()
            for _ in 0..<1_000_000 {
                data.append(byte)
            }
            benchmark.stopMeasurement()
            precondition(data.count == 1_000_000)
            blackHole(data)
        },
        setup: { _ = Fixtures.oneByteData }
    )

    // MARK: Concatenation of two 10,000-region values (1 MB each)

    Benchmark(
        "Concat2x10kRegions_ByteRope",
        configuration: checked(scalingFactor: .kilo),
        closure: { benchmark in
            let (a, b) = (Fixtures.manyRegionsRope, Fixtures.manyRegionsRope)
            for _ in benchmark.scaledIterations {
                blackHole(a + b)
            }
        },
        setup: {
            let joined = Fixtures.manyRegionsRope + Fixtures.manyRegionsRope
            precondition(joined.count == 2 * Sizes.largeByteCount, "count \(joined.count)")
            precondition(joined.regionCount == 2 * Sizes.manyRegions, "regions \(joined.regionCount)")
        }
    )

    Benchmark(
        "Concat2x10kRegions_DispatchData",
        configuration: reported(),
        closure: { benchmark in
            let (a, b) = (Fixtures.manyRegionsDispatchData, Fixtures.manyRegionsDispatchData)
            benchmark.startMeasurement()
            var joined = a
            joined.append(b)
            benchmark.stopMeasurement()
            precondition(joined.count == 2 * Sizes.largeByteCount)
            blackHole(joined)
        },
        setup: { _ = Fixtures.manyRegionsDispatchData }
    )

    Benchmark(
        "Concat2x10kRegions_UInt8Array",
        configuration: reported(),
        closure: { benchmark in
            let (a, b) = (Bytes.largeContents, Bytes.largeContents)
            benchmark.startMeasurement()
            let joined = a + b
            benchmark.stopMeasurement()
            precondition(joined.count == 2 * Sizes.largeByteCount)
            blackHole(joined)
        },
        setup: { _ = Bytes.largeContents }
    )

    Benchmark(
        "Concat2x10kRegions_Data",
        configuration: reported(),
        closure: { benchmark in
            let (a, b) = (Fixtures.largeData, Fixtures.largeData)
            benchmark.startMeasurement()
            let joined = a + b
            benchmark.stopMeasurement()
            precondition(joined.count == 2 * Sizes.largeByteCount)
            blackHole(joined)
        },
        setup: { _ = Fixtures.largeData }
    )

    // MARK: Subrange: the middle half of a 10,000-region value

    Benchmark(
        "SubrangeMiddle10kRegions_ByteRope",
        configuration: checked(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsRope
            for _ in benchmark.scaledIterations {
                blackHole(whole.subrange(Sizes.middleHalf))
            }
        },
        setup: {
            let part = Fixtures.manyRegionsRope.subrange(Sizes.middleHalf)
            precondition(part.elementsEqual(Bytes.largeContents[Sizes.middleHalf]), "subrange has the wrong bytes")
        }
    )

    Benchmark(
        "SubrangeMiddle10kRegions_DispatchData",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsDispatchData
            for _ in benchmark.scaledIterations {
                blackHole(whole.subdata(in: Sizes.middleHalf))
            }
        },
        setup: {
            let part = Fixtures.manyRegionsDispatchData.subdata(in: Sizes.middleHalf)
            precondition(part.elementsEqual(Bytes.largeContents[Sizes.middleHalf]))
        }
    )

    Benchmark(
        "SubrangeMiddle10kRegions_UInt8ArrayCopy",
        configuration: reported(),
        closure: { benchmark in
            let whole = Bytes.largeContents
            benchmark.startMeasurement()
            let part = Array(whole[Sizes.middleHalf])
            benchmark.stopMeasurement()
            blackHole(part)
        },
        setup: { _ = Bytes.largeContents }
    )

    Benchmark(
        "SubrangeMiddle10kRegions_DataSlice",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.largeData
            for _ in benchmark.scaledIterations {
                blackHole(whole[Sizes.middleHalf])
            }
        },
        setup: { _ = Fixtures.largeData }
    )

    // MARK: Subrange of a one-region value (1 MB): the rope must allocate nothing
    //
    // [UInt8] and Data are always one region, so SubrangeMiddle10kRegions_UInt8ArrayCopy and
    // SubrangeMiddle10kRegions_DataSlice above are already the same work for them.

    Benchmark(
        "SubrangeOneRegion_ByteRope",
        configuration: checked(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.oneRegionRope
            for _ in benchmark.scaledIterations {
                blackHole(whole.subrange(Sizes.middleHalf))
            }
        },
        setup: {
            let part = Fixtures.oneRegionRope.subrange(Sizes.middleHalf)
            precondition(part.regionCount == 1, "regions \(part.regionCount)")
            precondition(part.elementsEqual(Bytes.largeContents[Sizes.middleHalf]), "subrange has the wrong bytes")
        }
    )

    Benchmark(
        "SubrangeOneRegion_DispatchData",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.oneRegionDispatchData
            for _ in benchmark.scaledIterations {
                blackHole(whole.subdata(in: Sizes.middleHalf))
            }
        },
        setup: { _ = Fixtures.oneRegionDispatchData }
    )

    // MARK: Random byte index into a 10,000-region value (1,000 probes per measured iteration)

    Benchmark(
        "RandomIndex10kRegions_ByteRope",
        configuration: checked(scalingFactor: .kilo, maxIterations: 100_000),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsRope
            var sum = 0
            for i in Bytes.randomIndices {
                sum &+= Int(whole[i])
            }
            blackHole(sum)
        },
        setup: {
            let whole = Fixtures.manyRegionsRope
            let sum = Bytes.randomIndices.reduce(0) { $0 &+ Int(whole[$1]) }
            precondition(sum == Fixtures.randomIndexSum, "subscript returned the wrong bytes")
        }
    )

    Benchmark(
        "RandomIndex10kRegions_DispatchData",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsDispatchData
            var sum = 0
            for i in Bytes.randomIndices {
                sum &+= Int(whole[i])
            }
            blackHole(sum)
        },
        setup: {
            let whole = Fixtures.manyRegionsDispatchData
            precondition(Bytes.randomIndices.reduce(0) { $0 &+ Int(whole[$1]) } == Fixtures.randomIndexSum)
        }
    )

    Benchmark(
        "RandomIndex10kRegions_UInt8Array",
        configuration: reported(scalingFactor: .kilo, maxIterations: 100_000),
        closure: { benchmark in
            let whole = Bytes.largeContents
            var sum = 0
            for i in Bytes.randomIndices {
                sum &+= Int(whole[i])
            }
            blackHole(sum)
        },
        setup: { _ = (Bytes.largeContents, Bytes.randomIndices) }
    )

    Benchmark(
        "RandomIndex10kRegions_Data",
        configuration: reported(scalingFactor: .kilo, maxIterations: 100_000),
        closure: { benchmark in
            let whole = Fixtures.largeData
            var sum = 0
            for i in Bytes.randomIndices {
                sum &+= Int(whole[i])
            }
            blackHole(sum)
        },
        setup: { _ = (Fixtures.largeData, Bytes.randomIndices) }
    )

    // MARK: Visiting every region of a 10,000-region value

    Benchmark(
        "Apply10kRegions_ByteRope",
        configuration: checked(maxIterations: 100_000),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsRope
            benchmark.startMeasurement()
            var sum = 0
            let completed = whole.apply { _, bytes in
                sum &+= bytes.count &+ Int(bytes[0])
                return true
            }
            benchmark.stopMeasurement()
            precondition(completed && sum == Fixtures.regionVisitSum, "apply visited the wrong regions")
        },
        setup: { _ = (Fixtures.manyRegionsRope, Fixtures.regionVisitSum) }
    )

    Benchmark(
        "Apply10kRegions_ByteRopeRegions",
        configuration: checked(maxIterations: 100_000),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsRope
            benchmark.startMeasurement()
            var sum = 0
            for region in whole.regions {
                sum &+= region.withUnsafeBytes { $0.count &+ Int($0[0]) }
            }
            benchmark.stopMeasurement()
            precondition(sum == Fixtures.regionVisitSum, "regions visited the wrong regions")
        },
        setup: { _ = (Fixtures.manyRegionsRope, Fixtures.regionVisitSum) }
    )

    Benchmark(
        "Apply10kRegions_DispatchData",
        configuration: reported(),
        closure: { benchmark in
            let whole = Fixtures.manyRegionsDispatchData
            benchmark.startMeasurement()
            var sum = 0
            whole.enumerateBytes { bytes, _, _ in
                sum &+= bytes.count &+ Int(bytes[0])
            }
            benchmark.stopMeasurement()
            precondition(sum == Fixtures.regionVisitSum)
        },
        setup: { _ = (Fixtures.manyRegionsDispatchData, Fixtures.regionVisitSum) }
    )

    Benchmark(
        "Apply10kRegions_UInt8ArrayChunks",
        configuration: reported(maxIterations: 100_000),
        closure: { benchmark in
            let whole = Bytes.largeContents
            benchmark.startMeasurement()
            var sum = 0
            whole.withUnsafeBytes { all in
                for start in stride(from: 0, to: all.count, by: Sizes.regionSize) {
                    let bytes = UnsafeRawBufferPointer(rebasing: all[start..<(start + Sizes.regionSize)])
                    sum &+= bytes.count &+ Int(bytes[0])
                }
            }
            benchmark.stopMeasurement()
            precondition(sum == Fixtures.regionVisitSum)
        },
        setup: { _ = (Bytes.largeContents, Fixtures.regionVisitSum) }
    )

    // MARK: Finding "\r\n\r\n" in a ~1 KiB HTTP response delivered in 8 chunks
    //
    // The terminator straddles two chunks. Every baseline uses the same byte loop (HeaderEndScanner).

    Benchmark(
        "FindHeaderEnd8Chunks_ByteRope",
        configuration: checked(scalingFactor: .kilo),
        closure: { benchmark in
            let response = Fixtures.httpRope
            for _ in benchmark.scaledIterations {
                blackHole(response.firstRange(of: "\r\n\r\n".utf8))
            }
        },
        setup: {
            let found = Fixtures.httpRope.firstRange(of: "\r\n\r\n".utf8)
            precondition(
                found == HTTPResponse.expectedHeaderEnd,
                "firstRange returned \(String(describing: found)), expected \(HTTPResponse.expectedHeaderEnd)"
            )
        }
    )

    Benchmark(
        "FindHeaderEnd8Chunks_DispatchDataEnumerate",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let response = Fixtures.httpDispatchData
            for _ in benchmark.scaledIterations {
                blackHole(findHeaderEnd(response))
            }
        },
        setup: { precondition(findHeaderEnd(Fixtures.httpDispatchData) == HTTPResponse.expectedHeaderEnd) }
    )

    Benchmark(
        "FindHeaderEnd8Chunks_DispatchDataFlatten",
        configuration: reported(scalingFactor: .kilo),
        closure: { benchmark in
            let response = Fixtures.httpDispatchData
            for _ in benchmark.scaledIterations {
                blackHole(findHeaderEndFlattening(response))
            }
        },
        setup: { precondition(findHeaderEndFlattening(Fixtures.httpDispatchData) == HTTPResponse.expectedHeaderEnd) }
    )

    Benchmark(
        "FindHeaderEnd8Chunks_UInt8ArrayContiguous",
        configuration: reported(scalingFactor: .kilo, maxIterations: 100_000),
        closure: { benchmark in
            let response = HTTPResponse.bytes
            for _ in benchmark.scaledIterations {
                blackHole(response.withUnsafeBytes(findHeaderEnd))
            }
        },
        setup: { precondition(HTTPResponse.bytes.withUnsafeBytes(findHeaderEnd) == HTTPResponse.expectedHeaderEnd) }
    )

    Benchmark(
        "FindHeaderEnd8Chunks_DataContiguous",
        configuration: reported(scalingFactor: .kilo, maxIterations: 100_000),
        closure: { benchmark in
            let response = Fixtures.httpData
            for _ in benchmark.scaledIterations {
                blackHole(response.withUnsafeBytes(findHeaderEnd))
            }
        },
        setup: { precondition(Fixtures.httpData.withUnsafeBytes(findHeaderEnd) == HTTPResponse.expectedHeaderEnd) }
    )
}

// MARK: - DispatchData searches

/// Searches region by region (`enumerateBytes`), carrying a partial match across regions: no copy.
@inline(never)
private func findHeaderEnd(_ data: DispatchData) -> Range<Int>? {
    var scanner = HeaderEndScanner()
    var found: Range<Int>?
    data.enumerateBytes { bytes, _, stop in
        if let range = scanner.scan(UnsafeRawBufferPointer(bytes)) {
            found = range
            stop = true
        }
    }
    return found
}

/// Searches a flattened copy: `DispatchData.withUnsafeBytes` maps (allocates and copies) a
/// discontiguous value, which is what most code does.
@inline(never)
private func findHeaderEndFlattening(_ data: DispatchData) -> Range<Int>? {
    data.withUnsafeBytes { (start: UnsafePointer<UInt8>) in
        findHeaderEnd(UnsafeRawBufferPointer(start: start, count: data.count))
    }
}
