//===----------------------------------------------------------------------===//
// RingIO — the tests that run in a child process each: they change the process (SIGPIPE at its
// default action, the descriptor limit, signals sent to the process) or count its descriptors,
// which no other test may disturb. Each case names its test function, which lives beside the
// tests of its subject.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import RingIOTestSupport
import Testing

/// Channels, listeners and sources, in a child process each, on either kind of queue (CI runs
/// these under the seccomp filter too).
enum InChildProcess: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    case socketPeerGone = "D3 R69 a write to a socket whose peer is gone ends with EPIPE; the process survives"
    case tcpPeerGone = "D3 R66 writes to a TCP peer that closed end with EPIPE or ECONNRESET; the process survives"
    case blockedPipeWriter =
        "D3 a write blocked on a full pipe ends with EPIPE when the reader closes; the process survives"
    case blockedFIFOWriter =
        "D3 a write blocked on a full FIFO ends with EPIPE when the reader closes; the process survives"
    case peerResetMidWrite = "D3 R66 a peer reset mid-write: the rest comes back with ECONNRESET or EPIPE"
    case closedUnderPendingRead =
        "R65 closing the descriptor under a pending read: EBADF for it and for every later operation"
    case noDescriptorLeak =
        "R23 R29 a thousand channels on a thousand pipes and 200 path channels leave no descriptor open"
    case oneShotWriteBrokenPipe =
        "R77 D3 a one-shot write to a pipe with no reader: (remaining, EPIPE); the process survives"
    case listenerAtDescriptorLimit =
        "EMFILE: .failed(EMFILE) is reported, the listener backs off without spinning and accepts again"
    case signalsCounted = "signal: the data of the events adds up to the signals sent"
    case signalsCoalesced = "signal: signals while suspended come as one event with their count"
    case twoSignalSources =
        "signal: two sources on one signal both see it; the previous disposition is back after the last is cancelled"

    var testDescription: String { self.rawValue }

    func run(_ queue: QueueKind) throws {
        switch self {
        case .socketPeerGone: try writeToClosedSocket(queue)
        case .tcpPeerGone: try writeToClosedTCPPeer(queue)
        case .blockedPipeWriter: try writeToPipeWithoutReader(queue, fifo: false)
        case .blockedFIFOWriter: try writeToPipeWithoutReader(queue, fifo: true)
        case .peerResetMidWrite: try resetMidLargeWrite(queue)
        case .closedUnderPendingRead: try closeUnderPendingRead(queue)
        case .noDescriptorLeak: try thousandChannels(queue)
        case .oneShotWriteBrokenPipe: try writeOnceToPipeWithoutReader(queue)
        case .listenerAtDescriptorLimit: try acceptAtDescriptorLimit(queue)
        case .signalsCounted: try signalsAreCounted(queue)
        case .signalsCoalesced: try signalsCoalesceWhileSuspended(queue)
        case .twoSignalSources: try twoSourcesThenDispositionRestored(queue)
        }
    }
}

/// Faults of the engine and of many connections at once, in a child process each.
enum FaultInChildProcess: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    case acceptStorm =
        "an EMFILE storm on accept: 100 connections at the descriptor limit, each accepted once when room comes back"
    case groupShutdown =
        "a group shut down with 10,000 operations in flight: one final call each, no byte lost or doubled"
    case stopRacingCompletions =
        "close(.stop) racing completions on 300 sockets: one final call each, every byte accounted for"
    case noSpace = "ENOSPC: writes to /dev/full hand back all their data, once"
    case descriptorReuse =
        "descriptor numbers reused at once after a stopped channel's cleanup: the new channel sees nothing of the old"
    case peersResetMidRead =
        "peers reset (SO_LINGER 0) mid-read on 100 connections: every byte once, then ECONNRESET once"
    case peersResetMidWrite =
        "peers reset (SO_LINGER 0) mid-write on 20 connections: one final call per write, exactly the tail handed back"
    case peersHalfClose = "half-close on 50 connections: every byte, then EOF; writes afterwards arrive exactly"
    case slowReaders = "slow readers with a tiny SO_RCVBUF under 3 × 1 MiB vectored writes: every byte once, in order"

    var testDescription: String { self.rawValue }

    func run(_ queue: QueueKind) throws {
        switch self {
        case .acceptStorm: try acceptStormAtDescriptorLimit(queue)
        case .groupShutdown: try groupShutdownUnderLoad(queue)
        case .stopRacingCompletions: try RingIOTests.stopRacingCompletions(queue)
        case .noSpace: try writeToFullDevice(queue)
        case .descriptorReuse: try descriptorReuseAfterClose(queue)
        case .peersResetMidRead: try resetMidRead(queue)
        case .peersResetMidWrite: try resetMidWrites(queue)
        case .peersHalfClose: try halfClose(queue)
        case .slowReaders: try RingIOTests.slowReaders(queue)
        }
    }
}

@Suite("Channels, listeners and sources, in a child process each", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct InChildProcessTests {
    @Test("in a child process", arguments: InChildProcess.allCases, QueueKind.allCases)
    func inChildProcess(_ test: InChildProcess, _ queue: QueueKind) async {
        await #expect(processExitsWith: .success) { [test, queue] in try test.run(queue) }
    }
}

@Suite("Faults, in a child process each", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct FaultsInChildProcessTests {
    @Test("in a child process", arguments: FaultInChildProcess.allCases, QueueKind.allCases)
    func inChildProcess(_ test: FaultInChildProcess, _ queue: QueueKind) async {
        await #expect(processExitsWith: .success) { [test, queue] in try test.run(queue) }
    }
}
