//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: how a connect client measures itself.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The measurement a connect client (RingIO's `connect-client`, `nio-server --protocol
/// connect`) makes of itself: it is the process under measurement, and its connections are the
/// operations.
///
/// The client keeps `concurrency` connections under way on its one event-loop thread; each is
/// connect → write `size` bytes → read them back → close, and its end starts the next
/// (``completed(startedAt:)``). ``run(warmup:duration:report:)`` runs on the main thread: the
/// warm-up, then the measured window — connections that end inside it are counted, with their
/// latency; the client's own CPU time (every thread) and the echo server's are read at both
/// ends — then ``stopping`` is set and it waits for every connection under way to end.
///
///     main:        start loops ─ warm-up ─┬─ window (recording) ─┬─ stopping ─ wait ─ report
///     event loop:  connect, write, read, close, next …                       … loopEnded() × N
public final class ConnectMeasurement: @unchecked Sendable {
    // @unchecked: `recording`, `stopping` and `loopsLeft` are atomic and `failure` is locked;
    // `operations` and `histogram` are touched only by the client's event-loop thread while
    // loops run, and by the main thread only after the last loop ended (the semaphore orders
    // the two).

    /// Connections ending now are counted (the measured window). Any thread; relaxed.
    public let recording = Atomic<Bool>(false)
    /// The window is over: start no new connection. Any thread; relaxed.
    public let stopping = Atomic<Bool>(false)
    /// Connections counted in the window (event-loop thread).
    public private(set) var operations = 0
    /// Their latencies, from the start of the connect to the close (event-loop thread).
    public var histogram = LatencyHistogram()
    private let loopsLeft: Atomic<Int>
    private let ended = DispatchSemaphore(value: 0)
    private let failure = Mutex<String?>(nil)

    /// A measurement of `loops` concurrent connect loops.
    public init(loops: Int) {
        self.loopsLeft = Atomic(loops)
    }

    /// One connection ended well: counted when inside the window. Event-loop thread.
    @inline(__always)
    public func completed(startedAt: UInt64) {
        guard self.recording.load(ordering: .relaxed) else { return }
        self.operations += 1
        self.histogram.record(monotonicNanoseconds() &- startedAt)
    }

    /// Whether a loop should start another connection. Any thread.
    @inline(__always)
    public var goesOn: Bool { !self.stopping.load(ordering: .relaxed) }

    /// A loop stopped (asked to, or after a failure). Once per loop.
    public func loopEnded() {
        if self.loopsLeft.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            self.ended.signal()
        }
    }

    /// Something went wrong (a refused connect, a wrong byte…): the run fails with the first
    /// message, and every loop stops. Any thread.
    public func fail(_ message: String) {
        self.failure.withLock { $0 = $0 ?? message }
        self.stopping.store(true, ordering: .relaxed)
    }

    /// The warm-up and the measured window (main thread; the loops run already): the report,
    /// or the failure. `peers`: the echo server's processes, whose CPU time goes in
    /// ``LoadReport/clientCPUSeconds`` (the other side of the measured process).
    public func run(
        warmup: Double,
        duration: Double,
        concurrency: Int,
        size: Int,
        peers: [pid_t]
    ) -> Result<LoadReport, ConnectFailure> {
        _ = self.ended.wait(timeout: .now() + warmup)  // early only when every loop failed
        if let message = self.failure.withLock({ $0 }) {
            self.stopping.store(true, ordering: .relaxed)
            if self.loopsLeft.load(ordering: .acquiring) > 0 { _ = self.ended.wait(timeout: .now() + 30) }
            return .failure(ConnectFailure(message))
        }
        let startClock = monotonicNanoseconds()
        let startCPU = ownCPUSeconds()
        let startPeer = ProcessStats.cpuSeconds(peers)
        self.recording.store(true, ordering: .relaxed)
        _ = self.ended.wait(timeout: .now() + duration)
        self.recording.store(false, ordering: .relaxed)
        let endClock = monotonicNanoseconds()
        let endCPU = ownCPUSeconds()
        let endPeer = ProcessStats.cpuSeconds(peers)
        self.stopping.store(true, ordering: .relaxed)
        if self.loopsLeft.load(ordering: .acquiring) > 0 {
            guard self.ended.wait(timeout: .now() + 30) == .success else {
                return .failure(ConnectFailure("connections still under way 30 s after the window"))
            }
        }
        if let message = self.failure.withLock({ $0 }) { return .failure(ConnectFailure(message)) }
        guard self.operations > 0 else { return .failure(ConnectFailure("no connection completed in the window")) }
        return .success(
            LoadReport(
                mode: "connect",
                connections: concurrency,
                messageSize: size,
                depth: 1,
                seconds: Double(endClock - startClock) / 1e9,
                operations: self.operations,
                bytes: self.operations * size,
                latency: self.histogram.summary(),
                serverCPUSeconds: endCPU - startCPU,
                clientCPUSeconds: endPeer - startPeer
            )
        )
    }
}

/// Why a connect client's run failed.
public struct ConnectFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
