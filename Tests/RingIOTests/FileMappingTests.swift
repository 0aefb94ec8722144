//===----------------------------------------------------------------------===//
// RingIO — tests: `ByteRope(mapping:offset:length:)`, a file range as a mapped rope region,
// and such a rope written to a socket — also after the file was truncated under it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIOTestSupport
import SystemPackage
import Testing

@testable import RingIO

#if canImport(Glibc)
import Glibc
#endif

/// Writes `data` to `channel` and waits (bounded) for the final call's error.
private func writeAndWait(_ channel: IOChannel, _ data: ByteRope, queue: DispatchQueue) -> Errno?? {
    let result = _Lock<Errno??>(nil)
    let done = DispatchSemaphore(value: 0)
    channel.write(offset: 0, data: data, queue: queue) { finished, _, error in
        guard finished else { return }
        result.withLock { $0 = .some(error) }
        done.signal()
    }
    guard wait(done, seconds: 20) else { return nil }
    return result.withLock { $0 }
}

@Suite("ByteRope(mapping:): file ranges mapped, not read")
struct FileMappingTests {
    @Test(
        "the range's bytes, in one region, for offsets on and off page boundaries",
        arguments: [(0, 1), (0, 20_000), (1, 4_095), (4_095, 2), (4_096, 4_096), (5_000, 15_000), (19_999, 1)]
    )
    func mapsRanges(_ range: (offset: Int, length: Int)) throws {
        let contents = patternBytes(20_000, seed: 3)
        let file = try makeFile(contents)
        let mapped = try ByteRope(
            mapping: file.fd,
            offset: Int64(range.offset),
            length: range.length
        )
        #expect(mapped.count == range.length)
        #expect(mapped.regions.count == 1)
        expectSameBytes(Array(mapped), Array(contents[range.offset..<range.offset + range.length]))
        // Subranges share the mapping.
        let tail = mapped.subrange(range.length / 2..<range.length)
        expectSameBytes(Array(tail), Array(contents[range.offset + range.length / 2..<range.offset + range.length]))
    }

    @Test("outlives its descriptor, and shows a change made in place")
    func outlivesDescriptor() throws {
        let mapped: ByteRope
        let path: String
        do {
            let file = try makeFile(patternBytes(10_000))
            path = file.path
            mapped = try ByteRope(mapping: file.fd, length: 10_000)
            // Changed in place through another descriptor: the rope shows the file as it is.
            #expect(pwrite(file.fd, "changed", 7, 100) == 7)
            _ = consume file  // closed and removed; the mapping keeps the pages
        }
        #expect(access(path, F_OK) != 0)
        var expected = patternBytes(10_000)
        expected.replaceSubrange(100..<107, with: Array("changed".utf8))
        expectSameBytes(Array(mapped), expected)
    }

    @Test("bad input: a negative or overflowing range, a range past the end, a pipe, a write-only file")
    func badInput() throws {
        let file = try makeFile(patternBytes(100))
        let fd = file.fd
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: fd, offset: -1, length: 1) }
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: fd, offset: 0, length: -1) }
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: fd, offset: .max, length: 2) }
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: fd, offset: 50, length: 51) }
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: fd, offset: 101, length: 0) }
        // The end itself, with nothing after it: the empty rope, nothing mapped.
        #expect(try ByteRope(mapping: fd, offset: 100, length: 0).isEmpty)
        let pipe = try makePipe()
        defer {
            close(pipe.read)
            close(pipe.write)
        }
        #expect(throws: Errno.invalidArgument) { try ByteRope(mapping: pipe.read, length: 1) }
        let writeOnly = open(file.path, O_WRONLY | O_CLOEXEC)
        try #require(writeOnly >= 0)
        defer { close(writeOnly) }
        #expect(throws: Errno.permissionDenied) {
            try ByteRope(mapping: writeOnly, length: 1)
        }
        #expect(throws: Errno.badFileDescriptor) {
            try ByteRope(mapping: descriptorThatIsNeverOpen(), length: 1)
        }
    }
}

@Suite("ByteRope(mapping:) written to channels", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct FileMappingWriteTests {
    @Test("a mapped range, after a head, arrives on a TCP socket byte for byte")
    func writesToSocket() throws {
        let contents = patternBytes(300_000, seed: 9)
        let file = try makeFile(contents)
        let mapped = try ByteRope(mapping: file.fd, offset: 12_345, length: 250_000)
        let (client, server) = try makeTCPPair()
        defer { close(client) }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let (channel, queue) = serverChannel(server, on: ring, label: "mapping-writes")
        defer { channel.close() }
        let received = _Lock<[UInt8]>([])
        let reader = DispatchSemaphore(value: 0)
        startThread {
            let bytes = readExactly(client, 5 + 250_000)
            received.withLock { $0 = bytes }
            reader.signal()
        }
        var data = rope("head:")
        data.append(mapped)
        let outcome = writeAndWait(channel, data, queue: queue)
        #expect(outcome == .some(nil), "\(String(describing: outcome))")
        try #require(wait(reader, seconds: 20))
        expectSameBytes(received.withLock { $0 }, Array("head:".utf8) + Array(contents[12_345..<262_345]))
    }

    @Test("the file truncated under the mapping: the write ends with EFAULT, the process goes on")
    func truncatedUnderWrite() throws {
        let file = try makeFile(patternBytes(64 << 10))
        let mapped = try ByteRope(mapping: file.fd, length: 64 << 10)
        try #require(ftruncate(file.fd, 0) == 0)
        let (client, server) = try makeTCPPair()
        defer { close(client) }
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let (channel, queue) = serverChannel(server, on: ring, label: "mapping-truncated")
        defer { channel.close() }
        let outcome = writeAndWait(channel, mapped, queue: queue)
        #expect(outcome == .some(.badAddress), "\(String(describing: outcome))")
        // The channel still writes what can be read.
        let after = writeAndWait(channel, rope("still here"), queue: queue)
        #expect(after == .some(nil), "\(String(describing: after))")
        #expect(readExactly(client, 10) == bytes("still here"))
    }
}

/// A stream channel over `server` on `ring`, with its handlers on a queue of its own; its
/// cleanup handler closes `server`.
private func serverChannel(_ server: CInt, on ring: RingLoop, label: String) -> (IOChannel, DispatchQueue) {
    let queue = DispatchQueue(label: label)
    let channel = IOChannel(kind: .stream, fileDescriptor: server, queue: queue, ring: ring) { _ in close(server) }
    return (channel, queue)
}
