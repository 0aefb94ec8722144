//===----------------------------------------------------------------------===//
// RingIO — channels: the state behind an IOChannel.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The state behind an ``IOChannel``.
///
/// Confinement: the properties under "ring thread only" are touched only on the ring thread of
/// `entry` (public calls from other threads reach it through `perform`, in program order); the
/// methods under "Ring thread" check so in debug builds. A channel whose creation failed has
/// no entry; its state never changes after init.
internal final class _ChannelState: @unchecked Sendable {
    // MARK: Immutable after init
    let kind: IOChannel.Kind
    /// The descriptor's shared state; `nil` when creation failed.
    let entry: _DescriptorEntry?
    /// Why creation failed; every operation ends with it.
    let creationFailure: Errno?
    let cleanupQueue: any IOQueue
    let cleanup: Cleanup
    /// Random access: the file position when the channel was created (R59).
    let base: Int64

    // MARK: Any thread
    /// What ``IOChannel/fileDescriptor`` answers: the descriptor; -1 while a path channel has
    /// not opened it; ``closedDescriptor`` once the channel is closed, for good.
    let descriptor: Atomic<CInt>
    /// ``descriptor`` once the channel is closed: the ring's open (which sets -1 to the new
    /// descriptor with a compare-and-exchange) can no longer replace it.
    static let closedDescriptor: CInt = -2
    /// Set by `close` on the calling thread (the ring learns it in order, through `perform`).
    let closeRequested = Atomic<Bool>(false)
    /// What waits for the cleanup handler to have run (``IOChannel/closeAndWait(flags:)``).
    /// Touched once per channel by the cleanup, and by each waiter.
    let cleanupWaiters = _Lock(CleanupWaiters())

    /// ``queuedWriteBytes`` for other threads (``IOChannel/queuedWriteBytes``): a relaxed
    /// copy, stored by the ring thread whenever it changes.
    let publishedQueuedWriteBytes = Atomic<Int>(0)

    // MARK: Ring thread only
    /// The bytes of the writes the channel has taken and not yet finished.
    var queuedWriteBytes = 0
    var lowWater: Int
    var highWater = Int.max
    var intervalNanoseconds: Int64 = 0
    var strictInterval = false
    var closed = false
    var stopped = false
    /// Closed with every operation finished: reported to the entry.
    var done = false
    /// A listener's graceful shutdown asked for a stop once no write is pending
    /// (`stopOnceWritesFinish()`); checked as each operation finishes.
    var stopWhenWritesFinish = false
    /// Operations scheduled and not yet finished.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) var operations = _InlineList<_Operation>()
    /// Finished writes for reuse; emptied when the channel is done (they hold it).
    @exclusivity(unchecked) var writePool = _WriteOperationPool()
    /// The pipe of file sends (`_FileSendOperation`), kept empty between them; closed when the
    /// channel is done.
    var splicePipe: _SplicePipe?

    /// What runs when the channel is cleaned up, on the cleanup queue.
    enum Cleanup: Sendable {
        /// The cleanup handler given at creation.
        case handler(@Sendable (Errno?) -> Void)
        /// A connection RingIO accepted or dialled: its slot closes the socket and runs the
        /// connection's own handlers — no closure to allocate per connection.
        case connection(_ConnectionSlot)

        func run(_ error: Errno?) {
            switch self {
            case .handler(let handler): handler(error)
            case .connection(let slot): slot.channelCleanedUp()
            }
        }
    }

    init(
        kind: IOChannel.Kind,
        entry: _DescriptorEntry?,
        creationFailure: Errno?,
        cleanupQueue: any IOQueue,
        cleanup: Cleanup,
        base: Int64,
        descriptor: CInt
    ) {
        self.kind = kind
        self.entry = entry
        self.creationFailure = creationFailure
        self.cleanupQueue = cleanupQueue
        self.cleanup = cleanup
        self.base = base
        self.descriptor = Atomic(descriptor)
        // D1: deliver as data arrives on streams of arriving bytes; dispatch's chunk elsewhere.
        if kind == .stream, let entry, entry.type.isStreamLike {
            self.lowWater = 1
        } else {
            self.lowWater = _ChannelLimits.chunkSize
        }
    }

    /// What waits for the cleanup handler to have run (``whenCleanedUp(_:)``). A struct of
    /// its own rather than an optional array: a lock of an optional (a generic type) was
    /// destroyed through the optional's value witnesses, which look its metadata up at run
    /// time — about 300 instructions per channel.
    struct CleanupWaiters {
        var waiters: [@Sendable () -> Void] = []
        /// The cleanup handler has run: a new waiter goes at once.
        var cleanedUp = false
    }

