//===----------------------------------------------------------------------===//
// RingIO — channels: a read of a stream.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Streams: sockets, pipes, FIFOs, terminals

/// A read of a stream: the bytes come from the entry's receive (multishot into provided
/// buffers, so each delivery is the kernel's buffers as rope regions), taken in order.
internal final class _StreamReadOperation: _ReadOperation, @unchecked Sendable {
    /// `IOChannel.read(fromFileDescriptor:)`: finish as soon as the next read would block.
    let untilWouldBlock: Bool

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        length: Int,
        untilWouldBlock: Bool,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.untilWouldBlock = untilWouldBlock
        super.init(channel: channel, entry: entry, queue: queue, offset: offset, length: length, handler: handler)
    }

    /// Receiving stopped because too many delivered bytes are held (back-pressure).
    private var paused = false

    /// A stop (or another termination) that waits for the descriptor's receive to end: bytes
    /// the kernel hands over until its cancellation lands are this read's, delivered before
    /// its final call — nowhere else could they go, and the socket no longer has them.
    private(set) var stopping: Errno?

    var wantsData: Bool {
        self.started && !self.isFinished && !self.paused && self.stopping == nil && self.remaining > 0
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        if self.stopping == nil && self.started && self.entry.isReceiving(for: self) {
            self.stopping = error
            self.entry.cancelReceive()
            return
        }
        super.terminate(self.stopping ?? error)
    }

    /// The descriptor's receive ended while this read was stopping: what it brought is taken;
    /// now the final call.
    func receiveEndedWhileStopping() {
        self.entry.core.assertOnRingThread()
        guard let error = self.stopping, !self.isFinished else { return }
        if self.remaining > 0 && self.entry.hasReceived {
            self.accept(self.entry.takeReceived(upTo: self.remaining))
        }
        super.terminate(error)
    }

    override var countsHeldBytes: Bool { true }

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        self.takeReceivedBytes()
        if !self.isFinished && !self.paused { self.entry.receiveWanted() }
    }

    /// Takes what the entry has received, up to what this read still wants.
    func takeReceivedBytes() {
        self.entry.core.assertOnRingThread()
        if self.stopping != nil && !self.isFinished && self.remaining > 0 && self.entry.hasReceived {
            self.accept(self.entry.takeReceived(upTo: self.remaining))
            return
        }
        guard self.wantsData, self.entry.hasReceived else { return }
        self.accept(self.entry.takeReceived(upTo: self.remaining))
        if !self.isFinished && self.heldBytes.load(ordering: .relaxed) >= _ChannelLimits.heldBytesLimit {
            // The handlers (or the async consumer) are behind: stop receiving; the kernel
            // keeps the rest (and the peer slows down) until they catch up.
            self.paused = true
            self.entry.cancelReceive()
        }
    }

    override func heldBytesDropped() {
        self.entry.core.assertOnRingThread()
        guard self.paused, self.heldBytes.load(ordering: .relaxed) < _ChannelLimits.heldBytesLimit else { return }
        self.paused = false
        self.takeReceivedBytes()
        if self.wantsData { self.entry.receiveWanted() }
    }

    func receivedEndOfFile() {
        self.entry.core.assertOnRingThread()
        self.takeEverythingReceived()
        if let error = self.stopping {
            super.terminate(error)
            return
        }
        self.endOfFile()
    }

    func receiveFailed(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        self.takeEverythingReceived()
        self.terminate(error)
    }

    /// Before an EOF or an error: the bytes received before it are this read's, paused or not
    /// (R35, R36) — they must not stay behind in the entry.
    private func takeEverythingReceived() {
        guard self.started && !self.isFinished && self.remaining > 0 && self.entry.hasReceived else { return }
        self.accept(self.entry.takeReceived(upTo: self.remaining))
    }

    /// `untilWouldBlock`: the stream has nothing more now; finish with what was read (R78).
    func wouldBlock() {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        self.deliver(done: true, data: exchange(&self.pending, with: ByteRope()), error: nil)
        self.finish()
    }
}
