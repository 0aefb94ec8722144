//===----------------------------------------------------------------------===//
// RingIO — the DocC article "Getting started": its echo server with handlers, against real clients.
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

@Suite("DocC Getting started: the echo server with handlers", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct GettingStartedEchoTests {
    /// Sources/RingIO/RingIO.docc/GettingStarted.md, "With completion handlers", as written
    /// there: keep the two in step.
    static func serve(_ connection: IOConnection) {
        let channel = connection.channel
        let ring = connection.ring
        channel.read(offset: 0, length: .max, queue: ring) { done, data, error in
            if let data, !data.isEmpty {  // the kernel's receive buffers, not a copy
                channel.write(offset: 0, data: data, queue: ring) { done, _, error in
                    if done, error != nil { channel.close(flags: .stop) }
                }
            }
            if done { channel.close() }  // EOF or an error: writes in flight still finish
        }
    }

    @Test("echoes every client's bytes; a client's EOF closes its connection")
    func echoes() throws {
        // The article's `main`, with port 0 for 7000 and without the wait for Ctrl-C.
        let ring = try RingLoop()
        defer { ring.shutdown() }
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, queue: ring) { event in
            switch event {
            case .accepted(let connection):
                Self.serve(connection)
            case .failed(let error):
                print("accept failed: \(error); retrying")
            }
        }
        defer { listener.close() }

        // Clients at once, each with its own bytes, some larger than a receive buffer.
        let clients = try connectClients(16, "127.0.0.1", listener.port)
        expectEchoes(from: clients, size: { 1 + $0 * 7_001 })
        // A client that ends its side gets the server's end: the channel closed, the listener
        // closed the socket.
        for (index, client) in clients.enumerated() {
            #expect(shutdown(client, Int32(SHUT_WR)) == 0)
            var byte: UInt8 = 0
            #expect(read(client, &byte, 1) == 0, "client \(index): no end of file from the server")
            close(client)
        }
        #expect(eventually { listener.openConnections == 0 })
    }
}
