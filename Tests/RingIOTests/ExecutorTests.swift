//===----------------------------------------------------------------------===//
// RingIO — the rings as Swift concurrency executors: where tasks and actors run, in what
// order, what an actor on a ring costs in wake-ups, cancellation of awaits on and off the
// ring, a dropped `reads()`, shutdown under suspended tasks, and slow turns.
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

// MARK: - Support

// Off the ring, these tests use `testTaskExecutor` (threads of its own), not the global
// concurrent executor: synchronous tests running in parallel block the cooperative pool's
// threads (two on this machine) for seconds at a time, and a test waiting for one would measure
// that wait, not RingIO. Seen from a ring, both are "another thread": one hop each way. Each
// test's body runs there too (`withTaskExecutorPreference(testTaskExecutor)`).

/// Who runs the echo of the wake-up test.
enum ExecutorTestEcho: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case taskOnRing = "a task on ring.taskExecutor"
    case actorOnRing = "an actor on ring.serialExecutor"
    case offRing = "a task off the ring"

    var testDescription: String { self.rawValue }
}

/// Where a test's task runs.
enum ExecutorTestPlacement: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `Task(executorPreference: ring.taskExecutor)`: on the channel's ring thread.
    case ring
    /// A task off the ring (on `testTaskExecutor`): one hop each way.
    case offRing

    var testDescription: String { self.rawValue }

    /// The preference a task of this placement is started with.
    func preference(_ ring: RingLoop) -> any TaskExecutor {
        switch self {
        case .ring: ring.taskExecutor
        case .offRing: testTaskExecutor
        }
    }
}

/// Runs `body` on the ring thread (as a closure enqueued on the ring) and returns its result.
private func onRing<T: Sendable>(_ ring: RingLoop, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        ring.enqueue { continuation.resume(returning: body()) }
    }
}

/// Plays the peer of an echo: `rounds` times, sends `size` bytes and reads them back; then
/// shuts down its sending side (the echo sees the end of the stream; the descriptor stays the
/// caller's to close). Returns the rounds that did not come back right (the first one ends
/// the game, so that a stalled echo costs one time-out, not one per round).
private func pingPong(_ fd: CInt, rounds: Int, size: Int) -> Int {
    setReceiveTimeout(fd, seconds: 10)
    var played = 0
    while played < rounds {
        let message = patternBytes(size, seed: played)
        writeAll(fd, message)
        guard readExactly(fd, size) == message else { break }
        played += 1
    }
    shutdown(fd, Int32(SHUT_WR))
    return rounds - played
}

/// An actor that lives on a ring, as the README shows: its jobs run on the ring thread.
/// How many actor reads have started (``ExecutorTests/shutdownWithSuspendedTasks``).
private final class ActorReadCount: Sendable {
    let count = Atomic<Int>(0)
}

private actor RingLog {
    let ring: RingLoop
    private(set) var entries: [Int] = []
    /// Jobs of this actor that ran off the ring thread (must stay 0).
    private(set) var offRing = 0

    init(ring: RingLoop) {
        self.ring = ring
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.ring.serialExecutor.asUnownedSerialExecutor()
    }

    func append(_ value: Int) {
        if !self.ring.isCurrentThread { self.offRing += 1 }
        self.entries.append(value)
    }

    /// Starts a task per value, in order, from this actor: each task inherits the actor's
    /// isolation, so its first job is enqueued on the ring's serial executor as it is created,
    /// from the ring thread.
    func startAppending(_ values: Range<Int>) {
        for value in values {
            Task { self.append(value) }
        }
    }

    /// Starts a task that appends `first`, from the ring thread; then, still in this job,
    /// runs `elsewhere`, which makes another thread enqueue a job of this actor and returns
    /// once it has. The task's job was enqueued first.
    func appendThenLetAnotherThreadEnqueue(_ first: Int, elsewhere: @Sendable () -> Void) {
        Task { self.append(first) }
        elsewhere()
    }
}

/// An actor on another ring that starts tasks in order; each hops onto `log`'s ring, whose
/// serial executor then gets the jobs from another thread (through its inbox).
private actor OtherRingStarter {
    let ring: RingLoop

    init(ring: RingLoop) {
        self.ring = ring
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.ring.serialExecutor.asUnownedSerialExecutor()
    }

    /// Starts a task per value, in order: each inherits this actor's isolation, runs on its
    /// ring in turn, and enqueues its call of `log` on `log`'s ring from there.
    func startAppending(_ values: Range<Int>, to log: RingLog) {
        for value in values {
            Task { await self.hop(value, to: log) }
        }
    }

    private func hop(_ value: Int, to log: RingLog) async {
        await log.append(value)
    }
}

