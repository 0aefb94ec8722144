//===----------------------------------------------------------------------===//
// RingIO — IOChannel.queuedWriteBytes: the bytes of the writes scheduled and not finished,
// each counted whole until it finishes; 0 at rest.
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

private let mebibyte = 1_048_576

/// Makes the socket `fd` buffer as little as the kernel allows, so that a peer that does not
/// read holds a writer back after a few KiB.
private func shrinkBuffers(_ fd: CInt) throws {
    var size: CInt = 4_096
    try #require(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size)) == 0)
    try #require(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size)) == 0)
}

@Suite("IOChannel.queuedWriteBytes", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelQueuedWriteBytesTests {
    @Test(
        "0 at rest; each pending write counts whole while the peer does not read; back to 0 as they finish",
        arguments: QueueKind.allCases
    )
    func growsAndDrains(_ queue: QueueKind) async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(queue)
            defer { context.shutdown() }
            // The socket's usual buffers (a few hundred KiB): far less than the writes below.
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            #expect(channel.queuedWriteBytes == 0)

            // A small write that the socket takes at once: back to 0 when it has finished.
            let small = context.write(channel, rope("hello"))
            let smallDone = await onThread { small.waitForFinal() }
            #expect(smallDone)
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == 0)
            #expect(readExactly(peer, 5) == bytes("hello"))

            // 8 MiB and 1 MiB to a peer that reads nothing: neither can finish.
            let first = patternBytes(8 * mebibyte, seed: 100)
            let second = patternBytes(mebibyte, seed: 101)
            let logs = [
                context.write(channel, ByteRope(copying: first)),
                context.write(channel, fragmentedRope(mebibyte, seed: 101)),
            ]
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == 9 * mebibyte, "queued: \(channel.queuedWriteBytes)")
            #expect(unsentBytes(local) > 0 || pendingBytes(peer) > 0, "the socket took nothing")
            #expect(!logs[0].isFinished)

            // The peer takes the first write's bytes: it finishes, the second still counts whole.
            let firstReceived = await onThread { readExactly(peer, first.count) }
            expectSameBytes(firstReceived, first, "the first write")
            let firstDone = await onThread { logs[0].waitForFinal() }
            #expect(firstDone)
            await ringBarrier(context.ring)
            #expect(
                channel.queuedWriteBytes == mebibyte,
                "queued after the first finished: \(channel.queuedWriteBytes)"
            )
            #expect(!logs[1].isFinished)

            let secondReceived = await onThread { readExactly(peer, second.count) }
            expectSameBytes(secondReceived, second, "the second write")
            let secondDone = await onThread { logs[1].waitForFinal() }
            #expect(secondDone)
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == 0)
            for log in logs {
                #expect(log.final == .written, "\(log.calls.suffix(2))")
                #expect(log.problems.isEmpty, "\(log.problems)")
            }
            channel.close()
            await cleanup.expectOnceAsync(nil)
        }
    }

    @Test("an async write counts while it waits for the peer; writes a stop cancels count no more")
    func asyncWriteAndStop() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let context = try ChannelContext(.ring)
            defer { context.shutdown() }
            // The peer end stays open, unread, until the context shuts down.
            let (local, peer) = try context.socketPair()
            try shrinkBuffers(local)
            try shrinkBuffers(peer)
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let size = 4 * mebibyte
            let writer = Task(executorPreference: testTaskExecutor) {
                try await channel.write(fragmentedRope(size, seed: 102))
            }
            let counted = await waitUntil { channel.queuedWriteBytes == size }
            #expect(counted, "queued: \(channel.queuedWriteBytes)")
            // A handler write behind it counts too; the stop ends both, and the count with them.
            let behind = context.write(channel, rope("behind"))
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == size + 6, "queued: \(channel.queuedWriteBytes)")
            channel.close(flags: .stop)
            let ended = await bounded { try await writer.value }
            #expect(Outcome(ended) == .error(.canceled), "\(String(describing: ended))")
            let behindDone = await onThread { behind.waitForFinal() }
            #expect(behindDone)
            #expect(behind.final?.error == .canceled, "\(behind.calls)")
            await cleanup.expectOnceAsync(nil)
            #expect(channel.queuedWriteBytes == 0, "queued after the stop: \(channel.queuedWriteBytes)")
        }
    }

    @Test("a write that ends with an error counts no more: the peer gone (EPIPE), the ring shut down (ECANCELED)")
    func writesThatFail() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let size = 4 * mebibyte
            // The peer closes its end under a pending write.
            let context = try ChannelContext(.dispatch)
            defer { context.shutdown() }
            let (local, peer) = try context.socketPair()
            let cleanup = context.cleanupLog()
            let channel = context.channel(.stream, local, cleanup: cleanup)
            let failing = context.write(channel, fragmentedRope(size, seed: 103))
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == size, "queued: \(channel.queuedWriteBytes)")
            context.close(peer)
            let failed = await onThread { failing.waitForFinal() }
            #expect(failed)
            #expect(
                failing.final?.error == .brokenPipe || failing.final?.error == .connectionReset,
                "\(failing.final.map { "\($0)" } ?? "no final call")"
            )
            await ringBarrier(context.ring)
            #expect(channel.queuedWriteBytes == 0, "queued after the failure: \(channel.queuedWriteBytes)")
            channel.close()
            #expect(cleanup.wait())

            // The ring shuts down under a pending write.
            let other = try ChannelContext(.dispatch)
            defer { other.shutdown() }
            let (otherLocal, _) = try other.socketPair()
            let otherCleanup = other.cleanupLog()
            let cut = other.channel(.stream, otherLocal, cleanup: otherCleanup)
            let cancelled = other.write(cut, fragmentedRope(size, seed: 104))
            await ringBarrier(other.ring)
            #expect(cut.queuedWriteBytes == size, "queued: \(cut.queuedWriteBytes)")
            await other.ring.shutdown()
            let ended = await onThread { cancelled.waitForFinal() }
            #expect(ended)
            #expect(cancelled.final?.error == .canceled, "\(cancelled.final.map { "\($0)" } ?? "no final call")")
            #expect(cut.queuedWriteBytes == 0, "queued after the shutdown: \(cut.queuedWriteBytes)")
        }
    }
}
