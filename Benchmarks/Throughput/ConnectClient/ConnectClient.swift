//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: RingIO's connect client, the process measured by the
// connect workload.
//
//   connect-client --port P [--host 127.0.0.1] [--concurrency 32] [--size 64]
//                  [--warmup 1] [--duration 5] [--api handlers|async] [--peer-pid PID …]
//
// `--concurrency` connections under way at once, each: connect (IOConnection.connect(to:), by
// address: no name to resolve) → write `--size` bytes → read them back from the echo server →
// close; the end of one starts the next. One ring; `--api handlers`: the connect's, write's
// and read's handlers on the ring (the fast path); `--api async`: a task per loop preferring
// the ring. Prints one LoadReport (JSON): connections per second and this process's CPU time
// per connection in the measured window (ConnectMeasurement).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import RingIO
import ThroughputSupport

/// How connections are made and used.
enum API: String, ExpressibleByArgument, CaseIterable {
    /// Handlers on the ring.
    case handlers
    /// A task per loop, on the ring.
    case async
}

@main
struct ConnectClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect-client",
        abstract: "Connects, exchanges a few bytes with an echo server and closes, in a loop, on RingIO.",
        discussion: """
            Any failed connect, wrong byte or early close: a message on standard error, no JSON, \
            exit status 1.
            """
    )

    @Option(help: "The echo server's numeric address.")
    var host = "127.0.0.1"

    @Option(help: "The echo server's port.")
    var port: UInt16

    @Option(help: "Connections under way at once.")
    var concurrency = 32

    @Option(help: "Bytes written and read back per connection.")
    var size = 64

    @Option(help: "Seconds before the measured window.")
    var warmup: Double = 1

    @Option(help: "Seconds measured.")
    var duration: Double = 5

    @Option(help: "'handlers' (handlers on the ring) or 'async' (a task per loop on the ring).")
    var api: API = .handlers

    @Option(name: .customLong("peer-pid"), help: "The echo server's process, whose CPU time to report (repeatable).")
    var peerPIDs: [Int32] = []

    func validate() throws {
        guard self.port > 0 else { throw ValidationError("--port must not be 0") }
        guard self.concurrency >= 1, self.size >= 1 else {
            throw ValidationError("--concurrency and --size must be at least 1")
        }
        guard self.warmup >= 0, self.duration > 0 else {
            throw ValidationError("--warmup must not be negative, --duration must be positive")
        }
    }

    func run() throws {
        let address = try SocketAddress(ipAddress: self.host, port: self.port)
        let group = try RingLoopGroup(count: 1)
        let ring = group.rings[0]
        let measurement = ConnectMeasurement(loops: self.concurrency)
        for index in 0..<self.concurrency {
            // Each loop sends its own bytes: a server that crossed two connections is caught.
            let message = (0..<self.size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7 &+ 1) }
            let exchange = Exchange(address: address, ring: ring, message: message, measurement: measurement)
            switch self.api {
            case .handlers: ring.enqueue { exchange.next() }
            case .async:
                Task(executorPreference: ring.taskExecutor) { await exchange.loop() }
            }
        }
        let result = measurement.run(
            warmup: self.warmup,
            duration: self.duration,
            concurrency: self.concurrency,
            size: self.size,
            peers: self.peerPIDs
        )
        group.shutdown()
        switch result {
        case .success(let report):
            print(report.jsonLine)
        case .failure(let failure):
            printToStandardError("connect-client: \(failure)")
            throw ExitCode.failure
        }
    }
}

/// One connect loop: connect, write the message, read it back, check it, close; again until
/// the measurement stops. Its state is touched on the ring only.
final class Exchange: Sendable {
    let address: SocketAddress
    let ring: RingLoop
    let message: ByteRope
    let expected: [UInt8]
    let measurement: ConnectMeasurement
    /// What the current connection has read back.
    private let received: RingBound<ByteRope>

    init(address: SocketAddress, ring: RingLoop, message: [UInt8], measurement: ConnectMeasurement) {
        self.address = address
        self.ring = ring
        self.message = ByteRope(copying: message)
        self.expected = message
        self.measurement = measurement
        self.received = RingBound(ByteRope(), ring: ring)
    }

    // MARK: Handlers

    /// The next connection, unless the measurement is over. On the ring.
    func next() {
        guard self.measurement.goesOn else { return self.measurement.loopEnded() }
        let started = monotonicNanoseconds()
        IOConnection.connect(to: self.address, ring: self.ring, queue: self.ring) { result in
            switch result {
            case .success(let connection):
                self.exchange(on: connection.channel, started: started)
            case .failure(let error):
                self.measurement.fail("connect to \(self.address): \(error)")
                self.measurement.loopEnded()
            }
        }
    }

    private func exchange(on channel: IOChannel, started: UInt64) {
        self.received.value = ByteRope()
        channel.write(offset: 0, data: self.message, queue: self.ring) { _, _, _ in
            // A failed write shows as a failed or short read below.
        }
        channel.read(offset: 0, length: self.expected.count, queue: self.ring) { done, data, error in
            if let data, !data.isEmpty { self.received.value.append(data) }
            guard done else { return }
            channel.close()
            if let failure = self.check(self.received.value, error) {
                self.measurement.fail(failure)
                return self.measurement.loopEnded()
            }
            self.measurement.completed(startedAt: started)
            self.next()
        }
    }

    // MARK: Async

    /// The loop as a task on the ring.
    func loop() async {
        while self.measurement.goesOn {
            let started = monotonicNanoseconds()
            let connection: IOConnection
            do {
                connection = try await IOConnection.connect(to: self.address, ring: self.ring)
            } catch {
                self.measurement.fail("connect to \(self.address): \(error)")
                break
            }
            let channel = connection.channel
            var data = ByteRope()
            var failed: Errno?
            do throws(Errno) {
                try await channel.write(self.message)
                data = try await channel.read(length: self.expected.count)
            } catch {
                failed = error
            }
            channel.close()
            if let failure = self.check(data, failed) {
                self.measurement.fail(failure)
                break
            }
            self.measurement.completed(startedAt: started)
        }
        self.measurement.loopEnded()
    }

    /// Why `data` (read with `error`) is not the message echoed back, or `nil`.
    private func check(_ data: ByteRope, _ error: Errno?) -> String? {
        if let error { return "the exchange with \(self.address) failed: \(error)" }
        guard data.count == self.expected.count else {
            return "\(data.count) bytes came back of \(self.expected.count) (the server closed early)"
        }
        guard data.elementsEqual(self.expected) else { return "the echo differs from the bytes sent" }
        return nil
    }
}
