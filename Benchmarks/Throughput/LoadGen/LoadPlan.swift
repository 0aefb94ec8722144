//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what the load generator was asked to do, and how it fails.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser

/// The load generator's workloads.
enum LoadMode: String, ExpressibleByArgument, CaseIterable {
    /// `depth` echo messages of `size` bytes in flight per connection (1: classic ping-pong).
    case pingpong
    /// `size`-byte writes while less than the stream window is unechoed.
    case stream
    /// `depth` GET requests in flight per connection (1: keep-alive; more: pipelined).
    case http
    /// One round trip per connection, then every connection stays open and silent.
    case idle
    /// UDP echo: `depth` datagrams of `size` bytes outstanding per flow (a connected UDP
    /// socket each), a new one sent per echo; a datagram not echoed is lost and fails the run.
    case udp
}

/// A run's parameters, checked by the command line.
struct LoadPlan {
    var mode: LoadMode
    var address: SocketAddress
    var connections: Int
    /// Bytes per echo message (ping-pong, idle), per write (stream) or per datagram (udp);
    /// unused by http.
    var size: Int
    /// Operations in flight per connection (ping-pong, http) or per flow (udp).
    var depth: Int
    /// Streaming: the most bytes sent and not yet echoed, per connection.
    var streamWindow: Int
    /// HTTP: one request, `GET <path> HTTP/1.1` and a Host header.
    var request: [UInt8]
    /// HTTP: what every response body must be, or `nil` for any body.
    var expectedBody: [UInt8]?
}

/// Why a run stopped: a connection that failed, a server that broke the protocol or sent wrong
/// bytes, or one that stalled. The message names the connection and the stream offset.
struct LoadFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }

    /// A failure of connection `index` (numbered from 0 in the order they were opened).
    static func connection(_ index: Int, _ detail: String) -> LoadFailure {
        LoadFailure("connection \(index): \(detail)")
    }
}
