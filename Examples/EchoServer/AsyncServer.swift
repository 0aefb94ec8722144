//===----------------------------------------------------------------------===//
// RingIO — example: the echo server with async/await (--api async).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The echo server in async/await: one listener over every ring (a socket per ring,
/// `SO_REUSEPORT`), and a task per connection on the ring that accepted it, running
///
///     for try await data in channel.reads() { try await channel.write(data) }
///
/// Every await completes on the ring thread in the turn its I/O does: no queue, no thread
/// hop. The listener counts the connections (`--max-connections`) and closes their sockets.
final class AsyncServer: Sendable {
    private let configuration: EchoServer
    private let group: RingLoopGroup
    private let listener: IOListener
    /// `--stats`: the counters; `nil` without the flag.
    private let stats: ServerStats?
    private let writesInFlight = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)

    init(configuration: EchoServer, group: RingLoopGroup, stats: ServerStats?) throws {
        var options = IOListener.Options()
        options.reusePort = true
        options.maxConnections = configuration.maxConnections
        self.listener = try IOListener(
            host: configuration.host,
            port: configuration.port,
            options: options,
            group: group
        ) { error in
            print("echo-server: accept failed: \(error) (retrying)")
        }
        self.configuration = configuration
        self.group = group
        self.stats = stats
    }

    var addresses: [String] {
        self.listener.localAddresses
    }

    /// Accepted connections whose channel is not yet cleaned up, as the listener counts them.
    var openConnections: Int {
        self.listener.openConnections
    }

    /// Serves until SIGINT or SIGTERM, then returns once every connection is closed.
    func runUntilStopped() {
        let ring = self.group.rings[0]
        // The accepting loop runs on a ring too: each connection's task goes to its own ring.
        let serving = Task(executorPreference: ring.taskExecutor) {
            await self.listener.serve { connection in
                await self.echo(connection)
            }
        }
        let signals = [SIGINT, SIGTERM].map { signal in
            let source = IOSource.signal(signal, queue: ring)
            source.setEventHandler { self.stop(serving, on: ring) }
            source.resume()
            return source
        }
        let finished = DispatchSemaphore(value: 0)
        Task {
            await serving.value
            finished.signal()
        }
        finished.wait()
        for source in signals { source.cancel() }
    }

    /// One connection: what it reads is written back as it came.
    private func echo(_ connection: IOConnection) async {
        let channel = connection.channel
        let configuration = self.configuration
        let stats = self.stats
        stats?.connectionAccepted()
        defer { stats?.connectionClosed() }
        channel.setLimit(lowWater: configuration.lowWater)
        if configuration.idleTimeout > 0 {
            channel.setInterval(.seconds(configuration.idleTimeout), flags: .strict)
        } else if configuration.interval > 0 {
            channel.setInterval(.milliseconds(configuration.interval), flags: configuration.strict ? .strict : [])
        }
        var active = true
        stats?.readStarted()
        defer { stats?.readFinished() }
        do throws(Errno) {
            for try await data in channel.reads() {
                if data.isEmpty {
                    // A strict tick: close when nothing arrived since the last one (idle).
                    if configuration.idleTimeout > 0 {
                        if !active { return }
                        active = false
                    }
                    continue
                }
                active = true
                self.writesInFlight.add(1, ordering: .relaxed)
                stats?.writeStarted()
                defer {
                    stats?.writeFinished()
                    self.writesInFlight.subtract(1, ordering: .relaxed)
                }
                try await channel.write(data)
            }
        } catch {
            if error != .canceled && error != .connectionReset && error != .brokenPipe {
                print("echo-server: connection failed: \(error)")
            }
        }
    }

    /// SIGINT/SIGTERM: stop accepting, let the writes in flight finish (bounded), then cancel
    /// every connection's task (their reads end; the listener closes their sockets).
    private func stop(_ serving: Task<Void, Never>, on ring: RingLoop) {
        guard !self.stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.listener.close()
        let drain = Duration.seconds(self.configuration.drainSeconds)
        Task(executorPreference: ring.taskExecutor) {
            let deadline = ContinuousClock.now + drain
            while self.writesInFlight.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
            serving.cancel()
        }
    }
}
