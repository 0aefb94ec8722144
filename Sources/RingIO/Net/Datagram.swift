//===----------------------------------------------------------------------===//
// RingIO — networking: one received datagram.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A datagram an ``IODatagramChannel`` received: its bytes, where it came from, and whether
/// it was cut short.
///
/// The bytes are the kernel's receive buffer as it is — a rope region over the channel's
/// provided buffer, no copy. The buffer goes back to the kernel when the last rope referring
/// to it is gone: send it on, keep a slice, or let it go.
public struct Datagram: Sendable {
    /// The datagram's bytes (empty for a datagram of 0 bytes); its first
    /// ``IODatagramChannel/Options/maximumDatagramSize`` bytes when it was truncated.
    public var data: ByteRope
    /// The sender's address; `nil` when the sender has none (a Unix datagram socket that did
    /// not bind).
    public var source: SocketAddress?
    /// The datagram was longer than the receive buffer: ``data`` holds its beginning, and
    /// ``length`` its length (the kernel's `MSG_TRUNC`).
    public var isTruncated: Bool
    /// The datagram's length as it was sent (more than `data.count` when truncated).
    public var length: Int

    /// A datagram, as a channel delivers one.
    public init(data: ByteRope, source: SocketAddress?, isTruncated: Bool = false, length: Int? = nil) {
        self.data = data
        self.source = source
        self.isTruncated = isTruncated
        self.length = length ?? data.count
    }
}
