//===----------------------------------------------------------------------===//
// RingIO — tests of the liburing shim and the module surface.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

@Suite("RingIO module")
struct ShimTests {
    @Test("import RingIO re-exports ByteRope")
    func reexportsByteRope() {
        let rope = ByteRope(copying: "ring".utf8) + ByteRope(copying: "io".utf8)
        #expect(Array(rope) == Array("ringio".utf8))
        #expect(rope.regionCount == 2)
    }

    @Test("liburing sets up a ring through the shim, with the sizes asked", .enabled(if: ringIsAvailable))
    func ringSetUp() throws {
        let ring = try RingLoop(entries: 4)
        defer { ring.shutdown() }
        #expect(ring.setup.submissionEntries == 4)
        #expect(ring.setup.completionEntries == 16)
        let ran = DispatchSemaphore(value: 0)
        let onRing = Atomic<Bool>(false)
        ring.enqueue {
            onRing.store(ring.isCurrentThread, ordering: .relaxed)
            ran.signal()
        }
        #expect(wait(ran))
        let ranOnRing = onRing.load(ordering: .relaxed)
        #expect(ranOnRing)
    }

    @Test("where io_uring is refused, the error is one the kernel gives for that", .enabled(if: !ringIsAvailable))
    func ringRefused() throws {
        // Anything else means the shim or our call is wrong.
        let error = try #require(ringSetUpError)
        #expect([Errno.noFunction, .notPermitted, .noMemory].contains(error.errno))
    }
}
