//===----------------------------------------------------------------------===//
// RingIO — RingTLS: where an encryption is in a rope, for _TLSCore.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// Where `encrypt(_:from:budgeted:)` is in a rope.
internal struct _EncryptState {
    /// The gathering buffer (`_GatherScratch`) and how much of it is filled.
    let scratch: UnsafeMutableRawPointer
    var gathered = 0
    /// How far the rope is taken (gathered or encrypted), and how far encrypted.
    var cursor: Int
    var sealed: Int
    var failed = false

    init(scratch: UnsafeMutableRawPointer, cursor: Int) {
        self.scratch = scratch
        self.cursor = cursor
        self.sealed = cursor
    }
}
