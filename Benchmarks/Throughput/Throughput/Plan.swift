//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: what is measured, against whom, for how long.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation
import ThroughputSupport

/// A server under comparison.
struct ServerSpec: Sendable {
    /// Short key, used in JSON and on the command line (`--servers`).
    var key: String
    /// What the report calls it.
    var name: String
    /// Runs only in the workloads that name it (``Workload/servers``), not in every workload of
    /// its group: a variant of another server, compared with it on one workload.
    var dedicated = false
    /// RingIO's own: runs once per engine of `--backend` (``Plan/onBackends(_:_:)``). The peers
    /// (C liburing, SwiftNIO, Dispatch, Hummingbird, nginx, fio) are not.
    var ringIO = false
    /// How it is started: the argument vector for a port (run under `taskset`).
    var arguments: @Sendable (_ binaries: Binaries, _ port: Int, _ scratch: String) -> [String]
    /// Set up before the first start (nginx's configuration), if anything.
    var prepare: (@Sendable (_ port: Int, _ scratch: String) throws -> Void)? = nil
    /// The engine a RingIO server runs on (``Plan/onBackends(_:_:)`` sets it); `nil` for the peers.
    var backend: Backend? = nil
    /// Set in its environment, over the harness's own (`RINGIO_BACKEND` for RingIO's servers).
    var environment: [String: String] = [:]
    /// How the harness tells that it is up: it accepts TCP connections on its port, or (a UDP
    /// server) it echoes a datagram sent there.
    var transport = Transport.tcp

    enum Transport: Sendable {
        case tcp
        case udp
    }

    /// This RingIO server on `backend`: its key and name with the engine's suffix (none on
    /// io_uring, the reference rows), `RINGIO_BACKEND` in its environment.
    func on(_ backend: Backend) -> ServerSpec {
        var spec = self
        spec.key += backend.keySuffix
        spec.name += backend.nameSuffix
        spec.backend = backend
        spec.environment[Backend.variable] = backend.rawValue
        return spec
    }
}

/// The engine RingIO's processes run on (`--backend`): `RINGIO_BACKEND` in their environment.
enum Backend: String, Codable, Sendable, CaseIterable {
    case ioUring = "io_uring"
    /// The readiness engine (epoll, non-blocking system calls), where io_uring is refused.
    case epoll

    /// The environment variable RingIO reads to force an engine.
    static let variable = "RINGIO_BACKEND"

    /// After a RingIO server's key: nothing on io_uring (`ringio`), `-epoll` (`ringio-epoll`).
    var keySuffix: String { self == .ioUring ? "" : "-\(self.rawValue)" }
    /// After its name: nothing on io_uring (`RingIO`), ` (epoll)` (`RingIO (epoll)`).
    var nameSuffix: String { self == .ioUring ? "" : " (\(self.rawValue))" }
}

/// Where the executables are: `swift run -c release --package-path Benchmarks throughput`
/// builds them all next to `throughput` itself; the TLS peers' package (Benchmarks/TLSPeers)
/// is built on demand, into a folder of its own.
struct Binaries: Sendable {
    var directory: String
    /// Where `nio-ssl-server` is, once TLSPeers is built (``TLSPeers/build()``).
    var tlsPeersDirectory: String? = nil
    func path(_ name: String) -> String { "\(self.directory)/\(name)" }
    func tlsPeer(_ name: String) -> String { "\(self.tlsPeersDirectory ?? "TLSPeers-not-built")/\(name)" }
}

enum WorkloadGroup: String, Codable, Sendable, CaseIterable {
    case echo, http
    /// Static files over HTTP (`--only static`): RingIO's http-server with `--root` beside nginx.
    case staticFiles = "static"
    /// UDP echo servers (`--only udp`).
    case udp
    /// TCP proxies between the load generator and the C echo server (`--only proxy`).
    case proxy
    /// Connect clients against the C echo server: the clients are measured (`--only connect`).
    case connect
    case file
    /// HTTPS (`--only tls`): RingIO's http-server with RingTLS beside nginx and NIOSSL.
    case tls
}

