//===----------------------------------------------------------------------===//
// RingIO — channels: Swift concurrency on top of the handler API (D8).
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

extension IOChannel {
    /// The data of one read as it arrives, per the channel's water marks: an `AsyncSequence`
    /// of ropes that ends at EOF (or after `length` bytes) and throws the read's error.
    ///
    ///     for try await data in channel.reads() {
    ///         process(data)
    ///     }
    ///
    /// The read starts with the first `next()`. Cancelling the iterating task stops the read:
    /// the bytes already read are still produced, then the iteration throws
    /// `Errno.canceled`. The handler calls run on the channel's ring (no queue hop).
    ///
    /// Ropes are buffered until the iteration takes them: a consumer slower than the peer
    /// holds the received data in memory (receive buffers first, then fresh memory).
    public func reads(offset: Int64 = 0, length: Int = .max) -> Reads {
        precondition(length >= 0, "IOChannel.reads(length: \(length)) must not be negative")
        return Reads(channel: self, offset: offset, length: length)
    }

    /// Reads `length` bytes, or up to EOF, and returns them.
    ///
    /// - Throws: The read's error (the bytes read before it are dropped); `Errno.canceled`
    ///   when the task is cancelled (the read is stopped).
    public func read(offset: Int64 = 0, length: Int) async throws(Errno) -> ByteRope {
        var data = ByteRope()
        for try await piece in self.reads(offset: offset, length: length) {
            data.append(piece)
        }
        return data
    }

    /// Writes all of `data`.
    ///
    /// - Throws: The write's error; `Errno.canceled` when the task is cancelled (the write
    ///   is stopped; part of the data may have been written).
    public func write(offset: Int64 = 0, _ data: ByteRope) async throws(Errno) {
        let waiter = _AsyncWaiter()
        let queue: any IOQueue = self.ring ?? DispatchQueue.global()
        let result: Result<Void, Errno> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.install(continuation)
                let operation = self.state.scheduleWrite(offset: offset, data: data, queue: queue) {
                    done,
                    _,
                    error in
                    if done { waiter.resume(error.map { .failure($0) } ?? .success(())) }
                }
                waiter.started(operation, in: self.state)
            }
        } onCancel: {
            waiter.cancel(in: self.state)
        }
        try result.get()
    }

    /// The data of one read, as an `AsyncSequence`; see ``IOChannel/reads(offset:length:)``.
    public struct Reads: AsyncSequence, Sendable {
        public typealias Element = ByteRope
        public typealias Failure = Errno

        let channel: IOChannel
        let offset: Int64
        let length: Int

        public func makeAsyncIterator() -> Iterator {
            Iterator(channel: self.channel, offset: self.offset, length: self.length)
        }

        /// Produces the read's data in order.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = ByteRope
            public typealias Failure = Errno

            private let channel: IOChannel
            private let offset: Int64
            private let length: Int
            private var stream: _AsyncReadStream?

            init(channel: IOChannel, offset: Int64, length: Int) {
                self.channel = channel
                self.offset = offset
                self.length = length
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(Errno) -> ByteRope? {
                let stream: _AsyncReadStream
                if let existing = self.stream {
                    stream = existing
                } else {
                    stream = _AsyncReadStream()
                    self.stream = stream
                    let queue: any IOQueue = self.channel.ring ?? DispatchQueue.global()
                    let operation = self.channel.state.scheduleRead(
                        offset: self.offset,
                        length: self.length,
                        queue: queue,
                        mode: .normal,
                        releasesOnReturn: false
                    ) { done, data, error in
                        stream.handlerCall(done: done, data: data, error: error)
                    }
                    stream.started(operation, in: self.channel.state)
                }
                let channel = self.channel
                let result = await withTaskCancellationHandler {
                    await stream.next()
                } onCancel: {
                    stream.cancel(in: channel.state)
                }
                return try result.get()
            }

            public mutating func next() async throws(Errno) -> ByteRope? {
                try await self.next(isolation: nil)
            }
        }
    }
}

/// The ropes of one read, between its handler (on the ring) and the iterating task.
internal final class _AsyncReadStream: Sendable {
    private let stopper = _OperationStopper()

    func started(_ operation: _Operation?, in channel: _ChannelState) {
        self.stopper.started(operation, in: channel)
    }

    func cancel(in channel: _ChannelState) {
        self.stopper.cancel(in: channel)
    }

    private struct State {
        var ropes: [ByteRope] = []
        var head = 0
        var end: Errno?? = nil
        var waiter: CheckedContinuation<Result<ByteRope?, Errno>, Never>?
        var canceled = false
    }

    private let state = Mutex(State())

    func handlerCall(done: Bool, data: ByteRope?, error: Errno?) {
        let waiter: CheckedContinuation<Result<ByteRope?, Errno>, Never>? = self.state.withLock { state in
            if let data, !data.isEmpty { state.ropes.append(data) }
            if done { state.end = .some(error) }
            guard let waiter = state.waiter, state.head < state.ropes.count || state.end != nil else { return nil }
            state.waiter = nil
            return waiter
        }
        if let waiter { waiter.resume(returning: self.take()) }
    }

    func next() async -> Result<ByteRope?, Errno> {
        await withCheckedContinuation { continuation in
            let ready: Bool = self.state.withLock { state in
                if state.head < state.ropes.count || state.end != nil { return true }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume(returning: self.take()) }
        }
    }

    private func take() -> Result<ByteRope?, Errno> {
        let result: Result<ByteRope?, Errno> = self.state.withLock { state in
            if state.head < state.ropes.count {
                let rope = state.ropes[state.head]
                state.head += 1
                if state.head == state.ropes.count {
                    state.ropes.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return .success(rope)
            }
            switch state.end {
            case .some(.some(let error)): return .failure(error)
            default: return .success(nil)
            }
        }
        // The iteration has the bytes: they no longer hold the receive back.
        if case .success(let rope?) = result { self.stopper.release(rope.count) }
        return result
    }

}

/// The one final call of an async write, between its handler and the awaiting task.
internal final class _AsyncWaiter: Sendable {
    private let stopper = _OperationStopper()
    private let continuation = Mutex<CheckedContinuation<Result<Void, Errno>, Never>?>(nil)

    func install(_ continuation: CheckedContinuation<Result<Void, Errno>, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(_ result: Result<Void, Errno>) {
        let continuation = self.continuation.withLock { stored in
            let continuation = stored
            stored = nil
            return continuation
        }
        continuation?.resume(returning: result)
    }

    func started(_ operation: _Operation?, in channel: _ChannelState) {
        self.stopper.started(operation, in: channel)
    }

    func cancel(in channel: _ChannelState) {
        self.stopper.cancel(in: channel)
    }
}

/// Stops an operation when its task is cancelled — also when the cancellation comes before
/// the operation was scheduled.
internal final class _OperationStopper: Sendable {
    private let state = Mutex<(operation: _Operation?, canceled: Bool)>((nil, false))

    func started(_ operation: _Operation?, in channel: _ChannelState) {
        let stopNow = self.state.withLock { state in
            state.operation = operation
            return state.canceled
        }
        if stopNow, let operation { channel.perform { _ in operation.terminate(.canceled) } }
    }

    func cancel(in channel: _ChannelState) {
        let operation = self.state.withLock { state in
            state.canceled = true
            return state.operation
        }
        if let operation { channel.perform { _ in operation.terminate(.canceled) } }
    }

    /// Releases delivered bytes the consumer has taken (see `_Operation.release`).
    func release(_ count: Int) {
        self.state.withLock { $0.operation }?.release(count)
    }
}