    /// A channel whose creation failed: the cleanup handler gets `error` at once.
    static func failed(
        kind: IOChannel.Kind,
        error: Errno,
        queue: any IOQueue,
        cleanup: Cleanup
    ) -> _ChannelState {
        let state = _ChannelState(
            kind: kind,
            entry: nil,
            creationFailure: error,
            cleanupQueue: queue,
            cleanup: cleanup,
            base: 0,
            descriptor: -1
        )
        queue.enqueue { state.runCleanup(error) }
        return state
    }

    /// Runs the cleanup handler (on the cleanup queue), then lets the waiters go.
    func runCleanup(_ error: Errno?) {
        self.cleanup.run(error)
        self.cleanedUp()
    }

    /// The cleanup handler has run: the waiters go, and later ones go at once.
    func cleanedUp() {
        let waiters = self.cleanupWaiters.withLock { state in
            state.cleanedUp = true
            return exchange(&state.waiters, with: [])
        }
        for waiter in waiters { waiter() }
    }

    /// Calls `waiter` once the cleanup handler has run: at once, on the calling thread, if it
    /// has; else on the cleanup queue, after the handler.
    func whenCleanedUp(_ waiter: @escaping @Sendable () -> Void) {
        let done = self.cleanupWaiters.withLock { state -> Bool in
            guard !state.cleanedUp else { return true }
            state.waiters.append(waiter)
            return false
        }
        if done { waiter() }
    }

    /// Opens a path channel's descriptor now, on its ring (a descriptor channel's is open):
    /// `deliver` gets `nil` once it is, or why it is not — the creation error, the open's
    /// error, ECANCELED when the channel was closed first. On the ring thread.
    func openNow(_ deliver: @escaping @Sendable (Errno?) -> Void) {
        guard let entry = self.entry else {
            deliver(self.creationFailure!)
            return
        }
        let open: @Sendable () -> Void = {
            guard !self.done, !self.closed else {
                deliver(.canceled)
                return
            }
            entry.withDescriptor { error in deliver(error ?? entry.stickyError) }
        }
        if entry.core.isRingThread {
            open()
        } else {
            // A ring that is gone opens nothing: the caller must hear of it all the same.
            entry.core.enqueue(open, orElse: { deliver(.canceled) })
        }
    }

    // MARK: Any thread

    /// Runs `body` on the entry's ring thread: now when called there, else through the ring's
    /// inbox. Nothing happens for a channel whose creation failed.
    ///
    /// A `body` that captures nothing allocates nothing on the ring thread; to hand it a value,
    /// use ``perform(with:_:)``.
    func perform(_ body: @escaping @Sendable (_ChannelState) -> Void) {
        guard let entry = self.entry else { return }
        if entry.core.isRingThread {
            body(self)
        } else {
            entry.ring.enqueue { body(self) }
        }
    }

    /// As ``perform(_:)``, with `value` handed to `body`: a `body` that captures nothing
    /// then allocates nothing when called on the ring thread (a handler setting a water mark
    /// or closing its channel), where a closure capturing the value allocated its context
    /// every time. Another thread pays for one closure, as before.
    @inline(__always)
    func perform<Value: Sendable>(with value: Value, _ body: @escaping @Sendable (_ChannelState, Value) -> Void) {
        guard let entry = self.entry else { return }
        if entry.core.isRingThread {
            body(self, value)
        } else {
            entry.ring.enqueue { body(self, value) }
        }
    }

    enum ReadMode {
        case normal
        /// `IOChannel.read(fromFileDescriptor:)` on a stream: stop as soon as the next read
        /// would block (R78).
        case untilWouldBlock
    }