/// How a workload loads a server.
enum WorkloadKind: Sendable {
    /// The load generator: `mode`, connections, message size, messages in flight per connection.
    case loadgen(mode: String, connections: Int, size: Int, depth: Int)
    /// wrk, keep-alive GET /, one thread.
    case wrk(connections: Int)
    /// Keep-alive GETs of `/<file>`, a file of `bytes` bytes of ``StaticFilePattern`` in the
    /// document root, by the load generator checking every body's length and bytes; with `wrk`,
    /// that check doubles as the warm-up and wrk (one thread) measures.
    case staticFile(file: String, bytes: Int, connections: Int, wrk: Bool)
    /// Connect clients, each `concurrency` connections under way (connect, `size` bytes out and
    /// back, close), against the C echo server on the load generator's CPU: the client is the
    /// process measured.
    case connects(concurrency: Int, size: Int)
    /// A whole warm-cache file read.
    case file
    /// wrk over HTTPS, keep-alive GET /, one thread.
    case https(connections: Int)
    /// `openssl s_time -new`: one TLS connection after another, each a full handshake, then
    /// `close_notify` and close; the server's CPU per connection.
    case handshakes
}

/// What the report leads with for a workload.
enum PrimaryFigure: String, Codable, Sendable {
    /// Operations per second (round trips, requests).
    case operations
    /// Megabytes (10⁶ bytes) per second.
    case megabytes
}

struct Workload: Sendable {
    var key: String
    var title: String
    var group: WorkloadGroup
    var kind: WorkloadKind
    var primary: PrimaryFigure
    /// What one operation is, for the report's units ("round trip", "request").
    var operation: String
    /// The keys of the servers that run it, in order; `nil`: every server of its group that is
    /// not dedicated to other workloads.
    var servers: [String]? = nil

    /// The servers of `specs` (its group's) that run this workload.
    func servers(of specs: [ServerSpec]) -> [ServerSpec] {
        guard let keys = self.servers else { return specs.filter { !$0.dedicated } }
        // A RingIO key names that server on every engine of the run.
        return keys.flatMap { key in
            specs.filter { spec in spec.key == key || spec.backend.map { key + $0.keySuffix == spec.key } == true }
        }
    }
}

/// The durations and sizes of a run: `--quick`, the default (full), or `--smoke` (CI).
struct Timing: Sendable, Codable {
    var name: String
    var repeats: Int
    var warmup: Double
    var duration: Double
    var idleConnections: Int
    var filePasses: Int
    /// The size of the file read, bytes.
    var fileBytes: Int

    static let full = Timing(
        name: "full",
        repeats: 5,
        warmup: 0.5,
        duration: 3,
        idleConnections: 10_000,
        filePasses: 3,
        fileBytes: 2 << 30
    )
    static let quick = Timing(
        name: "quick",
        repeats: 2,
        warmup: 0.25,
        duration: 0.75,
        idleConnections: 10_000,
        filePasses: 1,
        fileBytes: 2 << 30
    )
    /// Proves the harness and every server work (CI), measures nothing worth reading.
    static let smoke = Timing(
        name: "smoke",
        repeats: 1,
        warmup: 0.1,
        duration: 0.3,
        idleConnections: 500,
        filePasses: 1,
        fileBytes: 64 << 20
    )
}

enum Plan {
    /// `specs` with each RingIO server once per engine of `backends`, in that order, where it
    /// was; the peers as they are.
    static func onBackends(_ specs: [ServerSpec], _ backends: [Backend]) -> [ServerSpec] {
        specs.flatMap { spec in spec.ringIO ? backends.map { spec.on($0) } : [spec] }
    }

