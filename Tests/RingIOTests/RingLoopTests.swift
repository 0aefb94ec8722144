//===----------------------------------------------------------------------===//
// RingIO — engine tests against the real kernel: set-up, submission from the ring and from
// other threads, completions, delivery on queues, shutdown.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("RingLoop: set-up errors")
struct RingSetUpErrorTests {
    @Test(
        "a refused set-up throws an error naming the cause and the remedy",
        arguments: [
            (Errno.notPermitted, ["kernel.io_uring_disabled", "seccomp"]),
            (Errno.noFunction, ["too old", "5.19"]),
            (Errno.noMemory, ["RLIMIT_MEMLOCK"]),
        ]
    )
    func forcedFailure(errno: Errno, mentions: [String]) {
        do {
            let ring = try RingLoop(entries: 8, _forcedSetupFailure: errno)
            ring.shutdown()
            Issue.record("set-up did not fail")
        } catch {
            #expect(error.errno == errno)
            for phrase in mentions {
                #expect(error.description.contains(phrase), "\(error.description)")
            }
        }
    }
}

@Suite("RingLoop: engine", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopTests {
    @Test("a loop whose last reference goes away on its own thread stops, its thread detached")
    func lastReferenceOnRingThread() throws {
        weak var weakRing: RingLoop?
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        do {
            let ring = try RingLoop()
            weakRing = ring
            // The job holds the loop; it waits until the test let go of its own reference, so
            // the job's, dropped on the ring thread after it runs, is the last one.
            ring.enqueue {
                withExtendedLifetime(ring) {
                    started.signal()
                    proceed.wait()
                }
            }
            #expect(wait(started))
        }
        proceed.signal()
        // Deinit on the ring thread cannot join it: the thread is detached and exits (a thread
        // left neither joined nor detached is what ThreadSanitizer reports as a leak).
        #expect(eventually { weakRing == nil }, "the loop was not let go of")
    }

    @Test(
        "set-up reports what the kernel accepted",
        .enabled(if: _RingIOTesting.ioUringAvailable, "io_uring only: the kernel's set-up")
    )
    func setUp() throws {
        let ring = try RingLoop(entries: 64, backend: .ioUring)
        defer { ring.shutdown() }
        #expect(ring.backend == .ioUring)
        #expect(ring.setup.submissionEntries == 64)
        #expect(ring.setup.completionEntries == 256)
        #expect(ring.setup.noDrop)
        // Linux 5.18 and later register the ring's descriptor with its thread.
        #expect(ring.setup.registeredRingDescriptor == kernelIsAtLeast(5, 18))
        #expect(!ring.isCurrentThread)
    }

    @Test("no-op round trips, one after another, from another thread")
    func nopRoundTrips() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        for _ in 0..<500 {
            let done = DispatchSemaphore(value: 0)
            let result = _Lock<Int32?>(nil)
            _RingIOTesting.nop(on: ring) { value in
                #expect(ring.isCurrentThread)
                result.withLock { $0 = value }
                done.signal()
            }
            try #require(wait(done))
            #expect(result.withLock { $0 } == 0)
        }
        let counters = ring.counters
        #expect(counters.completions >= 500)
        #expect(counters.staleCompletions == 0)
    }

    @Test("more operations in one turn than the SQ holds all complete, once each")
    func submissionQueueFull() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let completions = Counter()
        let done = DispatchSemaphore(value: 0)
        let total = 5_000
        _RingIOTesting.nops(total, on: ring) { result in
            #expect(result == 0)
            completions.increment()
            if completions.count == total { done.signal() }
        }
        try #require(wait(done))
        #expect(completions.count == total)
        #expect(ring.counters.staleCompletions == 0)
    }

    @Test("a cross-thread submission storm: every operation completes exactly once")
    func crossThreadStorm() async throws {
        let ring = try RingLoop(entries: 32)
        defer { ring.shutdown() }
        let threads = 8
        let perThread = 2_000
        let completions = Counter()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<perThread {
                _RingIOTesting.nop(on: ring) { result in
                    precondition(result == 0)
                    completions.increment()
                    if completions.count == threads * perThread { done.signal() }
                }
            }
        }
        try #require(wait(done, seconds: 30))
        // Nothing more arrives late: a barrier through the ring passes first.
        await ringBarrier(ring)
        #expect(completions.count == threads * perThread)
        let counters = ring.counters
        #expect(counters.staleCompletions == 0)
        #expect(counters.wakeUps <= UInt64(threads * perThread))
    }

    @Test("file writes and reads at offsets and at the file position")
    func fileReadWrite() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let file = try TemporaryFile()
        let fd = file.fd

        func write(_ text: String, at offset: Int64) throws -> Result<Int, Errno> {
            try _RingIOTesting.write(fd: fd, bytes: Array(text.utf8), offset: offset, on: ring)
        }
        func read(_ count: Int, at offset: Int64) throws -> Result<[UInt8], Errno> {
            try _RingIOTesting.read(fd: fd, count: count, offset: offset, on: ring)
        }

        #expect(try write("hello", at: 0) == .success(5))
        #expect(try write("world", at: 10) == .success(5))
        #expect(try read(15, at: 0) == .success(Array("hello".utf8) + [0, 0, 0, 0, 0] + Array("world".utf8)))
        #expect(try read(100, at: 12) == .success(Array("rld".utf8)))
        #expect(try read(10, at: 15) == .success([]))
        // At the file position (-1): starts at 0 and advances.
        #expect(try read(3, at: -1) == .success(Array("hel".utf8)))
        #expect(try read(2, at: -1) == .success(Array("lo".utf8)))
        #expect(lseek(fd, 0, SEEK_CUR) == 5)
        // A bad descriptor is an error, not a crash.
        let badRead = try _RingIOTesting.read(fd: 9_999, count: 4, offset: 0, on: ring)
        #expect(badRead == .failure(.badFileDescriptor))
    }

    @Test("a timeout fires after its delay")
    func timeoutFires() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let done = DispatchSemaphore(value: 0)
        let result = _Lock<Int32?>(nil)
        let start = ContinuousClock.now
        _RingIOTesting.timeout(nanoseconds: 50_000_000, on: ring) { value in
            result.withLock { $0 = value }
            done.signal()
        }
        try #require(wait(done))
        let elapsed = ContinuousClock.now - start
        #expect(result.withLock { $0 } == -ETIME)
        #expect(elapsed >= .milliseconds(50))
    }

    @Test("handlers for one DispatchQueue in one turn go out in one async, in order")
    func dispatchGrouping() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let queue = DispatchQueue(label: "grouping")
        let order = Recorder<String>()
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            _RingIOTesting.deliver(from: ring, on: queue) { order.append("a1") }
            // Queued directly, between two deliveries: one async per delivery would run it
            // between them; one async per turn runs it first.
            queue.async { order.append("direct") }
            _RingIOTesting.deliver(from: ring, on: queue) { order.append("a2") }
            _RingIOTesting.deliver(from: ring, on: queue) {
                dispatchPrecondition(condition: .onQueue(queue))
                order.append("a3")
                done.signal()
            }
        }
        try #require(wait(done))
        #expect(order.all == ["direct", "a1", "a2", "a3"])
    }

    @Test("handlers for the ring run on its thread, after the work that delivered them")
    func inlineDelivery() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let order = Recorder<String>()
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            _RingIOTesting.deliver(from: ring, on: ring) {
                #expect(ring.isCurrentThread)
                order.append("delivered")
                done.signal()
            }
            order.append("after deliver()")
        }
        try #require(wait(done))
        #expect(order.all == ["after deliver()", "delivered"])
        #expect(ring.counters.wakeUps <= 1)
    }

    @Test("shutdown cancels operations in flight and delivers their final completions")
    func shutdownWithOperationsInFlight() throws {
        let ring = try RingLoop(entries: 8)
        let results = Recorder<Int32>()
        for _ in 0..<3 {
            _RingIOTesting.timeout(nanoseconds: 30_000_000_000, on: ring) { results.append($0) }
        }
        try shutdownCancelsThree(ring, results)
        ring.shutdown()  // idempotent
    }

    @Test("shutdown with many kinds of operations in flight: every one ends, the thread exits")
    func shutdownWithManyOperations() throws {
        let ring = try RingLoop(entries: 8)
        let results = Recorder<Int32>()
        let armed = DispatchSemaphore(value: 0)
        var pipes: [CInt] = []
        defer { for fd in pipes { close(fd) } }
        // 40 long timeouts and 40 reads of pipes nobody writes: more than the SQ holds.
        for _ in 0..<40 {
            _RingIOTesting.timeout(nanoseconds: 30_000_000_000, on: ring) { results.append($0) }
            var pair: [CInt] = [0, 0]
            try #require(pipe(&pair) == 0)
            pipes += pair
            let reader = pair[0]
            let buffer = TestBuffer(count: 16)
            _RingIOTesting.submit(
                .read(fd: reader, buffer: buffer.bytes, offset: -1),
                on: ring,
                keepAlive: buffer
            ) { results.append($0.result) }
        }
        ring.enqueue { armed.signal() }
        try #require(wait(armed))
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            ring.shutdown()
            stopped.signal()
        }
        #expect(wait(stopped, seconds: 10), "shutdown did not return")
        #expect(results.all.count == 80)
        #expect(results.all.allSatisfy { $0 == -ECANCELED })
    }

    @Test("a ring dropped without shutdown stops and releases its thread")
    func dropWithoutShutdown() throws {
        let completed = DispatchSemaphore(value: 0)
        do {
            let ring = try RingLoop(entries: 8)
            _RingIOTesting.nop(on: ring) { _ in completed.signal() }
            try #require(wait(completed))
        }
        // The deinit stopped the thread (it does not join it; the thread finishes on its own):
        // set up and drop many more without running out.
        for _ in 0..<64 {
            _ = try RingLoop(entries: 4)
        }
    }
}

