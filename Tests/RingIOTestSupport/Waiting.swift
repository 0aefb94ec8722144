//===----------------------------------------------------------------------===//
// RingIO — test support: bounded waits on conditions, threads of their own, a task executor
// that never starves.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Waiting, bounded

// Never write `#expect(await f { … })` or `#require(await f { … })`: await into a local
// first (`let holds = await f { … }; #expect(holds)`). With Swift 6.3.1, inside a
// `withTaskExecutorPreference` body, such an `#expect` made a later call of the same kind of
// function with another trailing closure (`await waitUntil { B }`) run the *first* closure
// instead — B never ran, and the wait returned A's answer. Tests passed that checked nothing.
// Seen with a plain actor and a dispatch-backed task executor, no RingIO involved; `.ci/run`
// rejects the pattern.

/// How much longer than written every bound of these waits is: `RINGIO_TEST_TIME_SCALE`
/// (a number ≥ 1; 1 when unset). Tools/run-sanitizers.sh sets it, since a sanitizer makes
/// everything several times slower and CI runs the suite beside other builds and tests. A
/// bound only ends a wait for an event that should come; a test that expects *no* event within
/// a time waits that much longer, and passes or fails as before.
package let testTimeScale: Double = {
    guard let text = getenv("RINGIO_TEST_TIME_SCALE"), let scale = Double(String(cString: text)), scale >= 1
    else { return 1 }
    return scale
}()

/// `seconds` times ``testTimeScale``: the bound a wait of `seconds` as written has here.
package func scaled(_ seconds: Double) -> Double { seconds * testTimeScale }

/// Waits for `semaphore` at most `seconds` (scaled by ``testTimeScale``); false on time-out.
package func wait(_ semaphore: DispatchSemaphore, seconds: Double = 10) -> Bool {
    semaphore.wait(timeout: .now() + scaled(seconds)) == .success
}

/// Keeps a handler running for `microseconds`: what a recorder does inside each call it
/// records, so that a second call overlapping it — which the handler rules forbid — would find
/// it still running and be reported. Not a wait for an event: no event announces a call that
/// should not exist. The one sleep of the recorders (``OperationLog``, a source's or a
/// listener's log).
package func holdForOverlap(microseconds: UInt32) {
    if microseconds > 0 { usleep(microseconds) }
}

/// Polls `condition` until it holds or `seconds` (scaled by ``testTimeScale``) pass.
package func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(scaled(seconds) * 1_000))
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(1_000)
    }
    return true
}

/// Polls `condition` every 2 ms until it holds or `seconds` pass, without blocking a thread.
package func eventuallyAsync(seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    await waitUntil(seconds: seconds) { condition() }
}

/// Polls `condition` (which may await) every 2 ms until it holds or `seconds` (scaled by
/// ``testTimeScale``) pass, without
/// blocking a thread: between polls the task waits on a dispatch timer and resumes on its own
/// executor, with no detour through the cooperative pool (where `Task.sleep` wakes up, behind
/// whatever the suite's synchronous tests hold there).
package func waitUntil(seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(scaled(seconds) * 1_000))
    while !(await condition()) {
        if ContinuousClock.now >= deadline { return false }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2)) { continuation.resume() }
        }
    }
    return true
}

/// Runs tasks on threads of its own, one more whenever all of them are busy: a test that
/// blocks one never delays another test's tasks. Dispatch's global queues (and the cooperative
/// pool, which runs on them on Linux) have as many threads as cores and add one only after
/// they have all been blocked a while; in a parallel run, synchronous tests block them, and a
/// task waiting there for seconds looks like a server that did not answer.
package final class ThreadsTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `state` is under its lock; `available` is a semaphore.
    /// Jobs not yet taken, and the threads waiting on `available` no job was signalled for.
    private let state = _Lock<(jobs: [UnownedJob], idle: Int)>(([], 0))
    private let available = DispatchSemaphore(value: 0)

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let wakesIdle = self.state.withLock { state in
            state.jobs.append(job)
            guard state.idle > 0 else { return false }
            state.idle -= 1
            return true
        }
        // Each job gets a thread: an idle one, signalled, or a new one. A thread takes jobs
        // until none is left before it waits again.
        if wakesIdle { self.available.signal() } else { startThread { self.work() } }
    }

    private func work() {
        while true {
            let job: UnownedJob? = self.state.withLock { state in
                if state.jobs.isEmpty {
                    state.idle += 1
                    return nil
                }
                return state.jobs.removeFirst()
            }
            if let job {
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            } else {
                self.available.wait()
            }
        }
    }
}

package let testTaskExecutor = ThreadsTaskExecutor()

