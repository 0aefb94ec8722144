//===----------------------------------------------------------------------===//
// RingIO — benchmark server: a TCP proxy that forwards the bytes it receives without copying them.
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

/// Accepts connections and connects each to the upstream; what one side sends is written to
/// the other as it came — the kernel's receive buffers, as ropes, with no copy.
///
///     swift run -c release --package-path Benchmarks tcp-proxy --port 7001 --upstream 127.0.0.1:7000
@main
struct TCPProxy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tcp-proxy",
        abstract: "A zero-copy TCP proxy on RingIO."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: UInt16 = 7001

    @Option(help: "Where to connect: HOST:PORT, [IPv6]:PORT, or unix:PATH.")
    var upstream: String

    @Option(help: "Rings (threads); each accepts on a socket of its own and serves its connections.")
    var rings = 1

    @Option(help: "Bytes waiting to be sent to a side before reading from the other pauses.")
    var buffer = 1 << 20

    @Option(help: "On SIGINT or SIGTERM: seconds for the connections to finish their writes.")
    var drainSeconds = 5

    func validate() throws {
        guard self.rings > 0, self.buffer > 0, self.drainSeconds >= 0 else {
            throw ValidationError("--rings and --buffer must be positive, --drain-seconds not negative")
        }
        _ = try Upstream(self.upstream)
    }

    func run() throws {
        let upstream = try Upstream(self.upstream)
        let group = try RingLoopGroup(count: self.rings)
        var options = IOAcceptor.Options()
        options.reusePort = true  // a socket per ring: both ends of a connection on one ring
        let bound = self.buffer
        let listener = try IOAcceptor(host: self.host, port: self.port, options: options, group: group, queue: nil) {
            event in
            // On the ring that accepted the connection: the upstream is dialled from there.
            guard case .accepted(let client) = event else { return }
            upstream.connect(on: client.ring) { result in
                switch result {
                case .success(let server):
                    ProxiedConnection(client: client, server: server, bound: bound).start()
                case .failure(let error):
                    print("tcp-proxy: \(error)")
                    client.channel.close()
                }
            }
        }
        // Announced once SIGINT and SIGTERM are caught: whoever started the proxy may signal
        // it as soon as it reads the port.
        let terminated = Termination(on: group.rings[0])
        print("tcp-proxy listening on \(listener.localAddresses.map(\.description).joined(separator: ", "))")
        print("tcp-proxy engine: \(group.backend) (\(group.backendReason))")
        fflush(nil)
        terminated.wait()
        // Stop accepting; each client connection ends once its writes are done (its upstream
        // with it), at the latest after --drain-seconds.
        let drained = DispatchSemaphore(value: 0)
        listener.shutdown(gracePeriod: .seconds(self.drainSeconds), queue: DispatchQueue.global()) {
            drained.signal()
        }
        drained.wait()
        group.shutdown()
    }
}

/// Where the proxy connects: a host and port, or a Unix socket's path.
enum Upstream: Sendable {
    case host(String, UInt16)
    case unix(SocketAddress)

    init(_ text: String) throws {
        if text.hasPrefix("unix:") {
            self = .unix(try SocketAddress(unixPath: String(text.dropFirst(5))))
            return
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw ValidationError("--upstream \(text): expected HOST:PORT or unix:PATH")
        }
        var host = text[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        self = .host(String(host), port)
    }

    /// Connects on `ring`, calling `handler` there.
    func connect(on ring: RingLoop, handler: @escaping @Sendable (Result<IOConnection, ConnectError>) -> Void) {
        switch self {
        case .host(let host, let port):
            IOConnection.connect(host: host, port: port, ring: ring, queue: ring, handler: handler)
        case .unix(let address): IOConnection.connect(to: address, ring: ring, queue: ring, handler: handler)
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

    /// Blocks until one of them arrives.
    func wait() {
        self.signalled.wait()
        for source in self.sources { source.cancel() }
    }
}
