//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the load generator's event loop (one thread, epoll).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ThroughputSupport

/// N nonblocking connections driven by one thread through level-triggered epoll.
///
/// Everything is allocated in `init`: the connection table, the start-time stamps, one receive
/// buffer for all connections, the epoll event array, the echo pattern and the HTTP request.
/// A read or a write allocates nothing, takes no lock and makes no dynamic call.
///
/// Lifecycle:
///
///     init ──> openAll() ──> startLoad() ──> run(until:) (warm-up) ──> run(until:) (measured) ──> deinit
///                 │                                    recording = false          recording = true
///                 └─ idle mode: each connection does its one round trip here, then run(until:) settles
///
/// Not copyable: it owns the descriptors and the memory, and `deinit` releases them once.
struct LoadEngine: ~Copyable {
    /// Connects in progress (or, in idle mode, round trips not yet done) at any time, so a
    /// server's listen backlog is not overrun.
    static let openWindow = 256
    /// A connection with work outstanding and no progress for this long fails the run.
    static let stallLimit: UInt64 = 5_000_000_000
    /// How often the stall check looks at every connection.
    static let checkInterval: UInt64 = 500_000_000
    /// Reads per readiness event before moving on to the next connection.
    static let readsPerEvent = 4
    /// The receive buffer, and the longest slice of the pattern one send takes.
    static let receiveBufferSize = 256 * 1024

    // MARK: Immutable after init

    let mode: LoadMode
    let address: SocketAddress
    let connectionCount: Int
    let depth: Int
    /// Bytes per operation: the echo message size, or the HTTP request's length.
    let unit: Int
    let streamWindow: Int
    let epoll: Int32

    /// `connections[i]` for `i` in `0..<connectionCount`, all initialized in `init` and
    /// deinitialized in `deinit`. Only this thread touches them.
    let connections: UnsafeMutablePointer<Connection>
    /// Start times of the operations in flight: connection `i` owns slots `i * depth ..< (i + 1) * depth`,
    /// and its operation `k` uses slot `k % depth`. At most `depth` operations of a connection are in
    /// flight (ping-pong and http issue operation `k + depth` only when `k` completes), so a slot is
    /// overwritten only after its operation completed.
    let stamps: UnsafeMutablePointer<UInt64>
    let receiveBuffer: ByteBlock
    let events: ReadyEvents
    let pattern: BytePattern
    /// HTTP: `depth + 1` copies of the request back to back, so the `depth * unit` bytes or fewer
    /// that may be due from any offset into one request are contiguous.
    let requests: ByteBlock
    let expectedBodyBlock: ByteBlock
    /// HTTP: a view of `expectedBodyBlock` (owned by `self`, so valid as long as `self`), or `nil`.
    let expectedBody: UnsafeRawBufferPointer?

    // MARK: Counters (this thread only)

    /// Whether completions count: `false` during the warm-up.
    var recording = false
    /// Operations completed while recording.
    var operations = 0
    /// Bytes received (and checked) while recording.
    var bytes = 0
    var histogram = LatencyHistogram()
    /// Connections opened so far (they are opened in index order).
    var opened = 0
    /// Connections done with `openAll()`: connected (idle mode: round trip done too).
    var settled = 0

    init(plan: LoadPlan) throws(LoadFailure) {
        do {
            self.epoll = try Syscalls.makeEpoll()
        } catch {
            throw LoadFailure("epoll_create1: \(error)")
        }
        self.mode = plan.mode
        self.address = plan.address
        self.connectionCount = plan.connections
        self.depth = plan.depth
        self.unit = plan.mode == .http ? plan.request.count : plan.size
        self.streamWindow = plan.streamWindow
        self.connections = .allocate(capacity: plan.connections)
        for index in 0..<plan.connections {
            var connection = Connection()
            connection.sendPhase = plan.mode == .http ? 0 : BytePattern.startPhase(ofConnection: index)
            connection.receivePhase = connection.sendPhase
            (self.connections + index).initialize(to: connection)
        }
        self.stamps = .allocate(capacity: plan.connections * plan.depth)
        self.stamps.initialize(repeating: 0, count: plan.connections * plan.depth)
        self.receiveBuffer = ByteBlock(count: Self.receiveBufferSize)
        self.events = ReadyEvents(capacity: 256)
        self.pattern = BytePattern(span: Self.receiveBufferSize)
        self.requests = ByteBlock(repeating: plan.request, times: plan.mode == .http ? plan.depth + 1 : 0)
        self.expectedBodyBlock = ByteBlock(repeating: plan.expectedBody ?? [], times: 1)
        self.expectedBody =
            plan.expectedBody == nil
            ? nil : UnsafeRawBufferPointer(start: self.expectedBodyBlock.base, count: self.expectedBodyBlock.count)
    }

    deinit {
        for index in 0..<self.opened where self.connections[index].fd >= 0 {
            Syscalls.close(self.connections[index].fd)
        }
        Syscalls.close(self.epoll)
        self.connections.deinitialize(count: self.connectionCount)
        self.connections.deallocate()
        self.stamps.deallocate()
    }

