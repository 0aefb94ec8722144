//===----------------------------------------------------------------------===//
// RingIO — fault test support: a ledger of every operation's handler calls, byte checks
// against a deterministic pattern, descriptor accounting and many TCP connections at once.
//
// The fault suites run each fault in a child process (an exit test): they count the
// process's descriptors, raise or lower RLIMIT_NOFILE and open thousands of sockets, none of
// which may disturb the tests running in parallel in the parent.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - The pattern

/// Byte `index` of `patternBytes(_, seed: seed)`, without making the array.
@inline(__always)
func patternByte(_ index: Int, seed: Int) -> UInt8 {
    UInt8(truncatingIfNeeded: seed &* 31 &+ 7 &+ index &* 31)
}

/// The pattern repeats every 256 bytes (31 is odd), and seed `s` is seed 0 moved by `s`:
/// byte `i` of seed `s` is `periodicPattern[(i + s) % 256]`. Long enough to compare 64 KiB at
/// any phase with one `memcmp` (byte loops are slow in debug builds).
// nonisolated(unsafe): written once, at initialization, and only read afterwards.
nonisolated(unsafe) private let periodicPattern: UnsafeRawBufferPointer = {
    let count = 65_536 + 256
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
    for index in 0..<count { buffer[index] = patternByte(index, seed: 0) }
    return UnsafeRawBufferPointer(buffer)
}()

/// The index in `bytes` of the first byte that is not pattern byte `start + index` of `seed`.
func patternMismatch(_ bytes: UnsafeRawBufferPointer, from start: Int, seed: Int) -> Int? {
    var done = 0
    while done < bytes.count {
        let count = min(65_536, bytes.count - done)
        let phase = (start + done + seed) & 255
        if memcmp(bytes.baseAddress! + done, periodicPattern.baseAddress! + phase, count) != 0 {
            for index in done..<(done + count) where bytes[index] != patternByte(start + index, seed: seed) {
                return index
            }
        }
        done += count
    }
    return nil
}

/// Checks a stream of bytes, piece by piece, against `patternBytes(_, seed:)`: each byte once,
/// in order.
struct PatternCheck: Sendable {
    let seed: Int
    private let start: Int
    /// How many bytes have been checked: the next one must be pattern byte `start + offset`.
    private(set) var offset = 0
    /// Where the first wrong byte was, if any.
    private(set) var firstMismatch: Int?

    /// A check of the pattern from its byte `start` on.
    init(seed: Int, from start: Int = 0) {
        self.seed = seed
        self.start = start
    }

    mutating func check(_ bytes: UnsafeRawBufferPointer) {
        if self.firstMismatch == nil,
            let wrong = patternMismatch(bytes, from: self.start + self.offset, seed: self.seed)
        {
            self.firstMismatch = self.offset + wrong
        }
        self.offset += bytes.count
    }

    mutating func check(_ rope: ByteRope) {
        _ = rope.apply { _, bytes in
            self.check(bytes)
            return true
        }
    }

    mutating func check(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.check($0) }
    }

    /// Whether every byte so far was right and there were exactly `count`.
    func isExactly(_ count: Int) -> Bool { self.firstMismatch == nil && self.offset == count }
}

/// Whether `remaining` is exactly the last `remaining.count` bytes of `patternBytes(total, seed:)`.
func isPatternTail(_ remaining: ByteRope, total: Int, seed: Int) -> Bool {
    guard remaining.count <= total else { return false }
    var check = PatternCheck(seed: seed, from: total - remaining.count)
    check.check(remaining)
    return check.firstMismatch == nil
}

// MARK: - The ledger

/// Every handler call of a set of operations, accounted for: how many calls each got, how many
/// were final (exactly one is allowed; a second is recorded as a problem, as is any call after
/// the final one), the bytes a read delivered (checked against the pattern as they come), and
/// what a write handed back.
final class FaultLedger: Sendable {
    struct Entry: Sendable {
        var calls = 0
        var finals = 0
        /// The final call's error.
        var error: Errno?
        /// Reads: the bytes delivered, checked against the pattern when a seed was given.
        var delivered: PatternCheck?
        var deliveredCount = 0
        /// Writes: the data handed back by the final call (nil on success).
        var remaining: ByteRope?
    }

