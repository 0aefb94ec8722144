//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the Markdown table, the targets, the JSON.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation
import ThroughputSupport

enum Format {
    /// `123`, `12.3k`, `1.23M`: three significant digits.
    static func grouped(_ value: Double) -> String {
        if value >= 1e6 { return self.figure(value / 1e6) + "M" }
        if value >= 1e4 { return self.figure(value / 1e3) + "k" }
        return self.figure(value)
    }

    /// Three significant digits (at least the units): `0.0123`, `1.23`, `12.3`, `123`, `1234`.
    static func figure(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        let magnitude = abs(value)
        let decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : magnitude >= 0.1 ? 3 : 4
        return String(format: "%.\(decimals)f", value)
    }

    static func ratio(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        return String(format: value >= 10 ? "%.1f×" : "%.2f×", value)
    }

    /// `512 B`, `1.9 KiB`, `23.4 MiB`.
    static func bytes(_ value: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB"]
        var value = value
        var unit = 0
        while abs(value) >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int(value.rounded())) B" : "\(self.figure(value)) \(units[unit])"
    }

    static func spread(_ spread: Spread, _ format: (Double) -> String) -> String {
        spread.min == spread.max
            ? format(spread.median) : "\(format(spread.median)) (\(format(spread.min))–\(format(spread.max)))"
    }
}

/// A performance target (Benchmarks/README.md lists them), checked against a run.
struct TargetCheck: Codable {
    var target: String
    var measured: String
    /// Judged on the ratio of the medians. `nil`: not measured in this run (a peer missing, a
    /// failure).
    var met: Bool?
    /// In how many repetitions the ratio of that repetition's two runs (run side by side)
    /// meets the target, of ``repetitions``: where they disagree, the target is inside the
    /// machine's noise. `nil` for a figure that is not a ratio, or a single repetition.
    var metInRepetitions: Int? = nil
    var repetitions: Int? = nil
    /// Short of the target with the load generator saturated on the upper server's runs
    /// (see ``Measured/upperClientBound``): still a miss, but not the server's alone.
    var clientBound: Bool? = nil
}

/// A target's figure: the ratio of two servers' medians, and the same ratio repetition by
/// repetition (each repetition runs the servers one after the other, so its pair shares the
/// machine's state of the moment).
struct Measured {
    var value: Double
    var perRepetition: [Double]
    /// A throughput ratio whose upper server (RingIO's, in "RingIO ≥ 1.2× nginx's
    /// requests/s") ran into the load generator's limit: its core was busy (≥ 95%, median), so
    /// that rate is the client's ceiling as much as the server's — how much work the client
    /// spends per response, which the server's way of answering also shapes.
    var upperClientBound = false
}

extension RunReport {
    /// The figure `key` (a server) reached on `workload` over `base`'s (RingIO's, with completion
    /// handlers, unless said), medians: throughput (`cpu == false`) or server CPU per operation.
    func ratio(_ workload: String, _ key: String, over base: String = "ringio", cpu: Bool) -> Double? {
        guard let result = self.workloads.first(where: { $0.key == workload }),
            let reference = result.server(base), let other = result.server(key)
        else { return nil }
        let (a, b) =
            cpu
            ? (other.serverCPU, reference.serverCPU)
            : (other.primary(result.primary), reference.primary(result.primary))
        guard let a, let b, b.median > 0 else { return nil }
        return a.median / b.median
    }

    /// ``ratio(_:_:over:cpu:)`` with the same ratio per repetition (the runs of one repetition
    /// paired); `inverted`: RingIO's figure over the other's.
    func measured(
        _ workload: String,
        _ key: String,
        over base: String = "ringio",
        cpu: Bool,
        inverted: Bool = false
    ) -> Measured? {
        guard let value = self.ratio(workload, key, over: base, cpu: cpu),
            let result = self.workloads.first(where: { $0.key == workload }),
            let reference = result.server(base), let other = result.server(key)
        else { return nil }
        func figure(_ sample: Sample) -> Double? {
            if cpu { return sample.serverCPU }
            return result.primary == .operations ? sample.operationsPerSecond : sample.megabytesPerSecond
        }
        var pairs: [Double] = []
        for sample in other.samples {
            guard let partner = reference.samples.first(where: { $0.repetition == sample.repetition }),
                let a = figure(sample), let b = figure(partner), a > 0, b > 0
            else { continue }
            pairs.append(inverted ? b / a : a / b)
        }
        let upper = inverted ? reference : other
        return Measured(
            value: inverted ? 1 / value : value,
            perRepetition: pairs,
            upperClientBound: !cpu && upper.isClientBound
        )
    }