    // MARK: Phases

    /// Opens every connection, at most ``openWindow`` unsettled at a time, and returns when all
    /// are connected (idle mode: when each has also made its round trip).
    mutating func openAll() throws(LoadFailure) {
        var nextCheck = monotonicNanoseconds() + Self.checkInterval
        while self.settled < self.connectionCount {
            while self.opened < self.connectionCount && self.opened - self.settled < Self.openWindow {
                try self.open(self.opened)
            }
            try self.poll(timeoutMilliseconds: 100)
            let now = monotonicNanoseconds()
            if now >= nextCheck {
                try self.checkForStalls(now)
                nextCheck = now + Self.checkInterval
            }
        }
    }

    /// Puts the first operations of every connection in flight.
    mutating func startLoad() throws(LoadFailure) {
        let now = monotonicNanoseconds()
        for index in 0..<self.connectionCount {
            let connection = self.connections + index
            connection.pointee.lastProgress = now
            if self.mode == .pingpong || self.mode == .http {
                connection.pointee.allowed = self.depth * self.unit
            }
            try self.send(index)
        }
    }

    /// Serves every connection until the monotonic clock reaches `deadline` (nanoseconds).
    mutating func run(until deadline: UInt64) throws(LoadFailure) {
        var now = monotonicNanoseconds()
        var nextCheck = now + Self.checkInterval
        while now < deadline {
            let wake = min(deadline, nextCheck)
            // Rounded up: waking early would only spin.
            try self.poll(timeoutMilliseconds: Int32((wake - now + 999_999) / 1_000_000))
            now = monotonicNanoseconds()
            if now >= nextCheck {
                try self.checkForStalls(now)
                nextCheck = now + Self.checkInterval
            }
        }
    }

    // MARK: Events

    /// One `epoll_wait` and the events it returns.
    private mutating func poll(timeoutMilliseconds: Int32) throws(LoadFailure) {
        let count = Syscalls.wait(self.epoll, into: self.events, timeoutMilliseconds: timeoutMilliseconds)
        for event in 0..<count {
            let (token, flags) = self.events[event]
            let index = Int(truncatingIfNeeded: token)
            switch self.connections[index].state {
            case .connecting:
                try self.finishConnect(index)
            case .open, .finished:
                if flags & (Syscalls.readable | Syscalls.errorOrHangUp) != 0 {
                    // Sends too, once it has read.
                    try self.receive(index)
                } else if flags & Syscalls.writable != 0 {
                    try self.send(index)
                }
            case .unopened:
                assertionFailure("an event for connection \(index), which is not open")
            }
        }
    }

    /// Reads what connection `index` has (a bounded number of times), checks it, then sends
    /// whatever that allowed.
    @inline(__always)
    private mutating func receive(_ index: Int) throws(LoadFailure) {
        let connection = self.connections + index
        var reads = 0
        reading: while reads < Self.readsPerEvent {
            switch Syscalls.receive(connection.pointee.fd, into: self.receiveBuffer.buffer) {
            case .transferred(let count):
                let now = monotonicNanoseconds()
                connection.pointee.lastProgress = now
                if self.mode == .http {
                    try self.consumeHTTP(index, count: count, at: now)
                } else {
                    try self.consumeEcho(index, count: count, at: now)
                }
                // A short read emptied the socket: level-triggered epoll reports any more.
                if count < self.receiveBuffer.count { break reading }
                reads += 1
            case .wouldBlock:
                break reading
            case .endOfStream:
                throw .connection(
                    index,
                    "the server closed the connection (end of stream at offset \(connection.pointee.received) "
                        + "of what it sent back; \(connection.pointee.sent) bytes sent to it)"
                )
            case .failed(let error):
                throw .connection(
                    index,
                    "receive failed at offset \(connection.pointee.received): \(error)"
                )
            }
        }
        if connection.pointee.state == .open {
            try self.send(index)
        }
    }

    @inline(__always)
    private mutating func send(_ index: Int) throws(LoadFailure) {
        if self.mode == .stream {
            try self.sendStream(index)
        } else {
            try self.sendAllowed(index)
        }
    }

    /// Sends connection `index`'s bytes from `sent` up to `allowed` (ping-pong, http, idle),
    /// stamping the start time of each operation whose first byte goes out.
    @inline(__always)
    private mutating func sendAllowed(_ index: Int) throws(LoadFailure) {
        let connection = self.connections + index
        while connection.pointee.allowed > connection.pointee.sent {
            let phase = connection.pointee.sendPhase
            let due = connection.pointee.allowed - connection.pointee.sent
            let source: UnsafeRawPointer
            let length: Int
            if self.mode == .http {
                // phase < unit and due <= depth * unit: within the depth + 1 copies.
                source = UnsafeRawPointer(self.requests.base + phase)
                length = due
            } else {
                source = self.pattern.bytes(at: phase)
                length = min(due, self.pattern.span)
            }
            let now = monotonicNanoseconds()
            let (count, more) = try self.sendOnce(index, source, length)
            let end = connection.pointee.sent + count
            while connection.pointee.stamped * self.unit < end {
                self.stamps[index * self.depth + connection.pointee.stamped % self.depth] = now
                connection.pointee.stamped += 1
            }
            connection.pointee.sent = end
            connection.pointee.sendPhase =
                self.mode == .http ? (phase + count) % self.unit : BytePattern.advance(phase, by: count)
            guard more else { return }
        }
        try self.watchWritable(index, false)
    }

