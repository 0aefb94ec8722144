//===----------------------------------------------------------------------===//
// RingIO — the engine: the requests a ring runs, and how io_uring takes them.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Preparing operations

/// What an operation asks the kernel to do. Each case fills one SQE.
///
/// Every pointer in a request (buffers, iovecs, message headers, paths, timespecs) must stay
/// valid until the operation's final completion: the submitter keeps its owner alive, usually
/// in the completion target.
package enum RingRequest {
    /// Nothing: a round trip through the ring (the benchmarks' no-ops, the engine's tests).
    case nop
    /// Read into `buffer` at `offset` (-1: the file position).
    case read(fd: CInt, buffer: UnsafeMutableRawBufferPointer, offset: Int64)
    /// Write `buffer` at `offset` (-1: the file position).
    case write(fd: CInt, buffer: UnsafeRawBufferPointer, offset: Int64)
    /// Vectored write at `offset` (-1: the file position).
    case writev(fd: CInt, vectors: UnsafeBufferPointer<iovec>, offset: Int64)
    /// Send on a socket, with MSG_NOSIGNAL: a closed peer ends the send with EPIPE, never a
    /// SIGPIPE.
    case send(fd: CInt, buffer: UnsafeRawBufferPointer)
    /// Send a message (vectored), with MSG_NOSIGNAL.
    case sendmsg(fd: CInt, message: UnsafePointer<msghdr>)
    /// Receive repeatedly into buffers picked from provided-buffer group `group` (multishot).
    case receiveMultishot(fd: CInt, group: UInt16)
    /// Receive once, at most `length` bytes, into a buffer picked from `group`; `noWait`:
    /// fail with EAGAIN rather than wait for data.
    case receiveSelect(fd: CInt, group: UInt16, length: Int, noWait: Bool)
    /// Read once at the file position, at most `length` bytes, into a buffer picked from
    /// `group`; `noWait`: fail with EAGAIN rather than wait for data (RWF_NOWAIT).
    case readSelect(fd: CInt, group: UInt16, length: Int, noWait: Bool)
    /// Accept connections repeatedly (multishot); each completion is a new descriptor,
    /// close-on-exec.
    case acceptMultishot(fd: CInt)
    /// Connect socket `fd` to the `length` bytes of address at `address`.
    case connect(fd: CInt, address: UnsafePointer<sockaddr>, length: socklen_t)
    /// Receive datagrams repeatedly (multishot) into buffers picked from provided-buffer group
    /// `group`, each laid out as `io_uring_recvmsg_out`, the source address (up to `message`'s
    /// `msg_namelen` bytes), control data (up to `msg_controllen`), then the payload. `message`
    /// gives only those two lengths (and its control buffer's presence).
    case receiveMessageMultishot(fd: CInt, group: UInt16, message: UnsafeMutablePointer<msghdr>)
    /// Receive one message into the buffers and name of `message`; the result is a datagram's
    /// whole length, also when it was truncated (MSG_TRUNC).
    case receiveMessage(fd: CInt, message: UnsafeMutablePointer<msghdr>)
    /// Shut down one or both directions of a connected socket (`SHUT_WR`…).
    case shutdown(fd: CInt, how: CInt)
    /// Open `path` relative to `directory` (AT_FDCWD for the working directory).
    case openat(directory: CInt, path: UnsafePointer<CChar>, flags: CInt, mode: mode_t)
    /// Close a descriptor.
    case close(fd: CInt)
    /// A one-shot timeout after a duration; `spec` must stay alive until the operation is
    /// submitted. (No multishot timeouts: an async cancel that lands between a fire and its
    /// re-arm misses one, and it runs on forever; repeating timers re-arm one-shot
    /// ``timeoutAt(spec:realtime:)``s instead.)
    case timeout(spec: _KernelTimespec)
    /// A one-shot timeout at an absolute time: CLOCK_MONOTONIC, or CLOCK_REALTIME when
    /// `realtime` (then it follows changes of the wall clock).
    case timeoutAt(spec: _KernelTimespec, realtime: Bool)
    /// Readiness of `fd` for the poll `events`, once.
    case poll(fd: CInt, events: UInt32)
    /// Move `length` bytes from `input` (at `inputOffset`, -1: its position) to `output` (at
    /// `outputOffset`, -1: its position) in the kernel; one side must be a pipe. io_uring runs
    /// it on a worker thread (it cannot tell in advance whether it would block).
    case splice(input: CInt, inputOffset: Int64, output: CInt, outputOffset: Int64, length: Int)
    /// Cancel the operation with this user data.
    case cancel(userData: UInt64)
    /// Cancel every operation of this ring.
    case cancelAll

    /// The kind recorded in `user_data`.
    package var kind: OperationKind {
        switch self {
        case .nop: return .nop
        case .read: return .read
        case .write, .writev: return .write
        case .send, .sendmsg: return .send
        case .receiveMultishot, .receiveSelect, .readSelect: return .receive
        case .acceptMultishot: return .accept
        case .connect: return .connect
        case .receiveMessageMultishot, .receiveMessage: return .receive
        case .shutdown: return .shutdown
        case .openat: return .open
        case .close: return .close
        case .timeout, .timeoutAt: return .timeout
        case .poll: return .poll
        case .splice: return .splice
        case .cancel, .cancelAll: return .cancel
        }
    }
}
