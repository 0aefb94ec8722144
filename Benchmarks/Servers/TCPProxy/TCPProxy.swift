//===----------------------------------------------------------------------===//
// RingIO — benchmark server: a TCP proxy that forwards the bytes it receives without copying them.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import RingIO
import RingTLS

#if canImport(Glibc)
import Glibc
#endif

/// Accepts connections and connects each to the upstream; what one side sends is written to
/// the other as it came — the kernel's receive buffers, as ropes, with no copy.
///
///     swift run -c release --package-path Benchmarks tcp-proxy --port 7001 --upstream 127.0.0.1:7000
///
/// With TLS (RingTLS) on either side: `--tls-certificate`/`--tls-key` terminate TLS from the
/// clients (the proxy forwards their plaintext), `--upstream-tls` originates TLS to the
/// upstream (checked against `--upstream-ca`, or the system's roots, and the upstream's name).
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

    @Option(help: "Terminate TLS from the clients: the certificate chain, PEM, leaf first (with --tls-key).")
    var tlsCertificate: String?

    @Option(help: "Terminate TLS from the clients: the private key of the chain's leaf, PEM.")
    var tlsKey: String?

    @Flag(help: "Originate TLS to the upstream (a host and port), verifying its certificate and name.")
    var upstreamTLS = false

    @Option(help: "With --upstream-tls: the CA certificates (PEM) to trust, instead of the system's.")
    var upstreamCA: String?

    @Option(help: "With --upstream-tls: the name the upstream's certificate must have (default: its host).")
    var upstreamServerName: String?

    func validate() throws {
        guard self.rings > 0, self.buffer > 0, self.drainSeconds >= 0 else {
            throw ValidationError("--rings and --buffer must be positive, --drain-seconds not negative")
        }
        guard (self.tlsCertificate == nil) == (self.tlsKey == nil) else {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        guard self.upstreamTLS || (self.upstreamCA == nil && self.upstreamServerName == nil) else {
            throw ValidationError("--upstream-ca and --upstream-server-name need --upstream-tls")
        }
        let upstream = try Upstream(self.upstream)
        if self.upstreamTLS, case .unix = upstream, self.upstreamServerName == nil {
            throw ValidationError("--upstream-tls to a Unix socket needs --upstream-server-name")
        }
    }

    /// The contexts of the TLS flags: for the clients' side, the upstream's side, or neither.
    private func makeTLS(upstream: Upstream) throws -> ProxyTLS {
        var tls = ProxyTLS()
        do throws(TLSError) {
            if let certificate = self.tlsCertificate, let key = self.tlsKey {
                var configuration = try TLSConfiguration.makeServerConfiguration(
                    certificateChainFile: FilePath(certificate),
                    privateKeyFile: FilePath(key)
                )
                configuration.kernelTLS = .whenAvailable
                tls.clients = try TLSContext(configuration: configuration)
            }
            if self.upstreamTLS {
                var configuration = TLSConfiguration.makeClientConfiguration()
                if let ca = self.upstreamCA {
                    configuration.trustRoots = .certificates(try TLSCertificate.chain(fromPEMFile: FilePath(ca)))
                }
                configuration.kernelTLS = .whenAvailable
                tls.upstream = try TLSContext(configuration: configuration)
                tls.upstreamName = self.upstreamServerName ?? upstream.host
            }
        } catch {
            throw ValidationError("TLS: \(error)")
        }
        return tls
    }

    func run() throws {
        let upstream = try Upstream(self.upstream)
        let tls = try self.makeTLS(upstream: upstream)
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
                    tls.proxy(client, to: server, bound: bound)
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
        if tls.clients != nil || tls.upstream != nil {
            let sides = [tls.clients != nil ? "from the clients" : nil, tls.upstream != nil ? "to the upstream" : nil]
            print(
                "tcp-proxy tls: \(sides.compactMap { $0 }.joined(separator: " and ")); \(TLSOffload.kernelAvailability.reason)"
            )
        }
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

/// The proxy's TLS: a server context for the clients' side, a client context (and the name to
/// check) for the upstream's; `nil` for a plaintext side.
struct ProxyTLS: Sendable {
    var clients: TLSContext?
    var upstream: TLSContext?
    var upstreamName: String?

    /// Starts forwarding between `client` and `server`, on the client's ring, each side as
    /// plaintext or as a `TLSStream` over its channel (the stream's handshake starts at once;
    /// reads and writes wait for it). A stream that cannot be made closes both connections.
    func proxy(_ client: IOConnection, to server: IOConnection, bound: Int) {
        let ring = client.ring
        do throws(TLSError) {
            switch (self.clients, self.upstream) {
            case (nil, nil):
                ProxiedConnection(
                    client: PlainSide(channel: client.channel),
                    server: PlainSide(channel: server.channel),
                    ring: ring,
                    bound: bound
                ).start()
            case (let clients?, nil):
                let tls = TLSSide(try TLSStream(accepting: client, context: clients))
                ProxiedConnection(client: tls, server: PlainSide(channel: server.channel), ring: ring, bound: bound)
                    .start()
            case (nil, let upstream?):
                let tls = TLSSide(try self.stream(to: server, context: upstream))
                ProxiedConnection(client: PlainSide(channel: client.channel), server: tls, ring: ring, bound: bound)
                    .start()
            case (let clients?, let upstream?):
                let clientSide = TLSSide(try TLSStream(accepting: client, context: clients))
                let serverSide: TLSSide
                do throws(TLSError) {
                    serverSide = TLSSide(try self.stream(to: server, context: upstream))
                } catch {
                    clientSide.close(stop: true)
                    throw error
                }
                ProxiedConnection(client: clientSide, server: serverSide, ring: ring, bound: bound).start()
            }
        } catch {
            print("tcp-proxy: TLS: \(error)")
            client.channel.close(flags: .stop)
            server.channel.close(flags: .stop)
        }
    }

    private func stream(to server: IOConnection, context: TLSContext) throws(TLSError) -> TLSStream {
        try TLSStream(clientOn: server.channel, ring: server.ring, context: context, serverName: self.upstreamName)
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

    /// The host to connect to; `nil` for a Unix socket.
    var host: String? {
        if case .host(let host, _) = self { return host }
        return nil
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
