//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the classic GCD echo server (the baseline RingIO replaces).
//
//   dispatch-echo-server --port P [--host 127.0.0.1]
//
// A nonblocking listening socket watched by a DispatchSource read source on a serial isolation
// queue, which accepts until EAGAIN. Each connection gets a serial DispatchQueue and a stream
// DispatchIO with low water 1 (no high water, no interval); one read of length Int.max delivers
// chunk after chunk, and each chunk is written back on the same channel as it came (the
// DispatchData itself: no copy). Stream operations complete in order, so the echo keeps order.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Command line

/// What the command line asked for.
struct Options {
    var host = "127.0.0.1"
    var port: UInt16?

    /// Parses `arguments` (without the program name); on bad input prints why and exits 2.
    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            guard let value = remaining.popFirst() else { usage("\(option) needs a value") }
            switch option {
            case "--port":
                guard let port = UInt16(value) else { usage("--port must be a number from 0 to 65535") }
                options.port = port
            case "--host":
                options.host = value
            default:
                usage("unknown option \(option)")
            }
        }
        guard options.port != nil else { usage("--port is required") }
        return options
    }
}

/// Writes a line, prefixed with the program's name, to standard error.
func printError(_ message: String) {
    printToStandardError("dispatch-echo-server: \(message)")
}

func usage(_ message: String) -> Never {
    printError("\(message)\nusage: dispatch-echo-server --port P [--host 127.0.0.1]")
    exit(2)
}

func fail(_ what: String) -> Never {
    printError("\(what): \(String(cString: strerror(errno)))")
    exit(1)
}

// MARK: - Sockets

/// A nonblocking IPv4 listening socket: SO_REUSEADDR, backlog 4096.
func makeListener(host: String, port: UInt16) -> CInt {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { usage("--host must be an IPv4 address") }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket") }
    var one: CInt = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size))
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { fail("bind") }
    guard listen(fd, 4096) == 0 else { fail("listen") }
    return fd
}

/// `HOST:PORT` the socket is bound to.
func localAddress(_ fd: CInt) -> String {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
    inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
    let host = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return "\(host):\(UInt16(bigEndian: address.sin_port))"
}

/// Raises the soft limit on open files to the hard limit (the harness holds 10,000 connections).
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
}

/// Glibc imports RLIMIT_NOFILE as an enum case of `__rlimit_resource`; the calls take its raw value.
let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

// MARK: - Connections

/// Accepts every pending connection (readiness is coalesced: one event may stand for several),
/// until EAGAIN. Runs on the isolation queue.
func acceptPending(on listener: CInt) {
    while true {
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else {
            switch errno {
            case EAGAIN, EWOULDBLOCK: return
            case EINTR, ECONNABORTED: continue
            default:
                // EMFILE and the like: try again at the next readiness event.
                printError("accept: \(String(cString: strerror(errno)))")
                return
            }
        }
        serve(fd)
    }
}

/// Echoes on `fd` until EOF or an error, then closes it (in the channel's cleanup handler).
func serve(_ fd: CInt) {
    // Socket options before the channel exists: afterwards the fd is the channel's.
    var one: CInt = 1
    setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    let queue = DispatchQueue(label: "dispatch-echo-server.connection")
    let channel = DispatchIO(type: .stream, fileDescriptor: fd, queue: queue) { _ in close(fd) }
    channel.setLimit(lowWater: 1)
    // One read until EOF; its handler runs once per delivered chunk, on `queue`. The handler
    // holds the channel until `done`, which comes exactly once, last.
    channel.read(offset: 0, length: Int.max, queue: queue) { done, data, error in
        if let data, !data.isEmpty {
            channel.write(offset: 0, data: data, queue: queue) { done, _, error in
                // A failed write (peer gone): drop whatever is still queued.
                if done && error != 0 { channel.close(flags: .stop) }
            }
        }
        if done {
            // EOF: the writes already queued still run, then the channel closes the fd.
            // An error (a reset): nothing more can be delivered, stop at once.
            channel.close(flags: error == 0 ? [] : .stop)
        }
    }
}

// MARK: - Main

/// Starts listening and serves until SIGINT/SIGTERM.
///
/// A function rather than top-level code on purpose: closures written at the top level of
/// `main.swift` are main-actor isolated in Swift 6, and the runtime traps when a dispatch queue
/// runs them on another thread. Closures made here are nonisolated.
func run(_ options: Options) -> Never {
    raiseOpenFileLimit()
    signal(SIGPIPE, SIG_IGN)
    let listener = makeListener(host: options.host, port: options.port!)

    let isolation = DispatchQueue(label: "dispatch-echo-server.isolation")
    let acceptSource = DispatchSource.makeReadSource(fileDescriptor: listener, queue: isolation)
    acceptSource.setEventHandler { acceptPending(on: listener) }
    acceptSource.setCancelHandler { close(listener) }
    acceptSource.activate()

    // SIGINT/SIGTERM: the default action is ignored so that the sources see them; exit at once.
    var signalSources: [any DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { exit(0) }
        source.activate()
        signalSources.append(source)
    }

    print("listening on \(localAddress(listener))")
    fflush(nil)  // all streams: stdout is a global var, not concurrency-safe to name
    // Never returns, so the sources above stay alive.
    withExtendedLifetime((acceptSource, signalSources)) { dispatchMain() }
}

run(Options.parse(Array(CommandLine.arguments.dropFirst())))
