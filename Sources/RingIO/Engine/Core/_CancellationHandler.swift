//===----------------------------------------------------------------------===//
// RingIO — the engine: cancellation handlers that keep a task where it runs.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// `withTaskCancellationHandler(operation:onCancel:)` with no executor switch: `operation`
/// runs where the caller runs.
///
/// Why not the standard library's `withTaskCancellationHandler(operation:onCancel:isolation:)`:
/// its `operation` parameter is a nonisolated async function, so (Swift 6.3) it switches to
/// the generic executor to call it, and back to `isolation` after — two task switches per
/// await. For a task that prefers a ring (``RingLoop/taskExecutor``) the generic executor is
/// that ring, and the switches cost a lookup of the preference under the task's status lock
/// each; for a task isolated to a ring (``RingLoop/run(_:)``) they are two hops through
/// Dispatch's global pool. The runtime's older entry point runs on its caller's executor
/// (`@_unsafeInheritExecutor`): called from a function isolated to `isolation` (a parameter
/// of the caller, as here), with an `operation` closure isolated to it too (a non-`Sendable`
/// closure formed there inherits it), no switch happens at all.
@inline(__always)
internal func _withCancellationHandler<T>(
    isolation: isolated (any Actor)?,
    operation: () async -> T,
    onCancel handler: @Sendable () -> Void
) async -> T {
    await _unsafeInheritExecutor_withTaskCancellationHandler(operation: operation, onCancel: handler)
}
