//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: waiting for readiness.
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
    // MARK: Waiting for readiness

    /// Parks `op` until `fd` is ready for reading or writing. A descriptor epoll refuses
    /// (EPERM: a regular file, most character devices) sends `op` to the pool, or ends it
    /// with `ifRefused` when given.
    func park(_ op: _ReadyOp, fd: CInt, writing: Bool, ifRefused: Int32?) {
        guard let watch = self.watch(fd) else {
            let error = errno
            if error == EPERM {
                if let ifRefused {
                    self.finish(op, ifRefused)
                } else {
                    self.offload(op)
                }
            } else {
                self.finish(op, -error)
            }
            return
        }
        if writing && !watch.watchesOutput {
            var event = epoll_event()
            event.events = Self.inputEvents | EPOLLOUT.rawValue
            event.data.u64 = watch.token
            guard epoll_ctl(self.epollFD, EPOLL_CTL_MOD, fd, &event) == 0 else {
                self.finish(op, -errno)
                return
            }
            watch.watchesOutput = true
        }
        op.state = .waiting
        op.waitFD = fd
        op.watch = watch
        if writing {
            watch.writers.append(op)
        } else {
            watch.readers.append(op)
        }
    }

    static let inputEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | CLiburing_EPOLLET

    /// The registration of `fd`, made now if there is none; `nil` with `errno` set when epoll
    /// refuses the descriptor.
    func watch(_ fd: CInt) -> _Watch? {
        let index = Int(fd)
        if index < self.watches.count, let watch = self.watches[index] { return watch }
        let generation = self.nextGeneration
        self.nextGeneration &+= 1
        let token = UInt64(UInt32(bitPattern: fd)) | UInt64(generation) << 32
        var event = epoll_event()
        event.events = Self.inputEvents
        event.data.u64 = token
        guard epoll_ctl(self.epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else { return nil }
        let watch = _Watch(generation: generation, token: token)
        if index >= self.watches.count {
            self.watches.append(contentsOf: repeatElement(nil, count: index + 1 - self.watches.count))
        }
        self.watches[index] = watch
        return watch
    }

    /// Whether `fd` is a stream socket, whose short read means it was empty (a datagram
    /// socket's is one message of several, a message with descriptors ends a read too): asked
    /// once per registration.
    func isStreamSocket(_ fd: CInt) -> Bool {
        guard Int(fd) < self.watches.count, let watch = self.watches[Int(fd)] else { return false }
        if let known = watch.isStreamSocket { return known }
        let type = try? _POSIX.option(fd, level: SOL_SOCKET, name: SO_TYPE)
        let stream = type == Int32(SOCK_STREAM.rawValue)
        watch.isStreamSocket = stream
        return stream
    }

    /// Whether epoll reported the peer's close (or an error) on `fd`: a state, not an edge.
    func peerClosed(_ fd: CInt) -> Bool {
        Int(fd) < self.watches.count && self.watches[Int(fd)]?.peerClosed == true
    }

    /// The descriptor's owner is done with it (a channel's entry finished, a listener closed
    /// its socket, a close request): its registration goes, so that the number, once it names
    /// a new file, is registered afresh. Requests of others still waiting on it (a source on a
    /// channel's descriptor) run again: they find it ready, or wait on a new registration.
    internal func forget(_ fd: CInt) {
        self.assertOnRingThread()
        let index = Int(fd)
        guard index >= 0, index < self.watches.count, let watch = self.watches[index] else { return }
        self.watches[index] = nil
        _ = epoll_ctl(self.epollFD, EPOLL_CTL_DEL, fd, nil)  // ENOENT/EBADF: closed already
        for op in watch.readers where op.state == .waiting { self.rerun(op) }
        for op in watch.writers where op.state == .waiting { self.rerun(op) }
        watch.readers.removeAll()
        watch.writers.removeAll()
    }

    func rerun(_ op: _ReadyOp) {
        op.state = .pushed
        op.watch = nil
        self.runnable.append(op)
    }

    /// After a transient request (a poll, a plain read of a descriptor the core does not own
    /// for long): its registration goes when nothing else waits on it.
    func releaseIfIdle(_ fd: CInt) {
        guard fd >= 0, fd != self.persistentFD, Int(fd) < self.watches.count,
            let watch = self.watches[Int(fd)],
            !watch.readers.contains(where: { $0.state == .waiting }),
            !watch.writers.contains(where: { $0.state == .waiting })
        else { return }
        self.forget(fd)
    }
}
