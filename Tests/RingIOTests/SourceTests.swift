//===----------------------------------------------------------------------===//
// RingIO — event sources against DispatchSource's semantics, as IOSource's documentation states them:
// created suspended, counted suspend/resume, coalescing, cancel handler last; timers, signals,
// readiness, process exit and custom add/or sources.
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

/// How late a timer may fire before a test calls it broken. Generous on purpose: tests run in
/// parallel on two cores; the assertions that matter are "never early" and "not absurdly late".
private let timerSlack: Duration = .milliseconds(300)

/// How long after `suspend()` returns an event handler may still start: one already on its way
/// to the handler when the source was suspended.
private let suspendGrace: Duration = .milliseconds(10)

/// Checks that no timer of the context's ring is armed: a one-shot timer that fired, a timer
/// never scheduled, leave nothing that could fire later.
private func expectNoTimerArmed(_ context: ChannelContext, sourceLocation: SourceLocation = #_sourceLocation) {
    let armed = _RingIOTesting.armedTimerCount(of: context.ring)
    #expect(armed == 0, "timers still armed on the ring: \(armed)", sourceLocation: sourceLocation)
}

// MARK: - Lifecycle

/// Written to standard error by an exit test right before its over-resume: the failure that
/// follows is the precondition's, not an earlier one's.
private let overResumeMarker = "about to resume once more than suspended"

private func announceOverResume() {
    writeAll(STDERR_FILENO, bytes("\(overResumeMarker)\n"))
}

private func expectOverResumeReached(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
    let output = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    #expect(
        output.contains(overResumeMarker),
        "the child failed before the over-resume",
        sourceLocation: sourceLocation
    )
}

@Suite("IOSource: lifecycle", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceLifecycleTests {
    @Test(
        "created suspended: no event before resume; then one event with the merged data",
        arguments: QueueKind.allCases
    )
    func createdSuspended(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataAddSource())
        source.add(data: 2)
        source.add(data: 3)
        context.barrier()
        #expect(log.count == 0, "an event before resume: \(log.data)")
        #expect(log.registrations.isEmpty, "the registration handler ran before resume")
        log.submitting { source.resume() }
        try #require(log.waitForEvents(1))
        context.barrier()
        #expect(log.data == [5])
        cancel(source, log)
    }

    @Test("created suspended: a scheduled timer does not fire before resume", arguments: QueueKind.allCases)
    func timerCreatedSuspended(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        source.schedule(after: .milliseconds(10))
        waitForRingTimers(context.ring, after: .milliseconds(20))
        context.barrier()
        #expect(log.count == 0, "a timer fired while suspended: \(log.data)")
        source.resume()
        try #require(log.waitForEvents(1))
        context.barrier()
        #expect(log.data == [1], "a one-shot timer past its deadline fires once on resume")
        cancel(source, log)
    }

    @Test("the registration handler runs once, before the first event", arguments: QueueKind.allCases)
    func registrationHandler(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataAddSource())
        source.add(data: 1)
        log.submitting { source.resume() }
        try #require(log.waitForEvents(1))
        #expect(log.registrations.count == 1)
        if let registered = log.registrations.first, let first = log.events.first {
            #expect(registered <= first.started)
        }
        source.suspend()
        source.resume()
        source.add(data: 1)
        try #require(log.waitForEvents(2))
        context.barrier()
        #expect(log.registrations.count == 1, "suspend and resume registered the source again")
        cancel(source, log)
    }

    @Test(
        "the registration handler runs before the first event, even for a merge right after resume",
        arguments: QueueKind.allCases
    )
    func registrationBeforeImmediateEvent(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        var outOfOrder: [[String]] = []
        for _ in 0..<50 {
            let (source, log) = context.recorded(context.userDataAddSource(), holdMicroseconds: 0)
            source.resume()
            source.add(data: 1)
            try #require(log.waitForEvents(1))
            if !log.problems.isEmpty { outOfOrder.append(log.problems) }
            source.cancel()
            try #require(log.waitForCancel())
        }
        #expect(outOfOrder.isEmpty, "\(outOfOrder.count) of 50 sources: \(outOfOrder.first ?? [])")
    }

    @Test("suspensions are counted: two suspends need two resumes", arguments: QueueKind.allCases)
    func countedSuspension(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataAddSource())
        source.resume()
        try #require(log.waitForRegistration())
        source.suspend()
        source.suspend()
        log.submitting { source.add(data: 4) }
        source.resume()
        context.barrier()
        #expect(log.count == 0, "an event while still suspended once: \(log.data)")
        source.resume()
        try #require(log.waitForEvents(1))
        context.barrier()
        #expect(log.data == [4])
        cancel(source, log)
    }

    @Test("resuming more than suspended is a precondition failure")
    func overResume() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try ChannelContext(.dispatch)
            let source = context.userDataAddSource()
            source.resume()
            announceOverResume()
            source.resume()
        }
        expectOverResumeReached(result)
    }

    @Test("resuming more than suspended is a precondition failure, also after balanced suspensions")
    func overResumeAfterBalancedSuspensions() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try ChannelContext(.ring)
            let source = context.timerSource()
            source.resume()
            source.suspend()
            source.suspend()
            source.resume()
            source.resume()
            announceOverResume()
            source.resume()
        }
        expectOverResumeReached(result)
    }

    @Test("a source on a DispatchQueue with no ring runs on the shared group")
    func sharedGroup() throws {
        let queue = DispatchQueue(label: "source-shared-group")
        let sharedRings = HandlerBarrier(rings: (try? RingLoopGroup.shared)?.rings ?? [], queue: queue)
        let log = SourceLog(barrier: sharedRings)
        let source = IOSource.makeUserDataOrSource(queue: queue)
        log.attach(to: source)
        source.resume()
        source.or(data: 0b1010)
        try #require(log.waitForEvents(1))
        #expect(log.data == [0b1010])
        let timer = IOSource.makeTimerSource(queue: queue)
        let timerLog = SourceLog(barrier: sharedRings)
        timerLog.attach(to: timer)
        timer.schedule(after: .milliseconds(5))
        timer.resume()
        #expect(timerLog.waitForEvents(1))
        cancel(source, log)
        cancel(timer, timerLog)
    }
}

