//===----------------------------------------------------------------------===//
// RingIO — swift-service-lifecycle: a server built on an IOListener or IOAcceptor, as a Service.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// Compiled with the package's ServiceLifecycle trait only (off by default), so that a package
// depending on RingIO resolves swift-service-lifecycle only when it asks for this module:
//
//     .package(name: "RingIO", path: "../RingIO", traits: ["ServiceLifecycle"])
#if ServiceLifecycle
import RingIO
import ServiceLifecycle

/// A server built on a RingIO `IOListener`, as a swift-service-lifecycle `Service`: it
/// serves until the service group shuts down gracefully (a signal such as SIGTERM, another
/// service ending) or the task running it is cancelled, and then shuts the listener down with
/// `IOListener.shutdown(gracePeriod:)` — stop accepting, let each connection's
/// writes in flight finish within the grace period, close the rest. ``run()`` returns once
/// every connection is cleaned up.
///
///     let listener = try IOListener(host: "::", port: 8080, options: options, group: rings)
///     let server = IOListenerService(listener, gracePeriod: .seconds(5)) { connection in
///         for try await data in connection.channel.reads() {
///             try await connection.channel.write(data)
///         }
///     }
///     let group = ServiceGroup(
///         services: [server],
///         gracefulShutdownSignals: [.sigterm, .sigint],
///         logger: logger
///     )
///     try await group.run()
///
/// With an `IOAcceptor` (whose handler serves its connections as they come), use
/// ``init(_:gracePeriod:)``: the service then only ties the acceptor's shutdown to the
/// group's.
///
/// Cancellation shuts the listener down with no grace period: every connection is stopped at
/// once (and, with a connection handler, every connection's task is cancelled).
///
/// This module is a product of its own (`RingIOServiceLifecycle`), compiled with the package's
/// `ServiceLifecycle` trait, so that `RingIO` keeps its small set of dependencies.
public struct IOListenerService: Service {
    private let listener: Listener

    /// The listener served: one handing its connections to `handler`, or one with a handler
    /// of its own.
    fileprivate enum Listener: Sendable {
        case listener(IOListener)
        case acceptor(IOAcceptor)

        /// Starts the listener's shutdown; `completion` runs on the listener's first ring once
        /// every connection is cleaned up.
        func shutdown(gracePeriod: Duration, completion: @escaping @Sendable () -> Void) {
            switch self {
            case .listener(let listener):
                listener.shutdown(gracePeriod: gracePeriod, queue: listener.firstRing, completion: completion)
            case .acceptor(let acceptor):
                acceptor.shutdown(gracePeriod: gracePeriod, queue: acceptor.firstRing, completion: completion)
            }
        }
    }
    private let gracePeriod: Duration
    private let handler: (@Sendable (IOConnection) async throws -> Void)?
    private let executor: (any TaskExecutor)?

    /// A service that serves `listener`'s connections with `handler`
    /// (`IOListener.serve(_:)`: a child task per connection on the ring that accepted
    /// it).
    ///
    /// - Parameters:
    ///   - listener: The listener whose connections `handler` serves.
    ///   - gracePeriod: How long the connections' writes in flight may take once the group
    ///     shuts down gracefully.
    ///   - executor: Where the accepting loop runs (a ring's `taskExecutor`, say); `nil`: the
    ///     global concurrent executor. Each connection's task prefers its own ring either way.
    ///   - handler: Serves one connection; see `IOListener.serve(_:)`.
    public init(
        _ listener: IOListener,
        gracePeriod: Duration,
        executor: (any TaskExecutor)? = nil,
        handler: @escaping @Sendable (IOConnection) async throws -> Void
    ) {
        self.listener = .listener(listener)
        self.gracePeriod = gracePeriod
        self.handler = handler
        self.executor = executor
    }

    /// A service for an `IOAcceptor`, whose handler serves its connections: ``run()`` waits
    /// for the group's graceful shutdown (or cancellation) and shuts the acceptor down.
    ///
    /// - Parameters:
    ///   - acceptor: The acceptor, with its handler.
    ///   - gracePeriod: How long the connections' writes in flight may take once the group
    ///     shuts down gracefully.
    public init(_ acceptor: IOAcceptor, gracePeriod: Duration) {
        self.listener = .acceptor(acceptor)
        self.gracePeriod = gracePeriod
        self.handler = nil
        self.executor = nil
    }

    /// Serves until graceful shutdown or cancellation, then shuts the listener down (with the
    /// grace period, or, when cancelled, none) and returns once every connection is cleaned up
    /// (and, with a connection handler, every connection's task has ended).
    public func run() async {
        let listener = self.listener
        let gracePeriod = self.gracePeriod
        await withDiscardingTaskGroup { group in
            if case .listener(let listener) = listener, let handler = self.handler {
                group.addTask(executorPreference: self.executor) {
                    await listener.serve(handler)
                }
            }
            // The shutdown starts in the handlers, where the group's graceful shutdown and the
            // cancellation are signalled. Not with swift-service-lifecycle's
            // `gracefulShutdown()`: it resumes its waiter through an unstructured task on the
            // global concurrent executor, which a cooperative pool held by blocking work
            // delays for as long as it is held (seen: a minute, in a test run beside
            // synchronous tests).
            let shutdown = _Shutdown(listener)
            await withTaskCancellationHandler {
                await withGracefulShutdownHandler {
                    await shutdown.completed()
                } onGracefulShutdown: {
                    shutdown.begin(gracePeriod: gracePeriod)
                }
            } onCancel: {
                shutdown.begin(gracePeriod: .zero)
            }
        }
    }
}

/// One service run's shutdown: begun once (by the group's graceful shutdown or by the
/// cancellation, whichever comes first), waited for by ``IOListenerService/run()``.
private final class _Shutdown: Sendable {
    private struct State {
        var begun = false
        var finished = false
        var waiter: UnsafeContinuation<Void, Never>?
    }

    private let listener: IOListenerService.Listener
    private let state = _Lock(State())

    init(_ listener: IOListenerService.Listener) {
        self.listener = listener
    }

    /// Starts the listener's shutdown, unless it has started. Any thread; never blocks.
    func begin(gracePeriod: Duration) {
        let first = self.state.withLock { state in
            defer { state.begun = true }
            return !state.begun
        }
        guard first else { return }
        self.listener.shutdown(gracePeriod: gracePeriod) { self.finished() }
    }

    /// Returns once the shutdown has finished.
    func completed() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let finished = self.state.withLock { state in
                if !state.finished { state.waiter = continuation }
                return state.finished
            }
            if finished { continuation.resume() }
        }
    }

    private func finished() {
        let waiter = self.state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
#endif
