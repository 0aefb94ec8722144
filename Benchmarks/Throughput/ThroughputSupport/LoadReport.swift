//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what one load generator run reports (JSON on its stdout).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The load generator's result, printed as one JSON object on its standard output and read
/// back by `throughput`. Every figure covers the measured window only (after the warm-up).
public struct LoadReport: Codable, Sendable {
    /// `pingpong`, `stream`, `http`, `idle`, `udp` (the load generator's modes), or
    /// `connect` (a connect client's own report: it is the process measured).
    public var mode: String
    public var connections: Int
    /// Message size in bytes (ping-pong, streaming: bytes per write).
    public var messageSize: Int
    /// Messages or requests in flight per connection (1: ping-pong).
    public var depth: Int
    /// The measured window's length, seconds.
    public var seconds: Double
    /// Completed operations in the window: round trips (ping-pong), requests (http), echoed
    /// messages of `messageSize` bytes (stream), echoed datagrams (udp), connections made,
    /// used and closed (connect).
    public var operations: Int
    /// Bytes that came back in the window and were checked (one direction).
    public var bytes: Int
    /// Latency of an operation, from its first byte sent to its last byte received
    /// (ping-pong and http; `nil` for streaming and idle).
    public var latency: LatencySummary?
    /// CPU seconds the server processes (`--server-pid`) used in the window, from /proc; for a
    /// connect client, its own (the process under measurement).
    public var serverCPUSeconds: Double?
    /// CPU seconds the load generator used in the window; for a connect client, the echo
    /// server's at the other end (the load, on the other core).
    public var clientCPUSeconds: Double
    /// Idle mode: the servers' resident memory before the connections were opened and while
    /// all of them were open (and had each made one round trip), bytes.
    public var serverResidentBefore: Int?
    public var serverResidentAfter: Int?
    /// UDP: datagrams not echoed within the loss timeout, over the whole run (any makes the
    /// run fail; a report says 0).
    public var datagramsLost: Int?

    public init(
        mode: String,
        connections: Int,
        messageSize: Int,
        depth: Int,
        seconds: Double,
        operations: Int,
        bytes: Int,
        latency: LatencySummary?,
        serverCPUSeconds: Double?,
        clientCPUSeconds: Double,
        serverResidentBefore: Int? = nil,
        serverResidentAfter: Int? = nil,
        datagramsLost: Int? = nil
    ) {
        self.mode = mode
        self.connections = connections
        self.messageSize = messageSize
        self.depth = depth
        self.seconds = seconds
        self.operations = operations
        self.bytes = bytes
        self.latency = latency
        self.serverCPUSeconds = serverCPUSeconds
        self.clientCPUSeconds = clientCPUSeconds
        self.serverResidentBefore = serverResidentBefore
        self.serverResidentAfter = serverResidentAfter
        self.datagramsLost = datagramsLost
    }
}

/// Latency percentiles, microseconds.
public struct LatencySummary: Codable, Sendable {
    public var p50: Double
    public var p99: Double
    /// `nil` when the client does not tell it (wrk).
    public var p999: Double?
    public var max: Double

    public init(p50: Double, p99: Double, p999: Double?, max: Double) {
        self.p50 = p50
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }
}

extension LoadReport {
    /// The report as one line of JSON (keys sorted, as the load generator's `JSONEncoder`
    /// writes them), for the tools that do without Foundation: the connect clients.
    public var jsonLine: String {
        var fields: [(String, String)] = [
            ("bytes", "\(self.bytes)"),
            ("clientCPUSeconds", Self.number(self.clientCPUSeconds)),
            ("connections", "\(self.connections)"),
            ("depth", "\(self.depth)"),
            ("messageSize", "\(self.messageSize)"),
            ("mode", "\"\(self.mode)\""),
            ("operations", "\(self.operations)"),
            ("seconds", Self.number(self.seconds)),
        ]
        if let latency = self.latency {
            var parts = [("max", latency.max), ("p50", latency.p50), ("p99", latency.p99)]
            if let p999 = latency.p999 { parts.insert(("p999", p999), at: 3) }
            let object = parts.map { "\"\($0.0)\":\(Self.number($0.1))" }.joined(separator: ",")
            fields.append(("latency", "{\(object)}"))
        }
        if let cpu = self.serverCPUSeconds { fields.append(("serverCPUSeconds", Self.number(cpu))) }
        if let lost = self.datagramsLost { fields.append(("datagramsLost", "\(lost)")) }
        return "{" + fields.sorted { $0.0 < $1.0 }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A JSON number (a non-finite value, which JSON cannot hold, as 0).
    private static func number(_ value: Double) -> String {
        value.isFinite ? "\(value)" : "0"
    }
}
