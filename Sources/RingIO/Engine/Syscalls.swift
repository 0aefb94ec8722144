//===----------------------------------------------------------------------===//
// RingIO — the engine's syscall layer: the only file that calls liburing.
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

/// Thin wrappers over liburing. liburing returns `-errno` and does not set `errno`; each
/// wrapper turns that into a thrown `Errno` at once.
internal enum Syscalls {
    /// Sets up an io_uring instance of `entries` submission entries and tears it down again:
    /// whether this process may use io_uring at all.
    ///
    /// The corresponding liburing calls are `io_uring_queue_init` and `io_uring_queue_exit`.
    ///
    /// - Throws: `Errno.noFunction` (ENOSYS) on kernels without io_uring;
    ///   `Errno.notPermitted` (EPERM) when `kernel.io_uring_disabled` or a seccomp profile
    ///   forbids it; `Errno.noMemory` when the locked-memory limit is too low.
    @inline(never)
    internal static func probeRingSetUp(entries: UInt32 = 2) throws(Errno) {
        var ring = io_uring()
        let result = io_uring_queue_init(entries, &ring, 0)
        guard result == 0 else { throw Errno(rawValue: -result) }
        io_uring_queue_exit(&ring)
    }
}
