//===----------------------------------------------------------------------===//
// RingIO — a range of a file as a rope region, mapped rather than read.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension ByteRope {
    /// Creates a rope of one region over `length` bytes of `file` from `offset`, mapped from
    /// the page cache (`mmap`, shared, read-only) rather than read: nothing is copied, and
    /// the mapping goes away when the last rope region over it is released (as
    /// `DISPATCH_DATA_DESTRUCTOR_MUNMAP` does). The descriptor may be closed at once.
    ///
    /// Made for sending a file that is sent often from memory: keep the rope, and write it
    /// (or subranges of it) to stream channels. Each write is then one copy, by the kernel,
    /// from the page cache into the socket — no read, no buffer. Pages are faulted in as they
    /// are first touched, the first send of each page reads it from disk when it is not cached.
    ///
    /// The rope shows the file as it is: a change made in place shows in its bytes.
    ///
    /// - Warning: When the file is truncated while the rope lives, its bytes past the new
    ///   end no longer exist. The kernel's copies from them fail cleanly — a channel's write
    ///   of the rope ends with `Errno.badAddress` (EFAULT) — but reading them in user space
    ///   (iterating the rope, `withUnsafeBytes`, copying it into an array) raises SIGBUS and
    ///   stops the process. Read the bytes of such a rope only when no one can truncate the file.
    ///
    /// - Parameters:
    ///   - file: A regular file, open for reading.
    ///   - offset: Where the range starts in the file; any offset (the mapping itself starts
    ///     at the page before it).
    ///   - length: The range's length; 0 gives the empty rope (nothing is mapped).
    /// - Throws: EINVAL for a negative offset or length, or a range that goes past the file's
    ///   end now (its bytes there could not be read; a pipe or a socket has none); EACCES for
    ///   a descriptor not open for reading; the errno of `fstat` or `mmap` otherwise (EBADF,
    ///   ENODEV for a device that cannot be mapped, ENOMEM).
    /// - Complexity: Two system calls (`fstat`, `mmap`) and one small allocation.
    public init(mapping file: CInt, offset: Int64 = 0, length: Int) throws(Errno) {
        guard offset >= 0, length >= 0 else { throw Errno.invalidArgument }
        let (end, overflow) = offset.addingReportingOverflow(Int64(length))
        guard !overflow else { throw Errno.invalidArgument }
        let size = Int64(try _POSIX.status(of: file).st_size)
        guard end <= size else { throw Errno.invalidArgument }
        guard length > 0 else {
            self.init()
            return
        }
        let lead = Int(offset % Int64(_POSIX.pageSize))
        let mapping = _FileMapping(
            try _POSIX.mapForReading(file, offset: offset - Int64(lead), length: lead + length)
        )
        self.init(unsafeOwner: mapping, bytes: UnsafeRawBufferPointer(rebasing: mapping.bytes[lead...]))
    }
}

/// A mapping made by ``ByteRope/init(mapping:offset:length:)``: the owner of its rope
/// regions, unmapped when the last of them is released.
internal final class _FileMapping: Sendable {
    // nonisolated(unsafe): an immutable pointer to memory no one writes.
    nonisolated(unsafe) let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    deinit {
        _POSIX.unmap(self.bytes)
    }
}
