//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// A request method (RFC 9110 §9). Methods are case-sensitive: `get` is not `GET`.
///
/// The registered methods are cases of their own; any other token is ``other(_:)``. The
/// parser recognizes the cases without allocating.
///
///     switch request.head.method {
///     case .get, .head: serveFile()
///     case .other(let name): print("unknown method", name)
///     default: reply(.methodNotAllowed)
///     }
public enum HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    /// `GET`: transfer a representation of the target.
    case get
    /// `HEAD`: like `GET`, but the response has no body.
    case head
    /// `POST`: process the enclosed content.
    case post
    /// `PUT`: replace the target with the enclosed content.
    case put
    /// `DELETE`: remove the target.
    case delete
    /// `CONNECT`: open a tunnel to the target (authority-form).
    case connect
    /// `OPTIONS`: describe the communication options.
    case options
    /// `TRACE`: loop the request back.
    case trace
    /// `PATCH`: apply partial modifications (RFC 5789).
    case patch
    /// Any other method token, as sent. Create methods with ``init(_:)`` so that a
    /// registered name becomes its own case: `.other("GET")` is not equal to `.get`.
    case other(String)

    /// The method named `name`: a case of its own for the registered names, else
    /// ``other(_:)``.
    ///
    /// - Parameter name: The method token, case-sensitive.
    /// - Complexity: O(*n*) in the length of `name`.
    public init(_ name: String) {
        switch name {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "DELETE": self = .delete
        case "CONNECT": self = .connect
        case "OPTIONS": self = .options
        case "TRACE": self = .trace
        case "PATCH": self = .patch
        default: self = .other(name)
        }
    }

    /// The method token, such as `GET`.
    ///
    /// - Complexity: O(1); no allocation.
    public var rawValue: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .delete: return "DELETE"
        case .connect: return "CONNECT"
        case .options: return "OPTIONS"
        case .trace: return "TRACE"
        case .patch: return "PATCH"
        case .other(let name): return name
        }
    }

    /// The method token, such as `GET`.
    public var description: String { self.rawValue }

    /// The method whose token, packed little-endian into a word, is `packed`; `nil` for a
    /// token that is not registered. Tokens longer than 8 bytes never match.
    static func _registered(packed: UInt64, length: Int) -> HTTPMethod? {
        switch (length, packed) {
        case (3, 0x54_4547): return .get  // "GET"
        case (4, 0x4441_4548): return .head  // "HEAD"
        case (4, 0x5453_4F50): return .post  // "POST"
        case (3, 0x54_5550): return .put  // "PUT"
        case (6, 0x4554_454C_4544): return .delete  // "DELETE"
        case (7, 0x54_4345_4E4E_4F43): return .connect  // "CONNECT"
        case (7, 0x53_4E4F_4954_504F): return .options  // "OPTIONS"
        case (5, 0x45_4341_5254): return .trace  // "TRACE"
        case (5, 0x48_4354_4150): return .patch  // "PATCH"
        default: return nil
        }
    }
}

/// An HTTP version, such as 1.1.
///
/// The parser accepts 1.0 and 1.1, and handles 1.2 to 1.9 as 1.1 (RFC 9110 §6.2: a higher
/// minor version is processed as the highest one the recipient speaks); any other
/// well-formed `HTTP/d.d` is ``HTTPParseError/versionNotSupported``.
public struct HTTPVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    // Two bytes, not two words: a version travels in every request head.
    private var majorDigit: UInt8
    private var minorDigit: UInt8

    /// The major version: the `1` of `HTTP/1.1`.
    ///
    /// - Precondition: When set, in 0...255.
    public var major: Int {
        get { Int(self.majorDigit) }
        set { self.majorDigit = UInt8(newValue) }
    }

    /// The minor version: the second `1` of `HTTP/1.1`.
    ///
    /// - Precondition: When set, in 0...255.
    public var minor: Int {
        get { Int(self.minorDigit) }
        set { self.minorDigit = UInt8(newValue) }
    }

    /// Creates a version.
    ///
    /// - Precondition: `major` and `minor` are in 0...255.
    /// - Complexity: O(1).
    public init(major: Int, minor: Int) {
        self.majorDigit = UInt8(major)
        self.minorDigit = UInt8(minor)
    }

    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// Orders by major, then minor version.
    ///
    /// - Complexity: O(1).
    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    /// `HTTP/major.minor`, as in a request or status line.
    public var description: String {
        "HTTP/\(self.major).\(self.minor)"
    }
}
