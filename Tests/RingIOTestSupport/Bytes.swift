//===----------------------------------------------------------------------===//
// RingIO — test support: bytes and ropes with known contents, and comparing them.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Bytes

package func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

package func rope(_ text: String) -> ByteRope { ByteRope(copying: text.utf8) }

/// A rope of `count` bytes of `pattern(count, seed:)` made of many regions of varied sizes
/// (1 byte to a few KiB), so that vectored writes have something to do.
package func fragmentedRope(_ count: Int, seed: Int = 0, maxRegion: Int = 4_096) -> ByteRope {
    let source = patternBytes(count, seed: seed)
    var result = ByteRope()
    var offset = 0
    var size = 1
    while offset < source.count {
        let end = min(offset + size, source.count)
        result += ByteRope(copying: source[offset..<end])
        offset = end
        size = size * 7 % maxRegion + 1
    }
    return result
}

package func patternBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var value = UInt8(truncatingIfNeeded: seed &* 31 &+ 7)
        for index in 0..<count {
            buffer[index] = value
            value &+= 31
        }
        initialized = count
    }
}

/// Checks `got == expected` for byte arrays of any size. (A failing `#expect(a == b)` on
/// megabytes makes the testing library compute a diff, which takes minutes.)
package func expectSameBytes(
    _ got: [UInt8],
    _ expected: [UInt8],
    _ what: String = "bytes",
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard got != expected else { return }
    let firstDifference = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
    Issue.record(
        "\(what) differ: got \(got.count) bytes, expected \(expected.count); first difference at \(firstDifference.map(String.init) ?? "the end of the shorter")",
        sourceLocation: sourceLocation
    )
}

/// `count` bytes of a pattern that does not repeat at short distances.
package func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 31 &+ 7) }
}

// MARK: - Reproducible randomness

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully determined by its seed, so a
/// failing randomized test is reproduced by its printed seed.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) {
        self.state = seed
    }

    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: - Exit tests

/// Writes `message` and a newline to the standard error: what an exit test's child says
/// before it exits with a failure (the parent observes `\.standardErrorContent`).
package func printToStandardError(_ message: String) {
    let line = Array("\(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Expects an exit test's child to have written `message` to its standard error: a trap for
/// another reason (or a crash in the test itself) does not pass for the right one. Observe
/// `\.standardErrorContent` in the `#expect(processExitsWith:)` for it.
package func expectStandardError(
    _ result: ExitTest.Result?,
    contains message: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit expectation itself already failed
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains(message), "stderr: \(standardError.prefix(300))", sourceLocation: sourceLocation)
}
