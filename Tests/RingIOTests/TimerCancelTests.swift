//===----------------------------------------------------------------------===//
// RingIO — timers racing their cancellation: nothing keeps running, nothing is left behind.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Timers racing cancellation", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct TimerCancelTests {
    @Test("100 fast repeating timers cancelled at random moments: every cancel handler runs, no timer keeps firing")
    func sourceTimers() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let cancelled = DispatchSemaphore(value: 0)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let timer = IOSource.makeTimerSource(queue: ring)
            let fired = Counter()
            timer.setEventHandler { fired.increment() }
            timer.setCancelHandler { cancelled.signal() }
            timer.schedule(after: .milliseconds(1), repeating: .milliseconds(1))
            timer.resume()
            // A random moment: after 0 to 3 fires, and a random head start past that.
            let fires = Int.random(in: 0...3, using: &generator)
            _ = eventually(seconds: 5) { fired.count >= fires }
            for _ in 0..<Int.random(in: 0...400, using: &generator) { _ = getpid() }
            timer.cancel()
        }
        let deadline = DispatchTime.now() + 15
        var missing = 0
        for _ in 0..<100 where cancelled.wait(timeout: deadline) != .success { missing += 1 }
        #expect(missing == 0, "\(missing) cancel handlers never ran")
        // A timer that escaped its cancellation would still be armed on the ring (and keep
        // completing, 1,000 times a second).
        ringBarrier(ring)
        let armed = _RingIOTesting.armedTimerCount(of: ring)
        #expect(armed == 0, "\(armed) timers still armed after every timer was cancelled")
        let before = ring.counters.completions
        waitForRingTimers(ring, after: .milliseconds(20))
        let after = ring.counters.completions
        #expect(after - before < 10, "\(after - before) completions in 20 ms after every timer was cancelled")
    }

    @Test("200 reads with a 1 ms strict interval, stopped at random moments: every cleanup handler runs")
    func channelIntervals() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let cleaned = DispatchSemaphore(value: 0)
        let finals = Atomic<Int>(0)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var pair: [CInt] = [0, 0]
            try #require(pipe(&pair) == 0)
            let (reader, writer) = (pair[0], pair[1])
            let channel = IOChannel(kind: .stream, fileDescriptor: reader, queue: ring) { _ in
                close(reader)
                close(writer)
                cleaned.signal()
            }
            channel.setInterval(.milliseconds(1), flags: .strict)
            let ticks = Counter()
            channel.read(offset: 0, length: .max, queue: ring) { done, _, _ in
                ticks.increment()
                if done { finals.add(1, ordering: .relaxed) }
            }
            // A random moment: after 0 to 3 interval deliveries, and a random head start past that.
            let deliveries = Int.random(in: 0...3, using: &generator)
            _ = eventually(seconds: 5) { ticks.count >= deliveries }
            for _ in 0..<Int.random(in: 0...400, using: &generator) { _ = getpid() }
            channel.close(flags: .stop)
        }
        var missing = 0
        let deadline = DispatchTime.now() + 15
        for _ in 0..<200 where cleaned.wait(timeout: deadline) != .success { missing += 1 }
        #expect(missing == 0, "\(missing) cleanup handlers never ran (an interval timer outlived its read)")
        #expect(finals.load(ordering: .relaxed) == 200)
    }
}
