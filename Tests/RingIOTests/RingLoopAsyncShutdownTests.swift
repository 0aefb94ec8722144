//===----------------------------------------------------------------------===//
// RingIO — RingLoop.shutdown() async and RingLoopGroup.shutdown() async return once the ring
// threads have finished; a RingLoop released without a shutdown does not wait for its thread.
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

/// The kernel's identity of the calling thread (its task id), from `/proc/thread-self`
/// (`<pid>/task/<tid>`).
private func currentThreadID() -> Int? {
    var buffer = [CChar](repeating: 0, count: 256)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return target.split(separator: "/").last.flatMap { Int($0) }
}

/// Whether this process still has the thread `id`.
private func threadExists(_ id: Int) -> Bool {
    access("/proc/self/task/\(id)", F_OK) == 0
}

/// The task id of `ring`'s thread (asked on that thread).
private func ringThreadID(_ ring: RingLoop) throws -> Int {
    let id = _Lock<Int?>(nil)
    let done = DispatchSemaphore(value: 0)
    ring.enqueue {
        id.withLock { $0 = currentThreadID() }
        done.signal()
    }
    try #require(wait(done))
    return try #require(id.withLock { $0 })
}

/// A read pending on a socket pair whose peer never sends, handlers on `ring`.
private final class PendingRead: Sendable {
    let channel: IOChannel
    let log: OperationLog
    let cleanup: CleanupLog
    private let descriptors: (CInt, CInt)

    init(on ring: RingLoop) throws {
        self.descriptors = try makeSocketPair()
        self.cleanup = CleanupLog()
        self.channel = IOChannel(
            kind: .stream,
            fileDescriptor: self.descriptors.0,
            queue: ring,
            cleanupHandler: self.cleanup.handler
        )
        self.log = OperationLog()
        self.channel.read(length: 10, queue: ring, handler: self.log.readHandler)
    }

    /// Closes the descriptors: only once the ring is gone (the channel acts on them until then).
    func closeDescriptors() {
        close(self.descriptors.0)
        close(self.descriptors.1)
    }
}

/// In an exit test's child: a task on `ring` shuts it down and awaits the end; exits with a
/// failure if that does not return within 20 s, or returns in the wrong state.
private func shutDownFromTheRingsOwnTask() async {
    let returned = DispatchSemaphore(value: 0)
    // The bound: a hang would otherwise keep the parent waiting for the child for good.
    startThread {
        guard !wait(returned, seconds: 20) else { return }
        printToStandardError("await shutdown() from the ring's own task did not return within 20 s")
        exit(3)
    }
    guard let ring = try? RingLoop(), let thread = try? ringThreadID(ring) else {
        printToStandardError("no ring")
        exit(2)
    }
    let seen = await Task(executorPreference: ring.taskExecutor) { () -> [Bool] in
        let before = ring.isCurrentThread
        await ring.shutdown()
        return [before, _RingIOTesting.hasExited(ring), ring.isCurrentThread, currentThreadID() == thread]
    }.value
    returned.signal()
    let expected = [true, true, false, false]
    if seen != expected {
        printToStandardError(
            "on the ring before, exited, on the ring after, on its thread after: \(seen), expected \(expected)"
        )
        exit(1)
    }
}

// MARK: - Tests

