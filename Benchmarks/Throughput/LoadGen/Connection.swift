//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: one load generator connection's state.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Everything the load generator knows about one connection: plain stored values, kept in one
/// preallocated array of ``LoadEngine`` and changed in place through a pointer.
///
/// The outgoing side is a byte stream cut into operations of `unit` bytes (an echo message, or
/// one HTTP request), operation `k` being bytes `k * unit ..< (k + 1) * unit`:
///
///     0                        sent                allowed
///     |------ sent ------------|-- may be sent ----|
///     |-- echoed --|
///                  received (echo modes)
///
/// Invariants (echo modes): `received <= sent`, and `sent <= allowed` except in streaming, which
/// does not use `allowed`. `stamped` counts the operations whose first byte has gone out (their
/// start time is in ``LoadEngine/stamps``); `completed` counts the HTTP responses read.
struct Connection {
    enum State: UInt8 {
        case unopened
        /// The nonblocking connect is under way; epoll reports it writable when it is done.
        case connecting
        /// Connected and running its workload (or, before the load starts, waiting for it).
        case open
        /// Idle mode: its one round trip is done; any byte or close from now on is a failure.
        case finished
    }

    var fd: Int32 = -1
    var state = State.unopened
    /// Whether epoll also watches for writability (only while a send is held up).
    var watchesWritable = false

    /// Bytes sent so far.
    var sent = 0
    /// Bytes the workload lets us send so far (ping-pong, http, idle).
    var allowed = 0
    /// Bytes received so far: echoed bytes, or HTTP response bytes.
    var received = 0
    /// Operations whose start time is stamped (their first byte is sent).
    var stamped = 0
    /// HTTP: responses complete.
    var completed = 0

    /// Where the next byte to send comes from: a phase of ``BytePattern``, or an offset into
    /// the HTTP request.
    var sendPhase = 0
    /// Echo modes: the pattern phase the next received byte must match.
    var receivePhase = 0

    /// When the connection last made progress (connected, or received bytes), on the monotonic clock.
    var lastProgress: UInt64 = 0

    /// HTTP: the response being read.
    var response = HTTPResponseParser()
}
