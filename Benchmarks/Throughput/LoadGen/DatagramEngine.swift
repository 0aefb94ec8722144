//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the load generator's UDP echo workload (one thread, epoll).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ThroughputSupport

/// N UDP flows against an echo server, each keeping `depth` datagrams outstanding: a datagram
/// is sent when one comes back (paced by the echoes), so the server is never flooded.
///
/// Each flow is a connected UDP socket of its own (a source port each, as N clients would
/// be). Datagram `seq` of flow `f` is `size` bytes: `seq` (8 bytes, little-endian), `f` (4
/// bytes), then ``BytePattern`` from a phase both derive. An echo must have the length sent,
/// come back on its flow's socket, name a datagram outstanding there, and carry every byte as
/// sent; anything else fails the run. A datagram not back within ``lossTimeout`` is lost: it
/// is counted, replaced (the flow keeps its depth), and the run fails at the end — a lost
/// datagram never counts as success. An echo that comes after its datagram was counted lost
/// is recognised and ignored (it was counted already).
///
/// Lifecycle, as ``LoadEngine``'s: `init` ──> `openAll()` ──> `startLoad()` ──> `run(until:)`
/// (warm-up, then measured) ──> `drain()` (no new datagrams; wait for the outstanding ones).
struct DatagramEngine: ~Copyable {
    /// An echo not back after this long is lost: as long as a TCP connection may go without
    /// progress (``LoadEngine/stallLimit``), since a server descheduled for a while on a shared
    /// machine is late, not lossy.
    static let lossTimeout: UInt64 = LoadEngine.stallLimit
    /// How often the outstanding datagrams are checked for loss.
    static let checkInterval: UInt64 = 100_000_000
    /// Receives per readiness event before the next flow's turn.
    static let receivesPerEvent = 16
    /// The bytes before the pattern: the sequence number and the flow.
    static let headerSize = 12
    /// The largest datagram a receive takes (a longer echo is cut, and fails the length check).
    static let receiveBufferSize = 65_536

    /// One outstanding datagram (or a free slot).
    struct Slot {
        var sequence: UInt64 = 0
        var sentAt: UInt64 = 0
        var busy = false
    }

    // MARK: Immutable after init

    let address: SocketAddress
    let flowCount: Int
    let size: Int
    let depth: Int
    let epoll: Int32
    /// Per flow: its socket (-1 until opened).
    let sockets: UnsafeMutablePointer<Int32>
    /// Flow `f` owns slots `f * depth ..< (f + 1) * depth`.
    let slots: UnsafeMutablePointer<Slot>
    /// Per flow: the next sequence number, datagrams outstanding, sends held up by a full
    /// socket buffer (sent when it is writable), and whether epoll watches for writability.
    let nextSequence: UnsafeMutablePointer<UInt64>
    let outstanding: UnsafeMutablePointer<Int>
    let heldSends: UnsafeMutablePointer<Int>
    let watchesWritable: UnsafeMutablePointer<Bool>
    let sendBuffer: ByteBlock
    let receiveBuffer: ByteBlock
    let events: ReadyEvents
    let pattern: BytePattern

    // MARK: Counters (this thread only)

    var recording = false
    /// New datagrams are sent (false while draining).
    var sending = true
    var operations = 0
    var bytes = 0
    var histogram = LatencyHistogram()
    /// Datagrams counted lost, and echoes that came after that.
    var lost = 0
    var late = 0
    /// Flow and sequence of every datagram counted lost (`flow << 44 | sequence`): its late
    /// echo is told from a duplicate.
    var lostKeys: Set<UInt64> = []
    var totalOutstanding = 0

    init(plan: LoadPlan) throws(LoadFailure) {
        do {
            self.epoll = try Syscalls.makeEpoll()
        } catch {
            throw LoadFailure("epoll_create1: \(error)")
        }
        self.address = plan.address
        self.flowCount = plan.connections
        self.size = plan.size
        self.depth = plan.depth
        self.sockets = .allocate(capacity: plan.connections)
        self.sockets.initialize(repeating: -1, count: plan.connections)
        self.slots = .allocate(capacity: plan.connections * plan.depth)
        self.slots.initialize(repeating: Slot(), count: plan.connections * plan.depth)
        self.nextSequence = .allocate(capacity: plan.connections)
        self.nextSequence.initialize(repeating: 0, count: plan.connections)
        self.outstanding = .allocate(capacity: plan.connections)
        self.outstanding.initialize(repeating: 0, count: plan.connections)
        self.heldSends = .allocate(capacity: plan.connections)
        self.heldSends.initialize(repeating: 0, count: plan.connections)
        self.watchesWritable = .allocate(capacity: plan.connections)
        self.watchesWritable.initialize(repeating: false, count: plan.connections)
        self.sendBuffer = ByteBlock(count: plan.size)
        self.receiveBuffer = ByteBlock(count: Self.receiveBufferSize)
        self.events = ReadyEvents(capacity: 256)
        self.pattern = BytePattern(span: plan.size)
    }

