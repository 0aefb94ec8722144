//===----------------------------------------------------------------------===//
// RingIO — channels: read operations, from streams and from files.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What every read shares: the bytes read and not yet delivered, and the delivery rules.
///
///     accept(data) ─> pending ─┬─ total == length ──> (true, rest)                   R34
///                              ├─ pending ≥ low ────> (false, ≤ high) …              R48
///                              ├─ EOF ──────────────> (false, rest) (true, empty)    R35
///                              └─ error / stop ─────> (false, rest) (true, nil, e)   R36
internal class _ReadOperation: _Operation, @unchecked Sendable {
    /// How many bytes to read (`Int.max`: until EOF).
    let length: Int
    /// Bytes read and not yet delivered.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var pending = ByteRope()
    /// Bytes read so far, delivered or not.
    var received = 0

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        length: Int,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.length = length
        super.init(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: offset,
            lane: _Operation.lane(kind: channel.kind, entry: entry, isRead: true),
            handler: handler
        )
    }

    var remaining: Int { self.length - self.received }

    override var mergesDeliveries: Bool { true }

    override var completesAtOnce: Bool { self.length == 0 }

    override func completeAtOnce() {
        self.entry.core.assertOnRingThread()
        self.isFinished = true
        self.deliver(done: true, data: ByteRope(), error: nil)  // R37
    }

    override func finalCall(error: Errno) {
        self.entry.core.assertOnRingThread()
        self.flushPending()
        self.deliver(done: true, data: nil, error: error)
    }

    /// Adds bytes read; delivers per the water marks or finishes when `length` is reached.
    final func accept(_ data: consuming ByteRope) {
        self.entry.core.assertOnRingThread()
        guard !data.isEmpty else { return }
        self.received += data.count
        self.pending.append(data)
        if self.received >= self.length {
            // Length satisfied: one final call with the rest (R34), in high-water pieces.
            while self.pending.count > self.highWater { self.deliverPiece() }
            self.deliver(done: true, data: exchange(&self.pending, with: ByteRope()), error: nil)
            self.finish()
        } else {
            self.deliverReady()
        }
    }

    /// Delivers while the pending bytes reach the low water mark (R48).
    final func deliverReady() {
        while !self.pending.isEmpty && self.pending.count >= self.lowWater {
            self.deliverPiece()
        }
    }

    /// Delivers everything pending, in high-water pieces.
    final func flushPending() {
        while !self.pending.isEmpty { self.deliverPiece() }
    }

    private func deliverPiece() {
        let count = min(self.pending.count, self.highWater)
        if count == self.pending.count {
            self.deliver(done: false, data: exchange(&self.pending, with: ByteRope()), error: nil)
        } else {
            let piece = self.pending.subrange(0..<count)
            self.pending = self.pending.subrange(count...)
            self.deliver(done: false, data: piece, error: nil)
        }
    }

    /// EOF: the pending bytes, then `(true, empty, nil)` (R35).
    final func endOfFile() {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        self.flushPending()
        self.deliver(done: true, data: ByteRope(), error: nil)
        self.finish()
    }

    override func tick() {
        self.entry.core.assertOnRingThread()
        if self.strictInterval {
            // R52: deliver what is pending, even nothing.
            if self.pending.isEmpty {
                self.deliver(done: false, data: ByteRope(), error: nil)
            } else {
                self.flushPending()
            }
        } else {
            self.deliverReady()
        }
    }
}

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

// MARK: - Files

/// A read of a regular file (or random access to a device): up to four chunk reads in
/// flight at explicit offsets, delivered in file order. Chunks of 1 MiB come from a pool and go
/// back to it when the last rope region over them is released.
///
/// A stream read takes the file position at its start and sets it after its end (R61; stream
/// operations on a file run one at a time, R73). A short read is EOF or a file that shrank:
/// chunks after it are discarded and reading resumes where it stopped.
internal final class _FileReadOperation: _ReadOperation, @unchecked Sendable {
    private struct Chunk {
        let sequence: UInt64
        let offset: Int64
        let size: Int
        let memory: _ReadMemory
        var result: Int32?
    }

