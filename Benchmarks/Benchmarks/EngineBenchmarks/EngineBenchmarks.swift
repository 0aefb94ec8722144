//===----------------------------------------------------------------------===//
// RingIO — benchmarks: the engine (no-op round trips) and a 64-byte socketpair ping-pong.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Benchmark
import Dispatch
import IOBenchmarkSupport
@_spi(Benchmarking) import RingIO

// Naming: `<Operation>_<Kind>`, identifiers without spaces. Nothing here is checked: every figure
// is reported (wall clock, throughput, process CPU, mallocs), never compared with a threshold, and
// no name matches the checked filter `.*_ByteRope.*`.
//
// Every benchmark does 1,000 operations per measured iteration (`scalingFactor: .kilo`), so the
// rows marked `*` in the table are per operation: the wall clock row is the time per no-op or per
// round trip, the throughput row operations per second, the malloc row allocations per operation
// (process-wide: every thread's, the ring's included) and the CPU row the CPU time of all the
// process's threads per operation.

let benchmarks: @Sendable () -> Void = {
    // MARK: No-ops chained on the ring thread
    //
    // One no-op in flight; its completion submits the next. Measures one turn of the ring's loop
    // (submit-and-wait, reap, handler call) with no other thread involved: the engine's floor.

    registerIOBenchmark(
        "NopChain_RingIO",
        configuration: checkedIO(scalingFactor: .kilo),
        make: { try RingFixture() },
        body: { benchmark, fixture in
            fixture.ring._nopRoundTrips(benchmark.scaledIterations.count, completion: fixture.signal)
            waitOrDie(fixture.done, "a chain of \(benchmark.scaledIterations.count) no-ops")
        }
    )

    // MARK: Cross-thread round trips
    //
    // From the benchmark thread to the ring (`enqueue`: inbox push, eventfd wake-up), one no-op,
    // then the completion back to a queue that signals the benchmark thread. Compare the two
    // delivery queues with each other and with DispatchAsync, the same hop through a serial
    // DispatchQueue and no I/O at all (a floor, not a peer).

    registerIOBenchmark(
        "CrossThreadRoundTrip_RingIONopDeliveredOnRing",
        configuration: checkedIO(scalingFactor: .kilo),
        make: { try NopProbeFixture(deliverOnDispatchQueue: false) },
        body: { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                fixture.probe.submit()
                waitOrDie(fixture.done, "a no-op round trip")
            }
        }
    )

    registerIOBenchmark(
        "CrossThreadRoundTrip_RingIONopDeliveredOnDispatchQueue",
        configuration: reportedIO(scalingFactor: .kilo),
        make: { try NopProbeFixture(deliverOnDispatchQueue: true) },
        body: { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                fixture.probe.submit()
                waitOrDie(fixture.done, "a no-op round trip")
            }
        }
    )

    registerIOBenchmark(
        "CrossThreadRoundTrip_DispatchAsync",
        configuration: reportedIO(scalingFactor: .kilo),
        make: { DispatchHopFixture() },
        body: { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                fixture.queue.async(execute: fixture.signal)
                waitOrDie(fixture.done, "an async round trip")
            }
        }
    )

    // MARK: Socketpair ping-pong, 64-byte messages
    //
    // A client and an echo server on the two ends of a Unix stream socketpair; one message in
    // flight. Both ends use the API under test. Time and CPU per round trip; compare the RingIO
    // rows with DispatchSource (read sources + read/write: what a hand-written GCD server does)
    // and DispatchIO (stream channels, low water 1).

    // One ring: both ends on one thread, so its malloc count per round trip is deterministic
    // and checked (run-threshold-check.sh), with the server on handlers and as a task on the
    // ring (async/await must allocate no more than the handlers); the others are reports.
    // AsyncServerOffRing is the same task without the ring's executor: every await hops.
    let pingPongs: [(String, () throws -> any PingPong)] = [
        ("PingPong64B_RingIOChannelOnRings", { try RingIOPingPong(.handlersOnTwoRings) }),
        ("PingPong64B_RingIOChannelOnOneRing", { try RingIOPingPong(.handlersOnOneRing) }),
        ("PingPong64B_RingIOChannelOnDispatchQueues", { try RingIOPingPong(.handlersOnDispatchQueues) }),
        ("PingPong64B_RingIOAsyncServerOnOneRing", { try RingIOPingPong(.asyncServerOnOneRing) }),
        ("PingPong64B_RingIOAsyncServerOffRing", { try RingIOPingPong(.asyncServerOffRing) }),
        ("PingPong64B_DispatchSource", { DispatchSourcePingPong() }),
        ("PingPong64B_DispatchIO", { DispatchIOPingPong() }),
    ]
    let checkedPingPongs = ["PingPong64B_RingIOChannelOnOneRing", "PingPong64B_RingIOAsyncServerOnOneRing"]
    for (name, make) in pingPongs {
        registerIOBenchmark(
            name,
            configuration: checkedPingPongs.contains(name)
                ? checkedIO(scalingFactor: .kilo) : reportedIO(scalingFactor: .kilo),
            make: { try PingPongFixture(make()) },
            body: { benchmark, fixture in
                fixture.pingPong.roundTrips(benchmark.scaledIterations.count)
            }
        )
    }
}

// MARK: - Fixtures

/// A ring, and a semaphore its completion signals.
private final class RingFixture: IOFixture {
    let ring: RingLoop
    let done = DispatchSemaphore(value: 0)
    /// Made once, so that an iteration allocates no closure of its own.
    let signal: @Sendable () -> Void

    init() throws {
        self.ring = try RingLoop()
        let done = self.done
        self.signal = { done.signal() }
    }

    func tearDown() {
        self.ring.shutdown()
    }
}

/// A ring and a reusable no-op probe whose completion signals `done` on the ring's thread or
/// on a serial DispatchQueue.
private final class NopProbeFixture: IOFixture {
    let ring: RingLoop
    let done = DispatchSemaphore(value: 0)
    let probe: _NopProbe

    init(deliverOnDispatchQueue: Bool) throws {
        let ring = try RingLoop()
        let done = self.done
        self.ring = ring
        if deliverOnDispatchQueue {
            let queue = DispatchQueue(label: "RingIO.benchmarks.delivery")
            self.probe = ring._nopProbe(deliveringOn: queue) { done.signal() }
        } else {
            self.probe = ring._nopProbe(deliveringOn: ring) { done.signal() }
        }
    }

    func tearDown() {
        self.ring.shutdown()
    }
}

/// A serial DispatchQueue and a prepared job that signals `done` on it.
private final class DispatchHopFixture: IOFixture {
    let queue = DispatchQueue(label: "RingIO.benchmarks.hop")
    let done = DispatchSemaphore(value: 0)
    let signal: @Sendable () -> Void

    init() {
        let done = self.done
        self.signal = { done.signal() }
    }

    func tearDown() {}
}

/// A ping-pong, checked once in its setup.
private final class PingPongFixture: IOFixture {
    let pingPong: any PingPong

    init(_ pingPong: any PingPong) throws {
        self.pingPong = pingPong
        // A first exchange, every echoed byte compared, proves the pair works before anything
        // is measured: a broken echo stops the run here with a message. Measured iterations
        // check the byte counts only.
        pingPong.roundTrips(10, checkingContents: true)
    }

    func tearDown() {
        self.pingPong.close()
    }
}
