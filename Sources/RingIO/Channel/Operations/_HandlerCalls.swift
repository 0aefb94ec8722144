//===----------------------------------------------------------------------===//
// RingIO — channels: an operation's handler calls waiting for their queue.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The arguments of one handler call, copied on every delivery.
///
/// Layout: four words, so that the compiler copies and destroys one (and an optional one) in
/// line, with one retain or release; above four words it goes through value-witness calls of
/// about 90 instructions each. The small fields come first so that they share the first word
/// (`error` 5 bytes, the flags 2), then the rope's three words. Tested in
/// `OperationLayoutTests`.
internal struct _HandlerCall: Sendable {
    let error: Errno?
    let done: Bool
    /// Whether the call has data (`nil` otherwise, even when empty).
    let hasData: Bool
    var rope: ByteRope

    init(done: Bool, data: consuming ByteRope?, error: Errno?) {
        self.done = done
        self.error = error
        switch consume data {
        case .some(let rope):
            self.hasData = true
            self.rope = rope
        case .none:
            self.hasData = false
            self.rope = ByteRope()
        }
    }
}

/// The handler calls of one operation waiting for its drain, oldest first. The first waits in
/// `first`, so an operation with one call (most writes) never allocates an array.
///
/// The first call is held with a flag rather than as an optional, and handed out by swapping:
/// an optional call is copied and destroyed as a whole at each step, a rope moved by a swap is
/// not retained at all.
internal struct _HandlerCalls {
    private var first = _HandlerCall(done: false, data: nil, error: nil)
    private var hasFirst = false
    private var rest: [_HandlerCall] = []
    /// A drain is scheduled or running; cleared by the drain when it finds nothing left.
    var running = false

    /// Appends `call`. A data call (not final, no error, some bytes) joins the last waiting
    /// data call when their bytes together are at most `mergeLimit` (0: never).
    mutating func append(_ call: consuming _HandlerCall, mergingUpTo mergeLimit: Int) {
        if mergeLimit > 0, Self.isDataCall(call) {
            if !self.rest.isEmpty {
                if Self.merge(call.rope, into: &self.rest[self.rest.count - 1], limit: mergeLimit) { return }
            } else if self.hasFirst {
                if Self.merge(call.rope, into: &self.first, limit: mergeLimit) { return }
            }
        }
        if !self.hasFirst && self.rest.isEmpty {
            self.first = call
            self.hasFirst = true
        } else {
            self.rest.append(call)
        }
    }

    /// Swaps the oldest waiting call into `call` (whose old value, a spent call, takes its
    /// place) and moves the others to `rest` (empty, its storage kept for reuse: the two
    /// arrays trade places); `false`, and `running` cleared, when none waits.
    mutating func take(into call: inout _HandlerCall, restInto rest: inout [_HandlerCall]) -> Bool {
        guard self.hasFirst else {
            self.running = false
            return false
        }
        self.hasFirst = false
        swap(&self.first, &call)
        if !self.rest.isEmpty { swap(&self.rest, &rest) }
        return true
    }

    private static func isDataCall(_ call: _HandlerCall) -> Bool {
        !call.done && call.error == nil && !call.rope.isEmpty
    }

    private static func merge(_ data: ByteRope, into waiting: inout _HandlerCall, limit: Int) -> Bool {
        guard Self.isDataCall(waiting), waiting.rope.count + data.count <= limit else { return false }
        waiting.rope.append(data)
        return true
    }
}
