//===----------------------------------------------------------------------===//
// RingIO — ByteRopes tests: deallocators and owners run exactly once, and only after the
// last rope, slice, subrange, region and iterator referencing their memory is gone.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Dispatch
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Fills `count` bytes of fresh `malloc` memory with a pattern.
private func mallocBytes(_ count: Int) -> UnsafeMutableRawBufferPointer {
    let memory = UnsafeMutableRawBufferPointer(start: malloc(count)!, count: count)
    for i in 0..<count {
        memory[i] = UInt8(truncatingIfNeeded: i &* 3 &+ 1)
    }
    return memory
}

private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ 1) }
}

/// Whether any page of `base..<base + count` is mapped: `mincore` fails with ENOMEM for
/// unmapped addresses.
private func isMapped(_ base: UnsafeMutableRawPointer, count: Int) -> Bool {
    let pages = (count + Int(getpagesize()) - 1) / Int(getpagesize())
    var vector = [UInt8](repeating: 0, count: pages)
    let result = mincore(base, count, &vector)
    if result == 0 { return true }
    precondition(errno == ENOMEM, "mincore failed with errno \(errno)")
    return false
}

/// A deallocator body's record: how often it ran, and how often on the expected queue.
private final class DeallocatorProbe: Sendable {
    let runs = Counter()
    let runsOnQueue = Counter()
    let queue: DispatchQueue
    private let key: DispatchSpecificKeyBox

    init(label: String) {
        self.queue = DispatchQueue(label: label)
        self.key = DispatchSpecificKeyBox()
        self.queue.setSpecific(key: self.key.key, value: 1)
    }

    /// A `.custom` deallocator on this probe's queue that frees `memory` (if any) and records
    /// the run.
    func deallocator(freeing memory: UnsafeMutableRawPointer? = nil) -> ByteRope.Deallocator {
        let address = UInt(bitPattern: memory)
        return .custom(queue: self.queue) {
            if DispatchQueue.getSpecific(key: self.key.key) == 1 {
                self.runsOnQueue.increment()
            }
            self.runs.increment()
            free(UnsafeMutableRawPointer(bitPattern: address))
        }
    }

    /// Everything already submitted to the queue has run when this returns.
    func flush() {
        self.queue.sync {}
    }
}

/// @unchecked: the key is only read after `init`; `DispatchSpecificKey` itself is not marked
/// Sendable on Linux.
private final class DispatchSpecificKeyBox: @unchecked Sendable {
    let key = DispatchSpecificKey<Int>()
}

@Suite("ByteRope: lifetimes")
struct ByteRopeLifetimeTests {
    // MARK: .custom

    @Test(".custom runs once, on its queue, after the last rope, slice, subrange, Region and iterator")
    func customDeallocatorRunsAfterTheLastReference() {
        let probe = DeallocatorProbe(label: "ByteRopeLifetimeTests.custom")
        let memory = mallocBytes(64)
        let model = pattern(64)
        var rope: ByteRope? = ByteRope(
            bytesNoCopy: UnsafeRawBufferPointer(memory),
            deallocator: probe.deallocator(freeing: memory.baseAddress)
        )
        var combined: ByteRope? = ByteRope(copying: "head".utf8) + rope! + ByteRope(copying: "tail".utf8)
        var slice: Slice<ByteRope>? = rope![10..<20]
        var region: ByteRope.Region? = rope!.regions[0]
        var iterator: ByteRope.Iterator? = rope!.makeIterator()
        var copied: [UInt8]? = Array(rope!)  // a copy of the bytes holds nothing
        var oneByte: ByteRope? = rope!.subrange(63..<64)
        #expect(regionBases(combined!)[1] == UnsafeRawPointer(memory.baseAddress!))

        func expectNotRun(_ stage: String, sourceLocation: SourceLocation = #_sourceLocation) {
            probe.flush()
            #expect(probe.runs.value == 0, "deallocator ran \(stage)", sourceLocation: sourceLocation)
        }

        rope = nil
        expectNotRun("after the rope was dropped")
        #expect(Array(combined!) == Array("head".utf8) + model + Array("tail".utf8))
        combined = nil
        expectNotRun("after the combined rope was dropped")
        #expect(Array(slice!) == Array(model[10..<20]))
        slice = nil
        expectNotRun("after the slice was dropped")
        #expect(region!.withUnsafeBytes { Array($0) } == model)
        region = nil
        expectNotRun("after the Region was dropped")
        #expect(iterator!.next() == model[0])
        iterator = nil
        expectNotRun("after the iterator was dropped")
        #expect(copied == model)
        copied = nil
        expectNotRun("after the copied array was dropped")
        #expect(Array(oneByte!) == [model[63]])
        oneByte = nil

        probe.flush()
        #expect(probe.runs.value == 1)
        #expect(probe.runsOnQueue.value == 1, "the deallocator ran on another queue")
        probe.flush()
        #expect(probe.runs.value == 1, "the deallocator ran more than once")
    }

