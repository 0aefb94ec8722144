//===----------------------------------------------------------------------===//
// RingIO — benchmark server: an HTTP/1.1 server on RingIO and RingHTTP's public API.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import Logging
import RingHTTP
import RingIO
import RingIOServiceLifecycle
import RingTLS
import ServiceLifecycle
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// How connections are served.
enum API: String, ExpressibleByArgument, CaseIterable {
    /// Completion handlers (where they run: `--queue`).
    case handlers
    /// async/await: a task per connection on the ring that accepted it.
    case async
}

/// Where connection handlers run.
enum Delivery: String, ExpressibleByArgument, CaseIterable {
    /// On the ring that accepted the connection: no queue hop (the fast path).
    case ring
    /// On one serial DispatchQueue per connection: the classic GCD server.
    case dispatch
}

@main
struct HTTPServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-server",
        abstract: "An HTTP/1.1 server on io_uring: keep-alive, pipelining, static files without copies.",
        discussion: """
            Routes: GET / answers "Hello, World!"; POST /echo answers with the request's body; \
            any other GET or HEAD serves a file under --root (128 KiB or more spliced from the \
            page cache to the socket; less, from the read buffers as they are; files kept open \
            between requests: --open-files), with Content-Type by extension, Last-Modified and \
            ETag, 304 for If-None-Match / If-Modified-Since, a single Range as 206 (416 when \
            none of the file is in it; If-Range honoured), index.html for DIR/ and a 301 from \
            DIR to DIR/.

            Bad input gets its status (400, 405, 408, 413, 414, 431, 501) with a short \
            text/plain body saying why, as every 4xx and 5xx does, and never a crash or a hang.

            Connections are served by completion handlers (--api handlers, on the ring or a \
            DispatchQueue per connection: --queue) or by a task per connection on the ring \
            that accepted it (--api async). Prints "http-server listening on HOST:PORT" \
            first, then the engine it runs on and why (io_uring, or epoll where io_uring is \
            refused; RINGIO_BACKEND=io_uring|epoll forces one). SIGINT or SIGTERM: stop accepting, finish what is in flight (at most \
            --drain-seconds), exit 0.

            HTTPS: --tls-certificate and --tls-key (PEM) serve HTTP/1.1 over TLS 1.2 or 1.3 \
            (RingTLS, on OpenSSL), with ALPN "http/1.1", the same answers as in plaintext; each \
            connection is served as --api and --queue say. The kernel \
            encrypts the output after the handshake where it has a TLS ULP (kTLS; a large range \
            is then spliced), else OpenSSL does: the third line printed says which, and why \
            ("http-server tls: …"), and --stats counts the connections on each path.
            """
    )

    @Option(help: "The address to listen on: 127.0.0.1, ::1, 0.0.0.0, :: (IPv6 and IPv4), localhost.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one (the bound port is printed).")
    var port: UInt16 = 8080

    @Option(help: "Rings (threads), each accepting on its own SO_REUSEPORT socket.")
    var rings = RingLoopGroup.onlineCores

    @Option(help: "How connections are served: 'handlers' (completion handlers) or 'async' (async/await on the rings).")
    var api: API = .handlers

    @Option(
        help:
            "With --api handlers, where handlers run: 'ring' (the accepting ring's thread) or 'dispatch' (a DispatchQueue per connection)."
    )
    var queue: Delivery = .ring

    @Option(help: "The directory static files are served from (none: every other path is 404).")
    var root: String?

    @Option(
        help:
            "Files kept open between requests (a descriptor, and a mapping under 128 KiB, per file; revalidated by a stat per request); 0: open and close per request."
    )
    var openFiles = 256

    @Option(help: "The largest request body accepted, in bytes (larger: 413).")
    var maxBody = 1 << 20

    @Option(
        help:
            "Seconds a client may take to send a request's head and body (then 408); over TLS, also to finish its handshake after connecting (then the connection is closed)."
    )
    var headerTimeout = 10

    @Option(help: "Seconds an idle keep-alive connection is kept open.")
    var idleTimeout = 60

    @Option(help: "The most connections at once; more wait in the backlog.")
    var maxConnections = 10_000

    @Flag(help: "Print one line per request: method, path, status, body bytes.")
    var accessLog = false

    @Option(help: "On SIGINT/SIGTERM, how long requests in flight may take to finish.")
    var drainSeconds = 5

    @Flag(help: "Count connections and channel operations and print them as one JSON line on SIGUSR1.")
    var stats = false

    @Option(help: "HTTPS: the certificate chain, PEM, leaf first (with --tls-key).")
    var tlsCertificate: String?

    @Option(help: "HTTPS: the private key of the chain's leaf, PEM.")
    var tlsKey: String?

    @Option(help: "HTTPS: the TLS 1.3 cipher suites, in OpenSSL's syntax (default: OpenSSL's).")
    var tlsCiphersuites: String?

    @Flag(
        inversion: .prefixedNo,
        help: "HTTPS: issue session tickets (resumption); --no-tls-session-tickets: every handshake is a full one."
    )
    var tlsSessionTickets = true

    @Flag(
        inversion: .prefixedNo,
        help: "HTTPS: hand the output's encryption to the kernel after the handshake where it can (kTLS)."
    )
    var tlsKernel = true

    func validate() throws {
        guard self.rings > 0 else { throw ValidationError("--rings must be at least 1") }
        guard self.maxBody >= 0, self.headerTimeout > 0, self.idleTimeout > 0, self.drainSeconds >= 0 else {
            throw ValidationError("--max-body and --drain-seconds must not be negative; timeouts must be positive")
        }
        guard self.maxConnections > 0 else { throw ValidationError("--max-connections must be at least 1") }
        guard self.openFiles >= 0 else { throw ValidationError("--open-files must not be negative") }
        guard (self.tlsCertificate == nil) == (self.tlsKey == nil) else {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        guard self.api == .handlers || self.queue == .ring else {
            throw ValidationError("--queue applies to --api handlers; async connections run on their ring")
        }
        if let root = self.root {
            var info = stat()
            guard stat(root, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw ValidationError("--root \(root) is not a directory")
            }
        }
    }

    func run() throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let group = try RingLoopGroup(count: self.rings)
        let server = try Server(configuration: self, group: group)
        let (listener, service) = try server.listen()
        // Before the server is announced: whoever started it may signal it once it has the port.
        let report = server.stats?.reportOnSIGUSR1(on: group.rings[0]) {
            listener.openConnections()
        } openFiles: {
            server.openFiles.count
        }
        // Announced once the group traps SIGINT and SIGTERM (its services start then).
        let announce = ClosureService {
            print("http-server listening on \(listener.localAddresses.map(\.description).joined(separator: ", "))")
            print("http-server engine: \(group.backend) (\(group.backendReason))")
            if let context = server.tlsContext {
                print("http-server tls: \(Server.describe(context))")
            }
            fflush(nil)  // at once, also into a pipe: whoever started the server reads the port
            try? await gracefulShutdown()
        }
        // Until SIGINT/SIGTERM; then the listener's graceful shutdown: stop accepting, let the
        // writes in flight finish (at most --drain-seconds), close every connection.
        var logger = server.logger
        logger.logLevel = .warning
        let services = ServiceGroup(
            services: [announce, service],
            gracefulShutdownSignals: [.sigint, .sigterm],
            logger: logger
        )
        try Self.runToCompletion(services)
        server.openFiles.closeAll()
        report?.cancel()
        group.shutdown()
    }
    /// Runs `services` until they end, the main thread waiting: a synchronous `main`, because
    /// an async one ends in dispatch_main's `sigsuspend` loop on the main thread, where
    /// valgrind 3.19 (the instruction check's) crashes.
    private static func runToCompletion(_ services: ServiceGroup) throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Task {
            do {
                try await services.run()
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            finished.signal()
        }
        finished.wait()
        try outcome.withLock { $0 }?.get()
    }
}

