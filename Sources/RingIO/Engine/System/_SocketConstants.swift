//===----------------------------------------------------------------------===//
// RingIO — the engine's POSIX layer: socket type constants.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Sockets

/// Socket constants Glibc's Swift overlay does not export (they come with liburing's headers).
internal enum _SocketConstants {
    /// `SOCK_STREAM`.
    internal static let stream = Int32(SOCK_STREAM.rawValue)
    /// `SOCK_STREAM | SOCK_CLOEXEC`.
    internal static let streamCloseOnExec = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    /// `SOCK_DGRAM | SOCK_CLOEXEC`.
    internal static let datagramCloseOnExec = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
}