    private struct State {
        var entries: [Entry]
        var problems: [String] = []
        var unfinished: Int
    }

    private let state: _Lock<State>
    private let allFinished = DispatchSemaphore(value: 0)

    init(operations: Int) {
        self.state = _Lock(State(entries: Array(repeating: Entry(), count: operations), unfinished: operations))
        if operations == 0 { self.allFinished.signal() }
    }

    /// A read handler for operation `index`; with `seed`, the bytes must be that pattern, in
    /// order, from its byte `start`.
    func readHandler(_ index: Int, seed: Int? = nil, from start: Int = 0) -> @Sendable (Bool, ByteRope?, Errno?) -> Void
    {
        if let seed { self.state.withLock { $0.entries[index].delivered = PatternCheck(seed: seed, from: start) } }
        return { done, data, error in self.record(index, done, data, error, isWrite: false) }
    }

    /// A write handler for operation `index`.
    func writeHandler(_ index: Int) -> @Sendable (Bool, ByteRope?, Errno?) -> Void {
        { done, remaining, error in self.record(index, done, remaining, error, isWrite: true) }
    }

    /// Records the one completion of an engine operation (no data): its final call.
    func completed(_ index: Int, error: Errno?) {
        self.record(index, true, error == nil ? nil : ByteRope(), error, isWrite: true)
    }

    private func record(_ index: Int, _ done: Bool, _ data: ByteRope?, _ error: Errno?, isWrite: Bool) {
        let last = self.state.withLock { state -> Bool in
            var entry = state.entries[index]
            entry.calls += 1
            if entry.finals > 0 {
                state.problems.append(
                    "operation \(index): a call after its final call (done \(done), error \(error.map { "\($0)" } ?? "nil"))"
                )
            }
            if !done && error != nil {
                state.problems.append("operation \(index): an intermediate call with \(error!)")
            }
            if isWrite {
                if done {
                    entry.remaining = data
                    if (error == nil) != (data == nil) {
                        state.problems.append(
                            "operation \(index): final write call with error \(String(describing: error)), data \(String(describing: data?.count))"
                        )
                    }
                } else if data == nil || data!.isEmpty {
                    state.problems.append("operation \(index): an intermediate write call without data")
                }
            } else if let data {
                if done && error != nil { state.problems.append("operation \(index): a failed read with data") }
                entry.deliveredCount += data.count
                entry.delivered?.check(data)
            } else if !done || error == nil {
                state.problems.append("operation \(index): a read call with nil data and no error")
            }
            var last = false
            if done {
                entry.finals += 1
                entry.error = error
                if entry.finals == 1 {
                    state.unfinished -= 1
                    last = state.unfinished == 0
                } else {
                    state.problems.append("operation \(index): final call number \(entry.finals)")
                }
            }
            state.entries[index] = entry
            return last
        }
        if last { self.allFinished.signal() }
    }

    /// Waits (bounded) until every operation has had its final call.
    func waitForAll(seconds: Double = 20) -> Bool {
        guard wait(self.allFinished, seconds: seconds) else { return false }
        self.allFinished.signal()
        return true
    }

    var entries: [Entry] { self.state.withLock { $0.entries } }
    var problems: [String] { self.state.withLock { $0.problems } }
    var unfinished: Int { self.state.withLock { $0.unfinished } }

    /// Waits for every final call, then checks: no problem recorded, exactly one final call
    /// for each operation — and, once `barrier` has passed, still exactly one (a late second
    /// call would have come before it).
    func expectEveryOperationFinalOnce(
        _ what: String,
        after barrier: HandlerBarrier,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let finished = self.waitForAll()
        #expect(finished, "\(what): \(self.unfinished) operations without a final call", sourceLocation: sourceLocation)
        barrier.pass(sourceLocation: sourceLocation)
        let entries = self.entries
        let wrong = entries.indices.filter { entries[$0].finals != 1 }
        #expect(
            wrong.isEmpty,
            "\(what): \(wrong.count) of \(entries.count) operations without exactly one final call; first: \(wrong.prefix(5).map { "\($0): \(entries[$0].finals)" })",
            sourceLocation: sourceLocation
        )
        let problems = self.problems
        #expect(
            problems.isEmpty,
            "\(what): \(problems.count) problems; first: \(problems.prefix(5))",
            sourceLocation: sourceLocation
        )
    }
}

