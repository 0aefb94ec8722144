//===----------------------------------------------------------------------===//
// RingIO — hooks for the test suites (package-visible, not public API).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Test hooks over the engine's internal API.
package enum _RingIOTesting {
    /// Whether this process can set up io_uring at all; the error the kernel gave if not.
    package static func ringSetUpError() -> RingSetupError? {
        do {
            let ring = try RingLoop(entries: 4)
            ring.shutdown()
            return nil
        } catch {
            return error
        }
    }

    /// Whether io_uring can be set up in this process, whatever engine loops take by default.
    package static let ioUringAvailable: Bool = {
        guard let ring = try? RingLoop(entries: 4, backend: .ioUring) else { return false }
        ring.shutdown()
        return true
    }()

    /// A completion as a test sees it.
    package struct Completion: Sendable, Equatable {
        package var result: Int32
        package var hasMore: Bool

        package init(result: Int32, hasMore: Bool) {
            self.result = result
            self.hasMore = hasMore
        }
    }

    /// Submits `request` from the ring thread; `completion` runs on the ring thread for each
    /// of its completions. `keepAlive` is held until the final completion (the owner of the
    /// request's pointers). Call from any thread.
    ///
    /// - Parameter submitted: Receives the operation's user data on the ring thread.
    package static func submit(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil,
        submitted: (@Sendable (UInt64) -> Void)? = nil,
        completion: @escaping @Sendable (Completion) -> Void
    ) {
        ring.enqueue {
            let userData = ring.core.submit(request(), target: self.target(keepAlive: keepAlive, completion))
            submitted?(userData)
        }
    }

    /// A target reporting each completion, holding `keepAlive` until the final one.
    private static func target(
        keepAlive: (any Sendable)?,
        _ completion: @escaping @Sendable (Completion) -> Void
    ) -> _ClosureTarget {
        _ClosureTarget { result, flags in
            if !flags.hasMore { withExtendedLifetime(keepAlive) {} }
            completion(Completion(result: result, hasMore: flags.hasMore))
        }
    }

    /// Submits `request` and, in the same ring turn (so the same submission), a cancellation
    /// of it: the two race in the kernel.
    package static func submitThenCancel(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil,
        completion: @escaping @Sendable (Completion) -> Void,
        cancelCompletion: @escaping @Sendable (Int32) -> Void
    ) {
        ring.enqueue {
            let userData = ring.core.submit(request(), target: self.target(keepAlive: keepAlive, completion))
            ring.core.submit(
                .cancel(userData: userData),
                target: _ClosureTarget { result, _ in cancelCompletion(result) }
            )
        }
    }

    /// Submits `count` no-ops in one ring turn; each completion calls `completion`.
    package static func nops(_ count: Int, on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        ring.enqueue {
            let target = _ClosureTarget { result, _ in completion(result) }
            for _ in 0..<count {
                ring.core.submit(.nop, target: target)
            }
        }
    }

    /// Submits `count` no-ops in one ring turn, as ``nops(_:on:completion:)`` does (each
    /// completion names its no-op's index), then, still
    /// in that turn and before the ring reaps anything, calls `overflowed` with whether
    /// completions wait in the kernel's overflow list because the completion queue was full.
    ///
    /// No-ops complete inside the submitting syscall, and the engine flushes a full SQ to the
    /// kernel without reaping: more no-ops than the CQ holds must overflow it. The fault test
    /// for CQ overflow uses this to show the overflow happened, then that every completion
    /// still arrives exactly once.
    package static func nops(
        _ count: Int,
        on ring: RingLoop,
        completion: @escaping @Sendable (_ index: Int, _ result: Int32) -> Void,
        overflowed: @escaping @Sendable (Bool) -> Void
    ) {
        ring.enqueue {
            for index in 0..<count {
                ring.core.submit(.nop, target: _ClosureTarget { result, _ in completion(index, result) })
            }
            overflowed(ring.core.completionQueueHasOverflow)
        }
    }

    /// A ring barrier: `completion` runs on the ring thread once the ring has done everything
    /// that what happened before this call asks of it — what a test waits for before it
    /// checks that something did *not* happen.
    ///
    /// When `completion` runs:
    /// - every job enqueued on the ring before this call has run (jobs run in enqueue order);
    /// - every completion the kernel had posted, or had queued for the ring, when this call was
    ///   made (data that arrived on a socket with a receive or poll armed, an accept, a timeout
    ///   that expired, a no-op) has been reaped and handed to its operation: io_uring runs what
    ///   it queued at the flush of the turn that takes the barrier (each flush asks for events),
    ///   and the readiness engine looks at epoll in that flush;
    /// - every handler those completions sent to the ring's own queue has run (they run in the
    ///   next turn; the barrier waits one more), and every handler they sent to a
    ///   `DispatchQueue` has been sent (the caller then waits for that queue itself).
    ///
    /// What the barrier cannot wait for: work on other threads that has not posted its result
    /// yet — an io_uring worker running a file read or a splice, the readiness engine's
    /// blocking pool, a DispatchQueue handler still running (and what it enqueues after), and
    /// bytes on loopback TCP, which reach the receiving socket in a softirq that a loaded
    /// machine may run later, on a kernel thread (a test waits for those bytes themselves).
    ///
    /// Why not a no-op with IOSQE_IO_DRAIN: a drained request waits for every request in
    /// flight, and a multishot receive or accept, or a poll on a quiet descriptor, never
    /// completes — the barrier would never pass while a channel reads or a listener accepts.
    /// And why two turns after the no-op: it completes at once, in the submit that also runs
    /// the completions the kernel queued, so its target may run before theirs in that turn.
    package static func barrier(on ring: RingLoop, completion: @escaping @Sendable () -> Void) {
        ring.enqueue {
            ring.core.actOnReadinessAtNextFlush()
            ring.core.submit(
                .nop,
                target: _ClosureTarget { _, _ in
                    // Reaped in the turn that took the barrier, with everything the kernel had
                    // for the ring; handlers that turn sent to the ring run next turn, in the
                    // order they were sent, maybe before this job: one turn more.
                    ring.enqueue { ring.enqueue(completion) }
                }
            )
        }
    }

    /// Whether `ring`'s thread has exited (after ``RingLoop/shutdown()``): it runs nothing more,
    /// so a barrier through it has nothing to wait for (and its jobs would be discarded).
    package static func hasExited(_ ring: RingLoop) -> Bool {
        ring.core.hasFinished
    }

    /// Runs `body` on the ring thread and returns its result.
    private static func onRing<R: Sendable>(_ ring: RingLoop, _ body: @escaping @Sendable () -> R) -> R {
        let result = _Lock<R?>(nil)
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// The address range of the ring's receive buffers (registering them if needed).
    package static func receiveBufferMemory(of ring: RingLoop) -> Range<UInt> {
        self.onRing(ring) { ring.core.providedBuffers.memoryRange }
    }

    /// The address range of a datagram channel's receive buffers; empty before its first
    /// receive registered them.
    package static func receiveBufferMemory(of channel: IODatagramChannel) -> Range<UInt> {
        self.onRing(channel.ring) { channel.state.bufferMemoryRange }
    }

    /// The ring that performs `channel`'s I/O; `nil` when its creation failed.
    package static func ring(of channel: IOChannel) -> RingLoop? {
        channel.state.entry?.ring
    }

    /// How many writes of `channel` ride the syscall of the write ahead of them now.
    package static func ridingWrites(of channel: IOChannel) -> Int {
        guard let ring = channel.state.entry?.ring else { return 0 }
        return self.onRing(ring) {
            channel.state.operations.reduce(0) { count, operation in
                count + ((operation as? _WriteOperation)?.isRiding == true ? 1 : 0)
            }
        }
    }

    /// How many finished write operations `channel` keeps for reuse now.
    package static func pooledWriteOperations(of channel: IOChannel) -> Int {
        guard let ring = channel.state.entry?.ring else { return 0 }
        return self.onRing(ring) { channel.state.writePool.count }
    }

    /// Runs `work` on `queue` through the ring's delivery path, from the ring thread: grouped
    /// into one `async` per DispatchQueue per turn, inline for the ring itself.
    package static func deliver(from ring: RingLoop, on queue: some IOQueue, _ work: @escaping @Sendable () -> Void) {
        precondition(ring.isCurrentThread)
        ring.core.deliver(on: queue, work)
    }

    // MARK: The ring's timers

    /// A timer armed through ``armTimer(on:at:fired:)``.
    package struct Timer: Sendable {
        fileprivate let token: _RingTimerToken
    }

    /// CLOCK_MONOTONIC now, in nanoseconds: the clock of the ring's timers.
    package static func monotonicNanoseconds() -> Int64 {
        _Clock.nanoseconds(realtime: false)
    }

    /// Arms a timer of the ring's queue for `deadline` (monotonic nanoseconds); `fired` runs on
    /// the ring thread when it fires. Call on the ring thread.
    package static func armTimer(
        on ring: RingLoop,
        at deadline: Int64,
        fired: @escaping @Sendable () -> Void
    ) -> Timer {
        Timer(token: ring.core.armTimer(at: deadline, target: _ClosureTimerTarget(fired)))
    }

    /// Arms a timer for `deadline` whose target is `target` (held until it fires, is
    /// cancelled, or the ring exits). Call on the ring thread.
    package static func armTimer(on ring: RingLoop, at deadline: Int64, holding target: AnyObject & Sendable) -> Timer {
        Timer(token: ring.core.armTimer(at: deadline, target: _ClosureTimerTarget { withExtendedLifetime(target) {} }))
    }

    /// Cancels a timer (a stale one: nothing). Call on the ring thread.
    package static func cancelTimer(_ timer: Timer, on ring: RingLoop) {
        ring.core.cancelTimer(timer.token)
    }

    /// How many timers of the ring are armed (channel intervals, source timers, tests').
    package static func armedTimerCount(of ring: RingLoop) -> Int {
        self.onRing(ring) { ring.core.armedTimerCount }
    }

    // MARK: The POSIX layer

    /// `_POSIX.close`: never retried; a descriptor that is not open traps.
    package static func closeDescriptor(_ fd: CInt) {
        _POSIX.close(fd)
    }

    /// `_POSIX.setOption` (`setsockopt`).
    package static func setSocketOption(_ fd: CInt, level: CInt, name: CInt, to value: CInt) throws(Errno) {
        try _POSIX.setOption(fd, level: level, name: name, to: value)
    }

    /// `_POSIX.option` (`getsockopt`).
    package static func socketOption(_ fd: CInt, level: CInt, name: CInt) throws(Errno) -> CInt {
        try _POSIX.option(fd, level: level, name: name)
    }

    /// `_POSIX.seek` (`lseek`).
    package static func seek(_ fd: CInt, to offset: Int64, from whence: CInt) throws(Errno) -> Int64 {
        try _POSIX.seek(fd, to: offset, from: whence)
    }

    /// `_POSIX.status(ofPath:followingLinks:)` (`stat`, `lstat`): the file's size.
    package static func fileSize(atPath path: String, followingLinks: Bool) throws(Errno) -> Int64 {
        Int64(try _POSIX.status(ofPath: path, followingLinks: followingLinks).st_size)
    }

    // MARK: Ring confinement

    /// Calls a ring-only entry point of `channel`'s descriptor entry from the calling thread:
    /// debug builds stop the process there (`assertOnRingThread()`).
    package static func touchChannelOffRing(_ channel: IOChannel) {
        _ = channel.state.entry?.stickyError
    }

    /// Hands `source` a completion of no operation of its, from the calling thread: debug
    /// builds stop the process there.
    package static func touchSourceOffRing(_ source: IOSource) {
        source.core.ringOperationCompleted(result: 0, flags: CompletionFlags(0), context: 0xff)
    }

    /// Hands `listener`'s first acceptor a completion of no operation of its, from the calling
    /// thread: debug builds stop the process there.
    package static func touchListenerOffRing(_ listener: IOAcceptor) {
        listener.core.acceptors[0].ringOperationCompleted(
            result: 0,
            flags: CompletionFlags(0),
            context: 0xff
        )
    }
}

/// A timer target that runs a closure: for the tests.
private final class _ClosureTimerTarget: _RingTimerTarget {
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    func ringTimerFired(context: UInt64) {
        self.body()
    }
}
