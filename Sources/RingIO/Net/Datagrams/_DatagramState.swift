//===----------------------------------------------------------------------===//
// RingIO — networking: a datagram channel's receive and sends, on its ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The state of an ``IODatagramChannel``: its socket, its receive (multishot `recvmsg` into a
/// buffer group of its own), its sends and its closing.
///
/// Confinement: the properties under "ring thread only" are touched only on `core`'s thread
/// (checked in debug builds); public calls from other threads reach it through the ring's
/// inbox, in program order. `counters` are atomic; the rest is immutable.
internal final class _DatagramState: RingOperationTarget, @unchecked Sendable {
    // @unchecked: see "Confinement".

    // MARK: Immutable after init
    let ring: RingLoop
    let core: _RingCore
    let fd: CInt
    let unixFile: _UnixSocketFile?
    let maximumDatagramSize: Int
    let bufferCount: Int
    let counters = _DatagramCounters()
    /// Where a buffer's name, control data and payload start (the layout of io_uring's
    /// multishot `recvmsg`, which the readiness engine writes too).
    private static let headerSize = MemoryLayout<io_uring_recvmsg_out>.size
    private static let nameSpace = MemoryLayout<sockaddr_storage>.size
    /// `CMSG_SPACE(sizeof(uint32_t))`: the `SO_RXQ_OVFL` count.
    private static let controlSpace = 24
    private static var payloadOffset: Int { Self.headerSize + Self.nameSpace + Self.controlSpace }
    /// The multishot receive's template (only its name and control lengths count), and the
    /// single receive's message (a fresh buffer each time), with their name and control
    /// space: one allocation, freed with the state.
    private let template: UnsafeMutablePointer<msghdr>
    private let single: UnsafeMutablePointer<msghdr>
    private let singleName: UnsafeMutableRawPointer
    private let singleControl: UnsafeMutableRawPointer
    private let singleVector: UnsafeMutablePointer<iovec>

    // MARK: Any thread, atomic
    private let closeRequested = Atomic<Bool>(false)

    // MARK: Ring thread only
    // @exclusivity(unchecked): touched only on the ring thread, and every access is short
    // (no inout access spans a call that could reach the same property): as the ring core's
    // hot state, where a checked access cost a thread-local lookup per datagram.
    @exclusivity(unchecked) private var pool: _ProvidedBuffers?
    @exclusivity(unchecked) private var receiver: (any _DatagramReceiver)?
    /// Datagrams received for a receiver that stopped before taking them: the next one's.
    @exclusivity(unchecked) private var carry = _FIFO<Datagram>()
    @exclusivity(unchecked) private var receiveInFlight: UInt64?
    @exclusivity(unchecked) private var receiveIsMultishot = false
    @exclusivity(unchecked) private var receiveCancelled = false
    @exclusivity(unchecked) private var multishotUnsupported = false
    /// The single receive's buffer, while one is in flight.
    @exclusivity(unchecked) private var singleMemory: _ReadMemory?
    /// The receive ended with ENOBUFS and waits one ring turn for buffers to come back.
    @exclusivity(unchecked) private var awaitingBuffers = false
    /// The receive was re-armed after such a wait: another ENOBUFS reads into fresh memory.
    @exclusivity(unchecked) private var rearmedAfterWait = false
    /// The receiver is behind: no receive until it catches up.
    @exclusivity(unchecked) private var paused = false
    @exclusivity(unchecked) private var sendsInFlight = 0
    @exclusivity(unchecked) private var spareSends: [_DatagramSend] = []
    @exclusivity(unchecked) private var closed = false
    @exclusivity(unchecked) private var finished = false

    private enum Tag {
        static let multishot: UInt64 = 1
        static let single: UInt64 = 2
        static let ignore: UInt64 = 3
    }

    init(ring: RingLoop, socket: _DatagramSocket, options: IODatagramChannel.Options) {
        self.ring = ring
        self.core = ring.core
        self.fd = socket.fd
        self.unixFile = socket.unixFile
        self.maximumDatagramSize = options.maximumDatagramSize
        self.bufferCount = options.receiveBuffers
        self.template = .allocate(capacity: 1)
        self.template.initialize(to: msghdr())
        self.template.pointee.msg_namelen = socklen_t(Self.nameSpace)
        self.template.pointee.msg_controllen = Self.controlSpace
        self.single = .allocate(capacity: 1)
        self.single.initialize(to: msghdr())
        self.singleName = .allocate(byteCount: Self.nameSpace, alignment: 8)
        self.singleControl = .allocate(byteCount: Self.controlSpace, alignment: 8)
        self.singleVector = .allocate(capacity: 1)
        self.singleVector.initialize(to: iovec())
    }

    deinit {
        self.template.deallocate()
        self.single.deallocate()
        self.singleName.deallocate()
        self.singleControl.deallocate()
        self.singleVector.deallocate()
    }

