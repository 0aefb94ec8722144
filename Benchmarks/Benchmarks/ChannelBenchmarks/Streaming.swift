//===----------------------------------------------------------------------===//
// RingIO — benchmarks: socketpair streaming of 64 KiB ropes, RingIO's IOChannel beside DispatchIO.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import IOBenchmarkSupport
import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A writer and a reader on the two ends of a Unix stream socketpair, both stream channels.
/// The writer writes the same 64 KiB value again and again, at most `window` writes
/// outstanding; the reader reads with one read of length `Int.max`, low water 1 (RingIO's
/// default on sockets; set for DispatchIO, whose default of 1 MiB would batch deliveries), and
/// counts.
protocol StreamingPair: IOFixture {
    /// Writes `count` chunks and returns when the reader has received them all. When
    /// `checkingContents`, the reader compares every byte with what was written.
    func transfer(chunks count: Int, checkingContents: Bool)
}

/// The chunk: 64 KiB of a pattern that repeats every 251 bytes (a prime, so consecutive chunks
/// differ in phase and a lost or repeated chunk is noticed).
enum Chunk {
    static let size = 65_536
    static let bytes: [UInt8] = (0..<size).map { UInt8($0 % 251) }
    /// Writes outstanding at once.
    static let window = 8

    /// The byte at stream position `position`.
    @inline(__always)
    static func byte(at position: Int) -> UInt8 {
        UInt8((position % self.size) % 251)
    }
}

/// The reader's count. The goal is set by the benchmark thread before the writer starts, and
/// read by the reader's handler: an atomic, because nothing orders a job enqueued on the
/// reader's queue before the handler calls that deliver the data (a channel may deliver several
/// handler calls from one drain of its own, already running on that queue).
final class StreamReaderTally: @unchecked Sendable {
    // @unchecked: `received` is touched only by the reader's handler calls, which never overlap;
    // the goal and the check flag are atomics.

    // MARK: Any thread, atomic
    /// The `received` value that ends the transfer in progress.
    private let goal = Atomic<Int>(0)
    private let checksContents = Atomic<Bool>(false)

    // MARK: Reader's handler only
    /// Bytes received since the start.
    private var received = 0

    /// Sets the goal for the next transfer. Called between transfers, before the writer starts.
    func expect(_ bytes: Int, checkingContents: Bool) {
        self.checksContents.store(checkingContents, ordering: .relaxed)
        self.goal.add(bytes, ordering: .releasing)
    }

    /// Accounts for received bytes; `true` when the transfer in progress is complete.
    func add(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let goal = self.goal.load(ordering: .acquiring)
        if self.checksContents.load(ordering: .relaxed) {
            for (index, byte) in bytes.enumerated() where byte != Chunk.byte(at: self.received + index) {
                fatalError("stream: wrong byte at stream position \(self.received + index)")
            }
        }
        self.received += bytes.count
        if self.received > goal {
            fatalError("stream: \(self.received - goal) bytes more than written")
        }
        return self.received == goal && bytes.count > 0
    }
}

/// The writer's count, confined to the writer's queue.
struct StreamWriterTally {
    private var toWrite = 0
    private var outstanding = 0

    /// Starts `count` writes; returns how many to issue now.
    ///
    /// The final handler calls of the previous transfer's last writes may still be on their way
    /// (the reader can receive the bytes before the writer's queue hears that they went out):
    /// those writes count against the window until their handlers run.
    mutating func begin(_ count: Int) -> Int {
        check(self.toWrite == 0, "stream: begin while writing")
        let now = min(count, max(0, Chunk.window - self.outstanding))
        self.toWrite = count - now
        self.outstanding += now
        return now
    }

    /// A write completed; returns whether to issue another.
    mutating func completed() -> Bool {
        self.outstanding -= 1
        guard self.toWrite > 0 else { return false }
        self.toWrite -= 1
        self.outstanding += 1
        return true
    }
}

// MARK: - RingIO

final class RingIOStream: StreamingPair, @unchecked Sendable {
    // @unchecked: `writer` is touched only on `writerQueue` (the job `transfer` enqueues there,
    // and the write handlers); `reader` documents its own. The rest is immutable, except
    // `writeHandler`, set in `init` and cleared in `tearDown`, when no handler can run.

    // MARK: Immutable after init
    private let rings: [RingLoop]
    private let writerQueue: any IOQueue
    private let readerQueue: any IOQueue
    private let writerChannel: IOChannel
    private let readerChannel: IOChannel
    private let chunk = ByteRope(copying: Chunk.bytes)
    private let done = DispatchSemaphore(value: 0)
    private let cleanedUp = DispatchGroup()
    /// Made once, so that a write allocates no closure of ours.
    private var writeHandler: (@Sendable (Bool, ByteRope?, Errno?) -> Void)!

    // MARK: Writer queue only
    private var writer = StreamWriterTally()

    // MARK: Reader queue only (see StreamReaderTally)
    private let reader = StreamReaderTally()

