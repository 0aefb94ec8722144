//===----------------------------------------------------------------------===//
// RingIO — IOListener's documentation examples, as written there, against real clients.
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

@Suite("IOListener: the documentation's examples", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ListenerDocExampleTests {
    @Test("the type's example echoes on the ring, and its shutdown's completion runs once all is closed")
    func handlerExample() throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let closed = DispatchSemaphore(value: 0)
        // IOListener's type-level comment (Sources/RingIO/Listener/IOListener.swift), as written
        // there but for the address ("::" and 8080 there) and the completion's print: keep the
        // two in step.
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            guard case .accepted(let connection) = event else { return }
            let channel = connection.channel
            channel.read(offset: 0, length: .max, queue: connection.ring) { done, data, _ in
                if let data, !data.isEmpty {
                    channel.write(offset: 0, data: data, queue: connection.ring) { _, _, _ in }
                }
                if done { channel.close() }
            }
        }

        let clients = try connectClients(8, "127.0.0.1", listener.port)
        expectEchoes(from: clients, size: { 1 + $0 * 9_001 })
        #expect(listener.openConnections == clients.count)

        listener.shutdown(gracePeriod: .seconds(5), queue: ring) { closed.signal() }
        #expect(wait(closed, seconds: 10), "the shutdown's completion did not run")
        #expect(listener.openConnections == 0)
        // Every client sees the server's end; a new connection is refused.
        for (index, client) in clients.enumerated() {
            var byte: UInt8 = 0
            #expect(read(client, &byte, 1) == 0, "client \(index): no end of file from the server")
            close(client)
        }
        #expect(connectClient("127.0.0.1", listener.port).map { close($0) } == .failure(.connectionRefused))
    }

    @Test("shutdown's example: the completion, off the rings, shuts the group down")
    func shutdownExample() throws {
        let group = try RingLoopGroup(count: 2, entries: 64)
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: group, queue: nil) { _ in }
        let clients = try connectClients(2, "127.0.0.1", listener.port)
        defer { for client in clients { close(client) } }
        let done = DispatchSemaphore(value: 0)
        // IOListener.shutdown(gracePeriod:queue:completion:)'s comment, as written there but
        // for the semaphore: keep the two in step.
        listener.shutdown(gracePeriod: .seconds(5), queue: DispatchQueue.global()) {
            group.shutdown()  // not from a ring's thread: a ring cannot stop itself
            done.signal()
        }
        #expect(wait(done, seconds: 10), "the completion did not run, or the group did not stop")
        #expect(listener.openConnections == 0)
    }

    @Test("the ring initializer's async example echoes on its ring until the serving task is cancelled")
    func asyncRingExample() async throws {
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let port = AsyncPort()
        let server = Task(executorPreference: testTaskExecutor) {
            // IOListener.init(host:port:options:ring:acceptFailed:)'s comment, as written there
            // but for port 0: keep the two in step.
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            port.set(listener.port)
            await listener.serve { connection in  // a child task on the ring
                for try await data in connection.channel.reads() {
                    try await connection.channel.write(data)
                }
            }
        }
        let listening = try #require(port.value(seconds: 30), "the server never listened")
        let clients = try connectClients(4, "127.0.0.1", listening)
        expectEchoes(from: clients, size: { 1 + $0 * 20_011 }, seed: 40)
        for client in clients { close(client) }
        server.cancel()
        let outcome = await bounded(seconds: 10) { try await server.value }
        #expect(outcome != nil, "serve did not return after its task was cancelled")
    }
}