    /// Runs `body` on the ring thread: now when called there, else through the inbox; when
    /// the ring's thread has exited, `orElse` instead, on the calling thread.
    private func perform(_ body: @escaping @Sendable (_DatagramState) -> Void, orElse: @escaping @Sendable () -> Void) {
        if self.core.isRingThread {
            body(self)
        } else {
            self.core.enqueue({ body(self) }, orElse: orElse)
        }
    }

    /// The address range of the receive buffers; empty before the first receive. Ring thread.
    var bufferMemoryRange: Range<UInt> {
        self.core.assertOnRingThread()
        return self.pool?.memoryRange ?? 0..<0
    }

    // MARK: Receiving

    /// Starts `receiver` (any thread). One at a time: a second ends at once with EBUSY.
    func startReceiving(_ receiver: any _DatagramReceiver) {
        receiver.attach(to: self)
        self.perform({ state in state.start(receiver) }, orElse: { receiver.end(.canceled) })
    }

    private func start(_ receiver: any _DatagramReceiver) {
        self.core.assertOnRingThread()
        guard !self.closed else {
            receiver.end(.canceled)
            return
        }
        guard self.receiver == nil else {
            receiver.end(.resourceBusy)
            return
        }
        self.receiver = receiver
        // What a previous receiver left comes first.
        while let datagram = self.carry.popFirst() {
            guard receiver.deliver(datagram) else {
                self.paused = true
                break
            }
        }
        self.arm()
    }

    /// `receiver` stopped (an iteration ended early): the receive is cancelled, and what it
    /// did not take waits for the next receiver. Any thread.
    func stopReceiving(_ receiver: any _DatagramReceiver) {
        self.perform(
            { state in
                guard state.receiver === receiver else { return }
                state.receiver = nil
                state.paused = false
                var kept = _FIFO<Datagram>()
                for datagram in receiver.takeUndelivered() { kept.append(datagram) }
                while let datagram = state.carry.popFirst() { kept.append(datagram) }
                state.carry = kept
                state.cancelReceive()
            },
            orElse: {}
        )
    }

    /// The receiver caught up: receiving resumes. Any thread.
    func resume(_ receiver: any _DatagramReceiver) {
        self.perform(
            { state in
                guard state.receiver === receiver, state.paused else { return }
                state.paused = false
                state.arm()
            },
            orElse: {}
        )
    }

    /// Arms a receive when a receiver wants one and none is in flight.
    private func arm() {
        self.core.assertOnRingThread()
        guard self.receiver != nil, self.receiveInFlight == nil, !self.paused, !self.awaitingBuffers, !self.closed
        else { return }
        guard !self.core.isStopping else {
            self.endReceiver(.canceled)
            return
        }
        self.receiveCancelled = false
        if self.multishotUnsupported {
            self.armSingle()
            return
        }
        let pool: _ProvidedBuffers
        if let existing = self.pool {
            pool = existing
        } else {
            do throws(Errno) {
                pool = try self.core.makeBufferPool(
                    count: self.bufferCount,
                    size: Self.payloadOffset + self.maximumDatagramSize
                )
                self.pool = pool
            } catch {
                self.endReceiver(error)
                return
            }
        }
        self.receiveIsMultishot = true
        self.receiveInFlight = self.core.submit(
            .receiveMessageMultishot(fd: self.fd, group: pool.group, message: self.template),
            target: self,
            context: Tag.multishot
        )
    }

    /// One `recvmsg` into fresh memory: when the provided buffers stay exhausted, or the
    /// kernel has no multishot `recvmsg` (before Linux 6.0).
    private func armSingle() {
        let memory = _ReadMemory(size: self.maximumDatagramSize)
        self.singleMemory = memory
        self.singleVector.pointee = iovec(iov_base: memory.buffer.baseAddress, iov_len: memory.buffer.count)
        self.single.pointee = msghdr()
        self.single.pointee.msg_name = self.singleName
        self.single.pointee.msg_namelen = socklen_t(Self.nameSpace)
        self.single.pointee.msg_control = self.singleControl
        self.single.pointee.msg_controllen = Self.controlSpace
        self.single.pointee.msg_iov = self.singleVector
        self.single.pointee.msg_iovlen = 1
        self.receiveIsMultishot = false
        self.receiveInFlight = self.core.submit(
            .receiveMessage(fd: self.fd, message: self.single),
            target: self,
            context: Tag.single
        )
    }

