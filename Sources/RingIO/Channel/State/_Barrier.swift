//===----------------------------------------------------------------------===//
// RingIO — channels: a barrier and where it runs.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A barrier: its work and where it runs.
internal final class _Barrier {
    let work: @Sendable () -> Void
    let queue: any IOQueue
    var running = false

    init(work: @escaping @Sendable () -> Void, queue: any IOQueue) {
        self.work = work
        self.queue = queue
    }
}
