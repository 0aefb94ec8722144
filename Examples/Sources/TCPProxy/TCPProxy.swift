//===----------------------------------------------------------------------===//
// RingIO — example: a TCP proxy that forwards bytes without copying them.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// tcp-proxy: for every client, a connection to UPSTREAM, and the bytes forwarded both ways.
//
//     swift run --package-path Examples echo-server 7000 &
//     swift run --package-path Examples tcp-proxy [PORT] [UPSTREAM]      (7001, 127.0.0.1:7000)
//
// What it teaches:
// - `IOConnection.connect(to:ring:)`: a client connection, made on the ring that accepted the
//   client, so that both sides' awaits resume on one thread.
// - Two directions as two child tasks of a task group: each reads one side and writes what it
//   read to the other. The ropes `reads()` hands out are the kernel's receive buffers, and
//   `write` sends those same buffers: no byte is copied in the proxy.
// - Back-pressure for free: a direction awaits each write before it takes the next rope, and
//   `reads()` pauses receiving once 4 MiB wait unread, so a slow side slows the other down
//   instead of filling the proxy's memory.
// - Half-close: one side's end of input is passed on with `shutdownOutput()`, after the bytes
//   before it; the connection ends when both directions have. An error on either side (a
//   reset) cancels the other direction, and both connections close.

import RingIO

#if canImport(Glibc)
import Glibc
#endif

@main
struct TCPProxy {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let port = arguments.first.flatMap { UInt16($0) } ?? 7001
        let upstream = try address(arguments.dropFirst().first ?? "127.0.0.1:7000")
        let group = try RingLoopGroup()
        var options = IOListener.Options()
        options.reusePort = true
        let listener = try IOListener(host: "127.0.0.1", port: port, options: options, group: group)

        let interrupt = IOSource.makeSignalSource(signal: SIGINT, queue: group.next())
        interrupt.setRegistrationHandler {  // from now on, SIGINT is ours
            print("tcp-proxy: listening on \(listener.localAddresses[0]), forwarding to \(upstream)")
            fflush(nil)  // at once, also into a pipe
        }
        interrupt.setEventHandler {
            Task { await listener.shutdown(gracePeriod: .seconds(5)) }
        }
        interrupt.resume()

        await listener.serve { client in
            let server = try await IOConnection.connect(to: upstream, ring: client.ring)
            defer { server.channel.close() }
            try await withThrowingTaskGroup { directions in
                directions.addTask(executorPreference: client.ring.taskExecutor) {
                    try await forward(from: client.channel, to: server.channel)
                }
                directions.addTask(executorPreference: client.ring.taskExecutor) {
                    try await forward(from: server.channel, to: client.channel)
                }
                try await directions.waitForAll()  // the first error cancels the other direction
            }
        }
        interrupt.cancel()
        await group.shutdown()
    }

    /// One direction, until `from`'s end of input, which is then passed on to `to`.
    static func forward(from: IOChannel, to: IOChannel) async throws {
        for try await data in from.reads() {
            try await to.write(data)
        }
        try await to.shutdownOutput()
    }

    /// "HOST:PORT" (an IPv4 address, or an IPv6 one in brackets) as a socket address.
    static func address(_ text: String) throws -> SocketAddress {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            print("usage: tcp-proxy [PORT] [UPSTREAM_HOST:UPSTREAM_PORT]")
            exit(2)
        }
        let host = text[..<colon].trimmingPrefix("[")
        return try SocketAddress(ipAddress: String(host.hasSuffix("]") ? host.dropLast() : host), port: port)
    }
}
