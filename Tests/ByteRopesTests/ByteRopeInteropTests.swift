//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: Foundation `Data`, `DispatchData`, and iovec export through a
// real `writev` into a pipe.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import ByteRopesFoundationCompat
import Dispatch
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `DispatchData` of several regions, each copied by dispatch.
private func multiRegionDispatchData(_ parts: [String]) -> DispatchData {
    var data = DispatchData.empty
    for part in parts {
        Array(part.utf8).withUnsafeBytes { data.append(DispatchData(bytes: $0)) }
    }
    return data
}

/// The base address and size of each region of `data`.
private func dispatchRegions(_ data: DispatchData) -> [(UnsafeRawPointer, Int)] {
    var regions: [(UnsafeRawPointer, Int)] = []
    data.enumerateBytes { bytes, _, _ in
        regions.append((UnsafeRawPointer(bytes.baseAddress!), bytes.count))
    }
    return regions
}

// MARK: - Foundation

@Suite("ByteRope: Foundation Data")
struct ByteRopeDataTests {
    @Test("Data(rope) has the rope's bytes", arguments: Shape.allCases)
    func dataFromRope(shape: Shape) {
        let data = Data(shape.rope)
        #expect(data.count == shape.model.count)
        #expect(Array(data) == shape.model)
    }

    @Test("ByteRope(data) copies the bytes into one region")
    func ropeFromData() {
        let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        let data = Data(bytes)
        let rope = ByteRope(data)
        expectMatchesModel(rope, bytes, "ByteRope(Data)")
        #expect(rope.regionCount == 1)
        #expect(ByteRope(Data()).isEmpty)
        // A Data slice (non-zero startIndex) too.
        let slice = data[100..<200]
        #expect(Array(ByteRope(slice)) == Array(bytes[100..<200]))
    }

    @Test("Data(rope) is a copy: it stays valid after the rope is gone, which lets go of its region")
    func dataOutlivesRope() {
        withLifetimeTracking { tracker in
            let bytes = (0..<4_096).map { UInt8(truncatingIfNeeded: $0 * 7) }
            var data: Data?
            do {
                let rope = tracker.rope(copying: bytes)
                data = Data(rope)
                #expect(ByteRope(data!) == rope)
            }
            #expect(Array(data!) == bytes)
            data = nil
            #expect(tracker.live == 0)
        }
    }

    /// R1: a rope's bytes never change. `Data` is mutable in place when its storage is
    /// uniquely referenced, so a `Data` that references a region without copying must not be
    /// writable into that region.
    @Test(
        "mutating a Data made from a rope leaves the rope's bytes unchanged",
        arguments: [[100], [50, 50], [10, 80, 10]]
    )
    func mutatingDataLeavesRopeUnchanged(layout: [Int]) {
        let bytes = Array(repeating: UInt8(0x11), count: 100)
        let rope = makeRope(bytes, layout: layout)
        let witness = rope.subrange(0..<10)  // another rope sharing the region
        var data = Data(rope)
        data[0] = 0x42
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in buffer[1] = 0x43 }
        #expect(Array(data.prefix(2)) == [0x42, 0x43])
        #expect(Array(rope) == bytes, "the rope changed through the Data")
        #expect(Array(witness) == Array(bytes[..<10]), "a subrange changed through the Data")
    }

    @Test("a Data made from read-only mapped memory can be mutated without a fault")
    func mutatingDataOverReadOnlyMemory() async {
        // Exit test: were the Data to write into the region, the write to a PROT_READ page
        // would kill the process with SIGSEGV.
        await #expect(processExitsWith: .success) {
            let length = Int(getpagesize())
            let mapping = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
            precondition(mapping != MAP_FAILED)
            precondition(mprotect(mapping, length, PROT_READ) == 0)
            let rope = ByteRope(
                bytesNoCopy: UnsafeRawBufferPointer(start: mapping, count: length),
                deallocator: .unmap
            )
            var data = Data(rope)
            data[0] = 1
            precondition(data[0] == 1 && rope[0] == 0)
        }
    }
}

