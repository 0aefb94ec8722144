//===----------------------------------------------------------------------===//
// RingIO — RingTLS: what went wrong, said plainly.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// Why a TLS operation failed: a ``Code`` to decide on, and the detail to log.
///
///     do {
///         let handshake = try await stream.handshake()
///     } catch {
///         switch error.code {
///         case .certificateVerificationFailed:
///             print(error.verificationFailure!)    // "hostname mismatch (X509_V_ERR 62)"
///         case .handshakeTimedOut:
///             print("the peer was too slow")
///         default:
///             print(error)                         // the code and OpenSSL's own words
///         }
///     }
///
/// ``reason`` carries OpenSSL's error queue as text (`"error:0A00010B:SSL
/// routines::wrong version number"`), or RingTLS's own sentence; ``verificationFailure`` the
/// result of checking the peer's certificate; ``errno`` the socket's error. An error never
/// carries a bare number.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let rawValue: UInt8
        private init(_ rawValue: UInt8) { self.rawValue = rawValue }

        /// The configuration could not be used: a PEM file that does not parse or cannot be
        /// read, a key that does not match its certificate, a cipher list OpenSSL refuses, an
        /// ALPN name longer than 255 bytes, a server stream on a context without a
        /// certificate.
        public static let invalidConfiguration = Code(1)
        /// The handshake failed: the peer spoke something else than TLS (garbage instead of
        /// a ClientHello), offered nothing in common (versions, ciphers, ALPN), sent an alert,
        /// or went away during the handshake.
        public static let handshakeFailed = Code(2)
        /// The peer's certificate was refused: unknown issuer, wrong host name, expired… The
        /// error's ``TLSError/verificationFailure`` says which.
        public static let certificateVerificationFailed = Code(3)
        /// The handshake did not finish within the configuration's
        /// ``TLSConfiguration/handshakeTimeout``.
        public static let handshakeTimedOut = Code(4)
        /// After the handshake, the peer sent something that is not valid TLS (a record that
        /// does not decrypt, a fatal alert, a renegotiation).
        public static let protocolError = Code(5)
        /// The connection ended without the peer's `close_notify`: its last bytes may have
        /// been cut off (a truncation attack looks the same). Every byte that did arrive
        /// intact was delivered first. Common from clients that just close their socket.
        public static let uncleanShutdown = Code(6)
        /// The socket failed (ECONNRESET, EPIPE…); ``TLSError/errno`` says how.
        public static let io = Code(7)
        /// The stream was closed: the operation came after ``TLSStream/close(flags:)`` (or,
        /// for a write, after ``TLSStream/closeWrite()``), or the stream failed earlier.
        public static let closed = Code(8)
        /// The operation was stopped: ``TLSStream/close(flags:)`` with
        /// ``TLSStream/CloseFlags/stop``, or its task was cancelled.
        public static let canceled = Code(9)

        public var description: String {
            switch self.rawValue {
            case 1: return "invalid configuration"
            case 2: return "handshake failed"
            case 3: return "certificate verification failed"
            case 4: return "handshake timed out"
            case 5: return "protocol error"
            case 6: return "unclean shutdown"
            case 7: return "I/O error"
            case 8: return "closed"
            case 9: return "canceled"
            default: return "TLS error \(self.rawValue)"
            }
        }
    }

    /// The result of verifying a peer's certificate, as OpenSSL's `X509_V_ERR_*` codes name it.
    public struct VerificationFailure: Sendable, Hashable, CustomStringConvertible {
        /// OpenSSL's `X509_V_ERR_*` value (`X509_V_ERR_HOSTNAME_MISMATCH` is 62): compare it
        /// with the named values below rather than with numbers.
        public let code: Int
        /// OpenSSL's sentence for it (`X509_verify_cert_error_string`).
        public let message: String

        /// Creates a failure of `code` with OpenSSL's `message`.
        public init(code: Int, message: String) {
            self.code = code
            self.message = message
        }

        /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY`: signed by a CA that is not among
        /// the trust roots.
        public static let unknownIssuerCode = 20
        /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT`: the issuer of a certificate in the chain
        /// is not among the trust roots.
        public static let issuerNotFoundCode = 2
        /// `X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT`: a self-signed certificate not among the
        /// trust roots.
        public static let selfSignedCode = 18
        /// `X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN`: the chain ends in a self-signed root that
        /// is not among the trust roots.
        public static let selfSignedInChainCode = 19
        /// `X509_V_ERR_CERT_HAS_EXPIRED`.
        public static let expiredCode = 10
        /// `X509_V_ERR_HOSTNAME_MISMATCH`: valid, but for another name.
        public static let hostnameMismatchCode = 62
        /// `X509_V_ERR_IP_ADDRESS_MISMATCH`: valid, but for another address.
        public static let ipAddressMismatchCode = 64

        /// Whether the certificate is for another host name (or address) than the one asked for.
        public var isHostnameMismatch: Bool {
            self.code == Self.hostnameMismatchCode || self.code == Self.ipAddressMismatchCode
        }

        /// Whether the certificate's issuer is not trusted (unknown CA, or self-signed).
        public var isUntrustedIssuer: Bool {
            [Self.unknownIssuerCode, Self.issuerNotFoundCode, Self.selfSignedCode, Self.selfSignedInChainCode]
                .contains(self.code)
        }

        public var description: String { "\(self.message) (X509_V_ERR \(self.code))" }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What failed, in words: OpenSSL's error queue (its entries joined with "; "), or
    /// RingTLS's own sentence.
    public var reason: String {
        if let what = self.failedAction, let errno = self.errno { return "\(what.words): \(errno)" }
        return self.text
    }
    /// The reason, or `""` when it is made of `failedAction` and `errno`.
    private let text: String
    /// What was being done when the socket (or file) failed: the words are made only when
    /// asked (a peer's reset ends many connections, and most owners read only the code and
    /// errno). One byte, so that an error copies as cheaply as a plain one.
    private let failedAction: _FailedAction?
    /// For ``Code/certificateVerificationFailed``: why the peer's certificate was refused.
    public let verificationFailure: VerificationFailure?
    /// For ``Code/io``: the socket's error.
    public let errno: Errno?

    /// Creates an error; RingTLS makes them, a test or a wrapper may too.
    public init(
        _ code: Code,
        reason: String,
        verificationFailure: VerificationFailure? = nil,
        errno: Errno? = nil
    ) {
        self.code = code
        self.text = reason
        self.failedAction = nil
        self.verificationFailure = verificationFailure
        self.errno = errno
    }

    private init(ioError errno: Errno, what: _FailedAction) {
        self.code = .io
        self.text = ""
        self.failedAction = what
        self.verificationFailure = nil
        self.errno = errno
    }

    /// The code and the reason, one line: `"handshake failed: error:0A00010B:SSL
    /// routines::wrong version number"`.
    public var description: String {
        var text = "\(self.code): \(self.reason)"
        if let failure = self.verificationFailure { text += " [\(failure)]" }
        if let errno = self.errno { text += " [\(errno)]" }
        return text
    }

    // Equal when they read the same: the reason's words, not how they are kept.
    public static func == (left: TLSError, right: TLSError) -> Bool {
        left.code == right.code && left.errno == right.errno && left.verificationFailure == right.verificationFailure
            && left.reason == right.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
        hasher.combine(self.reason)
        hasher.combine(self.verificationFailure)
        hasher.combine(self.errno)
    }
}

