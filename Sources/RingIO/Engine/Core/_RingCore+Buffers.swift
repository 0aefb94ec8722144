//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring's descriptors and provided buffers.
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

extension _RingCore {
    /// Makes the next flush act on everything the kernel has for the ring: io_uring's always
    /// does (each flush asks for events, which runs the completions the kernel queued as task
    /// work); the readiness engine looks at epoll then even when the turn has completions
    /// already. For the tests' ring barrier (`_RingIOTesting.barrier(on:completion:)`).
    internal func actOnReadinessAtNextFlush() {
        self.assertOnRingThread()
        self.engine.readiness?.pollAtNextSubmit()
    }

    // MARK: Ring thread: descriptors

    /// The caller is done with `fd` (a channel's entry finished, a listener closes its
    /// socket, a source was cancelled): the readiness engine lets go of its registration, so
    /// that the number may name a new file. Nothing for io_uring, which registers nothing.
    internal func releaseDescriptor(_ fd: CInt) {
        self.assertOnRingThread()
        self.engine.forget(fd)
    }

    // MARK: Ring thread: provided buffers

    /// The ring's provided receive buffers, registered on first use (buffer group 0).
    internal var providedBuffers: _ProvidedBuffers {
        self.assertOnRingThread()
        if let pool = self._providedBuffers { return pool }
        do throws(Errno) {
            let pool = try _ProvidedBuffers(
                engine: self.engine,
                group: 0,
                bufferCount: self.receiveBufferCount,
                bufferSize: self.receiveBufferSize
            )
            self._providedBuffers = pool
            return pool
        } catch {
            preconditionFailure("RingIO: registering the receive buffer ring failed: \(error)")
        }
    }

    /// Hands released buffers back to the kernel. (A receive that found none waits one turn and
    /// then reads into fresh memory: see `_DescriptorEntry.receiveEnded`.)
    @inline(__always)
    func collectReturnedBuffers() {
        // A flag, not `ownedPools.isEmpty`: reading the array retains and releases its
        // storage, twice a turn (+40 instructions per echo round trip, measured).
        if self.hasOwnedPools { self.collectOwnedPools() }
        guard let pool = self._providedBuffers else { return }
        pool.collectReturned()
        self.counters.buffersOnLoan.store(UInt64(pool.buffersOnLoan), ordering: .relaxed)
    }

    @inline(never)
    func collectOwnedPools() {
        for pool in self.ownedPools { pool.collectReturned() }
    }

    /// A pool of `count` provided buffers of `size` bytes (each starting on a multiple of 64
    /// bytes) in a buffer group of its own, for one
    /// owner (a datagram channel, whose buffers are sized to its largest datagram): collected
    /// each turn like the ring's own, until ``releaseBufferPool(_:)`` — or the ring's exit,
    /// which unregisters every pool still registered (its buffers on loan stay valid).
    ///
    /// - Throws: ENOMEM; ENOSPC when every buffer group id is taken.
    internal func makeBufferPool(count: Int, size: Int) throws(Errno) -> _ProvidedBuffers {
        self.assertOnRingThread()
        guard
            let group = self.freeBufferGroups.popLast()
                ?? self.nextBufferGroup.map({ group in
                    self.nextBufferGroup = group < UInt16.max - 1 ? group + 1 : nil
                    return group
                })
        else { throw Errno.noSpace }
        do throws(Errno) {
            let pool = try _ProvidedBuffers(
                engine: self.engine,
                group: group,
                bufferCount: count,
                bufferSize: size,
                stride: (size + 63) & ~63
            )
            self.ownedPools.append(pool)
            self.hasOwnedPools = true
            return pool
        } catch {
            self.freeBufferGroups.append(group)
            throw error
        }
    }

    /// Unregisters a pool of ``makeBufferPool(count:size:)`` (nothing once the ring has
    /// exited, which did). Its buffers on loan stay valid until their ropes are gone.
    internal func releaseBufferPool(_ pool: _ProvidedBuffers) {
        self.assertOnRingThread()
        guard let index = self.ownedPools.firstIndex(where: { $0 === pool }) else { return }
        self.ownedPools.remove(at: index)
        self.hasOwnedPools = !self.ownedPools.isEmpty
        pool.close(engine: self.engine)
        self.freeBufferGroups.append(pool.group)
    }
}