    static let echoServers: [ServerSpec] = [
        ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, _ in
            [binaries.path("echo-server"), "--port", "\(port)", "--rings", "1", "--api", "handlers", "--queue", "ring"]
        },
        ServerSpec(key: "ringio-async", name: "RingIO async", ringIO: true) { binaries, port, _ in
            [binaries.path("echo-server"), "--port", "\(port)", "--rings", "1", "--api", "async"]
        },
        // The same server with the delivery interval of the classic GCD server (10 ms, strict) on
        // every connection: what an interval costs per read and write.
        ServerSpec(
            key: "ringio-interval",
            name: "RingIO, 10 ms strict interval",
            dedicated: true,
            ringIO: true,
            arguments: { binaries, port, _ in
                [
                    binaries.path("echo-server"), "--port", "\(port)", "--rings", "1", "--api", "handlers",
                    "--queue", "ring", "--interval", "10", "--strict",
                ]
            }
        ),
        // What a newcomer writes first: `for try await c in listener.connections() { Task { … } }`.
        ServerSpec(key: "ringio-naive-task", name: "RingIO, naive Task {}", dedicated: true, ringIO: true) {
            binaries,
            port,
            _ in
            [binaries.path("naive-task-echo-server"), "--port", "\(port)", "--rings", "1"]
        },
        ServerSpec(key: "uring", name: "C liburing") { binaries, port, _ in
            [binaries.path("uring-echo-server"), "--port", "\(port)"]
        },
        ServerSpec(key: "nio", name: "SwiftNIO") { binaries, port, _ in
            [binaries.path("nio-server"), "--protocol", "echo", "--port", "\(port)"]
        },
        ServerSpec(key: "nio-async", name: "SwiftNIO async") { binaries, port, _ in
            [binaries.path("nio-server"), "--protocol", "echo", "--api", "async", "--port", "\(port)"]
        },
        ServerSpec(key: "dispatch", name: "Dispatch") { binaries, port, _ in
            [binaries.path("dispatch-echo-server"), "--port", "\(port)"]
        },
    ]

    static func httpServers(nginx: String?) -> [ServerSpec] {
        var servers = [
            ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, scratch in
                [
                    binaries.path("http-server"), "--port", "\(port)", "--rings", "1", "--api", "handlers",
                    "--root", scratch,
                ]
            },
            ServerSpec(key: "ringio-async", name: "RingIO async", ringIO: true) { binaries, port, scratch in
                [
                    binaries.path("http-server"), "--port", "\(port)", "--rings", "1", "--api", "async",
                    "--root", scratch,
                ]
            },
            ServerSpec(key: "nio", name: "SwiftNIO") { binaries, port, _ in
                [binaries.path("nio-server"), "--protocol", "http", "--port", "\(port)"]
            },
            ServerSpec(key: "hummingbird", name: "Hummingbird") { binaries, port, _ in
                [binaries.path("hummingbird-server"), "--port", "\(port)"]
            },
        ]
        if let nginx {
            servers.append(
                ServerSpec(
                    key: "nginx",
                    name: "nginx",
                    arguments: { _, _, scratch in
                        [
                            nginx, "-p", "\(scratch)/nginx", "-e", "\(scratch)/nginx/error.log", "-c",
                            "\(scratch)/nginx/nginx.conf",
                        ]
                    },
                    prepare: { port, scratch in try NginxConfiguration.write(port: port, directory: "\(scratch)/nginx")
                    }
                )
            )
        }
        return servers
    }

    /// The static-file servers, serving `<scratch>/static` (``StaticFiles/directory(scratch:)``):
    /// RingIO's http-server as in the HTTP group, and nginx with `sendfile on` (its
    /// `open_file_cache` only when `openFileCache`). SwiftNIO and Hummingbird have no file
    /// serving in their baselines here: they are not in this group.
    static func staticServers(nginx: String?, openFileCache: Bool) -> [ServerSpec] {
        var servers = [
            ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, scratch in
                [
                    binaries.path("http-server"), "--port", "\(port)", "--rings", "1", "--api", "handlers",
                    "--root", StaticFiles.directory(scratch: scratch),
                ]
            },
            ServerSpec(key: "ringio-async", name: "RingIO async", ringIO: true) { binaries, port, scratch in
                [
                    binaries.path("http-server"), "--port", "\(port)", "--rings", "1", "--api", "async",
                    "--root", StaticFiles.directory(scratch: scratch),
                ]
            },
        ]
        if let nginx {
            servers.append(
                ServerSpec(
                    key: "nginx",
                    name: openFileCache ? "nginx (open_file_cache)" : "nginx",
                    arguments: { _, _, scratch in
                        [
                            nginx, "-p", "\(scratch)/nginx-static", "-e", "\(scratch)/nginx-static/error.log", "-c",
                            "\(scratch)/nginx-static/nginx.conf",
                        ]
                    },
                    prepare: { port, scratch in
                        try NginxConfiguration.writeStatic(
                            port: port,
                            directory: "\(scratch)/nginx-static",
                            root: StaticFiles.directory(scratch: scratch),
                            openFileCache: openFileCache
                        )
                    }
                )
            )
        }
        return servers
    }

    /// The HTTPS servers, all with the same ECDSA P-256 certificate (``TLSCredentials``), TLS
    /// 1.3 with AES-128-GCM, no session tickets: RingIO's http-server (RingTLS), nginx (one
    /// worker), and SwiftNIO with NIOSSL (from the TLSPeers package).
    static func tlsServers(nginx: String?) -> [ServerSpec] {
        var servers = [
            ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, scratch in
                [
                    binaries.path("http-server"), "--port", "\(port)", "--rings", "1",
                    "--tls-certificate", TLSCredentials.certificate(scratch: scratch),
                    "--tls-key", TLSCredentials.key(scratch: scratch),
                    "--tls-ciphersuites", TLSCredentials.cipherSuite, "--no-tls-session-tickets",
                ]
            },
            ServerSpec(key: "nio-ssl", name: "SwiftNIO + NIOSSL") { binaries, port, scratch in
                [
                    binaries.tlsPeer("nio-ssl-server"), "--port", "\(port)",
                    "--certificate", TLSCredentials.certificate(scratch: scratch),
                    "--key", TLSCredentials.key(scratch: scratch),
                ]
            },
        ]
        if let nginx {
            servers.append(
                ServerSpec(
                    key: "nginx",
                    name: "nginx",
                    arguments: { _, _, scratch in
                        [
                            nginx, "-p", "\(scratch)/nginx-tls", "-e", "\(scratch)/nginx-tls/error.log", "-c",
                            "\(scratch)/nginx-tls/nginx.conf",
                        ]
                    },
                    prepare: { port, scratch in
                        try NginxConfiguration.writeTLS(port: port, directory: "\(scratch)/nginx-tls", scratch: scratch)
                    }
                )
            )
        }
        return servers
    }

    /// The file readers are not servers; they reuse the type for their names, and for
    /// file-read's arguments after its path (the reader).
    static func fileReaders(fio: String?) -> [ServerSpec] {
        var readers = [
            ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { _, _, _ in ["ringio"] },
            ServerSpec(key: "dispatchio", name: "DispatchIO") { _, _, _ in ["dispatchio"] },
        ]
        if fio != nil { readers.append(ServerSpec(key: "fio", name: "fio io_uring") { _, _, _ in [] }) }
        return readers
    }

    /// The UDP echo servers: RingIO's (handlers on the ring, and async), the C liburing one,
    /// SwiftNIO's (NIO's example, and the same with its gathering reads: `recvmmsg` of 30).
    static let udpServers: [ServerSpec] = [
        ServerSpec(
            key: "ringio",
            name: "RingIO",
            ringIO: true,
            arguments: { binaries, port, _ in
                [binaries.path("udp-echo-server"), "--port", "\(port)", "--rings", "1", "--api", "handlers"]
            },
            transport: .udp
        ),
        ServerSpec(
            key: "ringio-async",
            name: "RingIO async",
            ringIO: true,
            arguments: { binaries, port, _ in
                [binaries.path("udp-echo-server"), "--port", "\(port)", "--rings", "1", "--api", "async"]
            },
            transport: .udp
        ),
        ServerSpec(
            key: "uring",
            name: "C liburing",
            arguments: { binaries, port, _ in [binaries.path("uring-udp-echo-server"), "--port", "\(port)"] },
            transport: .udp
        ),
        ServerSpec(
            key: "nio",
            name: "SwiftNIO",
            arguments: { binaries, port, _ in
                [binaries.path("nio-server"), "--protocol", "udp-echo", "--port", "\(port)"]
            },
            transport: .udp
        ),
        ServerSpec(
            key: "nio-recvmmsg",
            name: "SwiftNIO, recvmmsg ×30",
            arguments: { binaries, port, _ in
                [
                    binaries.path("nio-server"), "--protocol", "udp-echo", "--vector-reads", "30", "--port",
                    "\(port)",
                ]
            },
            transport: .udp
        ),
    ]

    /// The upstream of the proxies: the C liburing echo server (pinned with them).
    static let proxyUpstream = ServerSpec(key: "upstream", name: "C liburing echo (upstream)") { binaries, port, _ in
        [binaries.path("uring-echo-server"), "--port", "\(port)"]
    }

    /// The TCP proxies, forwarding to the echo server on `upstream`: RingIO's tcp-proxy (one
    /// ring) and HAProxy (TCP mode, one thread) when installed.
    static func proxyServers(upstream: Int, haproxy: String?) -> [ServerSpec] {
        var servers = [
            ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, _ in
                [
                    binaries.path("tcp-proxy"), "--port", "\(port)", "--upstream", "127.0.0.1:\(upstream)", "--rings",
                    "1",
                ]
            }
        ]
        if let haproxy {
            servers.append(
                ServerSpec(
                    key: "haproxy",
                    name: "HAProxy",
                    arguments: { _, port, scratch in
                        [haproxy, "-db", "-f", "\(scratch)/haproxy-\(port)/haproxy.cfg"]
                    },
                    prepare: { port, scratch in
                        try HAProxyConfiguration.write(
                            port: port,
                            upstream: upstream,
                            directory: "\(scratch)/haproxy-\(port)"
                        )
                    }
                )
            )
        }
        return servers
    }

    /// The connect clients; their port is the echo server's. The harness adds the
    /// concurrency, the size, the timing and the echo server's pid.
    static let connectClients: [ServerSpec] = [
        ServerSpec(key: "ringio", name: "RingIO", ringIO: true) { binaries, port, _ in
            [binaries.path("connect-client"), "--port", "\(port)", "--api", "handlers"]
        },
        ServerSpec(key: "ringio-async", name: "RingIO async", ringIO: true) { binaries, port, _ in
            [binaries.path("connect-client"), "--port", "\(port)", "--api", "async"]
        },
        ServerSpec(key: "nio", name: "SwiftNIO") { binaries, port, _ in
            [binaries.path("nio-server"), "--protocol", "connect", "--port", "\(port)"]
        },
    ]

    /// The echo server the connect clients dial (on the load generator's CPU).
    static let connectEchoServer = ServerSpec(key: "echo", name: "C liburing echo") { binaries, port, _ in
        [binaries.path("uring-echo-server"), "--port", "\(port)"]
    }

    static let echoWorkloads: [Workload] = [
        Workload(
            key: "echo-64B",
            title: "Echo 64 B ping-pong, 64 connections",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 64, depth: 1),
            primary: .operations,
            operation: "round trip"
        ),
        Workload(
            key: "echo-64B-interval",
            title: "Echo 64 B ping-pong, 64 connections: a 10 ms strict interval beside none",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 64, depth: 1),
            primary: .operations,
            operation: "round trip",
            servers: ["ringio", "ringio-interval"]
        ),
        Workload(
            key: "echo-64B-async",
            title: "Echo 64 B ping-pong, 64 connections: handlers, serve, a naive Task {} per connection",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 64, depth: 1),
            primary: .operations,
            operation: "round trip",
            servers: ["ringio", "ringio-async", "ringio-naive-task", "nio-async"]
        ),
        Workload(
            key: "echo-4KiB",
            title: "Echo 4 KiB ping-pong, 64 connections",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 4096, depth: 1),
            primary: .operations,
            operation: "round trip"
        ),
        Workload(
            key: "echo-64KiB",
            title: "Echo 64 KiB ping-pong, 64 connections",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 65536, depth: 1),
            primary: .megabytes,
            operation: "round trip"
        ),
        Workload(
            key: "echo-64B-pipelined",
            title: "Echo 64 B pipelined ×16, 64 connections",
            group: .echo,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 64, depth: 16),
            primary: .operations,
            operation: "round trip"
        ),
        Workload(
            key: "echo-stream",
            title: "Echo streaming 64 KiB writes, 8 connections",
            group: .echo,
            kind: .loadgen(mode: "stream", connections: 8, size: 65536, depth: 1),
            primary: .megabytes,
            operation: "64 KiB"
        ),
    ]

    static func httpWorkloads(wrk: Bool) -> [Workload] {
        var workloads = [
            Workload(
                key: "http-hello",
                title: "HTTP/1.1 hello, keep-alive, 64 connections",
                group: .http,
                kind: .loadgen(mode: "http", connections: 64, size: 0, depth: 1),
                primary: .operations,
                operation: "request"
            ),
            Workload(
                key: "http-pipelined",
                title: "HTTP/1.1 hello, pipelined ×16, 64 connections",
                group: .http,
                kind: .loadgen(mode: "http", connections: 64, size: 0, depth: 16),
                primary: .operations,
                operation: "request"
            ),
        ]
        if wrk {
            workloads.append(
                Workload(
                    key: "http-hello-wrk",
                    title: "HTTP/1.1 hello, keep-alive, wrk -t1 -c64",
                    group: .http,
                    kind: .wrk(connections: 64),
                    primary: .operations,
                    operation: "request"
                )
            )
        }
        return workloads
    }

    /// A 16 KiB and a 1 MiB file, keep-alive, 16 connections: by the load generator (every body
    /// checked), and by wrk when installed (`wrk -t1 -c16`).
    static func staticFileWorkloads(wrk: Bool) -> [Workload] {
        StaticFiles.all.flatMap { file in
            [false, true].filter { !$0 || wrk }.map { byWrk in
                Workload(
                    key: file.workload + (byWrk ? "-wrk" : ""),
                    title: "Static file \(file.label), keep-alive GET, " + (byWrk ? "wrk -t1 -c16" : "16 connections"),
                    group: .staticFiles,
                    kind: .staticFile(file: file.name, bytes: file.bytes, connections: 16, wrk: byWrk),
                    primary: .operations,
                    operation: "request"
                )
            }
        }
    }

    /// UDP echo, 64 flows with one datagram outstanding each (as the TCP echo's 64 ping-pong
    /// connections), at 64 B and 1,400 B (a datagram that fits an Ethernet MTU).
    static let udpWorkloads: [Workload] = [64, 1_400].map { size in
        Workload(
            key: "udp-\(size)B",
            title: "UDP echo \(size == 64 ? "64" : "1,400") B, 64 flows, 1 outstanding each",
            group: .udp,
            kind: .loadgen(mode: "udp", connections: 64, size: size, depth: 1),
            primary: .operations,
            operation: "datagram"
        )
    }

    /// The proxies between the load generator and the echo server: ping-pong at 64 B and
    /// 64 KiB, and streaming.
    static let proxyWorkloads: [Workload] = [
        Workload(
            key: "proxy-64B",
            title: "TCP proxy, echo 64 B ping-pong, 64 connections",
            group: .proxy,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 64, depth: 1),
            primary: .operations,
            operation: "round trip"
        ),
        Workload(
            key: "proxy-64KiB",
            title: "TCP proxy, echo 64 KiB ping-pong, 64 connections",
            group: .proxy,
            kind: .loadgen(mode: "pingpong", connections: 64, size: 65536, depth: 1),
            primary: .megabytes,
            operation: "round trip"
        ),
        Workload(
            key: "proxy-stream",
            title: "TCP proxy, echo streaming 64 KiB writes, 8 connections",
            group: .proxy,
            kind: .loadgen(mode: "stream", connections: 8, size: 65536, depth: 1),
            primary: .megabytes,
            operation: "64 KiB"
        ),
    ]

    /// Connects: 32 at a time, each a 64-byte exchange with the echo server, then closed.
    static let connectWorkload = Workload(
        key: "connect",
        title: "Connects: connect, 64 B out and back, close; 32 at a time (client CPU)",
        group: .connect,
        kind: .connects(concurrency: 32, size: 64),
        primary: .operations,
        operation: "connection"
    )

    /// HTTPS hello by wrk (keep-alive, 64 connections: their 64 handshakes are in the
    /// window, a few hundredths of a percent of it), and new connections by `openssl s_time`.
    static func tlsWorkloads(wrk: Bool, sTime: Bool) -> [Workload] {
        var workloads: [Workload] = []
        if wrk {
            workloads.append(
                Workload(
                    key: "https-hello-wrk",
                    title: "HTTPS hello (TLS 1.3, AES-128-GCM), keep-alive, wrk -t1 -c64",
                    group: .tls,
                    kind: .https(connections: 64),
                    primary: .operations,
                    operation: "request"
                )
            )
        }
        if sTime {
            workloads.append(
                Workload(
                    key: "tls-handshakes",
                    title: "New TLS 1.3 connections, full handshakes (no resumption), openssl s_time -new",
                    group: .tls,
                    kind: .handshakes,
                    primary: .operations,
                    operation: "connection",
                    servers: ["ringio", "nginx"]
                )
            )
        }
        return workloads
    }

    static let fileWorkload = Workload(
        key: "file-read",
        title: "File read, warm cache",
        group: .file,
        kind: .file,
        primary: .megabytes,
        operation: "GB"
    )
}

