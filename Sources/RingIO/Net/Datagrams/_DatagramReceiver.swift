//===----------------------------------------------------------------------===//
// RingIO — networking: where a datagram channel's receive delivers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

/// Where a datagram channel's receive delivers: called on the channel's ring thread.
internal protocol _DatagramReceiver: AnyObject, Sendable {
    /// The channel it receives for; set before it starts.
    func attach(to state: _DatagramState)
    /// A datagram. Returns false when the receiver is now behind: the receive pauses until it
    /// calls ``_DatagramState/resume(_:)``.
    func deliver(_ datagram: Datagram) -> Bool
    /// An error the receive goes on after (ECONNREFUSED).
    func transient(_ error: Errno)
    /// The end: the last call (ring thread, or any thread once the ring is gone).
    func end(_ error: Errno)
    /// The datagrams delivered and not taken, when the receiver stops early (ring thread).
    func takeUndelivered() -> [Datagram]
}

/// How far behind a receiver may fall before the receive pauses, and where it resumes.
internal enum _DatagramBacklog {
    static let pauseAt = 1_024
    static let resumeAt = 512
}
