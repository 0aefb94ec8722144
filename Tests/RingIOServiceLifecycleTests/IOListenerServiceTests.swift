//===----------------------------------------------------------------------===//
// RingIO — IOListenerService in a ServiceGroup: graceful shutdown drains the connections
// (a write in flight finishes), cancellation stops them at once; both listener styles.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// With the package's ServiceLifecycle trait (`swift test --traits ServiceLifecycle`), which
// compiles RingIOServiceLifecycle; without it, one disabled test says how to run these.
#if !ServiceLifecycle
import Testing

@Test(
    .disabled(
        "RingIOServiceLifecycle is compiled with the ServiceLifecycle trait: swift test --traits ServiceLifecycle"
    )
)
func ioListenerServiceNeedsTheServiceLifecycleTrait() {}
#else
import Dispatch
import Logging
import RingIO
import RingIOServiceLifecycle
import RingIOTestSupport
import ServiceLifecycle
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A blocking client connected to 127.0.0.1:`port`, its reads bounded to 10 s; its receive
/// buffer small when `small` (the server's large writes stay in flight until it reads).
private func connect(_ port: UInt16, small: Bool = false) throws -> CInt {
    let fd = clientSocket("127.0.0.1")
    try #require(fd >= 0)
    if small {
        var size: CInt = 16_384
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
    }
    let connected = try connectClient("127.0.0.1", port, socket: fd).get()
    setReceiveTimeout(connected, seconds: 10)
    return connected
}

private let logger = Logger(label: "IOListenerServiceTests") { _ in SwiftLogNoOpLogHandler() }

/// Bytes far larger than the socket buffers: a write of them is in flight while the client
/// does not read.
///
/// Filled by a plain loop into uninitialized storage: built with `map` over a range it took
/// tens of seconds under ThreadSanitizer on a busy machine, and, made lazily on first use
/// inside a handler, held the ring (and the test's deadlines) meanwhile. The tests touch it
/// before they start their listener.
private let largeReply = [UInt8](unsafeUninitializedCapacity: 16 << 20) { buffer, initialized in
    var value: UInt8 = 3
    for index in 0..<buffer.count {
        buffer[index] = value
        value &+= 7
    }
    initialized = buffer.count
}

