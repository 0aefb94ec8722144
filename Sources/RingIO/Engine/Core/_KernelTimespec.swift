//===----------------------------------------------------------------------===//
// RingIO — the engine: a timespec at a stable address, for timeouts.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A `__kernel_timespec` at a stable address, for timeout operations.
// @unchecked: immutable after init, except through `reset`, which its one owner calls on its
// own thread while no prepared entry refers to it; the kernel only reads it.
package final class _KernelTimespec: @unchecked Sendable {
    internal let pointer: UnsafeMutablePointer<__kernel_timespec>

    /// A duration, or an absolute time on a clock, in nanoseconds.
    package init(nanoseconds: Int64) {
        self.pointer = .allocate(capacity: 1)
        self.pointer.initialize(to: Self.timespec(nanoseconds))
    }

    /// Sets a new time, for reuse. Only while no prepared entry that is not yet submitted
    /// refers to it: the kernel copies the time when it takes the entry (a timeout's
    /// `io_timeout_prep`), not later.
    internal func reset(nanoseconds: Int64) {
        self.pointer.pointee = Self.timespec(nanoseconds)
    }

    private static func timespec(_ nanoseconds: Int64) -> __kernel_timespec {
        __kernel_timespec(tv_sec: nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
    }

    deinit {
        self.pointer.deallocate()
    }
}