    @Test(".custom with a nil queue runs once on a global queue")
    func customDeallocatorWithoutQueue() {
        let runs = Counter()
        let memory = mallocBytes(16)
        let address = UInt(bitPattern: memory.baseAddress)
        do {
            let rope = ByteRope(
                bytesNoCopy: UnsafeRawBufferPointer(memory),
                deallocator: .custom(queue: nil) {
                    runs.increment()
                    free(UnsafeMutableRawPointer(bitPattern: address))
                }
            )
            let sub = rope.subrange(3..<5)
            #expect(Array(sub) == Array(pattern(16)[3..<5]))
            #expect(runs.value == 0)
        }
        #expect(waitUntil { runs.value == 1 }, "the deallocator did not run within 10 s")
        #expect(runs.value == 1)
    }

    @Test(
        "an empty buffer, with or without a base address, runs the deallocator at once, exactly once",
        arguments: [false, true]
    )
    func emptyBufferRunsDeallocatorAtOnce(withBase: Bool) {
        let probe = DeallocatorProbe(label: "ByteRopeLifetimeTests.empty")
        let memory = withBase ? malloc(8) : nil
        let rope = ByteRope(
            bytesNoCopy: UnsafeRawBufferPointer(start: memory, count: 0),
            deallocator: probe.deallocator(freeing: memory)
        )
        #expect(rope.isEmpty)
        #expect(rope.regionCount == 0)
        rope._validateInvariants()
        probe.flush()
        #expect(probe.runs.value == 1)
        #expect(probe.runsOnQueue.value == 1)
        // Using the (empty) rope afterwards does not run it again.
        let again = rope + rope
        #expect(again.isEmpty)
        probe.flush()
        #expect(probe.runs.value == 1)
    }

