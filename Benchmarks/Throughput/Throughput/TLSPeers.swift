//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the TLS peers' package, built on demand.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation
import ThroughputSupport

/// Benchmarks/TLSPeers: SwiftNIO + NIOSSL's HTTPS server. A package of its own, so that
/// swift-nio-ssl's BoringSSL (minutes of C on a clean build) is compiled only by those who run
/// the TLS group; `throughput` builds it in release before it measures anything (a no-op when
/// it is up to date).
enum TLSPeers {
    /// The package's folder: next to this source's package (`#filePath`), as the results folder.
    static var packagePath: String {
        // #filePath: <Benchmarks package>/Throughput/Throughput/TLSPeers.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("TLSPeers").path
    }

    /// Builds the package in release (its output on standard error) and returns the folder of
    /// its executables.
    static func build() throws -> String {
        let package = Self.packagePath
        guard FileManager.default.fileExists(atPath: package + "/Package.swift") else {
            throw HarnessError("the TLS group needs the TLSPeers package, which is not at \(package)")
        }
        guard let swift = findExecutable("swift") else { throw HarnessError("the TLS group needs swift on PATH") }
        printToStandardError("Building the TLS peers (swift build -c release --package-path \(package))…")
        _ = try Self.swift(swift, ["build", "-c", "release", "--package-path", package], echo: true)
        let directory = try Self.swift(swift, ["build", "-c", "release", "--package-path", package, "--show-bin-path"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard access("\(directory)/nio-ssl-server", X_OK) == 0 else {
            throw HarnessError("no nio-ssl-server in \(directory) after the build")
        }
        return directory
    }

    /// Runs `swift arguments` (not pinned: a build uses every core) and returns its standard
    /// output; `echo`: its output goes to standard error as it comes instead.
    private static func swift(_ swift: String, _ arguments: [String], echo: Bool = false) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: swift)
        process.arguments = arguments
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let pipe = Pipe()
        process.standardOutput = echo ? FileHandle.standardError : pipe
        try process.run()
        let output = echo ? Data() : pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw HarnessError("swift \(arguments.joined(separator: " ")) failed (status \(process.terminationStatus))")
        }
        return String(decoding: output, as: UTF8.self)
    }
}
