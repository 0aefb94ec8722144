//===----------------------------------------------------------------------===//
// RingIO — channels: a file send's progress and borrowed descriptor.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What the handler of a file send is told about each call: the bytes not yet sent, in call
/// order. The ring pushes a value with each call; the handler wrapper takes them in the same
/// order (one drainer at a time runs an operation's calls, in order).
internal final class _SendProgress: Sendable {
    private let remaining = _Lock<[Int]>([])

    func push(_ value: Int) { self.remaining.withLock { $0.append(value) } }

    /// The oldest value not yet taken; `nil` for a call made without one (an operation that
    /// never reached its ring).
    func take() -> Int? {
        self.remaining.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}

/// A source channel's descriptor on its way to a file send (`IOChannel.write(contentsOf:
/// IOChannel…)`): duplicated on the source's ring, handed to the send on its own. Every send
/// gets an answer and no duplicate is left open, whatever happens to the jobs that carry it:
/// a loan dropped unsettled (the source's ring had shut down and discarded the job) settles
/// with ECANCELED; a duplicate no one took (the send's ring had shut down) is closed.
internal final class _DescriptorLoan: Sendable {
    private let operation: _FileSendOperation
    private let settled = Atomic<Bool>(false)

    init(to operation: _FileSendOperation) {
        self.operation = operation
    }

    /// Hands `result` to the send, on its ring. The first call counts; a later duplicate is
    /// closed. Any thread.
    func settle(_ result: Result<CInt, Errno>) {
        let lent = _LentDescriptor(result)
        guard !self.settled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let operation = self.operation
        let ring = operation.entry.ring
        if ring.isCurrentThread {
            operation.sourceResolved(lent.take())
        } else {
            ring.enqueue { operation.sourceResolved(lent.take()) }
        }
    }

    deinit {
        if !self.settled.load(ordering: .acquiring) { self.settle(.failure(.canceled)) }
    }
}

/// A duplicated descriptor in transit: closed when it goes away untaken.
private final class _LentDescriptor: Sendable {
    private let result: _Lock<Result<CInt, Errno>?>

    init(_ result: Result<CInt, Errno>) {
        self.result = _Lock(result)
    }

    func take() -> Result<CInt, Errno> {
        self.result.withLock { result in
            defer { result = nil }
            return result!
        }
    }

    deinit {
        if case .success(let fd) = self.result.withLock({ $0 }) { _POSIX.close(fd) }
    }
}
