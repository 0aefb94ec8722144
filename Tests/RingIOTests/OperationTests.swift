//===----------------------------------------------------------------------===//
// RingIO — engine tests: the operations the rest of RingIO submits, against the real kernel.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

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
    @Test("writev moves several buffers at an offset in one operation")
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
        var back = [UInt8](repeating: 0xff, count: 16)
        #expect(pread(fd, &back, 16, 0) == 14)
        #expect(Array(back[..<14]) == [0, 0, 0, 0] + Array("abcdefghij".utf8))
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
        #expect(broken == -EPIPE || broken == -ECONNRESET, "the send to a closed peer: \(broken)")
        close(left)
    }

    @Test("multishot accept hands out a close-on-exec descriptor per connection; a cancel ends it")
    func acceptMultishot() throws {
        let ring = try RingLoop(entries: 16)
        defer { ring.shutdown() }
        let (listener, address) = try makeListener()
        defer { close(listener) }
        let accepted = Recorder<_RingIOTesting.Completion>()
        let acceptID = _Lock<UInt64?>(nil)
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
        var clients: [CInt] = []
        defer { for client in clients { close(client) } }
        for _ in 0..<connections {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(client >= 0)
            clients.append(client)
            var target = address
            let connected = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(connected == 0)
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
        _ = eventually(seconds: 5) { accepted.all.last?.hasMore == false }
        #expect(accepted.all.last == .init(result: -ECANCELED, hasMore: false))
    }

    @Test("openat and close on a file; a missing directory is an error delivered")
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
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(
            try _RingIOTesting.write(fd: fd, bytes: Array(repeating: 7, count: 1_234), offset: 0, on: ring)
                == .success(1_234)
        )
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_size == 1_234)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(try _RingIOTesting.perform(.close(fd: fd), on: ring) == 0)
        // Closing `fd` again would race with the rest of the suite, which may have been given
        // the number since (and would lose that descriptor): a number at the descriptor limit
        // is never open.
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let neverOpen = CInt(clamping: limit.rlim_cur)
        #expect(try _RingIOTesting.perform(.close(fd: neverOpen), on: ring) == -EBADF)
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
                .timeout(spec: spec),
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
