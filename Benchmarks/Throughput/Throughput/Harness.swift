//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: runs the plan, servers interleaved, and gathers samples.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

struct HarnessOptions {
    var timing: Timing
    var serverCPU: Int
    var clientCPU: Int
    var groups: Set<WorkloadGroup>
    /// The workloads to run, by key (`--workloads`); `nil`: every workload of the groups.
    var workloads: Set<String>? = nil
    var scratch: String
    var nginx: String?
    /// nginx's `open_file_cache` in the static-file group (`--nginx-open-file-cache`).
    var nginxOpenFileCache = false
    var wrk: String?
    var fio: String?
    /// HAProxy, the proxies' peer (`nil`: not installed).
    var haproxy: String? = nil
    /// The `openssl` command: the TLS group's certificate, and `s_time` for the handshakes
    /// (`nil`: not installed).
    var openssl: String? = nil
    /// The engines RingIO's servers and file reader run on (`--backend`), each a row of its own.
    var backends: [Backend] = [.ioUring]
}

final class Harness {
    /// `taskset`, from util-linux (every Debian system has it).
    nonisolated(unsafe) static var taskset = "/usr/bin/taskset"

    let binaries: Binaries
    let options: HarnessOptions
    /// The plan's servers and file readers, RingIO's on every engine of ``HarnessOptions/backends``.
    private let echoServers: [ServerSpec]
    private let httpServers: [ServerSpec]
    private let staticServers: [ServerSpec]
    private let udpServers: [ServerSpec]
    private let connectClients: [ServerSpec]
    private let fileReaders: [ServerSpec]
    private let tlsServers: [ServerSpec]
    private(set) var workloads: [WorkloadResult] = []
    private(set) var memory: [MemoryResult] = []
    private(set) var notes: [String] = []
    private var done = 0
    private let total: Int
    private let start = monotonicSeconds()

    init(binaries: Binaries, options: HarnessOptions) {
        self.binaries = binaries
        self.options = options
        let echoServers = Plan.onBackends(Plan.echoServers, options.backends)
        let httpServers = Plan.onBackends(Plan.httpServers(nginx: options.nginx), options.backends)
        let staticServers = Plan.onBackends(
            Plan.staticServers(nginx: options.nginx, openFileCache: options.nginxOpenFileCache),
            options.backends
        )
        let fileReaders = Plan.onBackends(Plan.fileReaders(fio: options.fio), options.backends)
        let udpServers = Plan.onBackends(Plan.udpServers, options.backends)
        let connectClients = Plan.onBackends(Plan.connectClients, options.backends)
        (self.echoServers, self.httpServers) = (echoServers, httpServers)
        (self.staticServers, self.fileReaders) = (staticServers, fileReaders)
        (self.udpServers, self.connectClients) = (udpServers, connectClients)
        let tlsServers = Plan.onBackends(Plan.tlsServers(nginx: options.nginx), options.backends)
        self.tlsServers = tlsServers
        let repeats = options.timing.repeats
        var total = 0
        if options.groups.contains(.echo) {
            for workload in Self.selected(Plan.echoWorkloads, options) {
                total += workload.servers(of: echoServers).count * repeats
            }
        }
        if options.groups.contains(.http) {
            for workload in Self.selected(Plan.httpWorkloads(wrk: options.wrk != nil), options) {
                total += workload.servers(of: httpServers).count * repeats
            }
        }
        if options.groups.contains(.staticFiles) {
            for workload in Self.selected(Plan.staticFileWorkloads(wrk: options.wrk != nil), options) {
                total += workload.servers(of: staticServers).count * repeats
            }
        }
        if options.groups.contains(.udp) {
            for workload in Self.selected(Plan.udpWorkloads, options) {
                total += workload.servers(of: udpServers).count * repeats
            }
        }
        if options.groups.contains(.proxy) {
            // The proxies' count does not depend on the upstream's port.
            let proxies = Plan.onBackends(Plan.proxyServers(upstream: 0, haproxy: options.haproxy), options.backends)
            for workload in Self.selected(Plan.proxyWorkloads, options) {
                total += workload.servers(of: proxies).count * repeats
            }
        }
        if options.groups.contains(.connect), !Self.selected([Plan.connectWorkload], options).isEmpty {
            total += connectClients.count * repeats
        }
        if options.groups.contains(.file), options.workloads?.contains(Plan.fileWorkload.key) ?? true {
            total += fileReaders.count * repeats
        }
        if options.groups.contains(.tls) {
            let workloads = Plan.tlsWorkloads(wrk: options.wrk != nil, sTime: options.openssl != nil)
            for workload in Self.selected(workloads, options) {
                total += workload.servers(of: tlsServers).count * repeats
            }
        }
        self.total = total
    }