/// The running server: its listener, and what every connection shares.
final class Server: Sendable {
    let configuration: HTTPServer
    /// `--access-log`, read once: the option's getter costs hundreds of instructions, too much
    /// to pay per request.
    let accessLog: Bool
    /// `--header-timeout`, `--idle-timeout`, `--max-body` and `--queue`, read once for the same
    /// reason: each getter instantiates generic metadata (a lookup under a lock), which cost
    /// about 1,700 instructions per connection.
    let headerTimeout: Int
    let idleTimeout: Int
    let maxBody: Int
    let queue: Delivery
    let logger = Logger(label: "http-server")
    let writer = HTTPResponseWriter(serverName: "RingIO")
    /// The root directory, resolved (symlinks followed), to check served paths against.
    let root: String?
    /// `--stats`: the counters; `nil` without the flag.
    let stats: ServerStats?
    /// `--open-files`: the files kept open between requests.
    let openFiles: OpenFiles
    /// `--tls-certificate`: the HTTPS context every connection shares; `nil` for plaintext.
    let tlsContext: TLSContext?
    /// The ticks of the TLS connections (`--api handlers`), one ticker per ring.
    private let tickers: [RingTicker]
    private let group: RingLoopGroup

    init(configuration: HTTPServer, group: RingLoopGroup) throws {
        self.configuration = configuration
        self.accessLog = configuration.accessLog
        self.headerTimeout = configuration.headerTimeout
        self.idleTimeout = configuration.idleTimeout
        self.maxBody = configuration.maxBody
        self.queue = configuration.queue
        self.group = group
        self.stats = configuration.stats ? ServerStats(tls: configuration.tlsCertificate != nil) : nil
        self.tlsContext = try Self.makeTLSContext(configuration)
        self.tickers = group.rings.map { RingTicker(ring: $0) }
        self.openFiles = OpenFiles(capacity: configuration.openFiles)
        if let root = configuration.root {
            guard let resolved = realpath(root, nil) else {
                throw ValidationError("--root \(root) cannot be resolved")
            }
            self.root = String(cString: resolved)
            free(resolved)
        } else {
            self.root = nil
        }
    }

