//===----------------------------------------------------------------------===//
// RingIO — channels: the pipe of file sends.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A pipe for splicing, owned by one channel (ring thread): the file's pages go into it and
/// out of it to the channel's descriptor, by reference, never through user memory. Kept
/// between sends while it is empty; closed with the channel.
internal final class _SplicePipe {
    let readEnd: CInt
    let writeEnd: CInt
    /// Bytes it holds at most (the pipe's size: 1 MiB when the system allows, else what it
    /// has).
    let capacity: Int

    /// The largest size asked for: Linux's default `/proc/sys/fs/pipe-max-size`, and 16
    /// chunks' worth of 64 KiB pages — a 1 MiB file goes out in one round.
    static let preferredCapacity = 1 << 20

    private init(readEnd: CInt, writeEnd: CInt, capacity: Int) {
        self.readEnd = readEnd
        self.writeEnd = writeEnd
        self.capacity = capacity
    }

    /// A new pipe, close-on-exec, of up to `capacity` bytes (at least the system's default).
    static func make(capacity: Int) throws(Errno) -> _SplicePipe {
        let ends = try _POSIX.pipe()
        // Growing it may fail (the user's pipe quota): it then serves as it is, in more rounds.
        // Its real size matters: a chunk larger than the pipe would never fit (the fill would
        // wait for the drain linked after it).
        let size = _POSIX.resizePipe(ends.write, toHold: capacity)
        guard size > 0 else {
            _POSIX.close(ends.read)
            _POSIX.close(ends.write)
            throw Errno(rawValue: errno)
        }
        return _SplicePipe(readEnd: ends.read, writeEnd: ends.write, capacity: size)
    }

    deinit {
        _POSIX.close(self.readEnd)
        _POSIX.close(self.writeEnd)
    }
}
