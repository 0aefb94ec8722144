//===----------------------------------------------------------------------===//
// RingIO — engine tests: multishot receive into provided buffers, as rope regions.
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Collects what a receiver reports; signals when the stream ends.
final class ReceivedStream: Sendable {
    private let state = Mutex<(ropes: [ByteRope], ended: Bool, error: Errno?)>(([], false, nil))
    let finished = DispatchSemaphore(value: 0)

    func record(_ event: _RingIOTesting.Received) {
        switch event {
        case .data(let rope): self.state.withLock { $0.ropes.append(rope) }
        case .end:
            self.state.withLock { $0.ended = true }
            self.finished.signal()
        case .failure(let error):
            self.state.withLock { $0.error = error }
            self.finished.signal()
        }
    }

    var bytes: [UInt8] { self.state.withLock { $0.ropes.flatMap { Array($0) } } }
    var byteCount: Int { self.state.withLock { $0.ropes.reduce(0) { $0 + $1.count } } }
    var ropes: [ByteRope] { self.state.withLock { $0.ropes } }
    var ended: Bool { self.state.withLock { $0.ended } }
    var error: Errno? { self.state.withLock { $0.error } }
    /// Drops every rope held so far (their buffers go back to the ring).
    func releaseRopes() { self.state.withLock { $0.ropes.removeAll() } }
}

func makeSocketPair() throws -> (CInt, CInt) {
    var fds: [CInt] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    return (fds[0], fds[1])
}

/// Writes all of `bytes` to `fd`, blocking.
func writeAll(_ fd: CInt, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        precondition(written > 0, "write failed: \(errno)")
        offset += written
    }
}

func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 31 &+ 7) }
}

@Suite("Multishot receive", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ReceiveTests {
    @Test("socketpair: every byte arrives once, in order, as regions of the ring's buffers")
    func socketPair() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let (reader, writer) = try makeSocketPair()
        defer { close(reader) }
        let stream = ReceivedStream()
        _RingIOTesting.receive(fd: reader, on: ring) { stream.record($0) }
        let sent = pattern(300_000)
        for chunk in stride(from: 0, to: sent.count, by: 7_001) {
            writeAll(writer, Array(sent[chunk..<min(chunk + 7_001, sent.count)]))
        }
        close(writer)
        try #require(wait(stream.finished))
        #expect(stream.ended)
        #expect(stream.error == nil)
        #expect(stream.bytes.count == sent.count)
        #expect(stream.bytes.elementsEqual(sent), "bytes differ")
        // Zero copy: every region lies in the ring's registered buffer memory.
        let memory = _RingIOTesting.receiveBufferMemory(of: ring)
        for rope in stream.ropes {
            for region in rope.regions {
                let base = region.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
                #expect(memory.contains(base) && memory.contains(base + UInt(region.count) - 1))
            }
        }
    }

    @Test("pipe: multishot read delivers the bytes and the end")
    func pipe() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        try #require(
            _RingIOTesting.supportsReadMultishot(ring),
            "multishot read needs Linux 6.7"
        )
        var fds: [CInt] = [-1, -1]
        try #require(Glibc.pipe(&fds) == 0)
        defer { close(fds[0]) }
        let stream = ReceivedStream()
        _RingIOTesting.receive(fd: fds[0], pipe: true, on: ring) { stream.record($0) }
        let sent = pattern(100_000, seed: 3)
        writeAll(fds[1], sent)
        close(fds[1])
        try #require(wait(stream.finished))
        #expect(stream.ended)
        #expect(stream.bytes.count == sent.count)
        #expect(stream.bytes.elementsEqual(sent), "bytes differ")
    }

    @Test("running out of buffers while ropes are held loses nothing and resumes when they go")
    func exhaustion() throws {
        // 4 buffers of 64 bytes: at most 256 bytes can be on loan.
        let ring = try RingLoop(entries: 16, receiveBuffers: 4, receiveBufferSize: 64)
        defer { ring.shutdown() }
        let (reader, writer) = try makeSocketPair()
        defer { close(reader) }
        let stream = ReceivedStream()
        _RingIOTesting.receive(fd: reader, on: ring) { stream.record($0) }
        let sent = pattern(4_096, seed: 11)
        writeAll(writer, sent)
        close(writer)

        // The receiver stalls with every buffer on loan: 256 bytes at most, nothing lost.
        let deadline = ContinuousClock.now + .seconds(5)
        while stream.byteCount < 256 && ContinuousClock.now < deadline {
            usleep(1_000)
        }
        usleep(50_000)
        #expect(stream.byteCount == 256)
        #expect(!stream.ended)
        #expect(ring.counters.buffersOnLoan == 4)

        // Release as we go: the rest arrives, once, in order.
        var received: [UInt8] = []
        let finalDeadline = ContinuousClock.now + .seconds(10)
        while !stream.ended && ContinuousClock.now < finalDeadline {
            let ropes = stream.ropes
            stream.releaseRopes()
            for rope in ropes { received += Array(rope) }
            usleep(1_000)
        }
        for rope in stream.ropes { received += Array(rope) }
        stream.releaseRopes()
        #expect(stream.ended)
        #expect(received.count == sent.count)
        #expect(received.elementsEqual(sent), "bytes differ")
    }
}
