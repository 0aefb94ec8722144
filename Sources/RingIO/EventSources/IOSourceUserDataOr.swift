//===----------------------------------------------------------------------===//
// RingIO — event sources: custom events whose data are ored.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A custom source whose values are ored — `DispatchSourceUserDataOr`.
///
/// Make one with ``IOSource/makeUserDataOrSource(queue:ring:)``; ``or(data:)`` from any thread
/// delivers an event, and values ored before the handler runs come as one event with their
/// bitwise or: a set of flags to act on.
///
///     let flags = IOSource.makeUserDataOrSource(queue: ring)
///     flags.setEventHandler { if flags.data & 1 != 0 { print("flag 1 raised") } }
///     flags.resume()
///     flags.or(data: 1)
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceUserDataOr: IOSource, @unchecked Sendable {
    /// Ors `data` into the source's pending value and delivers an event. Any thread;
    /// lock-free. A value of 0 has no effect.
    public func or(data: UInt) {
        self.core.merge(data)
    }

    /// The bitwise or of the values ored since the last event; read it inside the event
    /// handler.
    public var data: UInt {
        self.rawData
    }
}
