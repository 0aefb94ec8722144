//===----------------------------------------------------------------------===//
// RingIO — benchmarks: shared inputs for ByteRopeBenchmarks.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Dispatch
import Foundation

/// Sizes shared by every benchmark, so that a rope and its baselines always do the same work.
enum Sizes {
    /// Regions in the "large" fixtures.
    static let manyRegions = 10_000
    /// Bytes in each region of the large fixtures (10,000 × 100 B = 1 MB).
    static let regionSize = 100
    /// Total bytes in the large fixtures.
    static let largeByteCount = manyRegions * regionSize
    /// The middle half of a large fixture, for the subrange benchmarks.
    static let middleHalf = (largeByteCount / 4)..<(3 * largeByteCount / 4)
    /// Random indices probed per outer iteration of the random-index benchmarks (scalingFactor .kilo).
    static let probesPerIteration = 1_000
}

/// Deterministic bytes: a rope and its baselines see the same contents, run after run.
enum Bytes {
    /// `count` bytes of a repeating pattern that never contains "\r\n".
    static func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: 32 &+ ($0 &+ seed) % 90) }
    }

    /// The contents of the large fixtures, region after region.
    static let largeContents: [UInt8] = pattern(Sizes.largeByteCount)

    /// The large fixture's contents cut into `Sizes.manyRegions` separate chunks.
    static let largeChunks: [[UInt8]] = stride(from: 0, to: Sizes.largeByteCount, by: Sizes.regionSize).map {
        Array(largeContents[$0..<($0 + Sizes.regionSize)])
    }

    /// Indices spread over the whole large fixture by a fixed linear congruential generator.
    static let randomIndices: [Int] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<Sizes.probesPerIteration).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33) % Sizes.largeByteCount
        }
    }()
}

/// A realistic HTTP/1.1 response of about 1 KiB, cut into 8 chunks the way reads from a socket might deliver it.
enum HTTPResponse {
    static let head: String =
        "HTTP/1.1 200 OK\r\n"
        + "Date: Fri, 21 Nov 2025 21:21:00 GMT\r\n"
        + "Server: RingHTTP/0.1\r\n"
        + "Content-Type: application/json; charset=utf-8\r\n"
        + "Content-Length: 640\r\n"
        + "Cache-Control: no-store, max-age=0\r\n"
        + "Connection: keep-alive\r\n"
        + "Vary: Accept-Encoding\r\n"
        + "X-Request-Id: 6f1c2e0a-4b7d-4e8a-9c3f-2d5b8a1e7f90\r\n"
        + "Strict-Transport-Security: max-age=63072000; includeSubDomains\r\n"
        + "\r\n"

    static let body: [UInt8] = {
        var json = "{\"items\":["
        var index = 0
        while json.utf8.count < 600 {
            json += "{\"id\":\(index),\"name\":\"item-\(index)\",\"ok\":true},"
            index += 1
        }
        json.removeLast()
        json += "]}"
        let padding = 640 - json.utf8.count
        return Array(json.utf8) + Array(repeating: UInt8(ascii: " "), count: max(0, padding))
    }()

    /// The whole response, contiguous.
    static let bytes: [UInt8] = Array(head.utf8) + body

    /// Where "\r\n\r\n" is, found the obvious way, to check every benchmark's answer against.
    static let expectedHeaderEnd: Range<Int> = {
        let terminator = Array("\r\n\r\n".utf8)
        for start in 0...(bytes.count - terminator.count)
        where bytes[start..<(start + terminator.count)].elementsEqual(terminator) {
            return start..<(start + terminator.count)
        }
        fatalError("fixture has no header terminator")
    }()

    /// Eight chunks. Seven cut points are evenly spaced, except that the one nearest the end of the head
    /// is moved into the middle of "\r\n\r\n", so the terminator straddles two chunks (the case a
    /// region-aware search must get right).
    static let chunks: [[UInt8]] = {
        let count = bytes.count
        var cuts = (1..<8).map { $0 * count / 8 }
        let split = expectedHeaderEnd.lowerBound + 2
        let nearest = cuts.indices.min { abs(cuts[$0] - split) < abs(cuts[$1] - split) }!
        cuts[nearest] = split
        cuts.sort()
        let bounds = [0] + cuts + [count]
        return (0..<8).map { Array(bytes[bounds[$0]..<bounds[$0 + 1]]) }
    }()
}

