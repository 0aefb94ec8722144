//===----------------------------------------------------------------------===//
// RingIO — the engine's POSIX layer: eventfds.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - eventfd

/// Eventfds: a ring's wake-up descriptor (other threads write it, the ring keeps a read armed)
/// and a signal source's counter (the signal handler writes it).
internal enum _EventFD {
    /// A close-on-exec eventfd counting from 0. The corresponding C call is
    /// `eventfd(0, EFD_CLOEXEC)`.
    ///
    /// - Throws: `EMFILE`, `ENFILE`, `ENOMEM`.
    internal static func make() throws(Errno) -> CInt {
        let fd = eventfd(0, Int32(EFD_CLOEXEC))
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        return fd
    }

    /// Adds 1 to the counter. Never fails for a valid eventfd (the counter cannot overflow
    /// with our use: the ring reads it back to 0 on every wake-up). The corresponding C
    /// function is `write`.
    internal static func signal(_ fd: CInt) {
        var one: UInt64 = 1
        while true {
            let written = write(fd, &one, 8)
            if written == 8 { return }
            let error = Errno(rawValue: errno)
            if error == .interrupted { continue }
            preconditionFailure("RingIO: write to the ring's eventfd failed: \(error)")
        }
    }

    /// Empties the counter without blocking (a signal source's eventfd, before it is reused).
    /// The corresponding C functions are `poll` and `read`.
    internal static func drain(_ fd: CInt) {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var value: UInt64 = 0
        while poll(&descriptor, 1, 0) == 1 && read(fd, &value, 8) == 8 {}
    }
}
