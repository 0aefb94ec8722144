//===----------------------------------------------------------------------===//
// RingIO — networking: where a datagram channel's receive delivers — handlers, or tasks.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

extension IODatagramChannel {
    /// The datagrams the channel receives, as an `AsyncSequence` that runs until the channel
    /// is closed (then it throws `Errno.canceled`) or an error ends it.
    ///
    ///     for try await datagram in channel.datagrams() {
    ///         try await channel.send(datagram.data, to: datagram.source)
    ///     }
    ///
    /// The receive starts with the first `next()`. When the iterating task runs on the
    /// channel's ring (it prefers ``RingLoop/taskExecutor``), a `next()` that waits resumes
    /// on the ring thread, with no hop. Datagrams are buffered until the iteration takes them;
    /// 1,024 behind, the receive pauses (see ``IODatagramChannel``).
    ///
    /// An error the receive goes on after — ECONNREFUSED on a connected channel — is thrown
    /// by `next()` and ends this iteration; iterate again to go on. Ending the iteration
    /// (`break`, an error, dropping the iterator, cancelling the task: `Errno.canceled`) stops
    /// the receive; datagrams the kernel already received for it are kept for the next one.
    public func datagrams() -> Datagrams {
        Datagrams(channel: self)
    }

    /// The next datagram: ``datagrams()``, for one.
    ///
    /// - Throws: `Errno.canceled` when the task is cancelled, the channel is closed or its
    ///   ring shuts down; ECONNREFUSED on a connected channel whose peer refused; the error
    ///   that ended the receive.
    public func receive(isolation: isolated (any Actor)? = #isolation) async throws(Errno) -> Datagram {
        var iterator = self.datagrams().makeAsyncIterator()
        guard let datagram = try await iterator.next(isolation: isolation) else { throw Errno.canceled }
        return datagram
    }

    /// The datagrams a channel receives; see ``IODatagramChannel/datagrams()``.
    public struct Datagrams: AsyncSequence, Sendable {
        public typealias Element = Datagram
        public typealias Failure = Errno

        let channel: IODatagramChannel

        public func makeAsyncIterator() -> Iterator {
            Iterator(channel: self.channel)
        }

        /// Produces the datagrams.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = Datagram
            public typealias Failure = Errno

            private let channel: IODatagramChannel
            private var iteration: _DatagramIteration?
            private var ended = false

            init(channel: IODatagramChannel) {
                self.channel = channel
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(Errno) -> Datagram? {
                guard !self.ended else { return nil }
                if self.iteration == nil {
                    let subscription = _DatagramSubscription(state: self.channel.state)
                    self.iteration = _DatagramIteration(subscription)
                    self.channel.state.startReceiving(subscription)
                }
                let subscription = self.iteration!.subscription
                let result: Result<Datagram, Errno> = await withTaskCancellationHandler(
                    operation: {
                        await subscription.next(isolation: actor)
                    },
                    onCancel: {
                        subscription.cancel()
                    },
                    isolation: actor
                )
                switch result {
                case .success(let datagram):
                    return datagram
                case .failure(let error):
                    self.ended = true
                    self.iteration = nil
                    throw error
                }
            }

            public mutating func next() async throws(Errno) -> Datagram? {
                try await self.next(isolation: nil)
            }
        }
    }
}

/// Where a datagram channel's receive delivers: called on the channel's ring thread.
internal protocol _DatagramReceiver: AnyObject, Sendable {
    /// The channel it receives for; set before it starts.
    func attach(to state: _DatagramState)
    /// A datagram. Returns false when the receiver is now behind: the receive pauses until it
    /// calls ``_DatagramState/resume(_:)``.
    func deliver(_ datagram: Datagram) -> Bool
    /// An error the receive goes on after (ECONNREFUSED).
    func transient(_ error: Errno)
    /// The end: the last call (ring thread, or any thread once the ring is gone).
    func end(_ error: Errno)
    /// The datagrams delivered and not taken, when the receiver stops early (ring thread).
    func takeUndelivered() -> [Datagram]
}

/// How far behind a receiver may fall before the receive pauses, and where it resumes.
internal enum _DatagramBacklog {
    static let pauseAt = 1_024
    static let resumeAt = 512
}

/// The receiver of ``IODatagramChannel/receive(queue:handler:)``: calls the handler on the
/// ring thread directly when its queue is the ring, else through one job per batch on its
/// queue (the calls queued in order under a lock, one drainer at a time).
internal final class _DatagramHandlerReceiver: _DatagramReceiver, _RingRunnable, @unchecked Sendable {
    // @unchecked: `state` is set once before the receiver starts (ordered by the ring's
    // inbox); `calls` is locked; `draining` is touched by the one running drain.
    private enum Call {
        case datagram(Datagram)
        case error(Errno)
        case end(Errno)
    }

    private let queue: any IOQueue
    private let isRing: Bool
    private let handler: @Sendable (Bool, Datagram?, Errno?) -> Void
    private weak var state: _DatagramState?
    /// Calls not yet run, and whether a drain is scheduled or running.
    private let calls = _Lock<(pending: [Call], scheduled: Bool, paused: Bool)>(([], false, false))
    private var draining: [Call] = []

    init(queue: any IOQueue, isRing: Bool, handler: @escaping @Sendable (Bool, Datagram?, Errno?) -> Void) {
        self.queue = queue
        self.isRing = isRing
        self.handler = handler
    }

    func attach(to state: _DatagramState) {
        self.state = state
    }

    func deliver(_ datagram: Datagram) -> Bool {
        if self.isRing {
            self.handler(false, datagram, nil)
            return true
        }
        return self.enqueue(.datagram(datagram))
    }

    func transient(_ error: Errno) {
        if self.isRing {
            self.handler(false, nil, error)
        } else {
            _ = self.enqueue(.error(error))
        }
    }

    func end(_ error: Errno) {
        if self.isRing, self.state?.core.isRingThread ?? false {
            self.handler(true, nil, error)
        } else {
            _ = self.enqueue(.end(error))
        }
    }

    func takeUndelivered() -> [Datagram] { [] }  // a handler receive stops only at the end

    /// Queues a call; returns false when the queue is now too far behind.
    private func enqueue(_ call: Call) -> Bool {
        let (schedule, behind) = self.calls.withLock { calls -> (Bool, Bool) in
            calls.pending.append(call)
            let schedule = !calls.scheduled
            calls.scheduled = true
            let behind = calls.pending.count >= _DatagramBacklog.pauseAt
            if behind { calls.paused = true }
            return (schedule, behind)
        }
        if schedule {
            if let core = self.state?.core, core.isRingThread {
                core.deliver(self, on: self.queue)
            } else {
                self.queue.enqueue { self.runDelivered() }
            }
        }
        return !behind
    }

    /// Runs the queued calls, on the handler's queue.
    func runDelivered() {
        while true {
            let resume = self.calls.withLock { calls -> Bool? in
                guard !calls.pending.isEmpty else {
                    calls.scheduled = false
                    return nil
                }
                swap(&calls.pending, &self.draining)
                let resume = calls.paused
                calls.paused = false
                return resume
            }
            guard let resume else { return }
            if resume { self.state?.resume(self) }
            for call in self.draining {
                switch call {
                case .datagram(let datagram): self.handler(false, datagram, nil)
                case .error(let error): self.handler(false, nil, error)
                case .end(let error): self.handler(true, nil, error)
                }
            }
            self.draining.removeAll(keepingCapacity: true)
        }
    }
}

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