/// Waits (bounded, 10 s for all) for every cleanup handler, then, once `barrier` has passed (a
/// second call would have come before it), checks each ran exactly once, with no error.
func expectCleanupsOnce(
    _ cleanups: [CleanupLog],
    after barrier: HandlerBarrier,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    _ = eventually { cleanups.allSatisfy(\.wasCalled) }
    barrier.pass(sourceLocation: sourceLocation)
    let wrong = cleanups.indices.filter { cleanups[$0].calls != [nil] }
    #expect(
        wrong.isEmpty,
        "\(wrong.count) of \(cleanups.count) cleanup handlers not called exactly once; first: \(wrong.prefix(3).map { cleanups[$0].calls })",
        sourceLocation: sourceLocation
    )
}

// MARK: - Descriptors

/// Sets the soft RLIMIT_NOFILE to at least `count` (at most the hard limit); returns it.
@discardableResult
func raiseDescriptorLimit(to count: Int) throws -> Int {
    var limit = rlimit()
    try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, "getrlimit: \(errno)")
    if limit.rlim_cur < rlim_t(count) {
        limit.rlim_cur = min(rlim_t(count), limit.rlim_max)
        try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, "setrlimit: \(errno)")
    }
    return Int(limit.rlim_cur)
}

/// Runs `body` with the soft RLIMIT_NOFILE set to `count`, then sets it back. (An accept takes
/// the limit when it is prepared: a multishot accept armed before a change keeps the old one.)
func withDescriptorLimit<T>(_ count: Int, _ body: () throws -> T) throws -> T {
    var limit = rlimit()
    try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, "getrlimit: \(errno)")
    var saved = limit
    limit.rlim_cur = rlim_t(count)
    try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, "setrlimit: \(errno)")
    defer { setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }
    return try body()
}

/// Opens /dev/null until the process has no descriptor left (at most `limit` times), and
/// requires that it has none left then: the placeholders, for the caller to close.
func takeEveryDescriptorLeft(limit: Int) throws -> [CInt] {
    var placeholders: [CInt] = []
    while placeholders.count < limit {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { break }
        placeholders.append(fd)
    }
    let more = open("/dev/null", O_RDONLY | O_CLOEXEC)
    if more >= 0 { close(more) }
    for fd in placeholders where more >= 0 { close(fd) }
    try #require(more == -1 && errno == EMFILE, "descriptors left after taking \(placeholders.count)")
    return placeholders
}

/// What each open descriptor of the process refers to ("anon_inode:[eventfd]",
/// "socket:[1234]", a path), from /proc/self/fd.
func openDescriptorTargets() -> [String] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    var targets: [String] = []
    var buffer = [CChar](repeating: 0, count: 4_096)
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        guard let fd = CInt(name), fd != dirfd(directory) else { continue }
        let count = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
        var target = count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        // A file unlinked while open reads "… (deleted)": the same descriptor, not a new one.
        if target.hasSuffix(" (deleted)") { target.removeLast(" (deleted)".count) }
        targets.append("\(fd) \(target)")
    }
    return targets
}

/// Opens, once, what the process keeps for good after first use: libdispatch's event loop
/// (an epoll descriptor and an eventfd, made by the first timer or queue wake-up) and whatever
/// a ring and a channel of each queue kind set up the first time.
func warmUpDescriptors() throws {
    for kind in QueueKind.allCases {
        let context = try ChannelContext(kind)
        let (reader, writer) = try makePipe()
        let cleanups = [CleanupLog(), CleanupLog()]
        let readChannel = context.channel(.stream, reader, cleanup: cleanups[0])
        let writeChannel = context.channel(.stream, writer, cleanup: cleanups[1])
        let read = context.read(readChannel, length: 1)
        context.write(writeChannel, rope("x"))
        _ = read.waitForFinal()
        readChannel.close()
        writeChannel.close()
        _ = cleanups.allSatisfy { $0.wait() }
        context.shutdown()
        close(reader)
        close(writer)
    }
    // libdispatch makes its timer machinery on the first timer: one timer, fired. Not a wait
    // for anything else — the timer is what is warmed up.
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { done.signal() }
    _ = wait(done)
}

