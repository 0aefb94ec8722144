//===----------------------------------------------------------------------===//
// RingIO — RingTLS: the OpenSSL context behind a TLSContext, and its callbacks.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CRingOpenSSL
import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An `SSL_CTX` with what its callbacks need: the server's ALPN list in wire form, the SNI
/// handler, and a client's session cache.
///
/// The context's ex_data slot 0 and the ALPN callback's argument point at this object
/// without retaining it: every stream that uses the `SSL_CTX` retains this object for as long
/// as its `SSL` lives (`_TLSCore.context`, or `adoptedContexts` after an SNI switch), so no
/// callback can find it gone.
internal final class _SSLContextBox: @unchecked Sendable {
    // @unchecked: `ctx` is configured in `init` and only read afterwards (OpenSSL allows an
    // SSL_CTX to be shared by threads once set up); `alpnWire` is immutable; `sessions` is
    // under its lock.

    // MARK: Immutable after init
    let ctx: OpaquePointer
    /// The ALPN names in wire form (length-prefixed), for the server's selection callback.
    let alpnWire: UnsafeMutableRawBufferPointer
    let serverNameHandler: (@Sendable (String) -> TLSContext?)?
    let verification: TLSConfiguration.CertificateVerification
    let hasCertificate: Bool
    let handshakeTimeout: Duration?
    let kernelTLS: TLSConfiguration.KernelTLS
    let sessionResumption: Bool
    /// The names of the suites this context may agree on, made once: describing a handshake
    /// then makes no string (OpenSSL's names are too long for a small string, and a handshake
    /// would allocate one).
    private let cipherSuiteNames: [(cipher: OpaquePointer, name: String)]

    // MARK: Any thread, under the lock
    /// A client's newest session per server name.
    private let sessions = _SessionCache()

    init(
        configuration: TLSConfiguration,
        serverNameHandler: (@Sendable (String) -> TLSContext?)?
    ) throws(TLSError) {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_method()) else {
            throw TLSError(.invalidConfiguration, reason: "SSL_CTX_new: \(_OpenSSLErrors.drain(or: "out of memory"))")
        }
        let wire: [UInt8]
        do throws(TLSError) {
            wire = try Self.alpnWireFormat(configuration.applicationProtocols)
            try Self.configure(ctx, configuration, alpnWire: wire)
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        self.ctx = ctx
        self.alpnWire = .allocate(byteCount: max(wire.count, 1), alignment: 1)
        self.alpnWire.copyBytes(from: wire)
        self.serverNameHandler = serverNameHandler
        self.verification = configuration.certificateVerification
        self.hasCertificate = !configuration.certificateChain.isEmpty
        self.handshakeTimeout = configuration.handshakeTimeout
        self.kernelTLS = configuration.kernelTLS
        self.sessionResumption = configuration.sessionResumption
        var names: [(cipher: OpaquePointer, name: String)] = []
        if let ciphers = SSL_CTX_get_ciphers(ctx) {
            for index in 0..<OPENSSL_sk_num(ciphers) {
                guard let cipher = OPENSSL_sk_value(ciphers, index).map(OpaquePointer.init),
                    let name = SSL_CIPHER_get_name(cipher)
                else { continue }
                names.append((cipher, String(cString: name)))
            }
        }
        self.cipherSuiteNames = names

        // The callbacks find this object through slot 0 / their argument (see the type's
        // comment for why unretained is safe).
        let unretained = Unmanaged.passUnretained(self).toOpaque()
        SSL_CTX_set_ex_data(ctx, 0, unretained)
        if !wire.isEmpty {
            SSL_CTX_set_alpn_select_cb(ctx, Self.selectApplicationProtocol, unretained)
        }
        if serverNameHandler != nil {
            _ = CRingOpenSSL_CTX_set_servername_callback(ctx, Self.serverNameCallback)
        }
        if configuration.sessionResumption {
            SSL_CTX_sess_set_new_cb(ctx, Self.newSessionCallback)
        }
    }

    deinit {
        SSL_CTX_free(self.ctx)
        self.alpnWire.deallocate()
    }

