//===----------------------------------------------------------------------===//
// RingIO — benchmark server: an echo server on RingIO's public API.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import Logging
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
struct EchoServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-server",
        abstract: "Echoes every byte back to its sender, zero-copy, on io_uring.",
        discussion: """
            Each connection is a stream IOChannel: what it reads (the kernel's receive \
            buffers, as rope regions) is written back as it came, with vectored writes — by \
            completion handlers (--api handlers, on the ring or on a DispatchQueue per \
            connection: --queue), or by a task per connection on the ring that accepted it \
            (--api async).

            On start the server prints "echo-server listening on HOST:PORT", then the \
            engine it runs on and why (io_uring, or epoll where io_uring is refused; \
            RINGIO_BACKEND=io_uring|epoll forces one). SIGINT or \
            SIGTERM: stop accepting, let the writes in flight finish (at most \
            --drain-seconds), close every connection, exit 0.

            TLS: --tls-certificate and --tls-key (PEM) echo over TLS 1.2 or 1.3 (RingTLS, on \
            OpenSSL): each connection is a TLSStream whose plaintext is written back, by \
            handlers or by a task as above. The third line printed says whether the kernel \
            encrypts the output (kTLS) or OpenSSL does, and why ("echo-server tls: …").
            """
    )

    @Option(help: "The address to listen on: 127.0.0.1, ::1, 0.0.0.0, :: (IPv6 and IPv4), localhost.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one (the bound port is printed).")
    var port: UInt16 = 7000

    @Option(help: "Rings (threads), each accepting on its own SO_REUSEPORT socket.")
    var rings = RingLoopGroup.onlineCores

    @Option(help: "How connections are served: 'handlers' (completion handlers) or 'async' (async/await on the rings).")
    var api: API = .handlers

    @Option(
        help:
            "With --api handlers, where handlers run: 'ring' (the accepting ring's thread) or 'dispatch' (a serial DispatchQueue per connection)."
    )
    var queue: Delivery = .ring

    @Option(help: "The channels' low water mark in bytes (deliver as soon as this much has arrived).")
    var lowWater = 1

    @Option(help: "A delivery interval in milliseconds on every connection's channel, its reads and writes (0: none).")
    var interval = 0

    @Flag(help: "With --interval: deliver at every tick, even below the low water mark.")
    var strict = false

    @Option(help: "Close connections that send nothing for this many seconds (0: never).")
    var idleTimeout = 0

    @Option(help: "The most connections at once; more wait in the backlog.")
    var maxConnections = 10_000

    @Option(help: "On SIGINT/SIGTERM, how long writes in flight may take to finish.")
    var drainSeconds = 5

    @Flag(
        help: """
            Count connections and channel operations and print them as one JSON line on SIGUSR1; \
            on exit, print each ring's counters (wake-ups, fallback receives, the longest turn…).
            """
    )
    var stats = false

    @Option(help: "TLS: the certificate chain, PEM, leaf first (with --tls-key).")
    var tlsCertificate: String?

    @Option(help: "TLS: the private key of the chain's leaf, PEM.")
    var tlsKey: String?

    func validate() throws {
        guard self.rings > 0 else { throw ValidationError("--rings must be at least 1") }
        guard self.lowWater >= 0, self.interval >= 0, self.idleTimeout >= 0, self.drainSeconds >= 0 else {
            throw ValidationError("--low-water, --interval, --idle-timeout and --drain-seconds must not be negative")
        }
        guard self.maxConnections > 0 else { throw ValidationError("--max-connections must be at least 1") }
        guard self.interval == 0 || self.idleTimeout == 0 else {
            throw ValidationError("--interval and --idle-timeout both use the channels' interval; pick one")
        }
        guard self.api == .handlers || self.queue == .ring else {
            throw ValidationError("--queue applies to --api handlers; async connections run on their ring")
        }
        guard (self.tlsCertificate == nil) == (self.tlsKey == nil) else {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        guard self.tlsCertificate == nil || (self.lowWater == 1 && self.interval == 0 && self.idleTimeout == 0) else {
            throw ValidationError("--low-water, --interval and --idle-timeout are the channel's: not with TLS")
        }
    }

    /// The TLS context of `--tls-certificate` and `--tls-key`; `nil` without them.
    private func makeTLSContext() throws -> TLSContext? {
        guard let certificate = self.tlsCertificate, let key = self.tlsKey else { return nil }
        do throws(TLSError) {
            var configuration = try TLSConfiguration.makeServerConfiguration(
                certificateChainFile: FilePath(certificate),
                privateKeyFile: FilePath(key)
            )
            configuration.kernelTLS = .whenAvailable
            return try TLSContext(configuration: configuration)
        } catch {
            throw ValidationError("--tls-certificate/--tls-key: \(error)")
        }
    }

    func run() throws {
        let group = try RingLoopGroup(count: self.rings)
        // --stats: counters, and a SIGUSR1 source that prints them (set up before the server
        // is announced: whoever started it may signal it as soon as it reads the port).
        let tlsContext = try self.makeTLSContext()
        let stats = self.stats ? ServerStats(tls: tlsContext != nil) : nil
        var options = IOListener.Options()
        options.reusePort = true  // a socket per ring: each connection lives on the ring that accepted it
        options.maxConnections = self.maxConnections
        let listener: (openConnections: @Sendable () -> Int, localAddresses: [SocketAddress])
        let service: IOListenerService
        switch self.api {
        case .handlers:
            let acceptor = try IOAcceptor(host: self.host, port: self.port, options: options, group: group, queue: nil)
            {
                event in
                switch event {
                case .accepted(let connection):
                    // nil above: this runs on the ring that accepted the connection.
                    let queue: any IOQueue =
                        self.queue == .ring ? connection.ring : DispatchQueue(label: "echo-server.connection")
                    stats?.connectionAccepted()
                    connection.whenClosed { stats?.connectionClosed() }
                    if let tlsContext {
                        Self.startTLS(connection, queue: queue, context: tlsContext, stats: stats)
                    } else {
                        Connection(connection.channel, queue: queue, configuration: self, stats: stats).start()
                    }
                case .failed(let error):
                    print("echo-server: accept failed: \(error) (retrying)")
                }
            }
            listener = ({ acceptor.openConnections }, acceptor.localAddresses)
            service = IOListenerService(acceptor, gracePeriod: .seconds(self.drainSeconds))
        case .async:
            let asyncListener = try IOListener(host: self.host, port: self.port, options: options, group: group) {
                error in
                print("echo-server: accept failed: \(error) (retrying)")
            }
            listener = ({ asyncListener.openConnections }, asyncListener.localAddresses)
            // The accepting loop runs on a ring too: each connection's task goes to its own ring.
            service = IOListenerService(
                asyncListener,
                gracePeriod: .seconds(self.drainSeconds),
                executor: group.rings[0].taskExecutor
            ) { connection in
                if let tlsContext {
                    await echoTLS(connection, context: tlsContext, stats: stats)
                } else {
                    await echo(connection, configuration: self, stats: stats)
                }
            }
        }
        let report = stats?.reportOnSIGUSR1(on: group.rings[0]) { listener.openConnections() }
        // Announced once the group traps SIGINT and SIGTERM (its services start then):
        // whoever started the server may signal it as soon as it reads the port.
        let announce = ClosureService {
            print("echo-server listening on \(listener.localAddresses.map(\.description).joined(separator: ", "))")
            print("echo-server engine: \(group.backend) (\(group.backendReason))")
            if tlsContext != nil {
                let availability = TLSOffload.kernelAvailability
                let kernel = availability.hasTLSModule && !availability.transmitCiphers.isEmpty
                print(
                    "echo-server tls: TLS 1.2-1.3; \(kernel ? "kTLS" : "kTLS unavailable, user-space fallback"): \(availability.reason)"
                )
            }
            fflush(nil)  // at once, also into a pipe
            try? await gracefulShutdown()
        }
        // Until SIGINT/SIGTERM; then the listener's graceful shutdown: stop accepting, let the
        // writes in flight finish (at most --drain-seconds), close every connection.
        var logger = Logger(label: "echo-server") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let services = ServiceGroup(
            services: [announce, service],
            gracefulShutdownSignals: [.sigint, .sigterm],
            logger: logger
        )
        try Self.runToCompletion(services)
        report?.cancel()
        if self.stats {
            for (index, ring) in group.rings.enumerated() {
                print("echo-server: ring \(index): \(ring.counters)")
            }
        }
        group.shutdown()
    }
    /// `--api handlers` with TLS: a stream over the connection, echoed by ``TLSEchoConnection``.
    private static func startTLS(
        _ connection: IOConnection,
        queue: any IOQueue,
        context: TLSContext,
        stats: ServerStats?
    ) {
        do throws(TLSError) {
            let tls = try TLSStream(accepting: connection, context: context)
            TLSEchoConnection(tls, queue: queue, stats: stats).start()
        } catch {
            print("echo-server: TLS: \(error)")
            stats?.tlsFailed()
            connection.channel.close(flags: .stop)
        }
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

/// One connection served by completion handlers: a stream channel that writes back what it
/// reads. The handlers hold it; it is gone once the channel's last operation has finished.
final class Connection: Sendable {
    private let channel: IOChannel
    private let queue: any IOQueue
    private let configuration: EchoServer
    private let stats: ServerStats?
    /// Data arrived since the last idle check.
    private let active = Atomic<Bool>(true)

    init(_ channel: IOChannel, queue: any IOQueue, configuration: EchoServer, stats: ServerStats?) {
        self.channel = channel
        self.queue = queue
        self.configuration = configuration
        self.stats = stats
    }

    func start() {
        self.channel.setLimit(lowWater: self.configuration.lowWater)
        if self.configuration.idleTimeout > 0 {
            self.channel.setInterval(.seconds(self.configuration.idleTimeout), flags: .strict)
        } else if self.configuration.interval > 0 {
            self.channel.setInterval(
                .milliseconds(self.configuration.interval),
                flags: self.configuration.strict ? .strict : []
            )
        }
        self.stats?.readStarted()
        self.channel.read(offset: 0, length: .max, queue: self.queue) { done, data, error in
            if let data {
                if data.isEmpty && !done {
                    // A strict tick: close when nothing arrived since the last one (idle).
                    if self.configuration.idleTimeout > 0 && !self.active.exchange(false, ordering: .relaxed) {
                        self.channel.close(flags: .stop)
                    }
                } else if !data.isEmpty {
                    self.active.store(true, ordering: .relaxed)
                    self.echo(data)
                }
            }
            if done {
                self.stats?.readFinished()
                if let error, error != .canceled, error != .connectionReset {
                    print("echo-server: read failed: \(error)")
                }
                self.channel.close()
            }
        }
    }

    private func echo(_ data: ByteRope) {
        self.stats?.writeStarted()
        self.channel.write(offset: 0, data: data, queue: self.queue) { done, _, error in
            guard done else { return }
            self.stats?.writeFinished()
            if error != nil { self.channel.close(flags: .stop) }
        }
    }
}
