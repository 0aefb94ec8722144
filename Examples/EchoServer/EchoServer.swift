//===----------------------------------------------------------------------===//
// RingIO — example: an echo server on RingIO's public API.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import RingIO
import Synchronization

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

            On start the server prints "echo-server listening on HOST:PORT". SIGINT or \
            SIGTERM: stop accepting, let the writes in flight finish (at most \
            --drain-seconds), close every connection, exit 0.
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
    }

    func run() throws {
        let group = try RingLoopGroup(count: self.rings)
        // --stats: counters, and a SIGUSR1 source that prints them (set up before the server
        // is announced: whoever started it may signal it as soon as it reads the port).
        let stats = self.stats ? ServerStats() : nil
        let report: IOSource?
        switch self.api {
        case .handlers:
            let server = Server(configuration: self, group: group, stats: stats)
            try server.start()
            report = stats?.reportOnSIGUSR1(on: group.rings[0]) { server.openConnections }
            Self.announce(server.addresses)
            server.waitUntilStopped()
        case .async:
            let server = try AsyncServer(configuration: self, group: group, stats: stats)
            report = stats?.reportOnSIGUSR1(on: group.rings[0]) { server.openConnections }
            Self.announce(server.addresses)
            server.runUntilStopped()
        }
        report?.cancel()
        if self.stats {
            for (index, ring) in group.rings.enumerated() {
                print("echo-server: ring \(index): \(ring.counters)")
            }
        }
        group.shutdown()
    }

    private static func announce(_ addresses: [String]) {
        print("echo-server listening on \(addresses.joined(separator: ", "))")
        fflush(nil)  // at once, also into a pipe: whoever started the server reads the port
    }
}

/// The running server: listeners, live connections, shutdown.
final class Server: Sendable {
    private let configuration: EchoServer
    private let group: RingLoopGroup
    /// `--stats`: the counters; `nil` without the flag.
    private let stats: ServerStats?
    private let listeners = Mutex<[IOListener]>([])
    private let connections = Mutex<[ObjectIdentifier: Connection]>([:])
    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let signalSources = Mutex<[IOSource]>([])

    init(configuration: EchoServer, group: RingLoopGroup, stats: ServerStats?) {
        self.configuration = configuration
        self.group = group
        self.stats = stats
    }

    var addresses: [String] {
        self.listeners.withLock { $0.flatMap(\.localAddresses) }
    }

    /// Accepted connections not yet closed, as the listeners count them.
    var openConnections: Int {
        self.listeners.withLock { $0.reduce(0) { $0 + $1.openConnections } }
    }

    func start() throws {
        var options = IOListener.Options()
        options.reusePort = true
        // Each listener caps its own share of the connections.
        options.maxConnections = max(1, self.configuration.maxConnections / self.group.rings.count)
        var port = self.configuration.port
        var listeners: [IOListener] = []
        for ring in self.group.rings {
            // One listener per ring, all on one port: the kernel spreads connections over them,
            // and each connection lives on the ring that accepted it.
            let listenerBox = ListenerBox()
            let listener = try IOListener(
                host: self.configuration.host,
                port: port,
                options: options,
                ring: ring,
                queue: ring
            ) { event in
                switch event {
                case .accepted(let fd):
                    self.accepted(fd, on: ring, listener: listenerBox)
                case .failed(let error):
                    print("echo-server: accept failed: \(error) (retrying)")
                }
            }
            listenerBox.listener.withLock { $0 = listener }
            port = listener.port
            listeners.append(listener)
        }
        self.listeners.withLock { $0 = listeners }
        for signal in [SIGINT, SIGTERM] {
            let source = IOSource.signal(signal, queue: self.group.rings[0])
            source.setEventHandler { self.stop() }
            source.resume()
            self.signalSources.withLock { $0.append(source) }
        }
    }

    private func accepted(_ fd: CInt, on ring: RingLoop, listener: ListenerBox) {
        guard !self.stopping.load(ordering: .acquiring) else {
            close(fd)
            listener.connectionClosed()
            return
        }
        let queue: any IOQueue =
            self.configuration.queue == .ring ? ring : DispatchQueue(label: "echo-server.connection")
        self.stats?.connectionAccepted()
        let connection = Connection(
            fd: fd,
            ring: ring,
            queue: queue,
            configuration: self.configuration,
            stats: self.stats
        ) { connection in
            self.connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
            self.stats?.connectionClosed()
            listener.connectionClosed()
        }
        self.connections.withLock { $0[ObjectIdentifier(connection)] = connection }
        connection.start()
    }

    /// SIGINT/SIGTERM: stop accepting, let writes drain (bounded), close everything.
    private func stop() {
        guard !self.stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for listener in self.listeners.withLock({ $0 }) { listener.close() }
        DispatchQueue.global().async {
            let deadline = ContinuousClock.now + .seconds(self.configuration.drainSeconds)
            while ContinuousClock.now < deadline,
                self.connections.withLock({ $0.values.contains { $0.hasWritesInFlight } })
            {
                usleep(5_000)
            }
            for connection in self.connections.withLock({ Array($0.values) }) { connection.stop() }
            let closeDeadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < closeDeadline, !self.connections.withLock({ $0.isEmpty }) {
                usleep(5_000)
            }
            for source in self.signalSources.withLock({ $0 }) { source.cancel() }
            self.stopped.signal()
        }
    }

    func waitUntilStopped() {
        self.stopped.wait()
    }
}

/// The listener, set after it is made (its handler needs it to report closed connections).
final class ListenerBox: Sendable {
    let listener = Mutex<IOListener?>(nil)

    func connectionClosed() {
        self.listener.withLock { $0 }?.connectionClosed()
    }
}

/// One connection: a stream channel that writes back what it reads.
final class Connection: Sendable {
    private let channel: IOChannel
    private let queue: any IOQueue
    private let configuration: EchoServer
    private let stats: ServerStats?
    private let writesInFlight = Atomic<Int>(0)
    /// Data arrived since the last idle check.
    private let active = Atomic<Bool>(true)

    init(
        fd: CInt,
        ring: RingLoop,
        queue: any IOQueue,
        configuration: EchoServer,
        stats: ServerStats?,
        onClose: @escaping @Sendable (Connection) -> Void
    ) {
        self.queue = queue
        self.configuration = configuration
        self.stats = stats
        let box = ConnectionBox()
        self.channel = IOChannel(kind: .stream, fileDescriptor: fd, queue: queue, ring: ring) { _ in
            close(fd)
            if let connection = box.connection.withLock({ $0 }) { onClose(connection) }
            box.connection.withLock { $0 = nil }
        }
        box.connection.withLock { $0 = self }
    }

    var hasWritesInFlight: Bool { self.writesInFlight.load(ordering: .acquiring) > 0 }

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
        self.writesInFlight.add(1, ordering: .relaxed)
        self.stats?.writeStarted()
        self.channel.write(offset: 0, data: data, queue: self.queue) { done, _, error in
            guard done else { return }
            self.stats?.writeFinished()
            self.writesInFlight.subtract(1, ordering: .relaxed)
            if error != nil { self.channel.close(flags: .stop) }
        }
    }

    /// Ends the connection: what is still queued is cancelled.
    func stop() {
        self.channel.close(flags: .stop)
    }
}

/// The connection, for its channel's cleanup handler (made before the connection is).
final class ConnectionBox: Sendable {
    let connection = Mutex<Connection?>(nil)
}
