//===----------------------------------------------------------------------===//
// RingIO — event sources: a signal.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#endif

/// A signal source: counts deliveries of a signal to the process — `DispatchSourceSignal`.
///
/// Make one with ``IOSource/makeSignalSource(signal:queue:ring:)``.
///
///     let interrupt = IOSource.makeSignalSource(signal: SIGINT, queue: ring)
///     interrupt.setEventHandler { print("interrupted \(interrupt.data) time(s)") }
///     interrupt.resume()
///
/// While a signal source is active, RingIO's own handler catches the signal for the whole
/// process (whatever thread it lands on) and counts it; the disposition the process had before
/// is restored when the last source for that signal is cancelled, so there is no need to
/// ignore the signal first, as with Dispatch. (A signalfd sees only signals blocked in every
/// thread, which a library cannot arrange once threads exist; a handler works whatever the
/// threads' masks.) The source's ring thread unblocks the signal, so that it is delivered even
/// in a process started with it blocked.
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceSignal: IOSource, @unchecked Sendable {
    /// The signal number.
    public let handle: CInt

    internal init(signal: CInt, queue: any IOQueue, ring: RingLoop?) {
        self.handle = signal
        super.init(kind: .signal(signal), queue: queue, ring: ring)
    }

    /// The signals received since the last event; read it inside the event handler.
    public var data: UInt {
        self.rawData
    }
}
