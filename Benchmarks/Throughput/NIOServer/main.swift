//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the SwiftNIO baselines, on one event loop: an echo server,
// an HTTP/1.1 "Hello, World!" server, a UDP echo server, and a connect client.
//
//   nio-server --protocol echo|http [--api handlers|async] --port P [--host 127.0.0.1]
//   nio-server --protocol udp-echo [--vector-reads N] --port P [--host 127.0.0.1]
//   nio-server --protocol connect --port P [--concurrency 32] [--size 64] [--warmup 1]
//              [--duration 5] [--peer-pid PID …]
//
// Written the way NIO's own examples are (NIOEchoServer, NIOHTTP1Server), tuned as NIO's
// authors would: the default allocator and read settings, flush once per read burst, and for
// HTTP a response head that is built once a second and only referenced per request.
// `--api async` (echo only) is NIO's async/await server as its documentation writes it
// (NIOCore's "swift-concurrency" article, NIOTCPEchoServer): NIOAsyncChannel connections from
// `ServerBootstrap.bind`, a task each in a discarding task group.
// `--protocol udp-echo` is NIO's UDP echo example (NIOUDPEchoServer): a DatagramBootstrap
// channel whose handler writes every AddressedEnvelope back and flushes once per read burst;
// `--vector-reads N` is that example's `--enable-gathering-reads` (recvmmsg, N datagrams a
// call, into one N × 2,048-byte buffer). `--protocol connect` is a client, NIO's echo client
// (NIOEchoClient) in a loop: see ConnectClient below.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import NIOCore
import NIOHTTP1
import NIOPosix
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Command line

/// What the command line asked for.
struct Options {
    enum ServedProtocol: String {
        case echo
        case http
        /// UDP echo (DatagramBootstrap).
        case udpEcho = "udp-echo"
        /// A client (ClientBootstrap): connects to --port, in a loop.
        case connect
    }

    /// How connections are served (the names of RingIO's example servers' `--api`).
    enum API: String {
        /// Channel handlers on the event loop.
        case handlers
        /// `NIOAsyncChannel` and a task per connection.
        case async
    }

    var servedProtocol: ServedProtocol?
    var api = API.handlers
    var host = "127.0.0.1"
    var port: Int?
    /// udp-echo: datagrams per `recvmmsg` (0: NIO's default, one `recvmsg` per datagram).
    var vectorReads = 0
    /// connect: connections under way at once, bytes per exchange, the warm-up and the
    /// measured window (seconds), and the echo server's processes.
    var concurrency = 32
    var size = 64
    var warmup = 1.0
    var duration = 5.0
    var peerPIDs: [pid_t] = []

    /// Parses `arguments` (without the program name); on bad input prints why and exits 2.
    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            guard let value = remaining.popFirst() else { usage("\(option) needs a value") }
            switch option {
            case "--protocol":
                guard let served = ServedProtocol(rawValue: value) else { usage("--protocol must be echo or http") }
                options.servedProtocol = served
            case "--api":
                guard let api = API(rawValue: value) else { usage("--api must be handlers or async") }
                options.api = api
            case "--port":
                guard let port = UInt16(value) else { usage("--port must be a number from 0 to 65535") }
                options.port = Int(port)
            case "--host":
                var address = in_addr()
                guard inet_pton(AF_INET, value, &address) == 1 else { usage("--host must be an IPv4 address") }
                options.host = value
            case "--vector-reads":
                guard let count = Int(value), (0...1024).contains(count) else {
                    usage("--vector-reads must be a number from 0 to 1024")
                }
                options.vectorReads = count
            case "--concurrency", "--size":
                guard let number = Int(value), number >= 1 else { usage("\(option) must be at least 1") }
                if option == "--concurrency" { options.concurrency = number } else { options.size = number }
            case "--warmup", "--duration":
                guard let seconds = Double(value), seconds >= 0 else { usage("\(option) must be a number of seconds") }
                if option == "--warmup" { options.warmup = seconds } else { options.duration = seconds }
            case "--peer-pid":
                guard let pid = pid_t(value) else { usage("--peer-pid must be a process id") }
                options.peerPIDs.append(pid)
            default:
                usage("unknown option \(option)")
            }
        }
        guard options.servedProtocol != nil else { usage("--protocol is required") }
        guard options.port != nil else { usage("--port is required") }
        guard options.servedProtocol != .connect || (options.port! > 0 && options.duration > 0) else {
            usage("--protocol connect needs the echo server's --port and a positive --duration")
        }
        guard options.api == .handlers || options.servedProtocol == .echo else {
            usage("--api async serves --protocol echo only")
        }
        return options
    }
}

