//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what a run produces (also its JSON, `throughput.json`).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ThroughputSupport

/// One measured run of one server on one workload.
struct Sample: Codable, Sendable {
    var repetition: Int
    var operationsPerSecond: Double
    var megabytesPerSecond: Double
    /// Server CPU per operation in the workload's CPU unit (``Workload/cpuUnit``), from /proc.
    var serverCPU: Double?
    var latency: LatencySummary?
    /// The load generator's CPU over the window's length: near 1, the client limited the rate
    /// (the server CPU per operation is still valid).
    var clientBusy: Double?
}

/// Median, min and max of a figure over the repetitions.
struct Spread: Codable, Sendable {
    var median: Double
    var min: Double
    var max: Double

    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        self.median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        self.min = sorted.first!
        self.max = sorted.last!
    }
}

struct ServerResult: Codable, Sendable {
    var key: String
    var name: String
    var samples: [Sample] = []
    var failures: [String] = []

    var primary: (PrimaryFigure) -> Spread? {
        { figure in
            Spread(self.samples.map { figure == .operations ? $0.operationsPerSecond : $0.megabytesPerSecond })
        }
    }
    var serverCPU: Spread? { Spread(self.samples.compactMap(\.serverCPU)) }
    /// The load generator's core was busy (≥ 95%, median over the repetitions) while it drove
    /// this server: the rate is then the client's limit as much as the server's.
    var isClientBound: Bool {
        Spread(self.samples.compactMap(\.clientBusy)).map { $0.median >= 0.95 } ?? false
    }
    var latency: LatencySummary? {
        let all = self.samples.compactMap(\.latency)
        guard let p50 = Spread(all.map(\.p50)), let p99 = Spread(all.map(\.p99)), let max = Spread(all.map(\.max))
        else { return nil }
        return LatencySummary(
            p50: p50.median,
            p99: p99.median,
            p999: Spread(all.compactMap(\.p999))?.median,
            max: max.median
        )
    }

    private enum CodingKeys: String, CodingKey {
        case key, name, samples, failures
    }
}

struct WorkloadResult: Codable, Sendable {
    var key: String
    var title: String
    var group: WorkloadGroup
    var primary: PrimaryFigure
    var operation: String
    var cpuUnit: String
    var servers: [ServerResult]

    func server(_ key: String) -> ServerResult? { self.servers.first { $0.key == key } }
}

/// Memory of one server: its peak over a group of workloads, and per idle connection.
struct MemoryResult: Codable, Sendable {
    var key: String
    var name: String
    var group: WorkloadGroup
    var peakResidentBytes: Int?
    var idleConnections: Int?
    var idleBytesPerConnection: Double?
    var failure: String?
}

struct Machine: Codable, Sendable {
    var cpu: String
    var cpus: Int
    var kernel: String
    var memoryGiB: Double
    var serverCPU: Int
    var clientCPU: Int
}

struct RunReport: Codable, Sendable {
    var command: String
    var date: String
    var machine: Machine
    var timing: Timing
    var workloads: [WorkloadResult]
    var memory: [MemoryResult]
    var notes: [String]
    /// The engines RingIO ran on (`--backend`); `nil` in reports from before the option (io_uring).
    var backends: [Backend]? = nil
}

extension Workload {
    /// The unit of ``Sample/serverCPU``.
    var cpuUnit: String { self.group == .file ? "ms/GB" : "µs/\(self.operation)" }
}