    /// The server the `× RingIO` columns and the chart divide by on `workload`: RingIO on
    /// io_uring, or on the readiness engine in a run without io_uring (`--backend epoll`).
    func base(_ workload: WorkloadResult) -> String {
        let epoll = "ringio" + Backend.epoll.keySuffix
        return workload.server("ringio") == nil && workload.server(epoll) != nil ? epoll : "ringio"
    }

    /// Whether RingIO ran on `backend` in this run (reports from before `--backend`: io_uring).
    func ran(_ backend: Backend) -> Bool { (self.backends ?? [.ioUring]).contains(backend) }

    var targets: [TargetCheck] {
        var checks: [TargetCheck] = []
        func add(
            _ target: String,
            _ measured: Measured?,
            _ describe: (Double) -> String,
            _ met: (Double) -> Bool,
            unmeasured: String = "not measured"
        ) {
            guard let measured else {
                checks.append(TargetCheck(target: target, measured: unmeasured, met: nil))
                return
            }
            var text = describe(measured.value)
            let pairs = measured.perRepetition
            var metIn: Int?
            if pairs.count > 1, let spread = Spread(pairs) {
                let count = pairs.filter(met).count
                metIn = count
                text +=
                    "; per repetition \(Format.ratio(spread.min))–\(Format.ratio(spread.max)), "
                    + "met in \(count) of \(pairs.count)"
            }
            let verdict = met(measured.value)
            let clientBound = !verdict && measured.upperClientBound
            if clientBound {
                // Reported as measured, and said: the load generator set the rate.
                text += " (the load generator's core was saturated: its limit as much as the server's)"
            }
            checks.append(
                TargetCheck(
                    target: target,
                    measured: text,
                    met: verdict,
                    metInRepetitions: metIn,
                    repetitions: pairs.count > 1 ? pairs.count : nil,
                    clientBound: clientBound ? true : nil
                )
            )
        }
        let perRoundTrip = "server CPU per round trip"
        add(
            "Echo 64 B: RingIO's \(perRoundTrip) ≤ 1.0× the C liburing server's",
            self.measured("echo-64B", "uring", cpu: true, inverted: true),
            { "RingIO uses \(Format.ratio($0)) the C server's CPU" },
            { $0 <= 1.0 }
        )
        add(
            "Echo 64 B: SwiftNIO uses ≥ 1.5× RingIO's \(perRoundTrip)",
            self.measured("echo-64B", "nio", cpu: true),
            { "SwiftNIO uses \(Format.ratio($0)) RingIO's CPU" },
            { $0 >= 1.5 }
        )
        add(
            "Echo 64 B: Dispatch uses ≥ 10× RingIO's \(perRoundTrip)",
            self.measured("echo-64B", "dispatch", cpu: true),
            { "Dispatch uses \(Format.ratio($0)) RingIO's CPU" },
            { $0 >= 10 }
        )
        add(
            "Echo 64 B with a 10 ms strict interval: \(perRoundTrip) ≤ 1.1× the same echo's without one",
            self.measured("echo-64B-interval", "ringio-interval", cpu: true),
            { "the interval costs \(Format.ratio($0)) the CPU" },
            { $0 <= 1.1 }
        )
        for (workload, label, limit) in [
            ("echo-64KiB", "Echo 64 KiB ping-pong", 1.05), ("echo-stream", "Echo streaming", 1.1),
        ] {
            add(
                "\(label): RingIO's server CPU per operation ≤ \(Format.ratio(limit)) the C liburing server's",
                self.measured(workload, "uring", cpu: true, inverted: true),
                { "RingIO uses \(Format.ratio($0)) the C server's CPU" },
                { $0 <= limit }
            )
        }
        // async/await on the rings (--api async) against the handler servers and the async peers.
        for (workload, label) in [("echo-64B", "Echo 64 B"), ("echo-64KiB", "Echo 64 KiB ping-pong")] {
            add(
                "\(label): RingIO async's \(perRoundTrip) ≤ 1.2× RingIO's with completion handlers",
                self.measured(workload, "ringio-async", cpu: true),
                { "RingIO async uses \(Format.ratio($0)) the handler server's CPU" },
                { $0 <= 1.2 }
            )
        }
        add(
            "Echo 64 B: RingIO async's \(perRoundTrip) ≤ 0.7× SwiftNIO async's (NIOAsyncChannel)",
            self.measured("echo-64B", "ringio-async", over: "nio-async", cpu: true),
            { "RingIO async uses \(Format.ratio($0)) SwiftNIO async's CPU" },
            { $0 <= 0.7 }
        )
        for (workload, label) in [("http-hello", "loadgen"), ("http-hello-wrk", "wrk")] {
            add(
                "HTTP hello, keep-alive (\(label)): RingIO ≥ 1.2× nginx's requests/s (one worker)",
                self.measured(workload, "nginx", cpu: false, inverted: true),
                { "RingIO serves \(Format.ratio($0)) nginx's requests/s" },
                { $0 >= 1.2 }
            )
            add(
                "HTTP hello, keep-alive (\(label)): RingIO's server CPU per request ≤ 0.85× nginx's",
                self.measured(workload, "nginx", cpu: true, inverted: true),
                { "RingIO uses \(Format.ratio($0)) nginx's CPU" },
                { $0 <= 0.85 }
            )
            add(
                "HTTP hello, keep-alive (\(label)): RingIO async ≥ 3× Hummingbird's requests/s",
                self.measured(workload, "ringio-async", over: "hummingbird", cpu: false),
                { "RingIO async serves \(Format.ratio($0)) Hummingbird's requests/s" },
                { $0 >= 3 }
            )
            add(
                "HTTP hello, keep-alive (\(label)): RingIO async ≥ 0.9× nginx's requests/s (one worker)",
                self.measured(workload, "ringio-async", over: "nginx", cpu: false),
                { "RingIO async serves \(Format.ratio($0)) nginx's requests/s" },
                { $0 >= 0.9 }
            )
        }
        add(
            "HTTP hello, pipelined ×16: RingIO ≥ 3× nginx's requests/s",
            self.measured("http-pipelined", "nginx", cpu: false, inverted: true),
            { "RingIO serves \(Format.ratio($0)) nginx's requests/s" },
            { $0 >= 3 }
        )
        // The readiness engine beside SwiftNIO, both on epoll.
        let epoll = "ringio" + Backend.epoll.keySuffix
        let notRun = self.ran(.epoll) ? "not measured" : "not run (`--backend both` runs it)"
        add(
            "Echo 64 B: RingIO (epoll)'s \(perRoundTrip) ≤ 1.0× SwiftNIO's (both on epoll)",
            self.measured("echo-64B", epoll, over: "nio", cpu: true),
            { "RingIO (epoll) uses \(Format.ratio($0)) SwiftNIO's CPU" },
            { $0 <= 1.0 },
            unmeasured: notRun
        )
        for (workload, label) in [("http-hello", "loadgen"), ("http-hello-wrk", "wrk")] {
            add(
                "HTTP hello, keep-alive (\(label)): RingIO (epoll) ≥ 1.5× SwiftNIO's requests/s (both on epoll)",
                self.measured(workload, epoll, over: "nio", cpu: false),
                { "RingIO (epoll) serves \(Format.ratio($0)) SwiftNIO's requests/s" },
                { $0 >= 1.5 },
                unmeasured: notRun
            )
        }
        // Files to sockets at nginx's speed (nginx: sendfile on, one worker).
        for file in StaticFiles.all {
            for (suffix, client) in [("", "loadgen"), ("-wrk", "wrk")] {
                let workload = file.workload + suffix
                let label = "Static file \(file.label), keep-alive (\(client))"
                add(
                    "\(label): RingIO ≥ 1.0× nginx's requests/s (one worker, sendfile)",
                    self.measured(workload, "nginx", cpu: false, inverted: true),
                    { "RingIO serves \(Format.ratio($0)) nginx's requests/s" },
                    { $0 >= 1.0 }
                )
                add(
                    "\(label): RingIO's server CPU per request ≤ 1.0× nginx's",
                    self.measured(workload, "nginx", cpu: true, inverted: true),
                    { "RingIO uses \(Format.ratio($0)) nginx's CPU" },
                    { $0 <= 1.0 }
                )
            }
        }
        // Both ends of a connection: datagrams, the proxy, connects.
        for (workload, label) in [("udp-64B", "UDP echo 64 B"), ("udp-1400B", "UDP echo 1,400 B")] {
            add(
                "\(label): RingIO's server CPU per datagram ≤ 1.1× the C liburing UDP server's",
                self.measured(workload, "uring", cpu: true, inverted: true),
                { "RingIO uses \(Format.ratio($0)) the C server's CPU" },
                { $0 <= 1.1 }
            )
            add(
                "\(label): RingIO's server CPU per datagram ≤ 0.7× SwiftNIO's (DatagramBootstrap)",
                self.measured(workload, "nio", cpu: true, inverted: true),
                { "RingIO uses \(Format.ratio($0)) SwiftNIO's CPU" },
                { $0 <= 0.7 }
            )
        }
        for (workload, label) in [
            ("proxy-64B", "TCP proxy 64 B ping-pong"), ("proxy-64KiB", "TCP proxy 64 KiB ping-pong"),
        ] {
            add(
                "\(label): RingIO's proxy CPU per forwarded round trip ≤ 0.8× HAProxy's (one thread)",
                self.measured(workload, "haproxy", cpu: true, inverted: true),
                { "RingIO uses \(Format.ratio($0)) HAProxy's CPU" },
                { $0 <= 0.8 }
            )
        }
        add(
            "Connects: RingIO's client CPU per connection ≤ 0.8× SwiftNIO's (ClientBootstrap)",
            self.measured("connect", "nio", cpu: true, inverted: true),
            { "RingIO uses \(Format.ratio($0)) SwiftNIO's CPU" },
            { $0 <= 0.8 }
        )
        // HTTPS (RingTLS on OpenSSL), TLS 1.3 with AES-128-GCM, the same certificate everywhere.
        add(
            "HTTPS hello, keep-alive (wrk): RingIO's server CPU per request ≤ 1.0× nginx's",
            self.measured("https-hello-wrk", "nginx", cpu: true, inverted: true),
            { "RingIO uses \(Format.ratio($0)) nginx's CPU" },
            { $0 <= 1.0 }
        )
        add(
            "HTTPS hello, keep-alive (wrk): RingIO's server CPU per request ≤ 0.6× SwiftNIO + NIOSSL's",
            self.measured("https-hello-wrk", "nio-ssl", cpu: true, inverted: true),
            { "RingIO uses \(Format.ratio($0)) SwiftNIO + NIOSSL's CPU" },
            { $0 <= 0.6 }
        )
        add(
            "New TLS connections (full handshakes): RingIO's server CPU per connection ≤ 1.1× nginx's",
            self.measured("tls-handshakes", "nginx", cpu: true, inverted: true),
            { "RingIO uses \(Format.ratio($0)) nginx's CPU" },
            { $0 <= 1.1 }
        )
        add(
            "File read, warm cache: RingIO ≥ 0.9× fio io_uring's MB/s",
            self.measured("file-read", "fio", cpu: false, inverted: true),
            { "RingIO reads at \(Format.ratio($0)) fio's rate" },
            { $0 >= 0.9 }
        )
        let idle = self.memory.first { $0.key == "ringio" && $0.group == .echo }?.idleBytesPerConnection
        add(
            "Idle connections: RingIO's resident memory per idle connection ≤ 2 KiB",
            idle.map { Measured(value: $0, perRepetition: []) },
            { "\(Format.bytes($0)) per connection" },
            { $0 <= 2048 }
        )
        return checks
    }

