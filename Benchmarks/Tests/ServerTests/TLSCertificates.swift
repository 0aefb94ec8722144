//===----------------------------------------------------------------------===//
// RingIO — server tests: certificates for the TLS servers, made at run time.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A test CA and a server certificate it signed, for "localhost" and 127.0.0.1 (ECDSA P-256,
/// valid for two days), made with the `openssl` command in a temporary directory that is
/// removed with the value: no private key is committed.
final class TestCertificates {
    let directory: String

    /// The CA's certificate: what clients trust (`curl --cacert`, `-CAfile`, `cafile=`).
    var caCertificate: String { self.directory + "/ca.pem" }
    /// The server's certificate and key (`--tls-certificate`, `--tls-key`).
    var serverCertificate: String { self.directory + "/server.pem" }
    var serverKey: String { self.directory + "/server.key" }

    /// The servers' TLS options.
    var serverOptions: [String] { ["--tls-certificate", self.serverCertificate, "--tls-key", self.serverKey] }

    init() throws {
        var template = Array("/tmp/server-tests-tls.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        self.directory = try #require(made)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + curve + [
                "-keyout", self.directory + "/ca.key", "-out", self.caCertificate, "-days", "2",
                "-subj", "/CN=RingIO Server Tests CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ]
        )
        try Self.openssl(
            ["req"] + curve + [
                "-keyout", self.serverKey, "-out", self.directory + "/server.csr", "-subj", "/CN=localhost",
            ]
        )
        try writeFile(
            self.directory + "/server.ext",
            Array(
                ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                    + "subjectAltName=DNS:localhost,IP:127.0.0.1\n").utf8
            )
        )
        try Self.openssl([
            "x509", "-req", "-in", self.directory + "/server.csr", "-CA", self.caCertificate,
            "-CAkey", self.directory + "/ca.key", "-CAcreateserial", "-out", self.serverCertificate,
            "-days", "2", "-extfile", self.directory + "/server.ext",
        ])
    }

    deinit {
        _ = runTool("rm", ["-rf", self.directory], seconds: 10)
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = runTool("openssl", arguments, seconds: 30)
        try #require(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result)")
    }
}

/// Whether the `openssl` command is here: the TLS suites make their certificates with it.
let opensslExists = toolExists("openssl")