/// The static-file workloads' files: their names, sizes and workloads.
enum StaticFiles {
    struct File {
        /// The load generator's workload; wrk's is this with `-wrk` after it.
        var workload: String
        var name: String
        var bytes: Int
        var label: String
    }

    static let all = [
        File(workload: "http-file-16k", name: "file-16KiB.bin", bytes: 16 << 10, label: "16 KiB"),
        File(workload: "http-file-1m", name: "file-1MiB.bin", bytes: 1 << 20, label: "1 MiB"),
    ]

    /// The document root the static servers serve.
    static func directory(scratch: String) -> String { "\(scratch)/static" }

    /// Writes every file (``StaticFilePattern``) into the document root.
    static func write(scratch: String) throws {
        let directory = Self.directory(scratch: scratch)
        try makeDirectory(directory)
        for file in Self.all {
            let bytes = StaticFilePattern.bytes(count: file.bytes)
            guard FileManager.default.createFile(atPath: "\(directory)/\(file.name)", contents: Data(bytes)) else {
                throw HarnessError("cannot write \(directory)/\(file.name)")
            }
        }
    }
}

/// The TLS workloads' certificate and key: ECDSA P-256, self-signed for "localhost" and
/// 127.0.0.1, made with `openssl req` in the scratch folder when the group runs (no key is
/// committed).
enum TLSCredentials {
    /// The TLS 1.3 cipher suite every server is held to.
    static let cipherSuite = "TLS_AES_128_GCM_SHA256"

