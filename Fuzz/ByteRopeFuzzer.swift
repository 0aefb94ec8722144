//===----------------------------------------------------------------------===//
// RingIO — ByteRope libFuzzer target
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//
//
// Compiled together with Sources/ByteRopes/*.swift into one module (see
// run-byterope-fuzzer.sh), so it can reach the package/internal API
// (`_validateInvariants()`, `init(unsafeOwner:bytes:)`, `exportIOVectors`).
//
// The input is a little program: each operation reads an opcode byte and its operands from
// the input and runs on a few rope slots, each mirrored by a model (its bytes and the
// lengths of its regions — regions are never merged, so the model predicts them exactly).
// After every operation the touched ropes are compared with their models and their
// invariants validated; at the end of the input every slot is compared in full, everything
// is dropped, and every region owner must have been released exactly once.
//
// Any mismatch is a `fatalError` naming the operation; set BYTEROPE_FUZZ_TRACE=1 to print
// the operations of an input as they run.

import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Limits (keep the per-input work bounded)

private let slotCount = 4
private let maxBytes = 64 * 1024  // per rope
private let maxRegions = 20_000  // per rope
private let maxOps = 128  // per input
private let smallBytes = 4096  // full comparison after an operation below these sizes
private let smallRegions = 256
private let maxHeld = 8

// MARK: - Failure reporting and tracing

/// Describes the running operation; evaluated only on failure or when tracing.
nonisolated(unsafe) private var currentOp: () -> String = { "setup" }
nonisolated(unsafe) private var opNumber = 0
private let traceEnabled = getenv("BYTEROPE_FUZZ_TRACE") != nil

private func fail(_ message: String) -> Never {
    fatalError("ByteRope fuzz: op #\(opNumber) [\(currentOp())]: \(message)")
}

@inline(__always)
private func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

private func writeStderr(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

private func trace(_ line: @autoclosure () -> String) {
    if traceEnabled { writeStderr("  \(line())\n") }
}

/// Names the operation about to run (lazily) and traces it.
private func setOp(_ describe: @escaping () -> String) {
    currentOp = describe
    if traceEnabled { writeStderr("  \(describe())\n") }
}

private func hex(_ bytes: some Collection<UInt8>, limit: Int = 24) -> String {
    var s = "["
    for (i, b) in bytes.prefix(limit).enumerated() {
        if i > 0 { s += "," }
        s += "0x" + String(b, radix: 16)
    }
    if bytes.count > limit { s += ",…(\(bytes.count) bytes)" }
    return s + "]"
}

// MARK: - Ownership accounting

/// Custom deallocators: every creation enters the group, every run leaves it (so a second
/// run of one deallocator is an unbalanced leave, which dispatch traps on).
private let deallocGroup = DispatchGroup()
private let deallocQueue = DispatchQueue(label: "byterope-fuzz.dealloc")
private let customCreated = Atomic<Int>(0)
private let customRuns = Atomic<Int>(0)

/// `init(unsafeOwner:bytes:)` owners: deinit runs synchronously on release.
nonisolated(unsafe) private var ownersCreated = 0
nonisolated(unsafe) private var ownersDestroyed = 0

private final class CountingOwner {
    let memory: UnsafeMutableRawBufferPointer

    init(copying bytes: [UInt8]) {
        self.memory = .allocate(byteCount: Swift.max(bytes.count, 1), alignment: 8)
        bytes.withUnsafeBytes { self.memory.copyMemory(from: $0) }
        ownersCreated += 1
    }

    deinit {
        // Scribble before freeing, so a stale read that ASan misses still shows as a mismatch.
        self.memory.initializeMemory(as: UInt8.self, repeating: 0xDD)
        self.memory.deallocate()
        ownersDestroyed += 1
    }
}

/// Immutable memory for `.none` regions: byte i is `UInt8(truncatingIfNeeded: i &* 7 &+ 3)`.
nonisolated(unsafe) private let staticRegion: UnsafeMutableRawBufferPointer = {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    for i in 0..<buffer.count { buffer[i] = UInt8(truncatingIfNeeded: i &* 7 &+ 3) }
    return buffer
}()

// MARK: - Input reader

private struct Input {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    var isExhausted: Bool { self.position >= self.bytes.count }

    mutating func byte() -> UInt8 {
        guard self.position < self.bytes.count else { return 0 }
        defer { self.position += 1 }
        return self.bytes[self.position]
    }

    mutating func word() -> Int {
        Int(self.byte()) | Int(self.byte()) << 8
    }

    /// A value in `0..<bound`, `bound > 0`.
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        if bound <= 256 { return Int(self.byte()) % bound }
        return self.word() % bound
    }

    /// `count` bytes: up to `fromInput` of them read from the input, the rest generated from
    /// them; mapped onto a small alphabet when `alphabet > 0` (to make searches match).
    mutating func take(_ count: Int, fromInput: Int = 24, alphabet: UInt8 = 0) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count)
        let available = Swift.min(count, fromInput, Swift.max(self.bytes.count - self.position, 0))
        for i in 0..<available { out.append(self.bytes[self.position + i]) }
        self.position += available
        var x = UInt32(truncatingIfNeeded: count) &* 2_654_435_761
        for b in out { x = (x ^ UInt32(b)) &* 16_777_619 }
        while out.count < count {
            x = x &* 1_103_515_245 &+ 12345
            out.append(UInt8(truncatingIfNeeded: x >> 16))
        }
        if alphabet > 0 {
            for i in out.indices { out[i] = 0x61 &+ out[i] % alphabet }
        }
        return out
    }

    /// Content for a new region: a length class and an alphabet chosen by the input.
    mutating func content() -> [UInt8] {
        let selector = self.byte()
        let count: Int
        switch selector & 3 {
        case 0: count = Int(self.byte() % 8)
        case 1: count = Int(self.byte())
        case 2: count = self.word() % 4096
        default: count = 1 + Int(self.byte() % 3)
        }
        let alphabet: UInt8
        switch (selector >> 2) & 3 {
        case 0: alphabet = 2
        case 1: alphabet = 3
        default: alphabet = 0
        }
        return self.take(count, alphabet: alphabet)
    }
}

// MARK: - Model

private struct Model {
    var bytes: [UInt8] = []
    /// The length of each region, in order; never 0.
    var regions: [Int] = []

    init() {}

    init(oneRegion bytes: [UInt8]) {
        self.bytes = bytes
        self.regions = bytes.isEmpty ? [] : [bytes.count]
    }

    var count: Int { self.bytes.count }

