//===----------------------------------------------------------------------===//
// RingIO — channels: the public face of dispatch I/O on io_uring.
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

/// A channel for reading and writing a descriptor with completion handlers: Apple's
/// `DispatchIO`, rule for rule, on io_uring (or the readiness engine where io_uring is
/// refused) and without copies.
///
///     let channel = IOChannel(kind: .stream, fileDescriptor: socket, queue: ring) { _ in
///         close(socket)
///     }
///     channel.read(offset: 0, length: .max, queue: ring) { done, data, error in
///         if let data, !data.isEmpty { channel.write(offset: 0, data: data, queue: ring) { _, _, _ in } }
///         if done { channel.close() }
///     }
///
/// The rule numbers in parentheses — R20–R81 — are those of <doc:DispatchIOContract>, which
/// states dispatch's behaviour rule by rule; D1–D8 are RingIO's deliberate differences from
/// it, in <doc:ComingFromDispatch>.
///
/// **Kinds.** A ``Kind/stream`` channel reads and writes at the descriptor's current position
/// (offsets are ignored) with one queue of operations per direction on pipes and sockets (R72)
/// and a single queue on regular files (R73). A ``Kind/randomAccess`` channel reads and writes
/// at `offset` relative to the file position when the channel was created (R59), with its
/// operations running concurrently; it is refused for pipes, FIFOs and sockets (ESPIPE).
///
/// **Handlers.** A read handler gets `(done, data, error)`, a write handler
/// `(done, remaining, error)`. Each operation calls its handler one or more times, the last time
/// with `done == true`, never inside the call that scheduled it and never twice at once
/// (D7, R32). EOF is two calls, `(false, tail)` then `(true, empty, nil)` (R35); an error ends a
/// read with `(true, nil, error)` after the pending bytes (R36) and a write with
/// `(true, remaining, error)` (R40); a successful write ends with `(true, nil, nil)` (R39).
///
/// **Queues.** Handlers run on the ``IOQueue`` you give: a `DispatchQueue` (one serial queue per
/// connection is the classic GCD pattern), or a ``RingLoop`` — the channel's own ring runs the
/// handler on its thread with no hop, the fast path for servers. The data handed to a read
/// handler is the kernel's receive buffer (sockets and pipes) or a recycled read chunk (files)
/// as rope regions: no copy.
///
/// **Water marks** (R43–R49). Low water is the least data a non-final read call carries: by
/// default 1 byte for stream channels on sockets, pipes, FIFOs and terminals (deliver as data
/// arrives, D1), 1 MiB elsewhere (dispatch's default). High water is the most data one call
/// carries (default unlimited). The setters clamp each other as dispatch's do (R45), and every
/// operation keeps the values it was scheduled with (R46).
///
/// **Interval** (R50–R52). With an interval, each operation gets a repeating timer in its
/// ring's timer queue (no syscall to arm or cancel it; the ring keeps one kernel timeout for
/// its earliest deadline): at each tick a strict interval delivers what is pending, even
/// nothing; a non-strict one only re-applies the low water test.
///
/// **Descriptors and cleanup** (R20–R31). A channel on a descriptor never closes it; the
/// cleanup handler, run once on the queue given at creation, tells you when you may. It runs
/// after the channel is closed (or released) *and* every other channel on the same descriptor
/// is done *and* all their operations have finished — with `nil`, or with the error that made
/// creation fail (EBADF, EISDIR, ESPIPE), at once. RingIO does not change the descriptor's
/// flags. A path channel opens its file lazily on its ring and closes it itself.
///
/// **Errors** are `Errno`s (D6). EBADF poisons the descriptor: every operation of every channel
/// on it ends with EBADF, now and later (R65). Other errors end one operation (R66). A write to
/// a closed peer or pipe ends with EPIPE and never raises SIGPIPE (D3).
///
/// An `IOChannel` is `Sendable`; call it from any thread. Calls from one thread take effect in
/// program order (R71). Dropping the last reference closes the channel (its operations finish).
public final class IOChannel: Sendable {
    /// How a channel reads and writes its descriptor.
    public enum Kind: Sendable, Hashable {
        /// At the descriptor's current position, one operation at a time per direction.
        case stream
        /// At offsets relative to the position when the channel was created, concurrently.
        case randomAccess
    }