    static func certificate(scratch: String) -> String { "\(scratch)/tls/certificate.pem" }
    static func key(scratch: String) -> String { "\(scratch)/tls/key.pem" }

    /// The clients' environment: an OpenSSL configuration (`OPENSSL_CONF`, which wrk and
    /// `openssl s_time` read when OpenSSL starts) whose TLS 1.3 suites are ``cipherSuite``
    /// alone. The servers are held to it too where they can be (RingIO, nginx); BoringSSL's
    /// suites cannot be configured, and it takes the client's first choice — OpenSSL's default
    /// list starts with AES-256-GCM — so the client's offer is what holds NIOSSL to it.
    static func clientEnvironment(scratch: String) -> [String: String] {
        ["OPENSSL_CONF": "\(scratch)/tls/client.cnf"]
    }

    /// Makes the certificate and key with `openssl` (which must be on PATH), and the clients'
    /// configuration.
    static func write(scratch: String, openssl: String) throws {
        try makeDirectory("\(scratch)/tls")
        try writeFile(
            "\(scratch)/tls/client.cnf",
            """
            openssl_conf = default_conf
            [default_conf]
            ssl_conf = ssl_sect
            [ssl_sect]
            system_default = system_default_sect
            [system_default_sect]
            Ciphersuites = \(Self.cipherSuite)

            """
        )
        _ = try runToCompletion(
            [
                openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", Self.key(scratch: scratch), "-out", Self.certificate(scratch: scratch), "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ],
            cpu: 0,
            timeout: 30,
            logDirectory: scratch
        )
    }
}