    func fits(adding other: Model) -> Bool {
        self.count + other.count <= maxBytes && self.regions.count + other.regions.count <= maxRegions
    }

    static func + (lhs: Model, rhs: Model) -> Model {
        var result = lhs
        result.bytes += rhs.bytes
        result.regions += rhs.regions
        return result
    }

    /// The offset at which region `index` starts (`count` for `index == regions.count`).
    func regionStart(_ index: Int) -> Int {
        var start = 0
        for length in self.regions[..<index] { start += length }
        return start
    }

    /// The region holding byte `offset` (`0 <= offset < count`) and its start.
    func region(containing offset: Int) -> (index: Int, start: Int) {
        var start = 0
        for (index, length) in self.regions.enumerated() {
            if offset < start + length { return (index, start) }
            start += length
        }
        fail("model: offset \(offset) past the end \(self.count)")
    }

    /// The model of `subrange(range)`: the regions overlapping `range`, trimmed.
    func subrange(_ range: Range<Int>) -> Model {
        var result = Model()
        guard !range.isEmpty else { return result }
        result.bytes = Array(self.bytes[range])
        var start = 0
        for length in self.regions {
            let end = start + length
            if end > range.lowerBound && start < range.upperBound {
                result.regions.append(Swift.min(end, range.upperBound) - Swift.max(start, range.lowerBound))
            }
            start = end
            if start >= range.upperBound { break }
        }
        return result
    }

    func firstRange(of needle: [UInt8]) -> Range<Int>? {
        if needle.isEmpty { return 0..<0 }
        if needle.count > self.count { return nil }
        return self.bytes.withUnsafeBytes { hay in
            needle.withUnsafeBytes { pattern in
                let last = hay.count - pattern.count
                var position = 0
                while position <= last {
                    guard let hit = memchr(hay.baseAddress! + position, Int32(pattern[0]), last - position + 1) else {
                        return nil
                    }
                    let candidate = UnsafeRawPointer(hit) - hay.baseAddress!
                    if memcmp(hay.baseAddress! + candidate, pattern.baseAddress!, pattern.count) == 0 {
                        return candidate..<candidate + pattern.count
                    }
                    position = candidate + 1
                }
                return nil
            }
        }
    }
}

// MARK: - Checking a rope against its model

private func address(_ pointer: UnsafeRawPointer?) -> UInt {
    UInt(bitPattern: pointer)
}

/// The address of byte `offset` (`< count`) of `rope`, through `region(containing:)`.
private func byteAddress(_ rope: ByteRope, _ offset: Int) -> UInt {
    let (region, start) = rope.region(containing: offset)
    return region.withUnsafeBytes { address($0.baseAddress) } + UInt(offset - start)
}

/// Compares `rope` with `model` (exactly when small or `full`, by sampling otherwise) and
/// validates the rope's invariants.
private func verify(_ rope: ByteRope, _ model: Model, _ label: String, full: Bool = false) {
    rope._validateInvariants()
    let count = model.count
    expect(rope.count == count, "\(label): count \(rope.count), model \(count)")
    expect(rope.isEmpty == (count == 0), "\(label): isEmpty \(rope.isEmpty) with count \(count)")
    expect(rope.startIndex == 0 && rope.endIndex == count, "\(label): indices \(rope.startIndex)..<\(rope.endIndex)")
    let regionCount = rope.regionCount
    expect(
        (regionCount == 0) == (count == 0) && regionCount <= count,
        "\(label): implausible regionCount \(regionCount) for \(count) bytes"
    )
    expect(
        regionCount == model.regions.count,
        "\(label): regionCount \(regionCount), model \(model.regions.count)"
    )
    guard count > 0 else { return }

    if full || (count <= smallBytes && regionCount <= smallRegions) {
        var index = 0
        var expectedOffset = 0
        let complete = model.bytes.withUnsafeBytes { expected in
            rope.apply { offset, bytes in
                expect(index < model.regions.count, "\(label): apply visits more than \(model.regions.count) regions")
                expect(
                    offset == expectedOffset,
                    "\(label): region \(index) at offset \(offset), expected \(expectedOffset)"
                )
                expect(
                    bytes.count == model.regions[index],
                    "\(label): region \(index) has \(bytes.count) bytes, model \(model.regions[index])"
                )
                expect(
                    memcmp(bytes.baseAddress!, expected.baseAddress! + offset, bytes.count) == 0,
                    "\(label): bytes of region \(index) (offset \(offset), \(bytes.count) bytes) differ: "
                        + "rope \(hex(bytes)), model \(hex(expected[offset..<offset + bytes.count]))"
                )
                expectedOffset += bytes.count
                index += 1
                return true
            }
        }
        expect(complete, "\(label): apply stopped although body always returned true")
        expect(index == model.regions.count, "\(label): apply visited \(index) of \(model.regions.count) regions")
        return
    }

    // Big rope: sample bytes, the two end regions and a window.
    var x = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: regionCount)
    for _ in 0..<16 {
        x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let p = Int(truncatingIfNeeded: (x >> 33) % UInt64(count))
        expect(rope[p] == model.bytes[p], "\(label): byte \(p) is \(rope[p]), model \(model.bytes[p])")
    }
    expect(rope[count - 1] == model.bytes[count - 1], "\(label): last byte differs")
    let first = rope.regions[0]
    expect(
        first.offset == 0 && first.count == model.regions[0],
        "\(label): first region \(first.range), model 0..<\(model.regions[0])"
    )
    let last = rope.regions[regionCount - 1]
    let lastLength = model.regions[regionCount - 1]
    expect(
        last.offset == count - lastLength && last.count == lastLength,
        "\(label): last region \(last.range), model \(count - lastLength)..<\(count)"
    )
    let windowStart = Int(truncatingIfNeeded: (x >> 17) % UInt64(count))
    let window = windowStart..<Swift.min(count, windowStart + 64)
    var copied = [UInt8](repeating: 0, count: window.count)
    let n = copied.withUnsafeMutableBytes { rope.copyBytes(to: $0, from: window) }
    expect(n == window.count, "\(label): copyBytes(\(window)) copied \(n)")
    expect(copied[...] == model.bytes[window], "\(label): bytes at \(window) differ")
}

// MARK: - The program

private struct Fuzz {
    var input: Input
    var ropes = [ByteRope](repeating: ByteRope(), count: slotCount)
    var models = [Model](repeating: Model(), count: slotCount)
    /// Regions kept after their rope may be gone, with the bytes they must still hold.
    var heldRegions: [(region: ByteRope.Region, bytes: [UInt8])] = []
    /// Exported iovecs whose owners were retained by `exportIOVectors`, with their bytes.
    var heldVectors: [(base: UInt, bytes: [UInt8], owners: [Unmanaged<AnyObject>])] = []