// MARK: - Cancellation

@Suite("IOSource: cancellation", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceCancelTests {
    @Test(
        "cancel: the cancel handler runs exactly once, after the last event handler returned; no event after it",
        arguments: QueueKind.allCases
    )
    func cancelHandlerLast(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        // Handlers that last 5 ms, while another thread keeps merging: cancel lands mid-handler.
        let (source, log) = context.recorded(context.userDataAddSource(), holdMicroseconds: 5_000)
        source.resume()
        let stop = Atomic<Bool>(false)
        let merges = Atomic<Int>(0)
        let producerDone = DispatchSemaphore(value: 0)
        // A thread of its own: on the global queue, the producer waited behind the full
        // suite's blocked work and the first three events did not come within 5 s (seen once
        // on a loaded machine).
        startThread {
            while !stop.load(ordering: .relaxed) {
                source.add(data: 1)
                merges.add(1, ordering: .relaxed)
                sched_yield()
            }
            producerDone.signal()
        }
        try #require(log.waitForEvents(3))
        #expect(!source.isCancelled)
        source.cancel()
        #expect(source.isCancelled, "isCancelled right after cancel()")
        source.cancel()
        #expect(log.waitForCancel())
        // Merges after the cancellation change nothing.
        context.barrier()
        stop.store(true, ordering: .relaxed)
        _ = wait(producerDone)
        source.add(data: 1)
        context.barrier()
        log.expectCancelledOnce()
        if let cancelled = log.cancellations.first {
            let late = log.events.filter { $0.ended.map { $0 > cancelled } ?? true }
            #expect(late.isEmpty, "event handlers that had not returned when the cancel handler ran: \(late)")
        }
        #expect(merges.load(ordering: .relaxed) > 0)
    }

    @Test(
        "cancel from inside the event handler: the cancel handler runs after it returns",
        arguments: QueueKind.allCases
    )
    func cancelInsideHandler(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let box = _Lock<IOSourceTimer?>(nil)
        let log = context.sourceLog(holdMicroseconds: 1_000) { _ in
            box.withLock { $0 }?.cancel()
            // Still inside the handler: the cancel handler must wait for it. With a DispatchQueue,
            // the ring has taken the cancel once a barrier passed, while this handler still runs.
            if queue == .dispatch { ringBarrier(context.ring) }
        }
        let source = context.timerSource()
        box.withLock { $0 = source }
        log.attach(to: source)
        source.schedule(after: .milliseconds(1), repeating: .milliseconds(1))
        source.resume()
        log.expectCancelledOnce()
        context.barrier()
        #expect(log.count == 1, "events after cancelling from the handler: \(log.data)")
        if let cancelled = log.cancellations.first, let ended = log.events.first?.ended {
            #expect(cancelled >= ended)
        }
        box.withLock { $0 = nil }
    }

    @Test(
        "cancel while suspended: the cancel handler runs once the source is resumed, with no event",
        arguments: QueueKind.allCases,
        [false, true]
    )
    func cancelWhileSuspended(_ queue: QueueKind, everResumed: Bool) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataAddSource())
        if everResumed {
            source.resume()
            source.add(data: 1)
            try #require(log.waitForEvents(1))
            source.suspend()
        }
        let before = log.count
        source.add(data: 5)
        source.cancel()
        #expect(source.isCancelled)
        context.barrier()
        #expect(log.cancellations.isEmpty, "the cancel handler ran while the source was suspended")
        source.resume()
        log.expectCancelledOnce()
        context.barrier()
        #expect(log.count == before, "events after cancel: \(log.data.dropFirst(before))")
    }
}