    /// The name of `cipher` (`SSL_get_current_cipher`), from the table when it is there.
    func name(of cipher: OpaquePointer) -> String? {
        for entry in self.cipherSuiteNames where entry.cipher == cipher { return entry.name }
        return SSL_CIPHER_get_name(cipher).map { String(cString: $0) }
    }

    /// The box of the context `ctx`, from its slot 0.
    static func of(_ ctx: OpaquePointer) -> _SSLContextBox? {
        guard let raw = SSL_CTX_get_ex_data(ctx, 0) else { return nil }
        return Unmanaged<_SSLContextBox>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Configuring

    /// ALPN's wire form: each name prefixed with its length.
    private static func alpnWireFormat(_ names: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in names {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "the ALPN name \"\(name)\" is \(bytes.isEmpty ? "empty" : "longer than 255 bytes")"
                )
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }

    private static func configure(
        _ ctx: OpaquePointer,
        _ configuration: TLSConfiguration,
        alpnWire: [UInt8]
    ) throws(TLSError) {
        func check(_ succeeded: Bool, _ what: @autoclosure () -> String) throws(TLSError) {
            if !succeeded {
                throw TLSError(.invalidConfiguration, reason: "\(what()): \(_OpenSSLErrors.drain(or: "refused"))")
            }
        }
        // Versions: TLS 1.2 at least, whatever the configuration says.
        let minimum = max(configuration.minimumVersion, .tls1_2)
        try check(
            CRingOpenSSL_CTX_set_min_proto_version(ctx, Int32(minimum.rawValue)) == 1,
            "minimum version \(minimum)"
        )
        if let maximum = configuration.maximumVersion {
            guard maximum >= minimum else {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "the maximum version \(maximum) is below the minimum \(minimum)"
                )
            }
            try check(
                CRingOpenSSL_CTX_set_max_proto_version(ctx, Int32(maximum.rawValue)) == 1,
                "maximum version \(maximum)"
            )
        }
        if let list = configuration.cipherList {
            try check(SSL_CTX_set_cipher_list(ctx, list) == 1, "cipher list \"\(list)\"")
        }
        if let suites = configuration.cipherSuites {
            try check(SSL_CTX_set_ciphersuites(ctx, suites) == 1, "cipher suites \"\(suites)\"")
        }
        // No renegotiation (TLS 1.2): a write then never has to wait for a read.
        _ = SSL_CTX_set_options(ctx, CRingOpenSSL_OP_NO_COMPRESSION | CRingOpenSSL_OP_NO_RENEGOTIATION)
        // Records are read ahead: all the ciphertext at hand goes to OpenSSL in one BIO read.
        // Empty record buffers are given back (about 34 KiB a connection), as nginx's are —
        // or kept until the stream's owner releases them (`TLSStream.releaseRecordBuffers()`).
        CRingOpenSSL_CTX_set_read_ahead(ctx, 1)
        if configuration.recordBuffers == .releasedWhenEmpty {
            _ = CRingOpenSSL_CTX_set_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS))
        }

        // The certificate chain and key.
        if let leaf = configuration.certificateChain.first {
            try check(SSL_CTX_use_certificate(ctx, leaf.box.x509) == 1, "certificate \(leaf.subject)")
            for intermediate in configuration.certificateChain.dropFirst() {
                try check(
                    CRingOpenSSL_CTX_add1_chain_cert(ctx, intermediate.box.x509) == 1,
                    "chain certificate \(intermediate.subject)"
                )
            }
            guard let key = configuration.privateKey else {
                throw TLSError(.invalidConfiguration, reason: "a certificate chain without its private key")
            }
            try check(
                X509_check_private_key(leaf.box.x509, key.box.key) == 1,
                "the private key does not match the certificate \(leaf.subject)"
            )
            try check(SSL_CTX_use_PrivateKey(ctx, key.box.key) == 1, "private key")
        } else if configuration.privateKey != nil {
            throw TLSError(.invalidConfiguration, reason: "a private key without its certificate chain")
        }

        // Trust roots, when anything is verified.
        if configuration.certificateVerification != .none {
            switch configuration.trustRoots {
            case .system:
                try Self.loadSystemTrustRoots(ctx)
            case .certificates(let certificates):
                let store = SSL_CTX_get_cert_store(ctx)
                for certificate in certificates {
                    try check(
                        X509_STORE_add_cert(store, certificate.box.x509) == 1,
                        "trust root \(certificate.subject)"
                    )
                }
            }
        }

        // ALPN: a client offers the list; a server selects from it (the callback, set by init).
        if !alpnWire.isEmpty {
            try check(
                alpnWire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
                    == 0,
                "ALPN protocols"
            )
        }

        // Sessions: tickets only. The server keeps no session state (no internal cache, and so
        // no process-wide lock per handshake); the client's sessions go to the box's cache
        // through the new-session callback.
        let idContext: [UInt8] = Array("RingTLS".utf8)
        _ = SSL_CTX_set_session_id_context(ctx, idContext, UInt32(idContext.count))
        if configuration.sessionResumption {
            _ = CRingOpenSSL_CTX_set_session_cache_mode(
                ctx,
                Int(SSL_SESS_CACHE_BOTH | SSL_SESS_CACHE_NO_INTERNAL)
            )
            _ = SSL_CTX_set_num_tickets(ctx, 1)
        } else {
            _ = SSL_CTX_set_options(ctx, CRingOpenSSL_OP_NO_TICKET)
            _ = CRingOpenSSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
            _ = SSL_CTX_set_num_tickets(ctx, 0)
        }
    }

    /// The system's CA file (or directory), per OpenSSL's defaults and their environment
    /// variables (`SSL_CERT_FILE`, `SSL_CERT_DIR`). The file is read here, close-on-exec, and
    /// parsed from memory: OpenSSL's own loader opens it with `fopen`, whose descriptor a
    /// process spawned meanwhile by another thread would inherit.
    private static func loadSystemTrustRoots(_ ctx: OpaquePointer) throws(TLSError) {
        func setting(_ variable: UnsafePointer<CChar>, _ fallback: UnsafePointer<CChar>) -> String {
            if let value = getenv(variable) { return String(cString: value) }
            return String(cString: fallback)
        }
        let file = setting(X509_get_default_cert_file_env(), X509_get_default_cert_file())
        if access(file, R_OK) == 0 {
            let certificates: [TLSCertificate]
            do throws(TLSError) {
                certificates = try TLSCertificate.chain(fromPEMFile: FilePath(file))
            } catch {
                throw TLSError(.invalidConfiguration, reason: "the system trust store: \(error.reason)")
            }
            let store = SSL_CTX_get_cert_store(ctx)
            for certificate in certificates where X509_STORE_add_cert(store, certificate.box.x509) != 1 {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "the system trust store \(file): \(_OpenSSLErrors.drain(or: "a certificate was refused"))"
                )
            }
            return
        }
        let directory = setting(X509_get_default_cert_dir_env(), X509_get_default_cert_dir())
        if access(directory, R_OK) == 0, SSL_CTX_load_verify_dir(ctx, directory) == 1 { return }
        throw TLSError(
            .invalidConfiguration,
            reason: "no system trust store: neither \(file) nor \(directory) can be read (install ca-certificates)"
        )
    }

    // MARK: Callbacks (on the ring thread of the stream whose handshake runs them)

    /// ALPN on a server: the first of its protocols that the client offered; none (the
    /// handshake goes on without ALPN) when the client offered none of them.
    private static let selectApplicationProtocol:
        @convention(c) (
            OpaquePointer?,
            UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
            UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?,
            UInt32,
            UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, offered, offeredLength, argument in
            guard let argument, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
            let box = Unmanaged<_SSLContextBox>.fromOpaque(argument).takeUnretainedValue()
            var selected: UnsafeMutablePointer<UInt8>?
            var selectedLength: UInt8 = 0
            let outcome = SSL_select_next_proto(
                &selected,
                &selectedLength,
                box.alpnWire.baseAddress!.assumingMemoryBound(to: UInt8.self),
                UInt32(box.alpnWire.count),
                offered,
                offeredLength
            )
            guard outcome == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
            out.pointee = UnsafePointer(selected)
            outLength.pointee = selectedLength
            return SSL_TLSEXT_ERR_OK
        }

    /// SNI on a server: the handler's context for the name, if it gives one.
    private static let serverNameCallback:
        @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
            ssl,
            _,
            _ in
            guard let ssl, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name),
                let box = _SSLContextBox.of(SSL_get_SSL_CTX(ssl)), let handler = box.serverNameHandler,
                let core = _TLSCore.of(ssl)
            else { return SSL_TLSEXT_ERR_OK }
            guard let chosen = handler(String(cString: name)), chosen.box !== box else { return SSL_TLSEXT_ERR_OK }
            // The stream holds the chosen context's box from now on (its callbacks point at it).
            core.adopt(chosen.box)
            _ = SSL_set_SSL_CTX(ssl, chosen.box.ctx)
            return SSL_TLSEXT_ERR_OK
        }

    /// A new session (a client's, from a ticket the server sent): kept for the next
    /// connection to the same server name. A server's is not kept (tickets carry them).
    private static let newSessionCallback: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = {
        ssl,
        session in
        guard let ssl, let session, SSL_is_server(ssl) == 0, let core = _TLSCore.of(ssl),
            let key = core.sessionKey, let box = _SSLContextBox.of(SSL_get_SSL_CTX(ssl))
        else { return 0 }
        box.sessions.store(session, for: key)
        return 1  // the cache owns the session's reference now
    }

    // MARK: Client sessions

    /// The session to offer to `key`, owned by the caller (one reference), if there is one.
    func session(for key: String) -> OpaquePointer? {
        self.sessions.take(for: key)
    }
}