    private func cancelReceive() {
        guard let receive = self.receiveInFlight, !self.receiveCancelled else { return }
        self.receiveCancelled = true
        self.core.submit(.cancel(userData: receive), target: self, context: Tag.ignore)
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.assertOnRingThread()
        switch context {
        case Tag.multishot:
            if !flags.hasMore { self.receiveInFlight = nil }
            if result >= 0, let id = flags.bufferID {
                self.rearmedAfterWait = false
                self.received(self.datagram(inBuffer: id, filled: Int(result)))
            } else if result < 0 {
                self.receiveFailed(Errno(rawValue: -result))
            }
        case Tag.single:
            self.receiveInFlight = nil
            let memory = self.singleMemory
            self.singleMemory = nil
            if result >= 0, let memory {
                self.received(self.datagram(inSingle: memory, length: Int(result)))
            } else if result < 0 {
                self.receiveFailed(Errno(rawValue: -result))
            }
        default:
            return
        }
        if self.receiveInFlight == nil {
            self.arm()
            self.finishIfIdle()
        }
    }

    /// The datagram the kernel wrote into provided buffer `id` (`filled` bytes in all).
    private func datagram(inBuffer id: UInt16, filled: Int) -> Datagram {
        let pool = self.pool!
        let base = pool.bufferAddress(id)
        let header = base.loadUnaligned(as: io_uring_recvmsg_out.self)
        let available = max(0, filled - Self.payloadOffset)
        let length = Int(header.payloadlen)
        let kept = min(length, available)
        let source = Self.address(base + Self.headerSize, length: min(Int(header.namelen), Self.nameSpace))
        self.readDrops(base + Self.headerSize + Self.nameSpace, length: min(Int(header.controllen), Self.controlSpace))
        let data = pool.lend(id, filled: filled, bytes: Self.payloadOffset..<Self.payloadOffset + kept)
        let truncated = header.flags & UInt32(MSG_TRUNC) != 0 || length > kept
        return Datagram(data: data, source: source, isTruncated: truncated, length: max(length, kept))
    }

    /// The datagram a single receive put in fresh memory (`length`: as `recvmsg` returned it).
    private func datagram(inSingle memory: _ReadMemory, length: Int) -> Datagram {
        let message = self.single.pointee
        let kept = min(length, memory.buffer.count)
        let source = Self.address(UnsafeRawPointer(self.singleName), length: Int(message.msg_namelen))
        self.readDrops(UnsafeRawPointer(self.singleControl), length: Int(message.msg_controllen))
        let truncated = message.msg_flags & Int32(MSG_TRUNC) != 0
        return Datagram(data: memory.rope(count: kept), source: source, isTruncated: truncated, length: length)
    }

    /// The sender's address; `nil` for none (an unnamed Unix sender: its family alone).
    private static func address(_ name: UnsafeRawPointer, length: Int) -> SocketAddress? {
        guard length > MemoryLayout<sa_family_t>.size else { return nil }
        return try? SocketAddress(unsafeAddress: name.assumingMemoryBound(to: sockaddr.self), length: socklen_t(length))
    }

    /// Reads the `SO_RXQ_OVFL` count from the control data, if the kernel sent one.
    private func readDrops(_ control: UnsafeRawPointer, length: Int) {
        let headerSize = MemoryLayout<cmsghdr>.size
        guard length >= headerSize + 4 else { return }
        let header = control.loadUnaligned(as: cmsghdr.self)
        guard header.cmsg_level == SOL_SOCKET, header.cmsg_type == SO_RXQ_OVFL else { return }
        let drops = control.loadUnaligned(fromByteOffset: headerSize, as: UInt32.self)
        self.counters.kernelDrops.store(UInt64(drops), ordering: .relaxed)
    }

    private func received(_ datagram: Datagram) {
        self.counters.received.add(1, ordering: .relaxed)
        if datagram.isTruncated { self.counters.truncated.add(1, ordering: .relaxed) }
        guard let receiver = self.receiver else {
            self.carry.append(datagram)  // arriving after the receiver stopped: the next one's
            return
        }
        if !receiver.deliver(datagram) && !self.paused {
            // Behind: stop receiving until it catches up (the socket buffer holds the rest).
            self.paused = true
            self.cancelReceive()
        }
    }

    private func receiveFailed(_ error: Errno) {
        switch error {
        case .canceled:
            // Ours (paused, stopped, closed): nothing to report. Anyone else's: the ring is
            // shutting down, which ends the receive and the channel.
            if !self.receiveCancelled {
                self.endReceiver(.canceled)
                if self.core.isStopping { self.closeOnRing() }
            }
        case .noBufferSpace:
            // Every provided buffer is held by ropes. As a stream's receive does: wait one turn
            // (buffers released meanwhile go back at its end), then read into fresh memory
            // if none came back — unless the receiver itself is behind: then wait for it.
            guard self.receiver != nil, !self.awaitingBuffers else { return }
            if self.rearmedAfterWait {
                self.rearmedAfterWait = false
                self.receiveIntoFreshMemory()
                return
            }
            self.awaitingBuffers = true
            self.core.enqueue { [self] in
                guard self.awaitingBuffers else { return }
                self.awaitingBuffers = false
                guard let pool = self.pool, self.receiveInFlight == nil, self.receiver != nil else { return }
                if pool.buffersOnLoan < pool.bufferCount {
                    self.rearmedAfterWait = true
                    self.arm()
                } else {
                    self.receiveIntoFreshMemory()
                }
            }
        case .invalidArgument where self.receiveIsMultishot:
            self.multishotUnsupported = true  // before Linux 6.0: single receives from now on
        case .connectionRefused, .noRouteToHost, .networkUnreachable, .interrupted:
            // An ICMP error for a connected socket (the kernel reports it once): the receive
            // goes on.
            if error != .interrupted { self.receiver?.transient(error) }
        default:
            self.endReceiver(error)
        }
    }

