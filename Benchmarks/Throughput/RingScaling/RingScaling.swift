//===----------------------------------------------------------------------===//
// RingIO — ring scaling: does a second ring slow the first down? In one process, no client
// outside it.
//
//   swift run -c release --package-path Benchmarks ring-scaling [--pairs 16] [--size 64]
//                                                               [--seconds 2] [--repeats 5]
//
// Each ring serves `--pairs` socket pairs of its own: on every pair an echo channel writes
// back what it reads and a client channel writes `--size` bytes, waits for them to come back,
// and writes again — handlers on the ring, so a ring's work never leaves its thread and two
// rings share nothing on the hot path but the kernel. The runs alternate, 1 ring, 2 rings,
// 1 ring, …, `--repeats` times each; each prints round trips per second per ring and the
// process's CPU time per round trip, then the medians and the ratio that matters:
// per-ring throughput with 2 rings over that with 1 (≥ 0.9 means the second ring costs the
// first less than a tenth), and the CPU per round trip of each — the figure to read on a
// machine with other work, where the throughput ratio is only meaningful with a core per ring
// that nothing else uses.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Dispatch
import RingIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

@main
struct RingScaling: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ring-scaling",
        abstract: "Socket-pair echo on 1 ring and on 2 rings, in one process: per-ring throughput side by side."
    )

    @Option(help: "Socket pairs per ring.")
    var pairs = 16

    @Option(help: "Bytes per round trip.")
    var size = 64

    @Option(help: "Seconds measured per run (after a quarter of that of warm-up).")
    var seconds: Double = 2

    @Option(help: "Runs of each ring count.")
    var repeats = 5

    mutating func run() throws {
        guard self.pairs > 0, self.size > 0, self.seconds > 0, self.repeats > 0 else {
            throw ValidationError("--pairs, --size, --seconds and --repeats must be positive")
        }
        var perRing: [Int: [Double]] = [1: [], 2: []]
        var cpu: [Int: [Double]] = [1: [], 2: []]
        for repetition in 1...self.repeats {
            for rings in [1, 2] {
                let result = try self.measure(rings: rings)
                perRing[rings]!.append(result.roundTripsPerSecondPerRing)
                cpu[rings]!.append(result.cpuMicrosecondsPerRoundTrip)
                print(
                    "run \(repetition), \(rings) ring(s): \(format(result.roundTripsPerSecondPerRing, 0)) round trips/s per ring, "
                        + "\(format(result.cpuMicrosecondsPerRoundTrip, 2)) µs CPU per round trip"
                )
            }
        }
        let one = median(perRing[1]!)
        let two = median(perRing[2]!)
        print("median, 1 ring:  \(format(one, 0)) round trips/s per ring, \(format(median(cpu[1]!), 2)) µs CPU each")
        print("median, 2 rings: \(format(two, 0)) round trips/s per ring, \(format(median(cpu[2]!), 2)) µs CPU each")
        print("2 rings / 1 ring, per ring: \(format(two / one, 2))× (target ≥ 0.9×)")
        // The steadier figure on a machine with other work: what a round trip costs, whoever
        // else holds the cores. Shared state on the hot path would raise it with 2 rings.
        print("CPU per round trip, 2 rings / 1 ring: \(format(median(cpu[2]!) / median(cpu[1]!), 2))×")
    }

    private struct Result {
        var roundTripsPerSecondPerRing: Double
        var cpuMicrosecondsPerRoundTrip: Double
    }

    private func measure(rings count: Int) throws -> Result {
        let group = try RingLoopGroup(count: count)
        defer { group.shutdown() }
        let payload = ByteRope(copying: [UInt8](repeating: 0x2A, count: self.size))
        let loops = try group.rings.map { ring in
            try RingEchoLoop(ring: ring, pairs: self.pairs, payload: payload)
        }
        for loop in loops { loop.start() }
        sleep(seconds: self.seconds / 4)
        let before = loops.map { $0.roundTrips.load(ordering: .relaxed) }
        let cpuBefore = processCPUSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        sleep(seconds: self.seconds)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpuAfter = processCPUSeconds()
        let after = loops.map { $0.roundTrips.load(ordering: .relaxed) }
        for loop in loops { loop.stop() }
        let done = zip(before, after).map { Double($1 - $0) }
        let total = done.reduce(0, +)
        return Result(
            roundTripsPerSecondPerRing: total / elapsed / Double(count),
            cpuMicrosecondsPerRoundTrip: total > 0 ? (cpuAfter - cpuBefore) / total * 1e6 : 0
        )
    }
}

/// One ring's socket pairs. The counter is written by the ring thread alone (relaxed: only a
/// reading at the window's edges needs it), so rings never write a shared cache line.
final class RingEchoLoop: Sendable {
    let roundTrips = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private let ring: RingLoop
    private let channels: [(echo: IOChannel, client: IOChannel)]
    private let descriptors: [CInt]
    private let payload: ByteRope

    init(ring: RingLoop, pairs: Int, payload: ByteRope) throws {
        self.ring = ring
        self.payload = payload
        var channels: [(echo: IOChannel, client: IOChannel)] = []
        var descriptors: [CInt] = []
        for _ in 0..<pairs {
            var ends: [CInt] = [-1, -1]
            guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw Errno(rawValue: errno)
            }
            descriptors += ends
            channels.append(
                (
                    IOChannel(kind: .stream, fileDescriptor: ends[0], queue: ring, ring: ring) { _ in },
                    IOChannel(kind: .stream, fileDescriptor: ends[1], queue: ring, ring: ring) { _ in }
                )
            )
        }
        self.channels = channels
        self.descriptors = descriptors
    }

    deinit {
        for fd in self.descriptors { close(fd) }
    }

    func start() {
        self.running.store(true, ordering: .relaxed)
        let ring = self.ring
        let size = self.payload.count
        for (echo, client) in self.channels {
            echo.read(queue: ring) { _, data, _ in
                if let data, !data.isEmpty { echo.write(data, queue: ring) { _, _, _ in } }
            }
            // Ring-thread state of this pair: the bytes of the round trip under way.
            let pending = RingBound(0, ring: ring)
            client.read(queue: ring) { _, data, _ in
                guard let data, !data.isEmpty else { return }
                pending.value += data.count
                guard pending.value >= size else { return }
                pending.value -= size
                self.roundTrips.wrappingAdd(1, ordering: .relaxed)
                if self.running.load(ordering: .relaxed) {
                    client.write(self.payload, queue: ring) { _, _, _ in }
                }
            }
            client.write(self.payload, queue: ring) { _, _, _ in }
        }
    }

    /// Stops the writes and closes every channel; returns once the ring has taken the closes.
    func stop() {
        self.running.store(false, ordering: .relaxed)
        let closed = DispatchSemaphore(value: 0)
        self.ring.enqueue {
            for (echo, client) in self.channels {
                echo.close(flags: .stop)
                client.close(flags: .stop)
            }
            closed.signal()
        }
        closed.wait()
    }
}

/// This process's user and system CPU time, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func format(_ value: Double, _ decimals: Int) -> String {
    let scale = pow(10.0, Double(decimals))
    let rounded = (value * scale).rounded() / scale
    return decimals == 0 ? String(Int(rounded)) : String(rounded)
}

/// Sleeps the calling thread: this benchmark's main thread, which only waits for the window
/// to pass.
func sleep(seconds: Double) {
    usleep(UInt32(seconds * 1_000_000))
}
