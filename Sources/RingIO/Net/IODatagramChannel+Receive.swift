//===----------------------------------------------------------------------===//
// RingIO — networking: where a datagram channel's receive delivers — handlers, or tasks.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

extension IODatagramChannel {
    /// The datagrams the channel receives, as an `AsyncSequence` that runs until the channel
    /// is closed (then it throws `Errno.canceled`) or an error ends it.
    ///
    ///     for try await datagram in channel.datagrams() {
    ///         try await channel.send(datagram.data, to: datagram.source)
    ///     }
    ///
    /// The receive starts with the first `next()`. When the iterating task runs on the
    /// channel's ring (it prefers ``RingLoop/taskExecutor``), a `next()` that waits resumes
    /// on the ring thread, with no hop. Datagrams are buffered until the iteration takes them;
    /// 1,024 behind, the receive pauses (see ``IODatagramChannel``).
    ///
    /// An error the receive goes on after — ECONNREFUSED on a connected channel — is thrown
    /// by `next()` and ends this iteration; iterate again to go on. Ending the iteration
    /// (`break`, an error, dropping the iterator, cancelling the task: `Errno.canceled`) stops
    /// the receive; datagrams the kernel already received for it are kept for the next one.
    public func datagrams() -> Datagrams {
        Datagrams(channel: self)
    }

    /// The next datagram: ``datagrams()``, for one.
    ///
    /// - Throws: `Errno.canceled` when the task is cancelled, the channel is closed or its
    ///   ring shuts down; ECONNREFUSED on a connected channel whose peer refused; the error
    ///   that ended the receive.
    public func receive(isolation: isolated (any Actor)? = #isolation) async throws(Errno) -> Datagram {
        var iterator = self.datagrams().makeAsyncIterator()
        guard let datagram = try await iterator.next(isolation: isolation) else { throw Errno.canceled }
        return datagram
    }

    /// The datagrams a channel receives; see ``IODatagramChannel/datagrams()``.
    public struct Datagrams: AsyncSequence, Sendable {
        public typealias Element = Datagram
        public typealias Failure = Errno

        let channel: IODatagramChannel

        public func makeAsyncIterator() -> Iterator {
            Iterator(channel: self.channel)
        }

        /// Produces the datagrams.
        public struct Iterator: AsyncIteratorProtocol {
            /// A received datagram, with its source address.
            public typealias Element = Datagram
            public typealias Failure = Errno

            private let channel: IODatagramChannel
            private var iteration: _DatagramIteration?
            private var ended = false

            init(channel: IODatagramChannel) {
                self.channel = channel
            }

            public mutating func next(
                isolation actor: isolated (any Actor)? = #isolation
            ) async throws(Errno) -> Datagram? {
                guard !self.ended else { return nil }
                if self.iteration == nil {
                    let subscription = _DatagramSubscription(state: self.channel.state)
                    self.iteration = _DatagramIteration(subscription)
                    self.channel.state.startReceiving(subscription)
                }
                let subscription = self.iteration!.subscription
                let result: Result<Datagram, Errno> = await withTaskCancellationHandler(
                    operation: {
                        await subscription.next(isolation: actor)
                    },
                    onCancel: {
                        subscription.cancel()
                    },
                    isolation: actor
                )
                switch result {
                case .success(let datagram):
                    return datagram
                case .failure(let error):
                    self.ended = true
                    self.iteration = nil
                    throw error
                }
            }

            public mutating func next() async throws(Errno) -> Datagram? {
                try await self.next(isolation: nil)
            }
        }
    }
}