/// Writes a line, prefixed with the program's name, to standard error.
func printError(_ message: String) {
    printToStandardError("nio-server: \(message)")
}

func usage(_ message: String) -> Never {
    printError(
        "\(message)\nusage: nio-server --protocol echo|http|udp-echo|connect [--api handlers|async] "
            + "[--vector-reads N] --port P [--host 127.0.0.1] [--concurrency N] [--size N] [--warmup S] "
            + "[--duration S] [--peer-pid PID]"
    )
    exit(2)
}

// MARK: - Echo

/// Writes every buffer back as it came and flushes once per read burst (NIO's echo example),
/// and on a half-close closes only after everything read has been written back.
final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let event = event as? ChannelEvent, event == .inputClosed else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The peer sent EOF (possible because `allowRemoteHalfClosure` is on; otherwise NIO
        // would close at once and drop writes still queued). Writes complete in order, so an
        // empty write's completion means all the echoed bytes are on the wire.
        context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer())).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

// MARK: - Echo, async/await

/// Serves the connections `server` accepts, each in a child task of a discarding task group
/// (which reaps a connection's task when it ends), until the listening channel closes. The
/// tasks run on Swift's global concurrent executor; NIO's event loop does the I/O and hands
/// each read to its connection's task, and each write back.
func serveAsyncEcho(_ server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>) async throws {
    try await withThrowingDiscardingTaskGroup { group in
        try await server.executeThenClose { connections in
            for try await connection in connections {
                group.addTask {
                    do {
                        try await connection.executeThenClose { inbound, outbound in
                            for try await buffer in inbound {
                                try await outbound.write(buffer)
                            }
                        }
                    } catch {
                        // A reset, or a write after the peer left: that connection is closed,
                        // and only it.
                    }
                }
            }
        }
    }
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

    /// Re-aimed at the wall clock's next second each time (a repeated task would drift), and a
    /// millisecond past it, so that the clock read there is surely in the new second.
    private static func scheduleRefresh(_ cache: NIOLoopBound<ResponseHeadCache>, on eventLoop: any EventLoop) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        eventLoop.scheduleTask(in: .nanoseconds(1_000_000_000 - Int64(now.tv_nsec) + 1_000_000)) {
            cache.value.head = Self.makeHead()
            Self.scheduleRefresh(cache, on: eventLoop)
        }
    }

    private static func makeHead() -> HTTPResponseHead {
        // Not `time(nil)`: glibc answers it from the coarse clock, which just after a second
        // starts still reads the one before (by up to a tick).
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

/// Answers every request with 200 "Hello, World!". Sits behind `configureHTTPServerPipeline()`,
/// whose pipelining handler hands it one request at a time, in order.
final class HelloHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The body, shared by every response (a ByteBuffer write only retains it).
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
            // The rare paths (HTTP/1.0, `Connection: close`) copy the cached head.
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

// MARK: - UDP echo

/// Writes every datagram back to where it came from (an `AddressedEnvelope` written as it
/// came is addressed to its sender) and flushes once per read burst: NIO's UDP echo example.
final class DatagramEchoHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A send to a sender that went away (ECONNREFUSED from its ICMP) drops that datagram,
        // as UDP may; the channel goes on.
    }
}

