//===----------------------------------------------------------------------===//
// RingIO — IOChannel: write operations reused from the ring's pool.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Something a write handler captures, to see when the handler is let go of.
private final class Capture: Sendable {
    let index: Int
    init(_ index: Int) { self.index = index }
}

/// A weak reference to a capture, kept by the test.
private final class WeakCapture: @unchecked Sendable {
    // @unchecked: `capture` is written once before the write is scheduled and read after the
    // ring has drained (the semaphores and locks of the test order those accesses).
    weak var capture: Capture?
    init(_ capture: Capture) { self.capture = capture }
}

/// What the writes' handlers saw, in the order they ran.
private final class WriteRecord: Sendable {
    struct Call: Equatable, Sendable {
        let index: Int
        let done: Bool
        let remaining: Int?
        let error: Errno?
    }

    private let calls = _Lock<[Call]>([])
    private let finished = DispatchSemaphore(value: 0)
    private let expected: Int

    init(expected: Int) { self.expected = expected }

    func record(_ index: Int, _ done: Bool, _ remaining: ByteRope?, _ error: Errno?) {
        let count = self.calls.withLock { calls in
            calls.append(Call(index: index, done: done, remaining: remaining?.count, error: error))
            return calls.count
        }
        if count == self.expected { self.finished.signal() }
    }

    var all: [Call] { self.calls.withLock { $0 } }

    func waitForAll() -> Bool { wait(self.finished, seconds: 30) }
}

/// The message of write `index`: its number and a length that varies, in one region or,
/// for every third, in two (a vectored write).
private func poolMessage(_ index: Int) -> ByteRope {
    var bytes = withUnsafeBytes(of: UInt32(index).littleEndian) { Array($0) }
    bytes += [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: index % 300)
    guard index % 3 == 0 else { return ByteRope(copying: bytes) }
    var rope = ByteRope(copying: bytes[..<4])
    rope.append(ByteRope(copying: bytes[4...]))
    return rope
}

/// Reads `count` bytes from a descriptor on another thread (the writes would block otherwise).
private final class Collector: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let received = _Lock<[UInt8]>([])

    init(_ count: Int, from fd: CInt) {
        DispatchQueue.global().async {
            let bytes = readExactly(fd, count)
            self.received.withLock { $0 = bytes }
            self.done.signal()
        }
    }

    /// What was read, once `count` bytes were (or the peer closed); `nil` on a time-out.
    func bytes() -> [UInt8]? {
        guard wait(self.done, seconds: 30) else { return nil }
        return self.received.withLock { $0 }
    }
}