// MARK: - Timers

@Suite("IOSource: timers", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceTimerTests {
    @Test("a one-shot timer fires once, no earlier than its delay and not absurdly late", arguments: QueueKind.allCases)
    func oneShot(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        source.resume()
        let delay = Duration.milliseconds(50)
        let start = ContinuousClock.now
        source.schedule(after: delay)
        try #require(log.waitForEvents(1))
        context.barrier()
        expectNoTimerArmed(context)
        #expect(log.data == [1], "a one-shot timer fires once, with data 1")
        if let fired = log.events.first?.started {
            #expect(fired - start >= delay, "fired early: after \(fired - start)")
            #expect(fired - start <= delay + timerSlack, "fired late: after \(fired - start)")
        }
        cancel(source, log)
    }

    @Test("a timer with leeway fires no earlier than its deadline", arguments: QueueKind.allCases)
    func leeway(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        let delay = Duration.milliseconds(30)
        let leeway = Duration.milliseconds(50)
        let start = ContinuousClock.now
        source.schedule(after: delay, leeway: leeway)
        source.resume()
        try #require(log.waitForEvents(1))
        context.barrier()
        expectNoTimerArmed(context)
        #expect(log.data == [1])
        if let fired = log.events.first?.started {
            #expect(fired - start >= delay, "fired early: after \(fired - start)")
            #expect(fired - start <= delay + leeway + timerSlack, "fired late: after \(fired - start)")
        }
        cancel(source, log)
    }

    @Test("a repeating timer counts its fires, never ahead of the clock", arguments: QueueKind.allCases)
    func repeating(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        let interval = Duration.milliseconds(20)
        let start = ContinuousClock.now
        source.schedule(after: interval, repeating: interval)
        source.resume()
        try #require(log.waitForTotal(10))
        source.cancel()
        log.expectCancelledOnce()
        let events = log.events
        #expect(events.allSatisfy { $0.data >= 1 }, "an event with no fire: \(log.data)")
        // The n-th fire is due at start + n × interval: the running count never gets ahead.
        var fires: UInt = 0
        for event in events {
            fires += event.data
            let due = interval * Int(fires)
            #expect(event.started - start >= due, "fire \(fires) delivered after \(event.started - start)")
        }
        if let cancelled = log.cancellations.first {
            let elapsed = cancelled - start
            #expect(log.total <= UInt(elapsed / interval), "\(log.total) fires in \(elapsed)")
        }
    }

    @Test(
        "a repeating timer coalesces while suspended: one event on resume, with data ≥ 2",
        arguments: QueueKind.allCases
    )
    func coalescesWhileSuspended(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        let interval = Duration.milliseconds(30)
        source.schedule(after: interval, repeating: interval)
        source.resume()
        try #require(log.waitForEvents(1))
        source.suspend()
        let suspended = ContinuousClock.now
        // Four intervals go by.
        waitForRingTimers(context.ring, after: interval * 4)
        context.barrier()
        let during = log.events(after: suspended + suspendGrace)
        #expect(during.isEmpty, "events while suspended: \(during)")
        let before = log.count
        let resumed = ContinuousClock.now
        source.resume()
        try #require(log.waitForEvents(before + 1))
        let first = log.events[before]
        #expect(first.data >= 2, "the fires missed while suspended come as one event: \(log.data)")
        #expect(
            first.started - resumed <= timerSlack,
            "the coalesced event came \(first.started - resumed) after resume"
        )
        cancel(source, log)
    }

    @Test(
        "rescheduling replaces the deadline: a far timer moved near fires at the new time",
        arguments: QueueKind.allCases
    )
    func rescheduleNearer(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        source.schedule(after: .seconds(30))
        source.resume()
        try #require(log.waitForRegistration())
        context.barrier()
        let delay = Duration.milliseconds(40)
        let start = ContinuousClock.now
        source.schedule(after: delay)
        try #require(log.waitForEvents(1))
        context.barrier()
        expectNoTimerArmed(context)
        #expect(log.data == [1])
        if let fired = log.events.first?.started {
            #expect(fired - start >= delay, "fired early: after \(fired - start)")
            #expect(fired - start <= delay + timerSlack, "fired late: after \(fired - start)")
        }
        cancel(source, log)
    }

    @Test(
        "rescheduling a repeating timer as one-shot clears the fires pending and stops the repetition",
        arguments: QueueKind.allCases
    )
    func rescheduleClearsPendingFires(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        source.schedule(after: .milliseconds(10), repeating: .milliseconds(10))
        source.resume()
        try #require(log.waitForEvents(1))
        source.suspend()
        // About five fires accumulate, then the new schedule drops them (dispatch_source_set_timer).
        waitForRingTimers(context.ring, after: .milliseconds(50))
        let delay = Duration.milliseconds(30)
        let rescheduled = ContinuousClock.now
        source.schedule(after: delay)
        let before = log.events.filter { $0.started <= rescheduled }.count
        source.resume()
        context.barrier()
        waitForRingTimers(context.ring, after: delay)
        context.barrier()
        expectNoTimerArmed(context)
        let after = log.events(after: rescheduled)
        #expect(after.map(\.data) == [1], "events after rescheduling: \(after)")
        if let fired = after.first?.started {
            #expect(fired - rescheduled >= delay, "fired early: after \(fired - rescheduled)")
        }
        #expect(log.count == before + after.count)
        cancel(source, log)
    }

    @Test("a timer never scheduled never fires", arguments: QueueKind.allCases)
    func neverScheduled(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource())
        source.resume()
        context.barrier()
        expectNoTimerArmed(context)
        #expect(log.count == 0)
        cancel(source, log)
    }

    @Test("a wall-clock timer fires once, no earlier than its delay", arguments: QueueKind.allCases)
    func wallClockOneShot(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource(clock: .wallClock))
        source.resume()
        let delay = Duration.milliseconds(50)
        let start = wallClockNow()
        source.schedule(after: delay)
        try #require(log.waitForEvents(1))
        context.barrier()
        expectNoTimerArmed(context)
        #expect(log.data == [1])
        if let fired = log.events.first?.wallClock {
            #expect(fired - start >= delay, "fired early: after \(fired - start)")
            #expect(fired - start <= delay + timerSlack, "fired late: after \(fired - start)")
        }
        cancel(source, log)
    }

    @Test("a repeating wall-clock timer keeps firing", arguments: QueueKind.allCases)
    func wallClockRepeating(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.timerSource(clock: .wallClock))
        let start = wallClockNow()
        source.schedule(after: .milliseconds(10), repeating: .milliseconds(10))
        source.resume()
        try #require(log.waitForTotal(5))
        source.cancel()
        log.expectCancelledOnce()
        // The n-th fire is due 10 ms × n after the start: the running count never gets ahead.
        var fires: UInt = 0
        for event in log.events {
            fires += event.data
            #expect(event.wallClock - start >= .milliseconds(10) * Int(fires), "fire \(fires) early")
        }
    }
}