/// `--protocol udp-echo`: binds, announces, serves until SIGINT/SIGTERM.
func runUDPEcho(_ group: MultiThreadedEventLoopGroup, _ options: Options) -> Never {
    var bootstrap = DatagramBootstrap(group: group)
        .channelOption(.socketOption(.so_reuseaddr), value: 1)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(DatagramEchoHandler())
            }
        }
    if options.vectorReads > 0 {
        bootstrap = bootstrap.channelOption(.datagramVectorReadMessageCount, value: options.vectorReads)
            .channelOption(
                .recvAllocator,
                value: FixedSizeRecvByteBufferAllocator(capacity: options.vectorReads * 2048)
            )
    }
    let channel: any Channel
    do {
        channel = try bootstrap.bind(host: options.host, port: options.port!).wait()
    } catch {
        printError("cannot bind \(options.host):\(options.port!): \(error)")
        exit(1)
    }
    announce(channel, options)
    try? channel.closeFuture.wait()
    exit(0)
}

// MARK: - Connect client

/// One connection of the connect client, NIO's echo client (NIOEchoClient) as a loop step:
/// on `channelActive` it writes the message, reads it back, checks it, closes, and the close
/// starts the next connection. Created by the bootstrap's initializer as the connect starts.
final class ConnectExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let client: ConnectClient
    private let started = monotonicNanoseconds()
    private var received: ByteBuffer
    private var done = false

    init(client: ConnectClient) {
        self.client = client
        self.received = ByteBuffer()
        self.received.reserveCapacity(client.message.readableBytes)
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(Self.wrapOutboundOut(self.client.message), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        self.received.writeBuffer(&buffer)
        guard !self.done, self.received.readableBytes >= self.client.message.readableBytes else { return }
        self.done = true
        if self.received != self.client.message {
            self.client.measurement.fail("the echo differs from the bytes sent")
        } else {
            self.client.measurement.completed(startedAt: self.started)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.done {
            self.done = true
            self.client.measurement.fail(
                "\(self.received.readableBytes) bytes came back of \(self.client.message.readableBytes) (closed early)"
            )
        }
        // The next connection, on this event loop.
        self.client.next()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !self.done {
            self.done = true
            self.client.measurement.fail("the exchange failed: \(error)")
        }
        context.close(promise: nil)
    }
}

/// `--protocol connect`: `concurrency` connections under way on the one event loop, each
/// connect (ClientBootstrap, by address: no name to resolve) → write → read back → close;
/// each one's end starts the next. Prints one LoadReport (JSON) of its own CPU time per
/// connection (ConnectMeasurement), as RingIO's connect-client does.
final class ConnectClient: @unchecked Sendable {
    // @unchecked: `bootstrap` is set once in `start`, before the first connect is scheduled on
    // the event loop (which orders it before every read); the rest is immutable or Sendable.
    let message: ByteBuffer
    let measurement: ConnectMeasurement
    private let address: NIOCore.SocketAddress
    private let eventLoop: any EventLoop
    private var bootstrap: ClientBootstrap?

    init(address: NIOCore.SocketAddress, eventLoop: any EventLoop, size: Int, loops: Int) {
        self.address = address
        self.eventLoop = eventLoop
        self.message = ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 1) })
        self.measurement = ConnectMeasurement(loops: loops)
    }

    func start(loops: Int) {
        self.bootstrap = ClientBootstrap(group: self.eventLoop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectExchangeHandler(client: self))
                }
            }
        self.eventLoop.execute {
            for _ in 0..<loops { self.next() }
        }
    }

    /// A new connection, unless the measurement is over. On the event loop.
    func next() {
        guard self.measurement.goesOn else { return self.measurement.loopEnded() }
        self.bootstrap!.connect(to: self.address).whenFailure { error in
            self.measurement.fail("connect to \(self.address): \(error)")
            self.measurement.loopEnded()
        }
    }
}