    var markdown: String {
        var text = """
            # Throughput: RingIO beside SwiftNIO, Hummingbird, Dispatch, C liburing servers, nginx, HAProxy and fio

            - Command: `\(self.command)`
            - Machine: \(self.machine.cpu), \(self.machine.cpus) CPUs, \(Format.figure(self.machine.memoryGiB)) GiB, \
            Linux \(self.machine.kernel); servers pinned to CPU \(self.machine.serverCPU), load generator to CPU \
            \(self.machine.clientCPU)
            - Run: \(self.date), `\(self.timing.name)` timing: \(self.timing.repeats) repetitions of \
            \(Format.figure(self.timing.duration)) s after \(Format.figure(self.timing.warmup)) s of warm-up, \
            servers interleaved (A B C A B C …)
            - Figures are medians over the repetitions, with min–max in brackets. `× RingIO` divides a \
            server's median by RingIO's (completion handlers on the ring; `RingIO async` is the same \
            server with async/await) from the same run: for throughput, below 1 is slower than RingIO; \
            for server CPU per operation (from /proc), above 1 uses more CPU than RingIO. CPU per \
            operation is the steadier figure on a noisy machine.
            - RingIO's engine: \(self.engines)


            """
        text += "## Targets\n\n| target | this run | met |\n|---|---|---|\n"
        for check in self.targets {
            var met = check.met.map { $0 ? "yes" : "**no**" } ?? "–"
            if check.clientBound == true { met += " (client-bound)" }
            if let metIn = check.metInRepetitions, let repetitions = check.repetitions,
                metIn > 0 && metIn < repetitions
            {
                met += " (noise: \(metIn) of \(repetitions))"
            }
            text += "| \(check.target) | \(check.measured) | \(met) |\n"
        }
        text += "\n## Results\n\n"
        text += "| workload | server | throughput | × RingIO | server CPU | × RingIO | latency p50 / p99 / p99.9 µs |\n"
        text += "|---|---|---|---|---|---|---|\n"
        for workload in self.workloads {
            let base = self.base(workload)
            for (index, server) in workload.servers.enumerated() {
                let title = index == 0 ? workload.title : ""
                let name = server.key == base ? "**\(server.name)**" : server.name
                guard let primary = server.primary(workload.primary) else {
                    text +=
                        "| \(title) | \(name) | failed: \(Self.oneLine(server.failures.first ?? "no sample")) | | | | |\n"
                    continue
                }
                let unit = workload.primary == .operations ? " \(workload.operation)s/s" : " MB/s"
                let throughput = Format.spread(primary, Format.grouped) + unit
                let cpu = server.serverCPU.map { Format.spread($0, Format.figure) + " \(workload.cpuUnit)" } ?? "–"
                let latency = server.latency.map { latency in
                    [latency.p50, latency.p99, latency.p999 ?? .nan].map(Format.figure).joined(separator: " / ")
                }
                let throughputRatio =
                    self.ratio(workload.key, server.key, over: base, cpu: false).map(Format.ratio) ?? "–"
                let cpuRatio = self.ratio(workload.key, server.key, over: base, cpu: true).map(Format.ratio) ?? "–"
                let failures = server.failures.isEmpty ? "" : " (\(server.failures.count) runs failed)"
                text +=
                    "| \(title) | \(name) | \(throughput)\(failures) | \(throughputRatio) | \(cpu) | \(cpuRatio) | \(latency ?? "–") |\n"
            }
        }
        text += self.besideSwiftNIO
        text += "\n## Memory\n\n"
        // A column per group whose servers ran (the connect clients run to their end: none).
        let groups: [(WorkloadGroup, String)] = [
            (.echo, "echo workloads"), (.http, "HTTP workloads"), (.staticFiles, "static files"),
            (.udp, "UDP echo"), (.proxy, "proxies"), (.tls, "TLS workloads"),
        ].filter { group, _ in self.memory.contains { $0.group == group } }
        text += "| server | " + groups.map { "peak resident, \($0.1) | " }.joined() + "per idle connection |\n"
        text += "|---|" + String(repeating: "---|", count: groups.count) + "---|\n"
        var names: [(String, String)] = []
        for entry in self.memory where !names.contains(where: { $0.0 == entry.key }) {
            names.append((entry.key, entry.name))
        }
        for (key, name) in names {
            let echo = self.memory.first { $0.key == key && $0.group == .echo }
            let idle: String
            if let perConnection = echo?.idleBytesPerConnection, let count = echo?.idleConnections {
                idle = "\(Format.bytes(perConnection)) (\(Format.grouped(Double(count))) open)"
            } else {
                idle = echo?.failure.map { "failed: \(Self.oneLine($0))" } ?? "–"
            }
            let peaks = groups.map { group, _ in
                self.memory.first { $0.key == key && $0.group == group }?.peakResidentBytes
                    .map { Format.bytes(Double($0)) } ?? "–"
            }
            text += "| \(name) | \(peaks.joined(separator: " | ")) | \(idle) |\n"
        }
        text += """

            Peak resident memory is the server's high-water mark (VmHWM, summed over nginx's processes) \
            after all the workloads of its group. Per idle connection: a fresh server's resident memory \
            (VmRSS) with the connections open, each having echoed 64 bytes once, minus before, divided \
            by their number (kernel socket buffers are not in it).

            """
        let notes = self.notes + self.clientBoundNotes
        if !notes.isEmpty {
            text += "\n## Notes\n\n" + notes.map { "- \($0)\n" }.joined()
        }
        return text
    }