    deinit {
        for flow in 0..<self.flowCount where self.sockets[flow] >= 0 {
            Syscalls.close(self.sockets[flow])
        }
        Syscalls.close(self.epoll)
        self.sockets.deallocate()
        self.slots.deallocate()
        self.nextSequence.deallocate()
        self.outstanding.deallocate()
        self.heldSends.deallocate()
        self.watchesWritable.deallocate()
    }

    // MARK: Phases

    /// Opens every flow's socket, connected to the server.
    mutating func openAll() throws(LoadFailure) {
        for flow in 0..<self.flowCount {
            let fd: Int32
            do {
                fd = try Syscalls.openDatagram(to: self.address)
            } catch {
                throw .connection(flow, "UDP socket to \(self.address.text): \(error)")
            }
            self.sockets[flow] = fd
            do {
                try Syscalls.watch(self.epoll, fd, flags: Syscalls.readable, token: UInt64(flow), adding: true)
            } catch {
                throw .connection(flow, "epoll_ctl: \(error)")
            }
        }
    }

    /// Puts `depth` datagrams of every flow in flight.
    mutating func startLoad() throws(LoadFailure) {
        for flow in 0..<self.flowCount {
            for _ in 0..<self.depth { try self.sendNext(flow, now: monotonicNanoseconds()) }
        }
    }

    /// Serves every flow until the monotonic clock reaches `deadline` (nanoseconds).
    mutating func run(until deadline: UInt64) throws(LoadFailure) {
        var now = monotonicNanoseconds()
        var nextCheck = now + Self.checkInterval
        while now < deadline {
            let wake = min(deadline, nextCheck)
            try self.poll(timeoutMilliseconds: Int32((wake - now + 999_999) / 1_000_000))
            now = monotonicNanoseconds()
            if now >= nextCheck {
                try self.checkForLosses(now)
                nextCheck = now + Self.checkInterval
            }
        }
    }

    /// Sends nothing new and waits for every outstanding datagram: back, or lost (after
    /// ``lossTimeout``).
    mutating func drain() throws(LoadFailure) {
        self.sending = false
        for flow in 0..<self.flowCount { self.heldSends[flow] = 0 }
        let deadline = monotonicNanoseconds() + Self.lossTimeout + Self.checkInterval
        while self.totalOutstanding > 0 && monotonicNanoseconds() < deadline {
            try self.run(until: min(deadline, monotonicNanoseconds() + Self.checkInterval))
        }
        try self.checkForLosses(monotonicNanoseconds() &+ Self.lossTimeout)
    }

    // MARK: Events

    private mutating func poll(timeoutMilliseconds: Int32) throws(LoadFailure) {
        let count = Syscalls.wait(self.epoll, into: self.events, timeoutMilliseconds: timeoutMilliseconds)
        for event in 0..<count {
            let (token, flags) = self.events[event]
            let flow = Int(truncatingIfNeeded: token)
            if flags & (Syscalls.readable | Syscalls.errorOrHangUp) != 0 {
                try self.receive(flow)
            }
            if flags & Syscalls.writable != 0 {
                try self.sendHeld(flow)
            }
        }
    }

    /// Takes what flow `flow`'s socket holds (a bounded number of datagrams), checks each, and
    /// sends one new datagram per echo.
    private mutating func receive(_ flow: Int) throws(LoadFailure) {
        let fd = self.sockets[flow]
        for _ in 0..<Self.receivesPerEvent {
            switch Syscalls.receive(fd, into: self.receiveBuffer.buffer) {
            case .transferred(let count):
                try self.consume(flow, count: count)
            case .endOfStream:
                try self.consume(flow, count: 0)
            case .wouldBlock:
                return
            case .failed(let error):
                throw .connection(flow, "receive failed: \(error) (ECONNREFUSED: nothing listens on the server's port)")
            }
        }
    }

    /// Checks one echo of `count` bytes (in the receive buffer) on flow `flow`.
    @inline(__always)
    private mutating func consume(_ flow: Int, count: Int) throws(LoadFailure) {
        guard count == self.size else {
            throw .connection(flow, "an echo of \(count) bytes; every datagram sent was \(self.size)")
        }
        let base = self.receiveBuffer.base
        let sequence = base.loadUnaligned(as: UInt64.self).littleEndian
        let echoedFlow = base.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian
        guard echoedFlow == UInt32(flow) else {
            throw .connection(flow, "an echo of flow \(echoedFlow)'s datagram \(sequence) came back to this flow")
        }
        let slots = self.slots + flow * self.depth
        var found = -1
        for index in 0..<self.depth where slots[index].busy && slots[index].sequence == sequence {
            found = index
            break
        }
        guard found >= 0 else {
            if self.lostKeys.contains(Self.key(flow, sequence)) {
                self.late += 1  // counted lost already
                return
            }
            throw .connection(
                flow,
                "an echo of datagram \(sequence), which is not outstanding (sent: 0..<\(self.nextSequence[flow])): "
                    + "a duplicate, or never sent"
            )
        }
        let phase = self.phase(flow, sequence)
        let payload = self.size - Self.headerSize
        if let difference = Memory.firstDifference(
            base + Self.headerSize,
            self.pattern.bytes(at: phase),
            count: payload
        ) {
            let got = base.load(fromByteOffset: Self.headerSize + difference, as: UInt8.self)
            throw .connection(
                flow,
                "wrong byte at offset \(Self.headerSize + difference) of the echo of datagram \(sequence): \(got), "
                    + "expected \(self.pattern.byte(at: phase + difference))"
            )
        }
        let now = monotonicNanoseconds()
        if self.recording {
            self.operations += 1
            self.bytes += count
            self.histogram.record(now &- slots[found].sentAt)
        }
        slots[found].busy = false
        self.outstanding[flow] -= 1
        self.totalOutstanding -= 1
        if self.sending { try self.sendNext(flow, now: now) }
    }

