//===----------------------------------------------------------------------===//
// RingIO — channels: the kinds of descriptor a channel treats apart.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Descriptor facts

/// What kind of file a descriptor refers to; decides the I/O model (R26).
internal enum _FileType {
    /// `characterDevice`: other than a terminal (/dev/zero, /dev/urandom…): read like a file.
    case regular, fifo, socket, terminal, characterDevice, directory, other

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = Self.isTerminal(device: info.st_rdev) ? .terminal : .characterDevice
        case S_IFDIR: self = .directory
        default: self = .other
        }
    }

    /// Terminal devices by major number (Documentation/admin-guide/devices.txt): 4 (virtual
    /// consoles, serial ports), 5 (/dev/tty, /dev/console, /dev/ptmx), 136–143 (pseudo-terminal
    /// slaves, /dev/pts/*).
    private static func isTerminal(device: dev_t) -> Bool {
        let major = (device >> 8) & 0xfff | (device >> 32) & ~0xfff
        return major == 4 || major == 5 || (136...143).contains(major)
    }

    /// Read and written as a stream of arriving bytes (receives into provided buffers, not
    /// chunked reads); their stream channels deliver as data arrives (D1).
    var isStreamLike: Bool {
        switch self {
        case .fifo, .socket, .terminal: return true
        case .regular, .characterDevice, .directory, .other: return false
        }
    }
}