/// A client's newest session per server name, bounded. Each entry owns one reference to its
/// `SSL_SESSION`.
internal final class _SessionCache: Sendable {
    static let capacity = 1_024

    /// One reference to an `SSL_SESSION`.
    struct Session: @unchecked Sendable {
        // @unchecked: OpenSSL counts a session's references atomically, and a session is not
        // changed once the handshake that made it is over; the cache only stores, hands out
        // and frees references.
        let pointer: OpaquePointer
    }

    private struct Entry {
        let session: Session
        let stamp: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    private let state = _TLSLock(State())

    deinit {
        let sessions = self.state.withLock { state in state.entries.values.map(\.session) }
        for session in sessions { SSL_SESSION_free(session.pointer) }
    }

    /// Keeps `session` (taking over the caller's reference) as `key`'s newest.
    func store(_ session: OpaquePointer, for key: String) {
        let new = Session(pointer: session)
        let evicted: [Session] = self.state.withLock { state in
            state.clock += 1
            var evicted: [Session] = []
            if let old = state.entries.updateValue(Entry(session: new, stamp: state.clock), forKey: key) {
                evicted.append(old.session)
            }
            if state.entries.count > Self.capacity,
                let oldest = state.entries.min(by: { $0.value.stamp < $1.value.stamp })
            {
                state.entries[oldest.key] = nil
                evicted.append(oldest.value.session)
            }
            return evicted
        }
        for session in evicted { SSL_SESSION_free(session.pointer) }
    }

    /// `key`'s session with a reference for the caller: a TLS 1.3 one leaves the cache (its
    /// ticket is for one use; the server sends a new one), a TLS 1.2 one stays.
    func take(for key: String) -> OpaquePointer? {
        let (session, stale): (Session?, Session?) = self.state.withLock { state in
            guard let entry = state.entries[key] else { return (nil, nil) }
            guard SSL_SESSION_is_resumable(entry.session.pointer) == 1 else {
                state.entries[key] = nil
                return (nil, entry.session)
            }
            if SSL_SESSION_get_protocol_version(entry.session.pointer) >= TLS1_3_VERSION {
                state.entries[key] = nil
            } else {
                SSL_SESSION_up_ref(entry.session.pointer)
            }
            return (entry.session, nil)
        }
        if let stale { SSL_SESSION_free(stale.pointer) }
        return session?.pointer
    }
}
