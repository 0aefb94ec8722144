//===----------------------------------------------------------------------===//
// RingIO — the engine: the loop of a ring's thread.
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
    // MARK: Ring thread: the loop

    func run() {
        while true {
            self.runJobs()
            if self.stopRequested.load(ordering: .sequentiallyConsistent) && !self.cancelAllInFlight
                && (!self.cancelAllIssued || self.submittedSinceCancelAll || self.cancelAllRetryDue)
            {
                // Cancel everything in flight; again whenever a handler submitted more, and, while
                // operations remain that a cancel could not reach yet (one in the middle of
                // completing, one an io-wq worker is running), every 10 ms until none is left.
                self.cancelAllIssued = true
                self.cancelAllInFlight = true
                self.cancelAllRetryDue = false
                self.submit(
                    .cancelAll,
                    target: _ClosureTarget { [unowned self] _, _ in
                        self.cancelAllInFlight = false
                        guard self.inFlight > 0 else { return }
                        let spec = _KernelTimespec(nanoseconds: 10_000_000)
                        self.submit(
                            .timeout(spec: spec),
                            target: _ClosureTarget { [unowned self] _, _ in
                                withExtendedLifetime(spec) {}
                                self.cancelAllRetryDue = true
                            }
                        )
                        // The retry timer itself is not a reason to cancel again.
                        self.submittedSinceCancelAll = false
                    }
                )
                self.submittedSinceCancelAll = false
            }
            if self.cancelAllIssued && self.inFlight == 0 && self.localJobs.isEmpty && self.inbox.isEmpty {
                // Channels still open: closed (stopped) here, so that their descriptors opened
                // from a path are closed and their cleanup handlers run — after the ring there
                // is nowhere left to do it, and an entry, its channels and this ring would keep
                // each other alive. Then round again for what that starts.
                if self.runExitHooks() { continue }
                if self.exited.load(ordering: .relaxed) { break }
                // From now on other threads keep their jobs (see `enqueue`). Those pushed
                // before they saw this, and whatever they start (a task resumed by a cancelled
                // read that reads again), still run here: one more pass until nothing is left.
                self.exited.store(true, ordering: .sequentiallyConsistent)
                continue
            }
            // Work delivered to DispatchQueues by jobs goes out before the ring may sleep.
            self.flushDispatchBatches()
            self.endTurn()
            self.prepareTimerTimeout()
            self.flush(mayWait: self.localJobs.isEmpty)
            self.turnStart = _Clock.coarseNanoseconds()
            self.reapCompletions()
            self.runReady()
            self.collectReturnedBuffers()
            self.flushDispatchBatches()
        }
        self.flushDispatchBatches()
        // The layers' state goes (what could not finish would hold the ring).
        self.locals.removeAll()
        // Timers still armed never fire: their targets go (no cycle through the core is left).
        self.timers.removeAll()
        self.spareTimerTimeouts.removeAll()
        self._providedBuffers?.close(engine: self.engine)
        self._providedBuffers = nil
        for pool in self.ownedPools { pool.close(engine: self.engine) }
        self.ownedPools.removeAll()
        self.hasOwnedPools = false
        self.engine.close()
        _POSIX.close(self.eventFD)
        self.executors = nil
        self.ringThreadID.store(0, ordering: .releasing)
        // Last: an async shutdown resumes here (its task, if it preferred this ring, on the
        // global executor: the ring takes no job any more).
        let waiters = self.finishWaiters.withLock { waiters in
            defer { waiters = nil }
            return waiters ?? []
        }
        for waiter in waiters { waiter() }
    }

    /// The ring is exiting with nothing in flight: each layer closes what it still has open
    /// on it (the channels: theirs, so that descriptors opened from a path are closed and
    /// cleanup handlers run). Returns whether any of them started work the ring must run
    /// before it exits.
    func runExitHooks() -> Bool {
        var started = false
        for (_, local) in self.locals where local.ringIsExiting() {
            started = true
        }
        return started
    }

    // MARK: Ring thread: the layers' state

    /// The state of type `Local` that a layer above the engine keeps on this ring (the
    /// channels' open descriptors and budgets), made on first use. It lives as long as the
    /// ring's thread, and is told when the ring exits (``_RingLocal/ringIsExiting()``).
    ///
    /// - Complexity: O(*n*) in the number of layers with state on the ring (one or two: a
    /// scan of a few words, cheaper than hashing the key); take it once per long-lived
    /// object (a descriptor entry), not per operation.
    internal func local<Local: _RingLocal>(_ type: Local.Type) -> Local {
        self.assertOnRingThread()
        let key = ObjectIdentifier(type)
        for (existingKey, existing) in self.locals where existingKey == key {
            return unsafeDowncast(existing, to: Local.self)
        }
        let made = Local(core: self)
        self.locals.append((key, made))
        return made
    }

    /// Runs the jobs from other threads and those the ring gave itself before this turn; jobs
    /// they enqueue in turn wait for the next turn, so a job that re-enqueues itself cannot
    /// keep the ring from reaping.
    func runJobs() {
        // The ring's own jobs from before this turn first, then other threads'. In enqueue
        // order: a job enqueued on the ring thread first moves what the inbox holds into
        // `localJobs`, so whatever is left in the inbox came after every local job. Jobs
        // enqueued while these run go to `localJobs` (swapped out here) and wait for the next
        // turn.
        if !self.localJobs.isEmpty {
            swap(&self.runningJobs, &self.localJobs)
        }
        self.inbox.drain(into: &self.runningJobs)
        // Index loop: a job may append to `localJobs`, never to `runningJobs`. Each job is
        // let go of as it runs, not at the end of the batch: an operation whose last call a
        // job ran is then free for reuse by the jobs after it (`_WriteOperationPool`).
        var index = 0
        while index < self.runningJobs.count {
            self.run(self.runningJobs.take(at: index))
            index += 1
        }
        guard index > 0 else { return }
        self.runningJobs.removeTaken()
        // Jobs drop ropes too — a task resumed by a write's completion lets go of what it
        // wrote: their receive buffers go back to the kernel in this flush, not the next.
        self.collectReturnedBuffers()
    }

    @inline(__always)
    func run(_ job: _RingJob) {
        switch job {
        case .closure(let work):
            work()
        case .runnable(let runnable):
            runnable.runDelivered()
        case .scheduled(let work):
            work.runScheduled()
        case .taskJob(let job):
            job.runSynchronously(on: self.taskExecutorHandle!)
        case .serialJob(let job):
            job.runSynchronously(on: self.serialExecutorHandle!)
        }
    }

    /// The ring thread is about to enter the kernel: records how long it ran since it left it
    /// (reaping, handlers, jobs). A turn that runs long is a handler or a task that does not
    /// return or suspend, and every operation of the ring waits for it.
    @inline(__always)
    func endTurn() {
        guard self.turnStart != 0 else { return }
        let length = _Clock.coarseNanoseconds() &- self.turnStart
        if length > self.longestTurn {
            self.longestTurn = length
            self.counters.longestTurnNanoseconds.store(UInt64(length), ordering: .relaxed)
        }
        if length >= RingLoop.slowTurnNanoseconds {
            self.counters.slowTurns.add(1, ordering: .relaxed)
        }
    }

    /// Submits prepared entries; when `mayWait` and nothing else is pending, sleeps in the
    /// kernel until a completion (a wake-up from another thread is one: the eventfd read).
    func flush(mayWait: Bool) {
        var wait = mayWait
        if wait {
            self.asleep.store(true, ordering: .sequentiallyConsistent)
            if !self.inbox.isEmpty { wait = false }
        }
        do throws(Errno) {
            let submitted = try self.submitToEngine(wait: wait)
            self.counters.submissions.add(UInt64(submitted), ordering: .relaxed)
        } catch  where error == .resourceBusy || error == .resourceTemporarilyUnavailable {
            // CQ overflow: the reap that follows makes room.
        } catch {
            preconditionFailure("RingIO: io_uring_enter failed: \(error)")
        }
        if wait {
            self.asleep.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Reaps every ready completion into `ready`, recycling the slots of final completions.
    func reapCompletions() {
        var reapedAny = false
        withUnsafeTemporaryAllocation(of: RingCompletion.self, capacity: 64) { buffer in
            while true {
                let count = self.engine.reap(into: buffer)
                if count == 0 { break }
                reapedAny = true
                self.counters.completions.add(UInt64(count), ordering: .relaxed)
                for completion in buffer[..<count] {
                    self.accept(completion)
                }
                if count < buffer.count && !self.hasOverflow { break }
            }
        }
        if reapedAny { self.counters.batches.add(1, ordering: .relaxed) }
    }

    func accept(_ completion: RingCompletion) {
        guard let userData = UserData(raw: completion.userData),
            Int(userData.slot) < self.slots.count,
            self.slots[Int(userData.slot)].generation == userData.generation,
            self.slots[Int(userData.slot)].target != nil
        else {
            self.counters.staleCompletions.add(1, ordering: .relaxed)
            return
        }
        let context = self.slots[Int(userData.slot)].context
        let target: any RingOperationTarget
        if completion.hasMore {
            target = self.slots[Int(userData.slot)].target!
        } else {
            // The final completion: the target moves out of the slot, with no retain and
            // release (most completions are final).
            target = self.slots[Int(userData.slot)].recycle()!
            self.freeSlots.append(userData.slot)
            self.inFlight -= 1
        }
        self.ready.append(
            _ReadyCompletion(target: target, result: completion.result, flags: completion.flags, context: context)
        )
    }

    @inline(__always)
    func runReady() {
        // Index loop: a handler may submit, which never touches `ready`.
        var index = 0
        while index < self.ready.count {
            let item = self.ready.take(at: index)
            item.target.ringOperationCompleted(
                result: item.result,
                flags: CompletionFlags(item.flags),
                context: item.context
            )
            index += 1
        }
        self.ready.removeTaken()
    }
}

internal struct _ReadyCompletion {
    let target: any RingOperationTarget
    let result: Int32
    let flags: UInt32
    let context: UInt64
}