@Suite("IOChannel: write operations reused on the ring", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ChannelWritePoolTests {
    @Test("writes chained on the ring: every handler once, in order, bytes intact, captures released")
    func chainedOnRing() throws {
        let end = try RingSocketPair()
        let (ring, channel, right) = (end.ring, end.channel, end.peer)
        let count = 2_000
        let burst = 8
        let expectedBytes = (0..<count).reduce(into: [UInt8]()) { bytes, index in
            poolMessage(index).withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
        let collector = Collector(expectedBytes.count, from: right)
        let record = WriteRecord(expected: count)
        let weakCaptures = _Lock<[WeakCapture]>([])

        // Bursts of `burst` writes; the last write of a burst starts the next burst from its
        // handler, on the ring thread, once the burst's operations are done with.
        @Sendable func writeBurst(from first: Int) {
            for index in first..<min(first + burst, count) {
                let capture = Capture(index)
                weakCaptures.withLock { $0.append(WeakCapture(capture)) }
                channel.write(offset: 0, data: poolMessage(index), queue: ring) { done, remaining, error in
                    record.record(capture.index, done, remaining, error)
                    if done && index == first + burst - 1 && index + 1 < count { writeBurst(from: index + 1) }
                }
            }
        }
        ring.enqueue { writeBurst(from: 0) }

        #expect(record.waitForAll(), "not every write ended")
        #expect(collector.bytes() == expectedBytes, "the peer did not get every byte, in order")
        let calls = record.all
        #expect(calls.map(\.index) == Array(0..<count))
        #expect(calls.allSatisfy { $0.done && $0.remaining == nil && $0.error == nil })
        // The channel kept operations (at most its pool's two), and none holds the handler of
        // its last life.
        let pooled = _RingIOTesting.pooledWriteOperations(of: channel)
        #expect(pooled > 0 && pooled <= 2, "pooled: \(pooled)")
        let alive = weakCaptures.withLock { $0.filter { $0.capture != nil }.count }
        #expect(alive == 0, "\(alive) write handlers are still held after their final calls")
        end.finish()
    }

    @Test("writes scheduled from a DispatchQueue and from the ring, interleaved, on one channel")
    func mixedThreads() throws {
        let end = try RingSocketPair()
        let (ring, channel, right) = (end.ring, end.channel, end.peer)
        let perThread = 1_000
        // Ring writes carry even numbers, the other thread's odd ones; each thread's own
        // writes stay in its order (one lane, in scheduling order).
        let message: @Sendable (Int) -> ByteRope = { index in
            withUnsafeBytes(of: UInt32(index).littleEndian) { ByteRope(copying: $0) }
        }
        let collector = Collector(2 * perThread * 4, from: right)
        let record = WriteRecord(expected: 2 * perThread)
        @Sendable func writeFromRing(_ step: Int) {
            let index = 2 * step
            channel.write(offset: 0, data: message(index), queue: ring) { done, remaining, error in
                record.record(index, done, remaining, error)
                if done && step + 1 < perThread { writeFromRing(step + 1) }
            }
        }
        ring.enqueue { writeFromRing(0) }
        let other = DispatchQueue(label: "pool-test-writer")
        other.async {
            for step in 0..<perThread {
                let index = 2 * step + 1
                channel.write(offset: 0, data: message(index), queue: ring) { done, remaining, error in
                    record.record(index, done, remaining, error)
                }
                if step % 16 == 0 { ringBarrier(ring) }  // let the ring recycle some meanwhile
            }
        }

        #expect(record.waitForAll(), "not every write ended")
        let bytes = try #require(collector.bytes(), "the peer did not get every byte")
        let numbers =
            stride(from: 0, to: bytes.count, by: 4).map { offset in
                Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
                    | Int(bytes[offset + 3]) << 24
            }
        #expect(numbers.filter { $0 % 2 == 0 } == Array(stride(from: 0, to: 2 * perThread, by: 2)))
        #expect(numbers.filter { $0 % 2 == 1 } == Array(stride(from: 1, to: 2 * perThread, by: 2)))
        let calls = record.all
        #expect(Set(calls.map(\.index)).count == 2 * perThread, "a handler ran twice or never")
        #expect(calls.allSatisfy { $0.done && $0.remaining == nil && $0.error == nil })
        end.finish()
    }

    @Test("awaited writes from a task on the ring reuse operations; bytes intact")
    func awaitedOnRing() async throws {
        let end = try RingSocketPair()
        let (ring, channel, right) = (end.ring, end.channel, end.peer)
        let count = 2_000
        let expectedBytes = (0..<count).reduce(into: [UInt8]()) { bytes, index in
            poolMessage(index).withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
        let collector = Collector(expectedBytes.count, from: right)
        try await withTaskExecutorPreference(ring.taskExecutor) {
            for index in 0..<count {
                try await channel.write(poolMessage(index))
            }
        }
        #expect(collector.bytes() == expectedBytes, "the peer did not get every byte, in order")
        let pooled = _RingIOTesting.pooledWriteOperations(of: channel)
        #expect(pooled >= 1, "no operation came back to the pool")
        await end.finish()
    }

    @Test("a channel lets go of its pooled operations when it is done: its ring goes away")
    func ringGoesAway() throws {
        let (left, right) = try makeSocketPair()
        defer { closeAll(left, right) }
        weak var weakRing: RingLoop?
        do {
            let ring = try RingLoop()
            weakRing = ring
            let cleanup = CleanupLog(onQueue: { ring.isCurrentThread })
            let channel = IOChannel(kind: .stream, fileDescriptor: left, queue: ring, cleanupHandler: cleanup.handler)
            let record = WriteRecord(expected: 16)
            ring.enqueue {
                for index in 0..<16 {
                    channel.write(offset: 0, data: poolMessage(index), queue: ring) { done, remaining, error in
                        record.record(index, done, remaining, error)
                    }
                }
            }
            #expect(record.waitForAll())
            #expect(_RingIOTesting.pooledWriteOperations(of: channel) > 0)
            channel.close()
            cleanup.expectOnce(nil)
            #expect(_RingIOTesting.pooledWriteOperations(of: channel) == 0)
        }
        #expect(eventually { weakRing == nil }, "the ring is kept alive by pooled operations")
    }
}
