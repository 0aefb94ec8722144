//===----------------------------------------------------------------------===//
// RingIO — engine tests: each operation the rest of RingIO needs, against the real kernel.
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A temporary file, removed when the test ends.
struct TemporaryFile: ~Copyable {
    let path: String
    let fd: CInt

    init() throws {
        var template = Array("/tmp/ringio-op-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        try #require(fd >= 0)
        self.fd = fd
        self.path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        close(self.fd)
        unlink(self.path)
    }
}

/// A listening TCP socket on 127.0.0.1 and an ephemeral port.
func makeListener() throws -> (fd: CInt, address: sockaddr_in) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(bound == 0)
    try #require(listen(fd, 64) == 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    try #require(named == 0)
    return (fd, address)
}

/// A socket address at a stable address, for connect.
final class SocketAddress: @unchecked Sendable {
    // @unchecked: immutable after init; the kernel only reads it.
    let pointer: UnsafeMutablePointer<sockaddr_in>

    init(_ address: sockaddr_in) {
        self.pointer = .allocate(capacity: 1)
        self.pointer.initialize(to: address)
    }

    deinit { self.pointer.deallocate() }

    var raw: UnsafePointer<sockaddr> {
        UnsafeRawPointer(self.pointer).assumingMemoryBound(to: sockaddr.self)
    }
}

/// iovecs over test buffers.
final class TestVectors: @unchecked Sendable {
    // @unchecked: see TestBuffer.
    let buffers: [TestBuffer]
    let vectors: UnsafeMutableBufferPointer<iovec>

    init(_ buffers: [TestBuffer]) {
        self.buffers = buffers
        self.vectors = .allocate(capacity: buffers.count)
        for (index, buffer) in buffers.enumerated() {
            self.vectors[index] = iovec(iov_base: buffer.bytes.baseAddress, iov_len: buffer.bytes.count)
        }
    }

    deinit { self.vectors.deallocate() }
}