    var failed: Bool {
        self.workloads.contains { $0.servers.contains { !$0.failures.isEmpty } }
            || self.memory.contains { $0.failure != nil }
    }

    func run() throws {
        if self.options.groups.contains(.echo) {
            try self.runServerGroup(
                .echo,
                servers: self.echoServers,
                workloads: Self.selected(Plan.echoWorkloads, self.options)
            )
            if self.options.workloads == nil {
                self.measureIdleConnections(self.echoServers.filter { !$0.dedicated })
            } else {
                self.notes.append("--workloads: idle connections not measured.")
            }
        }
        if self.options.groups.contains(.http) {
            if self.options.nginx == nil { self.notes.append("nginx is not installed: the HTTP rows have no nginx.") }
            if self.options.wrk == nil { self.notes.append("wrk is not installed: no wrk row.") }
            try self.runServerGroup(
                .http,
                servers: self.httpServers,
                workloads: Self.selected(Plan.httpWorkloads(wrk: self.options.wrk != nil), self.options)
            )
        }
        if self.options.groups.contains(.staticFiles) {
            let workloads = Self.selected(Plan.staticFileWorkloads(wrk: self.options.wrk != nil), self.options)
            if !workloads.isEmpty {
                if self.options.nginx == nil {
                    self.notes.append("nginx is not installed: the static-file rows have no nginx.")
                } else {
                    let cache =
                        self.options.nginxOpenFileCache
                        ? "on (--nginx-open-file-cache)."
                        : "off (nginx's default; --nginx-open-file-cache turns it on)."
                    self.notes.append(
                        "Static files: SwiftNIO's and Hummingbird's baselines serve no files, so they have no rows; "
                            + "nginx with `sendfile on; tcp_nopush on;`, open_file_cache \(cache)"
                    )
                }
                if self.options.wrk == nil {
                    self.notes.append("wrk is not installed: the static files have no wrk rows.")
                }
                try StaticFiles.write(scratch: self.options.scratch)
            }
            try self.runServerGroup(
                .staticFiles,
                servers: self.staticServers,
                workloads: workloads
            )
        }
        if self.options.groups.contains(.udp) {
            try self.runServerGroup(
                .udp,
                servers: self.udpServers,
                workloads: Self.selected(Plan.udpWorkloads, self.options)
            )
        }
        if self.options.groups.contains(.proxy) {
            try self.runProxies(Self.selected(Plan.proxyWorkloads, self.options))
        }
        if self.options.groups.contains(.connect), !Self.selected([Plan.connectWorkload], self.options).isEmpty {
            self.runConnects(Plan.connectWorkload)
        }
        if self.options.groups.contains(.file), self.options.workloads?.contains(Plan.fileWorkload.key) ?? true {
            if self.options.fio == nil { self.notes.append("fio is not installed: the file read has no fio row.") }
            self.runFileReads()
        }
        if self.options.groups.contains(.tls) {
            try self.runTLS()
        }
    }

