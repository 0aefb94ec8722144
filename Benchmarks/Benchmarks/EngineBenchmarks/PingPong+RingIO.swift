//===----------------------------------------------------------------------===//
// RingIO — benchmarks: the socketpair ping-pong through RingIO's IOChannel.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import IOBenchmarkSupport
import RingIO
import SystemPackage

/// Both ends as RingIO stream channels with low water 1 (RingIO's default on sockets; set
/// anyway, as for DispatchIO), each with a read of length `Int.max`; the server writes back
/// each rope it gets (the received buffer itself: no copy).
final class RingIOPingPong: PingPong, @unchecked Sendable {
    // @unchecked: `client` is touched only by the client channel's read handler and by the job
    // `roundTrips` puts on `clientQueue`, all on that queue (a ring's thread or a serial
    // DispatchQueue). The rest is immutable.

    /// Where the two ends run.
    enum Placement {
        /// Each end on a ring of its own, handlers on that ring's thread (no hop): the server
        /// fast path, with one thread per end as in the dispatch baselines.
        case handlersOnTwoRings
        /// Both ends on one ring, handlers on its thread: everything on one thread.
        case handlersOnOneRing
        /// Each end on a ring of its own, handlers on a serial DispatchQueue per end.
        case handlersOnDispatchQueues
        /// Both ends on one ring; the server is a task on the ring's task executor running
        /// `for try await data in reads() { try await write(data) }`, the client handlers on the
        /// ring: everything on one thread, the server through Swift concurrency.
        case asyncServerOnOneRing
        /// As `asyncServerOnOneRing`, with the server task on the global concurrent executor
        /// (no preference): every await hops between the ring and the cooperative pool.
        case asyncServerOffRing
    }

    // MARK: Immutable after init
    private let rings: [RingLoop]
    private let clientQueue: any IOQueue
    private let clientChannel: IOChannel
    private let serverChannel: IOChannel
    private let message = ByteRope(copying: Message.bytes)
    private let done = DispatchSemaphore(value: 0)
    private let cleanedUp = DispatchGroup()
    private let ignoreWrite: @Sendable (Bool, ByteRope?, Errno?) -> Void = { _, _, error in
        check(error == nil, "RingIO ping-pong: write failed: \(error!)")
    }

    /// The async server's task, for the async placements.
    private let serverTask: Task<Void, Never>?

    // MARK: Client queue only
    private var client = PingPongClient()

    init(_ placement: Placement) throws {
        let clientRing = try RingLoop()
        let serverRing =
            [.handlersOnOneRing, .asyncServerOnOneRing, .asyncServerOffRing].contains(placement)
            ? clientRing : try RingLoop()
        self.rings = clientRing === serverRing ? [clientRing] : [clientRing, serverRing]
        let serverQueue: any IOQueue
        switch placement {
        case .handlersOnTwoRings, .handlersOnOneRing, .asyncServerOnOneRing, .asyncServerOffRing:
            self.clientQueue = clientRing
            serverQueue = serverRing
        case .handlersOnDispatchQueues:
            self.clientQueue = DispatchQueue(label: "RingIO.benchmarks.client")
            serverQueue = DispatchQueue(label: "RingIO.benchmarks.server")
        }

        let (clientFD, serverFD) = makeSocketPair()
        let cleanedUp = self.cleanedUp
        cleanedUp.enter()
        cleanedUp.enter()
        self.clientChannel = IOChannel(
            kind: .stream,
            fileDescriptor: clientFD,
            queue: self.clientQueue,
            ring: clientRing
        ) { _ in
            closeOrDie(clientFD)
            cleanedUp.leave()
        }
        self.serverChannel = IOChannel(
            kind: .stream,
            fileDescriptor: serverFD,
            queue: serverQueue,
            ring: serverRing
        ) { _ in
            closeOrDie(serverFD)
            cleanedUp.leave()
        }
        self.clientChannel.setLimit(lowWater: 1)
        self.serverChannel.setLimit(lowWater: 1)

        let server = self.serverChannel
        let ignoreWrite = self.ignoreWrite
        switch placement {
        case .asyncServerOnOneRing, .asyncServerOffRing:
            let echo: @Sendable () async -> Void = {
                do throws(Errno) {
                    for try await data in server.reads() {
                        try await server.write(data)
                    }
                } catch {
                    check(error == .canceled, "RingIO ping-pong: async server failed: \(error)")
                }
            }
            self.serverTask =
                placement == .asyncServerOnOneRing
                ? Task(executorPreference: serverRing.taskExecutor, operation: echo) : Task(operation: echo)
        case .handlersOnTwoRings, .handlersOnOneRing, .handlersOnDispatchQueues:
            self.serverTask = nil
            server.read(offset: 0, length: Int.max, queue: serverQueue) { _, data, error in
                check(
                    error == nil || error == .canceled,
                    "RingIO ping-pong: server read failed: \(error!)"
                )
                if let data, !data.isEmpty {
                    server.write(offset: 0, data: data, queue: serverQueue, handler: ignoreWrite)
                }
            }
        }
        // Strong capture: the client's read holds the fixture until `close` stops it.
        self.clientChannel.read(offset: 0, length: Int.max, queue: self.clientQueue) { _, data, error in
            check(
                error == nil || error == .canceled,
                "RingIO ping-pong: client read failed: \(error!)"
            )
            _ = data?.apply { _, bytes in
                self.clientReceived(bytes)
                return true
            }
        }
    }

    func roundTrips(_ count: Int, checkingContents: Bool) {
        runLater(on: self.clientQueue) {
            self.client.begin(count, checkingContents: checkingContents)
            self.send()
        }
        waitOrDie(self.done, "\(count) RingIO round trips")
    }

    func close() {
        self.clientChannel.close(flags: .stop)
        self.serverChannel.close(flags: .stop)
        if self.cleanedUp.wait(timeout: .now() + 10) == .timedOut {
            fatalError("RingIO ping-pong: the channels were not cleaned up")
        }
        for ring in self.rings { ring.shutdown() }
    }

    private func send() {
        self.clientChannel.write(
            offset: 0,
            data: self.message,
            queue: self.clientQueue,
            handler: self.ignoreWrite
        )
    }

    private func clientReceived(_ bytes: UnsafeRawBufferPointer) {
        switch self.client.received(bytes) {
        case .wait: break
        case .send: self.send()
        case .finished: self.done.signal()
        }
    }
}
