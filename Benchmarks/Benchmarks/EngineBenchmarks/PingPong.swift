//===----------------------------------------------------------------------===//
// RingIO — benchmarks: the socketpair ping-pong, and its DispatchSource and DispatchIO baselines.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import IOBenchmarkSupport

#if canImport(Glibc)
import Glibc
#endif

/// A client and an echo server on the two ends of a socketpair, exchanging 64-byte messages
/// one at a time.
protocol PingPong: AnyObject {
    /// Sends `count` messages, each after the echo of the one before, and returns when the last
    /// echo has arrived. Checks the count of every echo and, when `checkingContents`, its bytes.
    func roundTrips(_ count: Int, checkingContents: Bool)
    /// Stops both ends, waits for their cleanup and closes the descriptors.
    func close()
}

extension PingPong {
    /// `count` round trips, the echoes counted but not compared.
    func roundTrips(_ count: Int) {
        self.roundTrips(count, checkingContents: false)
    }
}

/// The message: 64 bytes of a fixed pattern.
enum Message {
    static let size = 64
    static let bytes: [UInt8] = (0..<size).map { UInt8(truncatingIfNeeded: 0x41 &+ $0) }
}

/// The client's bookkeeping, shared by every implementation: one message in flight, the echo
/// counted (and, when asked, compared with the message) as it arrives in pieces.
///
/// Confined to the client's queue.
struct PingPongClient {
    /// Messages still to send after the one in flight.
    private var toSend = 0
    /// Bytes of the echo in flight not yet received.
    private var awaiting = 0
    /// Whether echoed bytes are compared with the message.
    private var checksContents = false

    enum Next {
        /// Wait for more of the echo.
        case wait
        /// Send the next message.
        case send
        /// The last echo is complete.
        case finished
    }

    /// Starts `count` round trips; the caller sends the first message.
    mutating func begin(_ count: Int, checkingContents: Bool) {
        check(count > 0 && self.toSend == 0 && self.awaiting == 0, "ping-pong: begin while busy")
        self.toSend = count - 1
        self.awaiting = Message.size
        self.checksContents = checkingContents
    }

    /// Accounts for echoed bytes; says what to do next.
    mutating func received(_ bytes: UnsafeRawBufferPointer) -> Next {
        check(
            bytes.count <= self.awaiting,
            "ping-pong: \(bytes.count) bytes echoed, \(self.awaiting) expected (one message in flight)"
        )
        if self.checksContents {
            let start = Message.size - self.awaiting
            check(
                bytes.elementsEqual(Message.bytes[start..<(start + bytes.count)]),
                "ping-pong: the echo differs from the message at bytes \(start)..."
            )
        }
        self.awaiting -= bytes.count
        guard self.awaiting == 0 else { return .wait }
        guard self.toSend > 0 else { return .finished }
        self.toSend -= 1
        self.awaiting = Message.size
        return .send
    }
}

// MARK: - DispatchSource: read sources and plain read/write

/// Both ends non-blocking, each with a read source on its own serial queue; the handlers
/// `read` until `EAGAIN`, the server `write`s back what it read. What a hand-written GCD
/// server does.
final class DispatchSourcePingPong: PingPong, @unchecked Sendable {
    // @unchecked: `client` and the two buffers are touched only by the source handlers on their
    // own serial queues (`client` and `clientBuffer` on `clientQueue`, `serverBuffer` on
    // `serverQueue`); `roundTrips` reaches the client through `clientQueue`. The rest is immutable.

    // MARK: Immutable after init
    private let clientFD: CInt
    private let serverFD: CInt
    private let clientQueue = DispatchQueue(label: "RingIO.benchmarks.client")
    private let serverQueue = DispatchQueue(label: "RingIO.benchmarks.server")
    private let clientSource: any DispatchSourceRead
    private let serverSource: any DispatchSourceRead
    private let done = DispatchSemaphore(value: 0)
    private let cancelled = DispatchGroup()

    // MARK: Client queue only
    private var client = PingPongClient()
    private let clientBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    // MARK: Server queue only
    private let serverBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init() {
        (self.clientFD, self.serverFD) = makeSocketPair(nonBlocking: true)
        self.clientSource = DispatchSource.makeReadSource(fileDescriptor: self.clientFD, queue: self.clientQueue)
        self.serverSource = DispatchSource.makeReadSource(fileDescriptor: self.serverFD, queue: self.serverQueue)
        self.clientSource.setEventHandler { [unowned self] in self.clientReadable() }
        self.serverSource.setEventHandler { [unowned self] in self.serverReadable() }
        for (source, fd) in [(self.clientSource, self.clientFD), (self.serverSource, self.serverFD)] {
            self.cancelled.enter()
            source.setCancelHandler { [cancelled] in
                closeOrDie(fd)
                cancelled.leave()
            }
            source.activate()
        }
    }

    deinit {
        self.clientBuffer.deallocate()
        self.serverBuffer.deallocate()
    }

    func roundTrips(_ count: Int, checkingContents: Bool) {
        self.clientQueue.async {
            self.client.begin(count, checkingContents: checkingContents)
            self.send()
        }
        waitOrDie(self.done, "\(count) DispatchSource round trips")
    }

    func close() {
        self.clientSource.cancel()
        self.serverSource.cancel()
        if self.cancelled.wait(timeout: .now() + 10) == .timedOut {
            fatalError("DispatchSource ping-pong: the sources were not cancelled")
        }
    }