// MARK: - Custom sources

@Suite("IOSource: custom add and or", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceCustomTests {
    @Test("add: 8 threads × 10,000 merges; the data delivered sums to the total", arguments: QueueKind.allCases)
    func addUnderThreads(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataAddSource(), holdMicroseconds: 20)
        source.resume()
        try #require(log.waitForRegistration())
        // Thread t merges t + 1 each time: 10,000 × (1 + … + 8).
        let expected: UInt = 10_000 * 36
        try #require(onThreads(8) { thread in for _ in 0..<10_000 { source.add(data: UInt(thread + 1)) } })
        #expect(log.waitForTotal(expected, seconds: 10))
        context.barrier()
        #expect(log.total == expected, "\(log.count) events")
        #expect(log.data.allSatisfy { $0 > 0 }, "an event with data 0")
        cancel(source, log)
    }

    @Test("or: 8 threads × 10,000 merges; the data delivered is the union of the bits", arguments: QueueKind.allCases)
    func orUnderThreads(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (source, log) = context.recorded(context.userDataOrSource(), holdMicroseconds: 20)
        source.resume()
        try #require(log.waitForRegistration())
        // Thread t merges bits 4t ..< 4t + 4, one at a time: 32 bits in all.
        let expected: UInt = 0xFFFF_FFFF
        try #require(
            onThreads(8) { thread in
                for index in 0..<10_000 { source.or(data: 1 << UInt(thread * 4 + index % 4)) }
            }
        )
        #expect(eventually { log.union == expected }, "union \(String(log.union, radix: 16))")
        context.barrier()
        #expect(log.union == expected)
        #expect(log.data.allSatisfy { $0 != 0 && $0 & ~expected == 0 }, "events: \(log.data.prefix(20))")
        cancel(source, log)
    }

    @Test("handlers never overlap, even on a concurrent queue")
    func noOverlapOnConcurrentQueue() throws {
        let queue = DispatchQueue(label: "source-concurrent", attributes: .concurrent)
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let log = SourceLog(barrier: HandlerBarrier(ring: ring, queue: queue), holdMicroseconds: 500)
        let source = IOSource.makeUserDataAddSource(queue: queue, ring: ring)
        log.attach(to: source)
        source.resume()
        try #require(log.waitForRegistration())
        try #require(
            onThreads(8) { _ in
                for _ in 0..<2_000 {
                    source.add(data: 1)
                    sched_yield()
                }
            }
        )
        #expect(log.waitForTotal(16_000, seconds: 10))
        ringBarrier(ring, queue: queue)
        #expect(log.total == 16_000)
        cancel(source, log)
    }

    @Test("merges while suspended come as one event on resume", arguments: QueueKind.allCases)
    func coalescesWhileSuspended(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let log = context.sourceLog()
        let add = context.userDataAddSource()
        let or = context.userDataOrSource()
        let orLog = context.sourceLog()
        log.attach(to: add)
        orLog.attach(to: or)
        add.resume()
        or.resume()
        try #require(log.waitForRegistration())
        try #require(orLog.waitForRegistration())
        add.suspend()
        or.suspend()
        for value in 1...100 {
            add.add(data: UInt(value))
            or.or(data: 1 << UInt(value % 7))
        }
        context.barrier()
        #expect(log.count == 0 && orLog.count == 0, "events while suspended")
        log.submitting { add.resume() }
        orLog.submitting { or.resume() }
        try #require(log.waitForEvents(1))
        try #require(orLog.waitForEvents(1))
        context.barrier()
        #expect(log.data == [5_050])
        #expect(orLog.data == [0x7F])
        cancel(add, log)
        cancel(or, orLog)
    }

    @Test("add(data: 0) and or(data: 0) have no effect", arguments: QueueKind.allCases)
    func mergeZero(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let log = context.sourceLog()
        let add = context.userDataAddSource()
        let or = context.userDataOrSource()
        let orLog = context.sourceLog()
        log.attach(to: add)
        orLog.attach(to: or)
        add.resume()
        or.resume()
        add.add(data: 0)
        or.or(data: 0)
        context.barrier()
        #expect(log.count == 0 && orLog.count == 0, "events after add or or of 0: \(log.data) \(orLog.data)")
        cancel(add, log)
        cancel(or, orLog)
    }

    @Test(
        "or(data:) from the handler's own queue is delivered later, not inside the call",
        arguments: QueueKind.allCases
    )
    func mergeFromHandlerQueue(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let box = _Lock<IOSourceUserDataOr?>(nil)
        let log = context.sourceLog { data in
            // Each event asks for the next one, five times.
            if data < 5 { box.withLock { $0 }?.or(data: data + 1) }
        }
        let source = context.userDataOrSource()
        box.withLock { $0 = source }
        log.attach(to: source)
        source.resume()
        source.or(data: 1)
        #expect(log.waitForEvents(5))
        context.barrier()
        #expect(log.data == [1, 2, 3, 4, 5])
        cancel(source, log)
        box.withLock { $0 = nil }
    }
}

