//===----------------------------------------------------------------------===//
// RingIO — the two engines: which one a loop takes and why, and the same work on each.
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

/// The engines this process can run: the readiness engine always, io_uring where the kernel
/// allows it.
let runnableBackends: [RingLoop.Backend] = RingLoop.Backend.allCases.filter {
    $0 == .epoll || _RingIOTesting.ioUringAvailable
}

@Suite("RingLoop: the two engines", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct BackendTests {
    @Test("a loop forced onto an engine runs on it and says so")
    func forced() throws {
        let epoll = try RingLoop(entries: 64, backend: .epoll)
        defer { epoll.shutdown() }
        #expect(epoll.backend == .epoll)
        #expect(epoll.backendReason == "requested by the caller")
        #expect(epoll.setup.submissionEntries == 64)
        #expect(epoll.setup.completionEntries == 256)
        #expect(!epoll.setup.deferredTaskRun && !epoll.setup.cooperativeTaskRun && !epoll.setup.noDrop)
        #expect(!epoll.setup.registeredRingDescriptor)
        if _RingIOTesting.ioUringAvailable {
            let uring = try RingLoop(entries: 64, backend: .ioUring)
            defer { uring.shutdown() }
            #expect(uring.backend == .ioUring)
            #expect(uring.backendReason == "requested by the caller")
        }
        let group = try RingLoopGroup(count: 2, backend: .epoll)
        defer { group.shutdown() }
        #expect(group.rings.allSatisfy { $0.backend == .epoll })
        #expect(group.backend == .epoll)
    }

    @Test(
        "entries outside 1...16384 fail set-up, on either engine, naming the range: no silent switch to epoll",
        arguments: [UInt32(0), 16_385, 32_768, 1 << 20]
    )
    func entriesOutOfRange(entries: UInt32) throws {
        for backend in [nil] + runnableBackends.map(Optional.some) {
            let error = #expect(
                throws: RingSetupError.self,
                "entries \(entries), engine \(backend.map { "\($0)" } ?? "default")"
            ) {
                try RingLoop(entries: entries, backend: backend).shutdown()
            }
            #expect(error?.errno == .invalidArgument)
            #expect(error?.description.contains("1...16384") == true, "\(error.map { "\($0)" } ?? "")")
        }
        #expect(throws: RingSetupError.self) { try RingLoopGroup(count: 1, entries: entries).shutdown() }
    }

    @Test("the largest ring, 16,384 entries (a 65,536-entry completion queue), sets up on each engine")
    func largestRing() throws {
        for backend in runnableBackends {
            let ring = try RingLoop(entries: 16_384, backend: backend)
            defer { ring.shutdown() }
            #expect(ring.backend == backend)
            #expect(ring.setup.submissionEntries == 16_384)
            #expect(ring.setup.completionEntries == 65_536)
            #expect(try _RingIOTesting.perform(.nop, on: ring) == 0)
        }
    }

    @Test("a default loop takes RINGIO_BACKEND's engine, else io_uring where allowed, else epoll")
    func defaultChoice() throws {
        let ring = try RingLoop(entries: 8)
        defer { ring.shutdown() }
        let variable = getenv("RINGIO_BACKEND").map { String(cString: $0) } ?? ""
        switch variable {
        case "epoll":
            #expect(ring.backend == .epoll)
            #expect(ring.backendReason == "RINGIO_BACKEND=epoll")
        case "io_uring":
            #expect(ring.backend == .ioUring)
            #expect(ring.backendReason == "RINGIO_BACKEND=io_uring")
        default:
            if _RingIOTesting.ioUringAvailable {
                #expect(ring.backend == .ioUring)
                #expect(ring.backendReason == "io_uring is available")
            } else {
                // Refused (a seccomp filter, as in a default container; the sysctl): epoll,
                // with io_uring's own refusal as the reason.
                #expect(ring.backend == .epoll)
                #expect(ring.backendReason.contains("io_uring"), "\(ring.backendReason)")
                #expect(
                    ring.backendReason.contains("EPERM") || ring.backendReason.contains("ENOSYS"),
                    "\(ring.backendReason)"
                )
            }
        }
    }

    @Test("RINGIO_BACKEND: each name forces its engine; a name of no engine fails set-up, clearly")
    func environment() async {
        await #expect(processExitsWith: .success) {
            setenv("RINGIO_BACKEND", "epoll", 1)
            let epoll = try RingLoop(entries: 4)
            #expect(epoll.backend == .epoll)
            epoll.shutdown()
            setenv("RINGIO_BACKEND", "kqueue", 1)
            #expect {
                _ = try RingLoop(entries: 4)
            } throws: { error in
                let error = try #require(error as? RingSetupError)
                return error.errno == .invalidArgument && "\(error)".contains("RINGIO_BACKEND=kqueue names no engine")
            }
            // The parameter wins over the variable.
            let forced = try RingLoop(entries: 4, backend: .epoll)
            #expect(forced.backend == .epoll)
            forced.shutdown()
        }
    }

    @Test(
        "the same stream work on either engine: bytes both ways, EOF, a timer, an accept",
        arguments: runnableBackends
    )
    func sameWork(_ backend: RingLoop.Backend) throws {
        let ring = try RingLoop(entries: 64, backend: backend)
        defer { ring.shutdown() }
        let (local, peer) = try makeSocketPair()
        defer { close(peer) }
        let done = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .stream, fileDescriptor: local, queue: ring) { _ in
            close(local)
            done.signal()
        }
        // Bytes in: more than a receive buffer, then EOF.
        let sent = patternBytes(100_000, seed: 7)
        DispatchQueue.global().async {
            var offset = 0
            while offset < sent.count {
                let written = sent[offset...].withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
                guard written > 0 else { return }
                offset += written
            }
            shutdown(peer, Int32(SHUT_WR))
        }
        let received = _Lock<[UInt8]>([])
        let ended = DispatchSemaphore(value: 0)
        channel.read(offset: 0, length: .max, queue: ring) { isDone, data, error in
            if let data { received.withLock { $0 += Array(data) } }
            if isDone {
                #expect(error == nil)
                ended.signal()
            }
        }
        #expect(wait(ended))
        #expect(received.withLock { $0 } == sent)
        // Bytes out.
        let wrote = DispatchSemaphore(value: 0)
        channel.write(offset: 0, data: ByteRope(copying: bytes("pong")), queue: ring) { isDone, _, error in
            if isDone {
                #expect(error == nil)
                wrote.signal()
            }
        }
        #expect(wait(wrote))
        #expect(readExactly(peer, 4) == bytes("pong"))
        channel.close()
        #expect(wait(done))

        // A timer.
        let fired = DispatchSemaphore(value: 0)
        let timer = IOSource.makeTimerSource(queue: ring)
        timer.setEventHandler { fired.signal() }
        timer.schedule(after: .milliseconds(5))
        timer.resume()
        #expect(wait(fired))
        timer.cancel()

        // An accept.
        let accepted = DispatchSemaphore(value: 0)
        let listener = try IOAcceptor(host: "127.0.0.1", port: 0, ring: ring, queue: ring) { event in
            if case .accepted(let connection) = event {
                connection.channel.close()
                accepted.signal()
            }
        }
        defer { listener.close() }
        let clients = try connectClients(1, "127.0.0.1", listener.port)
        #expect(wait(accepted))
        for client in clients { close(client) }
    }

    @Test(
        "datagrams queued before a long read all arrive, each short of a buffer (no edge comes for the rest)",
        arguments: runnableBackends
    )
    func datagrams(_ backend: RingLoop.Backend) throws {
        let ring = try RingLoop(entries: 64, backend: backend)
        defer { ring.shutdown() }
        let (local, peer) = try makeSocketPair(SOCK_DGRAM)
        defer { close(peer) }
        // Queued before the read: one readiness edge for all of them.
        let messages = (0..<5).map { patternBytes(100 + $0, seed: $0) }
        for message in messages {
            #expect(message.withUnsafeBytes { send(peer, $0.baseAddress, $0.count, 0) } == message.count)
        }
        let done = DispatchSemaphore(value: 0)
        let channel = IOChannel(kind: .stream, fileDescriptor: local, queue: ring) { _ in
            close(local)
            done.signal()
        }
        let received = _Lock<[UInt8]>([])
        let expected = messages.flatMap { $0 }
        channel.read(offset: 0, length: .max, queue: ring) { _, data, _ in
            if let data { received.withLock { $0 += Array(data) } }
        }
        #expect(eventually { received.withLock { $0.count } == expected.count })
        #expect(received.withLock { $0 } == expected)
        channel.close(flags: .stop)
        #expect(wait(done))
    }

    @Test(
        "a regular file on either engine: a random-access read and write, through the pool",
        arguments: runnableBackends
    )
    func regularFile(_ backend: RingLoop.Backend) throws {
        let ring = try RingLoop(entries: 64, backend: backend)
        defer { ring.shutdown() }
        let path = "/tmp/ringio-backend-\(getpid())-\(backend)"
        defer { unlink(path) }
        let channel = try IOChannel(
            kind: .randomAccess,
            path: FilePath(path),
            mode: .readWrite,
            options: [.create, .truncate],
            permissions: [.ownerReadWrite],
            queue: ring
        ) { _ in }
        let content = patternBytes(300_000, seed: 3)
        let wrote = DispatchSemaphore(value: 0)
        channel.write(offset: 0, data: ByteRope(copying: content), queue: ring) { isDone, _, error in
            if isDone {
                #expect(error == nil)
                wrote.signal()
            }
        }
        #expect(wait(wrote))
        let read = _Lock<[UInt8]>([])
        let readDone = DispatchSemaphore(value: 0)
        channel.read(offset: 1_000, length: 200_000, queue: ring) { isDone, data, error in
            if let data { read.withLock { $0 += Array(data) } }
            if isDone {
                #expect(error == nil)
                readDone.signal()
            }
        }
        #expect(wait(readDone))
        #expect(read.withLock { $0 } == Array(content[1_000..<201_000]))
        channel.close()
    }
}
