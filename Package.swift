// swift-tools-version:6.1
//===----------------------------------------------------------------------===//
// RingIO — Apple's dispatch I/O model on io_uring, for Linux.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import PackageDescription

// Compile-time switches (pass with `-Xswiftc -D<NAME>`):
//
// - BYTEROPES_INTERNAL_CHECKS: every ByteRope mutation re-validates the whole tree
//   (heights, fill factors, cached counts, no empty regions). Costs O(n) per operation:
//   for debugging only. The test suite calls the same validation explicitly instead.
let package = Package(
    name: "RingIO",
    products: [
        .library(name: "ByteRopes", targets: ["ByteRopes"]),
        .library(name: "ByteRopesFoundationCompat", targets: ["ByteRopesFoundationCompat"]),
        .library(name: "RingIO", targets: ["RingIO"]),
        .library(name: "RingHTTP", targets: ["RingHTTP"]),
        .library(name: "RingIOServiceLifecycle", targets: ["RingIOServiceLifecycle"]),
        .library(name: "RingTLS", targets: ["RingTLS"]),
        .executable(name: "rope-tour", targets: ["RopeTour"]),
        .executable(name: "echo-server", targets: ["EchoServer"]),
        .executable(name: "http-server", targets: ["HTTPServer"]),
        .executable(name: "tcp-proxy", targets: ["TCPProxy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The example servers' command lines (not a dependency of the libraries).
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The HTTP server example's logging (not a dependency of the libraries).
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // `swift package generate-documentation` (DocC); a command plugin, not a dependency of
        // any target.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // RingIOServiceLifecycle only (and the examples through it): RingIO does not depend on it.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // liburing, through a header-only shim whose include order matters (CLiburing.h says why).
        .systemLibrary(
            name: "CLiburing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        // OpenSSL 3 (libssl-dev), imported as liburing is: a shim that includes glibc's headers
        // first and adds only what the importer cannot see (Sources/CRingOpenSSL/CRingOpenSSL.h).
        .systemLibrary(
            name: "CRingOpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The rope: no C module of ours, no ring.
        .target(name: "ByteRopes"),
        // Foundation `Data` interop, kept out of ByteRopes so the rope stays light.
        .target(name: "ByteRopesFoundationCompat", dependencies: ["ByteRopes"]),
        // The engine, channels, sources, listeners and connections. Re-exports ByteRopes.
        .target(
            name: "RingIO",
            dependencies: [
                "CLiburing",
                "ByteRopes",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // HTTP/1.1 request parsing and response writing over ByteRope; no ring, no C module.
        .target(name: "RingHTTP", dependencies: ["ByteRopes"]),
        // A swift-service-lifecycle Service for servers built on IOListener: a product of its
        // own, so that RingIO keeps its small set of dependencies.
        .target(
            name: "RingIOServiceLifecycle",
            dependencies: [
                "RingIO",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // TLS streams over RingIO's channels, on OpenSSL: a product of its own, so that RingIO
        // keeps its small set of dependencies.
        .target(
            name: "RingTLS",
            dependencies: [
                "RingIO",
                "CRingOpenSSL",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(name: "RopeTour", dependencies: ["ByteRopes"], path: "Examples/RopeTour"),
        // The echo server: RingIO's public API only (SIGINT/SIGTERM through a ServiceGroup).
        .executableTarget(
            name: "EchoServer",
            dependencies: [
                "RingIO",
                "RingIOServiceLifecycle",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/EchoServer"
        ),
        // The HTTP/1.1 server: RingIO and RingHTTP's public API only.
        .executableTarget(
            name: "HTTPServer",
            dependencies: [
                "RingIO",
                "RingHTTP",
                "RingIOServiceLifecycle",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/HTTPServer"
        ),
        // The zero-copy TCP proxy: RingIO's public API only.
        .executableTarget(
            name: "TCPProxy",
            dependencies: ["RingIO", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/TCPProxy"
        ),
        .testTarget(name: "ByteRopesTests", dependencies: ["ByteRopes", "ByteRopesFoundationCompat"]),
        // What the test suites share: waits on events (a ring barrier), descriptors, recorders
        // of handler calls (Tests/RingIOTestSupport/RingIOTestSupport.swift). Not a product.
        .target(
            name: "RingIOTestSupport",
            dependencies: ["RingIO", .product(name: "SystemPackage", package: "swift-system")],
            path: "Tests/RingIOTestSupport"
        ),
        .testTarget(name: "RingIOTests", dependencies: ["RingIO", "RingIOTestSupport"]),
        .testTarget(
            name: "RingTLSTests",
            dependencies: [
                "RingTLS",
                "RingIO",
                "RingIOTestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "RingHTTPTests", dependencies: ["RingHTTP", "ByteRopes", "RingIOTestSupport"]),
        .testTarget(
            name: "RingIOServiceLifecycleTests",
            dependencies: [
                "RingIO",
                "RingIOServiceLifecycle",
                "RingIOTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Runs the example servers as processes, with real clients; depends on them so that
        // `swift test` builds them; RingIO only to tell whether io_uring is available here.
        .testTarget(
            name: "ExamplesTests",
            dependencies: ["EchoServer", "HTTPServer", "TCPProxy", "RingIO", "RingIOTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
