//===----------------------------------------------------------------------===//
// RingIO — ring confinement: ring-only entry points of channels, sources and listeners trap
// off the ring in debug builds (exit tests).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if DEBUG
/// Expects the child's standard error to name the confinement check, so that a trap for
/// another reason does not pass for this one.
private func expectConfinementTrap(_ result: ExitTest.Result?, _ message: String) {
    guard let result else { return }  // the exit expectation itself already failed
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains(message), "stderr: \(standardError.prefix(300))")
}

@Suite(
    "Ring confinement (debug builds)",
    .enabled(if: ringIsAvailable, ringUnavailableReason)
)
struct ConfinementTests {
    @Test("a channel's descriptor entry, touched off its ring, traps")
    func channel() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let ring = try RingLoop(entries: 8)
            let (left, right) = try makeSocketPair()
            let channel = IOChannel(kind: .stream, fileDescriptor: left, queue: ring) { _ in }
            _RingIOTesting.touchChannelOffRing(channel)
            _ = right
        }
        expectConfinementTrap(result, "ring state touched off the ring thread")
    }

    @Test("a source's ring state, touched off its ring, traps")
    func source() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let ring = try RingLoop(entries: 8)
            let source = IOSource.makeUserDataAddSource(queue: ring)
            _RingIOTesting.touchSourceOffRing(source)
        }
        expectConfinementTrap(result, "source state touched off its ring thread")
    }

    @Test("a listener's acceptor, touched off its ring, traps")
    func listener() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let ring = try RingLoop(entries: 8)
            let listener = try IOAcceptor(host: "127.0.0.1", port: 0, ring: ring, queue: ring) { _ in }
            _RingIOTesting.touchListenerOffRing(listener)
        }
        expectConfinementTrap(result, "ring state touched off the ring thread")
    }
}
#endif