    /// - Parameter handlersOnRings: each end's handlers on its ring's thread, or on a serial
    ///   DispatchQueue per end. Each end has a ring of its own either way.
    init(handlersOnRings: Bool) throws {
        let writerRing = try RingLoop()
        let readerRing = try RingLoop()
        self.rings = [writerRing, readerRing]
        if handlersOnRings {
            self.writerQueue = writerRing
            self.readerQueue = readerRing
        } else {
            self.writerQueue = DispatchQueue(label: "RingIO.benchmarks.writer")
            self.readerQueue = DispatchQueue(label: "RingIO.benchmarks.reader")
        }
        let (writerFD, readerFD) = makeSocketPair()
        let cleanedUp = self.cleanedUp
        cleanedUp.enter()
        cleanedUp.enter()
        self.writerChannel = IOChannel(
            kind: .stream,
            fileDescriptor: writerFD,
            queue: self.writerQueue,
            ring: writerRing
        ) { _ in
            closeOrDie(writerFD)
            cleanedUp.leave()
        }
        self.readerChannel = IOChannel(
            kind: .stream,
            fileDescriptor: readerFD,
            queue: self.readerQueue,
            ring: readerRing
        ) { _ in
            closeOrDie(readerFD)
            cleanedUp.leave()
        }
        self.readerChannel.setLimit(lowWater: 1)
        // Strong captures: the handlers hold the fixture until `tearDown` stops the channels.
        self.writeHandler = { done, _, error in
            check(error == nil, "RingIO stream: write failed: \(error!)")
            if done, self.writer.completed() { self.write() }
        }
        self.readerChannel.read(offset: 0, length: Int.max, queue: self.readerQueue) { _, data, error in
            check(error == nil || error == .canceled, "RingIO stream: read failed: \(error!)")
            _ = data?.apply { _, bytes in
                if self.reader.add(bytes) { self.done.signal() }
                return true
            }
        }
    }

    func transfer(chunks count: Int, checkingContents: Bool) {
        self.reader.expect(count * Chunk.size, checkingContents: checkingContents)
        runLater(on: self.writerQueue) {
            for _ in 0..<self.writer.begin(count) { self.write() }
        }
        waitOrDie(self.done, "RingIO stream of \(count) chunks")
    }

    private func write() {
        self.writerChannel.write(offset: 0, data: self.chunk, queue: self.writerQueue, handler: self.writeHandler)
    }

    func tearDown() {
        self.writerChannel.close(flags: .stop)
        self.readerChannel.close(flags: .stop)
        if self.cleanedUp.wait(timeout: .now() + 10) == .timedOut {
            fatalError("RingIO stream: the channels were not cleaned up")
        }
        self.writeHandler = nil
        for ring in self.rings { ring.shutdown() }
    }
}

// MARK: - DispatchIO

final class DispatchIOStream: StreamingPair, @unchecked Sendable {
    // @unchecked: as RingIOStream.

    // MARK: Immutable after init
    private let writerQueue = DispatchQueue(label: "RingIO.benchmarks.writer")
    private let readerQueue = DispatchQueue(label: "RingIO.benchmarks.reader")
    private let writerChannel: DispatchIO
    private let readerChannel: DispatchIO
    private let chunk: DispatchData = Chunk.bytes.withUnsafeBytes { DispatchData(bytes: $0) }
    private let done = DispatchSemaphore(value: 0)
    private let cleanedUp = DispatchGroup()
    private var writeHandler: ((Bool, DispatchData?, Int32) -> Void)!

    // MARK: Writer queue only
    private var writer = StreamWriterTally()

    // MARK: Reader queue only (see StreamReaderTally)
    private let reader = StreamReaderTally()

    init() {
        let (writerFD, readerFD) = makeSocketPair()
        let cleanedUp = self.cleanedUp
        cleanedUp.enter()
        cleanedUp.enter()
        self.writerChannel = DispatchIO(type: .stream, fileDescriptor: writerFD, queue: self.writerQueue) { _ in
            closeOrDie(writerFD)
            cleanedUp.leave()
        }
        self.readerChannel = DispatchIO(type: .stream, fileDescriptor: readerFD, queue: self.readerQueue) { _ in
            closeOrDie(readerFD)
            cleanedUp.leave()
        }
        self.readerChannel.setLimit(lowWater: 1)
        self.writeHandler = { done, _, error in
            check(error == 0, "DispatchIO stream: write failed: errno \(error)")
            if done, self.writer.completed() { self.write() }
        }
        self.readerChannel.read(offset: 0, length: Int.max, queue: self.readerQueue) { _, data, error in
            check(error == 0 || error == ECANCELED, "DispatchIO stream: read failed: errno \(error)")
            data?.enumerateBytes { bytes, _, _ in
                if self.reader.add(UnsafeRawBufferPointer(bytes)) { self.done.signal() }
            }
        }
    }

    func transfer(chunks count: Int, checkingContents: Bool) {
        self.reader.expect(count * Chunk.size, checkingContents: checkingContents)
        self.writerQueue.async {
            for _ in 0..<self.writer.begin(count) { self.write() }
        }
        waitOrDie(self.done, "DispatchIO stream of \(count) chunks")
    }

    private func write() {
        self.writerChannel.write(offset: 0, data: self.chunk, queue: self.writerQueue, ioHandler: self.writeHandler)
    }

    func tearDown() {
        self.writerChannel.close(flags: .stop)
        self.readerChannel.close(flags: .stop)
        if self.cleanedUp.wait(timeout: .now() + 10) == .timedOut {
            fatalError("DispatchIO stream: the channels were not cleaned up")
        }
        self.writeHandler = nil
    }
}
