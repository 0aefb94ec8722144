//===----------------------------------------------------------------------===//
// RingIO — channels: the ropes of one reads() iteration.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// The ropes of one `reads()` iteration, between its operation (on the ring thread) and the
/// iterating task (anywhere), under a lock.
internal final class _AsyncReadStream: Sendable {
    private struct State {
        /// Delivered and not yet taken, from `head` on.
        var ropes: [ByteRope] = []
        var head = 0
        /// `.some(nil)` once the read ended (EOF, length); `.some(error)` when it failed.
        var end: Errno?? = nil
        /// The task waiting for a rope or the end.
        var waiter: UnsafeContinuation<Void, Never>?

        var hasNext: Bool { self.head < self.ropes.count || self.end != nil }

        /// Takes the next rope or the end. The end is produced once: after an error, `nil`.
        mutating func takeNext() -> Result<ByteRope?, Errno> {
            if self.head < self.ropes.count {
                let rope = self.ropes[self.head]
                self.ropes[self.head] = ByteRope()  // its receive buffers go back once used
                self.head += 1
                if self.head == self.ropes.count {
                    self.ropes.removeAll(keepingCapacity: true)
                    self.head = 0
                }
                return .success(rope)
            }
            if case .some(.some(let error)) = self.end {
                self.end = .some(nil)
                return .failure(error)
            }
            return .success(nil)
        }
    }

    private let state = _Lock(State())
    /// The iteration's idle timeout, told of each arrival; `nil` without one.
    let idleWatch: _IdleWatch?

    init(idleWatch: _IdleWatch? = nil) {
        self.idleWatch = idleWatch
    }

    /// The operation's handler call. Ring thread. Bytes join the last rope not yet taken when
    /// they fit under `mergeLimit` (the high water mark); a tick of a strict interval is an
    /// empty rope of its own; the final call's bytes (R34) come before the end.
    func operationDelivered(done: Bool, data: ByteRope?, error: Errno?, mergeLimit: Int) {
        if let idleWatch = self.idleWatch, let data, !data.isEmpty { idleWatch.arrived() }
        let waiter: UnsafeContinuation<Void, Never>? = self.state.withLock { state in
            if let data, !data.isEmpty {
                let last = state.ropes.count - 1
                if last >= state.head && !state.ropes[last].isEmpty
                    && state.ropes[last].count <= mergeLimit - data.count
                {
                    state.ropes[last].append(data)
                } else {
                    state.ropes.append(data)
                }
            } else if let data, !done {
                state.ropes.append(data)  // a tick
            }
            if done { state.end = .some(error) }
            guard state.hasNext, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// The next rope or the end when one is there; `nil` when the iteration must wait.
    func take() -> Result<ByteRope?, Errno>? {
        self.state.withLock { state in
            state.hasNext ? state.takeNext() : nil
        }
    }

    /// Resumes `continuation` when a rope or the end is there: now, or at the next delivery.
    func wait(_ continuation: UnsafeContinuation<Void, Never>) {
        let ready: Bool = self.state.withLock { state in
            if state.hasNext { return true }
            state.waiter = continuation
            return false
        }
        if ready { continuation.resume() }
    }

    /// Whether the read has ended (its final call came).
    var hasEnded: Bool {
        self.state.withLock { $0.end != nil }
    }
}