    init(_ input: Input) {
        self.input = input
    }

    mutating func slot() -> Int { Int(self.input.byte()) % slotCount }

    /// An offset in `0...model.count`, biased towards region boundaries and the ends.
    mutating func offset(in model: Model) -> Int {
        let count = model.count
        switch self.input.byte() % 8 {
        case 0, 1, 2:
            return self.input.below(count + 1)
        case 3:
            return 0
        case 4:
            return count
        case 5, 6:
            let boundary = model.regionStart(self.input.below(model.regions.count + 1))
            let delta = Int(self.input.byte() % 5) - 2
            return Swift.min(Swift.max(boundary + delta, 0), count)
        default:
            return self.input.below(Swift.min(count, 15) + 1)
        }
    }

    /// An offset in `0..<model.count`; `model` is not empty.
    mutating func position(in model: Model) -> Int {
        Swift.min(self.offset(in: model), model.count - 1)
    }

    mutating func range(in model: Model) -> Range<Int> {
        let a = self.offset(in: model)
        let b = self.offset(in: model)
        return Swift.min(a, b)..<Swift.max(a, b)
    }

    mutating func store(_ rope: ByteRope, _ model: Model, in slot: Int, _ label: String) {
        verify(rope, model, label)
        self.ropes[slot] = rope
        self.models[slot] = model
    }

    // MARK: Operations

    mutating func run() {
        while !self.input.isExhausted && opNumber < maxOps {
            opNumber += 1
            let op = self.input.byte()
            switch op % 34 {
            case 0, 1: self.createCopying()
            case 2, 3: self.createNoCopy()
            case 4, 5: self.concat()
            case 6, 7: self.appendRope()
            case 8: self.appendContents()
            case 9, 10: self.subrange()
            case 11: self.grow()
            case 12: self.regionContaining()
            case 13: self.iterateRegions()
            case 14: self.applyEarlyStop()
            case 15, 16: self.firstRange()
            case 17: self.firstIndex()
            case 18: self.copyBytes()
            case 19: self.withUnsafeBytes()
            case 20: self.contiguous()
            case 21, 22: self.equalityAndHashing()
            case 23: self.bytesAndIterators()
            case 24: self.slicing()
            case 25: self.shuffleSlots()
            case 26: self.holdRegion()
            case 27: self.exportVectors()
            case 28: self.fromDispatchData()
            case 29: self.descriptions()
            case 30: self.contiguousStorage()
            case 31, 32: self.buildManyRegions()
            default: self.verifyHeld()
            }
        }
        currentOp = { "final check" }
        for i in 0..<slotCount {
            let rope = self.ropes[i]
            trace("final s\(i): \(rope.count) bytes, \(rope.regionCount) regions, tree height \(rope._treeHeight)")
            verify(self.ropes[i], self.models[i], "slot \(i)", full: true)
        }
        self.verifyHeld()
    }

    mutating func createCopying() {
        let dst = self.slot()
        let variant = self.input.byte() % 8
        var bytes = self.input.content()
        var rope: ByteRope
        switch variant {
        case 0:
            // From a temporary buffer that is scribbled over and freed afterwards: the rope
            // must have copied it.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            buffer.copyBytes(from: bytes)
            rope = ByteRope(copying: UnsafeRawBufferPointer(buffer))
            buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
            buffer.deallocate()
        case 1:
            rope = ByteRope(copying: bytes)
        case 2:
            rope = ByteRope(copying: bytes.lazy.map { $0 })  // no contiguous storage
        case 3:
            rope = ByteRope(copying: bytes[...])
        case 4:
            if bytes.isEmpty {
                rope = ByteRope(copying: UnsafeRawBufferPointer(start: nil, count: 0))
            } else {
                rope = ByteRope(copying: ContiguousArray(bytes))
            }
        case 5:
            // A copy of another slot: one region whatever the source's shape.
            let src = self.slot()
            rope = ByteRope(copying: self.ropes[src])
            bytes = self.models[src].bytes
        case 6:
            bytes = Array(bytes.prefix(4))
            switch bytes.count {
            case 0: rope = [] as ByteRope
            case 1: rope = [bytes[0]]
            case 2: rope = [bytes[0], bytes[1]]
            case 3: rope = [bytes[0], bytes[1], bytes[2]]
            default: rope = [bytes[0], bytes[1], bytes[2], bytes[3]]
            }
        default:
            rope = bytes.isEmpty ? ByteRope.empty : ByteRope()
            bytes = []
        }
        setOp { "create copying v\(variant) \(hex(bytes)) -> s\(dst)" }
        self.store(rope, Model(oneRegion: bytes), in: dst, "created rope")
    }