    @Test("empty buffers with .free, .none and .unmap give the empty rope")
    func emptyBufferOtherDeallocators() {
        // .free with a non-nil base frees it at once (a leak or a double free shows under ASan).
        let freed = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: malloc(8), count: 0), deallocator: .free)
        #expect(freed.isEmpty)
        #expect(ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: nil, count: 0), deallocator: .free).isEmpty)
        #expect(ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: nil, count: 0), deallocator: .none).isEmpty)
        #expect(ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: nil, count: 0), deallocator: .unmap).isEmpty)
    }

    // MARK: .free, .unmap, .none

    @Test(".free: subranges and ropes built from the region keep it readable")
    func freeDeallocator() {
        let model = pattern(300)
        var rope: ByteRope? = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(mallocBytes(300)), deallocator: .free)
        let sub = rope!.subrange(100..<200)
        var tree = ByteRope()
        for i in 0..<40 {
            tree.append(rope!.subrange(i * 7..<i * 7 + 5))
        }
        rope = nil
        #expect(Array(sub) == Array(model[100..<200]))
        #expect(tree.regionCount == 40)
        let expected: [UInt8] = (0..<40).flatMap { (i: Int) -> [UInt8] in Array(model[i * 7..<i * 7 + 5]) }
        #expect(Array(tree) == expected)
        #expect(tree.regions.allSatisfy { $0.rope.debugDescription.contains("free") })
    }

    @Test(".unmap: the mapping is unmapped once the last subrange is gone")
    func unmapDeallocator() throws {
        let length = 16 * Int(getpagesize())
        let mapping = try #require(
            {
                let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                return address == MAP_FAILED ? nil : address
            }()
        )
        let bytes = UnsafeMutableRawBufferPointer(start: mapping, count: length)
        for i in 0..<length {
            bytes[i] = UInt8(truncatingIfNeeded: i &* 11)
        }
        var rope: ByteRope? = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(bytes), deallocator: .unmap)
        var sub: ByteRope? = rope!.subrange(5_000..<5_001)
        var region: ByteRope.Region? = rope!.regions[0]
        #expect(rope!.debugDescription.contains("unmap"))
        rope = nil
        #expect(isMapped(mapping, count: length))
        #expect(region!.withUnsafeBytes { $0[length - 1] } == UInt8(truncatingIfNeeded: (length - 1) &* 11))
        region = nil
        #expect(isMapped(mapping, count: length))
        #expect(Array(sub!) == [UInt8(truncatingIfNeeded: 5_000 &* 11)])
        sub = nil
        #expect(!isMapped(mapping, count: length), "the mapping is still there after the last reference went")
    }

    @Test(".none: the rope reads the caller's memory and never releases it")
    func noneDeallocator() {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 8)
        defer { memory.deallocate() }
        memory.copyBytes(from: pattern(32))
        do {
            let rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(memory), deallocator: .none)
            let pieces = rope.subrange(1..<4) + rope.subrange(30..<32)
            #expect(Array(pieces) == Array(pattern(32)[1..<4]) + Array(pattern(32)[30..<32]))
            #expect(rope.debugDescription.contains("none"))
        }
        // Still ours and still intact.
        #expect(Array(memory) == pattern(32))
    }

    // MARK: Owners

    @Test("an unsafeOwner region's owner is released once, after the last reference")
    func unsafeOwnerLifetime() {
        withLifetimeTracking { tracker in
            var rope: ByteRope? = tracker.rope(copying: Array("kernel buffer".utf8))
            #expect(tracker.live == 1)
            var sub: ByteRope? = rope!.subrange(7..<13)
            var region: ByteRope.Region? = (ByteRope(copying: "x".utf8) + rope!).regions[1]
            rope = nil
            #expect(tracker.live == 1)
            #expect(Array(sub!) == Array("buffer".utf8))
            sub = nil
            #expect(tracker.live == 1)
            #expect(region!.withUnsafeBytes { Array($0) } == Array("kernel buffer".utf8))
            #expect(Array(region!.rope) == Array("kernel buffer".utf8))
            region = nil
            #expect(tracker.live == 0)
            #expect(tracker.destroyedCount == 1)
        }
    }

    @Test("an empty unsafeOwner buffer gives the empty rope and does not keep the owner")
    func unsafeOwnerEmpty() {
        withLifetimeTracking { tracker in
            var owner: TrackedOwner? = TrackedOwner([UInt8](), tracker: tracker)
            let rope = ByteRope(
                unsafeOwner: owner!,
                bytes: UnsafeRawBufferPointer(start: owner!.memory.baseAddress, count: 0)
            )
            #expect(rope.isEmpty)
            owner = nil
            #expect(tracker.live == 0)
        }
    }

    @Test("a Region keeps its memory alive after every rope is gone")
    func regionOutlivesRope() {
        withLifetimeTracking { tracker in
            var rope: ByteRope? = tracker.rope(Array("abcdefghij".utf8), layout: [3, 3, 4])
            let regions = Array(rope!.regions)
            rope = nil
            #expect(tracker.live == 3)
            #expect(
                regions.map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } == ["abc", "def", "ghij"]
            )
            #expect(regions.map(\.offset) == [0, 3, 6])
        }
    }

    @Test("every owner of a big tree is released exactly once when the last copy goes")
    func bigTreeReleasesEveryOwner() {
        withLifetimeTracking { tracker in
            var rope: ByteRope? = ByteRope()
            for i in 0..<3_000 {
                rope!.append(tracker.rope(copying: [UInt8(truncatingIfNeeded: i)]))
            }
            var copy: ByteRope? = rope
            var sub: ByteRope? = rope!.subrange(1_000..<1_010)
            rope!.append(rope!)
            #expect(tracker.live == 3_000)
            rope = nil
            #expect(tracker.live == 3_000)
            #expect(copy!.regionCount == 3_000)
            copy = nil
            #expect(tracker.live == 10)  // what the subrange still references
            #expect(sub!.regionCount == 10)
            sub = nil
            #expect(tracker.destroyedCount == 3_000)
        }
    }
}
