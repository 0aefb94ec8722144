//===----------------------------------------------------------------------===//
// RingIO — networking: a datagram channel's counts.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A datagram channel's counts.
internal final class _DatagramCounters: Sendable {
    let received = Atomic<UInt64>(0)
    let truncated = Atomic<UInt64>(0)
    let fallbackReceives = Atomic<UInt64>(0)
    let kernelDrops = Atomic<UInt64>(0)
    let sent = Atomic<UInt64>(0)

    func snapshot() -> IODatagramChannel.Statistics {
        IODatagramChannel.Statistics(
            received: self.received.load(ordering: .relaxed),
            truncated: self.truncated.load(ordering: .relaxed),
            fallbackReceives: self.fallbackReceives.load(ordering: .relaxed),
            kernelDrops: self.kernelDrops.load(ordering: .relaxed),
            sent: self.sent.load(ordering: .relaxed)
        )
    }
}
