//===----------------------------------------------------------------------===//
// RingIO — the ring's timer queue: order, cancellation, re-arming, cost, shutdown.
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

@Suite("RingLoop: the timer queue", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingTimersTests {
    /// Runs `body` on `ring`'s thread and waits for it.
    private func onRing(_ ring: RingLoop, _ body: @escaping @Sendable () -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            body()
            done.signal()
        }
        try #require(wait(done))
    }

    @Test("300 timers with mixed deadlines fire in deadline order, equal deadlines in arming order")
    func order() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let count = 300
        let fired = Recorder<(deadline: Int64, index: Int)>()
        let allFired = DispatchSemaphore(value: 0)
        try self.onRing(ring) {
            let base = _RingIOTesting.monotonicNanoseconds() + 20_000_000
            for index in 0..<count {
                // 0–49 ms apart, in a scrambled order, each deadline shared by about six timers.
                let deadline = base + Int64((index * 7_919) % 50) * 1_000_000
                _ = _RingIOTesting.armTimer(on: ring, at: deadline) {
                    fired.append((deadline, index))
                    if fired.all.count == count { allFired.signal() }
                }
            }
        }
        #expect(wait(allFired), "\(fired.all.count) of \(count) timers fired")
        let order = fired.all
        #expect(order.count == count)
        let sorted = order.sorted { ($0.deadline, $0.index) < ($1.deadline, $1.index) }
        #expect(order.map(\.index) == sorted.map(\.index))
        #expect(_RingIOTesting.armedTimerCount(of: ring) == 0)
    }

    @Test("a cancelled timer never fires; a stale token cancels nothing, not even the timer that reused its node")
    func cancel() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let fired = Recorder<String>()
        let firstFired = DispatchSemaphore(value: 0)
        let token = _Lock<_RingIOTesting.Timer?>(nil)
        try self.onRing(ring) {
            let now = _RingIOTesting.monotonicNanoseconds()
            let cancelled = _RingIOTesting.armTimer(on: ring, at: now + 5_000_000) { fired.append("cancelled") }
            token.withLock {
                $0 = _RingIOTesting.armTimer(on: ring, at: now + 1_000_000) {
                    fired.append("first")
                    firstFired.signal()
                }
            }
            _RingIOTesting.cancelTimer(cancelled, on: ring)
        }
        #expect(wait(firstFired))
        // The first timer's node is free: the next timer takes it; the first's token is stale.
        let secondFired = DispatchSemaphore(value: 0)
        let sentinelFired = DispatchSemaphore(value: 0)
        try self.onRing(ring) {
            let now = _RingIOTesting.monotonicNanoseconds()
            _ = _RingIOTesting.armTimer(on: ring, at: now + 2_000_000) {
                fired.append("second")
                secondFired.signal()
            }
            _RingIOTesting.cancelTimer(token.withLock { $0! }, on: ring)
            _ = _RingIOTesting.armTimer(on: ring, at: now + 30_000_000) {
                fired.append("sentinel")
                sentinelFired.signal()
            }
        }
        #expect(wait(secondFired), "a stale token cancelled the timer that reused its node")
        #expect(wait(sentinelFired))
        #expect(fired.all == ["first", "second", "sentinel"])
        #expect(_RingIOTesting.armedTimerCount(of: ring) == 0)
    }

    @Test("a deadline earlier than the kernel timeout armed gets a kernel timeout of its own")
    func earlierDeadlineRearms() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let late = Counter()
        try self.onRing(ring) {
            _ = _RingIOTesting.armTimer(on: ring, at: _RingIOTesting.monotonicNanoseconds() + 60_000_000_000) {
                late.increment()
            }
        }
        // The ring has flushed its turn: a kernel timeout 60 s away is in flight. Now an
        // earlier one, from another turn — the bounded wait fails if it waits for the first.
        let early = DispatchSemaphore(value: 0)
        try self.onRing(ring) {
            _ = _RingIOTesting.armTimer(on: ring, at: _RingIOTesting.monotonicNanoseconds() + 10_000_000) {
                early.signal()
            }
        }
        #expect(wait(early, seconds: 20), "the earlier deadline waited for the later kernel timeout")
        #expect(late.count == 0)
        #expect(_RingIOTesting.armedTimerCount(of: ring) == 1)
    }

    @Test("an operation's interval timer leaves the queue when the operation finishes")
    func finishDropsInterval() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        var fds: [CInt] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (reader, writer) = (fds[0], fds[1])
        let cleaned = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .stream, fileDescriptor: reader, queue: ring, ring: ring) { _ in
            close(reader)
            cleaned.signal()
        }
        channel.setInterval(.seconds(30), flags: .strict)
        let finished = DispatchSemaphore(value: 0)
        channel.read(offset: 0, length: 3, queue: ring) { done, _, _ in
            if done { finished.signal() }
        }
        try self.onRing(ring) {}  // the read reached the ring and armed its tick
        #expect(_RingIOTesting.armedTimerCount(of: ring) == 1)
        writeAll(writer, [1, 2, 3])
        #expect(wait(finished))
        #expect(_RingIOTesting.armedTimerCount(of: ring) == 0)
        channel.close()
        #expect(wait(cleaned))
        close(writer)
    }

    /// Writes `count` 64-byte messages on a socket channel with `interval` (none when `nil`),
    /// all scheduled in one ring turn, and returns the entries the ring submitted meanwhile.
    private func submissionsForWrites(_ count: Int, interval: Duration?, on ring: RingLoop) throws -> UInt64 {
        let (local, peer) = try makeSocketPair()
        // The peer drains what arrives, so no write waits for buffer space.
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while read(peer, &buffer, buffer.count) > 0 {}
            close(peer)
            drained.signal()
        }
        let cleaned = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .stream, fileDescriptor: local, queue: ring, ring: ring) { _ in
            close(local)
            cleaned.signal()
        }
        if let interval { channel.setInterval(interval, flags: .strict) }
        try self.onRing(ring) {}
        let before = ring.counters.submissions
        let written = DispatchSemaphore(value: 0)
        let message = ByteRope(copying: [UInt8](repeating: 7, count: 64))
        // One write at a time, each from the last one's final call: writes queued together
        // would leave together (gathered), in fewer syscalls than writes.
        @Sendable func write(_ remaining: Int) {
            channel.write(offset: 0, data: message, queue: ring) { done, _, error in
                guard done else { return }
                if error == nil { written.signal() }
                if remaining > 1 { write(remaining - 1) }
            }
        }
        ring.enqueue { write(count) }
        var missing = 0
        for _ in 0..<count where !wait(written) { missing += 1 }
        #expect(missing == 0)
        try self.onRing(ring) {}  // the last turn's flush is counted
        let after = ring.counters.submissions
        channel.close()
        #expect(wait(cleaned))
        #expect(wait(drained))
        return after - before
    }

    @Test("writes with a strict interval submit about as many entries as without one: no timeout per write")
    func noSyscallPerArm() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let count = 400
        let plain = try self.submissionsForWrites(count, interval: nil, on: ring)
        // An interval longer than the run: what is measured is the arming and cancelling
        // (a shorter one adds a kernel timeout per interval that passes, however slow the run).
        let withInterval = try self.submissionsForWrites(count, interval: .seconds(10), on: ring)
        // A timeout and its cancel per write (the old way) would add 2 × 400.
        #expect(plain >= UInt64(count))
        #expect(withInterval <= plain + UInt64(count / 8), "without an interval: \(plain); with: \(withInterval)")
    }

    @Test("a ring stops with timers armed: repeating source timers, intervals, far deadlines; their targets go")
    func shutdownWithTimersArmed() throws {
        let ring = try RingLoop()
        final class Canary: Sendable {}
        weak var weakCanary: Canary?
        var sources: [IOSource] = []
        for _ in 0..<50 {
            let timer = IOSource.makeTimerSource(queue: ring, ring: ring)
            timer.setEventHandler {}
            timer.schedule(after: .milliseconds(1), repeating: .milliseconds(1))
            timer.resume()
            sources.append(timer)
        }
        var fds: [CInt] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (reader, writer) = (fds[0], fds[1])
        let channel = IOChannel(kind: .stream, fileDescriptor: reader, queue: ring, ring: ring) { _ in }
        channel.setInterval(.milliseconds(1), flags: .strict)
        let readEnded = DispatchSemaphore(value: 0)
        channel.read(offset: 0, length: .max, queue: ring) { done, _, _ in
            if done { readEnded.signal() }
        }
        do {
            let canary = Canary()
            weakCanary = canary
            try self.onRing(ring) {
                let far = _RingIOTesting.monotonicNanoseconds() + 3_600_000_000_000
                for offset in 0..<100 {
                    _ = _RingIOTesting.armTimer(on: ring, at: far + Int64(offset), holding: canary)
                }
            }
        }
        #expect(weakCanary != nil, "the armed timers hold their target")
        // The read's 1 ms interval has ticked a few times on the ring's clock.
        waitForRingTimers(ring, after: .milliseconds(5))
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            ring.shutdown()
            stopped.signal()
        }
        #expect(wait(stopped, seconds: 20), "the ring did not stop with timers armed")
        #expect(weakCanary == nil, "a timer still armed at exit kept its target")
        #expect(wait(readEnded))
        for source in sources { source.cancel() }
        close(reader)
        close(writer)
    }
}
