//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what one load generator run reports (JSON on its stdout).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The load generator's result, printed as one JSON object on its standard output and read
/// back by `throughput`. Every figure covers the measured window only (after the warm-up).
public struct LoadReport: Codable, Sendable {
    /// `pingpong`, `stream`, `http` or `idle`.
    public var mode: String
    public var connections: Int
    /// Message size in bytes (ping-pong, streaming: bytes per write).
    public var messageSize: Int
    /// Messages or requests in flight per connection (1: ping-pong).
    public var depth: Int
    /// The measured window's length, seconds.
    public var seconds: Double
    /// Completed operations in the window: round trips (ping-pong), requests (http), echoed
    /// messages of `messageSize` bytes (stream).
    public var operations: Int
    /// Bytes that came back in the window and were checked (one direction).
    public var bytes: Int
    /// Latency of an operation, from its first byte sent to its last byte received
    /// (ping-pong and http; `nil` for streaming and idle).
    public var latency: LatencySummary?
    /// CPU seconds the server processes (`--server-pid`) used in the window, from /proc.
    public var serverCPUSeconds: Double?
    /// CPU seconds the load generator used in the window.
    public var clientCPUSeconds: Double
    /// Idle mode: the servers' resident memory before the connections were opened and while
    /// all of them were open (and had each made one round trip), bytes.
    public var serverResidentBefore: Int?
    public var serverResidentAfter: Int?

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
        serverResidentAfter: Int? = nil
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
