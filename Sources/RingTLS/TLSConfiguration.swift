//===----------------------------------------------------------------------===//
// RingIO — RingTLS: what a TLS context is made of.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// How TLS connections are set up: certificates, trust, verification, protocols, resumption.
///
/// A value you fill in, then turn into a ``TLSContext`` (which does the work of loading and
/// checking it, once, for every connection that uses it):
///
///     var server = try TLSConfiguration.makeServerConfiguration(
///         certificateChainFile: "/etc/ssl/example/fullchain.pem",
///         privateKeyFile: "/etc/ssl/example/key.pem"
///     )
///     server.applicationProtocols = ["http/1.1"]
///     let context = try TLSContext(configuration: server)
///
///     var client = TLSConfiguration.makeClientConfiguration()   // system trust roots
///     client.applicationProtocols = ["h2", "http/1.1"]
///
/// **Defaults** are OpenSSL 3's secure ones: TLS 1.2 or 1.3 (nothing older), OpenSSL's cipher
/// lists and groups at the system's security level, no compression, no renegotiation. A client
/// verifies the server's certificate chain against the trust roots *and* its name against the
/// server name it was given; a server asks for no client certificate.
public struct TLSConfiguration: Sendable {
    /// How the peer's certificate is checked.
    public enum CertificateVerification: Sendable, Hashable {
        /// No check. On a server: no client certificate is asked for. On a client: any server
        /// is accepted — for tests only.
        case none
        /// The chain must lead to a trust root; the name is not checked. On a server: a client
        /// certificate is required and checked.
        case noHostnameVerification
        /// The chain must lead to a trust root, and (on a client) the certificate must be for
        /// the server name the stream was given (a DNS name or an IP address). On a server: as
        /// ``noHostnameVerification``.
        case fullVerification
    }

    /// Where the certificates that may sign a peer's chain come from.
    public enum TrustRoots: Sendable {
        /// The system's store: OpenSSL's default CA file (`SSL_CERT_FILE` when set; Debian's
        /// `/etc/ssl/certs/ca-certificates.crt`), read into memory when the context is made,
        /// so that no handshake reads a file on the ring. Where only a hashed directory exists
        /// (`SSL_CERT_DIR`), OpenSSL looks certificates up there during verification.
        case system
        /// Exactly these certificates (a private CA, a self-signed peer).
        case certificates([TLSCertificate])
    }

    /// A TLS protocol version.
    public enum Version: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// TLS 1.2 (RFC 5246).
        case tls1_2 = 0x0303
        /// TLS 1.3 (RFC 8446).
        case tls1_3 = 0x0304

