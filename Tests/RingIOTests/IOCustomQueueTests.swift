//===----------------------------------------------------------------------===//
// RingIO — IOCustomQueue: handlers delivered on a queue of the caller's own.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A queue of the test's own: a serial `DispatchQueue` behind `IOCustomQueue`, which counts
/// the jobs RingIO hands it and knows whether the caller runs on it.
private final class CountingQueue: IOCustomQueue {
    let jobs = Atomic<Int>(0)
    private let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    init() {
        self.queue = DispatchQueue(label: "custom-queue")
        self.queue.setSpecific(key: self.key, value: true)
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: self.key) == true }

    func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.jobs.add(1, ordering: .relaxed)
        self.queue.async(execute: work)
    }
}

/// A queue that conforms to `IOQueue` alone: RingIO cannot run work on it.
private final class MarkerOnlyQueue: IOQueue {}

@Suite("IOCustomQueue: handlers on a queue of your own", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct IOCustomQueueTests {
    @Test("read, write and cleanup handlers run on the custom queue, in order, through its enqueue")
    func handlersRunOnTheCustomQueue() throws {
        let (left, right) = try makeSocketPair()
        defer { close(right) }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let queue = CountingQueue()
        let events = _Lock<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        let cleaned = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .stream, fileDescriptor: left, queue: queue, ring: ring) { error in
            events.withLock { $0.append("cleanup \(queue.isCurrent) \(error.map { "\($0)" } ?? "nil")") }
            close(left)
            cleaned.signal()
        }

        channel.write(offset: 0, data: ByteRope(copying: "ping".utf8), queue: queue) { done, _, error in
            events.withLock { $0.append("write \(done) \(queue.isCurrent) \(error == nil)") }
        }
        writeAll(right, Array("pong".utf8))
        channel.read(offset: 0, length: 4, queue: queue) { done, data, error in
            let text = data.map { String(decoding: Array($0), as: UTF8.self) } ?? ""
            events.withLock { $0.append("read \(done) \(queue.isCurrent) \(text) \(error == nil)") }
            if done { finished.signal() }
        }
        try #require(wait(finished))
        channel.close()
        try #require(wait(cleaned))

        var received = [UInt8](repeating: 0, count: 4)
        #expect(read(right, &received, 4) == 4)
        #expect(String(decoding: received, as: UTF8.self) == "ping")
        let recorded = events.withLock { $0 }
        #expect(recorded.first == "write true true true")
        #expect(recorded.contains("read true true pong true"))
        #expect(recorded.last == "cleanup true nil")
        #expect(queue.jobs.load(ordering: .relaxed) >= 3)
    }

    @Test("a type that is an IOQueue and no IOCustomQueue stops the program when given a handler")
    func markerOnlyQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (left, right) = try makeSocketPair()
            defer { close(right) }
            let ring = try RingLoop()
            let queue = MarkerOnlyQueue()
            let channel = IOChannel(kind: .stream, fileDescriptor: left, queue: queue, ring: ring) { _ in }
            let never = DispatchSemaphore(value: 0)
            channel.read(offset: 0, length: 1, queue: queue) { _, _, _ in never.signal() }
            writeAll(right, [1])
            _ = never.wait(timeout: .now() + 10)
        }
        let message = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(message.contains("is an IOQueue but no IOCustomQueue"))
    }
}