    /// Listens: a socket per ring (`SO_REUSEPORT`), each connection served on the ring that
    /// accepted it; the listener counts the connections (`--max-connections`) and closes their
    /// sockets. The service serves until the service group shuts down, then shuts the
    /// listener down gracefully (`--drain-seconds`).
    func listen() throws -> (
        listener: (openConnections: @Sendable () -> Int, localAddresses: [SocketAddress]), service: IOListenerService
    ) {
        let configuration = self.configuration
        var options = IOListener.Options()
        options.reusePort = true
        options.maxConnections = configuration.maxConnections
        if let context = self.tlsContext, configuration.api == .async {
            return try self.listenForHTTPS(options: options, context: context)
        }
        switch configuration.api {
        case .handlers:
            // queue nil: the handler runs on the ring that accepted the connection.
            let acceptor = try IOAcceptor(
                host: configuration.host,
                port: configuration.port,
                options: options,
                group: self.group,
                queue: nil
            ) { event in
                switch event {
                case .accepted(let connection): self.accepted(connection)
                case .failed(let error): self.logger.warning("accept failed: \(error) (retrying)")
                }
            }
            return (
                ({ acceptor.openConnections }, acceptor.localAddresses),
                IOListenerService(acceptor, gracePeriod: .seconds(configuration.drainSeconds))
            )
        case .async:
            let listener = try IOListener(
                host: configuration.host,
                port: configuration.port,
                options: options,
                group: self.group
            ) { error in
                self.logger.warning("accept failed: \(error) (retrying)")
            }
            // The accepting loop runs on a ring too: each connection's task goes to its own ring.
            let service = IOListenerService(
                listener,
                gracePeriod: .seconds(configuration.drainSeconds),
                executor: self.group.rings[0].taskExecutor
            ) { connection in
                var served = AsyncHTTPConnection(connection, server: self)
                await served.run()
            }
            return (({ listener.openConnections }, listener.localAddresses), service)
        }
    }

