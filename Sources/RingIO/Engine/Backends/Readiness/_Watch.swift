//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: a descriptor registered with epoll.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A descriptor registered with epoll, and the requests waiting for it.
internal final class _Watch {
    let generation: UInt32
    /// epoll reported a hang-up, the peer's half-close or an error: it stays.
    var peerClosed = false
    /// A stream socket (its short reads mean "empty"); `nil` until asked.
    var isStreamSocket: Bool?
    /// EPOLLOUT is in the registration (added when a writer first waits: readers alone would
    /// be woken by every edge of the other side's reads).
    var watchesOutput = false
    var readers: ContiguousArray<_ReadyOp> = []
    var writers: ContiguousArray<_ReadyOp> = []

    /// Its epoll data: the descriptor and the generation.
    let token: UInt64

    init(generation: UInt32, token: UInt64) {
        self.generation = generation
        self.token = token
    }
}
