//===----------------------------------------------------------------------===//
// RingIO — benchmarks: one read of a whole large file, RingIO's IOChannel beside DispatchIO
// (the FileRead_* benchmarks and the throughput comparison's `file-read` tool).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Reads the whole ``TestFile`` with one read operation of length `Int.max` on a new
/// random-access channel, low water left at its default (one 1 MiB chunk for both), then
/// closes the channel. The descriptor is opened once, in setup.
public protocol WholeFileReader: IOFixture {
    /// Reads the file once; returns the bytes delivered. When `checking`, checks every piece.
    func readWholeFile(checking: Bool) -> Int
}

/// What one read delivered, touched only on the handler queue until `done` is signalled.
private final class ReadTally: @unchecked Sendable {
    // @unchecked: written by the read's handler calls (never overlapping, on one queue), read by
    // the benchmark thread only after `done.wait()`, which orders the two.
    var bytes = 0
    let checking: Bool
    let done = DispatchSemaphore(value: 0)

    init(checking: Bool) {
        self.checking = checking
    }

    /// Accounts for a piece delivered at the current end of what was read.
    func add(_ bytes: UnsafeRawBufferPointer) {
        if self.checking { TestFile.verify(bytes, at: self.bytes) }
        self.bytes += bytes.count
    }
}

// MARK: - RingIO

public final class RingIOFileReader: WholeFileReader {
    private let ring: RingLoop
    private let fd: CInt
    private let queue: any IOQueue

    /// - Parameter handlersOnRing: handlers on the ring's thread (no hop), or on a serial
    ///   DispatchQueue (as DispatchIO's).
    public init(handlersOnRing: Bool) throws {
        self.ring = try RingLoop()
        self.fd = TestFile.open()
        self.queue = handlersOnRing ? self.ring : DispatchQueue(label: "RingIO.benchmarks.file")
    }

    public func readWholeFile(checking: Bool) -> Int {
        let tally = ReadTally(checking: checking)
        let cleanedUp = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .randomAccess, fileDescriptor: self.fd, queue: self.queue, ring: self.ring) {
            error in
            check(error == nil, "RingIO file read: cleanup with \(error!)")
            cleanedUp.signal()
        }
        channel.read(offset: 0, length: Int.max, queue: self.queue) { done, data, error in
            check(error == nil, "RingIO file read failed: \(error!)")
            _ = data?.apply { _, bytes in
                tally.add(bytes)
                return true
            }
            if done { tally.done.signal() }
        }
        waitOrDie(tally.done, seconds: 120, "RingIO's read of \(TestFile.path)")
        channel.close()
        waitOrDie(cleanedUp, "RingIO's channel cleanup")
        return tally.bytes
    }

    public func tearDown() {
        closeOrDie(self.fd)
        self.ring.shutdown()
    }
}

// MARK: - DispatchIO

public final class DispatchIOFileReader: WholeFileReader {
    private let fd: CInt
    private let queue = DispatchQueue(label: "RingIO.benchmarks.file")

    public init() {
        self.fd = TestFile.open()
    }

    public func readWholeFile(checking: Bool) -> Int {
        let tally = ReadTally(checking: checking)
        let cleanedUp = DispatchSemaphore(value: 0)
        let channel = DispatchIO(type: .random, fileDescriptor: self.fd, queue: self.queue) { error in
            check(error == 0, "DispatchIO file read: cleanup with errno \(error)")
            cleanedUp.signal()
        }
        channel.read(offset: 0, length: Int.max, queue: self.queue) { done, data, error in
            check(error == 0, "DispatchIO file read failed: errno \(error)")
            data?.enumerateBytes { bytes, _, _ in tally.add(UnsafeRawBufferPointer(bytes)) }
            if done { tally.done.signal() }
        }
        waitOrDie(tally.done, seconds: 120, "DispatchIO's read of \(TestFile.path)")
        channel.close()
        waitOrDie(cleanedUp, "DispatchIO's channel cleanup")
        return tally.bytes
    }

    public func tearDown() {
        closeOrDie(self.fd)
    }
}
