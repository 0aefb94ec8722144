//===----------------------------------------------------------------------===//
// RingIO — the engine's POSIX layer: every C library call outside liburing.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Checked wrappers over the C library. Every call RingIO makes outside liburing (which
/// `_URing.swift` wraps) goes through this file — except `_SignalRouter`'s signal handler,
/// which may make only async-signal-safe calls and makes its own.
///
/// The rules every wrapper keeps:
///
/// - **Every result is checked.** A failure a caller can meet (a refused bind, a name that
///   does not resolve, a descriptor of the wrong kind) throws its `Errno`, read from `errno`
///   right after the call — or taken from the return value, for the calls that return it
///   (`pthread_*`, `posix_memalign`).
/// - **EINTR is retried** where the call can be restarted with the same arguments (`retrying`).
/// - **`close` is never retried.** On Linux the descriptor is released when `close` returns,
///   even with EINTR: a retry could close a descriptor another thread was given meanwhile.
/// - **Failures only a bug can cause stop the process** with a message: EBADF on a descriptor
///   RingIO owns, EINVAL from arguments RingIO built, EFAULT.
internal enum _POSIX {
    /// Calls `call` until it returns something other than -1 with EINTR; -1 with another errno
    /// throws that errno.
    @inline(__always)
    private static func retrying<Result: FixedWidthInteger & SignedInteger>(
        _ call: () -> Result
    ) throws(Errno) -> Result {
        while true {
            let result = call()
            if result != -1 { return result }
            let error = Errno(rawValue: errno)
            if error != .interrupted { throw error }
        }
    }

    // MARK: Descriptors

    /// Closes `fd`, a descriptor RingIO owns. The corresponding C function is `close`.
    ///
    /// Not retried on EINTR (see above). EINTR and EIO are not reported: the descriptor is
    /// gone either way, and for the sockets, eventfds and pidfds RingIO closes no caller could
    /// act on them.
    ///
    /// - Precondition: `fd` is open. EBADF is a double close: by then the number may name a
    ///   descriptor someone else was given.
    internal static func close(_ fd: CInt) {
        guard Glibc.close(fd) != 0 else { return }
        let error = Errno(rawValue: errno)
        precondition(error != .badFileDescriptor, "RingIO: close(\(fd)) of a descriptor that is not open")
    }

    /// A new descriptor, close-on-exec, on the same open file as `fd`. The corresponding C
    /// call is `fcntl(fd, F_DUPFD_CLOEXEC, 0)`.
    ///
    /// - Throws: EMFILE when the process has no descriptor left; EBADF for a closed `fd`.
    internal static func duplicate(_ fd: CInt) throws(Errno) -> CInt {
        try self.retrying { fcntl(fd, F_DUPFD_CLOEXEC, 0) }
    }

    /// The status of open descriptor `fd`. The corresponding C function is `fstat`.
    internal static func status(of fd: CInt) throws(Errno) -> stat {
        var info = stat()
        _ = try self.retrying { fstat(fd, &info) }
        return info
    }

    /// Removes the name `path` (a socket file a listener made). Failures (ENOENT: gone
    /// already) are not reported. The corresponding C function is `unlink`.
    internal static func unlink(_ path: String) {
        _ = Glibc.unlink(path)
    }

    /// Sets the permissions of the file at `path`. The corresponding C function is `chmod`.
    internal static func changeMode(_ path: String, to mode: mode_t) throws(Errno) {
        _ = try self.retrying { chmod(path, mode) }
    }

    /// The status of `path` — of a symbolic link itself, not its target, when
    /// `followingLinks` is false. The corresponding C functions are `stat` and `lstat`.
    internal static func status(ofPath path: String, followingLinks: Bool) throws(Errno) -> stat {
        var info = stat()
        _ = try self.retrying { followingLinks ? stat(path, &info) : lstat(path, &info) }
        return info
    }

