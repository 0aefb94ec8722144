//===----------------------------------------------------------------------===//
// RingIO — injected faults on accept, with exact accounting: an EMFILE storm.
//
// In a child process (an exit test): it lowers RLIMIT_NOFILE and takes every descriptor left.
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

/// 100 clients connect while the process has no descriptor left: every accept fails with
/// EMFILE (reported, the listener backs off and keeps serving). Once descriptors are free again,
/// every connection is accepted exactly once — the accepted descriptors' peers are exactly the
/// 100 clients — and each carries its client's bytes. Nothing is left open at the end.
func acceptStormAtDescriptorLimit(_ queueKind: QueueKind) throws {
    let clientsCount = 100
    try expectNoDescriptorLeak {
        // The limit first: room for the clients, and for accepting them once the placeholders
        // are gone.
        try withDescriptorLimit(Int(highestOpenDescriptor()) + 64 + 2 * clientsCount) {
            try acceptStorm(queueKind, clientsCount: clientsCount)
        }
    }
}

private func acceptStorm(_ queueKind: QueueKind, clientsCount: Int) throws {
    let context = try ChannelContext(queueKind)
    defer { context.shutdown() }
    let log = context.listenerLog()
    let listener = try context.listener(host: "127.0.0.1", log: log)
    defer {
        listener.close()
        log.closeAll()
    }
    let port = listener.port
    // The clients' sockets first, while there are descriptors; then take every one left.
    let sockets = (0..<clientsCount).map { _ in clientSocket("127.0.0.1") }
    try #require(sockets.allSatisfy { $0 >= 0 }, "client sockets")
    var placeholders = try takeEveryDescriptorLeft(limit: 2_000)
    defer { for fd in placeholders { close(fd) } }

    // The storm: every connection completes in the kernel, every accept fails.
    var clients: [CInt] = []
    defer { for fd in clients { close(fd) } }
    for fd in sockets { clients.append(try connectClient("127.0.0.1", port, socket: fd).get()) }
    try #require(log.waitForFailure(.tooManyOpenFiles), "no .failed(EMFILE); failures: \(log.failures)")
    context.barrier()
    #expect(log.accepted.isEmpty, "accepted \(log.accepted.count) with no descriptor free")
    #expect(log.failures.allSatisfy { $0 == .tooManyOpenFiles }, "\(Set(log.failures.map(\.rawValue)))")

    // Room again: each client sends its own bytes; every connection is accepted once.
    for fd in placeholders { close(fd) }
    placeholders.removeAll()
    for (index, fd) in clients.enumerated() { writeAll(fd, patternBytes(1_000, seed: index)) }
    let allAccepted = log.waitForAccepted(clientsCount)
    #expect(allAccepted, "accepted \(log.accepted.count) of \(clientsCount)")
    context.barrier()
    let accepted = log.accepted
    #expect(accepted.count == clientsCount, "accepted \(accepted.count) connections for \(clientsCount) clients")
    let clientPorts = clients.map { socketPort($0) }
    let peerPorts = accepted.map { socketPort($0, peer: true) }
    #expect(Set(peerPorts) == Set(clientPorts) && Set(peerPorts).count == clientsCount, "accepted peers")
    var wrong = 0
    for fd in accepted {
        guard let index = clientPorts.firstIndex(of: socketPort(fd, peer: true)) else { continue }
        setReceiveTimeout(fd, seconds: 5)
        if readExactly(fd, 1_000) != patternBytes(1_000, seed: index) { wrong += 1 }
    }
    #expect(wrong == 0, "\(wrong) accepted connections did not carry their client's bytes")
    log.expectWellFormed()
}