extension TLSError {
    /// The socket (or a file to send) failed with `errno` while doing `what`.
    static func io(_ errno: Errno, _ what: _FailedAction) -> TLSError {
        TLSError(ioError: errno, what: what)
    }

    /// The stream is closed (or failed) and takes no more operations.
    static let closedStream = TLSError(.closed, reason: "the TLS stream is closed")
    /// The stream's output is shut down (``TLSStream/closeWrite()``).
    static let closedOutput = TLSError(.closed, reason: "the TLS stream's output is shut down")
    /// Stopped by ``TLSStream/close(flags:)`` with `.stop`.
    static let stopped = TLSError(.canceled, reason: "the TLS stream was stopped")
    /// The awaiting task was cancelled.
    static let taskCancelled = TLSError(.canceled, reason: "the task was cancelled")
}

/// What RingTLS was doing when a socket or a file failed: the start of an ``TLSError/Code/io``
/// error's reason.
internal enum _FailedAction: UInt8, Sendable {
    case readingFromSocket
    case writingToSocket
    case sendingControlRecord
    case openingFileToSend
    case readingFileToSend
    case fileEndedBeforeRange

    var words: String {
        switch self {
        case .readingFromSocket: "reading from the socket"
        case .writingToSocket: "writing to the socket"
        case .sendingControlRecord: "sending a control record through kernel TLS"
        case .openingFileToSend: "the file to send"
        case .readingFileToSend: "reading the file to send"
        case .fileEndedBeforeRange: "the file ended before the range to send"
        }
    }
}
