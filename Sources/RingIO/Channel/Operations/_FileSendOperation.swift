//===----------------------------------------------------------------------===//
// RingIO — channels: sending a file without copying it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A send of `length` bytes of a file, from `offset`, to a stream channel's socket or pipe
/// (``IOChannel/write(contentsOf:offset:length:queue:handler:)-(CInt,_,_,_,_)``): in the channel's write lane,
/// ordered with its writes.
///
/// Each round splices a chunk of at most the pipe's capacity from the file into the channel's
/// pipe and, linked, from the pipe to the descriptor: two entries, one submission, the bytes
/// never copied into user memory. A chunk the file cut short (it ended) or the descriptor
/// took only in part (a non-blocking socket that filled up: wait for POLLOUT) is drained from
/// the pipe before the next; a file that ends before `offset + length` ends the send with
/// ENODATA once every byte it had is sent.
internal final class _FileSendOperation: _Operation, @unchecked Sendable {
    // @unchecked: as `_Operation` (its own variables are ring-thread only).
    /// The file's descriptor; -1 while a source channel's is on its way.
    private var source: CInt
    /// `source` is a duplicate of a source channel's descriptor, the operation's to close.
    private var ownsSource = false
    /// Waiting for a source channel's descriptor (``sourceResolved(_:)``).
    private var sourcePending: Bool
    /// Why the source channel gave no descriptor.
    private var sourceFailure: Errno?
    private let length: Int
    private let progress: _SendProgress?
    /// Bytes the descriptor took.
    private var sent = 0
    /// Bytes spliced from the file into the pipe (so `filled - sent` wait in the pipe).
    private var filled = 0
    private var pipe: _SplicePipe?
    /// The syscalls in flight and their user data, to cancel them.
    private var fillInFlight: UInt64?
    private var drainInFlight: UInt64?
    private var pollInFlight: UInt64?
    /// The file ended before the range did.
    private var fileEnded = false
    /// The send failed: it ends once nothing is in flight.
    private var failure: Errno?

    private enum SendTag {
        static let fill: UInt64 = 0
        static let drain: UInt64 = 1
        static let poll: UInt64 = 2
    }

    init(
        channel: _ChannelState,
        entry: _DescriptorEntry,
        queue: any IOQueue,
        source: CInt,
        awaitingSource: Bool,
        offset: Int64,
        length: Int,
        progress: _SendProgress?,
        handler: @escaping @Sendable (Bool, ByteRope?, Errno?) -> Void
    ) {
        self.source = source
        self.sourcePending = awaitingSource
        self.length = length
        self.progress = progress
        super.init(
            channel: channel,
            entry: entry,
            queue: queue,
            offset: offset,
            lane: _Operation.lane(kind: channel.kind, entry: entry, isRead: false),
            handler: handler
        )
    }

    private var remaining: Int { self.length - self.sent }

    /// A handler call, with what is left to send for the handler.
    private func report(done: Bool, error: Errno?) {
        if self.awaiting == nil { self.progress?.push(self.remaining) }
        self.deliver(done: done, data: nil, error: error)
    }

    override var completesAtOnce: Bool { self.length == 0 }

    override func completeAtOnce() {
        self.entry.core.assertOnRingThread()
        self.isFinished = true
        self.report(done: true, error: nil)
    }