/// Runs `body`, which must leave no descriptor open: checks the process's descriptor count
/// (/proc/self/fd) after it is back where it was before. For a child process only: in the
/// parent, tests running in parallel open and close descriptors all the time.
///
/// `warmUp` runs first, uncounted, so that what the library sets up once (a ring's buffer
/// registration, the shared group) is there before counting.
func expectNoDescriptorLeak(
    warmUp: () throws -> Void = warmUpDescriptors,
    _ body: () throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    try warmUp()
    let targetsBefore = Set(openDescriptorTargets())
    let before = openDescriptorCount()
    try body()
    // Closing is asynchronous in places (a path channel's close on the ring): bounded wait.
    var after = openDescriptorCount()
    _ = eventually(seconds: 5) {
        after = openDescriptorCount()
        return after <= before
    }
    let targetsAfter = Set(openDescriptorTargets())
    let opened = targetsAfter.subtracting(targetsBefore).sorted()
    // A leak is a descriptor open now that was not before. (Rarely, an eventfd open before the
    // body is gone after it, under load: counted as no leak, and shown if anything else fails.)
    #expect(
        after <= before && opened.isEmpty,
        "descriptors open before: \(before), after: \(after); opened: \(opened.prefix(10)), closed: \(targetsBefore.subtracting(targetsAfter).sorted().prefix(10))",
        sourceLocation: sourceLocation
    )
}

/// Closes both ends of every pair.
func closePairs(_ pairs: [(local: CInt, remote: CInt)]) {
    for pair in pairs {
        close(pair.local)
        close(pair.remote)
    }
}

/// Closes `channels`, expects each of `cleanups` to have been called once, with no error
/// (``expectCleanupsOnce(_:after:sourceLocation:)``), then closes the pairs' local ends, and
/// their remote ends too with `remotesToo`.
func closeConnections(
    _ channels: [IOChannel],
    _ cleanups: [CleanupLog],
    _ pairs: [(local: CInt, remote: CInt)],
    remotesToo: Bool,
    after barrier: HandlerBarrier,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for channel in channels { channel.close() }
    expectCleanupsOnce(cleanups, after: barrier, sourceLocation: sourceLocation)
    if remotesToo {
        closePairs(pairs)
    } else {
        for pair in pairs { close(pair.local) }
    }
}

// MARK: - Many TCP connections

/// `count` connected TCP pairs over 127.0.0.1 through one listening socket: `local` for the
/// channel, `remote` for the test's peer; all close-on-exec.
///
/// - Parameter remoteReceiveBuffer: SO_RCVBUF for the remote ends, set on the listening socket
///   before any connection arrives (set on a connected socket, it comes after the window scale
///   was agreed, and a loopback connection with a 64 KiB MSS can then sit in zero-window
///   probes for many seconds).
func makeTCPPairs(_ count: Int, remoteReceiveBuffer: CInt? = nil) throws -> [(local: CInt, remote: CInt)] {
    let (listener, address) = try makeListener()
    defer { close(listener) }
    if let size = remoteReceiveBuffer { try setOption(listener, SOL_SOCKET, SO_RCVBUF, size) }
    var pairs: [(local: CInt, remote: CInt)] = []
    pairs.reserveCapacity(count)
    for _ in 0..<count {
        let (client, server) = try connectTo(listener, address)
        pairs.append((client, server))
    }
    return pairs
}

/// Connects a new socket to `listener` (listening at `address`) and accepts it.
private func connectTo(_ listener: CInt, _ address: sockaddr_in) throws -> (CInt, CInt) {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(client >= 0, "socket: \(errno)")
    var target = address
    let connected = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    try #require(connected == 0, "connect: \(errno)")
    let server = accept(listener, nil, nil)
    try #require(server >= 0, "accept: \(errno)")
    _ = fcntl(server, F_SETFD, FD_CLOEXEC)
    return (client, server)
}

/// Sets an integer socket option, requiring success.
func setOption(_ fd: CInt, _ level: CInt, _ name: CInt, _ value: CInt) throws {
    var value = value
    try #require(setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<CInt>.size)) == 0, "setsockopt: \(errno)")
}
