//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the echo server a newcomer writes first, an unstructured
// `Task {}` per connection, to measure beside `serve` and the handler path.
//
//   naive-task-echo-server --port P [--host 127.0.0.1] [--rings 1]
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import RingIO

#if canImport(Glibc)
import Glibc
#endif

/// `for try await connection in listener.connections() { Task { … } }`: the connection's task
/// has no executor preference, so it runs on Swift's global concurrent executor and every
/// await on the ring's I/O hops there and back — the cost the Performance model describes and
/// `serve` (a child task on the accepting ring) avoids.
@main
struct NaiveTaskEchoServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "naive-task-echo-server",
        abstract: "An echo server with an unstructured Task per connection, on RingIO's async listener.",
        discussion: """
            Prints "naive-task-echo-server listening on HOST:PORT". SIGINT or SIGTERM: exit 0.
            """
    )

    @Option(help: "The address to bind.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one (the bound port is printed).")
    var port: UInt16 = 0

    @Option(help: "Rings (threads), each with a socket of its own on the port (SO_REUSEPORT).")
    var rings = 1

    func validate() throws {
        guard self.rings > 0 else { throw ValidationError("--rings must be at least 1") }
    }

    func run() throws {
        let group = try RingLoopGroup(count: self.rings)
        var options = IOListener.Options()
        options.reusePort = self.rings > 1
        let listener = try IOListener(host: self.host, port: self.port, options: options, group: group)
        Task {
            do {
                for try await connection in listener.connections() {
                    Task {
                        let channel = connection.channel
                        defer { channel.close() }
                        for try await data in channel.reads() {
                            try await channel.write(data)
                        }
                    }
                }
            } catch {
                print("naive-task-echo-server: accepting ended: \(error)")
            }
        }
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { signal in
            let source = IOSource.makeSignalSource(signal: signal, queue: group.rings[0])
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        print(
            "naive-task-echo-server listening on \(listener.localAddresses.map(\.description).joined(separator: ", "))"
        )
        fflush(nil)
        stop.wait()
        for source in sources { source.cancel() }
        listener.close()
        group.shutdown()
    }
}