// MARK: - Dispatch

@Suite("ByteRope: DispatchData")
struct ByteRopeDispatchTests {
    @Test("ByteRope(DispatchData) references the data's own regions (zero copy)")
    func ropeFromDispatchDataIsZeroCopy() {
        let data = multiRegionDispatchData(["hello", ", ", "dispatch", " world"])
        let rope = ByteRope(data)
        expectMatchesModel(rope, Array("hello, dispatch world".utf8), "ByteRope(DispatchData)")
        let regions = dispatchRegions(data)
        #expect(rope.regionCount == regions.count)
        #expect(regionBases(rope) == regions.map(\.0))
        #expect(regionSizes(rope) == regions.map(\.1))
        #expect(ByteRope(DispatchData.empty).isEmpty)
    }

    @Test("DispatchData(rope) round-trips", arguments: Shape.allCases)
    func dispatchDataRoundTrip(shape: Shape) {
        let rope = shape.rope
        let data = DispatchData(rope)
        #expect(data.count == shape.model.count)
        #expect(Array(data) == shape.model)
        // Dispatch references the rope's regions rather than copying them.
        #expect(dispatchRegions(data).map(\.0) == regionBases(rope))
        let back = ByteRope(data)
        #expect(back == rope)
        #expect(regionBases(back) == regionBases(rope))
    }

    @Test("a rope keeps its DispatchData alive; the data's deallocator runs after the rope is gone")
    func ropeKeepsDispatchDataAlive() {
        let queue = DispatchQueue(label: "ByteRopeDispatchTests.deallocator")
        let runs = Counter()
        let memory = UnsafeMutableRawBufferPointer(start: malloc(100)!, count: 100)
        for i in 0..<100 {
            memory[i] = UInt8(i)
        }
        let address = UInt(bitPattern: memory.baseAddress)
        var data: DispatchData? = DispatchData(
            bytesNoCopy: UnsafeRawBufferPointer(memory),
            deallocator: .custom(queue) {
                runs.increment()
                free(UnsafeMutableRawPointer(bitPattern: address))
            }
        )
        var rope: ByteRope? = ByteRope(data!)
        #expect(regionBases(rope!) == [UnsafeRawPointer(memory.baseAddress!)])
        let sub = rope!.subrange(90..<100)
        data = nil
        rope = nil
        queue.sync {}
        #expect(runs.value == 0, "the DispatchData was released while a subrange still referenced it")
        #expect(Array(sub) == Array(90..<100))
        _ = consume sub
        #expect(waitUntil { runs.value == 1 }, "the DispatchData's deallocator did not run within 10 s")
        queue.sync {}
        #expect(runs.value == 1)
    }

    @Test("DispatchData(rope) keeps the rope's regions alive until dispatch releases them")
    func dispatchDataKeepsRegionsAlive() {
        let tracker = LifetimeTracker()
        var data: DispatchData? = DispatchData(tracker.rope(Array("abcdefgh".utf8), layout: [2, 3, 3]))
        #expect(tracker.live == 3)
        #expect(data.map { Array($0) } == Array("abcdefgh".utf8))
        data = nil
        // Dispatch runs the releasing blocks asynchronously on a global queue.
        #expect(waitUntil { tracker.live == 0 }, "\(tracker.live) regions still retained by released DispatchData")
        #expect(tracker.destroyedCount == 3)
    }
}

// MARK: - iovec export

