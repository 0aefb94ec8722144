//===----------------------------------------------------------------------===//
// RingIO — the engine: the packed, versioned user data of an operation.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The 64 bits of `user_data`: which operation slot a completion belongs to, the generation of
/// that slot when the operation was submitted, and the kind of operation.
///
///     63            40 39          32 31                              0
///     ┌───────────────┬──────────────┬─────────────────────────────────┐
///     │ generation 24 │   kind 8     │            slot 32              │
///     └───────────────┴──────────────┴─────────────────────────────────┘
///
/// Never a pointer: a completion for a slot that was since recycled carries the old generation
/// and is recognised as stale instead of being delivered to the slot's new owner.
package struct UserData: Equatable {
    package static let generationMask: UInt32 = (1 << 24) - 1

    package var slot: UInt32
    package var generation: UInt32
    package var kind: OperationKind

    package init(slot: UInt32, generation: UInt32, kind: OperationKind) {
        precondition(generation <= Self.generationMask, "generation out of range")
        self.slot = slot
        self.generation = generation
        self.kind = kind
    }

    /// Decodes `raw`; `nil` for a value no slot operation produced (an unknown kind).
    package init?(raw: UInt64) {
        guard let kind = OperationKind(rawValue: UInt8(truncatingIfNeeded: raw >> 32)) else { return nil }
        self.slot = UInt32(truncatingIfNeeded: raw)
        self.generation = UInt32(truncatingIfNeeded: raw >> 40)
        self.kind = kind
    }

    package var raw: UInt64 {
        UInt64(self.generation) << 40 | UInt64(self.kind.rawValue) << 32 | UInt64(self.slot)
    }
}

/// The kinds of operation a ring runs; completions dispatch on this, never on an existential.
package enum OperationKind: UInt8, CaseIterable {
    /// Reading the ring's own eventfd (wake-ups from other threads).
    case wakeUp = 1
    case nop
    case read
    case write
    case send
    case receive
    case accept
    case open
    case close
    case timeout
    case poll
    case cancel
    case splice
    case connect
    case shutdown
}
