//===----------------------------------------------------------------------===//
// RingIO — the engine's POSIX layer: the clocks of timeouts and turns.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Clocks

/// The clocks of absolute timeouts.
internal enum _Clock {
    /// Now, in nanoseconds: CLOCK_MONOTONIC, or CLOCK_REALTIME when `realtime`. The
    /// corresponding C function is `clock_gettime`.
    internal static func nanoseconds(realtime: Bool) -> Int64 {
        self.read(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC)
    }

    /// Now, in nanoseconds, from CLOCK_MONOTONIC_COARSE: a few nanoseconds to read (no
    /// hardware counter), advancing once per kernel tick (1–10 ms). For measuring how long a
    /// ring turn ran, where only long turns matter.
    internal static func coarseNanoseconds() -> Int64 {
        self.read(CLOCK_MONOTONIC_COARSE)
    }

    @inline(__always)
    private static func read(_ clock: clockid_t) -> Int64 {
        var now = timespec()
        // Fails only for a clock the kernel does not have (EINVAL): these three are in every
        // kernel io_uring runs on.
        precondition(clock_gettime(clock, &now) == 0, "RingIO: clock_gettime(\(clock)) failed")
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
