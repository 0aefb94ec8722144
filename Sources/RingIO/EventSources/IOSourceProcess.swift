//===----------------------------------------------------------------------===//
// RingIO — event sources: process exit.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#endif

/// A process source: fires once when a process exits — `DispatchSourceProcess`.
///
/// Make one with ``IOSource/makeProcessSource(identifier:queue:ring:)``; it watches a pidfd.
///
///     let child = try IOSource.makeProcessSource(identifier: pid, queue: ring)
///     child.setEventHandler {
///         if child.data.contains(.exit) {
///             var status: CInt = 0
///             waitpid(pid, &status, 0)  // reap it
///         }
///     }
///     child.resume()
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceProcess: IOSource, @unchecked Sendable {
    /// The process ID watched.
    public let handle: pid_t

    internal init(identifier: pid_t, pidfd: CInt, queue: any IOQueue, ring: RingLoop?) {
        self.handle = identifier
        super.init(kind: .processExit(pidfd), queue: queue, ring: ring)
    }

    /// What happened to the process: ``IOSource/ProcessEvent/exit`` once it exited; read it
    /// inside the event handler.
    public var data: ProcessEvent {
        ProcessEvent(rawValue: self.rawData)
    }
}
