//===----------------------------------------------------------------------===//
// RingIO — RingTLS: certificates and private keys, from PEM.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CRingOpenSSL
import SystemPackage

/// An X.509 certificate, parsed from PEM.
///
///     let chain = try TLSCertificate.chain(fromPEMFile: "/etc/ssl/example/fullchain.pem")
///     let root = try TLSCertificate(pem: Array(pemText.utf8))
///
/// A certificate is immutable and `Sendable`; copies share one parsed object.
public struct TLSCertificate: Sendable, Hashable, CustomStringConvertible {
    internal let box: _X509Box

    internal init(box: _X509Box) {
        self.box = box
    }

    /// The first certificate of a PEM text.
    ///
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when `pem` holds no certificate.
    public init(pem: some Sequence<UInt8>) throws(TLSError) {
        let chain = try Self.chain(fromPEM: pem)
        self = chain[0]
    }

    /// Every certificate of a PEM text, in order (a chain file: leaf first).
    ///
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when `pem` holds no certificate, or
    ///   one that does not parse.
    public static func chain(fromPEM pem: some Sequence<UInt8>) throws(TLSError) -> [TLSCertificate] {
        let bytes = Array(pem)
        return try _PEM.withBIO(bytes) { bio throws(TLSError) in
            var chain: [TLSCertificate] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                chain.append(TLSCertificate(box: _X509Box(owning: x509)))
            }
            // The loop ends at the first PEM block that is not a certificate, or at the end:
            // only the end (no start line left) is clean.
            let last = ERR_peek_last_error()
            if !chain.isEmpty && ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE {
                ERR_clear_error()
                return chain
            }
            if chain.isEmpty {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "no certificate in the PEM text (\(_OpenSSLErrors.drain(or: "no BEGIN CERTIFICATE")))"
                )
            }
            throw TLSError(
                .invalidConfiguration,
                reason: "a certificate in the PEM text does not parse: \(_OpenSSLErrors.drain(or: "unknown"))"
            )
        }
    }

    /// Every certificate of a PEM file, in order (a chain file: leaf first). The file is read
    /// on the calling thread.
    ///
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when the file cannot be read (its
    ///   ``TLSError/errno`` says why) or holds no certificate.
    public static func chain(fromPEMFile path: FilePath) throws(TLSError) -> [TLSCertificate] {
        let bytes = try _PEM.readFile(path, what: "certificate file")
        do throws(TLSError) {
            return try Self.chain(fromPEM: bytes)
        } catch {
            throw TLSError(.invalidConfiguration, reason: "\(path): \(error.reason)")
        }
    }

    /// The certificate's subject, one line in RFC 2253 form (`"CN=localhost,O=Example"`).
    public var subject: String {
        _PEM.name(X509_get_subject_name(self.box.x509))
    }

    /// The certificate's issuer, one line in RFC 2253 form.
    public var issuer: String {
        _PEM.name(X509_get_issuer_name(self.box.x509))
    }

    public var description: String { "TLSCertificate(\(self.subject))" }

    /// Equal when the two encode the same certificate (DER).
    public static func == (lhs: TLSCertificate, rhs: TLSCertificate) -> Bool {
        lhs.box === rhs.box || X509_cmp(lhs.box.x509, rhs.box.x509) == 0
    }

    public func hash(into hasher: inout Hasher) {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 20
        _ = X509_digest(self.box.x509, EVP_sha1(), &digest, &length)
        hasher.combine(digest)
    }
}

/// A private key, parsed from PEM (PKCS #8, or the traditional RSA and EC forms).
///
///     let key = try TLSPrivateKey(pemFile: "/etc/ssl/example/key.pem")
public struct TLSPrivateKey: Sendable {
    internal let box: _PrivateKeyBox