@Suite("ByteRope: iovec export")
struct ByteRopeIOVectorTests {
    /// Writes the vectors into a pipe with `writev` and reads back what arrives.
    private func writeAndReadBack(_ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) throws -> [UInt8] {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let written = writev(fds[1], vectors.baseAddress, Int32(count))
        try #require(written >= 0, "writev failed with errno \(errno)")
        var result = [UInt8](repeating: 0, count: written)
        var received = 0
        while received < written {
            let n = result.withUnsafeMutableBytes { read(fds[0], $0.baseAddress! + received, written - received) }
            try #require(n > 0, "read failed with errno \(errno)")
            received += n
        }
        return result
    }

    @Test("exported vectors, written with writev into a pipe, give the rope's bytes from the offset")
    func writevThroughAPipe() throws {
        let model = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
        let layout = (0..<60).map { 20 + ($0 * 17) % 61 }.reduce(into: [Int]()) { sizes, size in
            if sizes.reduce(0, +) + size <= model.count { sizes.append(size) }
        }
        let used = Array(model[..<layout.reduce(0, +)])
        let rope = makeRope(used, layout: layout)
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 128)
        defer { vectors.deallocate() }
        let starts = boundaries(of: layout)
        for offset in [0, 1, starts[1], starts[1] + 5, used.count / 2, used.count - 1, used.count] {
            let (vectorCount, byteCount) = rope.exportIOVectors(into: vectors, from: offset)
            let expectedVectors = layout.count - (starts.lastIndex { $0 <= offset }!)
            #expect(vectorCount == expectedVectors, "offset \(offset)")
            #expect(byteCount == used.count - offset, "offset \(offset)")
            #expect((0..<vectorCount).reduce(0) { $0 + vectors[$1].iov_len } == byteCount)
            #expect(
                try self.writeAndReadBack(vectors, count: vectorCount) == Array(used[offset...]),
                "offset \(offset)"
            )
        }
    }

    @Test("fewer vectors than regions: the export stops at the vectors' count")
    func limitedVectors() throws {
        let rope = makeRope(Array(0..<100), layout: Array(repeating: 10, count: 10))
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 3)
        defer { vectors.deallocate() }
        let (vectorCount, byteCount) = rope.exportIOVectors(into: vectors, from: 15)
        #expect(vectorCount == 3)
        #expect(byteCount == 5 + 10 + 10)
        #expect(try self.writeAndReadBack(vectors, count: vectorCount) == Array(15..<40))
        let none = rope.exportIOVectors(into: UnsafeMutableBufferPointer(start: nil, count: 0), from: 0)
        #expect(none.vectorCount == 0 && none.byteCount == 0)
        let atEnd = rope.exportIOVectors(into: vectors, from: 100)
        #expect(atEnd.vectorCount == 0 && atEnd.byteCount == 0)
        let empty = ByteRope().exportIOVectors(into: vectors)
        #expect(empty.vectorCount == 0 && empty.byteCount == 0)
    }

    @Test("retained owners (+1 each) keep the memory alive after the rope is gone, until released once")
    func retainedOwners() throws {
        try withLifetimeTracking { (tracker: LifetimeTracker) throws in
            let model = Array("zero-copy vectored write".utf8)
            let layout = [4, 1, 4, 1, 10, 4]
            var rope: ByteRope? = tracker.rope(model, layout: layout)
            let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 8)
            defer { vectors.deallocate() }
            let owners = UnsafeMutableBufferPointer<Unmanaged<AnyObject>>.allocate(capacity: 8)
            defer { owners.deallocate() }
            let (vectorCount, byteCount) = rope!.exportIOVectors(into: vectors, retainingOwnersInto: owners, from: 2)
            #expect(vectorCount == 6)
            #expect(byteCount == model.count - 2)
            rope = nil
            // Only the +1s taken by the export keep the regions alive now.
            #expect(tracker.live == 6)
            #expect(try self.writeAndReadBack(vectors, count: vectorCount) == Array(model[2...]))
            for index in 0..<vectorCount {
                #expect(tracker.live == 6 - index)
                owners[index].release()
            }
            #expect(tracker.live == 0)
            #expect(tracker.destroyedCount == 6)
        }
    }
}
