//===----------------------------------------------------------------------===//
// RingIO — the ring barrier the suites wait on (RingIOTestSupport's `ringBarrier`): it passes
// beside operations that never complete, and what happened before it has reached the
// handlers when it passes — on either engine.
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

/// The endpoints whose writer wakes the reader inside its own `write` call. (A TCP peer is
/// woken by the loopback device's softirq, which a loaded machine may defer to a kernel
/// thread: a test waits for TCP data itself, and uses a barrier only to show that nothing
/// more came.)
private let synchronousEndpoints: [EndpointKind] = [.pipe, .socketPair, .fifo]

@Suite("Ring barrier", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingBarrierTests {
    @Test("passes while a receive, an accept and a poll wait for ever", arguments: QueueKind.allCases)
    func passesBesideOperationsThatNeverComplete(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (left, right) = try makeSocketPair()
        defer { closeAll(left, right) }
        let (channel, cleanup) = context.channelWithCleanup(.stream, left)
        let read = context.read(channel, length: 10)
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, ring: context.ring, queue: context.queue) { _ in }
        defer { listener.close() }
        let source = context.readSource(right)
        source.setEventHandler {}
        source.resume()
        for _ in 0..<20 { #expect(context.barrier()) }
        #expect(read.calls.isEmpty)
        source.cancel()
        channel.close(flags: .stop)
        cleanup.expectOnce(nil)
    }

    @Test(
        "bytes written before a barrier have reached the read handler when it passes, 200 rounds",
        arguments: QueueKind.allCases,
        synchronousEndpoints
    )
    func dataBeforeBarrierIsDelivered(_ queue: QueueKind, _ kind: EndpointKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let endpoint = try context.endpoint(kind)
        let (channel, cleanup) = context.channelWithCleanup(.stream, endpoint.local)
        let read = context.read(channel, length: .max)
        var late: [Int] = []
        for round in 0..<200 {
            endpoint.send([UInt8(truncatingIfNeeded: round)])
            // One round: one ring barrier, then the DispatchQueue (the handler's) if any.
            ringBarrier(context.ring, queue: context.kind == .dispatch ? context.dispatchQueue : nil, rounds: 1)
            if read.bytes.count != round + 1 { late.append(round) }
        }
        #expect(late.isEmpty, "rounds whose byte had not reached the handler at the barrier: \(late.prefix(10))")
        channel.close(flags: .stop)
        cleanup.expectOnce(nil)
    }

    @Test(
        "an event merged before a barrier has reached the source's handler when it passes",
        arguments: QueueKind.allCases
    )
    func mergeBeforeBarrierIsDelivered(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let log = context.sourceLog(holdMicroseconds: 0)
        let source = context.userDataAddSource()
        log.attach(to: source)
        source.resume()
        try #require(log.waitForRegistration())
        var late: [Int] = []
        for round in 1...200 {
            source.add(data: 1)
            context.barrier()
            if log.total != UInt(round) { late.append(round) }
        }
        #expect(late.isEmpty, "merges not delivered at the barrier: \(late.prefix(10))")
        cancel(source, log)
    }

    @Test(
        "readiness before a barrier has reached a readable source's handler when it passes",
        arguments: QueueKind.allCases
    )
    func readinessBeforeBarrierIsDelivered(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try context.pipe()
        let log = context.sourceLog(holdMicroseconds: 0) { _ in _ = readAvailable(reader) }
        let source = context.readSource(reader)
        log.attach(to: source)
        source.resume()
        try #require(log.waitForRegistration())
        context.barrier()
        var late: [Int] = []
        for round in 1...100 {
            writeAll(writer, [1])
            context.barrier()
            if log.count != round { late.append(round) }
        }
        #expect(late.isEmpty, "readiness not delivered at the barrier: \(late.prefix(10))")
        cancel(source, log)
    }

    @Test("an async barrier passes too")
    func asyncBarrier() async throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let passed = await ringBarrier(ring)
        #expect(passed)
    }
}
