//===----------------------------------------------------------------------===//
// RingIO — IOChannel.closeAndWait(flags:): returns once the cleanup handler has run; with
// .stop a pending read ends with ECANCELED first, without it the read runs to its end first.
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

/// How the peer ends a read that closeAndWait() waits for.
enum PendingReadEnd: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The peer sends all the bytes the read asked for.
    case data
    /// The peer ends its side of the stream: the read ends at EOF.
    case endOfFile

    var testDescription: String { self.rawValue }
}

@Suite("IOChannel.closeAndWait(flags:)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelCloseAndWaitTests {
    @Test("returns after the cleanup handler has run: not while it runs")
    func returnsAfterTheCleanupHandler() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let (local, peer) = try makeSocketPair()
            defer {
                close(local)
                close(peer)
            }
            let queue = DispatchQueue(label: "close-and-wait-cleanup")
            let events = Recorder<String>()
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            // The cleanup handler holds its queue until the test lets it go.
            let channel = IOChannel(kind: .stream, fileDescriptor: local, queue: queue, ring: ring) { error in
                events.append("cleanup began, error \(String(describing: error))")
                entered.signal()
                _ = wait(release)
                events.append("cleanup ended")
            }
            let waiter = Task(executorPreference: testTaskExecutor) {
                await channel.closeAndWait()
                events.append("closeAndWait returned")
            }
            let began = await onThread { wait(entered) }
            try #require(began, "the cleanup handler did not run")
            // Whatever the ring had to do for the close is done; the handler still runs.
            await ringBarrier(ring)
            #expect(events.all == ["cleanup began, error nil"], "\(events.all)")
            release.signal()
            let returned = await bounded { await waiter.value }
            #expect(returned != nil, "closeAndWait did not return after the cleanup")
            #expect(events.all == ["cleanup began, error nil", "cleanup ended", "closeAndWait returned"])
            #expect(channel.fileDescriptor == -1)

            // Once cleaned up, it returns at once, as often as asked.
            let again = await bounded { await channel.closeAndWait(flags: .stop) }
            #expect(again != nil)
        }
    }

    @Test("the cleanup handler has run, once, on its queue, when closeAndWait returns", arguments: QueueKind.allCases)
    func cleanupRanOnItsQueue(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            // Some I/O first, so that the channel is on the ring.
            writeAll(peer, bytes("ping"))
            let read = Outcome(await bounded { Array(try await channel.read(length: 4)) })
            #expect(read == .bytes(bytes("ping")), "\(read)")
            let returned = await bounded { await channel.closeAndWait() }
            #expect(returned != nil)
            // No waiting here: it has run already.
            #expect(cleanup.calls.count == 1, "cleanup calls when closeAndWait returned: \(cleanup.calls)")
            await cleanup.expectOnceAsync(nil)
        }
    }

    @Test("a channel whose creation failed: closeAndWait returns after the cleanup with the error")
    func failedChannel() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(.dispatch)
            defer { context.shutdown() }
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, descriptorThatIsNeverOpen(), cleanup: cleanup)
            let returned = await bounded { await channel.closeAndWait() }
            #expect(returned != nil)
            #expect(cleanup.calls == [.badFileDescriptor], "\(cleanup.calls)")
        }
    }

    @Test(
        "on a ring that had shut down: closeAndWait returns (the channel never reached the ring)",
        arguments: QueueKind.allCases,
        [IOChannel.CloseFlags(), .stop]
    )
    func ringShutDownFirst(_ queue: QueueKind, _ flags: IOChannel.CloseFlags) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, _) = try context.socketPair()
            await context.ring.shutdown()
            let channel = context.channel(.stream, local, cleanup: context.cleanupLog())
            let returned = await bounded { await channel.closeAndWait(flags: flags) }
            #expect(returned != nil, "closeAndWait did not return")
            #expect(channel.fileDescriptor == -1)
        }
    }

    @Test(
        "with .stop, a read pending on a socket ends with ECANCELED before closeAndWait returns",
        arguments: QueueKind.allCases
    )
    func stopEndsAPendingRead(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let log = context.read(channel, length: 100)
            writeAll(peer, bytes("part"))
            // The read took the bytes and waits for more: the peer says nothing else.
            let took = await waitUntil { log.bytes == bytes("part") }
            try #require(took, "the read did not deliver the first bytes: \(log.calls)")
            let returned = await bounded { await channel.closeAndWait(flags: .stop) }
            #expect(returned != nil, "closeAndWait(flags: .stop) did not return")
            // Both already happened when it returned: the read's end, then the cleanup.
            #expect(log.final == .failed(.canceled), "\(log.calls)")
            #expect(cleanup.calls.count == 1, "\(cleanup.calls)")
            #expect(log.bytes == bytes("part"))
            #expect(log.problems.isEmpty, "\(log.problems)")
            await cleanup.expectOnceAsync(nil)
        }
    }

    @Test(
        "without .stop, closeAndWait waits for a read pending on a socket to end: the peer's data or EOF ends both",
        arguments: QueueKind.allCases,
        PendingReadEnd.allCases
    )
    func waitsForAPendingRead(_ queue: QueueKind, _ end: PendingReadEnd) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let events = Recorder<String>()
            let cleanup = CleanupLog(
                onQueue: { context.isOnQueue },
                barrier: context.handlerBarrier,
                onCall: { _ in events.append("cleanup") }
            )
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let log = OperationLog(
                onQueue: { context.isOnQueue },
                onCall: { call in if call.done { events.append("read ended") } }
            )
            context.read(channel, length: end == .data ? 6 : .max, into: log)
            await ringBarrier(context.ring)
            let started = DispatchSemaphore(value: 0)
            let waiter = Task(executorPreference: testTaskExecutor) {
                started.signal()
                await channel.closeAndWait()
                events.append("closeAndWait returned")
            }
            let running = await onThread { wait(started) }
            try #require(running)
            // The close has reached the ring and the handlers' queue: nothing has ended.
            let passed = await onThread { context.barrier() }
            #expect(passed)
            #expect(events.all.isEmpty, "before the peer's move: \(events.all)")
            #expect(!log.isFinished, "\(log.calls)")

            switch end {
            case .data: writeAll(peer, bytes("closed"))
            case .endOfFile:
                writeAll(peer, bytes("last"))
                shutdown(peer, Int32(SHUT_WR))
            }
            let returned = await bounded { await waiter.value }
            #expect(returned != nil, "closeAndWait did not return after the read ended")
            #expect(events.all == ["read ended", "cleanup", "closeAndWait returned"], "\(events.all)")
            #expect(log.bytes == bytes(end == .data ? "closed" : "last"), "\(log.calls)")
            #expect(log.final?.error == nil, "\(log.calls)")
            #expect(log.problems.isEmpty, "\(log.problems)")
            await cleanup.expectOnceAsync(nil)
        }
    }
}
