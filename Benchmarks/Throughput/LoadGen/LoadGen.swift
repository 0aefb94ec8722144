//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the load generator's command line and measurement.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Foundation  // JSONEncoder, for the report at the end only
import ThroughputSupport

@main
struct LoadGen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loadgen",
        abstract: "Drives an echo or HTTP server with N connections and checks every byte it sends back.",
        discussion: """
            One thread, nonblocking sockets, epoll. The load runs for --warmup seconds, then for \
            --duration seconds that are measured: operations, bytes, latency (p50, p99, p99.9, max) and \
            the CPU time of the --server-pid processes and of the load generator. The result is one JSON \
            object (LoadReport) on standard output; messages go to standard error.

            pingpong: --depth messages of --size bytes in flight per connection (1: ping-pong).
            stream:   --size-byte writes while less than --stream-window bytes are unechoed.
            http:     --depth GET requests for --http-path in flight per connection (1: keep-alive); \
            every response must be 200 with a Content-Length, and its body --expect-body or \
            --expect-body-pattern when given (length and every byte).
            idle:     open --connections connections, one --size-byte round trip on each, wait 0.5 s, \
            and report the servers' resident memory before and after.
            udp:      --connections UDP flows (a connected socket each), --depth datagrams of --size \
            bytes (16 or more) outstanding per flow, a new one sent per echo. A datagram not echoed \
            within 5 s is lost: counted, replaced, and the run fails at the end (after waiting \
            for the outstanding ones).

            Any wrong byte, malformed response, early close, reset, failed connect, lost datagram, \
            or a connection without progress for 5 s: a message naming the connection and the stream offset on \
            standard error, no JSON, exit status 1.
            """
    )

    @Option(help: "The server's numeric address (IPv4 or IPv6; localhost means 127.0.0.1).")
    var host = "127.0.0.1"

    @Option(help: "The server's port.")
    var port: UInt16

    @Option(help: "The workload (see above).")
    var mode: LoadMode

    @Option(help: "Connections.")
    var connections = 64

    @Option(help: "Bytes per echo message (pingpong, idle), per write (stream) or per datagram (udp); ignored by http.")
    var size = 64

    @Option(help: "Messages or requests in flight per connection (pingpong, http), datagrams per flow (udp).")
    var depth = 1

    @Option(help: "Seconds of load before the measured window.")
    var warmup: Double = 1

    @Option(help: "Seconds of measured load.")
    var duration: Double = 5

    @Option(name: .customLong("server-pid"), help: "A server process whose CPU time and memory to read (repeatable).")
    var serverPIDs: [Int32] = []

    @Option(help: "The path the http workload requests.")
    var httpPath = "/"

    @Option(help: "The body every HTTP response must have (default: any).")
    var expectBody: String?

    @Option(
        help: """
            The body every HTTP response must have: this many bytes of the static-file pattern \
            (each 8-byte little-endian word its own offset XOR a constant, as throughput writes its files).
            """
    )
    var expectBodyPattern: Int?

    @Option(help: "Streaming: the most bytes sent and not yet echoed, per connection.")
    var streamWindow = 256 * 1024

    func validate() throws {
        guard self.port > 0 else { throw ValidationError("--port must not be 0") }
        guard SocketAddress(host: self.host, port: self.port) != nil else {
            throw ValidationError("--host must be a numeric IPv4 or IPv6 address")
        }
        guard self.connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        guard self.mode == .http || self.size >= 1 else { throw ValidationError("--size must be at least 1") }
        guard (1...4_096).contains(self.depth) else { throw ValidationError("--depth must be in 1...4096") }
        guard self.warmup >= 0, self.duration > 0 else {
            throw ValidationError("--warmup must not be negative, --duration must be positive")
        }
        if let expectBodyPattern {
            guard expectBodyPattern >= 0 else { throw ValidationError("--expect-body-pattern must not be negative") }
            guard self.expectBody == nil else {
                throw ValidationError("--expect-body and --expect-body-pattern are exclusive")
            }
        }
        if self.mode == .udp {
            guard (DatagramEngine.headerSize + 4...65_507).contains(self.size) else {
                throw ValidationError("--size must be in 16...65507 with --mode udp")
            }
            guard self.depth <= 64 else { throw ValidationError("--depth must be at most 64 with --mode udp") }
        }
        guard self.streamWindow >= 1 else { throw ValidationError("--stream-window must be at least 1") }
        guard self.httpPath.hasPrefix("/"), !self.httpPath.contains(where: { $0 == " " || $0.isNewline }) else {
            throw ValidationError("--http-path must start with / and hold no spaces or line breaks")
        }
    }

    func run() throws {
        let report: LoadReport
        do {
            report = try self.measure()
        } catch {
            Syscalls.printError("loadgen: \(error)")
            throw ExitCode.failure
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
        Syscalls.printError("loadgen: \(Self.summary(of: report))")
    }

    // MARK: Measurement

    private var plan: LoadPlan {
        let address = SocketAddress(host: self.host, port: self.port)!
        let request = "GET \(self.httpPath) HTTP/1.1\r\nHost: \(address.hostHeader)\r\n\r\n"
        return LoadPlan(
            mode: self.mode,
            address: address,
            connections: self.connections,
            size: self.size,
            depth: self.depth,
            streamWindow: self.streamWindow,
            request: Array(request.utf8),
            expectedBody: self.expectBody.map { Array($0.utf8) }
                ?? self.expectBodyPattern.map { StaticFilePattern.bytes(count: $0) }
        )
    }

    /// The readings taken at each end of the measured window.
    private struct Snapshot {
        var clock: UInt64
        var ownCPU: Double
        var serverCPU: Double?

        init(servers: [Int32]) {
            self.serverCPU = servers.isEmpty ? nil : ProcessStats.cpuSeconds(servers)
            self.ownCPU = ownCPUSeconds()
            self.clock = monotonicNanoseconds()
        }
    }

    private func measure() throws(LoadFailure) -> LoadReport {
        Syscalls.ignoreBrokenPipe()
        let limit = Syscalls.raiseOpenFileLimit()
        guard self.connections + 16 <= limit else {
            throw LoadFailure(
                "\(self.connections) connections need more descriptors than RLIMIT_NOFILE allows (\(limit))"
            )
        }
        if self.mode == .udp {
            return try self.measureDatagrams()
        }
        var engine = try LoadEngine(plan: self.plan)
        if self.mode == .idle {
            return try self.measureIdle(&engine)
        }
        try engine.openAll()
        try engine.startLoad()
        try engine.run(until: monotonicNanoseconds() + Self.nanoseconds(self.warmup))
        let start = Snapshot(servers: self.serverPIDs)
        engine.recording = true
        try engine.run(until: start.clock + Self.nanoseconds(self.duration))
        engine.recording = false
        let end = Snapshot(servers: self.serverPIDs)
        return LoadReport(
            mode: self.mode.rawValue,
            connections: self.connections,
            messageSize: self.size,
            depth: self.depth,
            seconds: Double(end.clock - start.clock) / 1e9,
            operations: engine.operations,
            bytes: engine.bytes,
            latency: self.mode == .stream ? nil : engine.histogram.summary(),
            serverCPUSeconds: end.serverCPU.map { $0 - start.serverCPU! },
            clientCPUSeconds: end.ownCPU - start.ownCPU
        )
    }

    /// UDP: warm-up, the measured window, then the outstanding datagrams drained; any lost
    /// one fails.
    private func measureDatagrams() throws(LoadFailure) -> LoadReport {
        var engine = try DatagramEngine(plan: self.plan)
        try engine.openAll()
        try engine.startLoad()
        try engine.run(until: monotonicNanoseconds() + Self.nanoseconds(self.warmup))
        let start = Snapshot(servers: self.serverPIDs)
        engine.recording = true
        try engine.run(until: start.clock + Self.nanoseconds(self.duration))
        engine.recording = false
        let end = Snapshot(servers: self.serverPIDs)
        try engine.drain()
        guard engine.lost == 0 else {
            throw LoadFailure(
                "\(engine.lost) datagrams lost (not echoed within 5 s; \(engine.late) of them came back later), "
                    + "\(engine.operations) echoed in the measured window"
            )
        }
        return LoadReport(
            mode: self.mode.rawValue,
            connections: self.connections,
            messageSize: self.size,
            depth: self.depth,
            seconds: Double(end.clock - start.clock) / 1e9,
            operations: engine.operations,
            bytes: engine.bytes,
            latency: engine.histogram.summary(),
            serverCPUSeconds: end.serverCPU.map { $0 - start.serverCPU! },
            clientCPUSeconds: end.ownCPU - start.ownCPU,
            datagramsLost: engine.lost
        )
    }

    /// Idle: the servers' memory, then every connection opened with one round trip, 0.5 s to
    /// settle (any byte or close in it fails), and the memory again. The window is the opening.
    private func measureIdle(_ engine: inout LoadEngine) throws(LoadFailure) -> LoadReport {
        let before = self.serverResident()
        let start = Snapshot(servers: self.serverPIDs)
        try engine.openAll()
        let end = Snapshot(servers: self.serverPIDs)
        try engine.run(until: monotonicNanoseconds() + 500_000_000)
        let after = self.serverResident()
        return LoadReport(
            mode: self.mode.rawValue,
            connections: self.connections,
            messageSize: self.size,
            depth: 1,
            seconds: Double(end.clock - start.clock) / 1e9,
            operations: self.connections,
            bytes: self.connections * self.size,
            latency: nil,
            serverCPUSeconds: end.serverCPU.map { $0 - start.serverCPU! },
            clientCPUSeconds: end.ownCPU - start.ownCPU,
            serverResidentBefore: before,
            serverResidentAfter: after
        )
    }

    /// The sum of the servers' VmRSS, or `nil` without --server-pid (or when one is gone).
    private func serverResident() -> Int? {
        guard !self.serverPIDs.isEmpty else { return nil }
        var total = 0
        for pid in self.serverPIDs {
            guard let bytes = ProcessStats.residentBytes(pid) else { return nil }
            total += bytes
        }
        return total
    }

    private static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64((seconds * 1e9).rounded())
    }

    private static func fixed(_ value: Double, _ digits: Int = 1) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// One line for people: the rates, the latency, CPU per operation.
    private static func summary(of report: LoadReport) -> String {
        var parts = [
            "\(report.mode) \(report.connections) connections, size \(report.messageSize), depth \(report.depth):"
        ]
        let seconds = max(report.seconds, 1e-9)
        parts.append("\(Self.fixed(Double(report.operations) / seconds, 0)) ops/s")
        parts.append("\(Self.fixed(Double(report.bytes) / seconds / 1e6)) MB/s")
        if let latency = report.latency {
            let percentiles = [
                ("p50", latency.p50), ("p99", latency.p99), ("p99.9", latency.p999), ("max", latency.max),
            ]
            let known = percentiles.compactMap { name, value in value.map { "\(name) \(Self.fixed($0))" } }
            parts.append("latency µs " + known.joined(separator: " "))
        }
        if report.operations > 0 {
            if let server = report.serverCPUSeconds {
                parts.append("server CPU \(Self.fixed(server * 1e6 / Double(report.operations), 2)) µs/op")
            }
            parts.append("client CPU \(Self.fixed(report.clientCPUSeconds * 1e6 / Double(report.operations), 2)) µs/op")
        }
        if let before = report.serverResidentBefore, let after = report.serverResidentAfter {
            parts.append("server RSS \(before) -> \(after) bytes")
        }
        return parts.joined(separator: " ")
    }
}
