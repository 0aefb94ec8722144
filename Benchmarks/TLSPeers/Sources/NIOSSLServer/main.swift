//===----------------------------------------------------------------------===//
// RingIO — throughput comparison's TLS peer: an HTTPS "Hello, World!" server on SwiftNIO and
// swift-nio-ssl (NIOSSL, on BoringSSL), on one event loop.
//
//   nio-ssl-server --port P --certificate PEM --key PEM [--host 127.0.0.1]
//
// The plaintext baseline's server (Throughput/NIOServer, `--protocol http`) with
// `NIOSSLServerHandler` in front of NIO's HTTP/1.1 pipeline, as swift-nio-ssl's documentation
// sets a server up: TLS 1.2 or 1.3 (BoringSSL picks AES-128-GCM first where the CPU has AES
// instructions), ALPN "http/1.1", flush once per read burst, a response head built once a
// second and only referenced per request. Prints "nio-ssl-server listening on HOST:PORT".
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Command line

struct Options {
    var host = "127.0.0.1"
    var port: Int?
    var certificate: String?
    var key: String?

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard let value = remaining.popFirst() else { usage("\(flag) needs a value") }
            switch flag {
            case "--host": options.host = value
            case "--port": options.port = Int(value)
            case "--certificate": options.certificate = value
            case "--key": options.key = value
            default: usage("unknown option \(flag)")
            }
        }
        guard options.port != nil, options.certificate != nil, options.key != nil else {
            usage("--port, --certificate and --key are required")
        }
        return options
    }
}

func usage(_ message: String) -> Never {
    printError("\(message)\nusage: nio-ssl-server --port P --certificate PEM --key PEM [--host 127.0.0.1]")
    exit(64)
}

func printError(_ message: String) {
    let line = Array("nio-ssl-server: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

// MARK: - HTTP

/// The response head, rebuilt once a second with a fresh `Date`; requests only reference it.
/// Confined to its event loop.
final class ResponseHeadCache {
    private(set) var head: HTTPResponseHead

    private init() {
        self.head = Self.makeHead()
    }

    /// A cache on `eventLoop` (call there), refreshed just after every full second.
    static func make(on eventLoop: any EventLoop) -> NIOLoopBound<ResponseHeadCache> {
        let cache = NIOLoopBound(ResponseHeadCache(), eventLoop: eventLoop)
        Self.scheduleRefresh(cache, on: eventLoop)
        return cache
    }

    private static func scheduleRefresh(_ cache: NIOLoopBound<ResponseHeadCache>, on eventLoop: any EventLoop) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        eventLoop.scheduleTask(in: .nanoseconds(1_000_000_000 - Int64(now.tv_nsec) + 1_000_000)) {
            cache.value.head = Self.makeHead()
            Self.scheduleRefresh(cache, on: eventLoop)
        }
    }

    private static func makeHead() -> HTTPResponseHead {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let headers = HTTPHeaders([
            ("Server", "SwiftNIO"),
            ("Date", imfFixdate(now.tv_sec)),
            ("Content-Type", "text/plain"),
            ("Content-Length", "13"),
        ])
        return HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 IMF-fixdate), independent of the locale.
func imfFixdate(_ seconds: time_t) -> String {
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    var seconds = seconds
    var fields = tm()
    gmtime_r(&seconds, &fields)
    func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(days[Int(fields.tm_wday)]), \(twoDigits(fields.tm_mday)) \(months[Int(fields.tm_mon)]) "
        + "\(1900 + fields.tm_year) \(twoDigits(fields.tm_hour)):\(twoDigits(fields.tm_min)):"
        + "\(twoDigits(fields.tm_sec)) GMT"
}

/// Answers every request with 200 "Hello, World!", behind `configureHTTPServerPipeline()`
/// (which hands it one request at a time, in order).
final class HelloHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let body = ByteBuffer(string: "Hello, World!")

    private let cache: ResponseHeadCache
    private var request: HTTPRequestHead?

    init(cache: ResponseHeadCache) {
        self.cache = cache
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let request):
            self.request = request
        case .body:
            break
        case .end:
            guard let request = self.request else { return }
            self.request = nil
            self.respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = request.isKeepAlive
        var head = self.cache.head
        if request.version != .http1_1 || !keepAlive {
            head.version = request.version
            head.headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        }
        context.write(Self.wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD {
            context.write(Self.wrapOutboundOut(.body(.byteBuffer(Self.body))), promise: nil)
        }
        if keepAlive {
            context.write(Self.wrapOutboundOut(.end(nil)), promise: nil)  // flushed in channelReadComplete
        } else {
            context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

// MARK: - The server

func run(_ options: Options) -> Never {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    if getrlimit(resource, &limit) == 0 {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resource, &limit)
    }
    for number in [SIGINT, SIGTERM] {
        signal(number) { _ in _exit(0) }  // async-signal-safe; nothing is left to flush
    }
    let context: NIOSSLContext
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(options.certificate!)
        let key = try NIOSSLPrivateKey(file: options.key!, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        context = try NIOSSLContext(configuration: configuration)
    } catch {
        printError("cannot load the certificate or key: \(error)")
        exit(1)
    }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let cache = try! group.next().submit { ResponseHeadCache.make(on: group.next()) }.wait()
    let bootstrap = ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 4096)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(HelloHandler(cache: cache.value))
            }
        }
    let channel: any Channel
    do {
        channel = try bootstrap.bind(host: options.host, port: options.port!).wait()
    } catch {
        printError("cannot listen on \(options.host):\(options.port!): \(error)")
        exit(1)
    }
    let address = channel.localAddress
    print("nio-ssl-server listening on \(address?.ipAddress ?? options.host):\(address?.port ?? options.port!)")
    fflush(nil)  // all streams: stdout is a global var, not concurrency-safe to name
    try? channel.closeFuture.wait()
    exit(0)
}

run(Options.parse(Array(CommandLine.arguments.dropFirst())))
