//===----------------------------------------------------------------------===//
// RingIO — channels: the receive for a descriptor's stream reads.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _DescriptorEntry {
    // MARK: The receive for stream reads

    /// The read at the head of the read lane, when it reads a stream.
    var readHead: _StreamReadOperation? {
        self.lanes[head: _Operation.readLane] as? _StreamReadOperation
    }

    /// Moves up to `maximum` bytes of what was received and not yet taken to the caller.
    func takeReceived(upTo maximum: Int) -> ByteRope {
        self.core.assertOnRingThread()
        if self.carry.count <= maximum {
            // Moved out, not copied: no retain and release of the regions' owners.
            return exchange(&self.carry, with: ByteRope())
        }
        let taken = self.carry.subrange(0..<maximum)
        self.carry = self.carry.subrange(maximum...)
        return taken
    }

    var hasReceived: Bool {
        self.core.assertOnRingThread()
        return !self.carry.isEmpty
    }

    /// Whether a receive is in flight for `read`, the head of the read lane.
    func isReceiving(for read: _StreamReadOperation) -> Bool {
        self.core.assertOnRingThread()
        return self.receive != nil && self.readHead === read
    }

    /// Arms a receive for the head read if it wants data and none is armed.
    func receiveWanted() {
        self.core.assertOnRingThread()
        guard self.receive == nil, !self.awaitingBuffers, let head = self.readHead, head.wantsData else { return }
        let pool = self.core.providedBuffers
        let remaining = head.remaining
        let request: RingRequest
        if head.untilWouldBlock {
            let noWait = head.received > 0
            let length = min(remaining, pool.bufferSize)
            request =
                self.type == .socket
                ? .receiveSelect(fd: self.fd, group: pool.group, length: length, noWait: noWait)
                : .readSelect(fd: self.fd, group: pool.group, length: length, noWait: noWait)
            self.receiveIsMultishot = false
        } else if self.type == .socket && remaining > 4 * pool.bufferSize && !self.multishotUnsupported {
            // Multishot on sockets only: on Linux 6.18 a multishot read of a FIFO whose reader
            // was opened before its writer never reports the writer's close (EOF), where
            // single reads do; pipes and terminals take one read per buffer.
            request = .receiveMultishot(fd: self.fd, group: pool.group)
            self.receiveIsMultishot = true
        } else {
            let length = min(remaining, pool.bufferSize)
            request =
                self.type == .socket
                ? .receiveSelect(fd: self.fd, group: pool.group, length: length, noWait: false)
                : .readSelect(fd: self.fd, group: pool.group, length: length, noWait: false)
            self.receiveIsMultishot = false
        }
        self.receiveCancelled = false
        self.receive = self.core.submit(request, target: self, context: Tag.receive)
    }

    /// The head read finished: the receive stays armed for the next read in the lane, and is
    /// cancelled when there is none (bytes still arriving go to `carry`).
    func readHeadFinished() {
        if self.lanes.withWaiting(_Operation.readLane, { $0.isEmpty }) { self.cancelReceive() }
    }

    /// Cancels the armed receive (the head read paused, the lane emptied, the entry is
    /// finishing); bytes still arriving wait in `carry`.
    func cancelReceive() {
        self.core.assertOnRingThread()
        guard let receive = self.receive, !self.receiveCancelled else { return }
        self.receiveCancelled = true
        self.core.submit(.cancel(userData: receive), target: self, context: Tag.ignore)
    }

    func received(_ data: ByteRope) {
        self.carry.append(data)
        self.readHead?.takeReceivedBytes()
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.assertOnRingThread()
        switch context {
        case Tag.receive:
            if !flags.hasMore { self.receive = nil }
            if result > 0 {
                guard let id = flags.bufferID else {
                    preconditionFailure("RingIO: a buffer-select receive completed without a buffer")
                }
                self.rearmedAfterWait = false
                self.received(self.core.providedBuffers.lend(id, length: Int(result)))
            } else {
                self.receiveEnded(result: result)
                if self.receive != nil { return }  // a poll or a fallback read is armed
            }
            if self.receive == nil { self.receiveWanted() }
        case Tag.fallbackRead:
            self.receive = nil
            let memory = self.fallbackMemory!
            self.fallbackMemory = nil
            if result > 0 {
                self.received(memory.rope(count: Int(result)))
            } else {
                self.receiveEnded(result: result)
                if self.receive != nil { return }
            }
            self.receiveWanted()
        case Tag.poll:
            self.receive = nil
            if result < 0 && (result != -ECANCELED || !self.receiveCancelled) {
                // Cancelled by someone else than us (the ring shutting down) is the end, too.
                self.readHead?.receiveFailed(Errno(rawValue: -result))
            }
            self.receiveWanted()
        case Tag.open:
            self.opened(result: result)
            return
        case Tag.close:
            self.releaseOpenBudget()
            self.runCleanups()
            return
        default:
            break
        }
        if self.receive == nil, let head = self.readHead, head.stopping != nil {
            head.receiveEndedWhileStopping()
        }
        if self.receive == nil { self.finishIfIdle() }
    }

    /// One read into fresh memory, when the provided buffers stay exhausted; multishot
    /// resumes after it.
    func readIntoFreshMemory() {
        guard self.receive == nil, let head = self.readHead, head.wantsData else {
            self.finishIfIdle()
            return
        }
        let memory = _ReadMemory(size: _ChannelLimits.fallbackReceiveSize)
        self.fallbackMemory = memory
        self.core.counters.fallbackReceives.add(1, ordering: .relaxed)
        self.receive = self.core.submit(
            .read(fd: self.fd, buffer: memory.buffer, offset: -1),
            target: self,
            context: Tag.fallbackRead
        )
    }

    /// A receive completed without data.
    func receiveEnded(result: Int32) {
        let error = -result
        switch error {
        case 0:
            self.readHead?.receivedEndOfFile()
        case ECANCELED:
            // Ours (the read lane emptied): nothing to report. Anyone else's (the ring shutting
            // down) ends the read — re-arming would fight the cancellation.
            if !self.receiveCancelled { self.readHead?.receiveFailed(.canceled) }
        case ENOBUFS:
            // Every provided buffer is held by ropes. Those released in this turn (writes that
            // completed, handlers that returned) go back to the kernel at its end. At the start
            // of the next turn: receive into them if any came back, else (or if this is the
            // second ENOBUFS in a row) read into fresh memory — a wait of one turn, never a
            // stall, no timer, and no loss either way.
            guard self.readHead != nil, self.readHead?.stopping == nil, !self.awaitingBuffers else { return }
            if self.rearmedAfterWait {
                self.rearmedAfterWait = false
                self.readIntoFreshMemory()
                return
            }
            self.awaitingBuffers = true
            self.core.enqueue { [self] in
                guard self.awaitingBuffers else { return }
                self.awaitingBuffers = false
                let pool = self.core.providedBuffers
                if pool.buffersOnLoan < pool.bufferCount {
                    self.rearmedAfterWait = true
                    self.receiveWanted()
                    if self.receive == nil { self.finishIfIdle() }
                } else {
                    self.readIntoFreshMemory()
                }
            }
        case EAGAIN:
            guard let head = self.readHead, head.stopping == nil else { return }
            if head.untilWouldBlock && head.received > 0 {
                head.wouldBlock()
            } else {
                self.receive = self.core.submit(
                    .poll(fd: self.fd, events: UInt32(POLLIN)),
                    target: self,
                    context: Tag.poll
                )
            }
        case EINTR:
            break
        case EINVAL where self.receiveIsMultishot, EOPNOTSUPP where self.receiveIsMultishot:
            self.multishotUnsupported = true
        default:
            let errno = Errno(rawValue: error)
            if errno == .badFileDescriptor {
                self.poison(errno)
            } else {
                self.readHead?.receiveFailed(errno)
            }
        }
    }
}
