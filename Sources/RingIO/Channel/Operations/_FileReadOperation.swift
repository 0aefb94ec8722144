//===----------------------------------------------------------------------===//
// RingIO — channels: a read of a file.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Files

/// A read of a regular file (or random access to a device): up to four chunk reads in
/// flight at explicit offsets, delivered in file order. Chunks of 1 MiB come from a pool and go
/// back to it when the last rope region over them is released.
///
/// A stream read takes the file position at its start and sets it after its end (R61; stream
/// operations on a file run one at a time, R73). A short read is EOF or a file that shrank:
/// chunks after it are discarded and reading resumes where it stopped.
internal final class _FileReadOperation: _ReadOperation, @unchecked Sendable {
    private struct Chunk {
        let sequence: UInt64
        let offset: Int64
        let size: Int
        let memory: _ReadMemory
        var result: Int32?
    }

    /// Chunk reads in flight, in file order.
    private var chunks: [Chunk] = []
    /// Chunk reads whose results are moot, kept (with their memory, which the kernel is
    /// still writing into) until they complete.
    private var discarded: [Chunk] = []
    private var nextSequence: UInt64 = 0
    private var nextOffset: Int64 = 0
    /// Bytes asked of the kernel (in flight or received).
    private var requested = 0
    /// The file position at the start (stream reads), to set the position at the end.
    private var streamStart: Int64?
    /// No explicit offsets possible (a device without a position): one read at a time at -1.
    private var sequential = false

    override func begin() {
        self.entry.core.assertOnRingThread()
        self.started = true
        if self.channel.kind == .stream {
            if let position = try? _POSIX.seek(self.entry.fd, to: 0, from: SEEK_CUR) {
                self.streamStart = position
                self.nextOffset = position
            } else {
                self.sequential = true  // no position (ESPIPE): reads at the file position
            }
        } else {
            let (start, overflow) = self.channel.base.addingReportingOverflow(self.offset)
            guard !overflow, start >= 0 else {
                self.terminate(.invalidArgument)  // R60
                return
            }
            self.nextOffset = start
        }
        self.fill()
    }

    private func fill() {
        let depth = self.sequential ? 1 : _ChannelLimits.fileReadDepth
        while !self.isFinished && self.chunks.count < depth && self.requested < self.length {
            let size = min(_ChannelLimits.chunkSize, self.highWater, self.length - self.requested)
            let memory = _ReadMemory(size: size)
            let chunk = Chunk(
                sequence: self.nextSequence,
                offset: self.nextOffset,
                size: size,
                memory: memory,
                result: nil
            )
            self.submit(
                .read(fd: self.entry.fd, buffer: memory.buffer, offset: self.sequential ? -1 : self.nextOffset),
                tag: Tag.io + chunk.sequence
            )
            self.chunks.append(chunk)
            self.nextSequence += 1
            self.nextOffset += Int64(size)
            self.requested += size
        }
    }

    override func completed(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.entry.core.assertOnRingThread()
        let sequence = context - Tag.io
        if let index = self.discarded.firstIndex(where: { $0.sequence == sequence }) {
            self.discarded.remove(at: index)
            return
        }
        guard !self.isFinished, let index = self.chunks.firstIndex(where: { $0.sequence == sequence }) else {
            return
        }
        self.chunks[index].result = result
        while let head = self.chunks.first, let result = head.result {
            self.chunks.removeFirst()
            if result > 0 {
                if Int(result) < head.size {
                    // Short: EOF or a shrunken file. Resume right after what we got.
                    self.discarded.append(contentsOf: self.chunks)
                    self.chunks.removeAll()
                    self.nextOffset = head.offset + Int64(result)
                    self.requested = self.received + Int(result)
                }
                self.accept(head.memory.rope(count: Int(result)))
                if self.isFinished { return }
            } else if result == 0 {
                self.discarded.append(contentsOf: self.chunks)
                self.chunks.removeAll()
                self.endOfFile()
                return
            } else {
                self.discarded.append(contentsOf: self.chunks)
                self.chunks.removeAll()
                let error = Errno(rawValue: -result)
                if error == .badFileDescriptor {
                    self.entry.poison(error)
                } else {
                    self.terminate(error)
                }
                return
            }
        }
        self.fill()
    }

    override func terminate(_ error: Errno) {
        self.entry.core.assertOnRingThread()
        guard !self.isFinished else { return }
        // Chunk reads in flight finish on their own (a file read is not interruptible); their
        // results are dropped and their memory is released with them.
        self.discarded.append(contentsOf: self.chunks)
        self.chunks.removeAll()
        super.terminate(error)
    }

    override func finish() {
        self.entry.core.assertOnRingThread()
        if let start = self.streamStart, !self.isFinished {
            // It had a position at the start; failing now means the descriptor was closed under
            // the channel, which the next operation reports (EBADF).
            _ = try? _POSIX.seek(self.entry.fd, to: start + Int64(self.received), from: SEEK_SET)
        }
        super.finish()
    }
}