    /// One send of connection `index`: how many bytes went, and whether all of them did (the
    /// caller may go on). When the socket took less, or nothing, it is watched for room.
    @inline(__always)
    mutating func sendOnce(
        _ index: Int,
        _ source: UnsafeRawPointer,
        _ length: Int
    ) throws(LoadFailure) -> (count: Int, more: Bool) {
        let connection = self.connections + index
        switch Syscalls.send(connection.pointee.fd, source, length) {
        case .transferred(let count):
            if count < length { try self.watchWritable(index, true) }
            return (count, count == length)
        case .wouldBlock:
            try self.watchWritable(index, true)
            return (0, false)
        case .failed(let error):
            throw .connection(index, "send failed at offset \(connection.pointee.sent): \(error)")
        case .endOfStream:
            preconditionFailure("send does not report an end of stream")
        }
    }

    /// Records the latency of operations `first..<last` of connection `index`, completed `now`.
    @inline(__always)
    mutating func recordLatencies(_ index: Int, _ first: Int, _ last: Int, now: UInt64) {
        let slots = self.stamps + index * self.depth
        for operation in first..<last {
            self.histogram.record(now &- slots[operation % self.depth])
        }
    }

    /// Makes epoll watch connection `index` for writability too, or no longer.
    @inline(__always)
    mutating func watchWritable(_ index: Int, _ watch: Bool) throws(LoadFailure) {
        let connection = self.connections + index
        guard connection.pointee.watchesWritable != watch else { return }
        connection.pointee.watchesWritable = watch
        let flags = Syscalls.readable | (watch ? Syscalls.writable : 0)
        do {
            try Syscalls.watch(self.epoll, connection.pointee.fd, flags: flags, token: UInt64(index), adding: false)
        } catch {
            throw .connection(index, "epoll_ctl: \(error)")
        }
    }

    // MARK: Opening

    private mutating func open(_ index: Int) throws(LoadFailure) {
        let connection = self.connections + index
        let fd: Int32
        do {
            fd = try Syscalls.startConnect(to: self.address)
        } catch {
            throw .connection(index, "connect to \(self.address.text) failed: \(error)")
        }
        connection.pointee.fd = fd
        connection.pointee.state = .connecting
        connection.pointee.watchesWritable = true
        connection.pointee.lastProgress = monotonicNanoseconds()
        self.opened += 1
        do {
            try Syscalls.watch(self.epoll, fd, flags: Syscalls.writable, token: UInt64(index), adding: true)
        } catch {
            throw .connection(index, "epoll_ctl: \(error)")
        }
    }

    private mutating func finishConnect(_ index: Int) throws(LoadFailure) {
        let connection = self.connections + index
        let error = Syscalls.pendingError(connection.pointee.fd)
        guard error == 0 else {
            throw .connection(index, "connect to \(self.address.text) failed: \(SystemError(code: error))")
        }
        connection.pointee.state = .open
        connection.pointee.lastProgress = monotonicNanoseconds()
        try self.watchWritable(index, false)
        if self.mode == .idle {
            connection.pointee.allowed = self.unit
            try self.send(index)
        } else {
            self.settled += 1
        }
    }

    // MARK: Stalls

    /// Fails if a connection has had work outstanding, and no progress, for ``stallLimit``.
    private func checkForStalls(_ now: UInt64) throws(LoadFailure) {
        for index in 0..<self.opened {
            let connection = self.connections[index]
            guard now - connection.lastProgress > Self.stallLimit else { continue }
            let seconds = Self.stallLimit / 1_000_000_000
            switch connection.state {
            case .connecting:
                throw .connection(index, "connect to \(self.address.text) did not complete in \(seconds) s")
            case .open where self.mode == .http:
                if connection.allowed > connection.completed * self.unit {
                    throw .connection(
                        index,
                        "no response for \(seconds) s (at offset \(connection.received) of the responses, "
                            + "\(connection.completed) complete, \(connection.allowed / self.unit) requested)"
                    )
                }
            case .open:
                if connection.sent > connection.received || connection.allowed > connection.sent {
                    throw .connection(
                        index,
                        "nothing echoed for \(seconds) s (at offset \(connection.received); "
                            + "\(connection.sent) bytes sent, \(max(0, connection.allowed - connection.sent)) more due)"
                    )
                }
            case .unopened, .finished:
                break
            }
        }
    }
}
