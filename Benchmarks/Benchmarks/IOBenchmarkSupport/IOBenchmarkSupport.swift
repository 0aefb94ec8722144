//===----------------------------------------------------------------------===//
// RingIO — benchmarks: what the I/O benchmark targets share.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Benchmark
import Dispatch
import RingIO

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Configurations

/// An I/O benchmark's configuration: wall clock, throughput, allocations and CPU time per
/// operation, all reported and none checked (time is a report, Benchmarks/README.md). Only the
/// ByteRope benchmarks have checked thresholds; no I/O benchmark name may match `.*_ByteRope.*`.
///
/// The CPU time is ``MetricName/cpuNanosecondsPerOperation`` (recorded by
/// ``registerIOBenchmark(_:configuration:make:body:)``), not package-benchmark's `cpuTotal`,
/// which counts in 10 ms ticks: too coarse for iterations of a few milliseconds.
///
/// - Parameters:
///   - scalingFactor: Operations per measured iteration; the table divides by it (rows marked `*`).
///   - extraMetrics: Further custom metrics the benchmark records itself (``MetricName``).
public func reportedIO(
    scalingFactor: BenchmarkScalingFactor = .one,
    warmupIterations: Int = 1,
    maxDuration: Duration = .seconds(2),
    maxIterations: Int = 1_000,
    extraMetrics: [BenchmarkMetric] = []
) -> Benchmark.Configuration {
    let metrics: [BenchmarkMetric] =
        [.wallClock, .throughput, .mallocCountTotal, MetricName.cpuNanosecondsPerOperation] + extraMetrics
    return .init(
        metrics: metrics,
        warmupIterations: warmupIterations,
        scalingFactor: scalingFactor,
        maxDuration: maxDuration,
        maxIterations: maxIterations,
        thresholds: Dictionary(uniqueKeysWithValues: metrics.map { ($0, BenchmarkThresholds.none) })
    )
}

/// As ``reportedIO(scalingFactor:warmupIterations:maxDuration:maxIterations:extraMetrics:)``,
/// with the malloc count *checked*: its p90 must equal the stored threshold within 2% (an
/// engine benchmark's count per operation is deterministic when one thread does all the work —
/// a no-op chain, a ping-pong on one ring — and the 2% absorbs a rare extra allocation, never
/// one more per operation). Names of checked I/O benchmarks are listed in
/// `run-threshold-check.sh`'s filter; wall clock and CPU time stay reports.
public func checkedIO(scalingFactor: BenchmarkScalingFactor = .one) -> Benchmark.Configuration {
    var configuration = reportedIO(scalingFactor: scalingFactor)
    configuration.thresholds?[.mallocCountTotal] = .init(relative: [.p90: 2], absolute: [:])
    return configuration
}

/// Custom metrics the I/O benchmarks record with `benchmark.measurement(_:_:)`, one value per
/// measured iteration, already per operation or per second (never divided again by the
/// scaling factor).
public enum MetricName {
    /// CPU time of the whole process (every thread: the benchmark's, the rings', dispatch's
    /// workers) per operation, in nanoseconds, from `CLOCK_PROCESS_CPUTIME_ID`.
    public static let cpuNanosecondsPerOperation = BenchmarkMetric.custom(
        "CPU ns per op (all threads)",
        polarity: .prefersSmaller,
        useScalingFactor: false
    )

    /// Payload megabytes (10⁶ bytes, as fio's "MB/s") per second of wall clock in the iteration.
    public static let megabytesPerSecond = BenchmarkMetric.custom(
        "MB/s",
        polarity: .prefersLarger,
        useScalingFactor: false
    )
}

// MARK: - Fixtures built in setup

/// Resources a benchmark opens in its setup and releases in its teardown.
///
/// Every benchmark process registers every benchmark of its target, then runs one: nothing
/// (no ring, no descriptor, no file) may be created at registration.
public protocol IOFixture: AnyObject {
    /// Releases everything; called once, from the benchmark's teardown.
    func tearDown()
}

/// Holds a benchmark's fixture between its setup, its iterations and its teardown, which
/// package-benchmark runs one after another (never concurrently).
private final class _FixtureBox<Fixture: IOFixture> {
    var fixture: Fixture?
}