    mutating func createNoCopy() {
        let dst = self.slot()
        let variant = self.input.byte() % 8
        let nilBase = self.input.byte() & 1 == 0
        let bytes = self.input.content()
        let count = bytes.count
        setOp { "create no-copy v\(variant) \(hex(bytes))\(count == 0 && nilBase ? " nil base" : "") -> s\(dst)" }
        let rope: ByteRope
        var model = Model(oneRegion: bytes)
        switch variant {
        case 0, 1, 2:
            // .custom on a serial queue (0) or the default global queue (1, 2).
            let memory = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(count, 1), alignment: 1)
            memory.copyMemory(from: bytes, byteCount: count)
            let bits = UInt(bitPattern: memory)
            customCreated.add(1, ordering: .sequentiallyConsistent)
            deallocGroup.enter()
            let start: UnsafeRawPointer? = count == 0 && nilBase ? nil : UnsafeRawPointer(memory)
            rope = ByteRope(
                bytesNoCopy: UnsafeRawBufferPointer(start: start, count: count),
                deallocator: .custom(queue: variant == 0 ? deallocQueue : nil) {
                    let memory = UnsafeMutableRawPointer(bitPattern: bits)!
                    memory.initializeMemory(as: UInt8.self, repeating: 0xDD, count: Swift.max(count, 1))
                    memory.deallocate()
                    customRuns.add(1, ordering: .sequentiallyConsistent)
                    deallocGroup.leave()
                }
            )
        case 3:
            // .free: ASan and LeakSanitizer see a double free or a leak.
            if count == 0 && nilBase {
                rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: nil, count: 0), deallocator: .free)
            } else {
                let memory = malloc(Swift.max(count, 1))!
                memory.copyMemory(from: bytes, byteCount: count)
                rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: memory, count: count), deallocator: .free)
            }
        case 4:
            // .none over immutable static memory.
            let offset = Int(bytes.first ?? 0) * 7 % 2048
            let length = Swift.min(count, staticRegion.count - offset)
            let region = UnsafeRawBufferPointer(rebasing: staticRegion[offset..<offset + length])
            model = Model(oneRegion: Array(region))
            rope = ByteRope(
                bytesNoCopy: length == 0 && nilBase ? UnsafeRawBufferPointer(start: nil, count: 0) : region,
                deallocator: .none
            )
        case 5:
            // .unmap over a fresh mapping of exactly `count` bytes.
            if count == 0 {
                rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: nil, count: 0), deallocator: .unmap)
            } else {
                let memory = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                guard let memory, memory != MAP_FAILED else { fail("mmap failed") }
                memory.copyMemory(from: bytes, byteCount: count)
                rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(start: memory, count: count), deallocator: .unmap)
            }
        default:
            // A package owner whose deinit counts (as RingIO's receive buffers).
            let owner = CountingOwner(copying: bytes)
            let start = count == 0 && nilBase ? nil : UnsafeRawPointer(owner.memory.baseAddress!)
            rope = ByteRope(unsafeOwner: owner, bytes: UnsafeRawBufferPointer(start: start, count: count))
        }
        self.store(rope, model, in: dst, "no-copy rope")
        if model.count > 0 && variant != 4 {
            // Not copied: the region is the caller's memory.
            rope.withUnsafeBytes { buffer in
                expect(
                    memcmp(buffer.baseAddress!, bytes, count) == 0,
                    "no-copy rope bytes differ"
                )
            }
        }
    }

    mutating func concat() {
        let (dst, a, b) = (self.slot(), self.slot(), self.slot())
        setOp { "s\(dst) = s\(a) + s\(b)" }
        let (left, right) = (self.ropes[a], self.ropes[b])
        let (leftModel, rightModel) = (self.models[a], self.models[b])
        guard leftModel.fits(adding: rightModel) else { return }
        let result = left + right
        self.store(result, leftModel + rightModel, in: dst, "concatenation")
        if leftModel.count > 0 && rightModel.count > 0 {
            // No bytes copied: the ends of the result are the operands' memory.
            expect(byteAddress(result, 0) == byteAddress(left, 0), "a + b: first byte not a's memory")
            expect(
                byteAddress(result, result.count - 1) == byteAddress(right, right.count - 1),
                "a + b: last byte not b's memory"
            )
        }
        // The operands are values: unchanged.
        verify(left, leftModel, "left operand after +")
        verify(right, rightModel, "right operand after +")
    }

    mutating func appendRope() {
        let (dst, src) = (self.slot(), self.slot())
        let variant = self.input.byte() % 4
        setOp { "s\(dst).append(s\(src)) v\(variant)" }
        let other = self.ropes[src]
        let otherModel = self.models[src]
        let model = self.models[dst] + otherModel
        guard self.models[dst].fits(adding: self.models[src]) else { return }
        switch variant {
        case 0:
            self.ropes[dst].append(other)  // in place, usually uniquely referenced
        case 1:
            self.ropes[dst] += other
        case 2:
            // A shared copy stays as it was (copy-on-write of the path).
            let before = self.ropes[dst]
            let beforeModel = self.models[dst]
            self.ropes[dst].append(other)
            verify(before, beforeModel, "rope shared before append")
        default:
            // Moved out first so that the tree is certainly uniquely referenced.
            var rope = self.ropes[dst]
            self.ropes[dst] = ByteRope()
            rope.append(other)
            self.ropes[dst] = rope
        }
        self.models[dst] = model
        verify(self.ropes[dst], model, "append result")
        verify(other, otherModel, "appended rope afterwards")
    }

    mutating func appendContents() {
        let dst = self.slot()
        let variant = self.input.byte() % 5
        var bytes = self.input.content()
        setOp { "s\(dst).append(contentsOf:) v\(variant) \(hex(bytes))" }
        var rope = self.ropes[dst]
        switch variant {
        case 0: rope.append(contentsOf: bytes)
        case 1: rope.append(contentsOf: bytes.lazy.map { $0 })
        case 2: rope.append(contentsOf: bytes[...])
        case 3:
            let src = self.slot()
            bytes = self.models[src].bytes
            rope.append(contentsOf: self.ropes[src])  // copied into one new region
        default:
            bytes = []
            rope.append(contentsOf: EmptyCollection<UInt8>())
        }
        let added = Model(oneRegion: bytes)
        guard self.models[dst].fits(adding: added) else { return }
        self.store(rope, self.models[dst] + added, in: dst, "append(contentsOf:) result")
    }

    mutating func subrange() {
        let (dst, src) = (self.slot(), self.slot())
        let variant = self.input.byte() % 6
        let source = self.ropes[src]
        let sourceModel = self.models[src]
        var range = self.range(in: sourceModel)
        setOp { "s\(dst) = s\(src).subrange(\(range)) v\(variant)" }
        let result: ByteRope
        switch variant {
        case 0:
            result = source.subrange(range)
        case 1:
            if range.isEmpty {
                result = source.subrange(range)
            } else {
                result = source.subrange(range.lowerBound...(range.upperBound - 1))
            }
        case 2:
            range = range.lowerBound..<sourceModel.count
            result = source.subrange(range.lowerBound...)
        case 3:
            range = 0..<range.upperBound
            result = source.subrange(..<range.upperBound)
        case 4:
            result = ByteRope(source[range])
        default:
            range = 0..<sourceModel.count
            result = source.subrange(0..<sourceModel.count)
        }
        let model = sourceModel.subrange(range)
        self.store(result, model, in: dst, "subrange(\(range)) of \(sourceModel.count) bytes")
        if !range.isEmpty {
            // No bytes copied: the ends of the result are the source's memory.
            expect(
                byteAddress(result, 0) == byteAddress(source, range.lowerBound),
                "subrange(\(range)): first byte is not the source's memory"
            )
            expect(
                byteAddress(result, range.count - 1) == byteAddress(source, range.upperBound - 1),
                "subrange(\(range)): last byte is not the source's memory"
            )
        }
        verify(source, sourceModel, "source of subrange")
    }

    mutating func grow() {
        let dst = self.slot()
        let times = 1 + Int(self.input.byte() % 6)
        setOp { "s\(dst) self-concat x\(times)" }
        for i in 0..<times {
            let model = self.models[dst]
            guard model.count > 0, model.fits(adding: model) else { return }
            if i & 1 == 0 {
                let copy = self.ropes[dst]
                self.ropes[dst].append(copy)
            } else {
                self.ropes[dst] = self.ropes[dst] + self.ropes[dst]
            }
            self.models[dst] = model + model
            verify(self.ropes[dst], self.models[dst], "self-concatenation step \(i)")
        }
    }

    /// Many tiny regions, one at a time: reaches trees of height 3 and more, and the split
    /// paths of appending and of prepending (`one/two + tree`).
    mutating func buildManyRegions() {
        let dst = self.slot()
        let variant = self.input.byte() % 4
        // Log-uniform: mostly a few dozen regions, now and then thousands (height 3).
        let scale = self.input.byte()
        let wanted = (1 << Int(scale % 13)) + Int(self.input.byte()) * Int(scale >> 7)
        let seed = self.input.take(4, fromInput: 4)
        setOp { "s\(dst) build \(wanted) tiny regions v\(variant)" }
        let start = self.models[dst]
        var rope = self.ropes[dst]
        var other = ByteRope()
        // The pieces added at the end of `rope`, at its start (in prepending order), and at
        // the end of `other`; the model is assembled once at the end (linear time).
        var appended: [[UInt8]] = []
        var prepended: [[UInt8]] = []
        var others: [[UInt8]] = []
        var bytes = start.count
        var regions = start.regions.count
        var x = UInt32(seed[0]) | UInt32(seed[1]) << 8 | UInt32(seed[2]) << 16 | UInt32(seed[3]) << 24
        for i in 0..<wanted {
            x = x &* 1_103_515_245 &+ 12345
            let length = 1 + Int(x >> 28) % 3
            guard bytes + 2 * length <= maxBytes, regions + 2 <= maxRegions else { break }
            var piece = [UInt8](repeating: 0x61 &+ UInt8(truncatingIfNeeded: x >> 20) % 3, count: length)
            piece[0] = UInt8(truncatingIfNeeded: i)
            let pieceRope = ByteRope(copying: piece)
            bytes += length
            regions += 1
            switch variant {
            case 0:
                rope.append(pieceRope)
                appended.append(piece)
            case 1:
                rope = pieceRope + rope
                prepended.append(piece)
            case 2:
                // Two trees grown apart, then joined (concatenation of unequal heights).
                if x & 0x100 == 0 {
                    rope.append(pieceRope)
                    appended.append(piece)
                } else {
                    other.append(pieceRope)
                    others.append(piece)
                }
            default:
                // Pairs prepended: `two + tree`.
                rope = (pieceRope + pieceRope) + rope
                prepended.append(piece)
                prepended.append(piece)
                bytes += length
                regions += 1
            }
        }
        var model = Model()
        for piece in prepended.reversed() {
            model.bytes += piece
            model.regions.append(piece.count)
        }
        model.bytes += start.bytes
        model.regions += start.regions
        for piece in appended {
            model.bytes += piece
            model.regions.append(piece.count)
        }
        if variant == 2 {
            var otherModel = Model()
            for piece in others {
                otherModel.bytes += piece
                otherModel.regions.append(piece.count)
            }
            if x & 1 == 0 {
                rope = other + rope
                model = otherModel + model
            } else {
                rope.append(other)
                model = model + otherModel
            }
        }
        self.store(rope, model, in: dst, "after building \(model.regions.count - start.regions.count) regions")
        verify(self.ropes[dst], model, "many regions (full)", full: model.regions.count <= 4096)
    }

    mutating func regionContaining() {
        let src = self.slot()
        let model = self.models[src]
        guard model.count > 0 else { return }
        let offset = self.position(in: model)
        setOp { "s\(src).region(containing: \(offset))" }
        let (region, start) = self.ropes[src].region(containing: offset)
        let (index, expectedStart) = model.region(containing: offset)
        expect(start == expectedStart, "region start \(start), model \(expectedStart) (region \(index))")
        verify(
            region,
            model.subrange(start..<start + model.regions[index]),
            "region(containing: \(offset))",
            full: true
        )
        expect(
            byteAddress(region, offset - start) == byteAddress(self.ropes[src], offset),
            "region(containing:) is not the rope's memory"
        )
    }

    mutating func iterateRegions() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        setOp { "s\(src).regions" }
        let regions = rope.regions
        expect(regions.count == model.regions.count, "regions.count \(regions.count), model \(model.regions.count)")
        expect(regions.startIndex == 0 && regions.endIndex == model.regions.count, "regions indices")
        var offset = 0
        var index = 0
        for region in regions {
            expect(index < model.regions.count, "regions yields more than \(model.regions.count)")
            expect(
                region.offset == offset && region.count == model.regions[index]
                    && region.range == offset..<offset + model.regions[index],
                "region \(index): \(region.range), model \(offset)..<\(offset + model.regions[index])"
            )
            region.withUnsafeBytes { bytes in
                expect(bytes.count == region.count, "region \(index) buffer size")
                expect(bytes.elementsEqual(model.bytes[region.range]), "region \(index) bytes")
            }
            if index < 4 {
                verify(region.rope, model.subrange(region.range), "region \(index) as a rope", full: true)
            }
            offset += region.count
            index += 1
        }
        expect(index == model.regions.count && offset == model.count, "regions stopped at \(index), offset \(offset)")
        // Random access.
        for _ in 0..<4 where !model.regions.isEmpty {
            let i = self.input.below(model.regions.count)
            let region = regions[i]
            let start = model.regionStart(i)
            expect(
                region.offset == start && region.count == model.regions[i],
                "regions[\(i)] \(region.range), model \(start)..<\(start + model.regions[i])"
            )
            expect(region.rope[0] == model.bytes[start], "regions[\(i)] first byte")
        }
        if let last = regions.last {
            expect(last.range.upperBound == model.count, "regions.last ends at \(last.range.upperBound)")
        }
    }

    mutating func applyEarlyStop() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        let stopAt = self.input.below(model.regions.count + 2)
        setOp { "s\(src).apply stopping at region \(stopAt)" }
        var calls = 0
        var expectedOffset = 0
        let complete = rope.apply { offset, bytes in
            expect(calls < model.regions.count, "apply called more than \(model.regions.count) times")
            expect(offset == expectedOffset, "apply offset \(offset), expected \(expectedOffset)")
            expect(bytes.count == model.regions[calls], "apply region \(calls) size \(bytes.count)")
            expect(
                bytes.first == model.bytes[offset] && bytes.last == model.bytes[offset + bytes.count - 1],
                "apply bytes"
            )
            expectedOffset += bytes.count
            calls += 1
            return calls - 1 != stopAt
        }
        if stopAt < model.regions.count {
            expect(!complete && calls == stopAt + 1, "apply: stop at \(stopAt) gave \(complete), \(calls) calls")
        } else {
            expect(
                complete && calls == model.regions.count,
                "apply: \(complete), \(calls) of \(model.regions.count) calls"
            )
        }
    }

    mutating func firstRange() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        let source = self.input.byte()
        var needle: [UInt8]
        switch source % 4 {
        case 0, 1:
            // Taken from the rope (around a region boundary often), so it matches.
            guard model.count > 0 else { return }
            let start = self.offset(in: model)
            let length = 1 + Int(self.input.byte() % 24)
            needle = Array(model.bytes[Swift.min(start, model.count - 1)..<Swift.min(start + length, model.count)])
            if source & 4 != 0, let last = needle.indices.last {
                needle[last] &+= 1  // a near miss
            }
        case 2:
            needle = self.input.take(1 + Int(self.input.byte() % 8), fromInput: 8, alphabet: source & 8 == 0 ? 0 : 2)
        default:
            needle = []
        }
        let container = (source >> 4) % 7
        setOp { "s\(src).firstRange(of: \(hex(needle))) container \(container)" }
        let found: Range<Int>?
        switch container {
        case 0: found = rope.firstRange(of: needle)
        case 1: found = rope.firstRange(of: ContiguousArray(needle))
        case 2: found = rope.firstRange(of: ([0x00] + needle + [0x00])[1..<needle.count + 1])  // ArraySlice, not at 0
        case 3: found = rope.firstRange(of: needle.lazy.map { $0 })  // not contiguous
        case 4:
            // A rope pattern of several regions.
            var pattern = ByteRope()
            for chunk in stride(from: 0, to: needle.count, by: 3) {
                pattern.append(ByteRope(copying: needle[chunk..<Swift.min(chunk + 3, needle.count)]))
            }
            found = rope.firstRange(of: pattern)
        case 5: found = needle.withUnsafeBytes { rope.firstRange(of: $0) }
        default: found = rope.firstRange(of: ByteRope(copying: needle))
        }
        let expected = model.firstRange(of: needle)
        expect(
            found == expected,
            "firstRange(of: \(hex(needle))) = \(String(describing: found)), model \(String(describing: expected))"
        )
    }

    mutating func firstIndex() {
        let src = self.slot()
        let model = self.models[src]
        let byte: UInt8
        if self.input.byte() & 1 == 0, model.count > 0 {
            byte = model.bytes[self.position(in: model)]
        } else {
            byte = self.input.byte()
        }
        setOp { "s\(src).firstIndex(of: \(byte))" }
        let found = self.ropes[src].firstIndex(of: byte)
        let expected = model.bytes.firstIndex(of: byte)
        expect(
            found == expected,
            "firstIndex(of: \(byte)) = \(String(describing: found)), model \(String(describing: expected))"
        )
    }

    mutating func copyBytes() {
        let src = self.slot()
        let model = self.models[src]
        let range = self.range(in: model)
        let variant = self.input.byte() % 5
        let capacity: Int
        switch variant {
        case 0: capacity = range.count
        case 1: capacity = self.input.below(range.count + 1)
        case 2: capacity = range.count + Int(self.input.byte() % 16)
        default: capacity = 0
        }
        setOp { "s\(src).copyBytes(to: [\(capacity)], from: \(range)) v\(variant)" }
        let canary: UInt8 = 0xA5
        var destination = [UInt8](repeating: canary, count: capacity)
        let copied: Int
        if variant == 4 {
            copied = self.ropes[src].copyBytes(to: UnsafeMutableRawBufferPointer(start: nil, count: 0), from: range)
        } else {
            copied = destination.withUnsafeMutableBytes { self.ropes[src].copyBytes(to: $0, from: range) }
        }
        let expectedCount = Swift.min(capacity, range.count)
        expect(copied == expectedCount, "copyBytes returned \(copied), expected \(expectedCount)")
        expect(
            destination[..<copied] == model.bytes[range.lowerBound..<range.lowerBound + copied],
            "copyBytes copied the wrong bytes"
        )
        expect(destination[copied...].allSatisfy { $0 == canary }, "copyBytes wrote past what it copied")
    }

    mutating func withUnsafeBytes() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        setOp { "s\(src).withUnsafeBytes" }
        let base = rope.withUnsafeBytes { buffer -> UInt in
            expect(buffer.baseAddress != nil, "withUnsafeBytes: nil base address (count \(buffer.count))")
            expect(buffer.count == model.count, "withUnsafeBytes: \(buffer.count) bytes, model \(model.count)")
            expect(buffer.elementsEqual(model.bytes), "withUnsafeBytes: bytes differ")
            return address(buffer.baseAddress)
        }
        if model.regions.count == 1 {
            expect(base == byteAddress(rope, 0), "withUnsafeBytes copied a one-region rope")
        }
    }

    mutating func contiguous() {
        let (dst, src) = (self.slot(), self.slot())
        setOp { "s\(dst) = s\(src).contiguous()" }
        let source = self.ropes[src]
        let model = self.models[src]
        let flat = source.contiguous()
        let flatModel = model.regions.count <= 1 ? model : Model(oneRegion: model.bytes)
        self.store(flat, flatModel, in: dst, "contiguous()")
        if model.regions.count == 1 {
            expect(byteAddress(flat, 0) == byteAddress(source, 0), "contiguous() copied a one-region rope")
        }
        verify(source, model, "source of contiguous()")
    }

    mutating func equalityAndHashing() {
        let (a, b) = (self.slot(), self.slot())
        let split = self.input.byte()
        setOp { "s\(a) == s\(b), split \(split)" }
        let (left, right) = (self.ropes[a], self.ropes[b])
        let (leftModel, rightModel) = (self.models[a], self.models[b])
        let equal = left == right
        expect(equal == (leftModel.bytes == rightModel.bytes), "s\(a) == s\(b) is \(equal), models say \(!equal)")
        expect((left != right) == !equal, "!= disagrees with ==")
        if equal {
            expect(left.hashValue == right.hashValue, "equal ropes s\(a), s\(b) hash differently")
        }
        expect(left == left, "a rope differs from itself")

        // The same bytes in other region layouts: one region, and re-split at a point.
        let flat = ByteRope(copying: leftModel.bytes)
        expect(flat == left && left == flat, "s\(a) differs from a one-region copy of its bytes")
        expect(flat.hashValue == left.hashValue, "s\(a) hashes differently from a one-region copy")
        let point = leftModel.count == 0 ? 0 : Int(split) % (leftModel.count + 1)
        let resplit = left.subrange(0..<point) + ByteRope(copying: leftModel.bytes[point...])
        expect(resplit == left, "s\(a) differs from itself re-split at \(point)")
        var hasher = Hasher()
        hasher.combine(resplit)
        expect(hasher.finalize() == left.hashValue, "s\(a) hashes differently re-split at \(point)")

        // One byte changed: not equal.
        if leftModel.count > 0 {
            var changed = leftModel.bytes
            let index = Int(split) % changed.count
            changed[index] &+= 1
            expect(ByteRope(copying: changed) != left, "s\(a) equals a copy with byte \(index) changed")
        }
        var set = Set<ByteRope>()
        set.insert(left)
        expect(set.contains(flat) && set.contains(resplit), "Set lookup by content failed")
    }

    mutating func bytesAndIterators() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        let prefix = self.input.below(Swift.min(model.count, 4096) + 1)
        setOp { "s\(src) bytes, iterator, Array, partial copy of \(prefix)" }
        for _ in 0..<8 where model.count > 0 {
            let p = self.position(in: model)
            expect(rope[p] == model.bytes[p], "rope[\(p)] = \(rope[p]), model \(model.bytes[p])")
        }
        // The byte iterator (bounded).
        var iterator = rope.makeIterator()
        for i in 0..<Swift.min(model.count, 2048) {
            let byte = iterator.next()
            expect(byte == model.bytes[i], "iterator byte \(i) is \(String(describing: byte)), model \(model.bytes[i])")
        }
        if model.count <= 2048 {
            expect(iterator.next() == nil, "iterator goes past the end")
            expect(iterator.next() == nil, "iterator restarts after the end")
        }
        // Array(rope) goes through _copyContents.
        expect(Array(rope) == model.bytes, "Array(rope) differs")
        // A partial _copyContents hands back an iterator positioned after what it copied.
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Swift.max(prefix, 1))
        defer { buffer.deallocate() }
        var (rest, copied) = rope._copyContents(initializing: UnsafeMutableBufferPointer(rebasing: buffer[..<prefix]))
        let expectedCopied = prefix == 0 ? 0 : Swift.min(prefix, model.count)
        expect(copied == expectedCopied, "_copyContents copied \(copied) into \(prefix)")
        expect(buffer[..<copied].elementsEqual(model.bytes[..<copied]), "_copyContents bytes")
        if prefix > 0 {
            for i in copied..<Swift.min(copied + 64, model.count) {
                let byte = rest.next()
                expect(byte == model.bytes[i], "iterator after _copyContents: byte \(i) is \(String(describing: byte))")
            }
            if copied + 64 >= model.count { expect(rest.next() == nil, "_copyContents iterator past the end") }
        }
    }

    mutating func slicing() {
        let (dst, src) = (self.slot(), self.slot())
        let rope = self.ropes[src]
        let model = self.models[src]
        let range = self.range(in: model)
        setOp { "s\(dst) = ByteRope(s\(src)[\(range)])" }
        let slice = rope[range]
        expect(slice.startIndex == range.lowerBound && slice.endIndex == range.upperBound, "slice indices")
        expect(slice.count == range.count, "slice count")
        if !range.isEmpty {
            expect(slice.first == model.bytes[range.lowerBound], "slice.first")
            expect(slice[range.upperBound - 1] == model.bytes[range.upperBound - 1], "slice last byte")
        }
        if range.count <= 512 {
            expect(slice.elementsEqual(model.bytes[range]), "slice bytes")
        }
        self.store(ByteRope(slice), model.subrange(range), in: dst, "ByteRope(slice)")
    }

    mutating func shuffleSlots() {
        let (a, b) = (self.slot(), self.slot())
        let variant = self.input.byte() % 3
        setOp { "slots: v\(variant) s\(a) s\(b)" }
        switch variant {
        case 0:
            self.ropes[a] = ByteRope()
            self.models[a] = Model()
        case 1:
            self.ropes[a] = self.ropes[b]  // share
            self.models[a] = self.models[b]
        default:
            self.ropes.swapAt(a, b)
            self.models.swapAt(a, b)
        }
    }

    mutating func holdRegion() {
        let src = self.slot()
        let model = self.models[src]
        guard model.count > 0 else { return }
        let offset = self.position(in: model)
        setOp { "hold the region of s\(src) at \(offset)" }
        let region: ByteRope.Region
        if self.input.byte() & 1 == 0 {
            region = self.ropes[src].regions[model.region(containing: offset).index]
        } else {
            let (rope, start) = self.ropes[src].region(containing: offset)
            region = rope.regions[0]
            expect(region.offset == 0 && rope.regionCount == 1, "region(containing:) rope")
            _ = start
        }
        let (index, start) = model.region(containing: offset)
        let bytes = Array(model.bytes[start..<start + model.regions[index]])
        if self.heldRegions.count >= maxHeld { self.heldRegions.removeFirst() }
        self.heldRegions.append((region, bytes))
    }

    mutating func exportVectors() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        let offset = self.offset(in: model)
        let capacity = Int(self.input.byte() % 6)
        let retain = self.input.byte() & 1 == 0
        setOp { "s\(src).exportIOVectors(\(capacity), from: \(offset), retaining: \(retain))" }
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: capacity)
        defer { vectors.deallocate() }
        let owners = UnsafeMutableBufferPointer<Unmanaged<AnyObject>>.allocate(capacity: capacity)
        defer { owners.deallocate() }
        let (filled, byteCount) = rope.exportIOVectors(
            into: vectors,
            retainingOwnersInto: retain ? owners : nil,
            from: offset
        )
        expect(filled <= capacity, "exportIOVectors filled \(filled) of \(capacity)")
        // The regions from `offset` on, the first trimmed.
        let expected = model.subrange(offset..<model.count)
        expect(
            filled == Swift.min(capacity, expected.regions.count),
            "exportIOVectors filled \(filled), expected \(Swift.min(capacity, expected.regions.count))"
        )
        var total = 0
        for i in 0..<filled {
            let vector = vectors[i]
            expect(
                vector.iov_len == expected.regions[i],
                "iovec \(i) length \(vector.iov_len), model \(expected.regions[i])"
            )
            let bytes = UnsafeRawBufferPointer(start: vector.iov_base, count: vector.iov_len)
            expect(bytes.elementsEqual(expected.bytes[total..<total + vector.iov_len]), "iovec \(i) bytes")
            total += vector.iov_len
        }
        expect(byteCount == total, "exportIOVectors byte count \(byteCount), vectors hold \(total)")
        guard retain, filled > 0 else { return }
        // Keep the first vector's owner past the rope; release the others now.
        for i in 1..<filled { owners[i].release() }
        self.heldVectors.append(
            (
                address(vectors[0].iov_base), Array(expected.bytes[..<vectors[0].iov_len]),
                [owners[0]]
            )
        )
        if self.heldVectors.count > maxHeld {
            for owner in self.heldVectors.removeFirst().owners { owner.release() }
        }
    }

    mutating func fromDispatchData() {
        let dst = self.slot()
        let pieces = Int(self.input.byte() % 5)
        var data = DispatchData.empty
        var bytes: [UInt8] = []
        for _ in 0..<pieces {
            let piece = self.input.take(Int(self.input.byte() % 64), fromInput: 8, alphabet: 2)
            piece.withUnsafeBytes { data.append($0) }
            bytes += piece
        }
        setOp { "s\(dst) = ByteRope(DispatchData of \(pieces) pieces, \(bytes.count) bytes)" }
        var model = Model()
        model.bytes = bytes
        data.enumerateBytes { bytes, _, _ in
            if bytes.count > 0 { model.regions.append(bytes.count) }
        }
        self.store(ByteRope(data), model, in: dst, "ByteRope(DispatchData)")
    }

    mutating func descriptions() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        setOp { "s\(src).description" }
        let description = rope.description
        let unit = model.count == 1 ? "byte" : "bytes"
        expect(
            description.hasPrefix("ByteRope(\(model.count) \(unit), \(model.regions.count) region"),
            "description \(description)"
        )
        let lines = rope.debugDescription.split(separator: "\n")
        expect(
            lines.count == 1 + Swift.min(model.regions.count, 64) + (model.regions.count > 64 ? 1 : 0),
            "debugDescription has \(lines.count) lines for \(model.regions.count) regions"
        )
    }

    mutating func contiguousStorage() {
        let src = self.slot()
        let rope = self.ropes[src]
        let model = self.models[src]
        setOp { "s\(src).withContiguousStorageIfAvailable" }
        let result = rope.withContiguousStorageIfAvailable { buffer -> Bool in
            expect(buffer.baseAddress != nil, "withContiguousStorageIfAvailable: nil base")
            return buffer.elementsEqual(model.bytes)
        }
        if model.regions.count <= 1 {
            expect(
                result == true,
                "withContiguousStorageIfAvailable on \(model.regions.count) region(s): \(String(describing: result))"
            )
        } else {
            expect(result == nil, "withContiguousStorageIfAvailable on \(model.regions.count) regions was not nil")
        }
    }

    mutating func verifyHeld() {
        let (regionCount, vectorCount) = (self.heldRegions.count, self.heldVectors.count)
        setOp { "verify \(regionCount) held regions, \(vectorCount) held vectors" }
        for (i, held) in self.heldRegions.enumerated() {
            expect(held.region.count == held.bytes.count, "held region \(i) count")
            held.region.withUnsafeBytes { bytes in
                expect(bytes.elementsEqual(held.bytes), "held region \(i) bytes changed")
            }
            expect(Array(held.region.rope) == held.bytes, "held region \(i) as a rope")
        }
        for (i, held) in self.heldVectors.enumerated() {
            let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: held.base), count: held.bytes.count)
            expect(bytes.elementsEqual(held.bytes), "retained iovec \(i) bytes changed")
        }
    }

    /// Releases the owners retained by exported vectors.
    mutating func releaseVectors() {
        for held in self.heldVectors {
            for owner in held.owners { owner.release() }
        }
        self.heldVectors = []
    }
}

