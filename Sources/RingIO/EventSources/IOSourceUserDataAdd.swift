//===----------------------------------------------------------------------===//
// RingIO — event sources: custom events whose data add up.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A custom source whose values add up — `DispatchSourceUserDataAdd`.
///
/// Make one with ``IOSource/makeUserDataAddSource(queue:ring:)``; ``add(data:)`` from any
/// thread delivers an event, and values added before the handler runs come as one event with
/// their sum.
///
///     let work = IOSource.makeUserDataAddSource(queue: ring)
///     work.setEventHandler { print("\(work.data) items queued") }
///     work.resume()
///     work.add(data: 3)
// @unchecked: IOSource's reason; this kind adds no mutable state.
public final class IOSourceUserDataAdd: IOSource, @unchecked Sendable {
    /// Adds `data` to the source's pending value (wrapping on overflow) and delivers an event.
    /// Any thread; lock-free. A value of 0 has no effect.
    public func add(data: UInt) {
        self.core.merge(data)
    }

    /// The sum of the values added since the last event; read it inside the event handler.
    public var data: UInt {
        self.rawData
    }
}
