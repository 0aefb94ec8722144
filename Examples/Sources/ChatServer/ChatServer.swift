//===----------------------------------------------------------------------===//
// RingIO — example: a chat server (fan-out with back-pressure, idle timeouts).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// chat-server: every line a client sends goes to every other client, as "ADDRESS: line".
//
//     swift run --package-path Examples chat-server [PORT] [IDLE_SECONDS]   (7000, 300)
//     socat - TCP:127.0.0.1:7000          (in two terminals or more; nc works too)
//
// What it teaches:
// - Fan-out: one message written to many connections, each on its own ring, without waiting
//   for any of them (a write with a handler returns at once; the ring sends it).
// - Back-pressure: a client that does not read makes its writes queue up in the server.
//   `IOChannel.queuedWriteBytes` says how much is queued; a member with more than
//   `Room.maxQueuedBytes` queued is DROPPED (its connection stopped, its queued writes
//   discarded), so that one slow reader costs a bounded amount of memory and never holds up
//   the others. (Skipping the slow member's messages instead is the same check with
//   `continue`; dropping tells the client, by closing, that it missed something.)
// - An idle timeout: `channel.reads(idleTimeout:)` throws `Errno.timedOut` when a client has
//   sent nothing for that long; the server says so and closes the connection.
// - `IOConnection` as a member of a `Set` (it is `Hashable`: the same connection, the same
//   member), guarded by a `Mutex`, since every connection's task uses the room.
// - Lines out of a stream: `ByteRope` search and slicing, which copy no bytes.

import RingIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The connected clients, and the fan-out.
final class Room: Sendable {
    /// The most bytes a member may have queued before it is dropped.
    static let maxQueuedBytes = 1 << 20

    private let members = Mutex<Set<IOConnection>>([])

    func join(_ connection: IOConnection) {
        members.withLock { _ = $0.insert(connection) }
    }

    func leave(_ connection: IOConnection) {
        members.withLock { _ = $0.remove(connection) }
    }

    /// Writes `message` to every member but `sender`, dropping members too far behind.
    func broadcast(_ message: ByteRope, from sender: IOConnection) {
        for member in members.withLock({ $0 }) where member != sender {
            let channel = member.channel
            guard channel.queuedWriteBytes <= Self.maxQueuedBytes else {
                channel.close(flags: .stop)  // ends its reads too: its task says goodbye
                continue
            }
            channel.write(message, queue: member.ring) { done, _, error in
                if done, error != nil { channel.close(flags: .stop) }  // reset by the peer…
            }
        }
    }

    func broadcast(_ text: String, from sender: IOConnection) {
        broadcast(ByteRope(copying: text.utf8), from: sender)
    }
}

@main
struct ChatServer {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let port = arguments.first.flatMap { UInt16($0) } ?? 7000
        let idle = Duration.seconds(arguments.dropFirst().first.flatMap { Int($0) } ?? 300)
        let group = try RingLoopGroup()
        var options = IOListener.Options()
        options.reusePort = true
        let listener = try IOListener(host: "127.0.0.1", port: port, options: options, group: group)

        let interrupt = IOSource.makeSignalSource(signal: SIGINT, queue: group.next())
        interrupt.setRegistrationHandler {  // from now on, SIGINT is ours
            print("chat-server: listening on \(listener.localAddresses[0])")
            fflush(nil)  // at once, also into a pipe
        }
        interrupt.setEventHandler {
            Task { await listener.shutdown(gracePeriod: .seconds(5)) }
        }
        interrupt.resume()

        let room = Room()
        await listener.serve { connection in
            try await chat(connection, in: room, idle: idle)
        }
        interrupt.cancel()
        await group.shutdown()
    }

    /// One client, from its welcome to its goodbye.
    static func chat(_ connection: IOConnection, in room: Room, idle: Duration) async throws {
        let name = connection.remoteAddress.map { "\($0)" } ?? "?"
        try await connection.channel.write(ByteRope(copying: "* welcome, \(name)\n".utf8))
        room.join(connection)
        room.broadcast("* \(name) joined\n", from: connection)
        do {
            try await relay(connection, as: name, to: room, idle: idle)
        } catch Errno.timedOut {
            try? await connection.channel.write(ByteRope(copying: "* idle for \(idle), goodbye\n".utf8))
        } catch {
            // Dropped, reset, or the server is stopping.
        }
        room.leave(connection)
        room.broadcast("* \(name) left\n", from: connection)
    }

    /// Sends every line the client sends to the others, until it closes or is idle too long.
    static func relay(_ connection: IOConnection, as name: String, to room: Room, idle: Duration) async throws {
        let prefix = ByteRope(copying: "\(name): ".utf8)
        var pending = ByteRope()  // the start of a line, until its newline arrives
        for try await data in connection.channel.reads(idleTimeout: idle) {
            pending += data
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                room.broadcast(prefix + pending.subrange(0...newline), from: connection)
                pending = pending.subrange((newline + 1)...)
            }
            guard pending.count <= 64 * 1024 else { return }  // a line too long: goodbye
        }
    }
}