@Suite("IOListenerService", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct IOListenerServiceTests {
    @Test("async listener: graceful shutdown lets a large write finish, closes the idle connection, run() returns")
    func gracefulShutdownAsync() async throws {
        // On the tests' own executor, which never starves: in the parallel run the
        // synchronous tests hold the cooperative pool (two threads) for long.
        try await withTaskExecutorPreference(testTaskExecutor) {
            _ = largeReply.count  // made now, not inside a handler
            let rings = try RingLoopGroup(count: 1, entries: 64)
            defer { rings.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, group: rings)
            let outcomes = Mutex<[String]>([])
            let requestsRead = Atomic<Int>(0)
            // The accepting loop and the group on the ring, not on the cooperative pool: in a
            // parallel run, synchronous tests block the pool's threads (two here) for seconds, and
            // a starved accepting loop looks like a listener that stopped accepting.
            let ring = rings.rings[0]
            let service = IOListenerService(listener, gracePeriod: .seconds(60), executor: ring.taskExecutor) {
                connection in
                var request = try await connection.channel.read(length: 1)
                requestsRead.add(1, ordering: .releasing)
                if request.first == UInt8(ascii: "L") {
                    try await connection.channel.write(ByteRope(copying: largeReply))
                }
                do {
                    request = try await connection.channel.read(length: 1)
                    outcomes.withLock { $0.append("read \(request.count)") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
            let group = ServiceGroup(services: [service], logger: logger)
            let running = Task(executorPreference: ring.taskExecutor) { try await group.run() }

            let idle = try connect(listener.port)
            defer { close(idle) }
            let downloading = try connect(listener.port, small: true)
            defer { close(downloading) }
            #expect(send(idle, "I", 1, 0) == 1)
            #expect(send(downloading, "L", 1, 0) == 1)
            // Both requests read (a connection whose request is not read yet is idle, and stops
            // at once), and the download's first bytes arrived: its write is in flight (a flag
            // set before the write is not enough — under ThreadSanitizer the 16 MiB reply took
            // seconds to build, the shutdown came first and found the connection idle).
            let started = await eventuallyAsync {
                requestsRead.load(ordering: .acquiring) == 2 && pendingBytes(downloading) > 0
            }
            try #require(started)
            await group.triggerGracefulShutdown()
            let received = await onThread { readToEnd(downloading) }
            #expect(received.count == largeReply.count)
            let same = received == largeReply  // not inside #expect: a failure would diff 16 MiB
            #expect(same, "the bytes differ")
            let idleEnded = await onThread { readToEnd(idle) }
            #expect(idleEnded.isEmpty)
            try await running.value
            #expect(listener.openConnections == 0)
            #expect(outcomes.withLock { $0 } == [String](repeating: "\(Errno.canceled)", count: 2))
        }
    }

    @Test("the group's graceful shutdown reaches the service while blocking work holds the cooperative pool")
    func gracefulShutdownWithThePoolHeld() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let rings = try RingLoopGroup(count: 1, entries: 64)
            defer { rings.shutdown() }
            let listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: rings, queue: nil) { _ in }
            let service = IOListenerService(listener, gracePeriod: .seconds(5))
            let group = ServiceGroup(services: [service], logger: logger)
            let running = Task(executorPreference: rings.rings[0].taskExecutor) { try await group.run() }
            // Every thread of the cooperative pool blocked, as a parallel run's synchronous
            // tests block them: one blocking task per core, released once the service has
            // returned (or after 30 s). swift-service-lifecycle's `gracefulShutdown()` resumes
            // its waiter through a task on that pool: run() then returned only once the pool
            // was free again. In a parallel run the pool may be held by other tests already,
            // and the blocking tasks start late: the wait for them is short and not required
            // (held either way).
            let cores = max(Int(sysconf(CInt(_SC_NPROCESSORS_ONLN))), 1)
            let started = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            for _ in 0..<cores {
                Task.detached {
                    started.signal()
                    _ = release.wait(timeout: .now() + 30)
                }
            }
            _ = await onThread { (0..<cores).allSatisfy { _ in wait(started, seconds: 2) } }
            defer { for _ in 0..<cores { release.signal() } }
            await group.triggerGracefulShutdown()
            let returned = await onThread {
                let done = DispatchSemaphore(value: 0)
                Task(executorPreference: testTaskExecutor) {
                    _ = try? await running.value
                    done.signal()
                }
                return wait(done, seconds: 10)
            }
            #expect(returned, "run() did not return while the pool was held")
        }
    }

    @Test("handler listener: graceful shutdown closes the connections; cancellation stops at once")
    func handlerListener() async throws {
        // On the tests' own executor, which never starves: in the parallel run the
        // synchronous tests hold the cooperative pool (two threads) for long.
        try await withTaskExecutorPreference(testTaskExecutor) {
            _ = largeReply.count  // made now, not inside a handler on the ring
            let rings = try RingLoopGroup(count: 1, entries: 64)
            defer { rings.shutdown() }
            for cancel in [false, true] {
                let listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: rings, queue: nil) { event in
                    guard case .accepted(let connection) = event else { return }
                    let channel = connection.channel
                    channel.read(offset: 0, length: .max, queue: connection.ring) { _, _, _ in }
                    // Never read by the client: in flight until the deadline or a stop.
                    channel.write(offset: 0, data: ByteRope(copying: largeReply), queue: connection.ring) { _, _, _ in }
                }
                let service = IOListenerService(listener, gracePeriod: cancel ? .seconds(600) : .milliseconds(100))
                let group = ServiceGroup(services: [service], logger: logger)
                let running = Task(executorPreference: rings.rings[0].taskExecutor) { try await group.run() }
                let client = try connect(listener.port, small: true)
                defer { close(client) }
                let open = await eventuallyAsync { listener.openConnections == 1 }
                try #require(open)
                if cancel {
                    running.cancel()  // a grace period of 600 s: only the cancellation ends it now
                } else {
                    await group.triggerGracefulShutdown()
                }
                let returned = await onThread {
                    let done = DispatchSemaphore(value: 0)
                    Task(executorPreference: testTaskExecutor) {
                        _ = try? await running.value
                        done.signal()
                    }
                    return wait(done, seconds: 60)
                }
                #expect(returned, "run() did not return (cancel: \(cancel))")
                #expect(listener.openConnections == 0)
                let received = await onThread { readToEnd(client) }
                #expect(received.count < largeReply.count)
            }
        }
    }
}
#endif
