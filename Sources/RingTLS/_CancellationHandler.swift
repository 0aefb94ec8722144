//===----------------------------------------------------------------------===//
// RingIO — RingTLS: cancellation handlers that keep a task where it runs.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// `withTaskCancellationHandler(operation:onCancel:)` with no executor switch: `operation`
/// runs where the caller runs. The same as RingIO's channels use for their awaits
/// (Sources/RingIO/Engine/Core/_CancellationHandler.swift, internal to RingIO), for the same
/// reason.
///
/// The standard library's `withTaskCancellationHandler(operation:onCancel:isolation:)` takes a
/// nonisolated async `operation`, so (Swift 6.3) it switches to the generic executor to call
/// it, and back to `isolation` after: two task switches per await, each a lookup of a ring
/// task's executor preference under its status lock. Profiled on `http-server` over TLS (one
/// task per connection, preferring its ring), those lookups and the lock were about 8% of the
/// server's CPU. The runtime's older entry point runs on its caller's executor
/// (`@_unsafeInheritExecutor`): called from a function isolated to `isolation` (a parameter of
/// the caller, as in every async method of `TLSStream`), with an `operation` closure formed
/// there (which inherits that isolation), no switch happens at all.
@inline(__always)
internal func _withCancellationHandler<T>(
    isolation: isolated (any Actor)?,
    operation: () async -> T,
    onCancel handler: @Sendable () -> Void
) async -> T {
    await _unsafeInheritExecutor_withTaskCancellationHandler(operation: operation, onCancel: handler)
}
