//===----------------------------------------------------------------------===//
// RingIO — benchmark server: the echo server's counters (--stats), reported on SIGUSR1.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import RingTLS
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the server did, counted when `--stats` is on (the server holds no instance otherwise,
/// so the counting costs nothing then): connections accepted and closed, and the channel
/// operations started and finished — a read or a write is finished when its final handler ran
/// (`done`), or, with async/await, when its await returned or threw.
///
/// On SIGUSR1 (a signal source on the first ring) the server prints them as one JSON line:
///
///     {"accepted":12,"closed":12,"open":0,"readsStarted":12,"readsFinished":12,...}
///
/// `open` is the listeners' own count of connections not yet closed. When the server is quiet
/// (every client gone, every connection closed), `accepted == closed`, `open == 0`, and every
/// operation started has finished: a handler that was never called, or a connection that was
/// never closed, shows as a difference. `Tools/soak.py` checks this.
///
/// With TLS (`--tls-certificate`) three more: `tlsKernel` and `tlsUserSpace`, the
/// connections whose handshake finished with the output encrypted by the kernel (kTLS) or by
/// OpenSSL in user space (the fallback where the kernel has no TLS ULP), and `tlsFailed`, the
/// connections whose handshake failed.
///
/// Relaxed atomics: each counter is read on its own, and only a quiet server's figures are
/// compared. The http-server has the same type (Benchmarks/Servers/HTTPServer/ServerStats.swift).
final class ServerStats: Sendable {
    private let accepted = Atomic<Int>(0)
    private let closed = Atomic<Int>(0)
    private let readsStarted = Atomic<Int>(0)
    private let readsFinished = Atomic<Int>(0)
    private let writesStarted = Atomic<Int>(0)
    private let writesFinished = Atomic<Int>(0)
    /// TLS: the TLS counters are in the report.
    private let tls: Bool
    private let tlsKernel = Atomic<Int>(0)
    private let tlsUserSpace = Atomic<Int>(0)
    private let tlsFailures = Atomic<Int>(0)

    init(tls: Bool) {
        self.tls = tls
    }

    func connectionAccepted() { self.accepted.add(1, ordering: .relaxed) }
    func connectionClosed() { self.closed.add(1, ordering: .relaxed) }
    func readStarted() { self.readsStarted.add(1, ordering: .relaxed) }
    func readFinished() { self.readsFinished.add(1, ordering: .relaxed) }
    func writeStarted() { self.writesStarted.add(1, ordering: .relaxed) }
    func writeFinished() { self.writesFinished.add(1, ordering: .relaxed) }
    func tlsFailed() { self.tlsFailures.add(1, ordering: .relaxed) }
    /// A handshake finished; `offload` says who encrypts the connection's output.
    func tlsEstablished(offload: TLSOffload) {
        if offload.isKernelTLS {
            self.tlsKernel.add(1, ordering: .relaxed)
        } else {
            self.tlsUserSpace.add(1, ordering: .relaxed)
        }
    }

    /// The counters as one line of JSON; `open` is the listeners' count of open connections.
    func json(open: Int) -> String {
        var fields: [(String, Int)] = [
            ("accepted", self.accepted.load(ordering: .relaxed)),
            ("closed", self.closed.load(ordering: .relaxed)),
            ("open", open),
            ("readsStarted", self.readsStarted.load(ordering: .relaxed)),
            ("readsFinished", self.readsFinished.load(ordering: .relaxed)),
            ("writesStarted", self.writesStarted.load(ordering: .relaxed)),
            ("writesFinished", self.writesFinished.load(ordering: .relaxed)),
        ]
        if self.tls {
            fields += [
                ("tlsKernel", self.tlsKernel.load(ordering: .relaxed)),
                ("tlsUserSpace", self.tlsUserSpace.load(ordering: .relaxed)),
                ("tlsFailed", self.tlsFailures.load(ordering: .relaxed)),
            ]
        }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A SIGUSR1 source on `ring` that prints ``json(open:)`` (with `open()`, read then);
    /// resumed. Cancel it when the server stops.
    ///
    /// Before printing, the allocator returns its free pages to the system (`malloc_trim`), so
    /// that the resident memory read right after the line counts the memory in use rather than
    /// the allocator's high-water mark: a soak compares it over time.
    func reportOnSIGUSR1(on ring: RingLoop, open: @escaping @Sendable () -> Int) -> IOSourceSignal {
        let source = IOSource.makeSignalSource(signal: SIGUSR1, queue: ring)
        source.setEventHandler {
            _ = Self.mallocTrim?(0)
            print(self.json(open: open()))
            fflush(nil)  // at once, also into a pipe: whoever sent the signal reads the line
        }
        source.resume()
        return source
    }

    /// glibc's `malloc_trim`, looked up at run time (the Glibc module does not export it);
    /// `nil` with another C library.
    private static let mallocTrim: (@convention(c) (Int) -> CInt)? = {
        // dlsym(RTLD_DEFAULT, …): RTLD_DEFAULT is the null handle.
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> CInt).self)
    }()
}
