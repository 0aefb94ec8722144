//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the echo workloads (ping-pong, streaming, idle).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension LoadEngine {
    /// Checks `count` bytes just received on connection `index` against the pattern, and
    /// accounts for the messages they complete.
    ///
    /// Every byte is compared with the byte sent at the same stream offset (one `memcmp`: the
    /// receive buffer holds at most ``BytePattern/span`` bytes).
    @inline(__always)
    mutating func consumeEcho(_ index: Int, count: Int, at now: UInt64) throws(LoadFailure) {
        let connection = self.connections + index
        let received = connection.pointee.received
        let total = received + count
        guard total <= connection.pointee.sent else {
            throw .connection(
                index,
                "received \(total) bytes, more than the \(connection.pointee.sent) sent "
                    + "(the extra bytes start at offset \(connection.pointee.sent))"
            )
        }
        let phase = connection.pointee.receivePhase
        if let difference = Memory.firstDifference(
            self.receiveBuffer.base,
            self.pattern.bytes(at: phase),
            count: count
        ) {
            let got = self.receiveBuffer.base.load(fromByteOffset: difference, as: UInt8.self)
            let expected = self.pattern.byte(at: phase + difference)
            throw .connection(
                index,
                "wrong byte at offset \(received + difference) of the echo: \(got), expected \(expected) "
                    + "(message \((received + difference) / self.unit), byte \((received + difference) % self.unit))"
            )
        }
        connection.pointee.receivePhase = BytePattern.advance(phase, by: count)
        connection.pointee.received = total

        // Messages whose last byte is in this read: first..<last.
        let first = received / self.unit
        let last = total / self.unit
        if self.recording {
            self.bytes += count
            self.operations += last - first
        }
        guard last > first else { return }
        switch self.mode {
        case .pingpong:
            if self.recording {
                self.recordLatencies(index, first, last, now: now)
            }
            // Keep `depth` messages in flight: one new message per message back.
            connection.pointee.allowed += (last - first) * self.unit
        case .idle:
            connection.pointee.state = .finished
            self.settled += 1
        case .stream, .http, .udp:
            break  // udp: DatagramEngine's
        }
    }

    /// Streaming: writes `size`-byte chunks (a partly written one first) while less than the
    /// stream window is unechoed, at most 16 writes per call so other connections get their turn.
    @inline(__always)
    mutating func sendStream(_ index: Int) throws(LoadFailure) {
        let connection = self.connections + index
        var writes = 0
        while connection.pointee.sent - connection.pointee.received < self.streamWindow {
            guard writes < 16 else {
                // Writable still: epoll comes back at once, after the others.
                try self.watchWritable(index, true)
                return
            }
            let phase = connection.pointee.sendPhase
            let length = min(self.unit - connection.pointee.sent % self.unit, self.pattern.span)
            let (count, more) = try self.sendOnce(index, self.pattern.bytes(at: phase), length)
            connection.pointee.sent += count
            connection.pointee.sendPhase = BytePattern.advance(phase, by: count)
            writes += 1
            guard more else { return }
        }
        try self.watchWritable(index, false)
    }
}