    /// Schedules a read; returns its operation (to stop it), or `nil` when creation failed.
    func scheduleRead(
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        mode: ReadMode,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _Operation? {
        guard let entry = self.entry else {
            let error = self.creationFailure!
            queue.enqueue { handler(true, nil, error) }
            return nil
        }
        let operation = self.makeRead(
            entry: entry,
            offset: offset,
            length: length,
            queue: queue,
            mode: mode,
            handler: handler
        )
        self.schedule(operation)
        return operation
    }

    /// A read of this channel, not yet scheduled (see `schedule`).
    func makeRead(
        entry: _DescriptorEntry,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        mode: ReadMode,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _ReadOperation {
        let operation: _ReadOperation
        if entry.type.isStreamLike && (self.kind == .stream || entry.type != .terminal) {
            operation = _StreamReadOperation(
                channel: self,
                entry: entry,
                queue: queue,
                offset: offset,
                length: length,
                untilWouldBlock: mode == .untilWouldBlock,
                handler: handler
            )
        } else {
            operation = _FileReadOperation(
                channel: self,
                entry: entry,
                queue: queue,
                offset: offset,
                length: length,
                handler: handler
            )
        }
        return operation
    }

    /// Schedules a write; returns its operation, or `nil` when creation failed.
    func scheduleWrite(
        offset: Int64,
        data: ByteRope,
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _Operation? {
        guard let entry = self.entry else {
            let error = self.creationFailure!
            queue.enqueue { handler(true, data, error) }
            return nil
        }
        let operation = _WriteOperation.make(
            channel: self,
            entry: entry,
            queue: queue,
            offset: offset,
            data: data,
            handler: handler
        )
        self.schedule(operation)
        return operation
    }

    /// Schedules a file send; returns its operation, or `nil` when creation failed.
    func scheduleFileSend(
        file: CInt?,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        progress: _SendProgress?,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _Operation? {
        guard let entry = self.entry else {
            let error = self.creationFailure!
            queue.enqueue { handler(true, nil, error) }
            return nil
        }
        let operation = self.makeFileSend(
            entry: entry,
            file: file,
            offset: offset,
            length: length,
            queue: queue,
            progress: progress,
            handler: handler
        )
        self.schedule(operation)
        return operation
    }

    /// A file send on this channel, not yet scheduled (see `schedule`).
    /// `file` is `nil` when a source channel lends its descriptor later
    /// (`_FileSendOperation.sourceResolved(_:)`).
    func makeFileSend(
        entry: _DescriptorEntry,
        file: CInt?,
        offset: Int64,
        length: Int,
        queue: any IOQueue,
        progress: _SendProgress?,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _FileSendOperation {
        _FileSendOperation(
            channel: self,
            entry: entry,
            queue: queue,
            source: file ?? -1,
            awaitingSource: file == nil,
            offset: offset,
            length: length,
            progress: progress,
            handler: handler
        )
    }

    /// Schedules a half-close (``IOChannel/shutdownOutput(queue:handler:)``); returns its
    /// operation, or `nil` when creation failed.
    func scheduleShutdownOutput(
        queue: any IOQueue,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) -> _Operation? {
        guard let entry = self.entry else {
            let error = self.creationFailure!
            queue.enqueue { handler(true, nil, error) }
            return nil
        }
        let operation = _ShutdownOutputOperation(channel: self, entry: entry, queue: queue, handler: handler)
        self.schedule(operation)
        return operation
    }

    /// A duplicate of this random-access channel's descriptor (opened first when it is a
    /// path's), for a file send on another channel: `deliver` gets it — the caller's to close
    /// — or why there is none (the channel was closed: ECANCELED; its creation or its open
    /// failed; EBADF poisoning; EMFILE), on this channel's ring thread.
    func duplicateDescriptor(_ deliver: @escaping @Sendable (Result<CInt, Errno>) -> Void) {
        guard let entry = self.entry else {
            deliver(.failure(self.creationFailure!))
            return
        }
        guard !self.closeRequested.load(ordering: .acquiring) else {
            deliver(.failure(.canceled))
            return
        }
        self.perform { state in
            // Closed since: its descriptor may be closed by now.
            guard !state.done else {
                deliver(.failure(.canceled))
                return
            }
            entry.withDescriptor { error in
                if let error = error ?? entry.stickyError {
                    deliver(.failure(error))
                    return
                }
                // Duplicated as it is known to be open: the channel may close its own later.
                do throws(Errno) {
                    deliver(.success(try _POSIX.duplicate(entry.fd)))
                } catch {
                    deliver(.failure(error))
                }
            }
        }
    }

    func scheduleBarrier(_ work: @escaping @Sendable () -> Void) {
        guard let entry = self.entry else {
            self.cleanupQueue.enqueue(work)
            return
        }
        let queue = self.cleanupQueue
        self.perform { _ in entry.enqueueBarrier(work, queue: queue) }
    }

    func requestClose(stop: Bool) {
        self.closeRequested.store(true, ordering: .releasing)
        self.descriptor.store(Self.closedDescriptor, ordering: .releasing)
        self.perform(with: stop) { state, stop in state.close(stop: stop) }
    }

    /// As ``requestClose(stop:)``, then calls `waiter` once the cleanup handler has run (see
    /// ``whenCleanedUp(_:)``) — or, when the close finds the ring gone, once the ring has
    /// finished, if the channel never reached it: no cleanup will ever run for such a
    /// channel (a channel the ring had taken was closed, and its cleanup sent out, as the ring
    /// exited). Any thread.
    func requestClose(stop: Bool, whenCleanedUp waiter: @escaping @Sendable () -> Void) {
        self.whenCleanedUp(waiter)
        self.closeRequested.store(true, ordering: .releasing)
        self.descriptor.store(Self.closedDescriptor, ordering: .releasing)
        // A failed channel: its cleanup was sent out when it was made.
        guard let entry = self.entry else { return }
        if entry.core.isRingThread {
            self.close(stop: stop)
            return
        }
        entry.core.enqueue(
            { self.close(stop: stop) },
            orElse: {
                // On the ring thread as its last act (or after it): `done` is the ring's to read.
                entry.core.whenFinished { if !self.done { self.cleanedUp() } }
            }
        )
    }

    /// Hands `operation` (of this channel, which has an entry) to the ring: at once on the ring
    /// thread (a handler or a task on the ring scheduling its next operation), else as a job of
    /// its own through the inbox — in program order with the caller's other calls either way,
    /// and with no closure to allocate.
    func schedule(_ operation: _Operation) {
        let core = self.entry!.core
        if core.isRingThread {
            self.submitOnRingThread(operation)
        } else {
            core.enqueue(.scheduled(operation))
        }
    }

    // MARK: Ring thread

    /// Admits or refuses `operation`; see `schedule`.
    func submitOnRingThread(_ operation: _Operation) {
        self.entry?.core.assertOnRingThread()
        operation.snapshotPolicies(of: self)
        operation.scheduled = true
        guard let entry = self.entry else { return }
        if self.closed {
            operation.refuse(.canceled)
        } else if operation.cancelledBeforeScheduling {
            operation.refuse(.canceled)
        } else if let error = entry.stickyError {
            operation.refuse(error)
        } else if operation.completesAtOnce {
            operation.completeAtOnce()
        } else {
            self.operations.append(operation)
            if operation.writeLength > 0 { self.changeQueuedWriteBytes(by: operation.writeLength) }
            entry.enqueue(operation)
        }
    }

    @inline(__always)
    private func changeQueuedWriteBytes(by delta: Int) {
        self.queuedWriteBytes += delta
        self.publishedQueuedWriteBytes.store(self.queuedWriteBytes, ordering: .relaxed)
    }

    private func close(stop: Bool) {
        self.entry?.core.assertOnRingThread()
        self.closed = true
        if stop && !self.stopped {
            self.stopped = true
            // Each stop finishes the operation (or will, once its syscall returns) and removes
            // it from `operations`.
            for operation in self.operations { operation.terminate(.canceled) }
        }
        self.finishIfDone()
    }

    /// Closes and stops the channel as its ring exits (``_DescriptorEntry/closeForRingExit()``).
    func closeForRingExit() {
        self.closeRequested.store(true, ordering: .releasing)
        self.descriptor.store(Self.closedDescriptor, ordering: .releasing)
        self.close(stop: true)
    }

    /// Called by an operation after its final handler call is on its way.
    func operationFinished(_ operation: _Operation) {
        self.entry?.core.assertOnRingThread()
        if self.operations.remove(operation) {
            if operation.writeLength > 0 { self.changeQueuedWriteBytes(by: -operation.writeLength) }
        }
        if self.stopWhenWritesFinish && !self.hasPendingWrites {
            self.stopWhenWritesFinish = false
            self.requestClose(stop: true)
            return
        }
        self.finishIfDone()
    }

    /// Whether a write or a file send of this channel is scheduled and not finished.
    private var hasPendingWrites: Bool {
        self.operations.contains { !($0 is _ReadOperation) }
    }

    /// Closes the channel with ``IOChannel/CloseFlags/stop`` as soon as none of its writes (and
    /// file sends) is pending: now when none is, else when the last one finishes — a
    /// listener's graceful shutdown (`IOListener.shutdown`). A write scheduled meanwhile is
    /// waited for too; one not yet on the ring when the stop comes is refused (ECANCELED).
    func stopOnceWritesFinish() {
        self.entry?.core.assertOnRingThread()
        guard !self.stopped, !self.done else { return }
        if self.hasPendingWrites {
            self.stopWhenWritesFinish = true
        } else {
            self.requestClose(stop: true)
        }
    }

    private func finishIfDone() {
        guard self.closed, self.operations.isEmpty, !self.done, let entry = self.entry else { return }
        self.done = true
        self.writePool.removeAll()
        self.splicePipe = nil
        entry.channelDone(self)
    }
}

/// A channel delivered to its cleanup queue runs its cleanup there (``_DescriptorEntry/runCleanups()``):
/// no closure per channel. On the cleanup queue, once: the entry delivers each channel once.
extension _ChannelState: _RingRunnable {
    func runDelivered() {
        self.runCleanup(nil)
    }
}
