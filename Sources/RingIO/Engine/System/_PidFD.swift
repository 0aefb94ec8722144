//===----------------------------------------------------------------------===//
// RingIO — the engine's POSIX layer: pidfds.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - pidfd

/// Process descriptors, for process-exit sources.
internal enum _PidFD {
    /// A close-on-exec descriptor that becomes readable when process `pid` exits. The
    /// corresponding C call is `pidfd_open(pid, 0)`.
    ///
    /// - Throws: `ESRCH` when there is no such process; `EMFILE`, `ENFILE`, `ENOMEM`.
    internal static func open(_ pid: pid_t) throws(Errno) -> CInt {
        let fd = CLiburing_pidfd_open(pid)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        return fd
    }
}