    private func send() {
        Message.bytes.withUnsafeBytes { writeAll(self.clientFD, $0) }
    }

    private func clientReadable() {
        while let bytes = readSome(self.clientFD, into: self.clientBuffer) {
            switch self.client.received(bytes) {
            case .wait: break
            case .send: self.send()
            case .finished: self.done.signal()
            }
        }
    }

    private func serverReadable() {
        while let bytes = readSome(self.serverFD, into: self.serverBuffer) {
            writeAll(self.serverFD, bytes)
        }
    }
}

/// Reads what is there; `nil` when nothing is (`EAGAIN`) or at end of file.
private func readSome(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer) -> UnsafeRawBufferPointer? {
    while true {
        let count = read(fd, buffer.baseAddress, buffer.count)
        if count > 0 { return UnsafeRawBufferPointer(rebasing: buffer[..<count]) }
        if count == 0 { return nil }
        if errno == EINTR { continue }
        check(errno == EAGAIN || errno == EWOULDBLOCK, "read(\(fd)) failed: errno \(errno)")
        return nil
    }
}

/// Writes all of `bytes`. A ping-pong has at most 64 bytes in flight, far below the socket's
/// buffer, so `EAGAIN` never happens; it would be a broken benchmark, and stops the process.
private func writeAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) {
    var written = 0
    while written < bytes.count {
        let count = write(fd, bytes.baseAddress! + written, bytes.count - written)
        if count < 0 && errno == EINTR { continue }
        check(count > 0, "write(\(fd)) failed: errno \(errno)")
        written += count
    }
}

// MARK: - DispatchIO: stream channels

/// Both ends as DispatchIO stream channels with low water 1 (the default, 1 MiB, would hold a
/// 64-byte message back), each with a read of length `Int.max` delivering on its own serial
/// queue; the server writes back each piece of data it gets.
final class DispatchIOPingPong: PingPong, @unchecked Sendable {
    // @unchecked: `client` is touched only by the client channel's read handler and by the job
    // `roundTrips` puts on `clientQueue`, all on that serial queue. The rest is immutable.

    // MARK: Immutable after init
    private let clientQueue = DispatchQueue(label: "RingIO.benchmarks.client")
    private let serverQueue = DispatchQueue(label: "RingIO.benchmarks.server")
    private let clientChannel: DispatchIO
    private let serverChannel: DispatchIO
    private let message: DispatchData = Message.bytes.withUnsafeBytes { DispatchData(bytes: $0) }
    private let done = DispatchSemaphore(value: 0)
    private let cleanedUp = DispatchGroup()
    private let ignoreWrite: @Sendable (Bool, DispatchData?, Int32) -> Void = { _, _, error in
        check(error == 0, "DispatchIO ping-pong: write failed: errno \(error)")
    }

    // MARK: Client queue only
    private var client = PingPongClient()

    init() {
        let (clientFD, serverFD) = makeSocketPair()
        let cleanedUp = self.cleanedUp
        cleanedUp.enter()
        cleanedUp.enter()
        self.clientChannel = DispatchIO(type: .stream, fileDescriptor: clientFD, queue: self.clientQueue) { _ in
            closeOrDie(clientFD)
            cleanedUp.leave()
        }
        self.serverChannel = DispatchIO(type: .stream, fileDescriptor: serverFD, queue: self.serverQueue) { _ in
            closeOrDie(serverFD)
            cleanedUp.leave()
        }
        self.clientChannel.setLimit(lowWater: 1)
        self.serverChannel.setLimit(lowWater: 1)
        let server = self.serverChannel
        let ignoreWrite = self.ignoreWrite
        let serverQueue = self.serverQueue
        server.read(offset: 0, length: Int.max, queue: serverQueue) { _, data, error in
            check(error == 0 || error == ECANCELED, "DispatchIO ping-pong: server read failed: errno \(error)")
            if let data, !data.isEmpty {
                server.write(offset: 0, data: data, queue: serverQueue, ioHandler: ignoreWrite)
            }
        }
        // Strong captures: each channel's read holds the fixture until `close` stops it.
        self.clientChannel.read(offset: 0, length: Int.max, queue: self.clientQueue) { _, data, error in
            check(error == 0 || error == ECANCELED, "DispatchIO ping-pong: client read failed: errno \(error)")
            data?.enumerateBytes { bytes, _, _ in
                self.clientReceived(UnsafeRawBufferPointer(bytes))
            }
        }
    }

    func roundTrips(_ count: Int, checkingContents: Bool) {
        self.clientQueue.async {
            self.client.begin(count, checkingContents: checkingContents)
            self.send()
        }
        waitOrDie(self.done, "\(count) DispatchIO round trips")
    }

    func close() {
        self.clientChannel.close(flags: .stop)
        self.serverChannel.close(flags: .stop)
        if self.cleanedUp.wait(timeout: .now() + 10) == .timedOut {
            fatalError("DispatchIO ping-pong: the channels were not cleaned up")
        }
    }

    private func send() {
        self.clientChannel.write(offset: 0, data: self.message, queue: self.clientQueue, ioHandler: self.ignoreWrite)
    }

    private func clientReceived(_ bytes: UnsafeRawBufferPointer) {
        switch self.client.received(bytes) {
        case .wait: break
        case .send: self.send()
        case .finished: self.done.signal()
        }
    }
}
