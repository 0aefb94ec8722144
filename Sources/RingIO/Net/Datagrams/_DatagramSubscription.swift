//===----------------------------------------------------------------------===//
// RingIO — networking: a datagram receive for an async iteration.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// What an iterator of ``IODatagramChannel/datagrams()`` holds: dropping it (the iterator
/// is gone) stops the receive — the channel holds the subscription itself while it delivers.
internal final class _DatagramIteration: Sendable {
    let subscription: _DatagramSubscription

    init(_ subscription: _DatagramSubscription) {
        self.subscription = subscription
    }

    deinit {
        self.subscription.stop()
    }
}

/// One iteration of ``IODatagramChannel/datagrams()``: the datagrams buffered for the
/// iterating task, under a lock.
internal final class _DatagramSubscription: _DatagramReceiver, @unchecked Sendable {
    // @unchecked: `state` is immutable; `buffer` is locked.
    private struct Buffer {
        var datagrams = _FIFO<Datagram>()
        var count = 0
        var end: Errno?
        var waiter: UnsafeContinuation<Result<Datagram, Errno>, Never>?
        var paused = false
        /// Delivered after the end was set: kept for the next iteration.
        var late: [Datagram] = []
    }

    private let state: _DatagramState
    private let buffer = _Lock(Buffer())
    /// The iteration ended (an error, the end, cancellation): stopping is done.
    private let over = Atomic<Bool>(false)

    init(state: _DatagramState) {
        self.state = state
    }

    /// The iterator is gone: the receive stops, unless the iteration ended already.
    func stop() {
        guard !self.over.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.state.stopReceiving(self)
    }

    func attach(to state: _DatagramState) {}

    func deliver(_ datagram: Datagram) -> Bool {
        let (waiter, behind) = self.buffer.withLock {
            buffer -> (UnsafeContinuation<Result<Datagram, Errno>, Never>?, Bool) in
            if let waiter = buffer.waiter {
                buffer.waiter = nil
                return (waiter, false)
            }
            if buffer.end != nil {
                // After this iteration's end (a transient error): the next iteration's.
                buffer.late.append(datagram)
                return (nil, false)
            }
            buffer.datagrams.append(datagram)
            buffer.count += 1
            let behind = buffer.count >= _DatagramBacklog.pauseAt
            if behind { buffer.paused = true }
            return (nil, behind)
        }
        waiter?.resume(returning: .success(datagram))
        return !behind
    }

    func transient(_ error: Errno) {
        // This iteration ends with the error (after the datagrams before it); the next goes on.
        self.finish(error)
    }

    func end(_ error: Errno) {
        self.finish(error)
    }

    private func finish(_ error: Errno) {
        let waiter = self.buffer.withLock { buffer -> UnsafeContinuation<Result<Datagram, Errno>, Never>? in
            if buffer.end == nil { buffer.end = error }
            defer { buffer.waiter = nil }
            return buffer.waiter
        }
        waiter?.resume(returning: .failure(error))
    }

    func takeUndelivered() -> [Datagram] {
        self.buffer.withLock { buffer in
            var taken: [Datagram] = []
            while let datagram = buffer.datagrams.popFirst() { taken.append(datagram) }
            buffer.count = 0
            taken += buffer.late
            buffer.late.removeAll()
            return taken
        }
    }

    /// The next datagram, or the end: at once when there is one, else when it comes.
    func next(isolation: isolated (any Actor)? = #isolation) async -> Result<Datagram, Errno> {
        var resume = false
        let ready: Result<Datagram, Errno>? = self.buffer.withLock { buffer in
            if let datagram = buffer.datagrams.popFirst() {
                buffer.count -= 1
                if buffer.paused && buffer.count <= _DatagramBacklog.resumeAt {
                    buffer.paused = false
                    resume = true
                }
                return .success(datagram)
            }
            if let end = buffer.end { return .failure(end) }
            return nil
        }
        if resume { self.state.resume(self) }
        if let ready {
            if case .failure(let error) = ready { self.ended(by: error) }
            return ready
        }
        let result: Result<Datagram, Errno> = await withUnsafeContinuation(isolation: isolation) { continuation in
            let ready: Result<Datagram, Errno>? = self.buffer.withLock { buffer in
                if let datagram = buffer.datagrams.popFirst() {
                    buffer.count -= 1
                    return .success(datagram)
                }
                if let end = buffer.end { return .failure(end) }
                // The task's cancellation flag is set before its handler runs, and the handler
                // takes this lock: either it is seen here, or the handler sees the waiter.
                if Task.isCancelled {
                    buffer.end = .canceled
                    return .failure(.canceled)
                }
                buffer.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        if case .failure(let error) = result { self.ended(by: error) }
        return result
    }

    /// The iteration ended with `error`: the receive stops (nothing, when the channel ended it).
    private func ended(by error: Errno) {
        self.stop()
    }

    /// The iterating task was cancelled.
    func cancel() {
        let waiter = self.buffer.withLock { buffer -> UnsafeContinuation<Result<Datagram, Errno>, Never>? in
            if buffer.end == nil { buffer.end = .canceled }
            defer { buffer.waiter = nil }
            return buffer.waiter
        }
        waiter?.resume(returning: .failure(.canceled))
    }
}