    /// Options of ``close(flags:)``.
    public struct CloseFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Also cancel this channel's operations: each ends with ECANCELED, after the bytes it
        /// had read are delivered (R54).
        public static let stop = CloseFlags(rawValue: 1)
    }

    /// Options of ``setInterval(_:flags:)``.
    public struct IntervalFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Deliver at every tick, even below the low water mark and even when nothing arrived
        /// (then the data is empty and not `nil`) — a stall watchdog (R52).
        public static let strict = IntervalFlags(rawValue: 1)
    }

    /// The channel's kind.
    public let kind: Kind

    internal let state: _ChannelState

    // MARK: Creating channels

    /// Creates a channel on an open descriptor. The channel does not close it: do that in (or
    /// after) the cleanup handler.
    ///
    /// Creation errors — EBADF (not a descriptor), EISDIR (a directory), ESPIPE (random access
    /// on a pipe, FIFO or socket), or, for a channel that takes a ring of
    /// ``RingLoopGroup/shared`` when that group cannot be set up, the `errno` of its
    /// ``RingSetupError`` — are delivered to the cleanup handler at once, and every operation
    /// then ends with that error (R21).
    ///
    /// - Parameters:
    ///   - kind: Stream or random access.
    ///   - fileDescriptor: An open descriptor; leave it open and unchanged until the cleanup
    ///     handler has run.
    ///   - queue: Where the cleanup handler and barriers run.
    ///   - ring: The ring for the descriptor's I/O when no other channel is open on it (all
    ///     channels on one descriptor share the first one's ring). When `nil`: `queue` if it is
    ///     a ring, else the next ring of ``RingLoopGroup/shared``.
    ///   - cleanupHandler: Called once, with `nil` or the creation error.
    public init(
        kind: Kind,
        fileDescriptor: CInt,
        queue: some IOQueue,
        ring: RingLoop? = nil,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) {
        self.kind = kind
        self.state = _DescriptorRegistry.attach(
            kind: kind,
            fileDescriptor: fileDescriptor,
            queue: queue,
            ring: ring,
            cleanup: .handler(cleanupHandler)
        )
    }

    /// A stream channel on a socket that RingIO accepted or connected: as the public
    /// initializer, without examining the descriptor (it is known to be a socket); its
    /// cleanup, on `ring`, is `slot`'s (``_ConnectionSlot/channelCleanedUp()``).
    internal init(socket: CInt, ring: RingLoop, slot: _ConnectionSlot) {
        self.kind = .stream
        self.state = _DescriptorRegistry.attach(
            kind: .stream,
            fileDescriptor: socket,
            knownType: .socket,
            queue: ring,
            ring: ring,
            cleanup: .connection(slot)
        )
    }

    /// Creates a channel that opens `path` lazily, on its ring, when the first operation needs
    /// the descriptor, and closes it after the channel is closed and its operations finished.
    ///
    /// The path is examined inside this initializer, on the calling thread, with a blocking
    /// `stat` (`lstat` with `.noFollow`; and a `stat` of its directory when it does not exist
    /// and `.create` is among the options) — not on the ring, where io_uring would run a
    /// `STATX` on a worker thread at several times the cost. It is served from the kernel's
    /// caches for a path used recently; on a slow or network file system it can block, so
    /// make such channels off a ring's thread. When the path cannot be examined (ENOENT,
    /// ENOTDIR…) and `.create` is not among the options, or it names a directory, the cleanup
    /// handler gets that error at once and every operation fails with it (R26).
    /// When the open itself fails (EACCES…), the operation that needed it and every later one
    /// fail with the error, and the cleanup handler gets `nil` (R28).
    ///
    /// `permissions` apply when `.create` makes the file (default `0o644`, less the umask).
    ///
    /// - Throws: `Errno.invalidArgument` at once for a relative path (D4).
    public init(
        kind: Kind,
        path: FilePath,
        mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions? = nil,
        queue: some IOQueue,
        ring: RingLoop? = nil,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) throws(Errno) {
        guard path.isAbsolute else { throw Errno.invalidArgument }
        self.kind = kind
        self.state = _DescriptorRegistry.attach(
            kind: kind,
            path: path.string,
            flags: mode.rawValue | options.rawValue | O_CLOEXEC,
            permissions: permissions?.rawValue ?? 0o644,
            queue: queue,
            ring: ring,
            cleanup: .handler(cleanupHandler)
        )
    }

    /// Creates a channel of `kind` on the same descriptor (or path) as `channel`, with default
    /// water marks and interval (R30).
    ///
    /// On a descriptor channel it shares the descriptor's barriers, operation queues and
    /// cleanup point; a random-access channel takes the descriptor's position now as its base.
    /// On a path channel it opens the path again, separately. When `channel` is closed, the
    /// new channel's cleanup handler gets ECANCELED at once (or `channel`'s creation error).
    public init(
        kind: Kind,
        channel: IOChannel,
        queue: some IOQueue,
        cleanupHandler: @escaping @Sendable (Errno?) -> Void
    ) {
        self.kind = kind
        self.state = _DescriptorRegistry.attach(
            kind: kind,
            from: channel.state,
            queue: queue,
            cleanup: .handler(cleanupHandler)
        )
    }

    deinit {
        self.state.requestClose(stop: false)
    }

    // MARK: Operations

    /// Reads up to `length` bytes (`Int.max`: until EOF) and calls `handler` as data arrives,
    /// per the low and high water marks.
    ///
    /// - Parameters:
    ///   - offset: For random access, where to read, relative to the channel's base position;
    ///     ignored by stream channels.
    ///   - length: How many bytes; 0 completes at once with `(true, empty, nil)` (R37).
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, data, error)`; see the type's documentation.
    /// - Precondition: `length >= 0`.
    public func read(
        offset: Int64,
        length: Int,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ data: ByteRope?, _ error: Errno?) -> Void
    ) {
        precondition(length >= 0, "IOChannel.read(length: \(length)): the length must not be negative")
        _ = self.state.scheduleRead(offset: offset, length: length, queue: queue, mode: .normal, handler: handler)
    }

    /// Writes `data` and calls `handler` as it goes out: intermediate calls carry the data not
    /// yet written (per the low water mark, R38); the final one `nil` on success or the
    /// remaining data with the error.
    ///
    /// Multi-region data goes out as one vectored write per chunk (writev, or sendmsg with
    /// MSG_NOSIGNAL on sockets) — never flattened (D2); short writes continue with the rest.
    ///
    /// - Parameters:
    ///   - offset: For random access, where to write, relative to the channel's base position;
    ///     ignored by stream channels.
    ///   - data: What to write; empty completes at once with `(true, nil, nil)` (R39).
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, remaining, error)`.
    public func write(
        offset: Int64,
        data: ByteRope,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: ByteRope?, _ error: Errno?) -> Void
    ) {
        _ = self.state.scheduleWrite(offset: offset, data: data, queue: queue, handler: handler)
    }

    /// Sends `length` bytes of the file open on `file`, from `offset`, to this channel's socket
    /// or pipe without the bytes passing through user memory: the kernel moves the file's
    /// pages through a pipe of the channel's (splice, two linked ring entries per chunk of up
    /// to 1 MiB). It waits in line with the channel's writes, as a write of those bytes would.
    ///
    /// `handler` is called after each chunk but the last with `(false, remaining, nil)` — the
    /// bytes not yet sent — and finally with `(true, 0, nil)`, or `(true, remaining, error)`:
    /// ENODATA when the file ends before `offset + length` (every byte it had is sent
    /// first); EPIPE or ECONNRESET when the peer is gone (never a SIGPIPE); ECANCELED when the
    /// channel is stopped; EINVAL when the channel's descriptor is neither a socket nor a pipe,
    /// or `file` cannot be spliced from (a socket, a directory); EBADF when `file` is not open
    /// for reading (this send only) — or when the channel's own descriptor is bad, which
    /// poisons it as any operation's EBADF does (R65). A non-blocking socket that fills up is
    /// waited for (POLLOUT).
    ///
    /// The bytes are read from the file when they are sent, not when this is called: what the
    /// file holds then goes out.
    ///
    /// - Parameters:
    ///   - file: A descriptor open for reading on a regular file (or a block device). The
    ///     channel does not own it: keep it open until the final call.
    ///   - offset: Where in the file to start.
    ///   - length: How many bytes; 0 completes at once with `(true, 0, nil)`.
    ///   - queue: Where `handler` runs.
    ///   - handler: `(done, remaining, error)`.
    /// - Precondition: `offset >= 0`, `length >= 0`, and `offset + length` does not overflow.
    public func write(
        contentsOf file: CInt,
        offset: Int64,
        length: Int,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: Int, _ error: Errno?) -> Void
    ) {
        Self.checkFileRange(offset: offset, length: length)
        let progress = _SendProgress()
        _ = self.state.scheduleFileSend(
            file: file,
            offset: offset,
            length: length,
            queue: queue,
            progress: progress
        ) { done, _, error in
            handler(done, progress.take() ?? length, error)
        }
    }

    /// Sends `length` bytes of the file of the random-access channel `file`, from `offset`
    /// (from its base, as its own reads and writes count offsets, R59), to this channel's
    /// socket or pipe without the bytes entering user memory; as
    /// ``write(contentsOf:offset:length:queue:handler:)-(CInt,_,_,_,_)``, in line with this
    /// channel's writes.
    ///
    /// `file` lends its descriptor — opening its path first, on its ring, when it is a path
    /// channel that has not yet — and the send keeps a duplicate of it for as long as it
    /// runs: `file` may be closed meanwhile. The send is not ordered with `file`'s own
    /// operations. It ends with ECANCELED when `file` was closed before it got the
    /// descriptor, and with `file`'s error when its creation or its open failed (ENOENT,
    /// EACCES…) or its descriptor is poisoned (EBADF).
    ///
    /// - Precondition: `file` is a random-access channel; `offset >= 0`, `length >= 0`, and
    ///   `offset + length` does not overflow.
    public func write(
        contentsOf file: IOChannel,
        offset: Int64,
        length: Int,
        queue: some IOQueue,
        handler: @escaping @Sendable (_ done: Bool, _ remaining: Int, _ error: Errno?) -> Void
    ) {
        Self.checkFileRange(offset: offset, length: length)
        precondition(
            file.kind == .randomAccess,
            "IOChannel.write(contentsOf:): the source must be a random-access channel"
        )
        let progress = _SendProgress()
        let (start, overflow) = file.state.base.addingReportingOverflow(offset)
        let operation = self.state.scheduleFileSend(
            file: nil,
            offset: overflow ? 0 : start,
            length: length,
            queue: queue,
            progress: progress
        ) { done, _, error in
            handler(done, progress.take() ?? length, error)
        }
        if let operation = operation as? _FileSendOperation {
            Self.lendDescriptor(of: file, to: operation, failing: overflow ? .invalidArgument : nil)
        }
    }

    /// Has `file` lend a duplicate of its descriptor to `operation` (a file send waiting for
    /// it), delivered on `operation`'s ring — or `failing` there, when given.
    static func lendDescriptor(of file: IOChannel, to operation: _FileSendOperation, failing: Errno?) {
        let loan = _DescriptorLoan(to: operation)
        if let failing {
            loan.settle(.failure(failing))
        } else {
            file.state.duplicateDescriptor { result in loan.settle(result) }
        }
    }

    static func checkFileRange(offset: Int64, length: Int) {
        precondition(offset >= 0, "IOChannel.write(contentsOf:offset: \(offset)): the offset must not be negative")
        precondition(length >= 0, "IOChannel.write(contentsOf:length: \(length)): the length must not be negative")
        precondition(
            !offset.addingReportingOverflow(Int64(length)).overflow,
            "IOChannel.write(contentsOf:offset: \(offset), length: \(length)): the range overflows"
        )
    }

    /// Half-closes the connection: once every write scheduled before it has finished (a
    /// stream's write lane keeps the order), shuts down the sending side of the channel's
    /// socket (`shutdown(fd, SHUT_WR)`); the peer reads end-of-file after the last byte.
    /// Reading goes on: the peer may still answer. Writes scheduled after it fail with EPIPE.
    ///
    ///     channel.write(offset: 0, data: request, queue: ring) { _, _, _ in }
    ///     channel.shutdownOutput(queue: ring) { error in … }   // after the request
    ///
    /// Closing the channel does not shut the socket down; closing the socket (when the channel
    /// is cleaned up) ends both directions.
    ///
    /// - Parameters:
    ///   - queue: Where `handler` runs.
    ///   - handler: Called once: `nil`, or ENOTSOCK when the descriptor is not a socket,
    ///     ENOTCONN when it is not connected, ECANCELED when the channel was stopped first.
    public func shutdownOutput(queue: some IOQueue, handler: @escaping @Sendable (_ error: Errno?) -> Void) {
        _ = self.state.scheduleShutdownOutput(queue: queue) { _, _, error in handler(error) }
    }

    /// Runs `work` on the channel's queue (the one given at creation) once every operation
    /// scheduled before it on any channel of the same descriptor has finished; operations
    /// scheduled after it wait until `work` returns (R56). It is not synchronized with
    /// handlers, which may still be queued or running (R57). Inside it, ``fileDescriptor`` of a
    /// path channel is open. Do not close the descriptor in it.
    public func barrier(_ work: @escaping @Sendable () -> Void) {
        self.state.scheduleBarrier(work)
    }

    /// Closes the channel to new operations; those already scheduled run to completion, or,
    /// with ``CloseFlags/stop``, end with ECANCELED (R53–R55). Idempotent; a stop after a
    /// plain close still cancels what is pending. ``fileDescriptor`` is -1 from now on.
    ///
    /// A stopped stream read first delivers every byte the kernel already took from the
    /// descriptor for it (those in flight when the stop came included), then ECANCELED: what
    /// it did not deliver is still in the descriptor. A stopped write hands back what the
    /// kernel did not take.
    public func close(flags: CloseFlags = []) {
        self.state.requestClose(stop: flags.contains(.stop))
    }

    /// Sets the low water mark for operations scheduled from now on: the least data a
    /// non-final read call carries. Raises the high water mark to it when that is lower (R45).
    ///
    /// - Precondition: `lowWater >= 0`.
    public func setLimit(lowWater: Int) {
        precondition(lowWater >= 0, "IOChannel.setLimit(lowWater: \(lowWater)) must not be negative")
        self.state.perform(with: lowWater) { state, lowWater in
            if state.highWater < lowWater { state.highWater = max(lowWater, 1) }
            state.lowWater = lowWater
        }
    }

    /// Sets the high water mark for operations scheduled from now on: the most data one read
    /// call carries (0 counts as 1). Lowers the low water mark to it when that is higher (R45).
    ///
    /// - Precondition: `highWater >= 0`.
    public func setLimit(highWater: Int) {
        precondition(highWater >= 0, "IOChannel.setLimit(highWater: \(highWater)) must not be negative")
        self.state.perform(with: highWater) { state, highWater in
            if state.lowWater > highWater { state.lowWater = highWater }
            state.highWater = max(highWater, 1)
        }
    }

    /// Sets the delivery interval for operations scheduled from now on; zero turns it off.
    ///
    /// - Precondition: `interval >= .zero`.
    public func setInterval(_ interval: Duration, flags: IntervalFlags = []) {
        precondition(interval >= .zero, "IOChannel.setInterval(\(interval)) must not be negative")
        // Zero (turning the interval off, as a server does once its read has one) needs no
        // division: `components` divides 128-bit attoseconds, about 180 instructions.
        var nanoseconds: Int64 = 0
        if interval != .zero {
            let (seconds, attoseconds) = interval.components
            nanoseconds =
                seconds >= Int64.max / 1_000_000_000
                ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
        let strict = flags.contains(.strict)
        self.state.perform(with: (nanoseconds, strict)) { state, interval in
            state.intervalNanoseconds = interval.0
            state.strictInterval = interval.1
        }
    }

    /// The bytes of this channel's writes that are scheduled and not yet finished: those
    /// waiting their turn and the rest of the one in progress, counted whole until each
    /// finishes. The back-pressure signal for fan-out: before writing to a slow peer, compare
    /// and drop, skip or disconnect.
    ///
    ///     for member in members where member.channel.queuedWriteBytes < 1 << 20 {
    ///         member.channel.write(message, queue: member.ring) { _, _, _ in }
    ///     }
    ///
    /// Any thread, read without a lock: exact on the channel's ring thread; elsewhere it lags
    /// the ring by a moment, and a write counts once it has reached the ring. File sends
    /// (``write(contentsOf:offset:length:queue:handler:)-(CInt,_,_,_,_)``) are not
    /// counted.
    public var queuedWriteBytes: Int {
        self.state.publishedQueuedWriteBytes.load(ordering: .relaxed)
    }

    /// The descriptor, or -1 once the channel is closed, or while a path channel has not
    /// opened its file yet.
    public var fileDescriptor: CInt {
        max(self.state.descriptor.load(ordering: .acquiring), -1)
    }
}