    /// HTTPS with `--api async`: a task per connection on the ring that accepted it
    /// (``TLSHTTPConnection``).
    private func listenForHTTPS(
        options: IOListener.Options,
        context: TLSContext
    ) throws -> (
        listener: (openConnections: @Sendable () -> Int, localAddresses: [SocketAddress]), service: IOListenerService
    ) {
        let configuration = self.configuration
        let listener = try IOListener(
            host: configuration.host,
            port: configuration.port,
            options: options,
            group: self.group
        ) { error in
            self.logger.warning("accept failed: \(error) (retrying)")
        }
        let service = IOListenerService(
            listener,
            gracePeriod: .seconds(configuration.drainSeconds),
            executor: self.group.rings[0].taskExecutor
        ) { connection in
            var served = TLSHTTPConnection(connection, server: self, context: context)
            await served.run()
        }
        return (({ listener.openConnections }, listener.localAddresses), service)
    }

    /// The HTTPS context of `--tls-certificate` and `--tls-key`: ALPN "http/1.1", the
    /// handshake within `--header-timeout`; `nil` without them. With `--api handlers` the
    /// context has no handshake timeout: ``HTTPConnection``'s one-second ticks enforce it (a
    /// timer per connection fewer).
    private static func makeTLSContext(_ configuration: HTTPServer) throws -> TLSContext? {
        guard let certificate = configuration.tlsCertificate, let key = configuration.tlsKey else { return nil }
        do throws(TLSError) {
            var tls = try TLSConfiguration.makeServerConfiguration(
                certificateChainFile: FilePath(certificate),
                privateKeyFile: FilePath(key)
            )
            tls.applicationProtocols = ["http/1.1"]
            tls.cipherSuites = configuration.tlsCiphersuites
            tls.sessionResumption = configuration.tlsSessionTickets
            tls.handshakeTimeout = configuration.api == .async ? .seconds(configuration.headerTimeout) : nil
            tls.kernelTLS = configuration.tlsKernel ? .whenAvailable : .disabled
            // OpenSSL's record buffers stay while a connection is busy, and go back after a
            // second without a byte from its client (HTTPConnection.tick).
            tls.recordBuffers = .keptUntilReleased
            return try TLSContext(configuration: tls)
        } catch {
            throw ValidationError("--tls-certificate/--tls-key: \(error)")
        }
    }

    /// The TLS line printed at start: the protocols, and who encrypts records (the kernel,
    /// or OpenSSL and why).
    static func describe(_ context: TLSContext) -> String {
        let configuration = context.configuration
        let tickets = configuration.sessionResumption ? "session tickets" : "no session tickets"
        let kernel: String
        if configuration.kernelTLS == .disabled {
            kernel = "kTLS off (--no-tls-kernel): records encrypted in user space"
        } else {
            let availability = TLSOffload.kernelAvailability
            kernel =
                availability.hasTLSModule && !availability.transmitCiphers.isEmpty
                ? "kTLS: \(availability.reason)" : "kTLS unavailable, user-space fallback: \(availability.reason)"
        }
        return "ALPN http/1.1, TLS 1.2-1.3, \(tickets); \(kernel)"
    }

    /// `--api handlers`: serves a connection with completion handlers, on its ring or on a
    /// DispatchQueue of its own (`--queue`).
    private func accepted(_ connection: IOConnection) {
        let queue: any IOQueue =
            self.queue == .ring ? connection.ring : DispatchQueue(label: "http-server.connection")
        self.stats?.connectionAccepted()
        if let context = self.tlsContext {
            self.acceptedOverTLS(connection, queue: queue, context: context)
        } else {
            HTTPConnection(
                connection,
                transport: ChannelTransport(channel: connection.channel),
                queue: queue,
                server: self
            )
            .start()
        }
    }

    /// HTTPS with `--api handlers`: a TLS stream over the connection, served by
    /// ``HTTPConnection`` over a ``TLSTransport``.
    private func acceptedOverTLS(_ connection: IOConnection, queue: any IOQueue, context: TLSContext) {
        do throws(TLSError) {
            let tls = try TLSStream(accepting: connection, context: context)
            let ring = connection.ring
            // The acceptor accepts on the group's rings only.
            let ticker = self.tickers.first { $0.ring === ring }!
            let transport = TLSTransport(tls, queue: queue, ticker: ticker, stats: self.stats)
            HTTPConnection(connection, transport: transport, queue: queue, server: self).start()
        } catch {
            self.logger.warning("TLS: \(error)")
            self.stats?.tlsFailed()
            connection.channel.close(flags: .stop)
        }
    }
}
