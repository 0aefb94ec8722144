//===----------------------------------------------------------------------===//
// RingIO — tests of the liburing shim and the module surface.
//===----------------------------------------------------------------------===//

import RingIO
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

    @Test("liburing sets up a ring through the shim, or names the kernel's refusal")
    func ringSetUp() {
        if let error = _RingIOTesting.ringSetUpError() {
            // Where io_uring is unavailable the kernel answers with one of these; anything
            // else means the shim or our call is wrong.
            #expect([Errno.noFunction, .notPermitted, .noMemory].contains(error.errno))
        }
    }
}
