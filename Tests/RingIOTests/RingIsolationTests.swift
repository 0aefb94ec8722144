//===----------------------------------------------------------------------===//
// RingIO tests — where async code on the rings runs: serve, RingLoop.run, other rings.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Echoes `channel` until EOF, recording each point where the code was off `ring`'s thread.
nonisolated(nonsending) func echoRecordingHops(
    _ channel: IOChannel,
    ring: RingLoop,
    _ offRing: _TestLock<[String]>
) async throws {
    if !ring.isCurrentThread { offRing.withLock { $0.append("start") } }
    for try await data in channel.reads() {
        if !ring.isCurrentThread { offRing.withLock { $0.append("after read") } }
        try await channel.write(data)
        if !ring.isCurrentThread { offRing.withLock { $0.append("after write") } }
    }
}

@Suite("Where async code on the rings runs", .timeLimit(.minutes(3)))
struct RingIsolationTests {
    @Test("serve: the handler runs on its connection's ring thread across every await")
    func serveStaysOnTheRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            let offRing = _TestLock<[String]>([])
            let serving = Task {
                await listener.serve { connection in
                    try await echoRecordingHops(connection.channel, ring: connection.ring, offRing)
                }
            }
            let client = try await IOConnection.connect(host: "127.0.0.1", port: listener.port, ring: ring)
            for round in 0..<20 {
                #expect(try await roundTrip(client, Array("round \(round)".utf8)) == Array("round \(round)".utf8))
            }
            client.channel.close()
            listener.close()
            await serving.value
            #expect(offRing.withLock { $0 }.isEmpty)
        }
    }

    @Test("RingLoop.run: the body runs on the ring thread across every await, with no preference")
    func runStaysOnTheRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let (clientFD, serverFD) = try makeTCPPair()
            let server = IOChannel(kind: .stream, fileDescriptor: serverFD, queue: ring) { _ in close(serverFD) }
            let offRing = _TestLock<[String]>([])
            let echo = Task.detached {
                try await ring.run {
                    try await echoRecordingHops(server, ring: ring, offRing)
                }
            }
            for round in 0..<20 {
                writeAll(clientFD, Array("round \(round)".utf8))
                #expect(readExactly(clientFD, 7 + (round >= 10 ? 1 : 0)) == Array("round \(round)".utf8))
            }
            shutdown(clientFD, CInt(SHUT_WR))
            try await echo.value
            server.close()
            close(clientFD)
            #expect(offRing.withLock { $0 }.isEmpty)
        }
    }

    @Test("a channel awaited from a task on another ring, and from no ring, still works (a hop each way)")
    func otherRingAndNoRing() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            let other = try RingLoop()
            defer {
                ring.shutdown()
                other.shutdown()
            }
            let (clientFD, serverFD) = try makeTCPPair()
            defer { close(clientFD) }
            let server = IOChannel(kind: .stream, fileDescriptor: serverFD, queue: ring) { _ in close(serverFD) }
            defer { server.close() }
            // A task on the other ring writes and reads the first ring's channel.
            let onOther = Task(executorPreference: other.taskExecutor) {
                try await server.write(ByteRope(copying: "from the other ring".utf8))
                #expect(other.isCurrentThread)
                let answer = try await server.read(length: 3)
                #expect(other.isCurrentThread)
                return answer
            }
            #expect(readExactly(clientFD, 19) == Array("from the other ring".utf8))
            writeAll(clientFD, Array("yes".utf8))
            #expect(try await onOther.value == ByteRope(copying: "yes".utf8))
            // And from no ring: the tests' own executor.
            try await server.write(ByteRope(copying: "from no ring".utf8))
            #expect(readExactly(clientFD, 12) == Array("from no ring".utf8))
        }
    }

    @Test("cancelling a task waiting in RingLoop.run's body ends its await with ECANCELED")
    func cancellationReachesRunBody() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let (clientFD, serverFD) = try makeTCPPair()
            defer { close(clientFD) }
            let server = IOChannel(kind: .stream, fileDescriptor: serverFD, queue: ring) { _ in close(serverFD) }
            defer { server.close() }
            let waiting = Task.detached {
                try await ring.run { try await server.read(length: 10) }
            }
            // The read is armed once the ring has taken the job that scheduled it: a barrier
            // through the ring after the task entered the body.
            let idle = await eventuallyAsync { ringIsIdle(ring) }
            #expect(idle)
            waiting.cancel()
            let result = await waiting.result
            #expect(throws: Errno.canceled) { try result.get() }
        }
    }
}

/// Whether `ring` has run a job enqueued now (a round trip through its inbox).
func ringIsIdle(_ ring: RingLoop) -> Bool {
    let done = DispatchSemaphore(value: 0)
    ring.enqueue { done.signal() }
    return wait(done, seconds: 5)
}
