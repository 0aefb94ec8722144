//===----------------------------------------------------------------------===//
// RingIO — sanitizers: a ThreadSanitizer false positive (continuations), reproduced.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// A correct program that ThreadSanitizer reports as a data race: a task awaits
// `withUnsafeContinuation` 20,000 times, each continuation handed to another thread (a serial
// DispatchQueue) that resumes it at once. Run by check-continuation-false-positive.sh.
//
// Why TSan is wrong here: the continuation's result slot lives in the awaiting task's
// allocation. `resume(returning:)` writes it; the code after the await reads it. The two are
// ordered by swift_continuation_resume and swift_continuation_await, atomics in
// libswift_Concurrency.so, which is not instrumented — when the resume comes before the task
// has finished suspending (the race the runtime is built for), TSan sees nothing order the
// write and the read. It names the stdlib's own frames: the partial function of
// `withUnsafeContinuation` that runs after the await, and `UnsafeContinuation.resume`.
// RingIO's async API resumes its continuations on the ring thread in exactly this way, hence
// the one entry of tsan.supp, which names that partial function only.
//
//     swiftc -sanitize=thread -Onone continuation-handoff.swift -o continuation-handoff
//     ./continuation-handoff        # TSan: data race (a false positive); every value arrives
//     TSAN_OPTIONS=suppressions=tsan.supp ./continuation-handoff   # no report

import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Runs jobs on a concurrent DispatchQueue, as the tests' task executor does.
final class QueueExecutor: TaskExecutor {
    let queue = DispatchQueue(label: "continuation-handoff.tasks", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

let iterations = 20_000
/// Resumes each continuation as soon as it is handed over (libdispatch orders the handover
/// itself for TSan: the race it reports is the resume against the awaiting task).
let resumer = DispatchQueue(label: "continuation-handoff.resumer")

let done = DispatchSemaphore(value: 0)
Task(executorPreference: QueueExecutor()) {
    var sum = 0
    for _ in 0..<iterations {
        sum += await withUnsafeContinuation { (continuation: UnsafeContinuation<Int, Never>) in
            resumer.async { continuation.resume(returning: 1) }
        }
    }
    precondition(sum == iterations, "a value was lost: \(sum)")
    print("awaited \(iterations) continuations, every value arrived")
    done.signal()
}
done.wait()
