//===----------------------------------------------------------------------===//
// RingIO — networking: why an outbound connection failed.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// Why ``IOConnection/connect(host:port:options:ring:)`` (or a connect to an address) failed:
/// the reason, and what happened to each address tried.
///
///     do {
///         let connection = try await IOConnection.connect(host: "db.internal", port: 5432)
///         …
///     } catch {
///         switch error.reason {
///         case .refused: print("nothing listens there")
///         case .timedOut: print("no answer in time")
///         case .nameNotResolved(let failure): print(failure.message)   // "Name or service not known"
///         default: print(error)   // every address tried, with its error
///         }
///     }
public struct ConnectError: Error, Sendable, CustomStringConvertible {
    /// What failed, in one word.
    public enum Reason: Sendable, Hashable {
        /// Every address answered with a reset: nothing listens there (ECONNREFUSED).
        case refused
        /// The connect timeout passed before any address answered, or the kernel gave up
        /// (ETIMEDOUT).
        case timedOut
        /// No route to the network or host (ENETUNREACH, EHOSTUNREACH).
        case unreachable
        /// The host name did not resolve to any address: the resolver's answer (for the IPv6
        /// query when both failed).
        case nameNotResolved(NameResolutionError)
        /// The connect was cancelled (``IOConnection/Connecting/cancel()`` or task
        /// cancellation), or its ring shut down.
        case canceled
        /// Another error: of the socket calls (EMFILE, EADDRINUSE binding the local address,
        /// EAFNOSUPPORT for a local address of another family), or of the last address tried.
        case other(Errno)
    }

    /// One address tried, and how that attempt ended.
    public struct Attempt: Sendable, Hashable, CustomStringConvertible {
        /// The address dialled.
        public let address: SocketAddress
        /// The attempt's error.
        public let error: Errno

        public var description: String { "\(self.address): \(self.error)" }
    }

    /// What failed.
    public let reason: Reason
    /// The host name asked for, or the address's text for a connect to an address.
    public let host: String
    /// The port asked for (`nil` for a Unix domain address).
    public let port: UInt16?
    /// Every address tried, in the order the attempts started, with its error.
    public let attempts: [Attempt]

    internal init(reason: Reason, host: String, port: UInt16?, attempts: [Attempt]) {
        self.reason = reason
        self.host = host
        self.port = port
        self.attempts = attempts
    }

    /// The closest `Errno`: ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH (or the attempt's
    /// ENETUNREACH), ECANCELED, the other error; ENOENT for a name that did not resolve.
    public var errno: Errno {
        switch self.reason {
        case .refused: return .connectionRefused
        case .timedOut: return .timedOut
        case .unreachable:
            return self.attempts.last(where: { Self.isUnreachable($0.error) })?.error ?? .noRouteToHost
        case .nameNotResolved: return .noSuchFileOrDirectory
        case .canceled: return .canceled
        case .other(let errno): return errno
        }
    }

    public var description: String {
        let target = self.port.map { "\(self.host) port \($0)" } ?? self.host
        let what: String
        switch self.reason {
        case .refused: what = "connection refused"
        case .timedOut: what = "timed out"
        case .unreachable: what = "unreachable"
        case .nameNotResolved(let failure): what = "the name did not resolve: \(failure.message)"
        case .canceled: what = "cancelled"
        case .other(let errno): what = "\(errno)"
        }
        guard !self.attempts.isEmpty else { return "connect to \(target): \(what)" }
        let tried = self.attempts.map(\.description).joined(separator: "; ")
        return "connect to \(target): \(what) (tried \(tried))"
    }

    internal static func isUnreachable(_ error: Errno) -> Bool {
        error == .networkUnreachable || error == .noRouteToHost
    }

    /// The reason for a connect whose every attempt failed: refused when any address refused
    /// (something answered), else unreachable, else timed out, else the last error.
    internal static func reason(for attempts: [Attempt]) -> Reason {
        if attempts.contains(where: { $0.error == .connectionRefused }) { return .refused }
        if attempts.contains(where: { Self.isUnreachable($0.error) }) { return .unreachable }
        if attempts.contains(where: { $0.error == .timedOut }) { return .timedOut }
        return .other(attempts.last?.error ?? .invalidArgument)
    }
}
