//===----------------------------------------------------------------------===//
// RingIO — the RINGIO_VALGRIND switch: only the value "1" sets rings up for valgrind, read at
// each ring's set-up; LD_PRELOAD is no longer looked at; the readiness engine is unchanged.
// (The valgrind-compatible ring's own round trips: RingLoopTests.)
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("RingLoop: the RINGIO_VALGRIND switch", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct RingLoopValgrindSwitchTests {
    @Test("only RINGIO_VALGRIND=1 changes a ring's set-up, at each set-up; LD_PRELOAD does not; epoll is unchanged")
    func onlyOneSwitches() async {
        // A child process: the environment is process-wide, and rings of tests running in
        // parallel would be set up under it.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            checkValgrindSwitch()
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("the child's standard error: \(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }
}

/// What the switch may change in a ring's set-up.
private func setUpSeen(_ backend: RingLoop.Backend) -> [Bool] {
    do {
        let ring = try RingLoop(entries: 8, backend: backend)
        defer { ring.shutdown() }
        let setup = ring.setup
        return [setup.deferredTaskRun, setup.registeredRingDescriptor, setup.cooperativeTaskRun, setup.noDrop]
    } catch {
        fail("a ring on \(backend) could not be set up: \(error)")
    }
}

/// Ends the child with a message on its standard error.
private func fail(_ message: String) -> Never {
    printToStandardError(message)
    exit(1)
}

/// In the child: rings set up under each environment, against one set up with none.
private func checkValgrindSwitch() {
    unsetenv("RINGIO_VALGRIND")
    unsetenv("LD_PRELOAD")
    var backends: [RingLoop.Backend] = [.epoll]
    if _RingIOTesting.ioUringAvailable { backends.append(.ioUring) }
    for backend in backends {
        let usual = setUpSeen(backend)
        // Not one of these: only "1" is the switch.
        for value in ["0", "", "true", "yes", "on", " 1", "1 ", "01", "2", "11"] {
            setenv("RINGIO_VALGRIND", value, 1)
            let seen = setUpSeen(backend)
            if seen != usual {
                fail("\(backend): RINGIO_VALGRIND=\"\(value)\" changed the set-up: \(seen), usual \(usual)")
            }
        }
        unsetenv("RINGIO_VALGRIND")
        // What valgrind puts in LD_PRELOAD is not looked at any more. (Nothing is loaded: the
        // child starts no program.)
        setenv("LD_PRELOAD", "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so", 1)
        let preloaded = setUpSeen(backend)
        if preloaded != usual { fail("\(backend): LD_PRELOAD with vgpreload changed the set-up: \(preloaded)") }
        unsetenv("LD_PRELOAD")

        setenv("RINGIO_VALGRIND", "1", 1)
        let switched = setUpSeen(backend)
        switch backend {
        case .epoll:
            if switched != usual { fail("epoll: RINGIO_VALGRIND=1 changed the readiness engine's set-up: \(switched)") }
        case .ioUring:
            // Neither deferred task running nor a registered ring descriptor; the rest as usual.
            let expected = [false, false] + usual.dropFirst(2)
            if switched != expected { fail("io_uring: RINGIO_VALGRIND=1 gave \(switched), expected \(expected)") }
            if usual[0] == false && usual[1] == false {
                printToStandardError("note: the kernel offers neither; the switch shows no difference here")
            }
        }
        // Read at each set-up: without it again, the next ring is as usual.
        unsetenv("RINGIO_VALGRIND")
        let after = setUpSeen(backend)
        if after != usual { fail("\(backend): after RINGIO_VALGRIND was unset: \(after), usual \(usual)") }
    }
}
