//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: RingIO's UDP echo server, on IODatagramChannel.
//
//   udp-echo-server --port P [--host 127.0.0.1] [--rings 1] [--api handlers|async]
//                   [--buffers 256] [--max-datagram 2048]
//
// Each datagram is sent back to its sender as it came: the rope over the channel's receive
// buffer is the send's iovec (no copy), and the buffer goes back to the kernel when the send
// is done with it. `--api handlers`: `receive(queue: ring)` and `send(_:to:queue: ring)`, the
// handlers on the ring thread (the fast path). `--api async`: a task preferring the ring,
// `for try await datagram in channel.datagrams() { try await channel.send(…) }`.
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

/// How datagrams are served.
enum API: String, ExpressibleByArgument, CaseIterable {
    /// Receive and send handlers on the ring.
    case handlers
    /// A task on the ring iterating `datagrams()` and awaiting each send.
    case async
}

@main
struct UDPEchoServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "udp-echo-server",
        abstract: "Sends every UDP datagram back to its sender, zero-copy, on RingIO's IODatagramChannel.",
        discussion: """
            Prints "udp-echo-server listening on HOST:PORT", then the engine it runs on. \
            SIGINT or SIGTERM: close the channels, print their counters, exit 0.
            """
    )

    @Option(help: "The IPv4 or IPv6 address to bind.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one (the bound port is printed).")
    var port: UInt16 = 0

    @Option(help: "Rings (threads), each with a socket of its own on the port (SO_REUSEPORT).")
    var rings = 1

    @Option(help: "'handlers' (handlers on the ring) or 'async' (a task on the ring).")
    var api: API = .handlers

    @Option(help: "Receive buffers per channel (a power of two).")
    var buffers = 256

    @Option(help: "The longest datagram received whole, bytes.")
    var maxDatagram = 2_048

    func validate() throws {
        guard self.rings > 0 else { throw ValidationError("--rings must be at least 1") }
        guard self.buffers > 0, self.buffers <= 32_768, self.buffers & (self.buffers - 1) == 0 else {
            throw ValidationError("--buffers must be a power of two in 1...32768")
        }
        guard (1...65_535).contains(self.maxDatagram) else {
            throw ValidationError("--max-datagram must be in 1...65535")
        }
    }

    func run() throws {
        let group = try RingLoopGroup(count: self.rings)
        var options = IODatagramChannel.Options()
        options.receiveBuffers = self.buffers
        options.maximumDatagramSize = self.maxDatagram
        options.reusePort = self.rings > 1
        var address = try SocketAddress(ipAddress: self.host, port: self.port)
        var channels: [IODatagramChannel] = []
        for ring in group.rings {
            let channel = try IODatagramChannel(bindingTo: address, options: options, ring: ring)
            // The other rings' sockets on the port the first one got.
            address = channel.localAddress
            channels.append(channel)
            switch self.api {
            case .handlers: Self.serveWithHandlers(channel)
            case .async: Self.serveAsync(channel)
            }
        }
        // Announced once SIGINT and SIGTERM are caught: whoever started the server may signal
        // it as soon as it reads the port.
        let terminated = Termination(on: group.rings[0])
        print("udp-echo-server listening on \(address)")
        print("udp-echo-server engine: \(group.backend) (\(group.backendReason))")
        fflush(nil)
        terminated.wait()
        for (index, channel) in channels.enumerated() {
            channel.close()
            let counts = channel.statistics
            if counts.truncated + counts.fallbackReceives + counts.kernelDrops > 0 {
                print("udp-echo-server: channel \(index): \(counts)")
            }
        }
        group.shutdown()
    }

    /// Each datagram back to its source from the receive handler; both handlers on the ring.
    static func serveWithHandlers(_ channel: IODatagramChannel) {
        let ring = channel.ring
        channel.receive(queue: ring) { done, datagram, error in
            if let datagram {
                // A send that fails (the sender went away) drops that datagram, as UDP may.
                channel.send(datagram.data, to: datagram.source, queue: ring) { _ in }
            }
            if done, let error, error != .canceled {
                print("udp-echo-server: the receive ended: \(error)")
            }
        }
    }

    /// Each datagram back to its source from a task that prefers the channel's ring.
    static func serveAsync(_ channel: IODatagramChannel) {
        Task(executorPreference: channel.ring.taskExecutor) {
            do throws(Errno) {
                for try await datagram in channel.datagrams() {
                    do {
                        try await channel.send(datagram.data, to: datagram.source)
                    } catch {
                        // The sender went away: that datagram is dropped, as UDP may.
                    }
                }
            } catch  where error != .canceled {
                print("udp-echo-server: the receive ended: \(error)")
            } catch {
                // Closed: the server is stopping.
            }
        }
    }
}

/// SIGINT and SIGTERM, caught by signal sources on a ring.
struct Termination {
    private let signalled = DispatchSemaphore(value: 0)
    private let sources: [IOSourceSignal]

    init(on ring: RingLoop) {
        let signalled = self.signalled
        self.sources = [SIGINT, SIGTERM].map { signal in
            let source = IOSource.makeSignalSource(signal: signal, queue: ring)
            source.setEventHandler { signalled.signal() }
            source.resume()
            return source
        }
    }

    /// Blocks until one of them arrives (a synchronous wait: valgrind 3.19, which the
    /// instruction check runs this server under, crashes in an async main's signal wait).
    func wait() {
        self.signalled.wait()
        for source in self.sources { source.cancel() }
    }
}