    /// The TLS group: the certificate first, then the servers as any group.
    private func runTLS() throws {
        let workloads = Self.selected(
            Plan.tlsWorkloads(wrk: self.options.wrk != nil, sTime: self.options.openssl != nil),
            self.options
        )
        if self.options.wrk == nil { self.notes.append("wrk is not installed: no HTTPS hello row.") }
        if self.options.nginx == nil { self.notes.append("nginx is not installed: the TLS rows have no nginx.") }
        guard let openssl = self.options.openssl else {
            self.notes.append("openssl is not installed: no TLS workload (it makes their certificate).")
            return
        }
        guard !workloads.isEmpty else { return }
        self.notes.append(
            "TLS: every server has the same self-signed ECDSA P-256 certificate and agrees on TLS 1.3 with "
                + "\(TLSCredentials.cipherSuite), the one suite the clients offer (an OPENSSL_CONF of their own; "
                + "RingIO and nginx are held to it as well), no session tickets. RingIO: `http-server --rings 1 --tls-certificate … "
                + "--no-tls-session-tickets` (RingTLS on the system's OpenSSL 3); nginx: one "
                + "worker, `ssl_conf_command NumTickets 0`, no session cache; SwiftNIO + NIOSSL: "
                + "Benchmarks/TLSPeers. Handshakes: `openssl s_time -new` (one connection after another, each a "
                + "full handshake), the server's CPU per new connection."
        )
        try TLSCredentials.write(scratch: self.options.scratch, openssl: openssl)
        try self.runServerGroup(.tls, servers: self.tlsServers, workloads: workloads)
    }

    /// The workloads of `workloads` that `--workloads` selects.
    private static func selected(_ workloads: [Workload], _ options: HarnessOptions) -> [Workload] {
        guard let keys = options.workloads else { return workloads }
        return workloads.filter { keys.contains($0.key) }
    }

    // MARK: Servers

    /// Starts every server that runs one of `workloads` once, then for each workload runs
    /// its servers A B C A B C …, then records each server's peak memory and stops them.
    private func runServerGroup(_ group: WorkloadGroup, servers allSpecs: [ServerSpec], workloads: [Workload]) throws {
        guard !workloads.isEmpty else { return }
        var running: [String: RunningServer] = [:]
        defer { for server in running.values { server.stop() } }
        var memory: [MemoryResult] = []
        let used = Set(workloads.flatMap { $0.servers(of: allSpecs).map(\.key) })
        for spec in allSpecs where used.contains(spec.key) {
            do {
                running[spec.key] = try RunningServer(
                    spec,
                    binaries: self.binaries,
                    cpu: self.options.serverCPU,
                    scratch: self.options.scratch
                )
            } catch {
                self.log("\(spec.name): \(error)")
                memory.append(MemoryResult(key: spec.key, name: spec.name, group: group, failure: "\(error)"))
            }
        }
        for workload in workloads {
            let specs = workload.servers(of: allSpecs)
            var result = WorkloadResult(
                key: workload.key,
                title: workload.title,
                group: group,
                primary: workload.primary,
                operation: workload.operation,
                cpuUnit: workload.cpuUnit,
                servers: specs.map { ServerResult(key: $0.key, name: $0.name) }
            )
            for repetition in 0..<self.options.timing.repeats {
                for (index, spec) in specs.enumerated() {
                    self.done += 1
                    guard let server = running[spec.key] else {
                        result.servers[index].failures.append("did not start")
                        continue
                    }
                    self.record(workload, spec, repetition, into: &result.servers[index]) {
                        guard server.process.isRunning else {
                            throw HarnessError("the server has exited (status \(server.process.terminationStatus))")
                        }
                        return try self.measure(workload, on: server, repetition: repetition)
                    }
                }
            }
            self.workloads.append(result)
        }
        for spec in allSpecs {
            guard let server = running[spec.key] else { continue }
            memory.append(
                MemoryResult(key: spec.key, name: spec.name, group: group, peakResidentBytes: server.peakResidentBytes)
            )
        }
        self.memory += memory
    }

    /// The proxy group: the upstream echo server first (pinned with the proxies; its CPU is not
    /// counted), then the proxies forwarding to it, as any server group.
    private func runProxies(_ workloads: [Workload]) throws {
        guard !workloads.isEmpty else { return }
        if self.options.haproxy == nil {
            self.notes.append("HAProxy is not installed: the proxy rows have no HAProxy.")
        }
        self.notes.append(
            "TCP proxy: the load generator → the proxy → the C liburing echo server (pinned to the proxies' CPU; "
                + "its CPU is not counted): server CPU is the proxy's per forwarded round trip. RingIO: "
                + "`tcp-proxy --rings 1` (Servers/TCPProxy); HAProxy: TCP mode, `nbthread 1`, its defaults otherwise."
        )
        let upstream: RunningServer
        do {
            upstream = try RunningServer(
                Plan.proxyUpstream,
                binaries: self.binaries,
                cpu: self.options.serverCPU,
                scratch: self.options.scratch
            )
        } catch {
            self.log("proxy upstream: \(error)")
            self.failAll(workloads, servers: Plan.proxyServers(upstream: 0, haproxy: self.options.haproxy), "\(error)")
            return
        }
        defer { upstream.stop() }
        let proxies = Plan.onBackends(
            Plan.proxyServers(upstream: upstream.port, haproxy: self.options.haproxy),
            self.options.backends
        )
        try self.runServerGroup(.proxy, servers: proxies, workloads: workloads)
    }

