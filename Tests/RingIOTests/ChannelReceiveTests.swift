//===----------------------------------------------------------------------===//
// RingIO — channels: stream reads receive into the ring's provided buffers, as rope regions.
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

/// The ropes one read delivered, kept (their buffers stay on loan) until `release()`.
private final class ReceivedRopes: Sendable {
    private let state = _Lock<(ropes: [ByteRope], error: Errno?, calls: Int)>(([], nil, 0))
    let finished = DispatchSemaphore(value: 0)

    /// A read handler recording into this.
    var handler: @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, data, error in
            self.state.withLock { state in
                state.calls += 1
                if let data, !data.isEmpty { state.ropes.append(data) }
                if done { state.error = error }
            }
            if done { self.finished.signal() }
        }
    }

    var bytes: [UInt8] { self.state.withLock { $0.ropes.flatMap { Array($0) } } }
    var ropes: [ByteRope] { self.state.withLock { $0.ropes } }
    var error: Errno? { self.state.withLock { $0.error } }
    /// Drops every rope held (their buffers can go back to the ring).
    func release() { self.state.withLock { $0.ropes.removeAll() } }
}

/// Waits, boundedly, until `ring` has handed every receive buffer back to the kernel: each try
/// passes a ring barrier (returned buffers are collected once per turn, and the counters are
/// then up to date).
/// A stream channel over `reader`, handlers on the context's queue, with a read to the end
/// submitted — more than four buffers wanted, so a multishot receive; what it receives; and
/// the semaphore its cleanup handler signals once it has closed `reader`.
private func startReceiving(
    _ reader: CInt,
    _ context: ChannelContext
) -> (IOChannel, ReceivedRopes, DispatchSemaphore) {
    let cleaned = DispatchSemaphore(value: 0)
    let channel = IOChannel(kind: .stream, fileDescriptor: reader, queue: context.queue, ring: context.ring) { _ in
        close(reader)
        cleaned.signal()
    }
    let received = ReceivedRopes()
    channel.read(offset: 0, length: .max, queue: context.queue, handler: received.handler)
    return (channel, received, cleaned)
}

/// Waits for the final call, then expects `sent`, exactly, with no error and no fallback
/// receive, every region of it in `ring`'s buffer memory: where it begins, and where it ends
/// too with `wholeRegions`.
private func expectReceivedInRingBuffers(
    _ received: ReceivedRopes,
    _ sent: [UInt8],
    ring: RingLoop,
    wholeRegions: Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    try #require(wait(received.finished), sourceLocation: sourceLocation)
    #expect(received.error == nil, sourceLocation: sourceLocation)
    #expect(received.bytes.count == sent.count, sourceLocation: sourceLocation)
    #expect(received.bytes.elementsEqual(sent), "bytes differ", sourceLocation: sourceLocation)
    #expect(ring.counters.fallbackReceives == 0, sourceLocation: sourceLocation)
    let memory = _RingIOTesting.receiveBufferMemory(of: ring)
    for rope in received.ropes {
        for region in rope.regions {
            let base = region.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            if wholeRegions {
                #expect(
                    memory.contains(base) && memory.contains(base + UInt(region.count) - 1),
                    sourceLocation: sourceLocation
                )
            } else {
                #expect(memory.contains(base), sourceLocation: sourceLocation)
            }
        }
    }
}

private func buffersComeBack(to ring: RingLoop) -> Bool {
    eventually { ringBarrier(ring) && ring.counters.buffersOnLoan == 0 }
}

@Suite("IOChannel: receive into provided buffers", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelReceiveTests {
    @Test(
        "a socket: every byte arrives once, in order, as regions of the ring's buffers; they go back",
        arguments: QueueKind.allCases
    )
    func socket(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try makeSocketPair()
        let (channel, received, cleaned) = startReceiving(reader, context)
        let sent = pattern(300_000)
        for chunk in stride(from: 0, to: sent.count, by: 7_001) {
            writeAll(writer, Array(sent[chunk..<min(chunk + 7_001, sent.count)]))
        }
        close(writer)
        // Zero copy: with buffers to spare, every region lies in the ring's buffer memory.
        try expectReceivedInRingBuffers(received, sent, ring: context.ring, wholeRegions: true)
        try #require(ringBarrier(context.ring))
        #expect(context.ring.counters.buffersOnLoan > 0, "the ropes held keep their buffers")
        received.release()
        #expect(buffersComeBack(to: context.ring), "\(context.ring.counters.buffersOnLoan) buffers still on loan")
        channel.close()
        #expect(wait(cleaned))
    }

    @Test("a pipe: the bytes and the end, in the ring's buffers", arguments: QueueKind.allCases)
    func pipe(_ queue: QueueKind) throws {
        let context = try ChannelContext(queue)
        defer { context.shutdown() }
        let (reader, writer) = try makePipe()
        let (channel, received, cleaned) = startReceiving(reader, context)
        let sent = pattern(100_000, seed: 3)
        writeAll(writer, sent)
        close(writer)
        try expectReceivedInRingBuffers(received, sent, ring: context.ring, wholeRegions: false)
        received.release()
        #expect(buffersComeBack(to: context.ring))
        channel.close()
        #expect(wait(cleaned))
    }

    @Test("every buffer held by ropes: the rest still arrives, once, in order; the buffers go back")
    func exhausted() throws {
        // 4 buffers of 64 bytes: at most 256 bytes can be on loan.
        let ring = try RingLoop(entries: 16, receiveBuffers: 4, receiveBufferSize: 64)
        defer { ring.shutdown() }
        let (reader, writer) = try makeSocketPair()
        let channel = IOChannel(kind: .stream, fileDescriptor: reader, queue: ring) { _ in close(reader) }
        defer { channel.close() }
        let received = ReceivedRopes()
        channel.read(offset: 0, length: .max, queue: ring, handler: received.handler)
        let sent = pattern(4_096, seed: 11)
        writeAll(writer, sent)
        close(writer)
        try #require(wait(received.finished))
        #expect(received.error == nil)
        #expect(received.bytes.elementsEqual(sent), "bytes differ")
        try #require(ringBarrier(ring))
        #expect(ring.counters.buffersOnLoan == 4, "every rope is still held")
        #expect(ring.counters.fallbackReceives > 0, "4 buffers of 64 bytes cannot hold 4 KiB")
        received.release()
        #expect(buffersComeBack(to: ring), "\(ring.counters.buffersOnLoan) buffers still on loan")
    }
}
