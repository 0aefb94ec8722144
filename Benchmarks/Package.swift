// swift-tools-version:6.1
//===----------------------------------------------------------------------===//
// RingIO — benchmarks (a package of its own, so package-benchmark never reaches RingIO's users).
//
// Run:    cd Benchmarks && swift package benchmark
// Check:  bash Benchmarks/run-threshold-check.sh      (see README.md)
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import PackageDescription

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // Traits named explicitly: package-benchmark's default traits add "RuntimeInterposer", which
        // on Linux with Swift 6.3 pulls in ordo-one/swift-runtime-interposer (ARC metrics, which we do
        // not use) — and that repository is not in the package mirror, so resolution would fail.
        // "MallocInterposer" alone gives the malloc counts the checked benchmarks need, with no
        // system library (no jemalloc).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // The parent package. `name:` keeps `package: "RingIO"` below valid whatever the checkout's
        // directory is called (a path dependency's identity is otherwise its directory name).
        // The ServiceLifecycle trait: the servers' SIGINT/SIGTERM through a ServiceGroup
        // (RingIOServiceLifecycle).
        .package(name: "RingIO", path: "..", traits: ["ServiceLifecycle"]),
        // `Errno` in IOChannel's handlers (already resolved: RingIO and package-benchmark use it).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The throughput comparison and the servers: their command lines, and the SwiftNIO
        // baselines.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The servers' shutdown on SIGINT/SIGTERM (a ServiceGroup) and http-server's access log.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // The throughput comparison's Hummingbird 2 baseline (hummingbird-server). Its default
        // traits are off: swift-configuration support and full Foundation serve nothing here,
        // and every clean build (CI's) would compile them.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
    ],
    targets: [
        .executableTarget(
            name: "ByteRopeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ByteRopes", package: "RingIO"),
            ],
            path: "Benchmarks/ByteRopeBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
        // The engine: no-op round trips (through `@_spi(Benchmarking)`) and a 64-byte socketpair
        // ping-pong, RingIO's IOChannel beside DispatchSource and DispatchIO.
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                "IOBenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
        // Channels: a large file read (beside DispatchIO; fio through run-fio-baseline.sh) and
        // socketpair streaming of 64 KiB ropes (beside DispatchIO).
        .executableTarget(
            name: "ChannelBenchmarks",
            dependencies: [
                "IOBenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Benchmarks/ChannelBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
        // What the I/O benchmarks share: configurations, fixtures built in setup, socketpairs, the
        // large test file and its readers. A library, so package-benchmark does not take it for a
        // benchmark executable.
        .target(
            name: "IOBenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "RingIO", package: "RingIO"),
            ],
            path: "Benchmarks/IOBenchmarkSupport"
        ),

        // MARK: The throughput comparison (Throughput/README.md; not package-benchmark targets:
        // the plugin runs only executables whose folder sits directly in Benchmarks/Benchmarks).

        // `swift run -c release --package-path Benchmarks throughput`: builds nothing itself; its
        // dependencies on the servers, the load generator and the file reader make `swift run`
        // build them.
        .executableTarget(
            name: "throughput",
            dependencies: [
                "ThroughputSupport",
                "loadgen",
                "file-read",
                "dispatch-echo-server",
                "nio-server",
                "hummingbird-server",
                "uring-echo-server",
                "uring-udp-echo-server",
                "udp-echo-server",
                "naive-task-echo-server",
                "connect-client",
                "echo-server",
                "http-server",
                "tcp-proxy",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/Throughput"
        ),
        // The echo server a newcomer writes first: an unstructured Task per connection.
        .executableTarget(
            name: "naive-task-echo-server",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/NaiveTaskEchoServer"
        ),
        // Socket-pair echo on 1 ring and on 2 rings in one process: does a second ring slow
        // the first down? (`swift run -c release --package-path Benchmarks ring-scaling`.)
        .executableTarget(
            name: "ring-scaling",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/RingScaling"
        ),
        // The load generator: N connections, ping-pong (depth 1 or pipelined), streaming,
        // HTTP and idle modes; checks every byte that comes back.
        .executableTarget(
            name: "loadgen",
            dependencies: [
                "CEpoll",
                "ThroughputSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/LoadGen"
        ),
        // <sys/epoll.h>, which Swift's Glibc module leaves out.
        .target(name: "CEpoll", path: "Throughput/CEpoll"),
        // A 2 GiB warm-cache read by a random-access IOChannel or DispatchIO, in its own process.
        .executableTarget(
            name: "file-read",
            dependencies: [
                "IOBenchmarkSupport",
                "ThroughputSupport",
                .product(name: "RingIO", package: "RingIO"),
            ],
            path: "Throughput/FileRead"
        ),
        // Baselines: the classic GCD echo server (DispatchSource accept, DispatchIO low water 1).
        .executableTarget(
            name: "dispatch-echo-server",
            dependencies: ["ThroughputSupport"],
            path: "Throughput/DispatchEchoServer"
        ),
        // Baselines: SwiftNIO echo (channel handlers, or NIOAsyncChannel with `--api async`),
        // HTTP/1.1 hello and UDP echo servers, and a connect client, on one event loop.
        .executableTarget(
            name: "nio-server",
            dependencies: [
                "ThroughputSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Throughput/NIOServer"
        ),
        // Baselines: a Hummingbird 2 HTTP/1.1 hello server (a Router, GET /) on one event loop.
        .executableTarget(
            name: "hummingbird-server",
            dependencies: [
                "ThroughputSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Throughput/HummingbirdServer"
        ),
        // Baselines: the physical reference, a minimal C liburing echo server (multishot accept
        // and recv into a provided buffer ring, sends straight from the received buffers).
        .executableTarget(
            name: "uring-echo-server",
            path: "Throughput/UringEchoServer",
            linkerSettings: [.linkedLibrary("uring")]
        ),
        // The physical reference for datagrams: a minimal C liburing UDP echo server (multishot
        // recvmsg into a provided buffer ring, each datagram sent back from its buffer).
        .executableTarget(
            name: "uring-udp-echo-server",
            path: "Throughput/UringUDPEchoServer",
            linkerSettings: [.linkedLibrary("uring")]
        ),
        // RingIO's UDP echo server on IODatagramChannel (handlers on the ring, or async).
        .executableTarget(
            name: "udp-echo-server",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/UDPEchoServer"
        ),
        // RingIO's connect client (connect, one exchange, close, in a loop): the process the
        // connect workload measures, beside `nio-server --protocol connect`.
        .executableTarget(
            name: "connect-client",
            dependencies: [
                "ThroughputSupport",
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Throughput/ConnectClient"
        ),
        // MARK: RingIO's servers (README.md, "RingIO's servers"): what the throughput comparison,
        // the soaks and the instruction counts run — every knob a measurement needs, on RingIO's
        // public API.

        // The echo server: handlers or async, on the rings or on Dispatch queues, plaintext or
        // TLS (RingTLS); SIGINT and SIGTERM through a ServiceGroup.
        .executableTarget(
            name: "echo-server",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "RingIOServiceLifecycle", package: "RingIO"),
                .product(name: "RingTLS", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Servers/EchoServer"
        ),
        // The HTTP/1.1 server: hello, static files (ranges, conditional requests), timeouts,
        // connection limits, an access log; HTTPS with RingTLS.
        .executableTarget(
            name: "http-server",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "RingHTTP", package: "RingIO"),
                .product(name: "RingIOServiceLifecycle", package: "RingIO"),
                .product(name: "RingTLS", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Servers/HTTPServer"
        ),
        // The zero-copy TCP proxy; TLS on either side (RingTLS).
        .executableTarget(
            name: "tcp-proxy",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "RingTLS", package: "RingIO"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Servers/TCPProxy"
        ),
        // Runs the servers as processes, with real clients (curl, Python, socat, wrk); depends on
        // them so that `swift test --package-path Benchmarks` builds them; RingIO only to tell
        // whether a ring can be set up here.
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "echo-server",
                "http-server",
                "tcp-proxy",
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/ServerTests"
        ),

        // What the throughput tools share: /proc readings, latency histograms, results, ports, the
        // static files' byte pattern, the connect clients' measurement.
        .target(
            name: "ThroughputSupport",
            path: "Throughput/ThroughputSupport"
        ),
    ],
    swiftLanguageModes: [.v6]
)
