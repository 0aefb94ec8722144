//===----------------------------------------------------------------------===//
// RingIO — channels: a path channel's file, to open lazily.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A path a path channel opens lazily.
internal final class _PathToOpen {
    let path: String
    let flags: CInt
    let permissions: mode_t
    /// The path as a C string at a stable address, for openat.
    let cString: UnsafeMutablePointer<CChar>

    init(path: String, flags: CInt, permissions: mode_t) {
        self.path = path
        self.flags = flags
        self.permissions = permissions
        let utf8 = path.utf8CString  // NUL-terminated
        self.cString = .allocate(capacity: utf8.count)
        utf8.withUnsafeBufferPointer { self.cString.initialize(from: $0.baseAddress!, count: $0.count) }
    }

    deinit {
        self.cString.deallocate()
    }
}
