//===----------------------------------------------------------------------===//
// RingIO — io_uring: the submission entry of each request.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension RingRequest {
    /// Fills `sqe`. The corresponding liburing calls are `io_uring_prep_*`.
    internal func prepare(_ sqe: UnsafeMutablePointer<io_uring_sqe>, userData: UInt64) {
        switch self {
        case .nop:
            io_uring_prep_nop(sqe)
        case .read(let fd, let buffer, let offset):
            io_uring_prep_read(sqe, fd, buffer.baseAddress, UInt32(clamping: buffer.count), UInt64(bitPattern: offset))
        case .write(let fd, let buffer, let offset):
            io_uring_prep_write(sqe, fd, buffer.baseAddress, UInt32(clamping: buffer.count), UInt64(bitPattern: offset))
        case .writev(let fd, let vectors, let offset):
            io_uring_prep_writev(sqe, fd, vectors.baseAddress, UInt32(vectors.count), UInt64(bitPattern: offset))
        case .send(let fd, let buffer):
            io_uring_prep_send(sqe, fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        case .sendmsg(let fd, let message):
            io_uring_prep_sendmsg(sqe, fd, message, UInt32(MSG_NOSIGNAL))
        case .receiveMultishot(let fd, let group):
            io_uring_prep_recv_multishot(sqe, fd, nil, 0, 0)
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .receiveSelect(let fd, let group, let length, let noWait):
            io_uring_prep_recv(sqe, fd, nil, length, noWait ? Int32(MSG_DONTWAIT) : 0)
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .readSelect(let fd, let group, let length, let noWait):
            io_uring_prep_read(sqe, fd, nil, UInt32(clamping: length), UInt64(bitPattern: -1))
            if noWait { CLiburing_sqe_set_rw_flags(sqe, CLiburing_RWF_NOWAIT) }
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .acceptMultishot(let fd):
            io_uring_prep_multishot_accept(sqe, fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
        case .connect(let fd, let address, let length):
            io_uring_prep_connect(sqe, fd, address, length)
        case .receiveMessageMultishot(let fd, let group, let message):
            // MSG_TRUNC: `payloadlen` is a truncated datagram's whole length.
            io_uring_prep_recvmsg_multishot(sqe, fd, message, UInt32(MSG_TRUNC))
            CLiburing_sqe_set_buffer_group(sqe, group)
        case .receiveMessage(let fd, let message):
            io_uring_prep_recvmsg(sqe, fd, message, UInt32(MSG_TRUNC))
        case .shutdown(let fd, let how):
            io_uring_prep_shutdown(sqe, fd, how)
        case .openat(let directory, let path, let flags, let mode):
            io_uring_prep_openat(sqe, directory, path, flags, mode)
        case .close(let fd):
            io_uring_prep_close(sqe, fd)
        case .timeout(let spec):
            io_uring_prep_timeout(sqe, spec.pointer, 0, 0)
        case .timeoutAt(let spec, let realtime):
            io_uring_prep_timeout(
                sqe,
                spec.pointer,
                0,
                UInt32(IORING_TIMEOUT_ABS) | (realtime ? UInt32(IORING_TIMEOUT_REALTIME) : 0)
            )
        case .poll(let fd, let events):
            io_uring_prep_poll_add(sqe, fd, events)
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            io_uring_prep_splice(sqe, input, inputOffset, output, outputOffset, UInt32(clamping: length), 0)
        case .cancel(let target):
            io_uring_prep_cancel64(sqe, target, 0)
        case .cancelAll:
            io_uring_prep_cancel64(sqe, 0, Int32(IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL))
        }
        io_uring_sqe_set_data64(sqe, userData)
    }

    /// Fills `sqe`, linked to the entry prepared after it (IOSQE_IO_LINK): that one starts once
    /// this one completed in full.
    internal func prepareLinkedToNext(_ sqe: UnsafeMutablePointer<io_uring_sqe>, userData: UInt64) {
        self.prepare(sqe, userData: userData)
        sqe.pointee.flags |= CLiburing_IOSQE_IO_LINK
    }
}
