//===----------------------------------------------------------------------===//
// RingIO — the POSIX layer: checked results, errors as Errno, close never retried or doubled.
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

@Suite("The POSIX layer")
struct POSIXTests {
    @Test("a socket option that cannot be set is an error, not ignored; one that can reads back")
    func socketOptions() throws {
        let (pipeReader, pipeWriter) = try makePipe()
        defer { closeAll(pipeReader, pipeWriter) }
        #expect(throws: Errno.notSocket) {
            try _RingIOTesting.setSocketOption(pipeReader, level: SOL_SOCKET, name: SO_KEEPALIVE, to: 1)
        }
        #expect(throws: Errno.notSocket) {
            _ = try _RingIOTesting.socketOption(pipeReader, level: SOL_SOCKET, name: SO_KEEPALIVE)
        }
        let (listener, _) = try makeListener()
        defer { close(listener) }
        // TCP options on a TCP socket; an option no protocol has is refused.
        try _RingIOTesting.setSocketOption(listener, level: SOL_SOCKET, name: SO_KEEPALIVE, to: 1)
        #expect(try _RingIOTesting.socketOption(listener, level: SOL_SOCKET, name: SO_KEEPALIVE) != 0)
        try _RingIOTesting.setSocketOption(listener, level: CInt(IPPROTO_TCP), name: TCP_NODELAY, to: 1)
        #expect(try _RingIOTesting.socketOption(listener, level: CInt(IPPROTO_TCP), name: TCP_NODELAY) != 0)
        #expect(throws: Errno.protocolNotAvailable) {
            try _RingIOTesting.setSocketOption(listener, level: SOL_SOCKET, name: 0x7fff, to: 1)
        }
    }

    @Test("seek and stat: positions and sizes, ESPIPE and ENOENT as errors")
    func filesAndPositions() throws {
        let file = try makeFile(Array(repeating: 9, count: 100))
        #expect(try _RingIOTesting.seek(file.fd, to: 40, from: SEEK_SET) == 40)
        #expect(try _RingIOTesting.seek(file.fd, to: 0, from: SEEK_CUR) == 40)
        #expect(try _RingIOTesting.fileSize(atPath: file.path, followingLinks: true) == 100)
        let link = file.path + "-link"
        try #require(symlink(file.path, link) == 0)
        defer { unlink(link) }
        #expect(try _RingIOTesting.fileSize(atPath: link, followingLinks: true) == 100)
        #expect(try _RingIOTesting.fileSize(atPath: link, followingLinks: false) == Int64(file.path.utf8.count))
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try _RingIOTesting.fileSize(atPath: file.path + "-missing", followingLinks: true)
        }
        let (reader, writer) = try makePipe()
        defer { closeAll(reader, writer) }
        #expect(throws: Errno.illegalSeek) { _ = try _RingIOTesting.seek(reader, to: 0, from: SEEK_CUR) }
    }

    @Test("close releases the descriptor")
    func closeReleases() throws {
        let (reader, writer) = try makePipe()
        defer { close(writer) }
        _RingIOTesting.closeDescriptor(reader)
        #expect(fcntl(reader, F_GETFD) == -1 && errno == EBADF)
    }

    @Test("closing a descriptor that is not open (a double close) traps")
    func doubleClose() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _RingIOTesting.closeDescriptor(descriptorThatIsNeverOpen())
        }
        if let result {
            let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(standardError.contains("of a descriptor that is not open"), "stderr: \(standardError.prefix(300))")
        }
    }
}

@Suite("The POSIX layer: listener set-up", .enabled(if: ringIsAvailable, ringUnavailableReason))
struct POSIXListenerTests {
    @Test("a listener whose set-up fails throws and leaves no socket open (child process)")
    func failedSetUpClosesItsSocket() async {
        await #expect(processExitsWith: .success) {
            let ring = try RingLoop(entries: 16)
            defer { ring.shutdown() }
            let (taken, address) = try makeListener()
            defer { close(taken) }
            let port = UInt16(bigEndian: address.sin_port)
            let attempt: () -> Void = {
                #expect(throws: Errno.addressInUse) {
                    _ = try IOAcceptor(host: "127.0.0.1", port: port, ring: ring, queue: ring) { _ in }
                }
            }
            // One attempt first, uncounted, after the usual warm-up: whatever the process sets
            // up once (libdispatch's timerfd among them) is there before counting.
            let warmUp: () throws -> Void = {
                try warmUpDescriptors()
                attempt()
            }
            let attempts: () -> Void = {
                for _ in 0..<50 { attempt() }
            }
            try expectNoDescriptorLeak(warmUp: warmUp, attempts)
        }
    }
}