/// An actor on a ring that echoes a channel of the same ring: as documented, every await
/// completes on the ring thread with no hop.
///
/// The channel's awaits pass the actor's isolation on to the closures they suspend in, so the
/// operations are scheduled from the ring thread. A resumed await first lands on the task's
/// executor and then hops to the actor's: run from a task that prefers the ring, both are on
/// the ring thread and there is no wake-up.
private actor RingEcho {
    let ring: RingLoop
    let channel: IOChannel

    init(ring: RingLoop, channel: IOChannel) {
        self.ring = ring
        self.channel = channel
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.ring.serialExecutor.asUnownedSerialExecutor()
    }

    /// Echoes until the end of the stream. Returns the bytes echoed and the resumptions that
    /// came back off the ring thread (must be 0).
    func run() async throws(Errno) -> (bytes: Int, offRing: Int) {
        var bytes = 0
        var offRing = 0
        for try await data in self.channel.reads() {
            if !self.ring.isCurrentThread { offRing += 1 }
            try await self.channel.write(data)
            if !self.ring.isCurrentThread { offRing += 1 }
            bytes += data.count
        }
        return (bytes, offRing)
    }
}

/// Echoes `channel` until the end of the stream, from wherever the calling task runs.
/// Returns the bytes echoed and the resumptions that came back off `ring`'s thread.
private func echo(_ channel: IOChannel, ring: RingLoop) async throws(Errno) -> (bytes: Int, offRing: Int) {
    var bytes = 0
    var offRing = 0
    for try await data in channel.reads() {
        if !ring.isCurrentThread { offRing += 1 }
        try await channel.write(data)
        if !ring.isCurrentThread { offRing += 1 }
        bytes += data.count
    }
    return (bytes, offRing)
}

// MARK: - Where jobs run