    /// Every run of `workloads` on `servers` failed with `reason` (what they needed did not start).
    private func failAll(_ workloads: [Workload], servers: [ServerSpec], _ reason: String) {
        let specs = Plan.onBackends(servers, self.options.backends)
        for workload in workloads {
            var result = WorkloadResult(
                key: workload.key,
                title: workload.title,
                group: workload.group,
                primary: workload.primary,
                operation: workload.operation,
                cpuUnit: workload.cpuUnit,
                servers: workload.servers(of: specs).map { ServerResult(key: $0.key, name: $0.name) }
            )
            for index in result.servers.indices { result.servers[index].failures.append(reason) }
            self.workloads.append(result)
        }
    }

    // MARK: Connect clients

    /// The connect clients, each run to its end per repetition (A B C A B C …) pinned to the
    /// servers' CPU, against the C echo server on the load generator's CPU. The client reports
    /// its own CPU time per connection (and the echo server's, as the other side's).
    private func runConnects(_ workload: Workload) {
        guard case .connects(let concurrency, let size) = workload.kind else { return }
        self.notes.append(
            "Connects: the client is the process measured (pinned to CPU \(self.options.serverCPU)); it keeps "
                + "\(concurrency) connections under way, each connect (by address) → \(size) B written and read "
                + "back → close, against the C liburing echo server on CPU \(self.options.clientCPU). "
                + "\"server CPU\" is the client's CPU per connection."
        )
        let specs = workload.servers(of: self.connectClients)
        var result = WorkloadResult(
            key: workload.key,
            title: workload.title,
            group: .connect,
            primary: workload.primary,
            operation: workload.operation,
            cpuUnit: workload.cpuUnit,
            servers: specs.map { ServerResult(key: $0.key, name: $0.name) }
        )
        let echo: RunningServer
        do {
            echo = try RunningServer(
                Plan.connectEchoServer,
                binaries: self.binaries,
                cpu: self.options.clientCPU,
                scratch: self.options.scratch
            )
        } catch {
            self.log("connect echo server: \(error)")
            for index in result.servers.indices { result.servers[index].failures.append("\(error)") }
            self.workloads.append(result)
            return
        }
        defer { echo.stop() }
        for repetition in 0..<self.options.timing.repeats {
            for (index, spec) in specs.enumerated() {
                self.done += 1
                self.record(workload, spec, repetition, into: &result.servers[index]) {
                    guard echo.process.isRunning else {
                        throw HarnessError("the echo server has exited (status \(echo.process.terminationStatus))")
                    }
                    var arguments =
                        spec.arguments(self.binaries, echo.port, self.options.scratch) + [
                            "--concurrency", "\(concurrency)", "--size", "\(size)",
                            "--warmup", "\(self.options.timing.warmup)", "--duration",
                            "\(self.options.timing.duration)",
                        ]
                    for pid in echo.pids { arguments += ["--peer-pid", "\(pid)"] }
                    let output = try runToCompletion(
                        arguments,
                        cpu: self.options.serverCPU,
                        timeout: self.options.timing.warmup + self.options.timing.duration + 60,
                        logDirectory: self.options.scratch,
                        environment: spec.environment
                    )
                    let report = try JSONDecoder().decode(LoadReport.self, from: Data(output.utf8))
                    guard report.operations > 0, report.seconds > 0 else {
                        throw HarnessError("no connection completed in the measured window")
                    }
                    return Self.sample(report, repetition: repetition)
                }
            }
        }
        self.workloads.append(result)
    }