    override func finalCall(error: Errno) {
        self.entry.core.assertOnRingThread()
        self.report(done: true, error: error)
    }

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        guard self.entry.type == .socket || self.entry.type == .fifo else {
            self.terminate(.invalidArgument)  // splice needs a socket or a pipe to write to
            return
        }
        if !self.sourcePending { self.startSending() }
    }

    /// A source channel's descriptor (a duplicate, now this operation's) or why there is
    /// none: sending starts if the operation's turn has come. Ring thread.
    func sourceResolved(_ result: Result<CInt, Errno>) {
        self.entry.core.assertOnRingThread()
        self.sourcePending = false
        switch result {
        case .success(let fd):
            guard !self.isFinished else {
                _POSIX.close(fd)  // stopped meanwhile
                return
            }
            self.source = fd
            self.ownsSource = true
        case .failure(let error):
            self.sourceFailure = error
        }
        if self.started && !self.isFinished { self.startSending() }
    }

    deinit {
        // An operation never scheduled (its task was cancelled first) never finished.
        if self.ownsSource { _POSIX.close(self.source) }
    }

    override func finish() {
        super.finish()
        if self.ownsSource {
            self.ownsSource = false
            _POSIX.close(self.source)
            self.source = -1
        }
    }

    private func startSending() {
        if let error = self.sourceFailure {
            self.terminate(error)
            return
        }
        if let pipe = self.channel.splicePipe.take() {
            self.pipe = pipe
        } else {
            do throws(Errno) {
                self.pipe = try _SplicePipe.make(capacity: min(self.length, _SplicePipe.preferredCapacity))
            } catch {
                self.terminate(error)
                return
            }
        }
        self.fill()
    }

    /// The next round: a chunk from the file into the (empty) pipe, and on to the descriptor.
    private func fill() {
        let pipe = self.pipe!
        let chunk = min(self.length - self.filled, pipe.capacity)
        let (fill, drain) = self.submitLinked(
            .splice(
                input: self.source,
                inputOffset: self.offset + Int64(self.filled),
                output: pipe.writeEnd,
                outputOffset: -1,
                length: chunk
            ),
            tag: Tag.io + SendTag.fill,
            then: .splice(input: pipe.readEnd, inputOffset: -1, output: self.entry.fd, outputOffset: -1, length: chunk),
            tag: Tag.io + SendTag.drain
        )
        self.fillInFlight = fill
        self.drainInFlight = drain
    }

    /// What waits in the pipe, to the descriptor.
    private func drain() {
        let pipe = self.pipe!
        self.drainInFlight = self.submit(
            .splice(
                input: pipe.readEnd,
                inputOffset: -1,
                output: self.entry.fd,
                outputOffset: -1,
                length: self.filled - self.sent
            ),
            tag: Tag.io + SendTag.drain
        )
    }

    override func completed(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        switch context {
        case Tag.io + SendTag.fill:
            self.fillInFlight = nil
            if result > 0 {
                self.filled += Int(result)
            } else if result == 0 {
                self.fileEnded = true
            } else {
                self.fail(result)
            }
        case Tag.io + SendTag.drain:
            self.drainInFlight = nil
            if result > 0 {
                self.sent += Int(result)
            } else if result == -EAGAIN {
                // A non-blocking descriptor that is full: on when it takes bytes again.
                self.pollInFlight = self.submit(
                    .poll(fd: self.entry.fd, events: UInt32(POLLOUT)),
                    tag: Tag.io + SendTag.poll
                )
            } else if result == -ECANCELED {
                // A chain the fill cut short (what it filled goes out next), or a stop.
            } else if result == -EBADF {
                // The pipe is the operation's own: the channel's descriptor is bad (R65).
                self.entry.poison(.badFileDescriptor)
            } else {
                self.fail(result == 0 ? -EIO : result)  // 0: no progress, refuse to spin
            }
        default:  // poll
            self.pollInFlight = nil
            if result == -EBADF {
                self.entry.poison(.badFileDescriptor)  // the channel's descriptor (R65)
            } else if result < 0 && result != -ECANCELED {
                self.fail(result)
            }
        }
        self.advance()
    }

    /// Ends the send with `-result` once nothing is in flight. EBADF from the fill is the
    /// source file's, which is the caller's and not the channel's: it ends this send only.
    private func fail(_ result: Int32) {
        if self.failure == nil { self.failure = Errno(rawValue: -result) }
    }

    /// With nothing in flight: the next step.
    private func advance() {
        guard self.fillInFlight == nil, self.drainInFlight == nil, self.pollInFlight == nil, !self.isFinished else {
            return
        }
        if let error = self.failure {
            self.end(error)
        } else if self.sent == self.length {
            // Empty again: the channel keeps it for its next send.
            if !self.channel.done { self.channel.splicePipe = self.pipe.take() }
            self.report(done: true, error: nil)
            self.finish()
        } else if self.filled > self.sent {
            self.drain()
        } else if self.fileEnded {
            self.end(.noData)
        } else {
            if self.sent > 0 { self.report(done: false, error: nil) }
            self.fill()
        }
    }

    /// Ends with `error`: what is left in the pipe is lost with it (the pipe is closed).
    private func end(_ error: Errno) {
        guard !self.isFinished else { return }
        self.pipe = nil
        self.finalCall(error: error)
        self.finish()
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        let inFlight = [self.fillInFlight, self.drainInFlight, self.pollInFlight].compactMap { $0 }
        guard !inFlight.isEmpty else {
            self.pipe = nil
            super.terminate(error)
            return
        }
        // Cancel them and end when they have returned (the bytes they moved count).
        if self.failure == nil {
            self.failure = error
            for userData in inFlight { self.submit(.cancel(userData: userData), tag: Tag.ignore) }
        }
    }

    override func tick() {
        self.entry.core.assertOnRingThread()
        if self.strictInterval && self.started { self.report(done: false, error: nil) }
    }
}
