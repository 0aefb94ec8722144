//===----------------------------------------------------------------------===//
// RingIO — channels: one channel's state, and how channels find their descriptor's entry.
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
    let cleanupHandler: @Sendable (Errno?) -> Void
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

    // MARK: Ring thread only
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
    @exclusivity(unchecked) var operations: [_Operation] = []
    /// Finished writes for reuse; emptied when the channel is done (they hold it).
    @exclusivity(unchecked) var writePool = _WriteOperationPool()
    /// The pipe of file sends (`_FileSendOperation`), kept empty between them; closed when the
    /// channel is done.
    var splicePipe: _SplicePipe?

    init(
        kind: IOChannel.Kind,
        entry: _DescriptorEntry?,
        creationFailure: Errno?,
        cleanupQueue: any IOQueue,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void,
        base: Int64,
        descriptor: CInt
    ) {
        self.kind = kind
        self.entry = entry
        self.creationFailure = creationFailure
        self.cleanupQueue = cleanupQueue
        self.cleanupHandler = cleanupHandler
        self.base = base
        self.descriptor = Atomic(descriptor)
        // D1: deliver as data arrives on streams of arriving bytes; dispatch's chunk elsewhere.
        if kind == .stream, let entry, entry.type.isStreamLike {
            self.lowWater = 1
        } else {
            self.lowWater = _ChannelLimits.chunkSize
        }
    }

    /// A channel whose creation failed: the cleanup handler gets `error` at once.
    static func failed(
        kind: IOChannel.Kind,
        error: Errno,
        queue: any IOQueue,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) -> _ChannelState {
        let state = _ChannelState(
            kind: kind,
            entry: nil,
            creationFailure: error,
            cleanupQueue: queue,
            cleanupHandler: cleanupHandler,
            base: 0,
            descriptor: -1
        )
        queue.enqueue { cleanupHandler(error) }
        return state
    }

    // MARK: Any thread

    /// Runs `body` on the entry's ring thread: now when called there, else through the ring's
    /// inbox. Nothing happens for a channel whose creation failed.
    func perform(_ body: @escaping @Sendable (_ChannelState) -> Void) {
        guard let entry = self.entry else { return }
        if entry.core.isRingThread {
            body(self)
        } else {
            entry.ring.enqueue { body(self) }
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
        self.perform { state in state.close(stop: stop) }
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
            entry.enqueue(operation)
        }
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
        if let index = self.operations.firstIndex(where: { $0 === operation }) {
            self.operations.remove(at: index)
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

// MARK: - Finding a descriptor's entry

/// Every descriptor with channels on it has one entry, shared by all its channels (R31).
internal enum _DescriptorRegistry {
    /// Entries by descriptor number. Also guards each entry's `liveChannels`.
    private static let entries = _Lock<[CInt: _DescriptorEntry]>([:])

    /// A channel on descriptor `fd`.
    static func attach(
        kind: IOChannel.Kind,
        fileDescriptor fd: CInt,
        queue: any IOQueue,
        ring: RingLoop?,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) -> _ChannelState {
        var chosenRing = ring ?? (queue as? RingLoop)
        var setupError: Errno?
        let lookup: Result<_DescriptorEntry, Errno> = self.entries.withLock { entries in
            // An entry whose ring is shutting down or gone is stale: its channels can no longer
            // be cleaned up there, and the number may name a new descriptor since. The new
            // channel gets an entry of its own (the stale one leaves the table when its last
            // channel is done, if ever; `detach` removes only itself).
            if let entry = entries[fd], !entry.core.isStopping {
                if kind == .randomAccess && (entry.type == .fifo || entry.type == .socket) {
                    return .failure(.illegalSeek)
                }
                entry.liveChannels += 1
                return .success(entry)
            }
            let type: _FileType
            do throws(Errno) {
                type = _FileType(try _POSIX.status(of: fd))
            } catch {
                return .failure(error)
            }
            if type == .directory { return .failure(.isDirectory) }
            if kind == .randomAccess && (type == .fifo || type == .socket) { return .failure(.illegalSeek) }
            if let stale = entries[fd], stale.core.hasFinished {
                // Replaced below, and its ring will never run its channels again: let go of
                // them, or they and the entry keep each other alive for good.
                stale.ringFinished()
            }
            if chosenRing == nil {
                do throws(RingSetupError) {
                    chosenRing = try RingLoopGroup.shared.next()
                } catch {
                    setupError = error.errno
                }
            }
            guard let ring = chosenRing else { return .failure(setupError ?? .noFunction) }
            let entry = _DescriptorEntry(ring: ring, fd: fd, type: type, path: nil)
            entry.liveChannels = 1
            entries[fd] = entry
            return .success(entry)
        }
        switch lookup {
        case .failure(let error):
            return .failed(kind: kind, error: error, queue: queue, cleanupHandler: cleanupHandler)
        case .success(let entry):
            var base: Int64 = 0
            if kind == .randomAccess {
                // Offsets count from the position now (R59); a device without one (ESPIPE)
                // counts from 0.
                base = (try? _POSIX.seek(fd, to: 0, from: SEEK_CUR)) ?? 0
            }
            let state = _ChannelState(
                kind: kind,
                entry: entry,
                creationFailure: nil,
                cleanupQueue: queue,
                cleanupHandler: cleanupHandler,
                base: base,
                descriptor: fd
            )
            state.perform { state in entry.attach(state) }
            return state
        }
    }

    /// A channel that opens `path` lazily. The path is examined now (R26).
    static func attach(
        kind: IOChannel.Kind,
        path: String,
        flags: CInt,
        permissions: mode_t,
        queue: any IOQueue,
        ring: RingLoop?,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) -> _ChannelState {
        let type: _FileType
        do throws(Errno) {
            type = _FileType(try _POSIX.status(ofPath: path, followingLinks: flags & O_NOFOLLOW == 0))
        } catch {
            // A file to be created is a regular file, when its directory exists.
            var parent = FilePath(path)
            parent.removeLastComponent()
            guard error == .noSuchFileOrDirectory, flags & O_CREAT != 0,
                let parentInfo = try? _POSIX.status(ofPath: parent.string, followingLinks: true),
                _FileType(parentInfo) == .directory
            else {
                return .failed(kind: kind, error: error, queue: queue, cleanupHandler: cleanupHandler)
            }
            type = .regular
        }
        if type == .directory {
            return .failed(kind: kind, error: .isDirectory, queue: queue, cleanupHandler: cleanupHandler)
        }
        if kind == .randomAccess && (type == .fifo || type == .socket) {
            return .failed(kind: kind, error: .illegalSeek, queue: queue, cleanupHandler: cleanupHandler)
        }
        var chosenRing = ring ?? (queue as? RingLoop)
        if chosenRing == nil {
            do throws(RingSetupError) {
                chosenRing = try RingLoopGroup.shared.next()
            } catch {
                return .failed(kind: kind, error: error.errno, queue: queue, cleanupHandler: cleanupHandler)
            }
        }
        let entry = _DescriptorEntry(
            ring: chosenRing!,
            fd: -1,
            type: type,
            path: _PathToOpen(path: path, flags: flags, permissions: permissions)
        )
        entry.liveChannels = 1
        let state = _ChannelState(
            kind: kind,
            entry: entry,
            creationFailure: nil,
            cleanupQueue: queue,
            cleanupHandler: cleanupHandler,
            base: 0,
            descriptor: -1
        )
        state.perform { state in entry.attach(state) }
        return state
    }

    /// A channel on the same descriptor or path as `source` (R30).
    static func attach(
        kind: IOChannel.Kind,
        from source: _ChannelState,
        queue: any IOQueue,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) -> _ChannelState {
        guard let entry = source.entry else {
            return .failed(
                kind: kind,
                error: source.creationFailure ?? .canceled,
                queue: queue,
                cleanupHandler: cleanupHandler
            )
        }
        if source.closeRequested.load(ordering: .acquiring) {
            return .failed(kind: kind, error: .canceled, queue: queue, cleanupHandler: cleanupHandler)
        }
        if let path = entry.path {
            return self.attach(
                kind: kind,
                path: path.path,
                flags: path.flags,
                permissions: path.permissions,
                queue: queue,
                ring: entry.ring,
                cleanupHandler: cleanupHandler
            )
        }
        // The source's own copy of the number (any thread): the entry's is ring-only. -1 when
        // the source was closed since the check above.
        let fd = source.descriptor.load(ordering: .acquiring)
        guard fd >= 0 else {
            return .failed(kind: kind, error: .canceled, queue: queue, cleanupHandler: cleanupHandler)
        }
        return self.attach(
            kind: kind,
            fileDescriptor: fd,
            queue: queue,
            ring: entry.ring,
            cleanupHandler: cleanupHandler
        )
    }

    /// Called on the ring when a channel of `entry` is done. Returns whether it was the last
    /// live channel (the entry is then out of the registry: a new channel on the descriptor
    /// gets a new entry).
    static func detach(_ entry: _DescriptorEntry) -> Bool {
        guard entry.path == nil else {
            entry.liveChannels -= 1
            return entry.liveChannels == 0
        }
        return self.entries.withLock { entries in
            entry.liveChannels -= 1
            guard entry.liveChannels == 0 else { return false }
            if entries[entry.fd] === entry { entries[entry.fd] = nil }
            return true
        }
    }
}
