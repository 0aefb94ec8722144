//===----------------------------------------------------------------------===//
// RingIO — test support shared by the suites: what it offers and how a suite uses it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// RingIOTestSupport is a library target of the package, not a product: the test targets
// depend on it (`.testTarget(name: …, dependencies: ["RingIO", "RingIOTestSupport"])`) and
// `import RingIOTestSupport`; nothing outside the package sees it. Every declaration is
// `package`, like the library's own test hooks (`_RingIOTesting`), which it builds on.
//
// What it offers, by file:
//
// - Barrier.swift — waits on events instead of the clock: `ringBarrier(_:)` (a request
//   through the ring that completes after everything that happened before it has reached
//   the handlers), `ChannelContext.barrier()` (the ring and the context's queue), and
//   `waitForRingTimers(_:after:)` (the ring's own clock: for tests whose subject is time).
//   Check that something did *not* happen after one of these, never after a pause.
// - Waiting.swift — bounded waits on a condition (`eventually`, `eventuallyAsync`,
//   `wait(_:seconds:)` on a semaphore, `bounded` for a task), threads of their own
//   (`startThread`, `onThread`, `onThreads`), `testTaskExecutor` (a task executor that never
//   starves behind blocked tests), `Counter` and `Recorder`.
// - ChannelContext.swift — a ring and a queue per test (`QueueKind`: a DispatchQueue or the
//   ring itself; `ChannelContext`), and stream endpoints (`StreamEndpoint`: pipe, socket
//   pair, TCP, FIFO, terminal).
// - ChannelRecording.swift — recorders that check the handler rules: `OperationLog` (read
//   and write handlers), `ConvenienceLog` (one-shot handlers), `CleanupLog` (the cleanup
//   handler, with `expectOnce`), `HandlerCall`.
// - Descriptors.swift — pipes, socket pairs, TCP pairs (`makeTCPPair`), listeners, terminals,
//   temporary files and directories, and what a test asks of a descriptor.
// - Clients.swift — TCP clients of a listener on 127.0.0.1 or ::1 (`connectClient`,
//   `connectClients`), and socket queries.
// - Processes.swift — child processes (`spawn`, `waitForExit`, `reap`) and signals.
// - Bytes.swift — bytes and ropes with known contents (`patternBytes`, `fragmentedRope`),
//   `expectSameBytes`, `SplitMix64`.
// - RingRequests.swift — ring requests submitted straight (`_RingIOTesting.perform`…).
//
// A new suite: add `"RingIOTestSupport"` to its test target's dependencies, gate ring-bound
// suites with `.enabled(if: ringIsAvailable, ringUnavailableReason)`, make descriptors with
// the helpers here (close-on-exec from the start: an exit test's child must not inherit
// them), and wait with the barrier or a condition. A fixed sleep needs a comment saying why
// no event exists.

import Dispatch
import RingIO
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Why a RingIO loop cannot be set up here, or nil when it can (on either engine).
package let ringSetUpError = _RingIOTesting.ringSetUpError()

/// Whether a RingIO loop can be set up here; suites that need one skip cleanly otherwise.
package let ringIsAvailable = ringSetUpError == nil

/// The reason a ring-bound suite gives when it skips.
package let ringUnavailableReason: Comment =
    "no RingIO loop can be set up here: \(ringSetUpError.map { "\($0)" } ?? "")"

/// Whether the running kernel is `major.minor` or later (uname's release, e.g. "6.18.44-…").
package func kernelIsAtLeast(_ major: Int, _ minor: Int) -> Bool {
    var names = utsname()
    guard uname(&names) == 0 else { return false }
    let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    guard parts.count == 2 else { return false }
    return (parts[0], parts[1]) >= (major, minor)
}