    private func measure(_ workload: Workload, on server: RunningServer, repetition: Int) throws -> Sample {
        switch workload.kind {
        case .loadgen(let mode, let connections, let size, let depth):
            var extra: [String] = []
            if mode == "http" { extra = ["--expect-body", "Hello, World!"] }
            let report = try self.runLoadgen(
                server,
                mode: mode,
                connections: connections,
                size: size,
                depth: depth,
                extra: extra,
                warmup: self.options.timing.warmup,
                duration: self.options.timing.duration
            )
            return Self.sample(report, repetition: repetition)
        case .wrk(let connections):
            return try self.measureWithWrk(
                server,
                connections: connections,
                path: "/",
                bodyBytes: 13,
                repetition: repetition
            )
        case .staticFile(let file, let bytes, let connections, let byWrk):
            // Every body checked, length and bytes: the whole measurement, or the warm-up
            // before wrk's (wrk reads Content-Length but never compares a byte).
            let checked = { (warmup: Double, duration: Double) in
                try self.runLoadgen(
                    server,
                    mode: "http",
                    connections: connections,
                    size: 0,
                    depth: 1,
                    extra: ["--http-path", "/\(file)", "--expect-body-pattern", "\(bytes)"],
                    warmup: warmup,
                    duration: duration
                )
            }
            guard byWrk, self.options.wrk != nil else {
                return Self.sample(
                    try checked(self.options.timing.warmup, self.options.timing.duration),
                    repetition: repetition
                )
            }
            _ = try checked(0, max(0.2, self.options.timing.warmup))
            return try self.measureWithWrk(
                server,
                connections: connections,
                path: "/\(file)",
                bodyBytes: bytes,
                repetition: repetition
            )
        case .https(let connections):
            return try self.measureWithWrk(
                server,
                connections: connections,
                path: "/",
                bodyBytes: 13,
                repetition: repetition,
                scheme: "https",
                environment: TLSCredentials.clientEnvironment(scratch: self.options.scratch)
            )
        case .handshakes:
            return try self.measureHandshakes(server, repetition: repetition)
        case .file, .connects:
            preconditionFailure("file reads and connect clients are not server workloads")
        }
    }

    /// The load generator against `server`, pinned to the client CPU, with the server's
    /// processes for its CPU figure; its report, with at least one operation in the window.
    private func runLoadgen(
        _ server: RunningServer,
        mode: String,
        connections: Int,
        size: Int,
        depth: Int,
        extra: [String],
        warmup: Double,
        duration: Double
    ) throws -> LoadReport {
        var arguments = [
            self.binaries.path("loadgen"), "--port", "\(server.port)", "--mode", mode,
            "--connections", "\(connections)", "--size", "\(size)", "--depth", "\(depth)",
            "--warmup", "\(warmup)", "--duration", "\(duration)",
        ]
        for pid in server.pids { arguments += ["--server-pid", "\(pid)"] }
        arguments += extra
        let output = try runToCompletion(
            arguments,
            cpu: self.options.clientCPU,
            timeout: warmup + duration + 30,
            logDirectory: self.options.scratch
        )
        let report = try JSONDecoder().decode(LoadReport.self, from: Data(output.utf8))
        guard report.operations > 0, report.seconds > 0 else {
            throw HarnessError("no operation completed in the measured window")
        }
        return report
    }

    private static func sample(_ report: LoadReport, repetition: Int) -> Sample {
        Sample(
            repetition: repetition,
            operationsPerSecond: Double(report.operations) / report.seconds,
            megabytesPerSecond: Double(report.bytes) / report.seconds / 1e6,
            serverCPU: report.serverCPUSeconds.map { $0 / Double(report.operations) * 1e6 },
            latency: report.latency,
            clientBusy: report.clientCPUSeconds / report.seconds
        )
    }

