//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: kernel TLS where the kernel has it, user space where it has not,
// and file sends either way.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import RingTLS
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether this kernel takes TLS transmit keys (the probe's answer), and why not.
let kernelTLSAvailable = !TLSOffload.kernelAvailability.transmitCiphers.isEmpty
let kernelTLSUnavailableReason: Comment = "no kernel TLS here: \(TLSOffload.kernelAvailability.reason)"

/// A server that sends, on each connection, a head, then `length` bytes of `file` from
/// `offset`, then a tail, and closes. Records each connection's offload and its send's end.
final class TLSFileServer: Sendable {
    let listener: IOAcceptor
    let offloads = Recorder<TLSOffload>()
    let sendEnds = Recorder<(remaining: Int, error: TLSError?)>()

    var port: UInt16 { self.listener.port }

    init(group: RingLoopGroup, context: TLSContext, file: CInt, offset: Int64, length: Int) throws {
        let (offloads, sendEnds) = (self.offloads, self.sendEnds)
        self.listener = try IOAcceptor(host: "127.0.0.1", port: 0, group: group, queue: nil) { event in
            guard case .accepted(let connection) = event,
                let tls = try? TLSStream(accepting: connection, context: context)
            else { return }
            let ring = connection.ring
            tls.handshake(queue: ring) { outcome in
                guard case .success = outcome else { return }
                offloads.append(tls.offload)
                tls.write(ByteRope(copying: bytes("head\n")), queue: ring) { _, _, _ in }
                tls.write(contentsOf: file, offset: offset, length: length, queue: ring) {
                    done,
                    remaining,
                    error in
                    if done { sendEnds.append((remaining, error)) }
                }
                tls.write(ByteRope(copying: bytes("tail\n")), queue: ring) { _, _, _ in }
                tls.close()
            }
        }
    }

    deinit {
        self.listener.close()
    }
}

@Suite("TLSStream: kernel TLS and file sends", .enabled(if: ringIsAvailable, ringUnavailableReason), .opensslAvailable)
struct TLSOffloadTests {
    @Test("the kernel TLS probe agrees with the kernel's own answer to TCP_ULP \"tls\"")
    func probe() throws {
        let availability = TLSOffload.kernelAvailability
        print("RingTLS kernel TLS: \(availability)")
        let (listener, port) = try listeningSocket()
        defer { close(listener) }
        let client = try connectLoopback(port: port)
        defer { close(client) }
        let name = Array("tls".utf8)
        let attached = name.withUnsafeBytes {
            setsockopt(client, CInt(IPPROTO_TCP), CInt(TCP_ULP), $0.baseAddress, socklen_t($0.count))
        }
        let error = attached == 0 ? nil : Errno(rawValue: errno)
        #expect(availability.hasTLSModule == (error == nil), "\(availability) vs \(String(describing: error))")
        if error == .noSuchFileOrDirectory {
            #expect(availability.reason.contains("ENOENT"))
            #expect(availability.transmitCiphers.isEmpty)
        }
    }

    @Test("asked for kernel TLS, a stream uses it where the kernel has it, else says why not")
    func fallback() throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let context = try pki.serverContext(configure: { $0.kernelTLS = .whenAvailable })
        let server = try TLSEchoServer(group: group, context: context)
        let stream = try tlsClient(
            port: server.port,
            ring: ring,
            context: try pki.clientContext(configure: { $0.kernelTLS = .whenAvailable })
        )
        let payload = pattern(100_000)
        let exchange = EchoExchange(stream: stream, payload: ByteRope(copying: payload), queue: ring)
        _ = try #require(exchange.handshake.wait()).get()
        #expect(exchange.readEnd.wait() == .some(nil))
        expectSameBytes(exchange.received.all, payload)
        let offload = stream.offload
        print("RingTLS client stream: \(offload)")
        #expect(offload.receive == .userSpace)
        if kernelTLSAvailable {
            #expect(offload.isKernelTLS, "\(offload)")
        } else {
            #expect(!offload.isKernelTLS)
            #expect(offload.reason == TLSOffload.kernelAvailability.reason, "\(offload)")
        }
        // Not asked for: user space, and the reason says so.
        #expect(try pki.serverContext().configuration.kernelTLS == .disabled)
    }

    @Test(
        "file sends in user space: the range arrives between the writes around it; a short file ends with ENODATA"
    )
    func fileSendUserSpace() throws {
        try self.fileSends(kernelTLS: .disabled, expectKernel: false)
    }

    @Test(
        "with kernel TLS: writes and spliced file sends reach a user-space peer intact (TLS 1.3 and 1.2)",
        .enabled(if: kernelTLSAvailable, kernelTLSUnavailableReason)
    )
    func kernelTLS() throws {
        try self.fileSends(kernelTLS: .whenAvailable, expectKernel: true)
        try self.fileSends(kernelTLS: .whenAvailable, expectKernel: true, maximumVersion: .tls1_2)
    }

    private func fileSends(
        kernelTLS: TLSConfiguration.KernelTLS,
        expectKernel: Bool,
        maximumVersion: TLSConfiguration.Version? = nil
    ) throws {
        let pki = TestPKI.shared
        let group = try RingLoopGroup(count: 1)
        defer { group.shutdown() }
        let ring = group.rings[0]
        let contents = pattern(700_000, seed: 11)
        let path = "\(pki.directory)/file-\(UInt64.random(in: 0...UInt64.max))"
        #expect(writeFile(path, contents))
        let file = open(path, O_RDONLY | O_CLOEXEC)
        try #require(file >= 0)
        defer {
            close(file)
            unlink(path)
        }
        let context = try pki.serverContext(configure: {
            $0.kernelTLS = kernelTLS
            $0.cipherSuites = "TLS_AES_128_GCM_SHA256"
            $0.maximumVersion = maximumVersion
        })
        for (offset, length, short) in [(0, contents.count, false), (12_345, 300_001, false), (600_000, 200_000, true)]
        {
            let server = try TLSFileServer(
                group: group,
                context: context,
                file: file,
                offset: Int64(offset),
                length: length
            )
            let stream = try tlsClient(port: server.port, ring: ring, context: try pki.clientContext())
            let received = Collected()
            let end = Pending<TLSError?>()
            stream.read(queue: ring) { done, data, error in
                if let data { received.append(data) }
                if done { end.set(error) }
            }
            #expect(end.wait(seconds: 30) == .some(nil))
            let sent = Array(contents[offset..<min(contents.count, offset + length)])
            expectSameBytes(received.all, bytes("head\n") + sent + bytes("tail\n"), "\(offset)+\(length)")
            #expect(server.sendEnds.wait(for: 1))
            let (remaining, error) = try #require(server.sendEnds.all.first)
            if short {
                #expect(error?.errno == .noData, "\(String(describing: error))")
                #expect(remaining == length - sent.count)
            } else {
                #expect(error == nil && remaining == 0, "\(String(describing: error))")
            }
            #expect(server.offloads.all.first?.isKernelTLS == expectKernel, "\(server.offloads.all)")
            stream.close()
        }
    }
}
