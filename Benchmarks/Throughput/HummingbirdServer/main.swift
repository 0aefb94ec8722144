//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the Hummingbird 2 baseline, an HTTP/1.1 "Hello, World!"
// server on one event loop.
//
//   hummingbird-server --port P [--host 127.0.0.1]
//
// Written as Hummingbird's own examples and PerformanceTest are: a `Router` with one route,
// `GET /`, an `Application` on a shared one-thread `MultiThreadedEventLoopGroup` (as nio-server's),
// the default HTTP/1.1 server. The response is the other hello servers' — 200, `Content-Type:
// text/plain`, "Hello, World!" — from a body built once; Hummingbird adds `Date` (cached once a
// second) and `Content-Length`, and `Server` from the configuration. No middleware, no request log.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Hummingbird
import NIOCore
import NIOPosix
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Command line

/// What the command line asked for.
struct Options {
    var host = "127.0.0.1"
    var port: Int?

    /// Parses `arguments` (without the program name); on bad input prints why and exits 2.
    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            guard let value = remaining.popFirst() else { usage("\(option) needs a value") }
            switch option {
            case "--port":
                guard let port = UInt16(value) else { usage("--port must be a number from 0 to 65535") }
                options.port = Int(port)
            case "--host":
                var address = in_addr()
                guard inet_pton(AF_INET, value, &address) == 1 else { usage("--host must be an IPv4 address") }
                options.host = value
            default:
                usage("unknown option \(option)")
            }
        }
        guard options.port != nil else { usage("--port is required") }
        return options
    }
}

func usage(_ message: String) -> Never {
    printToStandardError("hummingbird-server: \(message)\nusage: hummingbird-server --port P [--host 127.0.0.1]")
    exit(2)
}

// MARK: - Hello

/// What every `GET /` answers, built once: a response only references the body's storage.
enum Hello {
    static let body = ByteBuffer(string: "Hello, World!")
    static let headers: HTTPFields = [.contentType: "text/plain"]

    /// The router: `GET /` only (any other path is Hummingbird's 404).
    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/") { _, _ in
            Response(status: .ok, headers: Self.headers, body: .init(byteBuffer: Self.body))
        }
        return router
    }
}

// MARK: - Main

/// Raises the soft limit on open files to the hard limit (the harness holds many connections).
func raiseOpenFileLimit() {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(resource, &limit)
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
raiseOpenFileLimit()
// SIGINT/SIGTERM exit at once, as the other baselines do (no graceful shutdown: the harness
// stops a server only after its load has ended).
for number in [SIGINT, SIGTERM] {
    signal(number) { _ in _exit(0) }  // async-signal-safe; nothing is left to flush
}
let application = Application(
    router: Hello.router(),
    configuration: .init(address: .hostname(options.host, port: options.port!), serverName: "Hummingbird"),
    onServerRunning: { channel in
        let address = channel.localAddress
        print("listening on \(address?.ipAddress ?? "?"):\(address?.port ?? 0)")
        fflush(nil)  // all streams: stdout is a global var, not concurrency-safe to name
    },
    eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: 1))
)
do {
    try await application.runService(gracefulShutdownSignals: [])
} catch {
    printToStandardError("hummingbird-server: cannot serve on \(options.host):\(options.port!): \(error)")
    exit(1)
}
