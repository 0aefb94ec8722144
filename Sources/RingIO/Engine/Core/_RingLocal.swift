//===----------------------------------------------------------------------===//
// RingIO — the engine: state the layers above keep per ring.
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

/// State a layer above the engine keeps per ring (``_RingCore/local(_:)``): made on the ring
/// thread on first use, touched there only, and told when the ring exits.
internal protocol _RingLocal: AnyObject {
    /// Made on `core`'s thread.
    init(core: _RingCore)
    /// The ring is exiting, with nothing in flight: close what is still open (stop its
    /// operations). Returns whether that started work — operations, jobs — the ring must run
    /// before it exits (it calls again once that is done). Ring thread.
    func ringIsExiting() -> Bool
}