    /// Sends flow `flow`'s next datagram into a free slot (held until the socket has room when
    /// its send buffer is full).
    @inline(__always)
    private mutating func sendNext(_ flow: Int, now: UInt64) throws(LoadFailure) {
        guard self.heldSends[flow] == 0 else {
            self.heldSends[flow] += 1
            return
        }
        guard try self.sendOne(flow, now: now) else {
            self.heldSends[flow] += 1
            try self.watchWritable(flow, true)
            return
        }
    }

    /// Sends what was held up on flow `flow` while its socket has room.
    private mutating func sendHeld(_ flow: Int) throws(LoadFailure) {
        while self.heldSends[flow] > 0 && self.sending {
            guard try self.sendOne(flow, now: monotonicNanoseconds()) else { return }
            self.heldSends[flow] -= 1
        }
        self.heldSends[flow] = 0
        try self.watchWritable(flow, false)
    }

    /// One datagram on flow `flow`: false when the socket's send buffer is full (nothing sent).
    @inline(__always)
    private mutating func sendOne(_ flow: Int, now: UInt64) throws(LoadFailure) -> Bool {
        let slots = self.slots + flow * self.depth
        var free = -1
        for index in 0..<self.depth where !slots[index].busy {
            free = index
            break
        }
        precondition(free >= 0, "flow \(flow): more than \(self.depth) datagrams outstanding")
        let sequence = self.nextSequence[flow]
        let base = self.sendBuffer.base
        base.storeBytes(of: sequence.littleEndian, as: UInt64.self)
        base.storeBytes(of: UInt32(flow).littleEndian, toByteOffset: 8, as: UInt32.self)
        (base + Self.headerSize).copyMemory(
            from: self.pattern.bytes(at: self.phase(flow, sequence)),
            byteCount: self.size - Self.headerSize
        )
        switch Syscalls.send(self.sockets[flow], base, self.size) {
        case .transferred(let count):
            guard count == self.size else {
                throw .connection(flow, "sent \(count) bytes of a \(self.size)-byte datagram")
            }
        case .wouldBlock:
            return false
        case .failed(let error):
            throw .connection(flow, "send failed: \(error) (ECONNREFUSED: nothing listens on the server's port)")
        case .endOfStream:
            preconditionFailure("send does not report an end of stream")
        }
        self.nextSequence[flow] = sequence + 1
        slots[free] = Slot(sequence: sequence, sentAt: now, busy: true)
        self.outstanding[flow] += 1
        self.totalOutstanding += 1
        return true
    }

    private mutating func watchWritable(_ flow: Int, _ watch: Bool) throws(LoadFailure) {
        guard self.watchesWritable[flow] != watch else { return }
        self.watchesWritable[flow] = watch
        let flags = Syscalls.readable | (watch ? Syscalls.writable : 0)
        do {
            try Syscalls.watch(self.epoll, self.sockets[flow], flags: flags, token: UInt64(flow), adding: false)
        } catch {
            throw .connection(flow, "epoll_ctl: \(error)")
        }
    }

    // MARK: Losses

    /// Counts every datagram outstanding for longer than ``lossTimeout`` at `now` as lost, and
    /// sends a new one in its place (while sending).
    private mutating func checkForLosses(_ now: UInt64) throws(LoadFailure) {
        for flow in 0..<self.flowCount {
            let slots = self.slots + flow * self.depth
            for index in 0..<self.depth where slots[index].busy && now &- slots[index].sentAt > Self.lossTimeout {
                slots[index].busy = false
                self.outstanding[flow] -= 1
                self.totalOutstanding -= 1
                self.lost += 1
                self.lostKeys.insert(Self.key(flow, slots[index].sequence))
                if self.sending { try self.sendNext(flow, now: now) }
            }
        }
    }

    // MARK: Helpers

    /// Where the pattern of flow `flow`'s datagram `sequence` starts.
    @inline(__always)
    private func phase(_ flow: Int, _ sequence: UInt64) -> Int {
        let start = UInt64(BytePattern.startPhase(ofConnection: flow))
        return Int((start &+ sequence &* 8_191) % UInt64(BytePattern.period))
    }

    private static func key(_ flow: Int, _ sequence: UInt64) -> UInt64 {
        UInt64(flow) << 44 | (sequence & ((1 << 44) - 1))
    }
}
