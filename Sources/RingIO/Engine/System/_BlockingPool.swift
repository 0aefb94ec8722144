//===----------------------------------------------------------------------===//
// RingIO — the engine: threads of RingIO's own for the calls that block.
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

/// A small process-wide pool of threads for the calls that block: regular-file I/O the page
/// cache cannot serve, opens, splices from files (``shared``); host name resolution
/// (``resolver``, a pool of its own, so that a slow DNS server never delays a file read). At
/// most `limit` threads each, started on demand; they stay for the life of the process. Its
/// threads are its own: no busy Dispatch queue or cooperative pool delays them.
internal final class _BlockingPool: Sendable {
    static let shared = _BlockingPool(limit: 4)
    static let resolver = _BlockingPool(limit: 4)

    /// A job: a readiness engine's request, or a closure.
    private enum Job {
        case request(_ReadyOp, _PoolResults)
        case closure(@Sendable () -> Void)
    }

    private let limit: Int
    private let state = _Lock<(jobs: [Job], head: Int, threads: Int, idle: Int)>(([], 0, 0, 0))
    private let available = DispatchSemaphore(value: 0)

    private init(limit: Int) {
        self.limit = limit
    }

    func run(_ op: _ReadyOp, results: _PoolResults) {
        self.run(.request(op, results))
    }

    /// Runs `work` on a thread of the pool.
    func run(_ work: @escaping @Sendable () -> Void) {
        self.run(.closure(work))
    }

    private func run(_ job: Job) {
        enum Action { case signal, start, none }
        let action = self.state.withLock { state -> Action in
            state.jobs.append(job)
            if state.idle > 0 {
                state.idle -= 1
                return .signal
            }
            guard state.threads < self.limit else { return .none }  // a busy thread takes it next
            state.threads += 1
            return .start
        }
        switch action {
        case .signal:
            self.available.signal()
        case .none:
            break
        case .start:
            let context = Unmanaged.passRetained(self).toOpaque()
            do throws(Errno) {
                let thread = try _POSIX.startThread(context: context) { context in
                    let pool = Unmanaged<_BlockingPool>.fromOpaque(context!).takeRetainedValue()
                    // As io_uring's workers: no signal interrupts a call (EINTR) or runs here.
                    _POSIX.blockAllSignals()
                    pool.work(once: false)
                    return nil
                }
                _POSIX.detach(thread)
            } catch {
                Unmanaged<_BlockingPool>.fromOpaque(context).release()
                let none = self.state.withLock { state -> Bool in
                    state.threads -= 1
                    return state.threads == 0
                }
                // No thread could start: with none at all, the job runs here rather than wait
                // forever; otherwise a running thread takes it.
                if none { self.work(once: true) }
            }
        }
    }

    private func work(once: Bool) {
        while true {
            let job = self.state.withLock { state -> Job? in
                guard state.head < state.jobs.count else {
                    if !once { state.idle += 1 }  // under the lock: `run` signals it from now on
                    return nil
                }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return job
            }
            guard let job else {
                if once { return }
                self.available.wait()
                continue
            }
            switch job {
            case .request(let op, let results):
                if op.pool.compareExchange(
                    expected: _ReadyOp.poolQueued,
                    desired: _ReadyOp.poolRunning,
                    ordering: .relaxed
                ).exchanged {
                    op.poolResult = op.runBlocking()
                    results.post(op)
                }
            case .closure(let work):
                work()
            }
        }
    }
}
