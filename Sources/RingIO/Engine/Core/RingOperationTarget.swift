//===----------------------------------------------------------------------===//
// RingIO — the engine: what receives an operation's completions.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Completion targets

/// Receives the completions of the operations it submitted, on the ring thread.
///
/// Completions dispatch through this protocol and an `OperationKind`, never through a closure
/// allocated per operation: a channel or source object is the target of all of its operations.
internal protocol RingOperationTarget: AnyObject {
    /// - Parameters:
    ///   - result: The CQE's `res`: a count or `-errno`.
    ///   - flags: The CQE's flags (`IORING_CQE_F_MORE`, buffer ids…).
    ///   - context: The value given at submission.
    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64)
}

/// A target that runs a closure: for cold paths and tests (it allocates).
internal final class _ClosureTarget: RingOperationTarget {
    private let body: (Int32, CompletionFlags) -> Void

    internal init(_ body: @escaping (Int32, CompletionFlags) -> Void) {
        self.body = body
    }

    internal func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.body(result, flags)
    }
}
