//===----------------------------------------------------------------------===//
// RingIO — the readiness engine: reading a provided-buffer ring as the kernel does.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A provided buffer taken from a group's ring.
internal struct _SelectedBuffer {
    let address: UnsafeMutableRawPointer
    let length: Int
    let id: UInt16
}

/// The consumer side of one provided-buffer ring: the published buffers, read in order, and
/// those taken and not used (a read on the pool that failed), offered first.
internal struct _BufferGroup {
    let handle: _BufferRingHandle
    var head: UInt16 = 0
    var spare: [_SelectedBuffer] = []

    init(handle: _BufferRingHandle) {
        self.handle = handle
    }

    func peek() -> _SelectedBuffer? {
        if let spare = self.spare.last { return spare }
        var address: UnsafeMutableRawPointer?
        var length: UInt32 = 0
        var id: UInt16 = 0
        guard CLiburing_buf_ring_peek(self.handle.ring, self.head, UInt32(self.handle.mask), &address, &length, &id)
        else { return nil }
        return _SelectedBuffer(address: address!, length: Int(length), id: id)
    }

    /// Takes the buffer `peek` returned.
    mutating func consume() {
        if self.spare.popLast() == nil { self.head &+= 1 }
    }

    mutating func giveBack(_ buffer: _SelectedBuffer) {
        self.spare.append(buffer)
    }
}
