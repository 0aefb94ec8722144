//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: every documented precondition traps (exit tests; each one runs
// in a child process, so they are few and each checks one misuse).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A rope of three regions (a tree) of 12 bytes, built inside each exit test's child process.
private func treeRope() -> ByteRope {
    ByteRope(copying: "abcd".utf8) + ByteRope(copying: "efgh".utf8) + ByteRope(copying: "ijkl".utf8)
}

/// Expects the child process's standard error to carry the precondition's message, so that a
/// trap for another reason (or a crash in the test itself) does not pass for the right one.
private func expectMessage(
    _ result: ExitTest.Result?,
    _ message: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit expectation itself already failed
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains(message), "stderr: \(standardError.prefix(300))", sourceLocation: sourceLocation)
}

@Suite("ByteRope: preconditions")
struct ByteRopePreconditionTests {
    @Test("subscript with a negative index traps")
    func subscriptNegative() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let rope = treeRope()
                _ = rope[-1]
            },
            "ByteRope index -1 out of bounds 0..<12"
        )
    }

    @Test("subscript at count traps (one region and tree)")
    func subscriptAtCount() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let rope = ByteRope(copying: "abc".utf8)
                _ = rope[3]
            },
            "ByteRope index 3 out of bounds 0..<3"
        )
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let rope = treeRope()
                _ = rope[rope.count]
            },
            "ByteRope index 12 out of bounds 0..<12"
        )
    }

    @Test("subscript on the empty rope traps")
    func subscriptEmpty() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = ByteRope()[0]
            },
            "ByteRope index 0 out of bounds 0..<0"
        )
    }

    @Test("subrange with a negative lower bound traps")
    func subrangeNegativeLower() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = treeRope().subrange(-1..<2)
            },
            "ByteRope.subrange(-1..<2) out of bounds 0..<12"
        )
    }

    @Test("subrange with an upper bound past count traps")
    func subrangeUpperPastCount() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = treeRope().subrange(10..<13)
            },
            "ByteRope.subrange(10..<13) out of bounds 0..<12"
        )
    }

    @Test("subrange of a partial range beyond count traps")
    func subrangePartialBeyondCount() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = treeRope().subrange(..<13)
            },
            "ByteRope.subrange(0..<13) out of bounds 0..<12"
        )
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = treeRope().subrange(13...)
            },
            "ByteRope.subrange(13...) out of bounds 0..<12"
        )
    }

    @Test("region(containing:) at count, and on the empty rope, traps")
    func regionContainingOutOfBounds() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let rope = treeRope()
                _ = rope.region(containing: rope.count)
            },
            "ByteRope.region(containing: 12) out of bounds 0..<12"
        )
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = ByteRope().region(containing: 0)
            },
            "ByteRope.region(containing: 0) out of bounds 0..<0"
        )
    }

    @Test("regions[i] out of bounds traps")
    func regionsSubscriptOutOfBounds() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let rope = treeRope()
                _ = rope.regions[rope.regionCount]
            },
            "ByteRope.regions index 3 out of bounds 0..<3"
        )
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = treeRope().regions[-1]
            },
            "ByteRope.regions index -1 out of bounds 0..<3"
        )
    }

    @Test("copyBytes(to:from:) with a range past count traps")
    func copyBytesOutOfBounds() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
                _ = treeRope().copyBytes(to: destination, from: 4..<13)
            },
            "ByteRope.copyBytes(to:from: 4..<13) out of bounds 0..<12"
        )
    }

    @Test("exportIOVectors from an offset past count traps")
    func exportOffsetOutOfBounds() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 4)
                _ = treeRope().exportIOVectors(into: vectors, from: 13)
            },
            "ByteRope.exportIOVectors(from: 13) out of bounds"
        )
    }

    @Test("exportIOVectors with fewer owner slots than vectors traps")
    func exportOwnersTooShort() async {
        expectMessage(
            await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 4)
                let owners = UnsafeMutableBufferPointer<Unmanaged<AnyObject>>.allocate(capacity: 3)
                _ = treeRope().exportIOVectors(into: vectors, retainingOwnersInto: owners)
            },
            "owners must be as long as vectors"
        )
    }
}
