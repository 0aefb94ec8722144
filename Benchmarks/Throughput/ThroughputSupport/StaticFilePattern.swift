//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the contents of the static files the HTTP servers serve.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The bytes of the static-file workloads' files: `throughput` writes them, `loadgen
/// --expect-body-pattern` checks every body against them.
///
/// Each 8-byte little-endian word holds its own byte offset XOR ``salt`` (the last word cut
/// short when the size is not a multiple of 8), so a body that is shifted, cut, repeated or
/// taken from another offset differs from the pattern near where it went wrong, and no word
/// is zero (a hole or a zero-filled page shows).
public enum StaticFilePattern {
    /// Mixed into every word, so that offset 0 is not a zero word.
    public static let salt: UInt64 = 0x5249_4E47_494F_0000  // "RINGIO\0\0", big-endian-readable

    /// The first `count` bytes of the pattern.
    public static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0, "a negative size")
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let word = (UInt64(offset) ^ Self.salt).littleEndian
            withUnsafeBytes(of: word) { wordBytes in
                for index in 0..<min(8, count - offset) {
                    bytes[offset + index] = wordBytes[index]
                }
            }
            offset += 8
        }
        return bytes
    }
}
