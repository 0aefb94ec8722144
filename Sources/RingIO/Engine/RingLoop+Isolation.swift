//===----------------------------------------------------------------------===//
// RingIO — the engine: running async code isolated to a ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension RingLoop {
    /// Runs `body` isolated to this ring: on the ring's thread, as a job of its
    /// ``serialExecutor``; every await inside it on a channel of this ring completes there,
    /// in the turn its I/O does, with no hop — and with no task executor preference, which
    /// Swift's runtime looks up at every task switch of a task that has one.
    ///
    ///     Task {
    ///         try await connection.ring.run {
    ///             for try await data in connection.channel.reads() {
    ///                 try await connection.channel.write(data)
    ///             }
    ///         }
    ///     }
    ///
    /// The task hops to the ring once, here, and back once `body` returns. Functions `body`
    /// calls stay on the ring when they are `nonisolated(nonsending)` (or isolated to an actor
    /// on ``serialExecutor``); a plain `nonisolated async` function runs on the global
    /// executor, and each of its awaits on a channel costs a hop each way. Tasks run on one
    /// ring one at a time (an await lets the others run), as handlers do: do not block in
    /// `body`.
    ///
    /// A task that prefers the ring (``taskExecutor``, as ``IOListener/serve(_:)``'s do) runs
    /// its awaits on the ring too, with no hop; the two cost about the same per await.
    ///
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func run<Result: Sendable, Failure: Error>(
        _ body: nonisolated(nonsending) @Sendable () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        try await self.isolation.run(body)
    }
}

/// The actor of a ring: its executor is the ring's serial executor, so code isolated to it
/// runs on the ring thread (``RingLoop/run(_:)``).
internal final actor _RingIsolation {
    private let executor: RingSerialExecutor
    /// How many bodies entered the ring (see `run`).
    private var entered = 0

    init(executor: RingSerialExecutor) {
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }

    func run<Result: Sendable, Failure: Error>(
        _ body: nonisolated(nonsending) @Sendable () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        // Touching the actor's state makes the switch to its executor happen here: a method
        // that touches none may be run where its caller runs (the optimizer drops the hop),
        // and `body` — which runs wherever this method runs — would then not be on the ring.
        self.entered &+= 1
        return try await body()
    }
}