@Suite(
    "RingLoop: shutdown() async, and a release without shutdown",
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct RingLoopAsyncShutdownTests {
    @Test(
        "await shutdown() returns once the thread has finished: in-flight reads ended with ECANCELED, later ones fail so"
    )
    func returnsAfterTheThreadFinished() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            let thread = try ringThreadID(ring)
            #expect(threadExists(thread))
            let pending = try PendingRead(on: ring)
            defer { pending.closeDescriptors() }
            // The read is on the ring and waits for the peer.
            await ringBarrier(ring)
            #expect(!pending.log.isFinished)

            await ring.shutdown()
            // Finished on return, not later: the thread is out of its loop; the read's final
            // call and the channel's cleanup ran on it before.
            #expect(_RingIOTesting.hasExited(ring))
            #expect(pending.log.final == .failed(.canceled), "\(pending.log.calls)")
            #expect(pending.cleanup.calls.count == 1, "\(pending.cleanup.calls)")
            // The thread itself goes once it has returned from its loop.
            let gone = await eventuallyAsync { !threadExists(thread) }
            #expect(gone, "ring thread \(thread) is still there")

            // Operations after it end with ECANCELED, not a hang.
            let later = Outcome(await bounded { Array(try await pending.channel.read(length: 1)) })
            #expect(later == .error(.canceled), "\(later)")
            let (left, right) = try makeSocketPair()
            defer {
                close(left)
                close(right)
            }
            let fresh = IOChannel(kind: .stream, fileDescriptor: left, queue: ring) { _ in }
            let write = Outcome(await bounded { try await fresh.write(rope("x")) })
            #expect(write == .error(.canceled), "\(write)")
            #expect(fresh.queuedWriteBytes == 0)

            // Closing either and waiting for the cleanup returns: the first was cleaned up as the
            // ring exited, the second never reached it.
            let closedOld = await bounded { await pending.channel.closeAndWait() }
            #expect(closedOld != nil, "closeAndWait on a channel of a ring that has shut down did not return")
            let closedFresh = await bounded { await fresh.closeAndWait() }
            #expect(closedFresh != nil, "closeAndWait on a channel made after the ring shut down did not return")
        }
    }

    @Test("await shutdown() is idempotent, with concurrent callers and the blocking shutdown() alike")
    func idempotent() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            let exitedOnReturn = Recorder<Bool>()
            let returned = await bounded {
                await withDiscardingTaskGroup { group in
                    for _ in 0..<4 {
                        group.addTask(executorPreference: testTaskExecutor) {
                            await ring.shutdown()
                            exitedOnReturn.append(_RingIOTesting.hasExited(ring))
                        }
                    }
                }
            }
            #expect(returned != nil, "concurrent shutdowns did not all return")
            #expect(exitedOnReturn.all == [true, true, true, true])
            let again = await bounded {
                await ring.shutdown()
                await onThread { ring.shutdown() }
            }
            #expect(again != nil)

            // And after a blocking shutdown.
            let other = try RingLoop()
            await onThread { other.shutdown() }
            let after = await bounded { await other.shutdown() }
            #expect(after != nil)
        }
    }

    @Test("await shutdown() from a task running on the ring itself returns, off the ring, once it has finished")
    func fromTheRingsOwnTask() async {
        // In a child process: the task resumes on the global concurrent executor, whose few
        // threads the synchronous tests of a parallel run may hold for a minute and more.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await shutDownFromTheRingsOwnTask()
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("the child's standard error: \(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }

    @Test("RingLoopGroup: await shutdown() returns once every ring has finished; each read in flight ended")
    func groupShutdown() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let group = try RingLoopGroup(count: 3, entries: 32)
            let threads = try group.rings.map { try ringThreadID($0) }
            let reads = try group.rings.map { try PendingRead(on: $0) }
            defer { for read in reads { read.closeDescriptors() } }
            for ring in group.rings { await ringBarrier(ring) }

            await group.shutdown()
            #expect(group.rings.allSatisfy { _RingIOTesting.hasExited($0) })
            for read in reads {
                #expect(read.log.final == .failed(.canceled), "\(read.log.calls)")
                #expect(read.cleanup.calls.count == 1)
            }
            let gone = await eventuallyAsync { threads.allSatisfy { !threadExists($0) } }
            #expect(gone, "ring threads still there: \(threads.filter(threadExists))")
            let later = Outcome(await bounded { Array(try await reads[1].channel.read(length: 1)) })
            #expect(later == .error(.canceled), "\(later)")
            let again = await bounded { await group.shutdown() }
            #expect(again != nil)
        }
    }

    @Test("the last reference released off the ring while its thread is busy: the release does not wait for the thread")
    func releaseDoesNotJoin() throws {
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let thread = _Lock<Int?>(nil)
        let holder = _Lock<RingLoop?>(try RingLoop())
        weak let weakRing = holder.withLock { $0 }
        // The ring's thread is held in a job until the test lets it go (bounded: 20 s). The job
        // does not hold the ring.
        holder.withLock { ring in
            ring?.enqueue {
                thread.withLock { $0 = currentThreadID() }
                entered.signal()
                _ = wait(proceed, seconds: 20)
            }
        }
        try #require(wait(entered))
        let ringThread = try #require(thread.withLock { $0 })

        // A deinit that joined would wait for the job, which waits for the test: the release
        // would not return before the 20 s are up.
        let released = DispatchSemaphore(value: 0)
        startThread {
            holder.withLock { $0 = nil }
            released.signal()
        }
        let returned = wait(released, seconds: 5)
        proceed.signal()
        #expect(returned, "releasing the last reference waited for the ring's thread")
        #expect(weakRing == nil, "the ring was not released (a reference is held elsewhere)")
        // The thread, let go, finishes on its own.
        #expect(eventually { !threadExists(ringThread) }, "ring thread \(ringThread) did not exit")
    }
}