/// Runs `body` on a new detached thread.
package func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Work: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    var thread = pthread_t()
    let started = pthread_create(
        &thread,
        nil,
        { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        },
        Unmanaged.passRetained(Work(body)).toOpaque()
    )
    precondition(started == 0, "pthread_create: \(started)")
    pthread_detach(thread)
}

/// Runs the blocking `body` on a thread of its own and returns its result: not on dispatch's
/// global queues, whose few threads the tasks of the suite need.
package func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        startThread { continuation.resume(returning: body()) }
    }
}

/// Runs `body` in a task and waits at most `seconds` for it; nil on time-out (the task is then
/// cancelled and abandoned).
package func bounded<T: Sendable>(
    seconds: Double = 10,
    _ body: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    typealias Outcome = Result<T, any Error>?
    // Whichever comes first — the body's result or the time-out — resumes the waiter, once.
    let state = _Lock<(waiter: CheckedContinuation<Outcome, Never>?, outcome: Outcome?)>((nil, nil))
    @Sendable func finish(_ outcome: Outcome) {
        let waiter: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = .some(outcome)
            return state.waiter.take()
        }
        waiter?.resume(returning: outcome)
    }
    // Not on the cooperative pool: synchronous tests running in parallel block its threads,
    // and a body starved of a thread must not look like a hang.
    let task = Task(executorPreference: testTaskExecutor) {
        do {
            finish(.success(try await body()))
        } catch {
            finish(.failure(error))
        }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
        finish(nil)
        task.cancel()
    }
    return await withCheckedContinuation { continuation in
        let ready: Outcome?? = state.withLock { state in
            if let outcome = state.outcome { return .some(outcome) }
            state.waiter = continuation
            return .none
        }
        if case .some(let outcome) = ready { continuation.resume(returning: outcome ?? nil) }
    }
}

/// The outcome of ``bounded(seconds:_:)`` as bytes or the error thrown, for comparisons.
package enum Outcome: Equatable, CustomStringConvertible {
    case bytes([UInt8])
    case error(Errno)
    case otherError(String)
    case timedOut

    package init(_ result: Result<[UInt8], any Error>?) {
        switch result {
        case .success(let bytes)?: self = .bytes(bytes)
        case .failure(let error as Errno)?: self = .error(error)
        case .failure(let error)?: self = .otherError("\(error)")
        case nil: self = .timedOut
        }
    }

    /// For a body that returns nothing: `.bytes([])` on success.
    package init(_ result: Result<Void, any Error>?) {
        self.init(result.map { $0.map { [UInt8]() } })
    }

    package var description: String {
        switch self {
        case .bytes(let bytes): "\(bytes.count) bytes"
        case .error(let error): "\(error)"
        case .otherError(let error): "error \(error)"
        case .timedOut: "no result in time"
        }
    }
}

/// CLOCK_REALTIME, since the epoch.
package func wallClockNow() -> Duration {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
}

/// The CPU time this process has used so far (all threads).
package func processCPUTime() -> Duration {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
}

// MARK: - Threads

/// Runs `body(index)` on `count` threads of their own, released together, and waits (bounded)
/// for them all; false on time-out (the threads are then abandoned). The bound is generous: in
/// CI, with the whole suite in parallel beside the sanitizer builds on two cores, eight threads
/// of 2,000 `add`s and `sched_yield`s each did not all finish within 20 s.
package func onThreads(_ count: Int, seconds: Double = 60, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let ready = DispatchSemaphore(value: 0)
    let go = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
    for index in 0..<count {
        startThread {
            ready.signal()
            while !go.load(ordering: .acquiring) { sched_yield() }
            body(index)
            done.signal()
        }
    }
    for _ in 0..<count where !wait(ready, seconds: seconds) { return false }
    go.store(true, ordering: .releasing)
    for _ in 0..<count where !wait(done, seconds: seconds) { return false }
    return true
}

// MARK: - Shared state

/// A counter shared across threads.
package final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    package init() {}
    package func increment() { self.value.add(1, ordering: .relaxed) }
    package var count: Int { self.value.load(ordering: .relaxed) }
}

/// A list appended to from several threads.
package final class Recorder<Element: Sendable>: Sendable {
    private let items = _Lock<[Element]>([])
    package init() {}
    package func append(_ item: Element) { self.items.withLock { $0.append(item) } }
    package var all: [Element] { self.items.withLock { $0 } }
    package var count: Int { self.items.withLock { $0.count } }

    /// Waits (polling, bounded) until at least `count` items are recorded. 20 s by default:
    /// what is recorded may take handshakes, which a sanitizer makes slow.
    package func wait(for count: Int, seconds: Double = 20) -> Bool {
        eventually(seconds: seconds) { self.count >= count }
    }
}
