//===----------------------------------------------------------------------===//
// RingIO — RingTLS: kernel TLS (kTLS), where the kernel has it.
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

/// Where a stream's records are encrypted and decrypted: in user space by OpenSSL, or by the
/// kernel (kTLS) — and why not the kernel, when it is not.
///
/// With ``TLSConfiguration/KernelTLS/whenAvailable``, a stream attaches the kernel's TLS
/// upper-layer protocol to its socket when it is made (`setsockopt(SOL_TCP, TCP_ULP, "tls")`).
/// During the handshake OpenSSL hands the keys of the application traffic over
/// (`SOL_TLS`/`TLS_TX`, with the negotiated cipher: AES-GCM with TLS 1.2 or 1.3, ChaCha20-Poly1305
/// where the kernel has it), right after the last record it encrypted itself has gone out.
/// From then on the stream's writes go to the channel *as they are* — the rope's regions,
/// no copy, no OpenSSL — and the kernel makes the records; ``TLSStream`` file sends splice
/// the file's pages to the socket without the bytes entering user space. Control records
/// (session tickets, alerts, `close_notify`) go out through `sendmsg` with their record type.
///
/// One limit: OpenSSL 3.0 does not hand the kernel new transmit keys after a TLS 1.3 key
/// update, so a peer that asks for one (`KeyUpdate` with `update_requested`) breaks the
/// stream's output from then on.
///
/// Receiving stays in user space: the channel's reads are plain receives, and a kTLS socket
/// reports every record that is not application data (a session ticket, an alert,
/// `close_notify`) in a control message that a plain receive does not see. So ``receive`` is
/// always ``Path/userSpace``, with that reason.
///
/// Where the kernel has no TLS ULP (`TCP_ULP` "tls" answers ENOENT: no `tls` module, as on
/// the machine RingTLS was built on), or lacks the cipher, the stream falls back to OpenSSL
/// for both directions and ``reason`` says so. ``kernelAvailability`` probes this once per
/// process.
public struct TLSOffload: Sendable, Hashable, CustomStringConvertible {
    /// Who encrypts (or decrypts) records.
    public enum Path: Sendable, Hashable, CustomStringConvertible {
        /// OpenSSL, in user space.
        case userSpace
        /// The kernel (kTLS).
        case kernel

        public var description: String { self == .kernel ? "kernel" : "user space" }
    }

    /// Who encrypts the stream's output.
    public var transmit: Path
    /// Who decrypts the stream's input (always user space; see above).
    public var receive: Path
    /// Why a direction is not in the kernel: not asked for (the default configuration), no
    /// TLS ULP, a cipher the kernel lacks, receiving in user space by design; `nil` when both
    /// are in the kernel.
    public var reason: String?

    /// Whether the kernel encrypts the output (the part of kTLS that RingTLS uses).
    public var isKernelTLS: Bool { self.transmit == .kernel }

    /// The reason receiving is not offloaded.
    static let receiveReason =
        "receiving stays in user space (channel reads are plain receives, which do not see the record "
        + "types a kTLS socket reports in control messages)"

    /// User space both ways, for `reason`.
    static func userSpace(_ reason: String) -> TLSOffload {
        TLSOffload(transmit: .userSpace, receive: .userSpace, reason: reason)
    }

    public var description: String {
        var text = "transmit: \(self.transmit), receive: \(self.receive)"
        if let reason = self.reason { text += " (\(reason))" }
        return text
    }

    /// Whether this kernel takes TLS keys, and which ciphers: probed once per process, on
    /// loopback TCP connections of its own (a listening socket on 127.0.0.1 and blocking
    /// `connect`s to it, then the ULP and a `TLS_TX` of zero keys per cipher), the first time
    /// a stream asks for kernel TLS or this is read.
    public static var kernelAvailability: KernelAvailability { _kernelAvailability }
}

/// What ``TLSOffload/kernelAvailability`` found.
public struct KernelAvailability: Sendable, Hashable, CustomStringConvertible {
    /// Whether the TLS ULP attaches to a TCP socket (`TCP_ULP` "tls").
    public let hasTLSModule: Bool
    /// The ciphers the kernel took in `TLS_TX` (OpenSSL's names: `"AES-128-GCM"`,
    /// `"AES-256-GCM"`, `"ChaCha20-Poly1305"`).
    public let transmitCiphers: [String]
    /// What the probe saw, in words: `"TCP_ULP \"tls\" answers ENOENT: this kernel has no TLS
    /// ULP…"`.
    public let reason: String

    public var description: String { self.reason }

    /// The kernel's cipher types (`TLS_CIPHER_*`) it took, for the streams.
    let cipherTypes: Set<UInt16>
}

/// The probe's result, made once (a global's lazy, thread-safe initialization).
private let _kernelAvailability: KernelAvailability = _KernelTLSProbe.run()