    /// Chunk reads in flight, in file order.
    private var chunks: [Chunk] = []
    /// Chunk reads whose results are moot, kept (with their memory, which the kernel is
    /// still writing into) until they complete.
    private var discarded: [Chunk] = []
    private var nextSequence: UInt64 = 0
    private var nextOffset: Int64 = 0
    /// Bytes asked of the kernel (in flight or received).
    private var requested = 0
    /// The file position at the start (stream reads), to set the position at the end.
    private var streamStart: Int64?
    /// No explicit offsets possible (a device without a position): one read at a time at -1.
    private var sequential = false

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        if self.channel.kind == .stream {
            if let position = try? _POSIX.seek(self.entry.fd, to: 0, from: SEEK_CUR) {
                self.streamStart = position
                self.nextOffset = position
            } else {
                self.sequential = true  // no position (ESPIPE): reads at the file position
            }
        } else {
            let (start, overflow) = self.channel.base.addingReportingOverflow(self.offset)
            guard !overflow, start >= 0 else {
                self.terminate(.invalidArgument)  // R60
                return
            }
            self.nextOffset = start
        }
        self.fill()
    }

    private func fill() {
        let depth = self.sequential ? 1 : _ChannelLimits.fileReadDepth
        while !self.isFinished && self.chunks.count < depth && self.requested < self.length {
            let size = min(_ChannelLimits.chunkSize, self.highWater, self.length - self.requested)
            let memory = _ReadMemory(size: size)
            let chunk = Chunk(
                sequence: self.nextSequence,
                offset: self.nextOffset,
                size: size,
                memory: memory,
                result: nil
            )
            self.submit(
                .read(fd: self.entry.fd, buffer: memory.buffer, offset: self.sequential ? -1 : self.nextOffset),
                tag: Tag.io + chunk.sequence
            )
            self.chunks.append(chunk)
            self.nextSequence += 1
            self.nextOffset += Int64(size)
            self.requested += size
        }
    }

    override func completed(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        let sequence = context - Tag.io
        if let index = self.discarded.firstIndex(where: { $0.sequence == sequence }) {
            self.discarded.remove(at: index)
            return
        }
        guard !self.isFinished, let index = self.chunks.firstIndex(where: { $0.sequence == sequence }) else {
            return
        }
        self.chunks[index].result = result
        while let head = self.chunks.first, let result = head.result {
            self.chunks.removeFirst()
            if result > 0 {
                if Int(result) < head.size {
                    // Short: EOF or a shrunken file. Resume right after what we got.
                    self.discarded.append(contentsOf: self.chunks)
                    self.chunks.removeAll()
                    self.nextOffset = head.offset + Int64(result)
                    self.requested = self.received + Int(result)
                }
                self.accept(head.memory.rope(count: Int(result)))
                if self.isFinished { return }
            } else if result == 0 {
                self.discarded.append(contentsOf: self.chunks)
                self.chunks.removeAll()
                self.endOfFile()
                return
            } else {
                self.discarded.append(contentsOf: self.chunks)
                self.chunks.removeAll()
                let error = Errno(rawValue: -result)
                if error == .badFileDescriptor {
                    self.entry.poison(error)
                } else {
                    self.terminate(error)
                }
                return
            }
        }
        self.fill()
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        // Chunk reads in flight finish on their own (a file read is not interruptible); their
        // results are dropped and their memory is released with them.
        self.discarded.append(contentsOf: self.chunks)
        self.chunks.removeAll()
        super.terminate(error)
    }

    override func finish() {
        self.entry.core.assertOnRingThread()
        if let start = self.streamStart, !self.isFinished {
            // It had a position at the start; failing now means the descriptor was closed under
            // the channel, which the next operation reports (EBADF).
            _ = try? _POSIX.seek(self.entry.fd, to: start + Int64(self.received), from: SEEK_SET)
        }
        super.finish()
    }
}
