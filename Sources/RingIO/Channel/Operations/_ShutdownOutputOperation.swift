//===----------------------------------------------------------------------===//
// RingIO — channels: the half-close of a socket, in line with its writes.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// `shutdown(fd, SHUT_WR)` of a stream channel's socket
/// (``IOChannel/shutdownOutput(queue:handler:)``): in the channel's write lane, so it runs
/// once every write scheduled before it has finished, and the writes scheduled after it wait
/// for it (and then fail with EPIPE, as the kernel answers a write after the shutdown).
internal final class _ShutdownOutputOperation: _Operation, @unchecked Sendable {
    // @unchecked: as `_Operation` (its own variable is ring-thread only).
    /// The shutdown is in flight: it returns at once, and its completion ends the operation.
    private var shutdownInFlight = false

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        super.init(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: 0,
            lane: _Operation.lane(kind: channel.kind, entry: entry, isRead: false),
            handler: handler
        )
    }

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        guard self.entry.type == .socket else {
            self.terminate(.notSocket)
            return
        }
        self.shutdownInFlight = true
        self.submit(.shutdown(fd: self.entry.fd, how: CInt(SHUT_WR)))
    }

    override func completed(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        self.shutdownInFlight = false
        guard !self.isFinished else { return }
        if result == -EBADF {
            self.entry.poison(.badFileDescriptor)  // the channel's descriptor (R65)
            return
        }
        self.deliver(done: true, data: nil, error: result < 0 ? Errno(rawValue: -result) : nil)
        self.finish()
    }

    override func finalCall(error: Errno) {
        self.entry.core.assertOnRingThread()
        self.deliver(done: true, data: nil, error: error)
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.shutdownInFlight else { return }
        super.terminate(error)
    }
}