/// The probe behind ``TLSOffload/kernelAvailability``.
internal enum _KernelTLSProbe {
    /// The kernel's cipher types RingTLS offers to hand over, with OpenSSL's names.
    private static let ciphers: [(type: UInt16, name: String, size: Int)] = [
        (UInt16(TLS_CIPHER_AES_GCM_128), "AES-128-GCM", MemoryLayout<tls12_crypto_info_aes_gcm_128>.size),
        (UInt16(TLS_CIPHER_AES_GCM_256), "AES-256-GCM", MemoryLayout<tls12_crypto_info_aes_gcm_256>.size),
        (
            UInt16(TLS_CIPHER_CHACHA20_POLY1305), "ChaCha20-Poly1305",
            MemoryLayout<tls12_crypto_info_chacha20_poly1305>.size
        ),
    ]

    static func run() -> KernelAvailability {
        // A listening socket whose backlog completes the connections: the probe's connected
        // client sockets are established (which the ULP needs) without an accept, and so
        // without a descriptor that is not close-on-exec (Glibc hides accept4).
        let listener: (fd: CInt, address: sockaddr_in)
        let first: CInt
        do throws(Errno) {
            listener = try Self.listen()
            first = try Self.connect(to: listener.address)
        } catch {
            return KernelAvailability(
                hasTLSModule: false,
                transmitCiphers: [],
                reason: "the probe's loopback connection failed: \(error)",
                cipherTypes: []
            )
        }
        defer { close(listener.fd) }
        if let error = Self.attachULP(first) {
            close(first)
            let reason =
                error == .noSuchFileOrDirectory
                ? "TCP_ULP \"tls\" answers ENOENT: this kernel has no TLS ULP (its tls module is missing or "
                    + "cannot be loaded); records are encrypted in user space"
                : "TCP_ULP \"tls\" answers \(error): the kernel refuses its TLS ULP; records are encrypted in user space"
            return KernelAvailability(hasTLSModule: false, transmitCiphers: [], reason: reason, cipherTypes: [])
        }
        var names: [String] = []
        var types: Set<UInt16> = []
        var refusals: [String] = []
        var socket: CInt? = first
        for cipher in Self.ciphers {
            // TLS_TX is set once per socket: each cipher gets a connection of its own (the
            // first one's ULP is attached already).
            if socket == nil {
                guard let fresh = try? Self.connect(to: listener.address) else { break }
                if Self.attachULP(fresh) != nil {
                    close(fresh)
                    break
                }
                socket = fresh
            }
            guard let fd = socket else { break }
            var info = [UInt8](repeating: 0, count: cipher.size)
            info.withUnsafeMutableBytes { raw in
                // struct tls_crypto_info: version, then cipher type (both u16, native order).
                raw.storeBytes(of: CRingOpenSSL_TLS_1_3_VERSION, toByteOffset: 0, as: UInt16.self)
                raw.storeBytes(of: cipher.type, toByteOffset: 2, as: UInt16.self)
            }
            let result = info.withUnsafeBytes {
                setsockopt(fd, CInt(SOL_TLS), CInt(TLS_TX), $0.baseAddress, socklen_t($0.count))
            }
            if result == 0 {
                names.append(cipher.name)
                types.insert(cipher.type)
            } else {
                refusals.append("\(cipher.name): \(Errno(rawValue: errno))")
            }
            close(fd)
            socket = nil
        }
        let reason =
            names.isEmpty
            ? "the TLS ULP attaches, but TLS_TX took no cipher (\(refusals.joined(separator: ", ")))"
            : "kernel TLS available (transmit: \(names.joined(separator: ", ")))"
        return KernelAvailability(
            hasTLSModule: true,
            transmitCiphers: names,
            reason: reason,
            cipherTypes: types
        )
    }

    /// Attaches the TLS ULP to `fd`; the error, or `nil` when it attached.
    static func attachULP(_ fd: CInt) -> Errno? {
        let name = Array("tls".utf8)
        let result = name.withUnsafeBytes {
            setsockopt(fd, CInt(IPPROTO_TCP), CInt(TCP_ULP), $0.baseAddress, socklen_t($0.count))
        }
        return result == 0 ? nil : Errno(rawValue: errno)
    }

    /// A TCP socket listening on 127.0.0.1 and a port of its own, close-on-exec.
    private static func listen() throws(Errno) -> (fd: CInt, address: sockaddr_in) {
        let fd = Glibc.socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && Glibc.listen(fd, 8) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard listening else {
            let error = Errno(rawValue: errno)
            close(fd)
            throw error
        }
        return (fd, address)
    }

    /// A TCP socket connected to `address` (a blocking connect, on loopback), close-on-exec.
    private static func connect(to address: sockaddr_in) throws(Errno) -> CInt {
        let fd = Glibc.socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        var target = address
        let connected = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            let error = Errno(rawValue: errno)
            close(fd)
            throw error
        }
        return fd
    }
}