    /// wrk, one thread, keep-alive GET `path`, for the window's length rounded up to whole seconds
    /// (wrk's unit); the server's CPU is read around the whole wrk run, and wrk's own (its core
    /// busy near 100%: the rate is wrk's limit). MB/s counts `bodyBytes` per request (the bodies,
    /// not the headers).
    private func measureWithWrk(
        _ server: RunningServer,
        connections: Int,
        path: String,
        bodyBytes: Int,
        repetition: Int,
        scheme: String = "http",
        environment: [String: String] = [:]
    ) throws -> Sample {
        let seconds = max(1, Int(self.options.timing.duration.rounded(.up)))
        let cpuBefore = ProcessStats.cpuSeconds(server.pids)
        let clientBefore = childrenCPUSeconds()
        let output = try runToCompletion(
            [
                self.options.wrk!, "-t1", "-c\(connections)", "-d\(seconds)s", "--latency",
                "\(scheme)://127.0.0.1:\(server.port)\(path)",
            ],
            cpu: self.options.clientCPU,
            timeout: Double(seconds) + 30,
            logDirectory: self.options.scratch,
            environment: environment
        )
        let cpu = ProcessStats.cpuSeconds(server.pids) - cpuBefore
        // wrk, the one child that ended in between (the servers run on).
        let clientCPU = childrenCPUSeconds() - clientBefore
        let parsed = try WrkOutput(output)
        return Sample(
            repetition: repetition,
            operationsPerSecond: parsed.requestsPerSecond,
            megabytesPerSecond: parsed.requestsPerSecond * Double(bodyBytes) / 1e6,
            serverCPU: cpu / Double(parsed.requests) * 1e6,
            latency: parsed.latency,
            clientBusy: clientCPU / Double(seconds)
        )
    }

    /// `openssl s_time -new` against `server` for the window rounded up to whole seconds (its
    /// unit): one TLS connection after another, each a full handshake, closed at once. The
    /// server's CPU per connection, read around the whole run; the rate over the run's wall
    /// time (s_time's own is in whole seconds). Any failed connection fails the run.
    private func measureHandshakes(_ server: RunningServer, repetition: Int) throws -> Sample {
        let seconds = max(1, Int(self.options.timing.duration.rounded(.up)))
        let cpuBefore = ProcessStats.cpuSeconds(server.pids)
        let clientBefore = childrenCPUSeconds()
        let start = monotonicSeconds()
        let output = try runToCompletion(
            [self.options.openssl!, "s_time", "-connect", "127.0.0.1:\(server.port)", "-new", "-time", "\(seconds)"],
            cpu: self.options.clientCPU,
            timeout: Double(seconds) + 30,
            logDirectory: self.options.scratch,
            environment: TLSCredentials.clientEnvironment(scratch: self.options.scratch)
        )
        let elapsed = monotonicSeconds() - start
        let cpu = ProcessStats.cpuSeconds(server.pids) - cpuBefore
        let clientCPU = childrenCPUSeconds() - clientBefore
        // "1234 connections in 2 real seconds, 0 bytes read per connection"
        let connections = output.split(separator: "\n").first {
            $0.contains("connections in") && $0.contains("real seconds")
        }
        .flatMap { $0.split(separator: " ").first }.flatMap { Int($0) }
        guard let connections, connections > 0 else {
            throw HarnessError("openssl s_time: no connection counted in its output:\n\(output)")
        }
        return Sample(
            repetition: repetition,
            operationsPerSecond: Double(connections) / elapsed,
            megabytesPerSecond: 0,
            serverCPU: cpu / Double(connections) * 1e6,
            latency: nil,
            clientBusy: clientCPU / elapsed
        )
    }

    // MARK: Idle connections

    /// Each echo server afresh: resident memory before and while `idleConnections` connections
    /// are open (each has echoed 64 bytes once).
    private func measureIdleConnections(_ specs: [ServerSpec]) {
        let count = self.options.timing.idleConnections
        for spec in specs {
            var result = MemoryResult(key: spec.key, name: spec.name, group: .echo, idleConnections: count)
            do {
                let server = try RunningServer(
                    spec,
                    binaries: self.binaries,
                    cpu: self.options.serverCPU,
                    scratch: self.options.scratch
                )
                defer { server.stop() }
                var arguments = [
                    self.binaries.path("loadgen"), "--port", "\(server.port)", "--mode", "idle",
                    "--connections", "\(count)", "--size", "64",
                ]
                for pid in server.pids { arguments += ["--server-pid", "\(pid)"] }
                let output = try runToCompletion(
                    arguments,
                    cpu: self.options.clientCPU,
                    timeout: 120,
                    logDirectory: self.options.scratch
                )
                let report = try JSONDecoder().decode(LoadReport.self, from: Data(output.utf8))
                guard let before = report.serverResidentBefore, let after = report.serverResidentAfter else {
                    throw HarnessError("loadgen reported no resident memory")
                }
                result.idleBytesPerConnection = Double(after - before) / Double(count)
                self.log(
                    "idle · \(spec.name): \(count) connections, \(Format.bytes(Double(after - before))) more, "
                        + "\(Format.bytes(result.idleBytesPerConnection!)) each"
                )
            } catch {
                result.failure = "\(error)"
                self.log("idle · \(spec.name): FAILED: \(error)")
            }
            if let index = self.memory.firstIndex(where: { $0.key == spec.key && $0.group == .echo }) {
                self.memory[index].idleConnections = result.idleConnections
                self.memory[index].idleBytesPerConnection = result.idleBytesPerConnection
                self.memory[index].failure = self.memory[index].failure ?? result.failure
            } else {
                self.memory.append(result)
            }
        }
    }

