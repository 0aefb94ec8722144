//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: one request.
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

/// One request in the readiness engine.
// @unchecked Sendable: handed to a pool thread while `state == .pooled`; the engine touches
// only `pool` (atomic) then, and reads `poolResult` after the pool posted it under the lock of
// `_PoolResults`, which orders the two threads.
internal final class _ReadyOp: @unchecked Sendable {
    enum State { case pushed, linked, waiting, timing, pooled, done }

    static let poolQueued: UInt8 = 0
    static let poolRunning: UInt8 = 1
    static let poolCancelled: UInt8 = 2

    let request: RingRequest
    let userData: UInt64
    var slot: UInt32 { UInt32(truncatingIfNeeded: self.userData) }
    var state = State.pushed
    /// The request pushed after this one with a link: it starts when this one completed in full.
    var linked: _ReadyOp?
    /// For a link: the result that counts as "in full" (-1: any non-negative).
    var expectedResult = -1
    /// The descriptor it waits on (parked), else -1, and its registration.
    var waitFD: CInt = -1
    var watch: _Watch?
    /// Its registration goes when it completes (a descriptor the core does not hold on to).
    var transient = false
    /// One-time preparation done (a listening socket made non-blocking; a connecting socket
    /// made non-blocking for the request).
    var prepared = false
    /// A connect: the socket's flags to restore when the request ends (-1: unchanged).
    var savedFlags: CInt = -1
    /// A connect: `connect` answered that the connection is under way.
    var connectStarted = false
    var deadline: Int64 = 0
    /// On the pool: queued, running or cancelled.
    let pool = Atomic<UInt8>(0)
    var poolResult: Int32 = 0
    /// A read on the pool into a provided buffer: the buffer, taken before.
    var selected: _SelectedBuffer?
    var selectedLength = 0

    init(request: RingRequest, userData: UInt64) {
        self.request = request
        self.userData = userData
    }

    /// Runs the blocking call on a pool thread.
    func runBlocking() -> Int32 {
        let result: Int
        switch self.request {
        case .read(let fd, let buffer, let offset):
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            result = CLiburing_preadv2(fd, &vector, 1, offset, 0)
        case .write(let fd, let buffer, let offset):
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
            result = CLiburing_pwritev2(fd, &vector, 1, offset, 0)
        case .writev(let fd, let vectors, let offset):
            result = CLiburing_pwritev2(fd, vectors.baseAddress, CInt(vectors.count), offset, 0)
        case .readSelect(let fd, _, _, _):
            var vector = iovec(iov_base: self.selected!.address, iov_len: self.selectedLength)
            result = CLiburing_preadv2(fd, &vector, 1, -1, 0)
        case .openat(let directory, let path, let flags, let mode):
            result = Int(Glibc.openat(directory, path, flags, mode))
        case .splice(let input, let inputOffset, let output, let outputOffset, let length):
            result = CLiburing_splice(input, inputOffset, output, outputOffset, length, 0)
        case .send(let fd, let buffer):
            result = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        case .sendmsg(let fd, let message):
            result = Glibc.sendmsg(fd, message, Int32(MSG_NOSIGNAL))
        default:
            return -EINVAL
        }
        return result >= 0 ? Int32(clamping: result) : -errno
    }
}
