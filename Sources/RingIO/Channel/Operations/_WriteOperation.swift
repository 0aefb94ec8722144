//===----------------------------------------------------------------------===//
// RingIO — channels: a write, as iovecs of the rope's regions.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A write: the rope's regions go out as iovecs (sendmsg with MSG_NOSIGNAL on sockets,
/// writev elsewhere) — never flattened (D2). A short write continues with the rest.
///
/// Handler calls follow R38: the data is cut into buffers of at most one chunk (and at most
/// the high water mark); once the bytes written into the current buffer reach the low water
/// mark, each further syscall reports the remaining data. Success ends with `(true, nil, nil)`,
/// an error with `(true, remaining, error)`.
internal final class _WriteOperation: _Operation, @unchecked Sendable {
    /// The bytes to write; dropped once all are written, so that the regions (received
    /// buffers, in an echo) go back to their owners without waiting for the final call.
    private var data: ByteRope
    private var written = 0
    private var bufferStart = 0
    private var bufferEnd = 0
    /// The message header and iovecs of a vectored syscall in flight, in one allocation made
    /// the first time the data to write spans several regions; valid until the completion.
    private var vectorStorage: UnsafeMutableRawPointer?
    private var syscallInFlight = false
    private var pollInFlight = false
    private var inFlightUserData: UInt64 = 0
    /// Set when a stop or EBADF arrives while a syscall is in flight: ends the write once it
    /// returns.
    private var terminating: Errno?
    private var start: Int64 = -1
    /// A stream write to a file: set the file position after the end.
    private var setsPosition = false
    /// Gathering (see `gatherRiders`). The head of the lane: how many of the writes waiting
    /// behind it ride its syscall in flight, and whether one of them asked to cancel it.
    private var riderCount = 0
    private var cancelledForRider = false
    /// A waiting write: its bytes are part of the lane head's syscall in flight.
    private var riding = false

    /// A new life for a write from the pool: every variable above back to its initial value
    /// (keep the two lists in step), with `data` to write. Ring thread.
    // Inlined by hand: once its file was split, the optimizer stopped (+45 instructions per
    // echo round trip).
    @inline(__always)
    private func resetForReuse(data: ByteRope) {
        self.data = data
        self.writeLength = data.count
        self.written = 0
        self.bufferStart = 0
        self.bufferEnd = 0
        // `vectorStorage` is kept: the allocation is what reuse saves.
        self.syscallInFlight = false
        self.pollInFlight = false
        self.inFlightUserData = 0
        self.terminating = nil
        self.start = -1
        self.setsPosition = false
        self.riderCount = 0
        self.cancelledForRider = false
        self.riding = false
    }

    /// See `riding` (for the tests). Ring thread.
    var isRiding: Bool { self.riding }

