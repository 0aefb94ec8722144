//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the HTTP workload (keep-alive and pipelined GETs).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension LoadEngine {
    /// Parses `count` response bytes just received on connection `index`, records the latency
    /// of every response they complete, and lets one new request go per response.
    @inline(__always)
    mutating func consumeHTTP(_ index: Int, count: Int, at now: UInt64) throws(LoadFailure) {
        let connection = self.connections + index
        let chunk = UnsafeRawBufferPointer(start: self.receiveBuffer.base, count: count)
        let done: Int
        do {
            done = try connection.pointee.response.parse(chunk, expectedBody: self.expectedBody)
        } catch {
            throw .connection(
                index,
                "bad response \(connection.pointee.completed) at offset "
                    + "\(connection.pointee.received + error.position): \(error.reason)"
            )
        }
        connection.pointee.received += count
        if self.recording {
            self.bytes += count
        }
        guard done > 0 else { return }
        let first = connection.pointee.completed
        let last = first + done
        // A response to a request not (wholly) sent yet cannot be an answer to it.
        guard last * self.unit <= connection.pointee.sent else {
            throw .connection(
                index,
                "response \(last - 1) arrived before its request was sent "
                    + "(\(connection.pointee.sent / self.unit) requests sent)"
            )
        }
        if self.recording {
            self.operations += done
            self.recordLatencies(index, first, last, now: now)
        }
        connection.pointee.completed = last
        connection.pointee.allowed += done * self.unit
    }
}