extension DispatchData {
    /// A `DispatchData` holding one copy of each chunk as its own region.
    static func regions(_ chunks: [[UInt8]]) -> DispatchData {
        var data = DispatchData.empty
        for chunk in chunks {
            chunk.withUnsafeBytes { data.append(DispatchData(bytes: $0)) }
        }
        return data
    }
}

/// The search every baseline uses: a byte loop that carries a partial match of "\r\n\r\n" from one
/// piece to the next, so it works on one contiguous buffer and on regions visited in order alike.
struct HeaderEndScanner {
    /// How many bytes of "\r\n\r\n" the bytes seen so far end with (0...3).
    private var matched = 0
    /// Bytes seen in earlier calls to `scan(_:)`.
    private var consumed = 0

    /// Scans the next piece; returns the terminator's range, counted from the first byte of the first piece.
    @inline(never)
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        for index in bytes.indices {
            let byte = bytes[index]
            // "\r\n\r\n" expects CR at even positions and LF at odd ones; its only proper border is
            // "\r", so on a mismatch the match restarts at 1 when the byte is a CR and at 0 otherwise.
            if byte == (self.matched & 1 == 0 ? cr : lf) {
                self.matched += 1
                if self.matched == 4 {
                    let end = self.consumed + index + 1
                    return (end - 4)..<end
                }
            } else {
                self.matched = byte == cr ? 1 : 0
            }
        }
        self.consumed += bytes.count
        return nil
    }
}

/// `HeaderEndScanner` over one contiguous buffer.
@inline(never)
func findHeaderEnd(_ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
    var scanner = HeaderEndScanner()
    return scanner.scan(bytes)
}

// MARK: - Values built once, outside any measurement

// nonisolated(unsafe): swift-corelibs-libdispatch does not mark DispatchData Sendable, but the
// dispatch_data_t it wraps is immutable after creation, and these values are never mutated in place.
enum Fixtures {
    // MARK: ByteRope

    static let oneByteRope = ByteRope(copying: [0x41] as [UInt8])
    /// 10,000 regions of 100 bytes, each region its own allocation.
    static let manyRegionsRope: ByteRope = {
        var rope = ByteRope()
        for chunk in Bytes.largeChunks {
            rope.append(ByteRope(copying: chunk))
        }
        precondition(rope.count == Sizes.largeByteCount, "rope.count \(rope.count)")
        precondition(rope.regionCount == Sizes.manyRegions, "rope.regionCount \(rope.regionCount)")
        precondition(rope.elementsEqual(Bytes.largeContents), "rope contents differ from the bytes appended")
        return rope
    }()
    /// One region of 1 MB.
    static let oneRegionRope: ByteRope = {
        let rope = ByteRope(copying: Bytes.largeContents)
        precondition(rope.regionCount == 1, "rope.regionCount \(rope.regionCount)")
        return rope
    }()
    /// The HTTP response, one region per chunk.
    static let httpRope: ByteRope = {
        var rope = ByteRope()
        for chunk in HTTPResponse.chunks {
            rope.append(ByteRope(copying: chunk))
        }
        precondition(rope.regionCount == HTTPResponse.chunks.count, "rope.regionCount \(rope.regionCount)")
        precondition(rope.elementsEqual(HTTPResponse.bytes), "rope contents differ from the response")
        return rope
    }()

    // MARK: DispatchData

    nonisolated(unsafe) static let oneByteDispatchData = DispatchData.regions([[0x41]])
    /// 10,000 regions of 100 bytes.
    nonisolated(unsafe) static let manyRegionsDispatchData = DispatchData.regions(Bytes.largeChunks)
    /// One region of 1 MB.
    nonisolated(unsafe) static let oneRegionDispatchData = DispatchData.regions([Bytes.largeContents])
    nonisolated(unsafe) static let httpDispatchData = DispatchData.regions(HTTPResponse.chunks)

    // MARK: Data

    static let oneByteData = Data([0x41])
    static let largeData = Data(Bytes.largeContents)
    static let httpData = Data(HTTPResponse.bytes)

    /// What the region-visiting benchmarks must add up to: Σ (count + first byte) over the 10,000 regions.
    static let regionVisitSum: Int = Bytes.largeChunks.reduce(0) { $0 &+ $1.count &+ Int($1[0]) }
    /// What the random-index benchmarks must add up to.
    static let randomIndexSum: Int = Bytes.randomIndices.reduce(0) { $0 &+ Int(Bytes.largeContents[$1]) }
}
