// swift-tools-version:6.1
//===----------------------------------------------------------------------===//
// RingIO — examples: small servers written to be read, each in one sitting, on RingIO's public
// API only. A package of its own, so that RingIO's users resolve none of it.
//
// Run:    swift run --package-path Examples echo-server          (chat-server, http-server,
//         tcp-proxy, rope-tour; each file's top comment says what it teaches)
// Test:   swift test --package-path Examples
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import PackageDescription

let package = Package(
    name: "Examples",
    products: [
        .executable(name: "echo-server", targets: ["EchoServer"]),
        .executable(name: "chat-server", targets: ["ChatServer"]),
        .executable(name: "http-server", targets: ["HTTPServer"]),
        .executable(name: "tcp-proxy", targets: ["TCPProxy"]),
        .executable(name: "rope-tour", targets: ["RopeTour"]),
    ],
    dependencies: [
        // The repository's package. `name:` keeps `package: "RingIO"` below valid whatever the
        // checkout's directory is called. In a package of your own:
        // `.package(name: "RingIO", path: "../RingIO")`, a clone beside it (no release yet).
        .package(name: "RingIO", path: "..")
    ],
    targets: [
        // Async/await: a listener, a task per connection, a graceful stop on Ctrl-C.
        .executableTarget(name: "EchoServer", dependencies: [.product(name: "RingIO", package: "RingIO")]),
        // Fan-out with back-pressure (queuedWriteBytes) and an idle timeout (reads(idleTimeout:)).
        .executableTarget(name: "ChatServer", dependencies: [.product(name: "RingIO", package: "RingIO")]),
        // HTTP/1.1 with RingHTTP's parser: keep-alive, pipelining, a hello and static files.
        .executableTarget(
            name: "HTTPServer",
            dependencies: [
                .product(name: "RingIO", package: "RingIO"),
                .product(name: "RingHTTP", package: "RingIO"),
            ]
        ),
        // A proxy that forwards the bytes it receives without copying them.
        .executableTarget(name: "TCPProxy", dependencies: [.product(name: "RingIO", package: "RingIO")]),
        // ByteRope, the data every read hands you.
        .executableTarget(name: "RopeTour", dependencies: [.product(name: "ByteRopes", package: "RingIO")]),
        // Each example as a process, with real clients (python3, curl) on loopback.
        .testTarget(
            name: "ExamplesTests",
            dependencies: ["EchoServer", "ChatServer", "HTTPServer", "TCPProxy", "RopeTour"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
