//===----------------------------------------------------------------------===//
// RingIO — the engine: a group of rings, one per core by default.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization

/// A fixed set of rings, each on its own thread; work is spread over them round-robin.
///
///     let group = try RingLoopGroup(count: 2)
///     let ring = group.next()
///
/// For Swift concurrency, hand out its rings as executor preferences, round-robin:
///
///     Task(executorPreference: group.next().taskExecutor) { … }
///
/// Channels and sources created without a ring use ``shared``, created on first use.
public final class RingLoopGroup: Sendable {
    /// The rings, in order.
    public let rings: [RingLoop]
    private let cursor = Atomic<Int>(0)

    /// Sets up `count` rings.
    ///
    /// - Parameters:
    ///   - count: How many rings (threads); defaults to the number of online cores.
    ///   - entries: Each ring's submission queue size, in ``RingLoop/entriesRange``.
    ///   - backend: The engine the rings run on; `nil` (the default) chooses as
    ///     ``RingLoop/init(entries:receiveBuffers:receiveBufferSize:backend:)`` does.
    /// - Throws: ``RingSetupError`` when a ring cannot be set up; rings already set up are
    ///   shut down again.
    /// - Precondition: `count > 0`.
    public init(
        count: Int = RingLoopGroup.onlineCores,
        entries: UInt32 = 256,
        backend: RingLoop.Backend? = nil
    ) throws(RingSetupError) {
        precondition(count > 0, "RingLoopGroup needs at least one ring")
        var rings: [RingLoop] = []
        rings.reserveCapacity(count)
        for _ in 0..<count {
            do throws(RingSetupError) {
                rings.append(try RingLoop(entries: entries, backend: backend))
            } catch {
                for ring in rings { ring.shutdown() }
                throw error
            }
        }
        self.rings = rings
    }

    /// The engine the rings run on (see ``RingLoop/Backend``): the first ring's; every ring of a
    /// group chooses alike.
    public var backend: RingLoop.Backend {
        self.rings[0].backend
    }

    /// Why the rings run on ``backend`` (see ``RingLoop/backendReason``).
    public var backendReason: String {
        self.rings[0].backendReason
    }

    /// The next ring, round-robin. Any thread; lock-free.
    public func next() -> RingLoop {
        let index = self.cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return self.rings[index % self.rings.count]
    }

    /// Shuts every ring down (see ``RingLoop/shutdown()-4tdzq``), blocking the calling thread until
    /// each has finished; from async code, use `await group.shutdown()`.
    public func shutdown() {
        for ring in self.rings { ring.shutdown() }
    }

    /// Shuts every ring down, and returns once each has finished, suspending the calling task
    /// (as `await ring.shutdown()` does for one ring).
    public func shutdown() async {
        await withDiscardingTaskGroup { group in
            for ring in self.rings {
                group.addTask { await ring.shutdown() }
            }
        }
    }

    /// The number of online cores, at least 1.
    public static var onlineCores: Int {
        _POSIX.onlineProcessorCount
    }

    /// The group that channels and sources use when they are given none: one ring per core,
    /// created on first use and kept for the life of the process.
    ///
    /// - Throws: ``RingSetupError`` when io_uring cannot be set up — on every access, with
    ///   the same error (set-up is attempted once).
    public static var shared: RingLoopGroup {
        get throws(RingSetupError) {
            try _sharedGroup.get()
        }
    }
}

/// Created on first access (Swift globals are initialized lazily and exactly once).
private let _sharedGroup: Result<RingLoopGroup, RingSetupError> = {
    do throws(RingSetupError) {
        return .success(try RingLoopGroup())
    } catch {
        return .failure(error)
    }
}()
