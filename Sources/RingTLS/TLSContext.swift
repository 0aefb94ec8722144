//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a configuration loaded into OpenSSL, shared by connections.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CRingOpenSSL

/// A ``TLSConfiguration`` loaded into OpenSSL (an `SSL_CTX`): make one per configuration and
/// share it by every ``TLSStream`` that uses it, on any ring.
///
///     let context = try TLSContext(configuration: server)
///     let stream = try TLSStream(accepting: connection, context: context)
///
/// Making a context does the slow work once: it parses and checks the certificate against the
/// key, reads the trust roots into memory, and (for a server) makes the session ticket keys.
/// A stream's handshake then reads no file.
///
/// **Several certificates (SNI).** A server that answers for several names gives a
/// `serverNameHandler`: during each handshake whose client sent a server name, it is called
/// with that name and returns the context to use instead (its certificate, key and ALPN
/// protocols), or `nil` to keep this one. It runs on the stream's ring thread, inside the
/// handshake: it must return at once (look the name up in a dictionary made beforehand; never
/// load a file there).
///
///     let contexts: [String: TLSContext] = ["a.example": a, "b.example": b]
///     let context = try TLSContext(configuration: fallback) { name in contexts[name] }
///
/// **Sessions.** A server context issues session tickets under keys of its own (made at
/// random when the context is made: a ticket is good for this context in this process only).
/// A client context remembers the newest session per server name (up to 1,024 names) and
/// offers it when it connects to that name again: the handshake is then an abbreviated one
/// (``TLSStream/Handshake/isResumed``).
///
/// A context is immutable and `Sendable`. OpenSSL objects it made are freed with it, once the
/// last stream using it is gone.
public final class TLSContext: Sendable {
    /// The configuration it was made from.
    public let configuration: TLSConfiguration
    internal let box: _SSLContextBox

    /// Loads `configuration` into a new OpenSSL context, on the calling thread.
    ///
    /// - Parameters:
    ///   - configuration: What to load.
    ///   - serverNameHandler: For servers with several certificates: picks the context for the
    ///     name a client asked for; `nil` keeps this one. Runs on the ring thread during the
    ///     handshake (see above).
    /// - Throws: ``TLSError/Code/invalidConfiguration`` when OpenSSL refuses a part of the
    ///   configuration: a key that does not match the certificate, a cipher list or suite it
    ///   does not know, an unreadable system trust store, an ALPN name that is empty or longer
    ///   than 255 bytes, a maximum version below the minimum.
    public init(
        configuration: TLSConfiguration,
        serverNameHandler: (@Sendable (String) -> TLSContext?)? = nil
    ) throws(TLSError) {
        self.configuration = configuration
        self.box = try _SSLContextBox(configuration: configuration, serverNameHandler: serverNameHandler)
    }
}