        public static func < (lhs: Version, rhs: Version) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String { self == .tls1_2 ? "TLSv1.2" : "TLSv1.3" }
    }

    /// Whether, after the handshake, the record encryption of the stream's output is handed to
    /// the kernel (kTLS): see ``TLSOffload``.
    public enum KernelTLS: Sendable, Hashable {
        /// Records are encrypted in user space, by OpenSSL (the default).
        case disabled
        /// The kernel encrypts the stream's output where it can (a TLS ULP, a cipher it has);
        /// elsewhere OpenSSL does, and ``TLSStream/offload`` says why.
        case whenAvailable
    }

    /// The certificate chain a server presents (or a client, when asked), leaf first; empty
    /// for a client that has none.
    public var certificateChain: [TLSCertificate]
    /// The private key of the chain's leaf.
    public var privateKey: TLSPrivateKey?
    /// What may sign the peer's certificate chain; read only when ``certificateVerification``
    /// is not ``CertificateVerification/none``.
    public var trustRoots: TrustRoots
    /// How the peer's certificate is checked.
    public var certificateVerification: CertificateVerification
    /// The ALPN protocol names, most preferred first (`["h2", "http/1.1"]`). A client offers
    /// them; a server picks the first of its own list that the client offered, and goes on
    /// without ALPN when the client offered none of them (or sent no ALPN at all). Empty: no
    /// ALPN.
    public var applicationProtocols: [String]
    /// The oldest version accepted; TLS 1.2 by default. Nothing older is possible.
    public var minimumVersion: Version
    /// The newest version offered; `nil` (the default): TLS 1.3.
    public var maximumVersion: Version?
    /// TLS 1.2 cipher list in OpenSSL's syntax (`"ECDHE+AESGCM"`); `nil`: OpenSSL's default.
    public var cipherList: String?
    /// TLS 1.3 cipher suites in OpenSSL's syntax (`"TLS_AES_128_GCM_SHA256"`); `nil`:
    /// OpenSSL's default.
    public var cipherSuites: String?
    /// Session resumption with tickets (the default). A server issues one ticket per full
    /// handshake (its keys live in the ``TLSContext`` and are not shared with other
    /// contexts or processes) and keeps no session state; a client keeps the newest session
    /// per server name in its ``TLSContext`` and offers it on the next connection to that
    /// name.
    public var sessionResumption: Bool
    /// How long the handshake may take, from the stream's creation; `nil`: no limit. A peer
    /// that stops mid-handshake is then cut off with ``TLSError/Code/handshakeTimedOut``.
    public var handshakeTimeout: Duration?
    /// When a stream gives OpenSSL's record buffers back (one to read records into, one to
    /// write them from: about 34 KiB a connection).
    public enum RecordBuffers: Sendable, Hashable {
        /// As soon as they are empty, after each record (as nginx does, the default): an idle
        /// connection holds no buffer, and every record allocates and frees its buffer.
        case releasedWhenEmpty
        /// Kept while the stream is open, until ``TLSStream/releaseRecordBuffers()`` gives
        /// them back: no allocation per record (about 1,000 instructions a request-response
        /// exchange with OpenSSL 3.0). For a server that knows when a connection goes idle —
        /// a keep-alive timer — and calls that method then.
        case keptUntilReleased
    }

    /// Whether to hand the record encryption of the output to the kernel after the handshake.
    public var kernelTLS: KernelTLS
    /// When OpenSSL's record buffers are given back: ``RecordBuffers/releasedWhenEmpty`` by
    /// default.
    public var recordBuffers: RecordBuffers

    private init(certificateVerification: CertificateVerification) {
        self.certificateChain = []
        self.privateKey = nil
        self.trustRoots = .system
        self.certificateVerification = certificateVerification
        self.applicationProtocols = []
        self.minimumVersion = .tls1_2
        self.maximumVersion = nil
        self.cipherList = nil
        self.cipherSuites = nil
        self.sessionResumption = true
        self.handshakeTimeout = .seconds(10)
        self.kernelTLS = .disabled
        self.recordBuffers = .releasedWhenEmpty
    }

    /// A server's configuration: the certificate chain it presents and its key; no client
    /// certificate asked for.
    ///
    /// - Parameters:
    ///   - certificateChain: The leaf certificate first, then the intermediates (not the root).
    ///   - privateKey: The leaf's private key.
    public static func makeServerConfiguration(
        certificateChain: [TLSCertificate],
        privateKey: TLSPrivateKey
    ) -> TLSConfiguration {
        var configuration = TLSConfiguration(certificateVerification: .none)
        configuration.certificateChain = certificateChain
        configuration.privateKey = privateKey
        return configuration
    }

    /// A server's configuration from PEM files: the chain (leaf first, as in a Let's Encrypt
    /// `fullchain.pem`) and the leaf's key.
    ///
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when a file cannot be read or holds no
    ///   certificate or key in PEM.
    public static func makeServerConfiguration(
        certificateChainFile: FilePath,
        privateKeyFile: FilePath
    ) throws(TLSError) -> TLSConfiguration {
        Self.makeServerConfiguration(
            certificateChain: try TLSCertificate.chain(fromPEMFile: certificateChainFile),
            privateKey: try TLSPrivateKey(pemFile: privateKeyFile)
        )
    }

    /// A client's configuration: the system's trust roots, full verification of the server's
    /// certificate (chain and name), no client certificate.
    public static func makeClientConfiguration() -> TLSConfiguration {
        TLSConfiguration(certificateVerification: .fullVerification)
    }
}