@Suite("UserData")
struct UserDataTests {
    @Test("packs slot, generation and kind, and rejects unknown kinds")
    func roundTrip() throws {
        for kind in OperationKind.allCases {
            for (slot, generation) in [(UInt32(0), UInt32(0)), (1, 1), (.max, UserData.generationMask), (12_345, 777)] {
                let packed = UserData(slot: slot, generation: generation, kind: kind)
                let decoded = try #require(UserData(raw: packed.raw))
                #expect(decoded == packed)
            }
        }
        #expect(UserData(raw: 0) == nil)  // kind 0 is never used
        #expect(UserData(raw: UInt64.max) == nil)
    }
}

@Suite("RingLoop: shutdown races", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopShutdownTests {
    @Test("operations submitted by handlers during shutdown are cancelled too")
    func submissionsDuringShutdown() throws {
        let ring = try RingLoop(entries: 8)
        let results = Recorder<Int32>()
        // Each cancelled timeout arms another long one from its handler, twice.
        let rearms = Counter()
        @Sendable func arm() {
            _RingIOTesting.timeout(nanoseconds: 30_000_000_000, on: ring) { result in
                results.append(result)
                if rearms.count < 2 {
                    rearms.increment()
                    arm()
                }
            }
        }
        arm()
        try shutdownCancelsThree(ring, results)
    }

    @Test("work enqueued after the ring stopped is discarded and counted, never run")
    func enqueueAfterShutdown() throws {
        let ring = try RingLoop(entries: 8)
        ring.shutdown()
        let ran = Counter()
        ring.enqueue { ran.increment() }
        #expect(ran.count == 0)
        #expect(ring.counters.discardedJobs == 1)
    }
}

@Suite("RingLoopGroup", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopGroupTests {
    @Test("rings are handed out round-robin, each on its own thread")
    func roundRobin() throws {
        let group = try RingLoopGroup(count: 3, entries: 8)
        defer { group.shutdown() }
        #expect(group.rings.count == 3)
        let handedOut = (0..<6).map { _ in group.next() }
        #expect(handedOut[0] === group.rings[0])
        #expect(handedOut[1] === group.rings[1])
        #expect(handedOut[3] === group.rings[0])
        let threads = Recorder<UInt>()
        let done = DispatchSemaphore(value: 0)
        for ring in group.rings {
            ring.enqueue {
                threads.append(UInt(pthread_self()))
                done.signal()
            }
        }
        for _ in 0..<3 { try #require(wait(done)) }
        #expect(Set(threads.all).count == 3)
    }

    @Test("the shared group is one group, one ring per core")
    func shared() throws {
        let first = try RingLoopGroup.shared
        let second = try RingLoopGroup.shared
        #expect(first === second)
        #expect(first.rings.count == RingLoopGroup.onlineCores)
    }
}

@Suite("RingLoop: fairness", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopFairnessTests {
    @Test("a job that keeps re-enqueueing itself does not starve completions")
    func selfReenqueueingJob() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let stop = Atomic<Bool>(false)
        let spins = Counter()
        @Sendable func spin() {
            spins.increment()
            if !stop.load(ordering: .relaxed) { ring.enqueue(spin) }
        }
        ring.enqueue(spin)
        let done = DispatchSemaphore(value: 0)
        _RingIOTesting.timeout(nanoseconds: 10_000_000, on: ring) { _ in done.signal() }
        let fired = wait(done, seconds: 5)
        stop.store(true, ordering: .relaxed)
        #expect(fired)
        #expect(spins.count > 1)
    }
}

@Suite("RingLoop: under valgrind", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopUnderValgrindTests {
    @Test("with RINGIO_VALGRIND=1 the ring waits in poll(2): wake-ups, timeouts, shutdown still work")
    func waitsInPoll() async {
        // A child process: the environment is process-wide, and read at each ring's set-up.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            try roundTripsOnARingThatWaitsInPoll()
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("the child's standard error: \(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }
}

/// A ring set up for valgrind (`RINGIO_VALGRIND=1`), without valgrind.
/// Every operation here completes while the ring thread is asleep in `poll(2)`, woken by the
/// kernel alone (a timeout) or by another thread (each submission from this thread).
private func roundTripsOnARingThatWaitsInPoll() throws {
    let usual = try RingLoop(entries: 8)
    let kernelDefersTaskRun = usual.setup.deferredTaskRun
    usual.shutdown()
    setenv("RINGIO_VALGRIND", "1", 1)
    let ring = try RingLoop(entries: 8)
    defer { ring.shutdown() }
    // A ring that waits in poll(2) goes without DEFER_TASKRUN (completions would be posted only
    // inside io_uring_enter): where the kernel offers it, its absence shows the mode is on.
    if kernelDefersTaskRun {
        #expect(!ring.setup.deferredTaskRun)
    }
    // Nor is its descriptor registered: valgrind checks the one io_uring_enter is given.
    #expect(!ring.setup.registeredRingDescriptor)
    for _ in 0..<200 {
        #expect(try _RingIOTesting.perform(.nop, on: ring) == 0)
    }
    for _ in 0..<3 {
        let spec = _KernelTimespec(nanoseconds: 20_000_000)
        #expect(try _RingIOTesting.perform(.timeout(spec: spec), on: ring, keepAlive: spec) == -ETIME)
    }
    // A submission from this thread while the ring sleeps in poll(2) takes an eventfd wake-up.
    // Back to back, each may instead find the ring still finishing its turn (on a loaded
    // machine, every time): submit until one has found it asleep — the wait is on the
    // counter itself, a millisecond apart, so the ring has time to fall asleep between two.
    let wokenUp = eventually {
        _ = try? _RingIOTesting.perform(.nop, on: ring)
        return ring.counters.wakeUps >= 1
    }
    #expect(wokenUp, "no submission woke the ring from poll(2)")
    let counters = ring.counters
    #expect(counters.completions >= 203)
    #expect(counters.staleCompletions == 0)
}

/// Waits until `ring` has taken what was submitted to it, shuts it down, and checks that the
/// shutdown was prompt and that the three requests in flight ended with ECANCELED.
private func shutdownCancelsThree(
    _ ring: RingLoop,
    _ results: Recorder<Int32>,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let armed = DispatchSemaphore(value: 0)
    ring.enqueue { armed.signal() }
    try #require(wait(armed), sourceLocation: sourceLocation)
    let start = ContinuousClock.now
    ring.shutdown()
    #expect(ContinuousClock.now - start < .seconds(5), sourceLocation: sourceLocation)
    #expect(results.all == [-ECANCELED, -ECANCELED, -ECANCELED], sourceLocation: sourceLocation)
}
