//===----------------------------------------------------------------------===//
// RingIO — the engine: a ring submitting its operations.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _RingCore {
    // MARK: Ring thread: submitting

    /// Prepares one operation for the next flush.
    ///
    /// - Parameters:
    ///   - request: What to ask the kernel; its pointers must stay valid until the final
    ///     completion.
    ///   - target: Receives the completion(s) on the ring thread, after the CQ batch is drained.
    ///   - context: Handed back with the completion.
    /// - Returns: The operation's user data (for cancellation).
    @discardableResult
    internal func submit(_ request: RingRequest, target: any RingOperationTarget, context: UInt64 = 0) -> UInt64 {
        self.assertOnRingThread()
        let userData = self.occupySlot(kind: request.kind, target: target, context: context)
        self.push(request, userData: userData)
        return userData
    }

    /// Hands a request to the engine for the next flush; when io_uring's submission queue is
    /// full, flushes it to the kernel first (and, if the kernel pushes back because the CQ
    /// overflowed, reaps completions to make room).
    @inline(__always)
    func push(_ request: RingRequest, userData: UInt64) {
        while !self.engine.push(request, userData: userData) {
            self.flushSubmissionQueue()
        }
    }

    /// Submits `first` and `second` as a chain (IOSQE_IO_LINK), both for `target`: `second`
    /// starts once `first` has completed in full; a `first` that fails or comes up short
    /// (fewer bytes than asked) ends `second` with ECANCELED. Returns both user data.
    internal func submitLinked(
        _ first: RingRequest,
        context firstContext: UInt64,
        then second: RingRequest,
        context secondContext: UInt64,
        target: any RingOperationTarget
    ) -> (first: UInt64, second: UInt64) {
        self.assertOnRingThread()
        // Both in one submission: a chain cut by a flush between its entries is no chain.
        while !self.engine.hasSubmissionSpace(2) {
            self.flushSubmissionQueue()
        }
        let firstUserData = self.occupySlot(kind: first.kind, target: target, context: firstContext)
        let secondUserData = self.occupySlot(kind: second.kind, target: target, context: secondContext)
        self.engine.pushLinked(first, userData: firstUserData, then: second, userData: secondUserData)
        return (firstUserData, secondUserData)
    }

    func occupySlot(kind: OperationKind, target: any RingOperationTarget, context: UInt64) -> UInt64 {
        let slotIndex: UInt32
        if let free = self.freeSlots.popLast() {
            slotIndex = free
        } else {
            slotIndex = UInt32(self.slots.count)
            self.slots.append(_Slot())
        }
        self.slots[Int(slotIndex)].target = target
        self.slots[Int(slotIndex)].context = context
        self.inFlight += 1
        self.submittedSinceCancelAll = true
        return UserData(slot: slotIndex, generation: self.slots[Int(slotIndex)].generation, kind: kind).raw
    }

    /// Hands the prepared entries to the kernel without waiting; when the kernel pushes back
    /// because the CQ overflowed, reaps completions to make room.
    func flushSubmissionQueue() {
        do throws(Errno) {
            let submitted = try self.submitToEngine(wait: false)
            self.counters.submissions.add(UInt64(submitted), ordering: .relaxed)
        } catch  where error == .resourceBusy || error == .resourceTemporarilyUnavailable {
            self.reapCompletions()
        } catch {
            preconditionFailure("RingIO: io_uring_submit failed: \(error)")
        }
    }

    func armWakeUp() {
        let target: _WakeUpTarget
        if let existing = self.wakeUpTarget {
            target = existing
        } else {
            target = _WakeUpTarget(self)
            self.wakeUpTarget = target
        }
        let userData = self.occupySlot(kind: .wakeUp, target: target, context: 0)
        self.push(.read(fd: self.eventFD, buffer: self.wakeBuffer, offset: -1), userData: userData)
    }

    func wakeUpCompleted(result: Int32) {
        // Re-arm unless the ring is stopping (then the read was cancelled, or is moot).
        if !self.stopRequested.load(ordering: .relaxed) && result != -ECANCELED {
            self.armWakeUp()
        }
    }

    /// Whether completions wait in the kernel's overflow list: the CQ was full when they were
    /// posted (FEAT_NODROP keeps them; the next reap flushes them). For the tests.
    internal var completionQueueHasOverflow: Bool {
        self.assertOnRingThread()
        return self.hasOverflow
    }

    /// Whether completions wait in io_uring's overflow list (never on the readiness engine).
    @inline(__always)
    var hasOverflow: Bool {
        self.engine.hasOverflow
    }

    @inline(__always)
    func submitToEngine(wait: Bool) throws(Errno) -> Int {
        try self.engine.submit(wait: wait)
    }
}

/// One operation slot. The generation changes each time the slot is recycled.
internal struct _Slot {
    var generation: UInt32 = 0
    var target: (any RingOperationTarget)?
    var context: UInt64 = 0

    /// Frees the slot for its next operation; returns the target it let go of.
    mutating func recycle() -> (any RingOperationTarget)? {
        self.generation = (self.generation &+ 1) & UserData.generationMask
        self.context = 0
        return self.target.take()
    }
}

/// The target of the ring's own eventfd read.
internal final class _WakeUpTarget: RingOperationTarget {
    unowned let core: _RingCore

    init(_ core: _RingCore) {
        self.core = core
    }

    func ringOperationCompleted(result: Int32, flags: CompletionFlags, context: UInt64) {
        self.core.wakeUpCompleted(result: result)
    }
}