/// Registers a benchmark whose fixture is made by `make` in the setup, handed to `body` in each
/// iteration (warm-up included), and torn down in the teardown. Records the process's CPU time
/// per operation (``MetricName/cpuNanosecondsPerOperation``) around each call of `body`.
///
/// - Parameters:
///   - make: Builds the fixture. It runs outside every measurement, and may check its work
///     (a failed check stops the run with a message instead of producing a number).
///   - body: One measured iteration.
public func registerIOBenchmark<Fixture: IOFixture>(
    _ name: String,
    configuration: Benchmark.Configuration,
    make: @escaping () throws -> Fixture,
    body: @escaping (Benchmark, Fixture) -> Void
) {
    let box = _FixtureBox<Fixture>()
    Benchmark(
        name,
        configuration: configuration,
        closure: { benchmark in
            guard let fixture = box.fixture else { preconditionFailure("\(name): no fixture (setup failed)") }
            let start = processCPUNanoseconds()
            body(benchmark, fixture)
            let cpu = processCPUNanoseconds() - start
            benchmark.measurement(MetricName.cpuNanosecondsPerOperation, cpu / benchmark.scaledIterations.count)
        },
        setup: { box.fixture = try make() },
        teardown: {
            box.fixture?.tearDown()
            box.fixture = nil
        }
    )
}

// MARK: - Checks that say why

/// Stops the process with `message` unless `condition` holds.
///
/// A benchmark's checks use this, not `precondition`: in the release builds benchmarks run in,
/// a failed `precondition` traps without its message (package-benchmark then reports only
/// "error code [4]"), and a wrong result must stop the run with a reason.
@inlinable
@inline(__always)
public func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError(message()) }
}

// MARK: - Waiting, bounded

/// Waits for `semaphore`, stopping the process with `what` in the message after `seconds`:
/// a benchmark that lost a completion stops with a reason instead of hanging.
public func waitOrDie(_ semaphore: DispatchSemaphore, seconds: Int = 60, _ what: @autoclosure () -> String) {
    if semaphore.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
        fatalError("benchmark stuck: \(what()) did not finish within \(seconds) s")
    }
}

/// The CPU time the process has used so far (all threads), in nanoseconds.
public func processCPUNanoseconds() -> Int {
    var now = timespec()
    check(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) == 0, "clock_gettime failed: errno \(errno)")
    return now.tv_sec * 1_000_000_000 + now.tv_nsec
}

/// Seconds of wall clock in `duration`, as a Double.
public func seconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
}

/// Megabytes (10⁶ bytes) per second, rounded, for ``MetricName/megabytesPerSecond``.
public func megabytesPerSecond(bytes: Int, in duration: Duration) -> Int {
    Int((Double(bytes) / 1e6 / seconds(duration)).rounded())
}

// MARK: - Queues

/// Runs `work` on `queue`, later: `enqueue` on a ring, `async` on a DispatchQueue (the
/// benchmarks' queues are one or the other; `IOQueue` itself has nothing to call).
public func runLater(on queue: any IOQueue, _ work: @escaping @Sendable () -> Void) {
    if let ring = queue as? RingLoop {
        ring.enqueue(work)
    } else if let dispatchQueue = queue as? DispatchQueue {
        dispatchQueue.async(execute: work)
    } else {
        preconditionFailure("a benchmark queue is a RingLoop or a DispatchQueue")
    }
}

// MARK: - Descriptors

/// A connected pair of Unix stream sockets, both close-on-exec; blocking unless `nonBlocking`.
public func makeSocketPair(nonBlocking: Bool = false) -> (CInt, CInt) {
    var fds: [CInt] = [-1, -1]
    var type = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue)
    if nonBlocking { type |= CInt(SOCK_NONBLOCK.rawValue) }
    let result = socketpair(AF_UNIX, type, 0, &fds)
    check(result == 0, "socketpair failed: errno \(errno)")
    return (fds[0], fds[1])
}

/// Closes `fd`, which must be open.
public func closeOrDie(_ fd: CInt) {
    check(close(fd) == 0, "close(\(fd)) failed: errno \(errno)")
}
