//===----------------------------------------------------------------------===//
// RingIO — IOChannel.reads(offset:length:idleTimeout:): a silent peer ends the iteration with
// Errno.timedOut, after every byte received before; a peer that keeps sending does not.
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

/// What one `reads(idleTimeout:)` iteration produced, and how it ended.
private struct Iteration: Sendable {
    var bytes: [UInt8] = []
    var deliveries = 0
    /// What it threw; nil when it ended normally (or did not end).
    var error: Errno?
    var endedNormally = false
}

/// Iterates `channel.reads(idleTimeout:)` to its end; `afterFirst` runs once, after the first
/// delivery, before the iteration asks for the next one.
private func iterate(
    _ channel: IOChannel,
    idleTimeout: Duration,
    afterFirst: (@Sendable () async -> Void)? = nil
) async -> Iteration {
    var result = Iteration()
    do throws(Errno) {
        for try await data in channel.reads(idleTimeout: idleTimeout) {
            result.bytes += Array(data)
            result.deliveries += 1
            if result.deliveries == 1, let afterFirst { await afterFirst() }
        }
        result.endedNormally = true
    } catch {
        result.error = error
    }
    return result
}

@Suite("IOChannel.reads(idleTimeout:)", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelIdleTimeoutTests {
    @Test(
        "a silent peer: ETIMEDOUT once the timeout has passed, no sooner; bytes sent later go to the next read",
        arguments: QueueKind.allCases
    )
    func silentPeerTimesOut(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let started = ContinuousClock.now
            let outcome = await bounded { await iterate(channel, idleTimeout: .milliseconds(50)) }
            let elapsed = ContinuousClock.now - started
            guard case .success(let iteration)? = outcome else {
                Issue.record("the iteration did not end within 10 s: \(String(describing: outcome))")
                return
            }
            #expect(iteration.error == .timedOut, "ended normally: \(iteration.endedNormally)")
            #expect(iteration.bytes.isEmpty)
            // The timer cannot fire early (its clock is monotonic); late, by a tick or a busy machine.
            #expect(elapsed >= .milliseconds(49), "timed out after \(elapsed)")

            // The channel still works: what the peer sends now, a new read gets.
            writeAll(peer, bytes("later"))
            let later = Outcome(await bounded { Array(try await channel.read(length: 5)) })
            #expect(later == .bytes(bytes("later")), "\(later)")
            channel.close()
            await cleanup.expectOnceAsync(nil)
        }
    }

    @Test(
        "every byte received before the timeout comes out before the error, though the iteration was not waiting",
        arguments: QueueKind.allCases
    )
    func deliversEverythingBeforeTimingOut(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            // All in the socket before the read starts (less than its buffer holds): the read
            // takes it in parts, then the peer is silent.
            let sent = patternBytes(60_000, seed: 96)
            writeAll(peer, sent)
            let ring = context.ring
            // After the first delivery the task stays away well past the timeout (on the ring's
            // own clock, the one the timeout runs on): the timeout fires meanwhile.
            let outcome = await bounded {
                await iterate(channel, idleTimeout: .milliseconds(50)) {
                    _ = await onThread { waitForRingTimers(ring, after: .milliseconds(200)) }
                }
            }
            guard case .success(let iteration)? = outcome else {
                Issue.record("the iteration did not end within 10 s: \(String(describing: outcome))")
                return
            }
            #expect(iteration.error == .timedOut, "ended normally: \(iteration.endedNormally)")
            expectSameBytes(iteration.bytes, sent, "bytes produced before the time-out")
            channel.close()
            await cleanup.expectOnceAsync(nil)
        }
    }

    @Test(
        "a peer that keeps sending within the timeout: no time-out, though the whole read lasts longer; it ends at EOF",
        arguments: QueueKind.allCases
    )
    func arrivalsKeepItGoing(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let ring = context.ring
            // 12 chunks 150 ms apart on the ring's clock: 1.65 s in all, against a timeout of
            // 1 s that each chunk moves on.
            let chunks = (0..<12).map { patternBytes(1_000 + $0, seed: 97 + $0) }
            let writerDone = DispatchSemaphore(value: 0)
            startThread {
                for chunk in chunks {
                    guard writeAllUnlessClosed(peer, chunk) else { break }
                    waitForRingTimers(ring, after: .milliseconds(150))
                }
                shutdown(peer, Int32(SHUT_WR))
                writerDone.signal()
            }
            let started = ContinuousClock.now
            let outcome = await bounded(seconds: 30) { await iterate(channel, idleTimeout: .seconds(1)) }
            let elapsed = ContinuousClock.now - started
            guard case .success(let iteration)? = outcome else {
                Issue.record("the iteration did not end within 30 s: \(String(describing: outcome))")
                return
            }
            #expect(iteration.error == nil, "threw after \(elapsed), \(iteration.bytes.count) bytes")
            #expect(iteration.endedNormally)
            expectSameBytes(iteration.bytes, chunks.flatMap { $0 })
            #expect(elapsed > .seconds(1), "the read was over before the timeout could matter: \(elapsed)")
            channel.close()
            await cleanup.expectOnceAsync(nil)
            // Its descriptor stays open until the writer is done with it.
            let writerEnded = await onThread { wait(writerDone) }
            #expect(writerEnded, "the writer did not end")
        }
    }
}
