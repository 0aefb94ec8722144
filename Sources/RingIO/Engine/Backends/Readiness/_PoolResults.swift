//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: results the blocking pool posts back.
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

/// Results the pool posted for one engine, and the eventfd that wakes it.
internal final class _PoolResults: Sendable {
    private let wakeFD: CInt
    private let state = _Lock<(done: [_ReadyOp], closed: Bool)>(([], false))

    init(wakeFD: CInt) {
        self.wakeFD = wakeFD
    }

    func post(_ op: _ReadyOp) {
        let wake = self.state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.done.append(op)
            return state.done.count == 1
        }
        if wake { _EventFD.signal(self.wakeFD) }
    }

    func take() -> [_ReadyOp]? {
        self.state.withLock { state -> [_ReadyOp]? in
            guard !state.done.isEmpty else { return nil }
            let done = state.done
            state.done = []
            return done
        }
    }

    func close() {
        self.state.withLock { $0.closed = true }
    }
}