    // MARK: File reads

    private func runFileReads() {
        let workload = Plan.fileWorkload
        let readers = self.fileReaders
        let bytes = self.options.timing.fileBytes
        let path = "/tmp/ringio-bench-\(bytes).bin"
        let environment = ["RINGIO_BENCH_FILE_SIZE": "\(bytes)", "RINGIO_BENCH_FILE": path]
        var result = WorkloadResult(
            key: workload.key,
            title: "File read, \(Format.bytes(Double(bytes))), warm cache",
            group: .file,
            primary: .megabytes,
            operation: workload.operation,
            cpuUnit: workload.cpuUnit,
            servers: readers.map { ServerResult(key: $0.key, name: $0.name) }
        )
        for repetition in 0..<self.options.timing.repeats {
            for (index, reader) in readers.enumerated() {
                self.done += 1
                self.record(workload, reader, repetition, into: &result.servers[index]) {
                    if reader.key == "fio" {
                        return try self.runFio(path: path, bytes: bytes, repetition: repetition)
                    } else {
                        let output = try runToCompletion(
                            [self.binaries.path("file-read")] + reader.arguments(self.binaries, 0, self.options.scratch)
                                + ["--passes", "\(self.options.timing.filePasses)"],
                            cpu: self.options.serverCPU,
                            timeout: 300,
                            logDirectory: self.options.scratch,
                            environment: environment.merging(reader.environment) { $1 }
                        )
                        let read = try JSONDecoder().decode(FileReadOutput.self, from: Data(output.utf8))
                        return Sample(
                            repetition: repetition,
                            operationsPerSecond: Double(read.bytes) / read.seconds / 1e9,
                            megabytesPerSecond: Double(read.bytes) / read.seconds / 1e6,
                            serverCPU: read.cpuSeconds / (Double(read.bytes) / 1e9) * 1e3
                        )
                    }
                }
            }
        }
        self.workloads.append(result)
    }

    /// fio's io_uring engine reading the same file as file-read does: bs=1M, iodepth=4 (the reads
    /// RingIO's random-access channel keeps in flight), buffered, page cache kept warm
    /// (`--invalidate=0`); CPU from fio's own usr/sys figures.
    private func runFio(path: String, bytes: Int, repetition: Int) throws -> Sample {
        let output = try runToCompletion(
            [
                self.options.fio!, "--name=ringio-seqread", "--filename=\(path)", "--rw=read", "--bs=1M",
                "--ioengine=io_uring", "--iodepth=4", "--direct=0", "--invalidate=0", "--size=\(bytes)",
                "--numjobs=1", "--loops=\(self.options.timing.filePasses)", "--output-format=json",
            ],
            cpu: self.options.serverCPU,
            timeout: 300,
            logDirectory: self.options.scratch
        )
        // fio may print notices before its JSON.
        guard let brace = output.firstIndex(of: "{") else { throw HarnessError("fio printed no JSON") }
        let json = try JSONDecoder().decode(FioOutput.self, from: Data(output[brace...].utf8))
        guard let job = json.jobs.first, job.read.bw_bytes > 0 else { throw HarnessError("fio read nothing") }
        let seconds = Double(job.job_runtime) / 1e3
        let cpuSeconds = (job.usr_cpu + job.sys_cpu) / 100 * seconds
        let readBytes = Double(job.read.io_bytes)
        return Sample(
            repetition: repetition,
            operationsPerSecond: Double(job.read.bw_bytes) / 1e9,
            megabytesPerSecond: Double(job.read.bw_bytes) / 1e6,
            serverCPU: readBytes > 0 ? cpuSeconds / (readBytes / 1e9) * 1e3 : nil
        )
    }

