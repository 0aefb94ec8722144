//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: how each request runs.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _ReadinessEngine {
    // MARK: Running requests

    func run(_ op: _ReadyOp) {
        switch op.request {
        case .nop:
            self.finish(op, 0)
        case .read(let fd, let buffer, let offset):
            // A readable eventfd, signalfd or pipe the core or a source reads: registered
            // while the read waits (the core's own wake-up descriptor stays registered).
            op.transient = fd != self.persistentFD
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            self.transfer(op, fd: fd, vectors: &vector, count: 1, offset: offset, writing: false)
        case .write(let fd, let buffer, let offset):
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
            self.transfer(op, fd: fd, vectors: &vector, count: 1, offset: offset, writing: true)
        case .writev(let fd, let vectors, let offset):
            self.transfer(
                op,
                fd: fd,
                vectors: UnsafeMutablePointer(mutating: vectors.baseAddress!),
                count: vectors.count,
                offset: offset,
                writing: true
            )
        case .send(let fd, let buffer):
            let sent = Glibc.send(fd, buffer.baseAddress, buffer.count, Self.sendFlags)
            self.settle(op, sent, fd: fd, writing: true)
        case .sendmsg(let fd, let message):
            let sent = Glibc.sendmsg(fd, message, Self.sendFlags)
            self.settle(op, sent, fd: fd, writing: true)
        case .receiveMultishot(let fd, let group):
            self.receiveMultishot(op, fd: fd, group: group)
        case .receiveSelect(let fd, let group, let length, let noWait):
            self.receiveOnce(op, fd: fd, group: group, length: length, noWait: noWait, socket: true)
        case .readSelect(let fd, let group, let length, let noWait):
            self.receiveOnce(op, fd: fd, group: group, length: length, noWait: noWait, socket: false)
        case .acceptMultishot(let fd):
            self.acceptMultishot(op, fd: fd)
        case .connect(let fd, let address, let length):
            self.connect(op, fd: fd, address: address, length: length)
        case .receiveMessageMultishot(let fd, let group, let message):
            self.receiveMessageMultishot(op, fd: fd, group: group, template: message)
        case .receiveMessage(let fd, let message):
            // A datagram of 0 bytes is one (not an end of file): every result counts.
            let received = Glibc.recvmsg(fd, message, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
            if received < 0 && errno == EAGAIN {
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            } else {
                self.settle(op, received, fd: fd, writing: false)
            }
        case .shutdown(let fd, let how):
            self.finish(op, Glibc.shutdown(fd, how) == 0 ? 0 : -errno)
        case .openat:
            self.offload(op)
        case .close(let fd):
            self.forget(fd)
            self.finish(op, Glibc.close(fd) == 0 ? 0 : -errno)
        case .timeout(let spec):
            let duration = Int64(spec.pointer.pointee.tv_sec) * 1_000_000_000 + Int64(spec.pointer.pointee.tv_nsec)
            let now = _Clock.nanoseconds(realtime: false)
            op.deadline = duration > Int64.max - now ? Int64.max : now + duration
            op.state = .timing
            self.timeouts.append(op)
        case .timeoutAt(let spec, let realtime):
            var deadline = Int64(spec.pointer.pointee.tv_sec) * 1_000_000_000 + Int64(spec.pointer.pointee.tv_nsec)
            if realtime {
                deadline = _Clock.nanoseconds(realtime: false) &+ (deadline &- _Clock.nanoseconds(realtime: true))
            }
            op.deadline = deadline
            op.state = .timing
            self.timeouts.append(op)
        case .poll(let fd, let events):
            op.transient = true
            var descriptor = pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)
            let ready = Glibc.poll(&descriptor, 1, 0)
            if ready > 0 {
                if descriptor.revents & Int16(POLLNVAL) != 0 {
                    self.finish(op, -EBADF)
                } else {
                    self.finish(op, Int32(UInt16(bitPattern: descriptor.revents)))
                }
            } else if ready == 0 || errno == EINTR {
                self.park(op, fd: fd, writing: events & UInt32(POLLIN) == 0, ifRefused: -EINVAL)
            } else {
                self.finish(op, -errno)
            }
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            op.expectedResult = length
            if inputOffset >= 0 {
                self.offload(op)  // from a file: its read may wait for the disk
                return
            }
            // SPLICE_F_NONBLOCK covers the pipe's side only: a splice into a socket waits unless
            // the socket itself is non-blocking, so it is made so for the call (and restored).
            let moved = Self.nonBlocking(output) {
                CLiburing_splice(input, inputOffset, output, outputOffset, length, CLiburing_SPLICE_F_NONBLOCK)
            }
            self.settle(op, moved, fd: output, writing: true)
        case .cancel(let target):
            self.finish(op, self.cancel(userData: target))
        case .cancelAll:
            var cancelled: Int32 = 0
            for candidate in self.opsBySlot {
                guard let candidate, candidate !== op, candidate.state != .done else { continue }
                if self.cancel(candidate) { cancelled += 1 }
            }
            self.finish(op, cancelled)
        }
    }

    static let sendFlags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)

    /// A read or write of `vectors` without waiting (RWF_NOWAIT); waits for readiness, or goes
    /// to the pool for a descriptor epoll refuses (a regular file).
    func transfer(
        _ op: _ReadyOp,
        fd: CInt,
        vectors: UnsafeMutablePointer<iovec>,
        count: Int,
        offset: Int64,
        writing: Bool
    ) {
        let result =
            writing
            ? CLiburing_pwritev2(fd, vectors, CInt(count), offset, CLiburing_RWF_NOWAIT)
            : CLiburing_preadv2(fd, vectors, CInt(count), offset, CLiburing_RWF_NOWAIT)
        if result < 0 && errno == EOPNOTSUPP {
            // No RWF_NOWAIT here: a regular file whose file system has none for this call
            // (ext4's buffered writes) goes to the pool; a descriptor epoll takes (a terminal)
            // is made non-blocking for the call.
            guard self.watch(fd) != nil else {
                if errno == EPERM {
                    self.offload(op)
                } else {
                    self.finish(op, -errno)
                }
                return
            }
            op.transient = fd != self.persistentFD
            let plain = Self.nonBlocking(fd) {
                writing
                    ? CLiburing_pwritev2(fd, vectors, CInt(count), offset, 0)
                    : CLiburing_preadv2(fd, vectors, CInt(count), offset, 0)
            }
            self.settle(op, plain, fd: fd, writing: writing)
            return
        }
        self.settle(op, result, fd: fd, writing: writing)
    }

    /// Runs `call` with `O_NONBLOCK` set on `fd` (and restored after, `errno` kept): for the
    /// calls that take no per-call flag, where `fd` is in blocking mode.
    static func nonBlocking(_ fd: CInt, _ call: () -> Int) -> Int {
        let flags = fcntl(fd, F_GETFL)
        let toggles = flags >= 0 && flags & O_NONBLOCK == 0
        if toggles { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let result = call()
        let error = errno
        if toggles { _ = fcntl(fd, F_SETFL, flags) }
        errno = error
        return result
    }

    /// Completes `op` with the outcome of a non-blocking call, or parks it until `fd` is ready
    /// (EAGAIN); a descriptor epoll refuses sends it to the pool.
    func settle(_ op: _ReadyOp, _ result: Int, fd: CInt, writing: Bool) {
        if result >= 0 {
            self.finish(op, Int32(clamping: result))
            return
        }
        let error = errno
        switch error {
        case EAGAIN:
            self.park(op, fd: fd, writing: writing, ifRefused: nil)
        case EINTR:
            self.deferred.append(op)
        default:
            self.finish(op, -error)
        }
    }

    /// Receives into provided buffers until the descriptor is empty, the budget is spent (the
    /// request then runs again next round) or it ends.
    func receiveMultishot(_ op: _ReadyOp, fd: CInt, group: UInt16) {
        for _ in 0..<8 {
            guard let buffer = self.groups[group]?.peek() else {
                self.finish(op, -ENOBUFS)
                return
            }
            let received = Glibc.recv(fd, buffer.address, buffer.length, Int32(MSG_DONTWAIT))
            if received > 0 {
                self.groups[group]!.consume()
                self.emit(op, Int32(received), flags: Self.bufferFlags(buffer.id))
                if received < buffer.length && !self.peerClosed(fd) && self.isStreamSocket(fd) {
                    // Short: the socket is empty; its next edge is new data. (Once the peer
                    // closed, the end of file is no new edge: read on until it comes.)
                    self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
                    return
                }
                continue
            }
            if received == 0 {
                self.finish(op, 0)
                return
            }
            let error = errno
            if error == EAGAIN {
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            } else if error != EINTR {
                self.finish(op, -error)
            } else {
                continue
            }
            return
        }
        op.state = .pushed
        self.deferred.append(op)
    }

    /// One receive (socket) or read at the file position into a provided buffer.
    func receiveOnce(_ op: _ReadyOp, fd: CInt, group: UInt16, length: Int, noWait: Bool, socket: Bool) {
        guard let buffer = self.groups[group]?.peek() else {
            self.finish(op, -ENOBUFS)
            return
        }
        let count = min(length, buffer.length)
        let received: Int
        if socket {
            received = Glibc.recv(fd, buffer.address, count, Int32(MSG_DONTWAIT))
        } else {
            var vector = iovec(iov_base: buffer.address, iov_len: count)
            received = CLiburing_preadv2(fd, &vector, 1, -1, CLiburing_RWF_NOWAIT)
        }
        if received > 0 {
            self.groups[group]!.consume()
            self.finish(op, Int32(received), flags: Self.bufferFlags(buffer.id))
            return
        }
        if received == 0 {
            self.finish(op, 0)
            return
        }
        let error = errno
        switch error {
        case EAGAIN where noWait:
            self.finish(op, -EAGAIN)
        case EAGAIN:
            self.park(op, fd: fd, writing: false, ifRefused: nil)
        case EOPNOTSUPP where !socket:
            // No RWF_NOWAIT here: a descriptor epoll takes (a terminal) is read non-blocking; one
            // it refuses (a file on a file system without it) is read on the pool.
            guard self.watch(fd) != nil else {
                if errno == EPERM && !noWait {
                    self.offload(op)
                } else {
                    self.finish(op, errno == EPERM ? -EAGAIN : -errno)
                }
                return
            }
            op.transient = true
            let plain = Self.nonBlocking(fd) { Glibc.read(fd, buffer.address, count) }
            if plain > 0 {
                self.groups[group]!.consume()
                self.finish(op, Int32(plain), flags: Self.bufferFlags(buffer.id))
            } else if plain == 0 {
                self.finish(op, 0)
            } else if errno == EAGAIN {
                if noWait {
                    self.finish(op, -EAGAIN)
                } else {
                    self.park(op, fd: fd, writing: false, ifRefused: -EOPNOTSUPP)
                }
            } else {
                self.finish(op, -errno)
            }
        case EINTR:
            op.state = .pushed
            self.deferred.append(op)
        default:
            self.finish(op, -error)
        }
    }

    static func bufferFlags(_ id: UInt16) -> UInt32 {
        UInt32(IORING_CQE_F_BUFFER) | UInt32(id) << UInt32(IORING_CQE_BUFFER_SHIFT)
    }

    /// Accepts until the backlog is empty (close-on-exec descriptors), the budget is spent or
    /// an error ends the request (as io_uring's multishot accept, which an error ends).
    func acceptMultishot(_ op: _ReadyOp, fd: CInt) {
        if !op.prepared {
            op.prepared = true
            // Non-blocking: another ring accepting on the same socket may take the connection
            // between readiness and this accept.
            let flags = fcntl(fd, F_GETFL)
            if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        }
        for _ in 0..<16 {
            let accepted = CLiburing_accept_cloexec(fd)
            if accepted >= 0 {
                self.emit(op, accepted, flags: 0)
                continue
            }
            let error = errno
            switch error {
            case EAGAIN:
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            case EINTR, ECONNABORTED:
                continue
            default:
                self.finish(op, -error)
            }
            return
        }
        op.state = .pushed
        self.deferred.append(op)
    }

    /// Connects a socket without waiting: the socket is non-blocking for the request (its
    /// flags are restored when it ends, but for a cancel: the connect's owner closes a
    /// socket whose connect it cancelled); on EINPROGRESS (TCP) or EAGAIN (a Unix socket
    /// whose listener's backlog is full) the request waits for writability, then reads the
    /// outcome from `SO_ERROR` and, to tell a connect still under way from one done, asks
    /// `connect` again (EISCONN: connected).
    func connect(_ op: _ReadyOp, fd: CInt, address: UnsafePointer<sockaddr>, length: socklen_t) {
        if !op.prepared {
            op.prepared = true
            let flags = fcntl(fd, F_GETFL)
            if flags >= 0 && flags & O_NONBLOCK == 0 {
                op.savedFlags = flags
                _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            }
        } else {
            // Woken: writable, or an error. SO_ERROR holds (and clears) a failed attempt's error.
            let pending = (try? _POSIX.option(fd, level: SOL_SOCKET, name: SO_ERROR)) ?? 0
            if pending != 0 {
                self.endConnect(op, fd: fd, result: -pending)
                return
            }
        }
        while true {
            if Glibc.connect(fd, address, length) == 0 {
                self.endConnect(op, fd: fd, result: 0)
                return
            }
            switch errno {
            case EINTR:
                continue
            case EISCONN where op.connectStarted:
                self.endConnect(op, fd: fd, result: 0)
            case EINPROGRESS, EALREADY, EAGAIN:
                op.connectStarted = true
                self.park(op, fd: fd, writing: true, ifRefused: -ENOTSOCK)
            default:
                self.endConnect(op, fd: fd, result: -errno)
            }
            return
        }
    }

    func endConnect(_ op: _ReadyOp, fd: CInt, result: Int32) {
        if op.savedFlags >= 0 {
            let error = errno
            _ = fcntl(fd, F_SETFL, op.savedFlags)
            errno = error
        }
        self.finish(op, result)
    }

    /// Receives datagrams into provided buffers, each laid out as io_uring's multishot
    /// `recvmsg` lays it out (`io_uring_recvmsg_out`, the name, the control data, the
    /// payload), until the socket is empty, the budget is spent (the request runs again next
    /// round) or it ends. `MSG_TRUNC` makes `recvmsg` return a datagram's whole length, as the
    /// kernel reports it in `payloadlen`.
    func receiveMessageMultishot(
        _ op: _ReadyOp,
        fd: CInt,
        group: UInt16,
        template: UnsafeMutablePointer<msghdr>
    ) {
        let headerSize = MemoryLayout<io_uring_recvmsg_out>.size
        let nameSpace = Int(template.pointee.msg_namelen)
        let controlSpace = Int(template.pointee.msg_controllen)
        let payloadOffset = headerSize + nameSpace + controlSpace
        for _ in 0..<8 {
            guard let buffer = self.groups[group]?.peek() else {
                self.finish(op, -ENOBUFS)
                return
            }
            guard buffer.length >= payloadOffset else {
                self.finish(op, -EFAULT)  // as the kernel answers a buffer too small for the header
                return
            }
            var vector = iovec(iov_base: buffer.address + payloadOffset, iov_len: buffer.length - payloadOffset)
            var message = msghdr()
            message.msg_name = nameSpace > 0 ? buffer.address + headerSize : nil
            message.msg_namelen = socklen_t(nameSpace)
            message.msg_control = controlSpace > 0 ? buffer.address + headerSize + nameSpace : nil
            message.msg_controllen = controlSpace
            let received = withUnsafeMutablePointer(to: &vector) { vector in
                message.msg_iov = vector
                message.msg_iovlen = 1
                return Glibc.recvmsg(fd, &message, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
            }
            if received >= 0 {
                self.groups[group]!.consume()
                let header = io_uring_recvmsg_out(
                    namelen: UInt32(message.msg_namelen),
                    controllen: UInt32(message.msg_controllen),
                    payloadlen: UInt32(received),
                    flags: UInt32(bitPattern: message.msg_flags)
                )
                buffer.address.storeBytes(of: header, as: io_uring_recvmsg_out.self)
                let written = payloadOffset + min(received, buffer.length - payloadOffset)
                self.emit(op, Int32(written), flags: Self.bufferFlags(buffer.id))
                continue
            }
            let error = errno
            if error == EAGAIN {
                self.park(op, fd: fd, writing: false, ifRefused: -EINVAL)
            } else if error == EINTR {
                continue
            } else {
                self.finish(op, -error)
            }
            return
        }
        op.state = .pushed
        self.deferred.append(op)
    }
}
