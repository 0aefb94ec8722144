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
