//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: `throughput`, the command.
//
//     swift run -c release --package-path Benchmarks throughput [--quick | --smoke] [options]
//
// See Benchmarks/README.md ("Throughput beside the peers").
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ArgumentParser
import Foundation
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

@main
struct Throughput: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throughput",
        abstract:
            "RingIO's servers (echo, HTTP, static files, UDP echo, HTTPS), proxy, connects and file reads beside SwiftNIO, NIOSSL, Hummingbird, Dispatch, C liburing servers, nginx, HAProxy and fio.",
        discussion: """
            Starts every server pinned to one CPU and the load generator (or wrk, fio) on another, \
            runs each workload on the servers in turn (A B C A B C …), repeats, and writes a table of \
            medians with min–max and ratios to RingIO (Markdown, JSON, an SVG chart) to the output \
            folder. Full run: about 25 minutes; --quick: about 4; --smoke: proves every piece works.
            nginx, wrk, HAProxy and fio join when installed (apt-get install -y nginx wrk haproxy fio). \
            The TLS group builds its SwiftNIO + NIOSSL peer first (a package of its own, \
            Benchmarks/TLSPeers: swift-nio-ssl compiles BoringSSL, minutes on a clean build).
            """
    )

    @Flag(help: "Two short repetitions (about 3 minutes).")
    var quick = false

    @Flag(help: "One very short repetition, a 64 MiB file, 500 idle connections: checks the harness (CI).")
    var smoke = false

    @Option(help: "Repetitions of each workload (overrides the timing's).")
    var repeats: Int?

    @Option(help: "Seconds measured per run (overrides the timing's).")
    var duration: Double?

    @Option(help: "Seconds of warm-up before each measured window (overrides the timing's).")
    var warmup: Double?

    @Option(help: "Idle connections for the memory figure (overrides the timing's).")
    var idleConnections: Int?

    @Option(
        help: """
            Which groups to run, comma-separated: echo, http, static (static files over HTTP), udp (UDP \
            echo), proxy (TCP proxies), connect (connect clients), file, tls (HTTPS and handshakes).
            """
    )
    var only: String = "echo,http,static,udp,proxy,connect,file,tls"

    @Option(
        help: """
            Which workloads of those groups to run, comma-separated keys (echo-64B, echo-64B-interval, \
            echo-4KiB, echo-64KiB, echo-64B-pipelined, echo-stream, http-hello, http-pipelined, \
            http-hello-wrk, http-file-16k, http-file-16k-wrk, http-file-1m, http-file-1m-wrk, udp-64B, \
            udp-1400B, proxy-64B, proxy-64KiB, proxy-stream, connect, file-read, https-hello-wrk, \
            tls-handshakes); default: all. Idle \
            connections are then not measured.
            """
    )
    var workloads: String?

    @Option(
        help: """
            The engine RingIO's servers and file reader run on (RINGIO_BACKEND in their environment): \
            io_uring, epoll (the readiness engine), or both (each RingIO row twice, interleaved with \
            the rest: "RingIO" and "RingIO (epoll)"). Default: io_uring; both with --smoke.
            """
    )
    var backend: BackendChoice?

    @Flag(help: "Static files: turn nginx's open_file_cache on (off by default, as nginx ships).")
    var nginxOpenFileCache = false

    @Option(help: "The CPU the servers (and file readers) are pinned to.")
    var serverCPU = 0

    @Option(help: "The CPU the load generator (wrk) is pinned to.")
    var clientCPU = 1

    @Option(help: "Where throughput.md, throughput.json and throughput.svg go (default: Benchmarks/Results).")
    var output: String?

    @Flag(help: "Measure nothing: rewrite throughput.md and throughput.svg from the output folder's throughput.json.")
    var renderOnly = false

    mutating func validate() throws {
        if self.quick && self.smoke { throw ValidationError("--quick and --smoke are exclusive") }
        for group in self.only.split(separator: ",") where WorkloadGroup(rawValue: String(group)) == nil {
            throw ValidationError(
                "--only: unknown group '\(group)' (\(WorkloadGroup.allCases.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        for cpu in [self.serverCPU, self.clientCPU] where cpu < 0 || cpu >= cpus {
            throw ValidationError("CPU \(cpu) does not exist (this machine has \(cpus))")
        }
        if let workloads {
            let all =
                Plan.echoWorkloads + Plan.httpWorkloads(wrk: true) + Plan.staticFileWorkloads(wrk: true)
                + Plan.udpWorkloads + Plan.proxyWorkloads + [Plan.connectWorkload, Plan.fileWorkload]
                + Plan.tlsWorkloads(wrk: true, sTime: true)
            let known = Set(all.map(\.key))
            for key in workloads.split(separator: ",") where !known.contains(String(key)) {
                throw ValidationError("--workloads: unknown workload '\(key)'")
            }
        }
        if let repeats, repeats < 1 { throw ValidationError("--repeats must be at least 1") }
        if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
    }

    func run() throws {
        guard let taskset = findExecutable("taskset") else {
            throw ValidationError("taskset is missing (Debian's util-linux has it)")
        }
        Harness.taskset = taskset
        var binaries = try Self.binaries()
        let outputDirectory = self.output ?? Self.defaultOutput()
        if self.renderOnly {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(outputDirectory)/throughput.json"))
            try Self.write(try JSONDecoder().decode(RunReport.self, from: data), to: outputDirectory)
            return
        }
        var timing = self.smoke ? Timing.smoke : self.quick ? Timing.quick : Timing.full
        timing.repeats = self.repeats ?? timing.repeats
        timing.duration = self.duration ?? timing.duration
        timing.warmup = self.warmup ?? timing.warmup
        timing.idleConnections = self.idleConnections ?? timing.idleConnections

        let groups = Set(self.only.split(separator: ",").compactMap { WorkloadGroup(rawValue: String($0)) })
        let tlsSelected =
            groups.contains(.tls)
            && (self.workloads.map { keys in
                Plan.tlsWorkloads(wrk: true, sTime: true).contains {
                    keys.split(separator: ",").contains(Substring($0.key))
                }
            } ?? true)
        if tlsSelected {
            // Before anything is measured: a build beside a measurement would skew it.
            binaries.tlsPeersDirectory = try TLSPeers.build()
        }
        raiseDescriptorLimit()
        let scratch = NSTemporaryDirectory() + "ringio-throughput-\(getpid())"
        try makeDirectory(scratch)
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        let options = HarnessOptions(
            timing: timing,
            serverCPU: self.serverCPU,
            clientCPU: self.clientCPU,
            groups: groups,
            workloads: self.workloads.map { Set($0.split(separator: ",").map(String.init)) },
            scratch: scratch,
            nginx: findExecutable("nginx"),
            nginxOpenFileCache: self.nginxOpenFileCache,
            wrk: findExecutable("wrk"),
            fio: findExecutable("fio"),
            haproxy: findExecutable("haproxy"),
            openssl: findExecutable("openssl"),
            backends: (self.backend ?? (self.smoke ? .both : .ioUring)).backends
        )
        let harness = Harness(binaries: binaries, options: options)
        try harness.run()

        let report = RunReport(
            command: (["swift run -c release --package-path Benchmarks throughput"] + CommandLine.arguments.dropFirst())
                .joined(separator: " "),
            date: ISO8601DateFormatter().string(from: Date()),
            machine: Self.machine(serverCPU: self.serverCPU, clientCPU: self.clientCPU),
            timing: timing,
            workloads: harness.workloads,
            memory: harness.memory,
            notes: harness.notes,
            backends: options.backends
        )
        try Self.write(report, to: outputDirectory)
        if harness.failed {
            printToStandardError("Some runs FAILED (see the table and the messages above).")
            throw ExitCode.failure
        }
    }

    /// What `--backend` takes.
    enum BackendChoice: String, ExpressibleByArgument, CaseIterable {
        case ioUring = "io_uring"
        case epoll
        case both

        var backends: [Backend] {
            switch self {
            case .ioUring: [.ioUring]
            case .epoll: [.epoll]
            case .both: [.ioUring, .epoll]
            }
        }
    }

    /// Writes the report's Markdown, JSON and chart to `directory`, and prints the Markdown.
    static func write(_ report: RunReport, to directory: String) throws {
        try makeDirectory(directory)
        let markdown = report.markdown
        try writeFile("\(directory)/throughput.md", markdown)
        try report.json().write(to: URL(fileURLWithPath: "\(directory)/throughput.json"))
        try writeFile("\(directory)/throughput.svg", RatioChart.svg(report))
        print(markdown)
        printToStandardError("Written: \(directory)/throughput.{md,json,svg}")
    }

    /// The folder this executable is in: `swift run` builds every tool there.
    static func binaries() throws -> Binaries {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let directory = URL(fileURLWithPath: executable).deletingLastPathComponent().path
        let needed = [
            "loadgen", "file-read", "echo-server", "http-server", "uring-echo-server", "nio-server",
            "hummingbird-server", "dispatch-echo-server", "uring-udp-echo-server", "udp-echo-server",
            "connect-client", "tcp-proxy",
        ]
        let missing = needed.filter { access("\(directory)/\($0)", X_OK) != 0 }
        guard missing.isEmpty else {
            throw ValidationError(
                "missing next to throughput: \(missing.joined(separator: ", ")); "
                    + "run it as: swift run -c release --package-path Benchmarks throughput"
            )
        }
        return Binaries(directory: directory)
    }

    /// `<Benchmarks package>/Results` when the package's sources are where this binary was built
    /// from (whatever `--scratch-path` was used), else ./throughput-results.
    static func defaultOutput() -> String {
        // #filePath: <Benchmarks package>/Throughput/Throughput/Throughput.swift
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        if FileManager.default.fileExists(atPath: package.appendingPathComponent("Package.swift").path) {
            return package.appendingPathComponent("Results").path
        }
        return FileManager.default.currentDirectoryPath + "/throughput-results"
    }

    static func machine(serverCPU: Int, clientCPU: Int) -> Machine {
        let cpuinfo = ProcessStats.readFile("/proc/cpuinfo") ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let meminfo = ProcessStats.readFile("/proc/meminfo") ?? ""
        let kilobytes =
            meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Double($0) } ?? 0
        var names = utsname()
        uname(&names)
        let kernel = withUnsafeBytes(of: names.release) {
            String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return Machine(
            cpu: model,
            cpus: sysconf(Int32(_SC_NPROCESSORS_ONLN)),
            kernel: kernel,
            memoryGiB: kilobytes / 1024 / 1024,
            serverCPU: serverCPU,
            clientCPU: clientCPU
        )
    }
}