    /// The file status flags of `fd` (`O_APPEND`, `O_NONBLOCK`…). The corresponding C call
    /// is `fcntl(fd, F_GETFL)`.
    internal static func statusFlags(of fd: CInt) throws(Errno) -> CInt {
        try self.retrying { fcntl(fd, F_GETFL) }
    }

    /// Sets the status flags of `fd` (`O_NONBLOCK`…). The corresponding C call is
    /// `fcntl(fd, F_SETFL, flags)`.
    internal static func setStatusFlags(_ fd: CInt, _ flags: CInt) throws(Errno) {
        _ = try self.retrying { fcntl(fd, F_SETFL, flags) }
    }

    /// Moves `fd`'s file position to `offset` from `whence` (`SEEK_SET`, `SEEK_CUR`); the new
    /// position. The corresponding C function is `lseek`.
    ///
    /// - Throws: `ESPIPE` for a descriptor without a position (a pipe, a socket, most
    ///   devices); EBADF for one closed under its channel.
    @discardableResult
    internal static func seek(_ fd: CInt, to offset: Int64, from whence: CInt) throws(Errno) -> Int64 {
        Int64(try self.retrying { lseek(fd, off_t(offset), whence) })
    }

    /// The bytes that can be read from `fd` without blocking. The corresponding C call is
    /// `ioctl(fd, FIONREAD)`.
    internal static func readableByteCount(_ fd: CInt) throws(Errno) -> Int {
        var count: CInt = 0
        _ = try self.retrying { ioctl(fd, UInt(FIONREAD), &count) }
        return Int(count)
    }

    /// The bytes in socket `fd`'s send queue not yet sent. The corresponding C call is
    /// `ioctl(fd, TIOCOUTQ)` (`SIOCOUTQ`).
    internal static func unsentByteCount(_ fd: CInt) throws(Errno) -> Int {
        var count: CInt = 0
        _ = try self.retrying { ioctl(fd, UInt(TIOCOUTQ), &count) }
        return Int(count)
    }

    // MARK: Mappings

