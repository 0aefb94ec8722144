//===----------------------------------------------------------------------===//
// RingIO — the engine: a multishot receive whose data arrives as rope regions.
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What a receiver reports, on the ring thread.
internal enum ReceiveEvent {
    /// Bytes, in a region of a provided buffer (no copy).
    case data(ByteRope)
    /// The peer closed its side: no more data.
    case end
    /// The receive failed; no more events follow.
    case failure(Errno)
}

/// Keeps one multishot receive armed on a descriptor and turns each filled provided buffer
/// into a rope region.
///
/// Re-arms when the kernel ends the multishot early, and when the pool ran out of buffers
/// (`ENOBUFS`) waits for buffers to come back before re-arming: the data stays in the socket
/// meanwhile, so nothing is lost and nothing spins.
internal final class _MultishotReceiver: RingOperationTarget {
    // MARK: Immutable after init
    private unowned let core: _RingCore
    private let fd: CInt
    /// Multishot read (pipes, Linux 6.7) instead of multishot recv (sockets).
    private let useRead: Bool
    private let onEvent: (ReceiveEvent) -> Void

    // MARK: Ring thread only
    private var armed: UInt64?
    private var finished = false

    internal init(core: _RingCore, fd: CInt, useRead: Bool, onEvent: @escaping (ReceiveEvent) -> Void) {
        self.core = core
        self.fd = fd
        self.useRead = useRead
        self.onEvent = onEvent
    }

    /// Arms the receive. Ring thread.
    internal func start() {
        self.arm()
    }

    /// Cancels the receive; a final `.failure(.canceled)` follows unless it already finished.
    internal func cancel() {
        guard let armed = self.armed, !self.finished else { return }
        self.core.submit(.cancel(userData: armed), target: _ClosureTarget { _, _ in })
    }

    private func arm() {
        let group = self.core.providedBuffers.group
        let request: RingRequest =
            self.useRead ? .readMultishot(fd: self.fd, group: group) : .receiveMultishot(fd: self.fd, group: group)
        self.armed = self.core.submit(request, target: self)
    }

    internal func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        if !flags.hasMore { self.armed = nil }
        guard !self.finished else { return }
        if result > 0 {
            guard let id = flags.bufferID else {
                preconditionFailure("RingIO: a buffer-select receive completed without a buffer")
            }
            self.onEvent(.data(self.core.providedBuffers.lend(id, length: Int(result))))
            if !flags.hasMore && !self.finished { self.arm() }
        } else if result == 0 {
            self.finished = true
            self.onEvent(.end)
        } else if -result == ENOBUFS {
            // The waiter list keeps the receiver alive until buffers come back.
            self.core.providedBuffers.whenBuffersReturn {
                guard !self.finished, self.armed == nil else { return }
                self.arm()
            }
        } else {
            self.finished = true
            self.onEvent(.failure(Errno(rawValue: -result)))
        }
    }
}
