//===----------------------------------------------------------------------===//
// RingIO — networking: one datagram send.
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

/// How a send reports its outcome.
internal enum _DatagramSendCompletion: @unchecked Sendable {
    // @unchecked: the continuation is resumed once, by the send's completion.
    /// A handler on a queue; `onRing`: the queue is the channel's ring (called there, no hop).
    case handler(any IOQueue, Bool, @Sendable (Errno?) -> Void)
    case continuation(UnsafeContinuation<Errno?, Never>)
}

/// One send: the rope (held until the kernel is done with it), its iovecs, the message and
/// the destination. Reused by its channel.
internal final class _DatagramSend: RingOperationTarget {
    unowned let state: _DatagramState
    let message: UnsafeMutablePointer<msghdr>
    private let name: UnsafeMutablePointer<sockaddr_storage>
    private var vectors: UnsafeMutableBufferPointer<iovec>
    private var data = ByteRope()
    private var completion: _DatagramSendCompletion?

    /// The kernel's limit on iovecs per message (`UIO_MAXIOV`).
    static let maximumVectors = 1_024

    init(state: _DatagramState) {
        self.state = state
        self.message = .allocate(capacity: 1)
        self.message.initialize(to: msghdr())
        self.name = .allocate(capacity: 1)
        self.name.initialize(to: sockaddr_storage())
        self.vectors = .allocate(capacity: 4)
        self.vectors.initialize(repeating: iovec())
    }

    deinit {
        self.message.deallocate()
        self.name.deallocate()
        self.vectors.deallocate()
    }

    func prepare(data: ByteRope, address: SocketAddress?, completion: _DatagramSendCompletion) {
        var data = data
        if data.regionCount > Self.maximumVectors { data = data.contiguous() }
        if data.regionCount > self.vectors.count {
            self.vectors.deallocate()
            var capacity = self.vectors.count
            while capacity < data.regionCount { capacity *= 2 }
            self.vectors = .allocate(capacity: capacity)
            self.vectors.initialize(repeating: iovec())
        }
        let (count, _) = data.exportIOVectors(into: self.vectors)
        self.message.pointee = msghdr()
        if let address {
            address.copyBytes(to: UnsafeMutableRawPointer(self.name))
            self.message.pointee.msg_name = UnsafeMutableRawPointer(self.name)
            self.message.pointee.msg_namelen = address.length
        }
        self.message.pointee.msg_iov = self.vectors.baseAddress
        self.message.pointee.msg_iovlen = count
        self.data = data
        self.completion = completion
    }

    func takeCompletion() -> _DatagramSendCompletion {
        self.data = ByteRope()
        defer { self.completion = nil }
        return self.completion!
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.state.sendCompleted(self, result: result)
    }
}