@Suite("RingLoop: Swift concurrency executors", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ExecutorTests {
    @Test("a task that prefers ring.taskExecutor runs on the ring thread, and so do its child tasks")
    func taskExecutorRunsOnRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            let other = try RingLoop(entries: 64)
            defer {
                ring.shutdown()
                other.shutdown()
            }
            #expect(!ring.isCurrentThread && !ring.taskExecutor.isCurrentThread)

            let outcome = await bounded { () -> [String: Bool] in
                await Task(executorPreference: ring.taskExecutor) { () -> [String: Bool] in
                    var seen: [String: Bool] = [:]
                    seen["body"] = ring.isCurrentThread && ring.taskExecutor.isCurrentThread
                    seen["other ring"] = other.isCurrentThread
                    await Task.yield()
                    seen["after a suspension"] = ring.isCurrentThread
                    async let child = ring.isCurrentThread
                    seen["async let"] = await child
                    let inGroup = await withTaskGroup(of: Bool.self) { group in
                        for _ in 0..<8 { group.addTask { ring.isCurrentThread } }
                        return await group.reduce(into: [Bool]()) { $0.append($1) }
                    }
                    seen["task group (8 children)"] = inGroup == Array(repeating: true, count: 8)
                    let discarding = Counter()
                    await withDiscardingTaskGroup { group in
                        for _ in 0..<8 {
                            group.addTask { if ring.isCurrentThread { discarding.increment() } }
                        }
                    }
                    seen["discarding task group (8 children)"] = discarding.count == 8
                    // An explicit preference for the other ring moves a child there.
                    seen["child preferring the other ring"] = await withTaskGroup(of: Bool.self) { group in
                        group.addTask(executorPreference: other.taskExecutor) {
                            other.isCurrentThread && !ring.isCurrentThread
                        }
                        return await group.next() ?? false
                    }
                    return seen
                }.value
            }
            let seen = try #require(try outcome?.get(), "the task did not finish within 10 s")
            #expect(
                seen == [
                    "body": true, "other ring": false, "after a suspension": true, "async let": true,
                    "task group (8 children)": true, "discarding task group (8 children)": true,
                    "child preferring the other ring": true,
                ]
            )
        }
    }

    @Test("withTaskExecutorPreference(ring.taskExecutor) runs its body and its children on the ring")
    func withTaskExecutorPreferenceRunsOnRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let outcome = await bounded { () -> [Bool] in
                // From a task off the ring.
                let before = ring.isCurrentThread
                let inside = await withTaskExecutorPreference(ring.taskExecutor) { () async -> [Bool] in
                    var seen = [ring.isCurrentThread]
                    await onThread {}  // suspended, resumed from another thread
                    seen.append(ring.isCurrentThread)
                    async let child = ring.isCurrentThread
                    seen.append(await child)
                    return seen
                }
                return [before] + inside
            }
            let seen = try #require(try outcome?.get(), "the body did not finish within 10 s")
            #expect(seen == [false, true, true, true], "[before, in the body, after a sleep, async let]")
        }
    }

    // MARK: The serial executor

    @Test("an actor on ring.serialExecutor runs on the ring; jobs enqueued in order run in order")
    func serialExecutorFIFO() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            let other = try RingLoop(entries: 64)
            defer {
                ring.shutdown()
                other.shutdown()
            }
            let log = RingLog(ring: ring)
            let count = 2_000

            // From the ring thread: tasks started by the actor itself.
            await log.startAppending(0..<count)
            let holds1 = await waitUntil { await log.entries.count >= count }
            #expect(holds1)
            // From another thread: tasks started in order by an actor on another ring, each
            // hopping onto the ring actor.
            await OtherRingStarter(ring: other).startAppending(count..<2 * count, to: log)
            let filled = await waitUntil { await log.entries.count >= 2 * count }
            let entries = await log.entries
            #expect(filled, "entries: \(entries.count) of \(2 * count)")
            let fromRing = Array(entries.prefix(count))
            let fromElsewhere = Array(entries.dropFirst(count))
            let firstOutOfOrder = fromRing.indices.first { fromRing[$0] != $0 }
            #expect(
                fromRing == Array(0..<count),
                "enqueued from the ring thread: first out of order at \(firstOutOfOrder ?? -1)"
            )
            let firstOutOfOrderElsewhere = fromElsewhere.indices.first { fromElsewhere[$0] != count + $0 }
            #expect(
                fromElsewhere == Array(count..<2 * count),
                "enqueued from another thread: \(fromElsewhere.count) entries, first out of order at \(firstOutOfOrderElsewhere ?? -1)"
            )
            #expect(await log.offRing == 0, "actor jobs that ran off the ring thread")
        }
    }

    // A job enqueued on the serial executor from the ring thread waits in the ring's local
    // list; a job enqueued later from another thread must not overtake it
    // (RingSerialExecutor.enqueue: "after the jobs enqueued before it. Any thread.").
    @Test("FIFO across threads: a job enqueued from the ring runs before one enqueued after it elsewhere")
    func serialExecutorFIFOAcrossThreads() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let log = RingLog(ring: ring)
            let other = try RingLoop(entries: 64)
            defer { other.shutdown() }
            await log.appendThenLetAnotherThreadEnqueue(1) {
                // On the ring thread, inside the actor's job: another thread (another ring's)
                // enqueues a job of the actor (a task hopping onto it) while this one holds the ring.
                let hopping = Counter()
                Task(executorPreference: other.taskExecutor) {
                    hopping.increment()
                    await log.append(2)
                }
                _ = eventually(seconds: 5) { hopping.count > 0 }
                // The hop enqueues right after the flag, in the same job of the other ring: a
                // barrier through that ring passes once the job is done.
                ringBarrier(other)
            }
            let holds2 = await waitUntil { await log.entries.count >= 2 }
            #expect(holds2)
            let entries = await log.entries
            #expect(entries == [1, 2], "the job enqueued first ran second")
        }
    }

    @Test("assumeIsolated and checkIsolated succeed on the ring thread: in ring jobs and ring-queue handlers")
    func assumeIsolatedOnRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let log = RingLog(ring: ring)
            await log.append(7)

            // Off the ring: not isolated.
            #expect(ring.serialExecutor.isIsolatingCurrentContext() == false)

            // A closure enqueued on the ring.
            let fromJob = await bounded {
                await onRing(ring) { () -> [Int] in
                    ring.serialExecutor.checkIsolated()
                    guard ring.serialExecutor.isIsolatingCurrentContext() == true else { return [] }
                    return log.assumeIsolated { log in
                        log.append(8)
                        return log.entries
                    }
                }
            }
            #expect(try fromJob?.get() == [7, 8])

            // A channel handler delivered on the ring (queue: ring).
            let pair = try RingSocketPair(on: ring)
            let fromHandler = _Lock<[Int]?>(nil)
            writeAll(pair.peer, bytes("abc"))
            pair.channel.read(offset: 0, length: 3, queue: ring) { done, _, _ in
                guard done else { return }
                ring.serialExecutor.checkIsolated()
                let entries = log.assumeIsolated { log in
                    log.append(9)
                    return log.entries
                }
                fromHandler.withLock { $0 = entries }
            }
            let holds3 = await waitUntil { fromHandler.withLock { $0 != nil } }
            #expect(holds3)
            #expect(fromHandler.withLock { $0 } == [7, 8, 9])
            #expect(await log.offRing == 0)
            await pair.finish()
        }
    }

    @Test("checkIsolated() off the ring thread is a precondition failure")
    func checkIsolatedOffRing() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let ring = try RingLoop(entries: 8)
            ring.serialExecutor.checkIsolated()
        }
        let output = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(output.contains("expected to run on the ring's serial executor"), "stderr: \(output)")
    }

    // MARK: No hop

    @Test(
        "echoing a channel from its own ring makes no wake-up per round trip; from another thread it does",
        arguments: ExecutorTestEcho.allCases
    )
    func echoWakeUps(_ runner: ExecutorTestEcho) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let rounds = 2_000
            let size = 64
            let pair = try RingSocketPair(on: ring)
            let channel = pair.channel
            // Let the channel's set-up on the ring settle before counting.
            await onRing(ring) {}
            let before = ring.counters
            let peer = pair.peer
            async let wrong = onThread { pingPong(peer, rounds: rounds, size: size) }
            let outcome = await bounded(seconds: 60) { () async throws -> (bytes: Int, offRing: Int) in
                switch runner {
                case .taskOnRing:
                    try await Task(executorPreference: ring.taskExecutor) { try await echo(channel, ring: ring) }.value
                case .actorOnRing:
                    // As documented: the task that enters the actor prefers the ring too (an
                    // await resumes on the task's executor, then hops to the actor's).
                    try await Task(executorPreference: ring.taskExecutor) {
                        try await RingEcho(ring: ring, channel: channel).run()
                    }.value
                case .offRing:
                    try await Task(executorPreference: testTaskExecutor) { try await echo(channel, ring: ring) }.value
                }
            }
            let wrongRounds = await wrong
            let wakeUps = ring.counters.wakeUps - before.wakeUps
            let result = try #require(try outcome?.get(), "the echo did not end within 60 s")
            #expect(wrongRounds == 0, "round trips that came back wrong")
            #expect(result.bytes == rounds * size)
            switch runner {
            case .taskOnRing:
                #expect(result.offRing == 0, "resumptions off the ring thread")
                // At most one to start the task from this one; nothing per round trip.
                #expect(wakeUps <= 5, "wake-ups for \(rounds) round trips: \(wakeUps)")
            case .actorOnRing:
                #expect(result.offRing == 0, "actor code off the ring thread")
                // The channel's awaits stay on the actor (they pass its isolation on): no hop.
                #expect(wakeUps <= 5, "wake-ups for \(rounds) round trips: \(wakeUps)")
            case .offRing:
                // Each operation is scheduled from another thread, through the ring's inbox, and the
                // ring is woken for it when it sleeps: the counter sees the hops the ring's own
                // executors avoid. (About one per round trip when the machine is idle; fewer when
                // the ring is kept busy or preempted, so the bound is loose.)
                #expect(wakeUps >= UInt64(rounds / 40), "wake-ups for \(rounds) round trips: \(wakeUps)")
            }
            await pair.finish()
        }
    }

    // MARK: Cancellation

    @Test(
        "cancelling a task awaiting read(length:) with no data: ECANCELED at once; the channel stays usable",
        arguments: ExecutorTestPlacement.allCases
    )
    func cancelRead(_ placement: ExecutorTestPlacement) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let pair = try RingSocketPair(on: ring)
            let channel = pair.channel
            let task = Task(executorPreference: placement.preference(ring)) {
                Array(try await channel.read(length: 100))
            }
            // Suspended in the read by now: its submission has reached the ring (and a task off
            // the ring has had the ring's two turns to get there).
            await ringBarrier(ring)
            await ringBarrier(ring)
            task.cancel()
            await expectCancelled(task)

            // Bytes sent after the cancellation are for the next read.
            await expectNextRead("after", pair, placement)
            await pair.finish()
        }
    }

    @Test(
        "cancelling a task iterating reads(): the bytes so far, then ECANCELED; the channel stays usable",
        arguments: ExecutorTestPlacement.allCases
    )
    func cancelReads(_ placement: ExecutorTestPlacement) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let pair = try RingSocketPair(on: ring)
            let channel = pair.channel
            let seen = _Lock<[UInt8]>([])
            let task = Task(executorPreference: placement.preference(ring)) {
                for try await data in channel.reads() {
                    seen.withLock { $0 += Array(data) }
                }
            }
            writeAll(pair.peer, bytes("abc"))
            let holds4 = await waitUntil { seen.withLock { $0 } == bytes("abc") }
            #expect(holds4)
            task.cancel()
            await expectCancelled(task)
            #expect(seen.withLock { $0 } == bytes("abc"))

            await expectNextRead("next", pair, placement)
            await pair.finish()
        }
    }

    @Test(
        "cancelling a write blocked by a peer that does not read: ECANCELED; the channel goes on after what the kernel took",
        arguments: ExecutorTestPlacement.allCases
    )
    func cancelBlockedWrite(_ placement: ExecutorTestPlacement) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let pair = try RingSocketPair(on: ring)
            let channel = pair.channel
            let sent = patternBytes(8 * 1_048_576, seed: 40)
            let data = ByteRope(copying: sent)
            let task = Task(executorPreference: placement.preference(ring)) {
                try await channel.write(data)
            }
            // The socket buffers fill, and the write waits for the peer.
            var pending = -1
            let full = await waitUntil {
                let now = pendingBytes(pair.peer)
                defer { pending = now }
                return now > 0 && now == pending
            }
            try #require(full, "the peer's socket buffer did not fill")
            await ringBarrier(ring)
            task.cancel()
            await expectCancelled(task)

            // The channel still writes: the peer gets a prefix of the cancelled data (what the
            // kernel took), then the next write's bytes, nothing else.
            let peer = pair.peer
            let received = _Lock<[UInt8]?>(nil)
            DispatchQueue.global().async {
                let all = readToEnd(peer)
                received.withLock { $0 = all }
            }
            let marker = bytes("<the write after the cancelled one>")
            let next = Outcome(
                await bounded {
                    try await Task(executorPreference: placement.preference(ring)) {
                        try await channel.write(ByteRope(copying: marker))
                    }.value
                }
            )
            #expect(next == .bytes([]), "\(next)")
            channel.close()
            await pair.cleanup.expectOnceAsync(nil)
            // Closed once the channel is done with it: the peer's reader sees the end.
            if pair.cleanup.wasCalled { close(pair.local) }
            let sawEnd = await waitUntil { received.withLock { $0 != nil } }
            #expect(sawEnd, "the peer did not see the end")
            let all = received.withLock { $0 } ?? []
            let prefix = all.count - marker.count
            #expect(prefix > 0 && prefix < sent.count, "\(prefix) bytes of the cancelled write arrived")
            if prefix >= 0 && prefix <= sent.count {
                expectSameBytes(Array(all[..<prefix]), Array(sent[..<prefix]), "the cancelled write's bytes")
                #expect(Array(all[prefix...]) == marker, "the next write's bytes")
            }
            // Left open when the reader still runs: it must not read another test's descriptor.
            if sawEnd { close(pair.peer) }
        }
    }

    @Test(
        "breaking out of reads() stops the read: later reads and iterations get the bytes sent after",
        arguments: ExecutorTestPlacement.allCases
    )
    func droppedReadsIterator(_ placement: ExecutorTestPlacement) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop(entries: 64)
            defer { ring.shutdown() }
            let pair = try RingSocketPair(on: ring)
            let channel = pair.channel
            writeAll(pair.peer, bytes("abc"))
            let first = Outcome(
                await bounded {
                    try await Task(executorPreference: placement.preference(ring)) { () async throws -> [UInt8] in
                        for try await data in channel.reads() {
                            return Array(data)  // ends the iteration early: the iterator is dropped
                        }
                        return []
                    }.value
                }
            )
            #expect(first == .bytes(bytes("abc")), "\(first)")
            // From off the ring the stop reaches the ring through its inbox: let it get
            // there (the ring runs its inbox in order) before sending more.
            await onRing(ring) {}

            writeAll(pair.peer, bytes("defgh"))
            let read = Outcome(
                await bounded {
                    try await Task(executorPreference: placement.preference(ring)) {
                        Array(try await channel.read(length: 5))
                    }.value
                }
            )
            #expect(read == .bytes(bytes("defgh")), "bytes sent after the iteration ended: \(read)")

            writeAll(pair.peer, bytes("ijk"))
            close(pair.peer)
            let again = Outcome(
                await bounded {
                    try await Task(executorPreference: placement.preference(ring)) { () async throws -> [UInt8] in
                        var all: [UInt8] = []
                        for try await data in channel.reads() { all += Array(data) }
                        return all
                    }.value
                }
            )
            #expect(again == .bytes(bytes("ijk")), "a second iteration, to the end: \(again)")
            channel.close()
            await pair.cleanup.expectOnceAsync(nil)
            if pair.cleanup.wasCalled { close(pair.local) }
        }
    }

    // MARK: Shutdown

    @Test("group shutdown with tasks suspended on its rings: shutdown returns, the tasks throw ECANCELED")
    func shutdownWithSuspendedTasks() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 2, entries: 64)
            var pairs: [(local: CInt, peer: CInt)] = []
            var tasks: [Task<[UInt8], any Error>] = []
            var channels: [IOChannel] = []
            let actorsReading = ActorReadCount()
            for index in 0..<6 {
                let ring = group.rings[index % 2]
                let pair = try makeSocketPair()
                pairs.append(pair)
                let channel = IOChannel(kind: .stream, fileDescriptor: pair.0, queue: ring) { _ in }
                channels.append(channel)
                switch index % 3 {
                case 0:
                    tasks.append(
                        Task(executorPreference: ring.taskExecutor) { Array(try await channel.read(length: 10)) }
                    )
                case 1:
                    tasks.append(
                        Task(executorPreference: ring.taskExecutor) {
                            var all: [UInt8] = []
                            for try await data in channel.reads() { all += Array(data) }
                            return all
                        }
                    )
                default:
                    let log = RingLog(ring: ring)
                    tasks.append(
                        Task(executorPreference: testTaskExecutor) {
                            // An actor on the ring awaiting the channel.
                            try await Self.readOnActor(log, channel, counting: actorsReading)
                        }
                    )
                }
            }
            // The actors' tasks start on the tests' executor and hop to their rings: wait until
            // both have, or a late one would start after the shutdown, off its ring.
            let actorsStarted = await waitUntil(seconds: 30) { actorsReading.count.load(ordering: .acquiring) == 2 }
            #expect(actorsStarted, "the actors' reads did not start on their rings")
            // Every task is suspended in its read: the rings have run what the tasks submitted.
            for ring in group.rings {
                await ringBarrier(ring)
                await ringBarrier(ring)
            }

            let returned = Atomic<Bool>(false)
            DispatchQueue.global().async {
                group.shutdown()
                returned.store(true, ordering: .releasing)
            }
            let shutDown = await waitUntil(seconds: 10) { returned.load(ordering: .acquiring) }
            #expect(shutDown, "group.shutdown() did not return within 10 s")
            for (index, task) in tasks.enumerated() {
                let outcome = Outcome(await bounded { try await task.value })
                #expect(outcome == .error(.canceled), "task \(index): \(outcome)")
            }
            withExtendedLifetime(channels) {}
            // The channels' descriptors stay open for the life of the process, on purpose: their
            // rings are gone, so their cleanup handlers never run, and a channel made later on a
            // reused descriptor number would join the dead ring (see
            // `descriptorNumberReusedAfterShutdown`). The peers have no channel.
            guard shutDown else { return }
            for pair in pairs { close(pair.peer) }
        }
    }

    // A ring shut down under an open channel never cleans the channel up (its close is a job
    // for a ring that is gone), so the descriptor's entry stays in the process-wide registry.
    // Once the number is reused, a channel made on it must get an entry of its own on the ring
    // it was given, not join the stale one. The test uses a high descriptor number of its own
    // (dup2).
    @Test("a descriptor number reused after its ring shut down under an open channel: a new channel works")
    func descriptorNumberReusedAfterShutdown() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            var limit = rlimit()
            try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
            let number = CInt(clamping: min(UInt64(limit.rlim_cur), 1 << 16)) - 10
            try #require(number > 256 && fcntl(number, F_GETFD) == -1, "descriptor \(number) is not free")

            let dead = try RingLoop(entries: 8)
            let (first, firstPeer) = try makeSocketPair()
            try #require(dup2(first, number) == number)
            close(first)
            let old = IOChannel(kind: .stream, fileDescriptor: number, queue: dead) { _ in }
            await onRing(dead) {}
            await dead.shutdown()
            old.close()  // too late: the ring is gone, the cleanup handler cannot run
            close(number)
            close(firstPeer)

            let ring = try RingLoop(entries: 8)
            defer { ring.shutdown() }
            let (second, secondPeer) = try makeSocketPair()
            try #require(dup2(second, number) == number)
            close(second)
            let cleanup = CleanupLog()
            let channel = IOChannel(kind: .stream, fileDescriptor: number, queue: ring, cleanupHandler: cleanup.handler)
            writeAll(secondPeer, bytes("x"))
            let read = Outcome(await bounded(seconds: 5) { Array(try await channel.read(length: 1)) })
            channel.close()
            let cleanedUp = await waitUntil(seconds: 2) { cleanup.wasCalled }
            #expect(_RingIOTesting.ring(of: channel) === ring, "the channel's ring is the one that shut down")
            #expect(read == .bytes(bytes("x")), "\(read)")
            #expect(cleanedUp, "the cleanup handler did not run")
            close(number)
            close(secondPeer)
        }
    }

    /// Reads on `log`'s ring, isolated to it.
    private static func readOnActor(
        _ log: isolated RingLog,
        _ channel: IOChannel,
        counting started: ActorReadCount
    ) async throws(Errno) -> [UInt8] {
        #expect(log.ring.isCurrentThread, "an actor of the ring off its thread")
        started.count.add(1, ordering: .releasing)
        return Array(try await channel.read(length: 10))
    }

    // MARK: Slow turns

    @Test("a task that runs 50 ms without suspending shows in longestTurn and slowTurns")
    func slowTurnCounted() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            #expect(RingLoop.slowTurnThreshold == .milliseconds(10))
            let ring = try RingLoop(entries: 8)
            defer { ring.shutdown() }
            await onRing(ring) {}
            let before = ring.counters
            let ran = await bounded {
                await Task(executorPreference: ring.taskExecutor) { () -> Bool in
                    let clock = ContinuousClock()
                    let start = clock.now
                    while clock.now - start < .milliseconds(50) {}
                    return ring.isCurrentThread
                }.value
            }
            #expect(try ran?.get() == true)
            // The turn is measured when the ring goes back to the kernel, after the task returned.
            let counted = await waitUntil(seconds: 5) { ring.counters.slowTurns > before.slowTurns }
            let after = ring.counters
            #expect(counted, "slowTurns: \(before.slowTurns) → \(after.slowTurns)")
            // Turns are timed with the coarse clock, whose tick is up to 10 ms (HZ=100): a turn
            // of 30 ms once measured 19.999998 ms. 50 ms leaves room for two ticks.
            #expect(after.longestTurn >= .milliseconds(30), "longestTurn: \(after.longestTurn)")
        }
    }
}

/// Waits (bounded) for `task`, which the test cancelled, and expects it to end with ECANCELED.
private func expectCancelled<T: Sendable>(
    _ task: Task<T, any Error>,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let outcome = Outcome(await bounded { () async throws -> Void in _ = try await task.value })
    #expect(outcome == .error(.canceled), "\(outcome)", sourceLocation: sourceLocation)
}

/// Sends `text` from the peer and expects a read of its length — in a task placed as
/// `placement` says — to get exactly it: the channel is still usable.
private func expectNextRead(
    _ text: String,
    _ pair: RingSocketPair,
    _ placement: ExecutorTestPlacement,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    writeAll(pair.peer, bytes(text))
    let (channel, ring) = (pair.channel, pair.ring)
    let next = Outcome(
        await bounded {
            try await Task(executorPreference: placement.preference(ring)) {
                Array(try await channel.read(length: text.utf8.count))
            }.value
        }
    )
    #expect(next == .bytes(bytes(text)), "\(next)", sourceLocation: sourceLocation)
}
