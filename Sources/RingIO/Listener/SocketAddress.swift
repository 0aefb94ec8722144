//===----------------------------------------------------------------------===//
// RingIO — the listener: resolving, binding and naming socket addresses.
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address.
internal struct _SocketAddress: CustomStringConvertible {
    var storage = sockaddr_storage()
    var length: socklen_t = 0

    var family: CInt { CInt(self.storage.ss_family) }

    var port: UInt16 {
        get {
            withUnsafeBytes(of: self.storage) { raw in
                self.family == AF_INET6
                    ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                    : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            }
        }
        set {
            let family = self.family
            withUnsafeMutableBytes(of: &self.storage) { raw in
                if family == AF_INET6 {
                    raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = newValue.bigEndian
                } else {
                    raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = newValue.bigEndian
                }
            }
        }
    }

    /// `"127.0.0.1:80"` or `"[::1]:80"`.
    var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = self.family
        withUnsafeBytes(of: self.storage) { raw in
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                _ = inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            } else {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                _ = inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
            }
        }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == AF_INET6 ? "[\(host)]:\(self.port)" : "\(host):\(self.port)"
    }

    /// The first address `getaddrinfo` gives for `host` (passive: `"::"` and `"0.0.0.0"` mean
    /// every address).
    static func resolve(host: String, port: UInt16) throws(Errno) -> _SocketAddress {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = _SocketConstants.stream
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw status == EAI_SYSTEM ? Errno(rawValue: errno) : Errno.invalidArgument
        }
        defer { freeaddrinfo(list) }
        var address = _SocketAddress()
        withUnsafeMutableBytes(of: &address.storage) { raw in
            raw.copyMemory(
                from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen))
            )
        }
        address.length = first.pointee.ai_addrlen
        return address
    }

    /// A listening socket bound to `address`: close-on-exec, `SO_REUSEADDR`, `SO_REUSEPORT` when
    /// asked, dual stack for IPv6.
    static func listen(on address: _SocketAddress, options: IOListener.Options) throws(Errno) -> CInt {
        let fd = socket(address.family, _SocketConstants.streamCloseOnExec, 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        var on: CInt = 1
        var off: CInt = 0
        let size = socklen_t(MemoryLayout<CInt>.size)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, size)
        if options.reusePort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, size) }
        if address.family == AF_INET6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, size) }
        var storage = address.storage
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) }
        }
        guard bound == 0, Glibc.listen(fd, options.backlog) == 0 else {
            let error = Errno(rawValue: errno)
            close(fd)
            throw error
        }
        return fd
    }

    /// The address `fd` is bound to.
    static func local(of fd: CInt) throws(Errno) -> _SocketAddress {
        var address = _SocketAddress()
        address.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &address.storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &address.length) }
        }
        guard result == 0 else { throw Errno(rawValue: errno) }
        return address
    }
}