// MARK: - Entry points

/// Warms up what caches allocations across inputs, so that a clean input frees as much as it
/// allocates and libFuzzer's per-input leak detection stays on (it gives up after 1000
/// inputs with more mallocs than frees, and each one costs a full LeakSanitizer scan).
///
/// The main source: libdispatch's per-thread continuation caches. A `.custom` deallocator is
/// `queue.async` from the fuzzing thread (a malloc there) and its continuation is freed into
/// the worker thread's cache (no free) until those caches are full.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>>>
) -> CInt {
    _ = staticRegion.count
    _ = ByteRope.empty.withUnsafeBytes { $0.count }
    for round in 0..<4000 {
        customCreated.add(1, ordering: .sequentiallyConsistent)
        deallocGroup.enter()
        let rope = [UInt8(truncatingIfNeeded: round)].withUnsafeBytes { bytes in
            let memory = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
            memory.copyMemory(from: bytes.baseAddress!, byteCount: 1)
            let bits = UInt(bitPattern: memory)
            return ByteRope(
                bytesNoCopy: UnsafeRawBufferPointer(start: memory, count: 1),
                deallocator: .custom(queue: round & 1 == 0 ? deallocQueue : nil) {
                    UnsafeMutableRawPointer(bitPattern: bits)!.deallocate()
                    customRuns.add(1, ordering: .sequentiallyConsistent)
                    deallocGroup.leave()
                }
            )
        }
        precondition(rope.count == 1)
    }
    deallocGroup.wait()
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    opNumber = 0
    currentOp = { "setup" }
    if traceEnabled { writeStderr("input of \(size) bytes:\n") }
    let ownersBefore = ownersCreated
    let customBefore = customCreated.load(ordering: .sequentiallyConsistent)

    do {
        var fuzz = Fuzz(Input(bytes: UnsafeBufferPointer(start: data, count: size)))
        fuzz.run()
        // Drop the slots first: held regions and vectors must keep their memory alive alone.
        fuzz.ropes = []
        fuzz.verifyHeld()
        fuzz.heldRegions = []
        fuzz.releaseVectors()
    }

    // Everything is gone: every owner must have been released exactly once.
    currentOp = { "ownership check" }
    expect(
        ownersDestroyed == ownersCreated,
        "\(ownersCreated - ownersBefore) unsafeOwner regions created, \(ownersCreated - ownersDestroyed) never released"
    )
    if deallocGroup.wait(timeout: .now() + .seconds(10)) == .timedOut {
        fail("custom deallocators still pending 10 s after every rope was dropped")
    }
    let created = customCreated.load(ordering: .sequentiallyConsistent)
    let runs = customRuns.load(ordering: .sequentiallyConsistent)
    expect(
        runs == created,
        "\(created - customBefore) custom deallocators created this input; \(created) in all, \(runs) ran"
    )
    return 0
}
