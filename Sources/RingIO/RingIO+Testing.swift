//===----------------------------------------------------------------------===//
// RingIO — hooks for the test suites.
//===----------------------------------------------------------------------===//

import SystemPackage

/// Test hooks: package-visible, not public API.
package enum _RingIOTesting {
    /// Sets up and tears down one io_uring instance; throws the `Errno` the kernel gave.
    package static func probeRingSetUp() throws(Errno) {
        try Syscalls.probeRingSetUp()
    }
}