    // MARK: Progress

    /// Runs one measurement: its sample, or its failure, goes to `server`, and to the log.
    private func record(
        _ workload: Workload,
        _ spec: ServerSpec,
        _ repetition: Int,
        into server: inout ServerResult,
        _ measure: () throws -> Sample
    ) {
        do {
            let sample = try measure()
            server.samples.append(sample)
            self.progress(workload, spec, repetition, sample)
        } catch {
            server.failures.append("\(error)")
            self.log("\(workload.key) · \(spec.name): FAILED: \(error)")
        }
    }

    private func progress(_ workload: Workload, _ spec: ServerSpec, _ repetition: Int, _ sample: Sample) {
        let figure =
            workload.primary == .operations
            ? "\(Format.grouped(sample.operationsPerSecond)) \(workload.operation)s/s"
            : "\(Format.grouped(sample.megabytesPerSecond)) MB/s"
        let cpu = sample.serverCPU.map { ", server CPU \(Format.figure($0)) \(workload.cpuUnit)" } ?? ""
        self.log("\(workload.key) · \(spec.name) · run \(repetition + 1): \(figure)\(cpu)")
    }

    private func log(_ text: String) {
        let elapsed = Int(monotonicSeconds() - self.start)
        printToStandardError(
            "[\(self.done)/\(self.total) \(elapsed / 60)m\(elapsed % 60 < 10 ? "0" : "")\(elapsed % 60)s] \(text)"
        )
    }
}

/// file-read's JSON.
struct FileReadOutput: Decodable {
    var bytes: Int
    var seconds: Double
    var cpuSeconds: Double
}

/// The part of fio's JSON output read here (names as fio spells them).
struct FioOutput: Decodable {
    struct Job: Decodable {
        struct Read: Decodable {
            var io_bytes: Int
            var bw_bytes: Int
        }
        var read: Read
        var job_runtime: Int
        var usr_cpu: Double
        var sys_cpu: Double
    }
    var jobs: [Job]
}

/// wrk's text output: requests, requests/s, latency distribution (`--latency`); errors fail.
struct WrkOutput {
    var requests: Int
    var requestsPerSecond: Double
    var latency: LatencySummary?

    init(_ text: String) throws {
        var requests: Int?
        var rate: Double?
        var percentiles: [String: Double] = [:]
        var maximum: Double?
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if line.contains("requests in"), let first = words.first { requests = Int(first) }
            if line.hasPrefix("Requests/sec:"), words.count > 1 { rate = Double(words[1]) }
            if line.contains("Non-2xx or 3xx responses") { throw HarnessError("wrk: \(line.trimmed)") }
            if line.contains("Socket errors") { throw HarnessError("wrk: \(line.trimmed)") }
            if words.count == 2, ["50%", "99%"].contains(words[0]), let value = Self.microseconds(words[1]) {
                percentiles[String(words[0])] = value
            }
            if words.first == "Latency", words.count >= 4, let value = Self.microseconds(words[3]) { maximum = value }
        }
        guard let requests, let rate, requests > 0 else { throw HarnessError("wrk: no result in its output:\n\(text)") }
        self.requests = requests
        self.requestsPerSecond = rate
        if let p50 = percentiles["50%"], let p99 = percentiles["99%"] {
            // wrk's --latency prints 50/75/90/99%: no 99.9th percentile.
            self.latency = LatencySummary(p50: p50, p99: p99, p999: nil, max: maximum ?? p99)
        }
    }

    /// `123.45us`, `1.23ms`, `2.00s` in microseconds.
    static func microseconds(_ text: Substring) -> Double? {
        for (suffix, scale) in [("us", 1.0), ("ms", 1e3), ("s", 1e6)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmed: String { String(self.drop(while: { $0 == " " })) }
}