    /// Which engines RingIO's rows ran on, for the report's head.
    private var engines: String {
        switch (self.ran(.ioUring), self.ran(.epoll)) {
        case (true, true):
            "io_uring, and the readiness engine (epoll, non-blocking system calls) in the rows marked "
                + "`(epoll)`: every RingIO server twice, interleaved with the rest (`--backend both`)."
        case (false, true):
            "the readiness engine (epoll, non-blocking system calls) only (`--backend epoll`): "
                + "`× RingIO` divides by `RingIO (epoll)`."
        default:
            "io_uring (`--backend both` adds the readiness engine's rows)."
        }
    }

    /// RingIO's servers over SwiftNIO's (one event loop on epoll) on every workload both ran:
    /// the handler servers over SwiftNIO's channel handlers, the async ones over NIOAsyncChannel.
    /// Empty unless the readiness engine ran (its rows compare two epoll servers).
    private var besideSwiftNIO: String {
        guard self.ran(.epoll) else { return "" }
        var rows = ""
        for workload in self.workloads {
            var title = workload.title
            for (server, peer) in [("ringio", "nio"), ("ringio-async", "nio-async")] {
                for backend in Backend.allCases {
                    let key = server + backend.keySuffix
                    guard let ringIO = workload.server(key), let other = workload.server(peer) else { continue }
                    let ratios = [false, true].map { cpu in
                        self.ratio(workload.key, key, over: peer, cpu: cpu).map(Format.ratio) ?? "–"
                    }
                    rows += "| \(title) | \(ringIO.name) | \(other.name) | \(ratios[0]) | \(ratios[1]) |\n"
                    title = ""
                }
            }
        }
        guard !rows.isEmpty else { return "" }
        return """

            ## RingIO beside SwiftNIO, on either engine

            SwiftNIO runs on epoll; so does `RingIO (epoll)`. Throughput: above 1 is faster than \
            SwiftNIO. Server CPU per operation: below 1 uses less CPU than SwiftNIO.

            | workload | server | over | throughput | server CPU per operation |
            |---|---|---|---|---|

            """ + rows
    }

    /// Workloads where the load generator's core was busy (≥ 95%) for a server: its rate is then
    /// the client's limit as much as the server's (its CPU per operation still holds).
    private var clientBoundNotes: [String] {
        var notes: [String] = []
        for workload in self.workloads {
            let bound = workload.servers.filter(\.isClientBound)
            if !bound.isEmpty {
                // For connects the other end is the echo server, on the load generator's core.
                let side = workload.group == .connect ? "the echo server's core" : "the load generator's core"
                notes.append(
                    "\(workload.title): \(side) was saturated for "
                        + bound.map(\.name).joined(separator: ", ")
                        + ": compare server CPU per operation rather than throughput."
                )
            }
        }
        return notes
    }

    private static func oneLine(_ text: String) -> String {
        String(text.split(separator: "\n").first ?? "").replacingOccurrences(of: "|", with: "/")
    }

    func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}