@Suite("Ring operations", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct OperationTests {
    @Test("writev and readv move several buffers at an offset in one operation")
    func vectored() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let file = try TemporaryFile()
        let out = TestVectors([
            TestBuffer(Array("abc".utf8)), TestBuffer(Array("defgh".utf8)), TestBuffer(Array("ij".utf8)),
        ])
        let fd = file.fd
        let written = try _RingIOTesting.perform(
            .writev(fd: fd, vectors: UnsafeBufferPointer(out.vectors), offset: 4),
            on: ring,
            keepAlive: out
        )
        #expect(written == 10)
        let back = TestVectors([TestBuffer(count: 6), TestBuffer(count: 8)])
        let read = try _RingIOTesting.perform(
            .readv(fd: fd, vectors: UnsafeBufferPointer(back.vectors), offset: 4),
            on: ring,
            keepAlive: back
        )
        #expect(read == 10)
        #expect(back.buffers[0].prefix(6) == Array("abcdef".utf8))
        #expect(back.buffers[1].prefix(4) == Array("ghij".utf8))
    }

    @Test("send delivers bytes; a send to a closed peer ends with EPIPE and no SIGPIPE")
    func send() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let (left, right) = try makeSocketPair()
        let message = TestBuffer(Array("ping".utf8))
        let sent = try _RingIOTesting.perform(
            .send(fd: left, buffer: UnsafeRawBufferPointer(message.bytes)),
            on: ring,
            keepAlive: message
        )
        #expect(sent == 4)
        var received = [UInt8](repeating: 0, count: 8)
        #expect(recv(right, &received, 8, 0) == 4)
        #expect(Array(received[..<4]) == Array("ping".utf8))

        close(right)
        // The default SIGPIPE action would end this process here: surviving is the check.
        let broken = try _RingIOTesting.perform(
            .send(fd: left, buffer: UnsafeRawBufferPointer(message.bytes)),
            on: ring,
            keepAlive: message
        )
        #expect(broken == -EPIPE || broken == -ECONNRESET)
        close(left)
    }

    @Test("multishot accept hands out a descriptor per connection made with ring connects")
    func acceptAndConnect() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let (listener, address) = try makeListener()
        defer { close(listener) }
        let accepted = Recorder<_RingIOTesting.Completion>()
        let acceptID = Mutex<UInt64?>(nil)
        let connections = 3
        let allAccepted = DispatchSemaphore(value: 0)
        _RingIOTesting.submit(
            .acceptMultishot(fd: listener),
            on: ring,
            submitted: { id in acceptID.withLock { $0 = id } },
            completion: { completion in
                accepted.append(completion)
                if accepted.all.filter({ $0.hasMore }).count == connections { allAccepted.signal() }
            }
        )
        let target = SocketAddress(address)
        var clients: [CInt] = []
        for _ in 0..<connections {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(client >= 0)
            clients.append(client)
            let connected = try _RingIOTesting.perform(
                .connect(fd: client, address: target.raw, length: socklen_t(MemoryLayout<sockaddr_in>.size)),
                on: ring,
                keepAlive: target
            )
            #expect(connected == 0)
        }
        try #require(wait(allAccepted))
        let descriptors = accepted.all.map(\.result)
        #expect(descriptors.count == connections)
        #expect(descriptors.allSatisfy { $0 >= 0 })
        #expect(Set(descriptors).count == connections)
        // Each accepted descriptor is close-on-exec and connected to a client.
        for fd in descriptors {
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
            close(fd)
        }
        // Cancelling the multishot accept ends it with one final completion.
        let id = try #require(acceptID.withLock { $0 })
        let cancelled = try _RingIOTesting.perform(.cancel(userData: id), on: ring)
        #expect(cancelled == 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while accepted.all.last?.hasMore != false && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(accepted.all.last == .init(result: -ECANCELED, hasMore: false))
        for client in clients { close(client) }
    }

    @Test("openat, fsync, statx and close on a file")
    func fileLifecycle() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let path = "/tmp/ringio-open-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        let cPath = TestBuffer(Array(path.utf8) + [0])
        let fd = try _RingIOTesting.perform(
            .openat(
                directory: AT_FDCWD,
                path: UnsafeRawPointer(cPath.bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                flags: O_CREAT | O_RDWR | O_CLOEXEC,
                mode: 0o600
            ),
            on: ring,
            keepAlive: cPath
        )
        try #require(fd >= 0)
        #expect(
            try _RingIOTesting.write(fd: fd, bytes: Array(repeating: 7, count: 1_234), offset: 0, on: ring)
                == .success(1_234)
        )
        #expect(try _RingIOTesting.perform(.fsync(fd: fd, dataOnly: false), on: ring) == 0)
        #expect(try _RingIOTesting.perform(.fsync(fd: fd, dataOnly: true), on: ring) == 0)
        #expect(_RingIOTesting.statxSize(path: path, on: ring) == .success(1_234))
        #expect(_RingIOTesting.statxSize(path: path + "-missing", on: ring) == .failure(.noSuchFileOrDirectory))
        #expect(try _RingIOTesting.perform(.close(fd: fd), on: ring) == 0)
        #expect(try _RingIOTesting.perform(.close(fd: fd), on: ring) == -EBADF)
        // A missing directory is an error delivered, not thrown or trapped.
        let missing = TestBuffer(Array("/nonexistent-ringio/x".utf8) + [0])
        let failed = try _RingIOTesting.perform(
            .openat(
                directory: AT_FDCWD,
                path: UnsafeRawPointer(missing.bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                flags: O_RDONLY,
                mode: 0
            ),
            on: ring,
            keepAlive: missing
        )
        #expect(failed == -ENOENT)
    }

    @Test("a repeating timeout fires every period until cancelled")
    func repeatingTimeout() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let spec = _KernelTimespec(nanoseconds: 5_000_000)
        let fired = Recorder<_RingIOTesting.Completion>()
        let id = Mutex<UInt64?>(nil)
        let fiveTimes = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        _RingIOTesting.submit(
            .timeout(spec: spec, repeating: true),
            on: ring,
            keepAlive: spec,
            submitted: { value in id.withLock { $0 = value } },
            completion: { completion in
                fired.append(completion)
                if fired.all.count == 5 { fiveTimes.signal() }
            }
        )
        try #require(wait(fiveTimes))
        #expect(ContinuousClock.now - start >= .milliseconds(25))
        #expect(fired.all.prefix(5).allSatisfy { $0 == .init(result: -ETIME, hasMore: true) })
        let timer = try #require(id.withLock { $0 })
        #expect(try _RingIOTesting.perform(.cancel(userData: timer), on: ring) == 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while fired.all.last?.hasMore != false && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(fired.all.last == .init(result: -ECANCELED, hasMore: false))
    }

    @Test("a linked timeout cancels an operation that takes too long")
    func linkTimeout() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let (left, right) = try makeSocketPair()
        defer {
            close(left)
            close(right)
        }
        let buffer = TestBuffer(count: 16)
        /// Reads from `left` with a linked timeout; the read's and the timeout's results.
        func readWithTimeout(nanoseconds: Int64) throws -> (read: Int32?, timeout: Int32?) {
            let results = Mutex<(read: Int32?, timeout: Int32?)>((nil, nil))
            let done = DispatchSemaphore(value: 0)
            _RingIOTesting.submit(
                .read(fd: left, buffer: buffer.bytes, offset: -1),
                on: ring,
                timeoutNanoseconds: nanoseconds,
                completion: { result in
                    withExtendedLifetime(buffer) {}
                    results.withLock { $0.read = result }
                    done.signal()
                },
                timeoutCompletion: { result in
                    results.withLock { $0.timeout = result }
                    done.signal()
                }
            )
            try #require(wait(done))
            try #require(wait(done))
            return results.withLock { $0 }
        }

        let start = ContinuousClock.now
        let slow = try readWithTimeout(nanoseconds: 20_000_000)
        #expect(ContinuousClock.now - start >= .milliseconds(20))
        #expect(slow.read == -ECANCELED)
        #expect(slow.timeout == -ETIME)

        // The same, completing in time: the timeout is the one cancelled.
        writeAll(right, Array("fast".utf8))
        let fast = try readWithTimeout(nanoseconds: 5_000_000_000)
        #expect(fast.read == 4)
        #expect(fast.timeout == -ECANCELED)
    }

    @Test("multishot poll reports readiness repeatedly")
    func pollMultishot() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let events = Recorder<_RingIOTesting.Completion>()
        let id = Mutex<UInt64?>(nil)
        let signalled = DispatchSemaphore(value: 0)
        let reader = fds[0]
        _RingIOTesting.submit(
            .pollMultishot(fd: reader, events: UInt32(POLLIN)),
            on: ring,
            submitted: { value in id.withLock { $0 = value } },
            completion: { completion in
                events.append(completion)
                signalled.signal()
            }
        )
        for round in 0..<3 {
            writeAll(fds[1], [UInt8(round)])
            try #require(wait(signalled))
            var byte: UInt8 = 0
            #expect(read(fds[0], &byte, 1) == 1)
        }
        #expect(events.all.count >= 3)
        #expect(events.all.allSatisfy { $0.result & Int32(POLLIN) != 0 && $0.hasMore })
        let poll = try #require(id.withLock { $0 })
        #expect(try _RingIOTesting.perform(.cancel(userData: poll), on: ring) == 0)
    }

    @Test("cancel by descriptor ends every operation on it")
    func cancelDescriptor() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let results = Recorder<Int32>()
        let both = DispatchSemaphore(value: 0)
        let reader = fds[0]
        for _ in 0..<2 {
            let buffer = TestBuffer(count: 8)
            _RingIOTesting.submit(.read(fd: reader, buffer: buffer.bytes, offset: -1), on: ring, keepAlive: buffer) {
                results.append($0.result)
                both.signal()
            }
        }
        // Let both reads reach the kernel before cancelling.
        let armed = DispatchSemaphore(value: 0)
        ring.enqueue { armed.signal() }
        try #require(wait(armed))
        let cancelled = try _RingIOTesting.perform(.cancelDescriptor(fd: reader), on: ring)
        try #require(wait(both))
        try #require(wait(both))
        #expect(cancelled == 2)
        #expect(results.all == [-ECANCELED, -ECANCELED])
    }

    @Test("cancel racing completion: each operation gets exactly one final completion")
    func cancelRacingCompletion() throws {
        let ring = try RingLoop(entries: 64)
        defer { ring.shutdown() }
        let rounds = 500
        let operationResults = Recorder<Int32>()
        let cancelResults = Recorder<Int32>()
        let done = DispatchSemaphore(value: 0)
        for round in 0..<rounds {
            // A timeout of 0–100 µs and its cancellation in the same submission: sometimes the
            // timer wins, sometimes the cancellation.
            let spec = _KernelTimespec(nanoseconds: Int64(round % 5) * 25_000)
            _RingIOTesting.submitThenCancel(
                .timeout(spec: spec, repeating: false),
                on: ring,
                keepAlive: spec,
                completion: { operationResults.append($0.result) },
                cancelCompletion: { result in
                    cancelResults.append(result)
                    if cancelResults.all.count == rounds { done.signal() }
                }
            )
        }
        try #require(wait(done, seconds: 20))
        let settle = DispatchSemaphore(value: 0)
        ring.enqueue { settle.signal() }
        try #require(wait(settle))
        #expect(operationResults.all.count == rounds)
        // -ETIME: the timer fired first; -ECANCELED: the cancellation won.
        #expect(operationResults.all.allSatisfy { $0 == -ETIME || $0 == -ECANCELED })
        #expect(cancelResults.all.allSatisfy { $0 == 0 || $0 == -ENOENT || $0 == -EALREADY })
        #expect(operationResults.all.contains(-ECANCELED))
        #expect(ring.counters.staleCompletions == 0)
    }
}
