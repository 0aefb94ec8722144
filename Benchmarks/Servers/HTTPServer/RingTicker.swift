//===----------------------------------------------------------------------===//
// RingIO — benchmark server: the one-second ticks of a ring's TLS connections.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization

/// The clock of the header and idle timeouts of the TLS connections a ring accepted: one
/// repeating one-second timer per ring, which ticks every connection subscribed, rather than
/// a timer per connection (a TLS stream has no delivery interval to tick it, as a plaintext
/// channel's read does).
///
/// A timer per connection was five allocations and about 3,700 instructions per connection
/// (made, armed, cancelled, freed); a subscription is one allocation, an append and a
/// swap-remove. The ticks of a connection are not aligned on its accept: its first comes
/// within a second, and a timeout of T ticks still fires between T and T + 1 seconds after
/// what it counts from (see ``HTTPConnection``).
///
/// A cancelled subscription leaves at once (from another thread, on the ring's next turn), and
/// lets go of its connection then: the ticker never holds closed connections until a tick.
/// The timer runs while connections are subscribed: it stops at a tick that finds none, and
/// starts again with the next subscription.
final class RingTicker: @unchecked Sendable {
    // @unchecked: `subscriptions` and `timer` are touched on `ring`'s thread only (`subscribe`
    // asserts it; the ticks and removals run there).

    /// One connection's ticks, from ``RingTicker/subscribe(_:reader:)`` until it is cancelled.
    final class Subscription: @unchecked Sendable {
        // @unchecked: `reader` and `index` are touched on the ring's thread only (subscribing,
        // ticking, removing); `cancelled` is an atomic, set from the connection's queue.

        fileprivate let ticker: RingTicker
        // @exclusivity(unchecked) (here and on the ticker's state): confined to the ring's
        // thread, never accessed inout across a call that could reach it again; Swift's dynamic
        // exclusivity check costs a thread-local lookup per access.
        @exclusivity(unchecked) fileprivate var reader: (any HTTPReader)?
        /// Its place in the ticker's `subscriptions`; -1 when it is not there.
        @exclusivity(unchecked) fileprivate var index = -1
        /// The connection's DispatchQueue (`--queue dispatch`): its ticks are sent there. `nil`:
        /// the connection runs on the ring, and is ticked in place.
        fileprivate let dispatchQueue: DispatchQueue?
        fileprivate let cancelled = Atomic<Bool>(false)

        /// A subscription to `ticker` for a connection whose handlers run on `queue`: the ring,
        /// or a DispatchQueue.
        init(_ ticker: RingTicker, queue: any IOQueue) {
            self.ticker = ticker
            self.dispatchQueue = queue as? DispatchQueue
        }

        /// No tick from now on (any thread): the subscription leaves the ticker, and lets go of
        /// the connection, now on the ring's thread, else on its next turn.
        func cancel() {
            guard !self.cancelled.exchange(true, ordering: .relaxed) else { return }
            let ticker = self.ticker
            if ticker.ring.isCurrentThread {
                ticker.remove(self)
            } else {
                ticker.ring.enqueue { ticker.remove(self) }
            }
        }
    }

    let ring: RingLoop
    @exclusivity(unchecked) private var subscriptions: [Subscription] = []
    @exclusivity(unchecked) private var timer: IOSourceTimer?

    init(ring: RingLoop) {
        self.ring = ring
    }

    /// Ticks `reader` once a second, on the subscription's queue, until the subscription is
    /// cancelled. Call on the ring's thread, once per subscription.
    func subscribe(_ subscription: Subscription, reader: any HTTPReader) {
        precondition(self.ring.isCurrentThread, "RingTicker.subscribe: off its ring's thread")
        guard !subscription.cancelled.load(ordering: .relaxed) else { return }
        subscription.reader = reader
        subscription.index = self.subscriptions.count
        self.subscriptions.append(subscription)
        if self.timer == nil {
            let timer = IOSource.makeTimerSource(queue: self.ring, ring: self.ring)
            timer.schedule(after: .seconds(1), repeating: .seconds(1))
            // Strong: cancelled once no connection is left, which lets go of the handler.
            timer.setEventHandler { self.tick() }
            timer.resume()
            self.timer = timer
        }
    }

    /// Takes `subscription` out (the last one takes its place). Ring thread.
    private func remove(_ subscription: Subscription) {
        let index = subscription.index
        guard index >= 0 else { return }
        let last = self.subscriptions.removeLast()
        if last !== subscription {
            self.subscriptions[index] = last
            last.index = index
        }
        subscription.index = -1
        subscription.reader = nil
    }

    /// A second has passed: ticks every connection subscribed.
    private func tick() {
        if self.subscriptions.isEmpty {
            self.timer?.cancel()
            self.timer = nil
            return
        }
        // A copy: a tick may cancel subscriptions, which leave the array at once.
        let current = self.subscriptions
        for subscription in current where !subscription.cancelled.load(ordering: .relaxed) {
            guard let reader = subscription.reader else { continue }
            if let queue = subscription.dispatchQueue {
                queue.async {
                    guard !subscription.cancelled.load(ordering: .relaxed) else { return }
                    reader.tick()
                }
            } else {
                reader.tick()
            }
        }
    }
}
