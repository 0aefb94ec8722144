//===----------------------------------------------------------------------===//
// RingIO — IOConnection is Hashable and Identifiable: copies of a connection are equal, two
// connections are not; sets, dictionaries and `id` follow.
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

/// Takes `count` connections from `listener`'s iteration (bounded).
private func accept(_ count: Int, from listener: IOListener) async throws -> [IOConnection] {
    let outcome = await bounded { () async throws -> [IOConnection] in
        var accepted: [IOConnection] = []
        var iterator = listener.connections().makeAsyncIterator()
        while accepted.count < count, let connection = try await iterator.next() {
            accepted.append(connection)
        }
        return accepted
    }
    guard case .success(let connections)? = outcome else {
        Issue.record("\(count) connections were not accepted: \(String(describing: outcome))")
        return []
    }
    return connections
}

@Suite("IOConnection: Hashable and Identifiable", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct ConnectionIdentityTests {
    @Test("two accepted connections differ; a connection and its copies are equal, hash alike, share an id")
    func equalityAndIdentity() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            defer { listener.close() }
            let clients = try connectClients(3, "127.0.0.1", listener.port)
            defer { for fd in clients { close(fd) } }
            let connections = try await accept(3, from: listener)
            try #require(connections.count == 3)
            let (first, second, third) = (connections[0], connections[1], connections[2])
            let copy = first

            #expect(first == copy)
            #expect(first.hashValue == copy.hashValue)
            #expect(first.id == copy.id)
            #expect(first != second)
            #expect(second != third)
            #expect(first.id != second.id)
            #expect(Set(connections.map(\.id)).count == 3)
            #expect(first.id.description.hasPrefix("connection-"))
            #expect(first.id.description != second.id.description)

            // As set members and dictionary keys.
            var set: Set<IOConnection> = [first, second, copy]
            #expect(set.count == 2)
            #expect(set.contains(copy))
            #expect(!set.contains(third))
            set.remove(copy)
            #expect(!set.contains(first))
            #expect(set == [second])
            var names: [IOConnection: String] = [:]
            for (index, connection) in connections.enumerated() { names[connection] = "client \(index)" }
            names[copy] = "first, again"
            #expect(names.count == 3)
            #expect(names[first] == "first, again")
            #expect(names[third] == "client 2")
            var byID: [IOConnection.ID: IOConnection] = [:]
            for connection in connections { byID[connection.id] = connection }
            #expect(byID[second.id] == second)

            // The id does not change with what the connection goes through: I/O, then its close.
            let id = second.id
            let description = second.id.description
            writeAll(clients[1], bytes("ping"))
            let read = Outcome(await bounded { Array(try await second.channel.read(length: 4)) })
            #expect(read == .bytes(bytes("ping")), "\(read)")
            #expect(second.id == id)
            await second.channel.closeAndWait()
            #expect(second.id == id)
            #expect(second.id.description == description)
            #expect(names[second] == "client 1")
            for connection in [first, third] { await connection.channel.closeAndWait() }
        }
    }

    @Test("a dialled connection is distinct from the accepted one at the other end, and equal to its copies")
    func dialledConnection() async throws {
        try await withTaskExecutorPreference(testTaskExecutor) {
            let ring = try RingLoop()
            defer { ring.shutdown() }
            let listener = try IOListener(host: "127.0.0.1", port: 0, ring: ring)
            defer { listener.close() }
            let dialled = try await IOConnection.connect(
                to: try SocketAddress(ipAddress: "127.0.0.1", port: listener.port),
                ring: ring
            )
            let accepted = try await accept(1, from: listener)
            try #require(accepted.count == 1)
            let copies = [dialled, dialled]
            #expect(copies[0] == copies[1])
            #expect(dialled != accepted[0])
            #expect(dialled.id != accepted[0].id)
            #expect(Set([dialled, accepted[0], copies[1]]).count == 2)
            await dialled.channel.closeAndWait()
            await accepted[0].channel.closeAndWait()
        }
    }
}