/// HAProxy in TCP mode with one thread, forwarding every connection to the echo server on
/// loopback: what its documentation's simplest TCP proxy is, its defaults otherwise (16 KiB
/// buffers, no splicing, no logging).
enum HAProxyConfiguration {
    static func write(port: Int, upstream: Int, directory: String) throws {
        let text = """
            global
                nbthread 1
                maxconn 4096
                pidfile \(directory)/haproxy.pid

            defaults
                mode tcp
                timeout connect 5s
                timeout client 300s
                timeout server 300s

            frontend proxy
                bind 127.0.0.1:\(port)
                default_backend upstream

            backend upstream
                server echo 127.0.0.1:\(upstream)

            """
        try makeDirectory(directory)
        try writeFile("\(directory)/haproxy.cfg", text)
    }
}

/// nginx with one worker, no access log, keep-alive without a request limit: answering every
/// request with 200 "Hello, World!" (as the other HTTP servers), or serving static files.
enum NginxConfiguration {
    static func write(port: Int, directory: String) throws {
        let text = """
            \(self.head(directory: directory))
                server {
                    listen 127.0.0.1:\(port) backlog=4096;
                    location / {
                        default_type text/plain;
                        return 200 "Hello, World!";
                    }
                }
            }

            """
        try makeDirectory(directory)
        try writeFile("\(directory)/nginx.conf", text)
    }