    private enum WriteTag {
        static let write: UInt64 = 0
        static let poll: UInt64 = 1
    }

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        data: ByteRope,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.data = data
        super.init(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: offset,
            lane: _Operation.lane(kind: channel.kind, entry: entry, isRead: false),
            handler: handler
        )
        self.writeLength = data.count
    }

    deinit {
        self.vectorStorage?.deallocate()
    }

    /// A write for `data`: one from the channel's pool when called on its ring's thread, else
    /// a new one.
    // Inlined by hand: once its file was split, the optimizer stopped (+45 instructions per
    // echo round trip).
    @inline(__always)
    static func make(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        offset: Int64,
        data: ByteRope,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _WriteOperation {
        if entry.core.isRingThread, let operation = channel.writePool.take() {
            operation.reuse(queue: queue, offset: offset, handler: handler)
            operation.resetForReuse(data: data)
            return operation
        }
        return _WriteOperation(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: offset,
            data: data,
            handler: handler
        )
    }

    override func recycle() {
        self.data = ByteRope()
        self.dropHandler()
        // A channel that is done takes no more writes, and has let go of its pool for good.
        if !self.channel.done { self.channel.writePool.give(self) }
    }

    private static let vectorsOffset =
        (MemoryLayout<msghdr>.stride + MemoryLayout<iovec>.alignment - 1) & ~(MemoryLayout<iovec>.alignment - 1)

    /// The message header and iovecs, allocated on first use.
    private func vectorSpace() -> (message: UnsafeMutablePointer<msghdr>, vectors: UnsafeMutableBufferPointer<iovec>) {
        let storage: UnsafeMutableRawPointer
        if let existing = self.vectorStorage {
            storage = existing
        } else {
            storage = .allocate(
                byteCount: Self.vectorsOffset + _ChannelLimits.writeVectors * MemoryLayout<iovec>.stride,
                alignment: max(MemoryLayout<msghdr>.alignment, MemoryLayout<iovec>.alignment)
            )
            storage.initializeMemory(as: msghdr.self, repeating: msghdr(), count: 1)
            (storage + Self.vectorsOffset).initializeMemory(
                as: iovec.self,
                repeating: iovec(),
                count: _ChannelLimits.writeVectors
            )
            self.vectorStorage = storage
        }
        return (
            storage.assumingMemoryBound(to: msghdr.self),
            UnsafeMutableBufferPointer(
                start: (storage + Self.vectorsOffset).assumingMemoryBound(to: iovec.self),
                count: _ChannelLimits.writeVectors
            )
        )
    }

    override var completesAtOnce: Bool { self.data.isEmpty }

    override func completeAtOnce() {
        self.entry.core.assertOnRingThread()
        self.isFinished = true
        self.deliver(done: true, data: nil, error: nil)  // R39
    }

    override func finalCall(error: Errno) {
        self.entry.core.assertOnRingThread()
        self.deliver(done: true, data: self.data.subrange(self.written...), error: error)
    }

    override var unsentData: ByteRope? { self.data }

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        if self.channel.kind == .randomAccess {
            let (start, overflow) = self.channel.base.addingReportingOverflow(self.offset)
            guard !overflow, start >= 0 else {
                self.terminate(.invalidArgument)  // R60
                return
            }
            self.start = start
        } else if !self.entry.type.isStreamLike && !self.entry.appends {
            // A stream write to a file: at explicit offsets from the position now, which is
            // set after the end (R61), as stream reads do. io_uring's own file-position mode
            // (-1) loses the limit check after a short write: a write stopped by
            // RLIMIT_FSIZE is then reported complete (Linux 6.18).
            if let position = try? _POSIX.seek(self.entry.fd, to: 0, from: SEEK_CUR) {
                self.start = position
                self.setsPosition = true
            }
        }
        self.issue()
    }

    override func finish() {
        self.entry.core.assertOnRingThread()
        if self.setsPosition && !self.isFinished {
            // As in `_FileReadOperation.finish`: only a descriptor closed under the channel
            // fails here, and the next operation reports that.
            _ = try? _POSIX.seek(self.entry.fd, to: self.start + Int64(self.written), from: SEEK_SET)
        }
        super.finish()
    }

    private func issue() {
        if self.written >= self.bufferEnd {
            self.bufferStart = self.written
            self.bufferEnd = self.written + self.nextBufferLength()
        }
        let limit = self.bufferEnd - self.written
        let fd = self.entry.fd
        let offset = self.start >= 0 ? self.start + Int64(self.written) : -1
        // Writes waiting behind this one may ride its syscall when it sends all that is left.
        let mayGather =
            limit == self.data.count - self.written && self.lane == Self.writeLane
            && self.entry.waitingWriteCount > 0 && self.entry.type.isStreamLike
        if !mayGather {
            // One region (the common case): a plain send or write, no iovec.
            var first = iovec()
            _ = withUnsafeMutablePointer(to: &first) { pointer in
                self.data.exportIOVectors(
                    into: UnsafeMutableBufferPointer(start: pointer, count: 1),
                    from: self.written
                )
            }
            if first.iov_len >= limit {
                let buffer = UnsafeRawBufferPointer(start: first.iov_base, count: limit)
                let request: RingRequest =
                    self.entry.type == .socket
                    ? .send(fd: fd, buffer: buffer)
                    : .write(fd: fd, buffer: buffer, offset: offset)
                self.syscallInFlight = true
                self.inFlightUserData = self.submit(request, tag: Tag.io + WriteTag.write)
                return
            }
        }
        let (message, vectors) = self.vectorSpace()
        var (count, bytes) = self.data.exportIOVectors(into: vectors, from: self.written)
        if bytes > limit {
            // Clip to the current buffer.
            var total = 0
            var index = 0
            while index < count {
                let length = vectors[index].iov_len
                if total + length >= limit {
                    vectors[index].iov_len = limit - total
                    index += 1
                    break
                }
                total += length
                index += 1
            }
            count = index
            bytes = limit
        } else if mayGather && bytes == limit {
            count = self.gatherRiders(into: vectors, after: count, bytes: bytes)
        }
        let request: RingRequest
        if self.entry.type == .socket {
            message.pointee.msg_iov = vectors.baseAddress
            message.pointee.msg_iovlen = count
            request = .sendmsg(fd: fd, message: message)
        } else {
            request = .writev(fd: fd, vectors: UnsafeBufferPointer(rebasing: vectors[..<count]), offset: offset)
        }
        self.syscallInFlight = true
        self.inFlightUserData = self.submit(request, tag: Tag.io + WriteTag.write)
    }

    /// Gathering: after the rest of this write's data (`count` iovecs, `bytes` bytes, all of
    /// it), whole writes waiting behind it in the lane join the same vectored syscall — what
    /// a busy connection queued while a send was in flight leaves together, as a hand-written
    /// server gathers it. A waiting write rides along when its data fits in one buffer of its
    /// own (R49), in the iovecs left (`_ChannelLimits.writeVectors`) and in one chunk in all.
    /// Each keeps its own handler calls, in lane order (see `gatheredCompleted`).
    ///
    /// - Returns: the iovecs used in all; sets `riderCount` (0 when none could ride).
    private func gatherRiders(into vectors: UnsafeMutableBufferPointer<iovec>, after count: Int, bytes: Int) -> Int {
        var count = count
        var total = bytes
        var riders = 0
        let waiting = self.entry.waitingWriteCount
        while riders < waiting && count < vectors.count {
            guard let rider = self.entry.waitingWrite(at: riders) else { break }
            let size = rider.data.count
            guard rider.terminating == nil, size <= min(_ChannelLimits.chunkSize, rider.highWater),
                total + size <= _ChannelLimits.chunkSize
            else { break }
            let (added, exported) = rider.data.exportIOVectors(
                into: UnsafeMutableBufferPointer(rebasing: vectors[count...]),
                from: 0
            )
            guard exported == size else { break }  // its regions do not all fit
            count += added
            total += size
            rider.riding = true
            rider.bufferStart = 0
            rider.bufferEnd = size
            riders += 1
        }
        self.riderCount = riders
        return count
    }

    /// A gathered syscall returned: the bytes written go to this write first, then to the
    /// riders in lane order. The calls follow that order too: this write's final call, then
    /// each rider's (complete: `(true, nil, nil)`; partly written: progress as R38 says;
    /// stopped meanwhile: its error with what is left), and only then does this write finish
    /// and the lane move on — to a rider partly written, which goes on from where it is.
    private func gatheredCompleted(result: Int32) {
        let riders = self.riderCount
        self.riderCount = 0
        let cancelledForRider = self.cancelledForRider
        self.cancelledForRider = false
        var rest = result > 0 ? Int(result) : 0
        let own = min(rest, self.data.count - self.written)
        self.written += own
        rest -= own
        let complete = self.written == self.data.count
        if complete {
            self.data = ByteRope()
            self.deliver(done: true, data: nil, error: nil)
        }
        var index = 0
        for _ in 0..<riders {
            let rider = self.entry.waitingWrite(at: index)!  // riders are writes (`gatherRiders`)
            let share = min(rest, rider.data.count)
            rest -= share
            if rider.rode(writing: share) { index += 1 }
        }
        if complete {
            self.finish()
        } else if let error = self.terminating {
            self.end(error)
        } else if result > 0 {
            if self.written - self.bufferStart >= self.lowWater {
                self.deliver(done: false, data: self.data.subrange(self.written...), error: nil)
            }
            self.issue()
        } else if result == -ECANCELED && cancelledForRider {
            self.issue()  // cancelled for a rider that stopped: the others go again
        } else {
            self.syscallFailed(result)
        }
    }

    /// This waiting write rode the head's syscall, which wrote `share` of its bytes. Returns
    /// whether it still waits in the lane (written in part or not at all, and not stopped).
    private func rode(writing share: Int) -> Bool {
        self.riding = false
        self.written = share
        if share == self.data.count {
            self.data = ByteRope()
            self.deliver(done: true, data: nil, error: nil)
            self.finish()
            return false
        }
        if let error = self.terminating {
            self.end(error)
            return false
        }
        if share > 0 && share - self.bufferStart >= self.lowWater {
            self.deliver(done: false, data: self.data.subrange(share...), error: nil)
        }
        return true
    }

    /// A rider stopped while riding: cancel the syscall (once); `gatheredCompleted` ends the
    /// rider and sends the others again.
    private func cancelForRider() {
        guard self.syscallInFlight, self.riderCount > 0, self.terminating == nil, !self.cancelledForRider else {
            return
        }
        self.cancelledForRider = true
        self.submit(.cancel(userData: self.inFlightUserData), tag: Tag.ignore)
    }

    /// R49: the leading part of the rest, at most a chunk and at most the high water mark —
    /// but at least the first region (clipped to high water).
    // Inlined by hand: once its file was split, the optimizer stopped (+45 instructions per
    // echo round trip).
    @inline(__always)
    private func nextBufferLength() -> Int {
        let rest = self.data.count - self.written
        let cap = min(_ChannelLimits.chunkSize, self.highWater)
        if rest <= cap { return rest }
        let (region, regionStart) = self.data.region(containing: self.written)
        let firstRegion = regionStart + region.count - self.written
        return min(rest, max(cap, min(firstRegion, self.highWater)))
    }

    override func completed(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        if context == Tag.io + WriteTag.poll {
            self.pollInFlight = false
            if let error = self.terminating {
                self.end(error)
            } else if result < 0 && result != -ECANCELED {
                self.end(Errno(rawValue: -result))
            } else {
                self.issue()
            }
            return
        }
        self.syscallInFlight = false
        if self.riderCount > 0 {
            self.gatheredCompleted(result: result)
            return
        }
        if result > 0 { self.written += Int(result) }
        if self.written == self.data.count {
            self.data = ByteRope()  // `written` stays: a stream write to a file sets the position from it
            self.deliver(done: true, data: nil, error: nil)
            self.finish()
            return
        }
        if let error = self.terminating {
            self.end(error)
            return
        }
        if result > 0 {
            if self.written - self.bufferStart >= self.lowWater {
                self.deliver(done: false, data: self.data.subrange(self.written...), error: nil)
            }
            self.issue()
            return
        }
        self.syscallFailed(result)
    }

    /// The write syscall returned `result` (≤ 0) with bytes still to write.
    private func syscallFailed(_ result: Int32) {
        switch -result {
        case EAGAIN:
            self.pollInFlight = true
            self.inFlightUserData = self.submit(
                .poll(fd: self.entry.fd, events: UInt32(POLLOUT)),
                tag: Tag.io + WriteTag.poll
            )
        case EINTR:
            self.issue()
        case 0:
            self.end(.ioError)  // no progress and no error: refuse to spin
        case EBADF:
            self.entry.poison(.badFileDescriptor)
        default:
            self.end(Errno(rawValue: -result))
        }
    }

    private func end(_ error: Errno) {
        guard !self.isFinished else { return }
        self.finalCall(error: error)
        self.finish()
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        if self.riding {
            // Its bytes may be in the head's syscall: it ends when that returns.
            if self.terminating == nil {
                self.terminating = error
                self.entry.writeLaneHead?.cancelForRider()
            }
            return
        }
        if self.syscallInFlight || self.pollInFlight {
            // Cancel it and end when it returns: it may have written part of the data.
            if self.terminating == nil {
                self.terminating = error
                self.submit(.cancel(userData: self.inFlightUserData), tag: Tag.ignore)
            }
            return
        }
        super.terminate(error)
    }

    override func tick() {
        self.entry.core.assertOnRingThread()
        if self.strictInterval && self.started {
            self.deliver(done: false, data: self.data.subrange(self.written...), error: nil)
        }
    }
}