// MARK: - Readiness

/// The stream kinds a readiness test covers.
private let readinessEndpoints: [EndpointKind] = [.pipe, .socketPair, .tcp]

@Suite("IOSource: readable and writable", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceReadinessTests {
    @Test(
        "readable: data estimates the bytes available; a handler that doesn't read fires again",
        arguments: QueueKind.allCases,
        readinessEndpoints
    )
    func readableLevelTriggered(_ queue: QueueKind, _ kind: EndpointKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(kind)
        let (source, log) = context.recorded(context.readSource(endpoint.local), holdMicroseconds: 1_000)
        source.resume()
        try #require(log.waitForRegistration())
        context.barrier()
        #expect(log.count == 0, "readable with nothing to read: \(log.data)")
        endpoint.send(patternBytes(100))
        try #require(eventually { pendingBytes(endpoint.local) == 100 })
        #expect(log.waitForEvents(3), "a readable source whose handler doesn't read fires again: \(log.data)")
        #expect(log.data.allSatisfy { $0 >= 100 }, "estimates below the 100 bytes waiting: \(log.data)")
        cancel(source, log)
        #expect(pendingBytes(endpoint.local) == 100, "the source read from the descriptor")
    }

    @Test(
        "readable: a handler that reads everything stops the events until more arrives",
        arguments: QueueKind.allCases,
        readinessEndpoints
    )
    func readableDrained(_ queue: QueueKind, _ kind: EndpointKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(kind)
        let received = _Lock<[UInt8]>([])
        let log = context.sourceLog { _ in
            let bytes = readAvailable(endpoint.local)
            received.withLock { $0 += bytes }
        }
        let source = context.readSource(endpoint.local)
        log.attach(to: source)
        source.resume()
        endpoint.send(bytes("first"))
        try #require(eventually { received.withLock { $0 } == bytes("first") })
        context.barrier()
        let afterFirst = log.count
        context.barrier()
        #expect(log.count == afterFirst, "events with nothing left to read: \(log.data)")
        endpoint.send(bytes("second"))
        #expect(eventually { received.withLock { $0 } == bytes("firstsecond") })
        #expect(log.count > afterFirst)
        cancel(source, log)
    }

    @Test("readable: end of file fires, with data 0", arguments: QueueKind.allCases, readinessEndpoints)
    func readableAtEOF(_ queue: QueueKind, _ kind: EndpointKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(kind)
        let (source, log) = context.recorded(context.readSource(endpoint.local), holdMicroseconds: 1_000)
        source.resume()
        try #require(log.waitForRegistration())
        endpoint.closeRemote()
        #expect(log.waitForEvents(1), "no event at end of file")
        #expect(log.data.first == 0, "data at end of file: \(log.data)")
        cancel(source, log)
    }

    @Test("readable: suspend stops delivery, resume restarts it", arguments: QueueKind.allCases)
    func readableSuspended(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let (source, log) = context.recorded(context.readSource(reader), holdMicroseconds: 1_000)
        writeAll(writer, bytes("waiting"))
        source.resume()
        try #require(log.waitForEvents(2))
        source.suspend()
        let suspended = ContinuousClock.now
        context.barrier()
        let during = log.events(after: suspended + suspendGrace)
        #expect(during.isEmpty, "events while suspended: \(during.count)")
        let before = log.count
        source.resume()
        #expect(log.waitForEvents(before + 1), "no event after resume")
        cancel(source, log)
    }

    @Test(
        "writable: an empty pipe or socket fires, with an estimate of the space",
        arguments: QueueKind.allCases,
        readinessEndpoints
    )
    func writable(_ queue: QueueKind, _ kind: EndpointKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(kind)
        // The end the test writes to: a pipe's write end.
        let (source, log) = context.recorded(context.writeSource(endpoint.remote), holdMicroseconds: 1_000)
        source.resume()
        #expect(log.waitForEvents(2), "a writable source whose handler doesn't write fires again: \(log.data)")
        #expect(log.data.allSatisfy { $0 > 0 }, "no space in an empty \(kind): \(log.data)")
        cancel(source, log)
    }

    @Test("writable: a full pipe fires only once the reader makes room", arguments: QueueKind.allCases)
    func writableWhenFull(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        try #require(fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK) == 0)
        let chunk = [UInt8](repeating: 7, count: 4_096)
        while write(writer, chunk, chunk.count) > 0 {}
        try #require(errno == EAGAIN)
        let (source, log) = context.recorded(context.writeSource(writer), holdMicroseconds: 1_000)
        source.resume()
        try #require(log.waitForRegistration())
        context.barrier()
        #expect(log.count == 0, "writable while full: \(log.data)")
        _ = readAvailable(reader)
        #expect(log.waitForEvents(1), "no event once the pipe was emptied")
        #expect(log.data.allSatisfy { $0 > 0 })
        cancel(source, log)
    }
}

// MARK: - Process exit

@Suite("IOSource: process exit", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceProcessTests {
    @Test(
        "process exit: one event, .exit, when the child exits; waitpid in the handler gets its status",
        arguments: QueueKind.allCases
    )
    func childExits(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        // The child exits no earlier than 100 ms after this.
        let start = ContinuousClock.now
        let pid = try spawn(["/bin/sh", "-c", "sleep 0.1; exit 3"])
        let status = _Lock<CInt?>(nil)
        let log = context.sourceLog { _ in
            var value: CInt = 0
            if waitpid(pid, &value, WNOHANG) == pid { status.withLock { $0 = value } }
        }
        let source: IOSourceProcess
        do {
            source = try context.processSource(pid)
        } catch {
            _ = reap(pid)
            throw error
        }
        log.attach(to: source)
        source.resume()
        let fired = log.waitForEvents(1)
        if !fired { _ = reap(pid) }
        try #require(fired, "no event for the child's exit")
        context.barrier()
        #expect(log.data == [IOSource.ProcessEvent.exit.rawValue])
        #expect(IOSource.ProcessEvent.exit.rawValue == 0x8000_0000, "DispatchSource.ProcessEvent's raw value")
        #expect(status.withLock { $0 }.flatMap(exitCode) == 3, "waitpid status in the handler")
        if let fired = log.events.first?.started {
            #expect(fired - start >= .milliseconds(100), "the event came before the child could have exited")
        }
        cancel(source, log)
    }

    @Test("process exit: a child that already exited (a zombie) is reported at once", arguments: QueueKind.allCases)
    func childAlreadyExited(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let pid = try spawn(["/bin/true"])
        defer { _ = reap(pid) }
        try #require(waitForExitWithoutReaping(pid))
        let source = try context.processSource(pid)
        let log = context.sourceLog()
        log.attach(to: source)
        source.resume()
        #expect(log.waitForEvents(1))
        context.barrier()
        #expect(log.data == [IOSource.ProcessEvent.exit.rawValue])
        cancel(source, log)
        #expect(reap(pid).flatMap(exitCode) == 0)
    }

    @Test(
        "process exit: the handler reads a typed event, .exit, for a child killed by a signal; handle is its pid",
        arguments: QueueKind.allCases
    )
    func typedExitEvent(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let pid = try spawn(["/bin/sleep", "30"])
        let source: IOSourceProcess
        do {
            source = try context.processSource(pid)
        } catch {
            kill(pid, SIGKILL)
            _ = reap(pid)
            throw error
        }
        #expect(source.handle == pid)
        #expect(source.data.isEmpty, "an event before any: \(source.data)")
        // What the handler reads, typed: the events, and whether the child is gone by then.
        let seen = _Lock<[(event: IOSource.ProcessEvent, exited: Bool)]>([])
        let box = _Lock<IOSourceProcess?>(source)
        let log = context.sourceLog(holdMicroseconds: 0) { _ in
            guard let source = box.withLock({ $0 }) else { return }
            let event = source.data
            seen.withLock { $0.append((event, waitForExitWithoutReaping(pid, seconds: 0))) }
        }
        log.attach(to: source)
        source.resume()
        try #require(log.waitForRegistration())
        context.barrier()
        #expect(seen.withLock { $0.isEmpty }, "an event while the child still runs")
        kill(pid, SIGKILL)
        let fired = eventually { !seen.withLock { $0.isEmpty } }
        let status = reap(pid)
        try #require(fired, "no event for the child's exit")
        context.barrier()
        let events = seen.withLock { $0 }
        #expect(events.count == 1, "events: \(events.map(\.event))")
        #expect(events.first?.event == .exit)
        #expect(events.first?.event.contains(.exit) == true)
        #expect(events.first?.exited == true, "the event came before the child had exited")
        #expect(status.map { $0 & 0x7f } == SIGKILL, "the child did not end by SIGKILL: \(String(describing: status))")
        cancel(source, log)
        box.withLock { $0 = nil }
    }

    @Test("process exit: ESRCH for a process that does not exist", arguments: QueueKind.allCases)
    func noSuchProcess(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let pid = try spawn(["/bin/true"])
        try #require(reap(pid) != nil)
        #expect(throws: Errno.noSuchProcess) { _ = try context.processSource(pid) }
    }
}

// MARK: - Signals, each in a child process

/// Sends `signal` to the process `count` times, each once the last was taken (no longer
/// pending), so that the kernel cannot merge two; then waits for `log`'s total to reach `count`.
private func sendOneByOne(_ signal: CInt, count: Int, expecting logs: [SourceLog], from start: UInt = 0) {
    for index in 1...count {
        kill(getpid(), signal)
        let taken = eventually(seconds: 5) {
            logs.allSatisfy { $0.total >= start + UInt(index) }
        }
        #expect(taken, "signal \(index) of \(count) not delivered: totals \(logs.map(\.total))")
        if !taken { return }
    }
}

/// Signals reach a signal source: the data of its events adds up to the signals sent.
func signalsAreCounted(_ queue: QueueKind) throws {
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (source, log) = context.recorded(context.signalSource(SIGUSR1))
    source.resume()
    try #require(log.waitForRegistration(), "no registration handler within 5 s")
    sendOneByOne(SIGUSR1, count: 5, expecting: [log])
    context.barrier()
    #expect(log.total == 5, "events: \(log.data)")
    cancel(source, log)
}

/// Signals that arrive while the source is suspended come as one event with the count.
func signalsCoalesceWhileSuspended(_ queue: QueueKind) throws {
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let (source, log) = context.recorded(context.signalSource(SIGUSR1))
    source.resume()
    try #require(log.waitForRegistration(), "no registration handler within 5 s")
    sendOneByOne(SIGUSR1, count: 1, expecting: [log])
    source.suspend()
    for index in 1...4 {
        kill(getpid(), SIGUSR1)
        let taken = eventually(seconds: 2) { !isPendingForProcess(SIGUSR1) }
        #expect(taken, "signal \(index) stayed pending while the source was suspended: the kernel merges it")
    }
    context.barrier()
    #expect(log.count == 1, "events while suspended: \(log.data)")
    source.resume()
    #expect(log.waitForEvents(2), "no event after resume: \(log.data)")
    context.barrier()
    #expect(log.data == [1, 4], "events: \(log.data) (expected [1, 4])")
    cancel(source, log)
}

/// A C handler that counts SIGUSR1.
private let usr1Caught = Atomic<Int>(0)
private let countingHandler: @convention(c) (CInt) -> Void = { _ in
    usr1Caught.add(1, ordering: .relaxed)
}

/// Two sources on one signal both see every signal; the disposition in force before the first
/// source is back once the last is cancelled, and the signal reaches it again.
func twoSourcesThenDispositionRestored(_ queue: QueueKind) throws {
    _ = usr1Caught.load(ordering: .relaxed)
    setDisposition(of: SIGUSR1, to: countingHandler)
    let before = disposition(of: SIGUSR1)
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    let first = context.signalSource(SIGUSR1)
    let second = context.signalSource(SIGUSR1)
    let firstLog = context.sourceLog()
    let secondLog = context.sourceLog()
    firstLog.attach(to: first)
    secondLog.attach(to: second)
    first.resume()
    second.resume()
    try #require(
        firstLog.waitForRegistration() && secondLog.waitForRegistration(),
        "no registration handlers within 5 s"
    )
    sendOneByOne(SIGUSR1, count: 3, expecting: [firstLog, secondLog])
    context.barrier()
    #expect(firstLog.total == 3 && secondLog.total == 3, "\(firstLog.data) \(secondLog.data)")
    cancel(first, firstLog)
    // The other source still gets the signal.
    sendOneByOne(SIGUSR1, count: 1, expecting: [secondLog], from: 3)
    cancel(second, secondLog)
    let after = disposition(of: SIGUSR1)
    #expect(
        after.handler == before.handler,
        "the handler before the first source is not back: \(after.handler) instead of \(before.handler)"
    )
    #expect(after.flags == before.flags, "flags before \(before.flags), after \(after.flags)")
    let caught = usr1Caught.load(ordering: .relaxed)
    kill(getpid(), SIGUSR1)
    #expect(
        eventually(seconds: 5) { usr1Caught.load(ordering: .relaxed) > caught },
        "after the last source, SIGUSR1 does not reach the restored handler (still blocked?)"
    )
    setDisposition(of: SIGUSR1, to: nil)
}