    /// A typical static configuration: `sendfile on`, `tcp_nopush on`, files under `root`;
    /// `open_file_cache` (descriptors, sizes and modification times kept, revalidated every
    /// 60 s) only when `openFileCache`: nginx leaves it off by default.
    static func writeStatic(port: Int, directory: String, root: String, openFileCache: Bool) throws {
        let cache =
            openFileCache
            ? "open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s; open_file_cache_errors on;"
            : "open_file_cache off;"
        let text = """
            \(self.head(directory: directory))
                sendfile on;
                tcp_nopush on;
                default_type application/octet-stream;
                \(cache)
                server {
                    listen 127.0.0.1:\(port) backlog=4096;
                    root \(root);
                    location / {
                    }
                }
            }

            """
        try makeDirectory(directory)
        try writeFile("\(directory)/nginx.conf", text)
    }

    /// HTTPS hello: TLS 1.2 or 1.3 with the certificate of ``TLSCredentials``, TLS 1.3 held to
    /// AES-128-GCM, no session tickets and no session cache (every handshake a full one).
    static func writeTLS(port: Int, directory: String, scratch: String) throws {
        let text = """
            \(self.head(directory: directory))
                server {
                    listen 127.0.0.1:\(port) ssl backlog=4096;
                    ssl_certificate \(TLSCredentials.certificate(scratch: scratch));
                    ssl_certificate_key \(TLSCredentials.key(scratch: scratch));
                    ssl_protocols TLSv1.2 TLSv1.3;
                    ssl_conf_command Ciphersuites \(TLSCredentials.cipherSuite);
                    ssl_conf_command NumTickets 0;
                    ssl_session_tickets off;
                    ssl_session_cache off;
                    location / {
                        default_type text/plain;
                        return 200 "Hello, World!";
                    }
                }
            }

            """
        try makeDirectory(directory)
        try writeFile("\(directory)/nginx.conf", text)
    }

    /// Everything up to the `server` block, the `http` block left open.
    private static func head(directory: String) -> String {
        """
        worker_processes 1;
        daemon off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        worker_rlimit_nofile 65536;
        events { worker_connections 20000; }
        http {
            access_log off;
            server_tokens on;
            keepalive_requests 100000000;
            keepalive_timeout 300s;
            client_body_temp_path \(directory)/body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
        """
    }
}
