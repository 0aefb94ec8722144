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
    ],
    // A package that depends on RingIO resolves only what the traits it enables need: with none
    // (the default), swift-system alone. The examples and the benchmarks are packages of their
    // own (Examples/, Benchmarks/), with their dependencies.
    traits: [
        .trait(
            name: "ServiceLifecycle",
            description: """
                RingIOServiceLifecycle's IOListenerService, on swift-service-lifecycle (which the \
                package then resolves). Off by default: the RingIOServiceLifecycle product is \
                empty without it.
                """
        )
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation` (DocC); a command plugin, not a dependency of
        // any target (a package that depends on RingIO does not resolve it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // RingIOServiceLifecycle only, and only with the ServiceLifecycle trait (the test target
        // also uses swift-log, which swift-service-lifecycle depends on).
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
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
        // own, with the ServiceLifecycle trait, so that RingIO keeps its small set of
        // dependencies.
        .target(
            name: "RingIOServiceLifecycle",
            dependencies: [
                "RingIO",
                .product(
                    name: "ServiceLifecycle",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])
                ),
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
                .product(
                    name: "ServiceLifecycle",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])
                ),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