    /// Maps `length` bytes of file `fd` from `offset` (a multiple of the page size), shared
    /// and read-only. The corresponding C function is `mmap` (`PROT_READ`, `MAP_SHARED`).
    ///
    /// - Throws: EACCES for a descriptor not open for reading; ENODEV for a file that cannot
    ///   be mapped (a pipe, a socket); ENOMEM when the address space is exhausted.
    internal static func mapForReading(_ fd: CInt, offset: Int64, length: Int) throws(Errno) -> UnsafeRawBufferPointer {
        precondition(length > 0 && offset >= 0, "RingIO: an empty or negative mapping")
        guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, fd, off_t(offset)), base != MAP_FAILED else {
            throw Errno(rawValue: errno)
        }
        return UnsafeRawBufferPointer(start: base, count: length)
    }

    /// Removes a mapping made by ``mapForReading(_:offset:length:)``. The corresponding C
    /// function is `munmap`.
    ///
    /// - Precondition: `mapping` is exactly such a mapping (EINVAL otherwise: a bug).
    internal static func unmap(_ mapping: UnsafeRawBufferPointer) {
        let result = munmap(UnsafeMutableRawPointer(mutating: mapping.baseAddress), mapping.count)
        precondition(result == 0, "RingIO: munmap failed (errno \(errno))")
    }

    // MARK: Pipes

    /// A new pipe, both ends close-on-exec: (read end, write end). The corresponding C
    /// function is `pipe2` with `O_CLOEXEC`.
    internal static func pipe() throws(Errno) -> (read: CInt, write: CInt) {
        var ends: (CInt, CInt) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &ends) { (buffer) throws(Errno) in
            try self.retrying { CLiburing_pipe_cloexec(buffer.baseAddress!.assumingMemoryBound(to: CInt.self)) }
        }
        return (ends.0, ends.1)
    }

    /// Asks for the pipe of `fd` to hold at least `capacity` bytes (when that is more than it
    /// holds) and returns what it holds now, or -1: growing may fail (the user's pipe quota,
    /// `/proc/sys/fs/pipe-max-size`) and leave it as it was — which may be less than the
    /// default, for a user over the soft quota. The corresponding C calls are `fcntl` with
    /// `F_GETPIPE_SZ` and `F_SETPIPE_SZ`.
    internal static func resizePipe(_ fd: CInt, toHold capacity: Int) -> Int {
        let size = Int(fcntl(fd, CLiburing_F_GETPIPE_SZ))
        guard size >= 0, capacity > size else { return size }
        let grown = fcntl(fd, CLiburing_F_SETPIPE_SZ, CInt(clamping: capacity))
        return grown > 0 ? Int(grown) : size
    }

    // MARK: Sockets

    /// A new socket of `family` and `type` (flags such as `SOCK_CLOEXEC` included). The
    /// corresponding C function is `socket`.
    internal static func socket(family: CInt, type: CInt) throws(Errno) -> CInt {
        try self.retrying { Glibc.socket(family, type, 0) }
    }

    /// Sets an integer socket option. The corresponding C function is `setsockopt`.
    internal static func setOption(_ fd: CInt, level: CInt, name: CInt, to value: CInt) throws(Errno) {
        var value = value
        _ = try self.retrying { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<CInt>.size)) }
    }

    /// An integer socket option. The corresponding C function is `getsockopt`.
    internal static func option(_ fd: CInt, level: CInt, name: CInt) throws(Errno) -> CInt {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        _ = try self.retrying { getsockopt(fd, level, name, &value, &length) }
        return value
    }

    /// Binds `fd` to the first `length` bytes of `address`. The corresponding C function is
    /// `bind`.
    internal static func bind(_ fd: CInt, to address: sockaddr_storage, length: socklen_t) throws(Errno) {
        var address = address
        _ = try self.retrying {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
            }
        }
    }

    /// Makes `fd` a listening socket. The corresponding C function is `listen`.
    internal static func listen(_ fd: CInt, backlog: CInt) throws(Errno) {
        _ = try self.retrying { Glibc.listen(fd, backlog) }
    }

    /// The address `fd` is bound to. The corresponding C function is `getsockname`.
    internal static func localAddress(of fd: CInt) throws(Errno) -> (address: sockaddr_storage, length: socklen_t) {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try self.retrying {
            withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return (address, length)
    }

    /// The address of `fd`'s peer. The corresponding C function is `getpeername`.
    ///
    /// - Throws: ENOTCONN when the socket is not connected (any more).
    internal static func remoteAddress(of fd: CInt) throws(Errno) -> (address: sockaddr_storage, length: socklen_t) {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try self.retrying {
            withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
        }
        return (address, length)
    }

    /// Binds `fd` to `address`. The corresponding C function is `bind`.
    internal static func bind(_ fd: CInt, to address: SocketAddress) throws(Errno) {
        _ = try self.retrying { address.withUnsafeSocketAddress { Glibc.bind(fd, $0, $1) } }
    }

    /// Connects `fd` to `address`, blocking until done (for datagram sockets, which connect at
    /// once). The corresponding C function is `connect`.
    internal static func connect(_ fd: CInt, to address: SocketAddress) throws(Errno) {
        _ = try self.retrying { address.withUnsafeSocketAddress { Glibc.connect(fd, $0, $1) } }
    }

    /// Shuts down reception and/or transmission on socket `fd` (`SHUT_RD`, `SHUT_WR`,
    /// `SHUT_RDWR`). The corresponding C function is `shutdown`.
    internal static func shutdown(_ fd: CInt, how: CInt) throws(Errno) {
        _ = try self.retrying { Glibc.shutdown(fd, how) }
    }

    /// The first address `getaddrinfo` gives for a passive stream socket on `host` and `port`
    /// (`"::"` and `"0.0.0.0"` mean every address). The corresponding C functions are
    /// `getaddrinfo` and `freeaddrinfo`.
    ///
    /// - Throws: The errno of a system error (`EAI_SYSTEM`); `EINVAL` for a name that does
    ///   not resolve or any other `EAI_*` failure.
    internal static func passiveStreamAddress(host: String, port: UInt16) throws(Errno) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = _SocketConstants.stream
        var list: UnsafeMutablePointer<addrinfo>?
        var status: CInt
        repeat {
            status = getaddrinfo(host, String(port), &hints, &list)
        } while status == EAI_SYSTEM && errno == EINTR
        guard status == 0, let first = list else {
            throw status == EAI_SYSTEM ? Errno(rawValue: errno) : Errno.invalidArgument
        }
        defer { freeaddrinfo(list) }
        guard let address = try? SocketAddress(unsafeAddress: first.pointee.ai_addr, length: first.pointee.ai_addrlen)
        else {
            throw Errno.addressFamilyNotSupported
        }
        return address
    }

    /// The text form (`"127.0.0.1"`, `"::1"`) of the `in_addr` or `in6_addr` at `address`.
    /// The corresponding C function is `inet_ntop`.
    ///
    /// - Precondition: `family` is `AF_INET` or `AF_INET6`.
    internal static func addressText(family: CInt, address: UnsafeRawPointer) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let result = inet_ntop(family, address, &text, socklen_t(text.count))
        // Fails only for another family (EAFNOSUPPORT) or a short buffer (ENOSPC): ours to get right.
        precondition(result != nil, "RingIO: inet_ntop failed: \(Errno(rawValue: errno))")
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Waits until `fd` is readable, or a signal interrupts the wait (then it returns early: the
    /// callers check again what they waited for). The corresponding C call is
    /// `poll(&{fd, POLLIN}, 1, -1)`.
    ///
    /// - Throws: `ENOMEM`.
    /// - Precondition: `fd` is open (an EBADF descriptor is reported as `POLLNVAL`).
    internal static func waitUntilReadable(_ fd: CInt) throws(Errno) {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, -1) == -1 else {
            precondition(entry.revents & Int16(POLLNVAL) == 0, "RingIO: poll on descriptor \(fd), which is not open")
            return
        }
        let error = Errno(rawValue: errno)
        if error != .interrupted { throw error }
    }

    // MARK: Environment

    /// Whether `RINGIO_VALGRIND=1` is set: rings are set up to run under valgrind (see
    /// ``RingLoop``, "Running under valgrind"). The corresponding C function is `getenv`.
    internal static var valgrindCompatibility: Bool {
        guard let value = getenv("RINGIO_VALGRIND") else { return false }
        return String(cString: value) == "1"
    }

    // MARK: Threads and signals

    /// Starts a thread running `main(context)`. The corresponding C function is
    /// `pthread_create`.
    ///
    /// - Throws: `EAGAIN` when the system lacks the resources (or hit a thread limit).
    internal static func startThread(
        context: UnsafeMutableRawPointer,
        _ main: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?
    ) throws(Errno) -> pthread_t {
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, main, context)
        guard result == 0 else { throw Errno(rawValue: result) }
        return thread
    }

    /// Waits for `thread` to exit. The corresponding C function is `pthread_join`.
    ///
    /// - Precondition: `thread` is joinable, not joined before and not the calling thread
    ///   (EINVAL, ESRCH, EDEADLK are bugs).
    internal static func join(_ thread: pthread_t) {
        let result = pthread_join(thread, nil)
        precondition(result == 0, "RingIO: pthread_join failed: \(Errno(rawValue: result))")
    }

    /// Lets `thread` free its resources when it exits, with no join. The corresponding C
    /// function is `pthread_detach`.
    ///
    /// - Precondition: `thread` is joinable and not joined or detached before (EINVAL, ESRCH
    ///   are bugs).
    internal static func detach(_ thread: pthread_t) {
        let result = pthread_detach(thread)
        precondition(result == 0, "RingIO: pthread_detach failed: \(Errno(rawValue: result))")
    }

    /// The calling thread's identity, as an integer. The corresponding C function is
    /// `pthread_self`, which cannot fail.
    @inline(__always)
    internal static var currentThread: UInt {
        UInt(pthread_self())
    }

    /// Blocks (`SIG_BLOCK`) or unblocks (`SIG_UNBLOCK`) `signal` for the calling thread. The
    /// corresponding C functions are `sigemptyset`, `sigaddset` and `pthread_sigmask`.
    ///
    /// - Precondition: `signal` is a valid signal number (the callers check theirs).
    internal static func changeSignalMask(_ how: CInt, _ signal: CInt) {
        var mask = sigset_t()
        precondition(sigemptyset(&mask) == 0 && sigaddset(&mask, signal) == 0, "RingIO: bad signal number \(signal)")
        let result = pthread_sigmask(how, &mask, nil)
        precondition(result == 0, "RingIO: pthread_sigmask failed: \(Errno(rawValue: result))")
    }

    /// Blocks every signal for the calling thread (a thread that only makes blocking calls
    /// for others: a signal meant for the process must not interrupt them with EINTR, nor run
    /// a handler there). The corresponding C functions are `sigfillset` and `pthread_sigmask`.
    internal static func blockAllSignals() {
        var mask = sigset_t()
        sigfillset(&mask)
        let result = pthread_sigmask(SIG_BLOCK, &mask, nil)
        precondition(result == 0, "RingIO: pthread_sigmask failed: \(Errno(rawValue: result))")
    }

    /// Installs `handler` for `signal` (with `SA_RESTART`, nothing blocked during it) and
    /// returns the action it replaces, for ``restoreSignalAction(_:_:)``. The corresponding C
    /// functions are `sigemptyset` and `sigaction`.
    ///
    /// - Precondition: `signal` is a signal whose action can be changed (the callers check
    ///   theirs: not SIGKILL or SIGSTOP, within 1 ..< 65).
    internal static func setSignalHandler(
        _ signal: CInt,
        _ handler: @convention(c) (CInt) -> Void
    ) -> sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        let result = sigaction(signal, &action, &previous)
        precondition(result == 0, "RingIO: sigaction(\(signal)) failed: \(Errno(rawValue: errno))")
        return previous
    }

    /// Puts back `action`, returned by ``setSignalHandler(_:_:)``, for `signal`. The
    /// corresponding C function is `sigaction`.
    internal static func restoreSignalAction(_ signal: CInt, _ action: sigaction) {
        var action = action
        let result = sigaction(signal, &action, nil)
        precondition(result == 0, "RingIO: sigaction(\(signal)) failed: \(Errno(rawValue: errno))")
    }

    /// The number of processors online, at least 1. The corresponding C call is
    /// `sysconf(_SC_NPROCESSORS_ONLN)`; where it cannot tell (-1), 1.
    internal static var onlineProcessorCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    // MARK: Memory

    /// The size of a memory page. The corresponding C call is `sysconf(_SC_PAGESIZE)`, which
    /// cannot fail on Linux.
    internal static var pageSize: Int {
        let size = sysconf(Int32(_SC_PAGESIZE))
        precondition(size > 0, "RingIO: sysconf(_SC_PAGESIZE) failed")
        return size
    }

    /// `byteCount` bytes aligned to `alignment` (a power of two, a multiple of the pointer
    /// size), uninitialized; release them with ``deallocate(_:)``. The corresponding C function
    /// is `posix_memalign`.
    ///
    /// - Throws: `ENOMEM`.
    internal static func allocate(byteCount: Int, alignment: Int) throws(Errno) -> UnsafeMutableRawPointer {
        var memory: UnsafeMutableRawPointer?
        let result = posix_memalign(&memory, alignment, max(byteCount, 1))
        guard result == 0, let memory else {
            // EINVAL: an alignment that is not a power of two times the pointer size — ours.
            precondition(result != EINVAL, "RingIO: posix_memalign with alignment \(alignment)")
            throw Errno(rawValue: result == 0 ? ENOMEM : result)
        }
        return memory
    }

    /// Releases memory from ``allocate(byteCount:alignment:)``. The corresponding C function
    /// is `free`, which cannot fail.
    internal static func deallocate(_ memory: UnsafeMutableRawPointer) {
        free(memory)
    }
}
