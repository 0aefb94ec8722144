//===----------------------------------------------------------------------===//
// RingIO — event sources: readiness to write.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A write source: fires while a descriptor can take data — `DispatchSourceWrite`.
///
/// Make one with ``IOSource/makeWriteSource(fileDescriptor:queue:ring:)``. Level-triggered: it
/// fires again as long as there is room. The source never closes the descriptor; close it in
/// the cancel handler.
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceWrite: IOSource, @unchecked Sendable {
    /// The descriptor watched.
    public let handle: CInt

    internal init(fileDescriptor: CInt, queue: any IOQueue, ring: RingLoop?) {
        self.handle = fileDescriptor
        super.init(kind: .writable(fileDescriptor), queue: queue, ring: ring)
    }

    /// An estimate of the space available (a socket's free send buffer; 1 when the descriptor
    /// cannot tell); read it inside the event handler.
    public var data: UInt {
        self.rawData
    }
}