/// The pattern of the example servers: SIG_IGN first, then a signal source. The signal still
/// reaches the source, and SIG_IGN is back after it is cancelled; likewise SIG_DFL.
private func ignoredSignalReachesSource(_ queue: QueueKind) throws {
    let context = try ChannelContext(queue)
    defer { context.shutdown() }
    signal(SIGUSR2, SIG_IGN)
    let ignored = disposition(of: SIGUSR2)
    let (source, log) = context.recorded(context.signalSource(SIGUSR2))
    source.resume()
    try #require(log.waitForRegistration(), "no registration handler within 5 s")
    sendOneByOne(SIGUSR2, count: 2, expecting: [log])
    cancel(source, log)
    #expect(disposition(of: SIGUSR2).handler == ignored.handler, "SIG_IGN is not back: \(disposition(of: SIGUSR2))")

    // SIG_DFL: the source must hold the signal off while it lives (SIGUSR2 would end the process).
    setDisposition(of: SIGUSR2, to: nil)
    let (defaultSource, defaultLog) = context.recorded(context.signalSource(SIGUSR2))
    defaultSource.resume()
    try #require(defaultLog.waitForRegistration(), "no registration handler within 5 s")
    sendOneByOne(SIGUSR2, count: 1, expecting: [defaultLog])
    cancel(defaultSource, defaultLog)
    #expect(disposition(of: SIGUSR2).handler == 0, "SIG_DFL is not back: \(disposition(of: SIGUSR2))")
}

@Suite("IOSource: signals, in a child process", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct SourceSignalTests {
    @Test("signal: SIG_IGN (or SIG_DFL) first, then a source: it gets the signal; the disposition is restored")
    func ignoredFirst() async {
        await #expect(processExitsWith: .success) { try ignoredSignalReachesSource(.ring) }
    }
}