/// Runs the connect client, prints its report, exits.
func runConnectClient(_ group: MultiThreadedEventLoopGroup, _ options: Options) -> Never {
    let address: NIOCore.SocketAddress
    do {
        address = try NIOCore.SocketAddress(ipAddress: options.host, port: options.port!)
    } catch {
        usage("--host: \(error)")
    }
    let client = ConnectClient(
        address: address,
        eventLoop: group.next(),
        size: options.size,
        loops: options.concurrency
    )
    client.start(loops: options.concurrency)
    let result = client.measurement.run(
        warmup: options.warmup,
        duration: options.duration,
        concurrency: options.concurrency,
        size: options.size,
        peers: options.peerPIDs
    )
    switch result {
    case .success(let report):
        print(report.jsonLine)
        fflush(nil)
        exit(0)
    case .failure(let failure):
        printError("\(failure)")
        exit(1)
    }
}

// MARK: - Main

/// Raises the soft limit on open files to the hard limit (the harness holds 10,000 connections).
func raiseOpenFileLimit() {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(resource, &limit)
}

/// The listening socket's and the connections' options, whichever the API.
func makeBootstrap(_ group: MultiThreadedEventLoopGroup) -> ServerBootstrap {
    ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 4096)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
}

/// Prints the address `channel` listens on (the harness waits for the port to accept).
func announce(_ channel: any Channel, _ options: Options) {
    let address = channel.localAddress
    print("listening on \(address?.ipAddress ?? options.host):\(address?.port ?? options.port!)")
    fflush(nil)  // all streams: stdout is a global var, not concurrency-safe to name
}

/// Starts the server and serves until SIGINT/SIGTERM, which exit at once.
func run(_ options: Options) -> Never {
    raiseOpenFileLimit()
    for number in [SIGINT, SIGTERM] {
        signal(number) { _ in _exit(0) }  // async-signal-safe; nothing is left to flush
    }
    // One event loop thread, whichever the API: the I/O of every connection is on it.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    if options.api == .async {
        runAsyncEcho(group, options)
    }
    switch options.servedProtocol! {
    case .udpEcho: runUDPEcho(group, options)
    case .connect: runConnectClient(group, options)
    case .echo, .http: break
    }
    let served = options.servedProtocol!
    let cache = try! group.next().submit { ResponseHeadCache.make(on: group.next()) }.wait()

    let bootstrap = makeBootstrap(group)
        // Echo: see EOF as an event, so that what is queued is still written back. HTTP keeps
        // NIO's default (close on EOF), as NIO's HTTP server example does.
        .childChannelOption(.allowRemoteHalfClosure, value: served == .echo)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                switch served {
                case .echo:
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                case .http:
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(HelloHandler(cache: cache.value))
                case .udpEcho, .connect:
                    preconditionFailure("served above")
                }
            }
        }

    let channel: any Channel
    do {
        channel = try bootstrap.bind(host: options.host, port: options.port!).wait()
    } catch {
        printError("cannot listen on \(options.host):\(options.port!): \(error)")
        exit(1)
    }
    announce(channel, options)
    try? channel.closeFuture.wait()
    exit(0)
}

/// `--api async`: binds with NIO's async `bind`, each accepted channel wrapped in a
/// `NIOAsyncChannel<ByteBuffer, ByteBuffer>` before it registers (so no read is lost), and
/// serves from a task on Swift's global executor while this thread waits. NIO's defaults
/// otherwise, as its documentation's server: close on EOF, the inbound stream's watermarks.
func runAsyncEcho(_ group: MultiThreadedEventLoopGroup, _ options: Options) -> Never {
    let finished = DispatchSemaphore(value: 0)
    Task {
        do {
            let server = try await makeBootstrap(group).bind(host: options.host, port: options.port!) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
            announce(server.channel, options)
            try await serveAsyncEcho(server)
        } catch {
            printError("cannot serve on \(options.host):\(options.port!): \(error)")
            exit(1)
        }
        finished.signal()
    }
    finished.wait()
    exit(0)
}

run(Options.parse(Array(CommandLine.arguments.dropFirst())))