    /// The key of a PEM text.
    ///
    /// - Parameters:
    ///   - pem: The PEM text.
    ///   - passphrase: The passphrase of an encrypted key; `nil` for a plain one. (Without a
    ///     passphrase an encrypted key fails to load: nothing ever prompts on a terminal.)
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when `pem` holds no key that loads.
    public init(pem: some Sequence<UInt8>, passphrase: String? = nil) throws(TLSError) {
        let bytes = Array(pem)
        let key = try _PEM.withBIO(bytes) { bio throws(TLSError) -> OpaquePointer in
            let loaded: OpaquePointer?
            if let passphrase {
                loaded = passphrase.withCString { text in
                    PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: text))
                }
            } else {
                // A callback that supplies no passphrase: OpenSSL's default one would prompt
                // on the terminal.
                loaded = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            }
            guard let loaded else {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "no private key in the PEM text: \(_OpenSSLErrors.drain(or: "no BEGIN PRIVATE KEY"))"
                )
            }
            return loaded
        }
        self.box = _PrivateKeyBox(owning: key)
    }

    /// The key of a PEM file, read on the calling thread.
    ///
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when the file cannot be read (its
    ///   ``TLSError/errno`` says why) or holds no key that loads.
    public init(pemFile path: FilePath, passphrase: String? = nil) throws(TLSError) {
        let bytes = try _PEM.readFile(path, what: "key file")
        do throws(TLSError) {
            try self.init(pem: bytes, passphrase: passphrase)
        } catch {
            throw TLSError(.invalidConfiguration, reason: "\(path): \(error.reason)")
        }
    }
}

/// One parsed `X509`, freed with the last reference.
internal final class _X509Box: @unchecked Sendable {
    // @unchecked: the X509 is never modified after parsing; OpenSSL 3 makes the lazy caches it
    // fills on first use (extensions, hashes) under its own lock, and counts references
    // atomically.
    let x509: OpaquePointer

    init(owning x509: OpaquePointer) {
        self.x509 = x509
    }

    deinit {
        X509_free(self.x509)
    }
}

/// One parsed `EVP_PKEY`, freed with the last reference.
internal final class _PrivateKeyBox: @unchecked Sendable {
    // @unchecked: as `_X509Box`: immutable after parsing; OpenSSL 3 key objects are safe to
    // use from several threads for signing once loaded.
    let key: OpaquePointer

    init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(self.key)
    }
}

/// PEM input: memory BIOs and files.
internal enum _PEM {
    /// Runs `body` with a read-only memory BIO over `bytes`.
    static func withBIO<R>(
        _ bytes: [UInt8],
        _ body: (OpaquePointer) throws(TLSError) -> R
    ) throws(TLSError) -> R {
        ERR_clear_error()
        let result: Result<R, TLSError> = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                return .failure(TLSError(.invalidConfiguration, reason: "BIO_new_mem_buf failed (out of memory)"))
            }
            defer { BIO_free(bio) }
            do throws(TLSError) {
                return .success(try body(bio))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The bytes of the file at `path`, read with blocking calls on the calling thread.
    static func readFile(_ path: FilePath, what: String) throws(TLSError) -> [UInt8] {
        do {
            let fd = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
            defer { try? fd.close() }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try fd.read(into: $0, retryOnInterrupt: true) }
                if count == 0 { return bytes }
                bytes += chunk[..<count]
            }
        } catch {
            let errno = error as? Errno
            throw TLSError(
                .invalidConfiguration,
                reason: "cannot read the \(what) \(path): \(errno.map { "\($0)" } ?? "\(error)")",
                errno: errno
            )
        }
    }

    /// An X.509 name in RFC 2253 form, on one line.
    static func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        _ = X509_NAME_print_ex(bio, name, 0, CRingOpenSSL_XN_FLAG_RFC2253)
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { return "" }
        return String(
            decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)),
            as: UTF8.self
        )
    }
}

/// OpenSSL's per-thread error queue, as text.
internal enum _OpenSSLErrors {
    /// Empties the calling thread's error queue and returns its entries joined with "; " —
    /// or `fallback` when it was empty.
    static func drain(or fallback: String) -> String {
        // Most calls find it empty (a socket's error, an unclean end): no buffer for those.
        guard ERR_peek_error() != 0 else { return fallback }
        var entries: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            let length = buffer.firstIndex(of: 0) ?? buffer.count
            entries.append(String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return entries.isEmpty ? fallback : entries.joined(separator: "; ")
    }
}
