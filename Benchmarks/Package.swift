// swift-tools-version:6.1
//===----------------------------------------------------------------------===//
// RingIO — benchmarks (a package of its own, so package-benchmark never reaches RingIO's users).
//
// Run:    cd Benchmarks && swift package benchmark
// Check:  bash Benchmarks/run-threshold-check.sh      (see README.md)
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
        .package(name: "RingIO", path: ".."),
        // `Errno` in IOChannel's handlers (already resolved: RingIO and package-benchmark use it).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
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
        // What the I/O benchmarks share: configurations, fixtures built in setup, socketpairs.
        // A library, so package-benchmark does not take it for a benchmark executable.
        .target(
            name: "IOBenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark")
            ],
            path: "Benchmarks/IOBenchmarkSupport"
        ),
    ],
    swiftLanguageModes: [.v6]
)
