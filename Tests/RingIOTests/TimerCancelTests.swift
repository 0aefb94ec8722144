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
            timer.setEventHandler {}
            timer.setCancelHandler { cancelled.signal() }
            timer.schedule(after: .milliseconds(1), repeating: .milliseconds(1))
            timer.resume()
            usleep(UInt32.random(in: 0...3_000, using: &generator))
            timer.cancel()
        }
        let deadline = DispatchTime.now() + 15
        var missing = 0
        for _ in 0..<100 where cancelled.wait(timeout: deadline) != .success { missing += 1 }
        #expect(missing == 0, "\(missing) cancel handlers never ran")
        // A timer that escaped its cancellation would keep completing, 1,000 times a second.
        usleep(50_000)
        let before = ring.counters.completions
        usleep(200_000)
        let after = ring.counters.completions
        #expect(after - before < 10, "\(after - before) completions in 200 ms after every timer was cancelled")
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
            channel.read(offset: 0, length: .max, queue: ring) { done, _, _ in
                if done { finals.add(1, ordering: .relaxed) }
            }
            usleep(UInt32.random(in: 0...3_000, using: &generator))
            channel.close(flags: .stop)
        }
        var missing = 0
        let deadline = DispatchTime.now() + 15
        for _ in 0..<200 where cleaned.wait(timeout: deadline) != .success { missing += 1 }
        #expect(missing == 0, "\(missing) cleanup handlers never ran (an interval timer outlived its read)")
        #expect(finals.load(ordering: .relaxed) == 200)
    }
}
