// swift-tools-version:6.1
//===----------------------------------------------------------------------===//
// RingIO — the TLS peers of the throughput comparison: a package of their own, because
// swift-nio-ssl compiles BoringSSL, which would lengthen every build of the Benchmarks package
// (CI's longest chain) by minutes. `throughput` builds it when a TLS workload is selected:
//
//     swift build -c release --package-path Benchmarks/TLSPeers
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import PackageDescription

let package = Package(
    name: "TLSPeers",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // The HTTPS hello baseline: SwiftNIO's HTTP/1.1 pipeline behind NIOSSL's server
        // handler, on one event loop.
        .executableTarget(
            name: "nio-ssl-server",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/NIOSSLServer"
        )
    ],
    swiftLanguageModes: [.v6]
)
