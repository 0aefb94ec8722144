//===----------------------------------------------------------------------===//
// RingIO — example: the connections of one ring, and the timer that sweeps them.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import Synchronization

/// The connections accepted on one ring, and the one timer that checks their timeouts.
///
/// The watchdog of every connection on the ring: a repeating 1-second `IOSource` timer whose
/// tick passes a second to each connection (``HTTPConnection/tick(_:)``), which counts the
/// seconds since its last bytes arrived and since its current request began, and applies the
/// idle and header timeouts. A timeout of T seconds therefore fires between T and T + 1
/// seconds after what it counts from. One timer per ring costs nothing per request, where a
/// strict interval on each channel would arm and cancel a timer in the ring's timer queue
/// around every read and every write (cheap — no syscall — but not free).
///
///     accept ──▶ add(connection)          cleanup handler ──▶ remove(connection)
///                      │
///     timer (ring thread, every second) ──▶ tick(seconds) on every connection
///                                           directly (--queue ring) or on its queue (dispatch)
///
/// Threads: the timer's handler runs on the ring's thread. With `--queue ring` the
/// connections' handlers do too, so the sweep calls each connection directly; with
/// `--queue dispatch` it hands each connection its tick on the connection's serial queue.
/// The registry is locked: connections join on the ring (accept) and leave on their own queue
/// (the channel's cleanup handler), and the server's shutdown reads it from another thread.
final class ConnectionSweeper: Sendable {
    // MARK: Immutable after init
    private let timer: IOSource
    /// Whether connections' handlers run on their own queues (`--queue dispatch`) rather than
    /// on this ring's thread.
    private let hops: Bool

    // MARK: Any thread, via the lock
    private let connections = Mutex<[ObjectIdentifier: HTTPConnection]>([:])

    /// A sweeper for the connections accepted on `ring`; ``start()`` starts its timer.
    ///
    /// - Parameters:
    ///   - ring: The ring whose thread runs the timer's handler.
    ///   - hops: Whether the connections' handlers run on queues of their own.
    init(ring: RingLoop, hops: Bool) {
        self.timer = IOSource.timer(queue: ring, ring: ring)
        self.hops = hops
    }

    /// Starts ticking: every second from now.
    func start() {
        let timer = self.timer
        timer.schedule(after: .seconds(1), repeating: .seconds(1))
        // The handler holds the sweeper and the timer until `stop()` (cancel drops it).
        timer.setEventHandler {
            // More than one when the ring was too busy to take each tick on time.
            self.sweep(seconds: max(1, Int(timer.data)))
        }
        timer.resume()
    }

    /// Stops the timer.
    func stop() {
        self.timer.cancel()
    }

    /// Registers a connection before it starts.
    func add(_ connection: HTTPConnection) {
        self.connections.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    /// Forgets a connection whose channel is cleaned up.
    func remove(_ connection: HTTPConnection) {
        self.connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// The connections registered now.
    var all: [HTTPConnection] {
        self.connections.withLock { Array($0.values) }
    }

    /// Whether no connection is registered.
    var isEmpty: Bool {
        self.connections.withLock { $0.isEmpty }
    }

    /// The timer's tick: `seconds` have passed for every connection.
    private func sweep(seconds: Int) {
        // A copy: a tick may close a connection, whose cleanup removes it (never inside the
        // close call, but with --queue dispatch possibly on another thread meanwhile).
        for connection in self.all {
            if self.hops {
                connection.queue.enqueue { connection.tick(seconds) }
            } else {
                connection.tick(seconds)
            }
        }
    }
}