    private func receiveIntoFreshMemory() {
        guard self.receiveInFlight == nil, self.receiver != nil, !self.paused, !self.closed else { return }
        self.counters.fallbackReceives.add(1, ordering: .relaxed)
        self.core.counters.fallbackReceives.add(1, ordering: .relaxed)
        self.receiveCancelled = false
        self.armSingle()
    }

    private func endReceiver(_ error: Errno) {
        guard let receiver = self.receiver else { return }
        self.receiver = nil
        self.paused = false
        receiver.end(error)
    }

    // MARK: Sending

    /// Sends `data` to `address` (any thread); `completion` gets the outcome.
    func send(_ data: ByteRope, to address: SocketAddress?, completion: _DatagramSendCompletion) {
        if self.core.isRingThread {
            self.sendOnRing(data, to: address, completion: completion)
        } else {
            self.core.enqueue(
                { self.sendOnRing(data, to: address, completion: completion) },
                orElse: { Self.report(.canceled, to: completion, on: nil) }
            )
        }
    }

    private func sendOnRing(_ data: ByteRope, to address: SocketAddress?, completion: _DatagramSendCompletion) {
        self.core.assertOnRingThread()
        guard !self.closed, !self.core.isStopping else {
            Self.report(.canceled, to: completion, on: self.core)
            return
        }
        let send = self.spareSends.popLast() ?? _DatagramSend(state: self)
        send.prepare(data: data, address: address, completion: completion)
        self.sendsInFlight += 1
        self.core.submit(.sendmsg(fd: self.fd, message: send.message), target: send, context: 0)
    }

    /// A send's `sendmsg` completed.
    func sendCompleted(_ send: _DatagramSend, result: Int32) {
        self.core.assertOnRingThread()
        self.sendsInFlight -= 1
        let completion = send.takeCompletion()
        if result >= 0 { self.counters.sent.add(1, ordering: .relaxed) }
        if self.spareSends.count < 16 { self.spareSends.append(send) }
        Self.report(result >= 0 ? nil : Errno(rawValue: -result), to: completion, on: self.core)
        self.finishIfIdle()
    }

    /// Hands a send's outcome to its handler or task: on the ring with no hop when the
    /// handler's queue is the ring (or it is a task), else delivered to its queue.
    private static func report(_ error: Errno?, to completion: _DatagramSendCompletion, on core: _RingCore?) {
        switch completion {
        case .continuation(let continuation):
            continuation.resume(returning: error)
        case .handler(let queue, let onRing, let handler):
            if onRing, core?.isRingThread == true {
                handler(error)
            } else if let core, core.isRingThread {
                core.deliver(on: queue) { handler(error) }
            } else {
                queue.enqueue { handler(error) }
            }
        }
    }

    // MARK: Closing

    /// Closes the channel (any thread, once).
    func close() {
        guard !self.closeRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.perform(
            { state in state.closeOnRing() },
            orElse: {
                // The ring's thread is gone, and with it every operation: nothing of the state
                // is touched by another thread any more. The receiver holds the state: let
                // go of it.
                self.receiver = nil
                self.closeSocket()
            }
        )
    }

    private func closeOnRing() {
        self.core.assertOnRingThread()
        guard !self.closed else { return }
        self.closed = true
        self.cancelReceive()
        self.endReceiver(.canceled)
        self.carry = _FIFO()
        self.finishIfIdle()
    }

    /// Closed, with no receive and no send in flight: the socket goes.
    private func finishIfIdle() {
        guard self.closed, !self.finished, self.receiveInFlight == nil, self.sendsInFlight == 0 else { return }
        if let pool = self.pool {
            self.core.releaseBufferPool(pool)
            self.pool = nil
        }
        self.spareSends.removeAll()
        self.core.releaseDescriptor(self.fd)
        self.closeSocket()
    }

    private func closeSocket() {
        guard !self.finished else { return }
        self.finished = true
        _POSIX.close(self.fd)
        self.unixFile?.remove()
    }
}
