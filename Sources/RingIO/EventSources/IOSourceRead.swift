//===----------------------------------------------------------------------===//
// RingIO — event sources: readiness to read.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A read source: fires while a descriptor has data to read — `DispatchSourceRead`.
///
/// Make one with ``IOSource/makeReadSource(fileDescriptor:queue:ring:)``. Level-triggered: a
/// handler that leaves data behind is called again. It also fires at end of file, on an error,
/// and, on a listening socket, for a connection to accept. The source never closes the
/// descriptor; close it in the cancel handler.
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceRead: IOSource, @unchecked Sendable {
    /// The descriptor watched.
    public let handle: CInt

    internal init(fileDescriptor: CInt, queue: any IOQueue, ring: RingLoop?) {
        self.handle = fileDescriptor
        super.init(kind: .readable(fileDescriptor), queue: queue, ring: ring)
    }

    /// An estimate of the bytes available to read (0 at end of file; 1 when the descriptor
    /// cannot tell); read it inside the event handler.
    public var data: UInt {
        self.rawData
    }
}
